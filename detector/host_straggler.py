"""A rank slowed alone in its host path, the job waiting for it: a straggler to page.

A rank's time in neither compute nor collectives, ``step_ms - compute_ms - comm_ms`` (DESIGN:
data loading, host-to-device copies, the CPU), is what it adds to every step besides its
compute.  In synchronous data parallelism every rank's step is the slowest rank's: the others
wait for it in the all-reduce, so when one rank's host time grows, its ``comm_ms`` becomes the
job's lowest (it never waits) while its peers' grows by as much, and the whole job's
``step_ms`` with it.  A GPU whose PCIe link trained down (x16 -> x8) copies every batch at half
the bandwidth: its loader time x1.5-1.9, its compute unchanged (blind25 P1: 127 -> 239 ms, every
step of a 24-rank job +23 %) -- neither the compute CUSUM nor the replay counter (minutes
later, if the link replays at all) sees it soon.

:mod:`detector.steps` feeds each rank's host excess over its stage's median to a CUSUM
(``host_late``: evidence, held minutes, since a node's input pipeline catching up is routine --
blind2's healthy 3-minute stall of a tray's loaders).  Here an alarmed run is a straggler to
page at once when the physics shows it is one rank's own path, not its host's or its job's:

- **late now as its run is**: this step's excess at least half its run's mean (a host whose
  loaders stall in bursts has quiet steps in between: those tell nothing of one rank);
- **alone on its node**: the job's other ranks on its node keep their peers' host time, now
  (beyond their noise) and over their latest steps, none of them alarmed in host time or in
  compute (a node's input pipeline, CPUs, page cache or storage feed all its ranks: those stay
  with the node rules,
  :mod:`detector.host_time`, and blind2's healthy stall is one of them; with tensor
  parallelism inside the node its mates wait for it inside their compute: the node's PCIe
  rules) -- a rank with no such mate is its node's (below);
- **the job waits for it**: its ``comm_ms`` under its peers' median by at least ``WAIT_SHARE``
  of its host excess in milliseconds -- what synchronous steps do with a late rank; a rank
  whose extra time its peers do not wait for (their steps overlapped with it) slows nobody;
- **persistent**: late on ``STEPS`` steps of its host run (the CUSUM's: from the step its
  score left zero), half its steps or more, once the job's host noise is measured (its lag-1
  known, models.lag1), more under a job whose host time comes in runs (:func:`steps_for`: a
  loader's wander lasts as long as its lag-1 makes it) -- not in a row: a loader jittering
  +-30 % or a link late on 2 steps in 3 misses a step now and then (revA35 5); and the run's
  mean clear of the effect floor by ``slow_effect_z`` standard errors (:func:`spread` under
  runs), whether or not its CUSUM has reached its alarm yet;
- **new**: it had not learned the most host offset a rank may own (``host_offset_max``) when
  its run began -- or, late so from the job's start, its run unbroken and flat 60 steps past
  the warm-up and it is neither rank 0 nor the job's last rank (JobMonitor._lone_from_start:
  a link trained down before the job, revA35 8); the logging ranks (rank 0; Megatron's last
  rank, revA36 F4) and a shard cold for the job's first minute keep host_late's holds.

Its unit is the rank's GPU (its link, its loader process) -- its node when no other rank of
its job runs there (nothing tells its link from its host: Correlator._host_alone); its cause
is for the correlator to name: a PCIe replay rate or a PCIe XID on that GPU is
``gpu_hardware``, else an escalation (slow_node/unknown: the loader's CPU, storage or NUMA
placement are the host's, no telemetry names which), waiting for the node's ECC poll first
and for its run to have lasted ``LONE_S`` (Correlator._hold_for_ecc): a run that ends before
pages nothing.

What it must not page: a one-step loader stall (the CUSUM clips it), sequence-length imbalance
(compute and comm move, not host time), a checkpoint (every rank's host time: the median
moves), a pipeline stage slower (stages are compared apart), a job without ``comm_ms`` (no host
time: not judged), comm overlapped in compute (host time is still what the rank adds), loader
jitter however wide (the run's mean, not its steps), a few seconds' slow host path (``LONE_S``).

>>> import numpy as np
>>> node = np.array([0, 0, 1, 1, 2, 2])          # three nodes, two ranks each, one stage
>>> host = np.array([127.0, 125, 126, 239, 128, 127])
>>> comm = np.array([160.0, 158, 163, 50, 161, 165])
>>> over = np.array([0.0, 0.0, 0.0, 0.41, 0.0, 0.0])   # excess over each rank's offset
>>> run, alarmed, groups = over.copy(), over > 0.0, np.zeros(6, dtype=int)
>>> recent = over / 2                             # its excess smoothed over a few steps
>>> lone(np.array([3]), node, host, comm, over, run, recent, alarmed, groups, 0.04, 0.01).tolist()
[3]
>>> alarmed[2] = True                             # its node mate late too: the node's host
>>> lone(np.array([3]), node, host, comm, over, run, recent, alarmed, groups, 0.04, 0.01).tolist()
[]
"""

from __future__ import annotations

import math

import numpy as np

from models import lag1

# The rank's comm under its peers' median by at least this share of its host excess (ms): the
# others wait for it.  Synchronous steps make it ~1 (blind25 P1: 113 of 112 ms); half leaves
# room for the peers' own jitter.
WAIT_SHARE = 0.5
# A run is paged once its rank has been late (host_min_effect or more) this many steps in a
# row: routine loader jitter -- a batch of bigger images, a page-cache miss -- lands on a rank
# now and then, seldom six steps running (a rank late on 15 % of its steps: ~1e-5 a step);
# a link or a loader slowed for good is late on every step (blind25 P1: from the first).
STEPS = 6
# Under a job whose host excess comes in runs (its healthy ranks' lag-1 autocorrelation
# ``rho``, models.lag1, over ``lag1.ON``) a run of STEPS steps is no rarer than STEPS
# independent steps' worth of it: STEPS x (1 + rho) / (1 - rho) steps in a row, rho at most
# RHO_MAX (revA35 4: every rank's loader an AR(1) at 0.95, 5.7 % of a step -- its wander
# escalated a GPU in 3/4 seeds at six steps).
RHO_MAX = 0.95
# Without the GPU's PCIe replays (or a PCIe XID) to name it, a lone run is escalated only once
# it has lasted this long from its onset, and one that ends before pages nothing
# (Correlator._hold_for_ecc): a host path slow for a few seconds is routine -- rank 0's async
# checkpoint staging, a profiler window, a cold shard, a GC pause in its loader (revA35 1:
# +6-10 % for 6-40 steps, 2.7-18 s, was escalated) -- a link trained down or a mis-bound
# loader is slow for good.  Corroborated (replays on that GPU) it is paged at once.
LONE_S = 30.0
# A node mate whose host excess (over its offset, shares of a step's work) reaches this share of
# the candidate's, or the effect floor, is late with it: the node's trouble, not the rank's --
# smoothed over its latest few steps, or on this step alone when it is also MATE_Z of the job's
# host noise (one step of a loader jittering +-30 % lands over the floor on a mate or two of
# eight every step: revA35 5; a node's stall is late on every mate at once).
MATE_SHARE = 0.25
MATE_Z = 3.0


def lone(cand: np.ndarray, node: np.ndarray, host: np.ndarray, comm: np.ndarray,
         over: np.ndarray, run: np.ndarray, recent: np.ndarray, alarmed: np.ndarray,
         groups: np.ndarray, min_effect: float, sigma: float) -> np.ndarray:
    """Of ``cand`` (indices into the step's ranks: host runs late and large enough), those
    late now by their run's pace, alone on their node and waited for by their peers.  Per rank
    of the step: ``node`` an id of its node, ``host`` its host time (ms), ``comm`` its
    ``comm_ms``, ``over`` its host excess over its learned offset, ``run`` its host run's
    mean excess (0: none) and ``recent`` its excess smoothed over its latest few steps
    (shares of a step's work), ``alarmed`` its host run (or its compute run) alarmed,
    ``groups`` its peer group; ``sigma`` the job's host noise a step (shares)."""
    keep = []
    for i in cand.tolist():
        pace = float(run[i])
        if float(over[i]) < max(min_effect, 0.5 * pace):
            continue  # (not late this step as its run is: a bursty host's quiet step)
        mates = np.flatnonzero(node == node[i])
        mates = mates[mates != i]
        bar = max(MATE_SHARE * pace, min_effect)
        if len(mates) and (np.count_nonzero(alarmed[mates]) or float(recent[mates].max()) >= bar
                           or float(over[mates].max()) >= max(bar, MATE_Z * sigma)):
            continue  # (its node's ranks late with it: the host they share)
        peers = np.flatnonzero(groups == groups[i])
        peers = peers[peers != i]
        if not len(peers):
            continue
        excess_ms = float(host[i]) - float(np.median(host[peers]))
        waited_ms = float(np.median(comm[peers])) - float(comm[i])
        if excess_ms > 0.0 and waited_ms >= WAIT_SHARE * excess_ms:
            keep.append(i)
    return np.array(keep, dtype=np.intp)


def spread(rho: float) -> float:
    """How much wider the mean of a run of host excesses is under a job's lag-1 ``rho`` than
    under independent steps' (1.0 up to models.lag1.ON; rho at most RHO_MAX): the square
    root of (1 + rho) / (1 - rho), the steps' effective number shrunk by its inverse square."""
    if rho <= lag1.ON:
        return 1.0
    rho = min(rho, RHO_MAX)
    return math.sqrt((1.0 + rho) / (1.0 - rho))


def steps_for(rho: float) -> int:
    """Steps in a row a lone run must be late under a job's host lag-1 ``rho`` (``STEPS``
    under independent noise or ``rho`` up to models.lag1.ON)."""
    if rho <= lag1.ON:
        return STEPS
    rho = min(rho, RHO_MAX)
    return math.ceil(STEPS * (1.0 + rho) / (1.0 - rho))
