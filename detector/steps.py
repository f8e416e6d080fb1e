"""Per-job analysis of ``telemetry.step``: slow ranks and silent data corruption.

Steps are gathered until every rank has reported (or the allowed lateness has
passed), then analysed a whole step at a time with numpy:

- **slow ranks** — each rank's ``log(compute_ms)`` (without ``compute_ms``:
  ``step_ms - comm_ms``, see :meth:`JobMonitor._busy`) minus its peer group's
  median (peers: same tp_rank and pp_rank; with fewer than ``min_peers`` of
  those the whole pipeline stage, so stages are never mixed), minus the rank's
  own learned bias (a steady offset from the job's start up to
  ``start_offset_max`` is that rank's baseline, see
  :meth:`JobMonitor._note_offsets`), in units of the job's noise, feeds a robust
  CUSUM per rank.  A whole-job slowdown (checkpoint save) moves the median, not
  the ratio; a one-step spike is clipped; a persistent slowdown alarms within a
  few steps.  Under per-step batch imbalance between replicas a rank is scored
  against its replica mates, and a whole replica's slowness counts only for a
  replica on one node (:meth:`JobMonitor._replica_common`,
  :meth:`JobMonitor._one_node_replicas`).  The first ``warmup_steps`` after a
  (re)start learn each rank's bias, under a conservative prior instead of
  silence: a rank ``gross_slowdown`` (30 %) slower than its peer median for
  ``gross_steps`` steps in a row needs no history to be called slow (a job
  landing on a bad GPU is reported at its second step) -- where the job's steps spread
  widely (a long-context job's replicas drawing documents of 2-5x), a warm-up step counts
  as gross only when it is also clearly slow in that spread, and a rank slower than its
  peers on average, step after step, is found by its mean against its standard error
  (:meth:`JobMonitor._check_sustained`);
- **checksum mismatch** — a strict-majority vote on ``param_checksum`` per peer
  group, decided on the step it happens;
- **gradient outliers** — robust z of ``log(grad_norm)`` against the replicas
  (with fewer than ``min_peers`` replicas: against the other shards of its own
  replica, :meth:`JobMonitor._grad_within_replica`); repeated spikes on one
  rank (not one-off ones) raise an escalation.

Per-rank state lives in numpy arrays indexed by a slot per rank seen (a rank
number is only a key: one message claiming rank 1,048,575 costs one slot, not
a million), so a job of 16,384 ranks costs a few hundred kilobytes, not an
object per rank.
"""

from __future__ import annotations

import math
import struct
from collections import Counter
from collections.abc import Callable, Sequence
from typing import Any

import msgspec
import numpy as np
from msgspec.structs import astuple

from detector import (
    host_events,
    host_rise,
    host_straggler,
    host_time,
    job_pace,
    overflow_source,
    sdc,
    sku_class,
)
from detector.alerts import Scope
from detector.events import NonFinite, StepSample
from detector.findings import Finding
from detector.statecodec import bad_field, is_map_of, refuse_unless
from detector.step_numerics import _NAN, NumericChecks, _pick
from detector.thresholds import Thresholds
from models import lag1
from models.cusum_bank import CusumBank
from models.peer_stats import (
    MAD_TO_SIGMA,
    derive_layout,
    group_median,
    group_median_scale,
    group_stats,
    learn_layout,
    median,
    row_deviations,
    row_mads,
    row_sizes,
    row_stats,
    sorted_rows,
)

_MAX_RANK = 1 << 24  # as the decoder's bound (DESIGN.md "Bounds")
_DONE_KEPT = 256  # evaluated steps remembered, to recognise late messages
# A job whose clock was run on without records (``expire(quiet=True)``: the service's idle
# advance of a step partition holding only this job, a backlog's run-through) and that decided
# no step for this long has stopped: its slow ranks are withdrawn, as another record's clock
# would have after job_stopped_steps periods -- not left to page until the job is forgotten
# (job_idle_s: review30 finding 5).  A broker hiccup this long withdraws them too; a slow rank
# still slow is found again within a few steps once the steps come back.
STOPPED_QUIET_S = 240.0
_PARTIAL_KEPT = 8  # rank sets of steps decided incomplete, to tell a late rank from a duplicate
_MAJORITIES_KEPT = 4096
# In a rank set of _partial: the step was decided complete, and the set holds only the ranks
# that came after (JobMonitor._late).
_LATE_ONLY = -1
_CLEARLY_SLOW_Z = 3.0  # a step this many noise units slower than its peers: clearly slow
_REPLICA_APART_Z = 10.0  # a replica this many of the replicas' sigma off: not its batch
# A warm-up step compared with its peers as a whole counts as gross only this many noise units
# out (blind5 E4); 3 blocked a GPU 45 % slow under +-20 % sequence imbalance (issue 10: gross
# from the start within 3 steps; tests/test_detect_gross_batch.py).
_GROSS_NOISE_Z = 2.0
# A warm-up step counts as gross within this many noise units of the gross limit (clearly
# slow's), by at most _GROSS_MARGIN (log ratio, ~3 %): a rank 30 % slow measures 30 % +- its
# jitter, and a limit at 30 % itself counted one step in two (matrix scenario=slow_from_start
# s2102: a GPU 1.28-1.32x its peers from step 1, two such steps in a row only at step 4, paged
# after 7 steps).
_GROSS_MARGIN_Z = _CLEARLY_SLOW_Z
_GROSS_MARGIN = 0.03
# A rank in none of the job's last _GONE_STEPS steps decided (the job stepping on without it)
# has left the job: its slot is freed (JobMonitor._free_gone_slots), looked for every
# _GONE_CHECK_STEPS steps.  As many as the late messages the job recognises (_DONE_KEPT).
_GONE_STEPS = _DONE_KEPT
_GONE_CHECK_STEPS = 64
_PARKED_KEPT = 1024  # learned start offsets of ranks that left, kept for their return
_RECENT = 16  # steps of each rank's deviation kept (JobMonitor._persistent)
# The job's tail (JobMonitor._tail_update): shares of rank-steps at least this much slower than
# their peers over their bias, smoothed over ~1 / _TAIL_ALPHA steps, never taken below _TAIL_FLOOR.
_TAIL_EDGES = np.array([1.0, 1.5, 2.0, 2.5, 3.0, 3.5, 4.0, 5.0, 6.0, 8.0, 10.0, 13.0, 17.0, 25.0])
_TAIL_ALPHA = 0.01
_TAIL_FLOOR = 1e-3
_FISHER_ALPHA = 1e-6
# Real step noise is heavy-tailed as well as in runs (blind21 N3, Alibaba PAI job 2: |z| > 4 in
# 0.46 % of samples, a normal's 0.006 %; 4-step means over 4 sigma in 0.17 % of windows, a
# Gaussian AR(1)'s 8e-8): one big innovation or a few, then their decay -- episodes of 2-5
# samples at 3-5 sigma on a healthy worker (job 2: 10 in 2,380 worker-samples, none longer
# than 5).  Whitening takes the correlation out, not the tail.  In a job whose lag-1 is in force
# (JobMonitor._ar_step) and whose healthy rank-steps reach _TAIL_EDGES[_HEAVY_EDGE] (3 sigma)
# _HEAVY_SHARE of the time or more (a normal: 1.3e-3 before its runs are left out, n1run's
# Gaussian AR(1) jobs <= 5e-4; blind21 N3's job 2.8e-3), a run whose effect is under
# _HEAVY_EFFECT is reported only once it has lasted _HEAVY_STEPS steps.  So too while the
# job's noise is not measured (JobMonitor._heavy): before its lag-1 is known (models.lag1.known:
# 8-32 steps past the warm-up, by the job's size) or its tail read on _HEAVY_KNOWN rank-steps
# (two at the share: 16 steps of 64 ranks, 125 of 8) -- taken for real noise's runs and tail, not a
# Gaussian's (start33: PAI episodes 5-7 steps after the warm-up, blind23 N1 at a log's start,
# were escalated at their GPU).  A 10 % slowdown is over _HEAVY_EFFECT; a 5 % one early in a
# job waits for its run's 7th step.
# Under runs the tail is taken as light only once its read rules the share out (start34, blind24
# N1): a job's 3-sigma rank-steps counted at _HEAVY_SHARE's rate would come as few as read with a
# chance under _HEAVY_SURE (Poisson, on the rank-steps the smoothed share stands on: at most
# _TAIL_STEPS steps of the job's ranks).  _HEAVY_KNOWN rank-steps put two at the share: one read
# (blind24 N1's sweep job, 16 ranks, 1,136 rank-steps, 9e-4) is as likely under a tail at the
# share as under a light one -- and its healthy rank's 4 steps at +4 % (7 standard errors of a
# Gaussian AR(1) at lag-1 0.6: only a tail makes them) were escalated.  A Gaussian AR(1) job
# (<= 5e-4) is known light after ~3,000 rank-steps (~50 steps of 64 ranks); a job of 8 ranks
# only on a read of none (its share stands on 1,600 at most): else its modest runs wait
# _HEAVY_STEPS for good.  (Exceedances of runs come in episodes, so the count is worth fewer
# independent ones than it says: the bound errs towards "light", as start33's did.)
_HEAVY_EDGE = 4
_HEAVY_SHARE = 2e-3
_HEAVY_EFFECT = 0.06
_HEAVY_STEPS = 7
_HEAVY_KNOWN = 2.0 / _HEAVY_SHARE
_HEAVY_SURE = 0.05
_TAIL_STEPS = (2.0 - _TAIL_ALPHA) / _TAIL_ALPHA  # (the smoothed mean's steps' worth)
# A wandering job (JobMonitor._wander_update, blind8 H1: MoE routing moves per-rank compute).
_WANDER_SHORT = 0.1        # a rank's z smoothed over ~10 steps ...
_WANDER_LONG = 0.005       # ... about its own mean over ~200
_WANDER_VAR = 0.05         # the variance of the first about the second, over ~20 steps
_WANDER_ON = 3.0           # the ranks' median of it over the i.i.d. figure: wandering ...
_WANDER_OFF = 2.0          # ... until under this
_WANDER_HOLD_STEPS = 100   # entered after this many steps at _WANDER_ON (under _WANDER_OFF: anew)
_WANDER_MIN_STEPS = 30     # steps the sums take before the index is read
_WANDER_MEAN_ALPHA = 0.01  # a rank's deviation from its peers, averaged over ~100 steps
_WANDER_READY_STEPS = 120  # and read after this many
_WANDER_MIN_EFFECT = 0.07  # that mean this much over the ranks' median ...
_WANDER_ALONE = 0.04       # ... and over every peer's on another node
_WANDER_GROSS_NODES = 3    # warm-up gross steps on this many nodes: the workload's
_WANDER_NODES = 2          # slow ranks found on this many nodes (of 2 replicas or more) ...
_WANDER_PLACE_STEPS = 5    # ... within this many steps: the workload's
_WANDER_NODES_KEPT = 16    # (nodes remembered for it)
# A rank joining a job past its warm-up is cold while its excess over its peers falls by this
# many of the job's noise a step (JobMonitor._cold_steps): E1's x2.6, 1.7, 1.25, 1.1, 1.0 fall
# by 12-50 sigma a step; a rank that stays slow falls by more than 2 in 1 step of 12.
_COLD_FALL_Z = 2.0
# A raised host_late run whose least-squares line has grown to this share of a step's work, from
# under this fraction of it at the run's start, is escalated at once (JobMonitor._host_grew)
_HOST_GROWN = 0.15
_HOST_GROWN_FROM = 0.5
# Two or more ranks of one node late by their host path from the job's (re)start -- over
# host_offset_max through the warm-up, their run unbroken since -- are escalated once that run
# has lasted _START_STEPS steps past the warm-up (JobMonitor._host_from_start), not after
# host_hold_s and host_node_page_s: the holds wait for a stall mid-job to catch up (blind2's
# healthy input pipeline: it starts at its height and falls) and for one GPU's PCIe replay rate
# (six DCGM samples); a host the node's ranks share, late from before its job's first step,
# has no backlog to catch up and no one link (blind23 L1: loaders on the far socket, paged
# ~115 steps after the job's first).  Unbroken: the run began within _START_SLACK steps of the
# warm-up's end; flat: its line's end at least _START_KEPT of its start (a loader warming up
# falls).  60 steps, not 10 (revA33 1): a node's cold page cache or dataset shard, or loaders
# warming up one by one, late for its job's first 20-60 steps, was paged at the 20th and held
# ~10 minutes; blind23 L1 is now paged ~70 steps after the job's first (was ~115 before start33).
# A node late 70 steps and more from the start is paged (the trade: tests/test_lead33.py).
_START_STEPS = 60
# A part of a node late so, the rest of it on time from the start, is escalated _START_PART_STEPS
# past the warm-up (start35, blind23 L1: a NUMA mis-binding, one socket's GPUs 10-17 % late): a
# node's cold start is the node's -- its page cache, filesystem client, container image and CPU
# clocks are shared by every rank on it (revA33 1's shapes: all its ranks late from step 0, or
# its loaders back at their pace one by one) -- while a part late alike with its mates on time
# from the first step has a host of its own: one socket's CPUs, memory and PCIe root (a process
# bound to the far socket), or one PCIe switch -- half the node's ranks at most, the rest on
# time (most of a node late is its cold start with a few ranks' shards cached: revA35 3).  The
# trade: a cold start of a part of a node
# alone (a few ranks' shards cold while their mates' are cached) lasting past the warm-up's 10th
# step is paged (tests/test_start35.py).
_START_PART_STEPS = 10
_PART_LEARNT = 0.5  # (late from the start: this share of host_offset_max learnt; on time: less)
_START_SLACK = 2
_START_KEPT = 0.75
# A recurring straggler's count no likelier than this if the job's outlier steps fell on its
# units alike (JobMonitor._recur_chance): one false page in a thousand looks at a workload's
_RECUR_CHANCE = 1e-3
# Less time than this in a step's own work is no measurement (a kernel launch alone takes
# microseconds): like 0, not compared.  A partner's 1e-300 ms made the pair rule's ratio
# 7e302 and paged the other rank of a job of two (review23's leftover; review24).
_MIN_BUSY_MS = 1e-3
_TOLD_OUT = 2              # ranks of a peer group told slow that take the told out of its
#                            reference (JobMonitor._untold_reference)
_TP_LOCKED = 0.1           # a node mate this close to a found rank's deviation: in step with it
#                            (JobMonitor._node_alike; blind7 G3: 0.0703 and 0.0690)
# After a step every rank spent in neither compute nor collectives (a checkpoint snapshot, an
# evaluation pass: the job's median host time _EVENT_SHARE of its step over its usual), a slow
# rank found within _AFTER_EVENT_S that is under _AFTER_EVENT_RATIO slower is held
# (JobMonitor._hold_after_event): an async checkpoint's write-back slows each node from host
# memory to storage for 30-80 s, one node ending last (blind10 K3: 1.03-1.07x for ~12 steps,
# a different node each checkpoint), and fades; a fault stays and is reported after.
_EVENT_SHARE = 0.05
# A save (an evaluation pass) is a rare step: host events closer than this many of the job's
# step periods are not judged as saves (detector.host_events) -- a job whose host share is
# over _EVENT_SHARE from its first step never learns its level, and every step is an "event"
# (tests/test_review_round12.py: a node 25 % late in its host path for 2 minutes paged)
_SAVE_GAP_STEPS = 10
_AFTER_EVENT_S = 120.0
# A rank found slow alone whose node has this many of the job's ranks (itself counted) in
# alarmed slow runs alike is told so (JobMonitor._node_alarmed: evidence for the correlator)
_NODE_ALARMED = 3
_AFTER_EVENT_RATIO = 1.10
# A CUSUM-reported run told again when its pace grows past twice the told excess plus this,
# on this many steps in a row (StepMonitor._grown_runs: a ramp found early in its rise)
_GROWN_MARGIN, _GROWN_STEPS = 0.05, 2
_SHARED_PEERS = 2          # a slow rank's peers on other nodes as slow with it ...
_SHARED_SHARE = 0.5        # ... at least this share of its smoothed z: the workload's
#                            (JobMonitor._hold_shared; blind8 rail-moe: an expert's ranks in
#                            4 EP groups hot together)
_PLACE_NODES = 2           # a slow rank's place (its GPU index, its peer group) slow alike on
#                            this many other nodes, its node's other ranks of the group not:
#                            the workload's (JobMonitor._hold_same_place; blind21 M1) ...
_PLACE_SHARE = 0.125       # ... and on this share of the other nodes holding its place (an
#                            expert is one EP index in 8: half of moe-a's nodes; a 128-node
#                            pure-DP job's noise put 2 of the 127 over half a 10 % rank's
#                            early smoothed z -- revA31 4) ...
_PLACE_MARGIN = 1.0        # ... each within this much (smoothed z) of the rank's own: a place
#                            explains its rank up to its own level, not a fault on top of it
#                            (revA31 4: every node's GPU 2 +3 % held a +5 % fault on one of them
#                            17-21 steps, its smoothed z 3.0 over peers' 1.6-1.9)
_PLACE_NOW = 3             # ... and a node mate slow with it over its smoothed z and its
#                            latest steps' mean z both (JobMonitor._place_slow: the last
#                            expert's GPU reads slow in the first, at its pace in the second)
_BESIDE_Z = 2.5            # a node's ranks slow beside an expert's GPUs of it: their latest
#                            steps this many noise units over their pace (JobMonitor._slow_beside)
# A rank against its twins (JobMonitor._twin_update, blind8 H2: a GPU slowing under routing).
_TWIN_WINDOW = 128         # steps of each rank's deviation kept to find its twins ...
_TWIN_FIRST = 64           # ... looked at once this many are kept ...
_TWIN_EVERY = 16           # ... and every this many steps
_TWIN_CORR = 0.5           # a twin: a peer on another node whose deviation's changes from step
#                            to step correlate this much with the rank's, and with the other
#                            twins'.  blind8 rail-moe, 64 steps: the ranks of one expert
#                            0.57-0.79, the others <= 0.43 (i.i.d.: 0 +- 0.13).  Not the levels:
#                            a walk with ~20 steps of memory has ~3 independent values in 64
#                            steps (two experts' correlated 0.77 by chance), and a slowdown in
#                            the window took a twin's from 0.98 to 0.17 (tests/test_ep19.py)
_TWIN_MIN = 2              # twins a rank needs to be judged against them (their median), on
#                            this many nodes (twins on one node are that node's shared pace:
#                            blind5 workloads, a 2-node job's ranks each "twinned" with the
#                            other node's 8, paged a node 1.07x once) ...
_TWIN_MAX = 7              # ... and the most kept (the most alike)
_TWIN_GROUP_MAX = 256      # peer groups larger than this are not searched (k^2 a look)
# A job of two ranks (DP 2, JobMonitor._check_pair): no median referees, the collective does --
# the slow rank computes longer and its partner waits for it (comm_ms up on the fast one only).
# Slow: >= _PAIR_RATIO its partner's compute with the partner's extra wait making up at least
# _PAIR_WAIT_SHARE of the gap, on _PAIR_STEPS steps in a row (a batch imbalance picks either
# rank at random: 2^-19 a step for a run of 20); cleared after as many steps under half that.
_PAIR_RATIO = 1.2
_PAIR_WAIT_SHARE = 0.5
_PAIR_STEPS = 20
# ... or, gross (>= gross_slowdown, less _GROSS_MARGIN) and steady, on _PAIR_GROSS_STEPS steps in
# a row whose log ratios lie within _PAIR_STEADY of each other: a GPU's slowdown holds its
# ratio (+- its jitter, 1-3 %), a batch draws anew each step -- a job whose batches make either
# rank up to 1.5x the other (lognormal 0.2 a rank) draws five such steps in a row about once
# in 10^5 (a gross slow GPU of a DP2 job from its first step: 20 steps before, issue 10's
# target 3).
_PAIR_GROSS_STEPS = 5
_PAIR_STEADY = 0.06
_TWIN_ALPHA = 0.2          # a rank's deviation from its twins' median, smoothed over ~5 steps
_TWIN_BASE_ALPHA = 0.02    # its own offset from them, learned over ~50 steps
_TWIN_Z = 8.0              # slow: that mean over the offset >= _WANDER_MIN_EFFECT and this many
#                            of its noise (the ranks' spread of it, smoothed as the mean is)


def _gamma_tail_quantile(k: int, alpha: float) -> float:
    """T with P(Gamma(k, 1) > T) = alpha: what the sum of k i.i.d. ``ln(1 / p)`` passes by
    chance that rarely (Fisher's method; the tail of an integer-shape gamma in closed form)."""
    lo, hi = 0.0, 200.0
    for _ in range(60):
        t = 0.5 * (lo + hi)
        term, tail = 1.0, 1.0
        for i in range(1, k):
            term *= t / i
            tail += term
        lo, hi = (t, hi) if math.exp(-t) * tail > alpha else (lo, t)
    return hi


_FISHER = [0.0] + [_gamma_tail_quantile(k, _FISHER_ALPHA) for k in range(1, _RECENT + 1)]
# A sustained slowdown under wide step-to-step spread (JobMonitor._check_sustained): each rank's
# deviation over its bias, averaged with weights decaying by _SUS_ALPHA a step (~2 / _SUS_ALPHA
# steps' worth), against its standard error from the spread of the ranks' own deviations.
_SUS_ALPHA = 1.0 / 64.0
_SUS_SPREAD = 0.05   # in force where a rank's deviation spreads >= 5 % a step (jitter: 1-3 %)
_SUS_Z = 4.0         # its mean this many standard errors over the job's typical rank's
_SUS_CLEAR_Z = 2.0   # and it clears back under this many
_SUS_MIN_N = 24.0    # once its mean is worth this many independent steps
_SUS_EVERY = 8       # steps between looks at the ranks' median spread while it is under
# ... and its sums kept only once the job's deviations spread this share of _SUS_SPREAD across
# its ranks (their root mean square a step, smoothed): ordinary jitter (1-3 %) never pays for
# them; a spread that makes the test needed does from its first steps (blind5 E5: ~0.35).
# The ranks' mean square is the mean of their own variances (and means squared), at least
# half the median rank's variance: a median spread of _SUS_SPREAD is an RMS >= 0.71 of it.
_SUS_GATE = 0.6

# JobMonitor's per-slot arrays (an item per rank's slot) and what a new slot holds (None: the
# cap any rank may learn, Thresholds.slow_baseline_clip): _grow makes room in each,
# _free_gone_slots takes the ranks that left out of each.
_SLOT_ARRAYS: tuple[tuple[str, float | bool | None], ...] = (
    ("_base", 0.0), ("_slow_dev", 0.0), ("_run_sum", 0.0), ("_run_n", 0), ("_run_since", 0.0),
    ("_reported", False), ("_gross", 0), ("_gross_onset", 0.0), ("_cap", None),
    ("_fresh", True), ("_spikes", 0.0), ("_spike_onset", 0.0), ("_spiking", False),
    ("_recur", 0.0), ("_recur_onset", 0.0), ("_recurring", False), ("_recur_last", False),
    ("_host_base", 0.0), ("_host_dev", 0.0), ("_host_sum", 0.0), ("_host_n", 0),
    ("_host_rep", False), ("_recent", 0.0), ("_sus", 0.0), ("_sus_onset", 0.0),
    ("_sustained", False), ("_run_own", 0.0), ("_wshort", 0.0), ("_wlong", 0.0),
    ("_wvar", 0.0), ("_wmean", 0.0), ("_wander_rep", False), ("_twin_hist", 0.0),
    ("_twins", 0), ("_twin_base", 0.0), ("_twin_short", 0.0), ("_twin_rep", False),
    ("_pair_run", 0), ("_pair_rep", False), ("_pair_gross", 0), ("_pair_lo", 0.0),
    ("_pair_hi", 0.0),
    ("_sku", 0), ("_sku_seen", False), ("_sku_off", 0.0), ("_sku_first", 0.0),
    ("_sku_first_se", 0.0), ("_told", 0.0), ("_told_onset", 0.0), ("_grown", 0),
    ("_host_tx", 0.0), ("_host_told", False), ("_gmean", 0.0), ("_gdev", 0.0), ("_gown", 0.0),
    ("_gn", 0), ("_zprev", 0.0), ("_ar_score", 0.0), ("_cold", 0), ("_lone_rep", False),
    ("_lone_streak", 0), ("_host_dev_z", 0.0))

# ... and each one's shape past its slot (a row of the twin ring, the twins, the sums)
_SLOT_WIDTH = {"_sus": (3,), "_recent": (_RECENT,), "_twin_hist": (_TWIN_WINDOW,),
               "_twins": (_TWIN_MAX,)}


def _tail_light(share: float, n: float) -> bool:
    """Whether a job's tail read at ``share`` on ``n`` rank-steps is known under
    ``_HEAVY_SHARE``: a Poisson count at that share's rate comes as low as the one read
    (``share * n``, rounded) with a chance under ``_HEAVY_SURE`` (a normal's above 50 expected).

    >>> _tail_light(9e-4, 1136.0), _tail_light(0.0, 1000.0), _tail_light(0.0, 1600.0)
    (False, False, True)
    >>> _tail_light(5e-4, 3200.0), _tail_light(1.9e-3, 1e6), _tail_light(1.99e-3, 1e6)
    (True, True, False)
    """
    if share >= _HEAVY_SHARE:
        return False
    lam = _HEAVY_SHARE * n
    c = math.floor(share * n + 0.5)
    if lam > 50.0:
        return 0.5 * math.erfc((lam - c - 0.5) / math.sqrt(2.0 * lam)) < _HEAVY_SURE
    term = cdf = math.exp(-lam)
    for k in range(1, c + 1):
        term *= lam / k
        cdf += term
    return cdf < _HEAVY_SURE


def _binomial_tail(n: int, p: float, c: int) -> float:
    """P(X >= c) for X ~ Binomial(n, p) (summed from c: the terms fall from there when c is
    over the mean; at or under it, 1 is near enough for a test of a high count).  A first
    term under the smallest float is the sum's (the rest fall from it): 0, at once -- the sum
    ran on to n, 0 < 1e-12 x 0 never true (review25: 400,000 terms, 0.15-0.3 s, at n = 1e6).

    >>> round(_binomial_tail(18, 1 / 8, 8), 6), _binomial_tail(18, 1 / 8, 2)
    (0.000811, 1.0)
    """
    if c <= n * p:
        return 1.0
    if c > n:
        return 0.0
    lp, lq, top = math.log(p), math.log1p(-p), math.lgamma(n + 1)
    total = 0.0
    for k in range(c, n + 1):
        term = math.exp(top - math.lgamma(k + 1) - math.lgamma(n - k + 1) + k * lp + (n - k) * lq)
        total += term
        if term <= 1e-12 * total:
            break
    return min(total, 1.0)


def _smoothed(prev: float, x: float, alpha: float) -> float:
    """An exponentially weighted mean that starts at its first value (0.0: none yet)."""
    return x if prev == 0.0 else prev + alpha * (x - prev)


# A step's columns become numpy arrays through struct: one C loop over Python floats or ints
# (~70 instructions a value), where np.fromiter / np.array take ~250 (numpy's item-by-item
# conversion); 2026-12-02 BENCHMARKS.md "Speed, round 7".  A None (an optional field not
# sent) is no float or int to struct: those columns take numpy's conversion as before.
_PACKERS: dict[tuple[str, int], Callable[..., bytes]] = {}
_FLOAT64, _INT64 = np.dtype(np.float64), np.dtype(np.int64)


def _packer(code: str, n: int) -> Callable[..., bytes]:
    try:
        return _PACKERS[code, n]
    except KeyError:
        if len(_PACKERS) >= 64:  # (a cache of step sizes seen, not state)
            _PACKERS.clear()
        pack = _PACKERS[code, n] = struct.Struct(f"{n}{code}").pack
        return pack


def _floats(values: Sequence[float | None]) -> np.ndarray:
    """``np.array(values, dtype=float)`` (None as NaN), the same values bit for bit."""
    try:
        return np.frombuffer(bytearray(_packer("d", len(values))(*values)), dtype=_FLOAT64)
    except struct.error:
        return np.array(values, dtype=float)


def _ints(values: Sequence[int]) -> np.ndarray:
    """``np.fromiter(values, dtype=np.int64)``, the same values."""
    try:
        return np.frombuffer(bytearray(_packer("q", len(values))(*values)), dtype=_INT64)
    except struct.error:
        return np.fromiter(values, dtype=np.int64, count=len(values))


_ARANGES: dict[int, np.ndarray] = {}


def _arange(n: int) -> np.ndarray:
    """``np.arange(n)`` (intp), kept for the step sizes seen: read only."""
    try:
        return _ARANGES[n]
    except KeyError:
        if len(_ARANGES) >= 64:  # (a cache of step sizes seen, not state)
            _ARANGES.clear()
        a = _ARANGES[n] = np.arange(n, dtype=np.intp)
        a.flags.writeable = False
        return a


def _dp_array(dp: tuple[int | None, ...]) -> np.ndarray:
    """Each rank's data-parallel replica as int64, -1 where a message named none."""
    try:
        return np.frombuffer(bytearray(_packer("q", len(dp))(*dp)), dtype=_INT64)
    except struct.error:
        return np.fromiter((-1 if v is None else v for v in dp), dtype=np.int64, count=len(dp))


def _correlations(h: np.ndarray) -> np.ndarray:
    """The correlation of every pair of rows of ``h`` (0 with a constant row)."""
    h = h - h.mean(axis=1, keepdims=True)
    norm = np.sqrt(np.einsum("ij,ij->i", h, h))
    norm[norm == 0.0] = math.inf
    return (h @ h.T) / (norm[:, None] * norm[None, :])  # (np.outer's product, no wrapper)


def _others_lower_median(x: np.ndarray, groups: np.ndarray, idx: np.ndarray) -> np.ndarray:
    """For each position ``i`` of ``idx``: the lower median of the OTHER members of its peer
    group (``x[j]``, ``groups[j] == groups[i]``, ``j != i``); NaN alone in its group.

    A value at or below it is one that half the rank's peers or more are at or below
    (JobMonitor._check_burst: a node that is half its group)."""
    out = np.full(len(idx), _NAN)
    gi = groups[idx]
    for grp in np.unique(gi).tolist():
        vals = np.sort(x[groups == grp])
        n = len(vals)
        if n < 2:
            continue
        at = gi == grp
        m = (n - 2) // 2  # (the lower median's place among n - 1 others)
        above = np.searchsorted(vals, x[idx[at]], side="left") > m
        out[at] = np.where(above, vals[m], vals[m + 1])
    return out


def _row_nanmedians(vals: np.ndarray) -> np.ndarray:
    """``np.nanmedian(vals, axis=1)`` of a 2-d float64 array, bit for bit, at a sixth of
    the cost: numpy takes the median of rows under 600 long through a masked array
    (``np.ma.median`` of ``vals`` masked where NaN: ~1.4 ms for 128 rows of 7 on this box),
    whose steps these are without it -- each row sorted with its NaNs filled as +inf (the
    same argsort: the same order of equal values, a real inf among them), its two middle
    values of its ``n`` numbers (one, twice, when ``n`` is odd) summed as numpy sums them
    (a reduction from +0.0: -0.0 twice is +0.0) and halved; a row of NaNs only is NaN."""
    nan = np.isnan(vals)
    filled = np.where(nan, np.inf, vals)
    srt = np.take_along_axis(filled, filled.argsort(axis=1), axis=1)
    n = vals.shape[1] - np.count_nonzero(nan, axis=1)
    hi = n // 2
    lo = np.where(n % 2 == 1, hi, hi - 1)
    at = _arange(len(vals))
    out = np.add.reduce(np.stack((srt[at, lo], srt[at, hi]), axis=1), axis=1)
    out /= 2.0
    if not n.all():
        out[n == 0] = np.nan
    return out


def _peer_centred(y: np.ndarray, groups: np.ndarray) -> np.ndarray:
    """``y`` (deviations less each rank's replica batch) less its peer group's median of them.

    A rank's deviation from its DP peers' median carries how its replica's batch ranks
    among theirs: at DP 4 the median of four is the mean of the middle two, so a rank 4 %
    slower than its replica mates shows 2 % when its replica's batch sits in the middle and
    4 % when it is the slowest -- a steady offset seen at full size on exactly the steps
    its replica draws the slowest batch.  With the batches taken out first the peers
    differ by their own offsets and noise only, and one more median (one step of Tukey's
    median polish) gives each rank its offset at the same size whatever its batch.
    """
    return y - group_median_scale(y, groups)[0]


# The fields a step is decided on, by name: where each sits in a message's fields (its
# ``astuple``, which copies them all at C speed -- a third of the cost of an attrgetter of
# the twelve names, 2026-12-02 BENCHMARKS.md "Speed, round 5").
_FIELD = {name: i for i, name in enumerate(StepSample.__struct_fields__)}
_TS, _RANK, _COMPUTE, _TP, _PP, _DP, _GRAD, _CHECKSUM, _NODE, _GPU, _STEP_MS, _COMM, _LOSS = (
    _FIELD[name] for name in ("ts", "rank", "compute_ms", "tp_rank", "pp_rank", "dp_rank",
                              "grad_norm", "param_checksum", "node", "gpu", "step_ms", "comm_ms",
                              "loss"))


class _StepBuffer:
    """The messages of one step received so far (:meth:`JobMonitor.add` adds them).

    Messages are kept as they came (one append per message, the hot path) and turned
    into columns once, when the step is decided: ``zip(*map(astuple, events))``
    transposes them at C speed.
    """

    __slots__ = ("events", "seen", "first_ts", "last_ts", "ranks", "ts", "compute", "tp", "pp",
                 "dp", "hw", "grad", "checksum", "step_ms", "comm", "slots", "dp_arr", "loss")
    slots: np.ndarray   # each message's slot in the job's arrays (JobMonitor._evaluate)
    dp_arr: np.ndarray  # (dp_array)

    def __init__(self, ts: float) -> None:
        self.events: list[StepSample] = []
        self.seen: set[int] = set()
        self.first_ts = ts
        self.last_ts = ts

    def add(self, e: StepSample) -> None:
        """One more rank's message (not one the step has: the caller asks ``seen`` first)."""
        self.seen.add(e.rank)
        self.events.append(e)
        ts = e.ts
        if ts > self.last_ts:
            self.last_ts = ts
        elif ts < self.first_ts:
            self.first_ts = ts

    def columns(self) -> None:
        """Fill the column attributes (ranks, ts, compute, ... as tuples) from the messages."""
        c = tuple(zip(*map(astuple, self.events), strict=True))
        self.ts, self.ranks, self.compute, self.grad = c[_TS], c[_RANK], c[_COMPUTE], c[_GRAD]
        self.tp, self.pp, self.dp, self.checksum = c[_TP], c[_PP], c[_DP], c[_CHECKSUM]
        self.step_ms, self.comm, self.loss = c[_STEP_MS], c[_COMM], c[_LOSS]
        self.hw = tuple(zip(c[_NODE], c[_GPU], strict=True))

    def dp_array(self) -> np.ndarray:
        """:func:`_dp_array` of this step's replicas, made once (two checks use it)."""
        try:
            return self.dp_arr
        except AttributeError:
            self.dp_arr = _dp_array(self.dp)
            return self.dp_arr


def _num(x: Any) -> bool:
    """A number as a step writes one (NaN and the infinities are a state's own: none raises)."""
    return type(x) in (int, float)


def _holdable(f: Finding) -> bool:
    """A slow rank told on this step that a hold may take back (_hold_wandering,
    _hold_shared, _same_place / _hold_same_place): active, found by a rule other than the
    wandering job's and the twins' (those are already the workload's reading)."""
    return (f.signal == "slow_rank" and f.active and "wander_mean_ratio" not in f.evidence
            and "twin_ratio" not in f.evidence)


def _count(x: Any) -> bool:
    """A whole count, 0 or more (a step divides by some and indexes a ring with others)."""
    return type(x) is int and 0 <= x <= 1 << 62


def _nums(n: int) -> Callable[[Any], bool]:
    return lambda x: type(x) is list and len(x) == n and all(_num(v) for v in x)


def _step_record(e: Any) -> bool:
    """A restored step message is one its decoder would have let in (the codec builds a
    StepSample from fields of any type: a ``ts`` that is a string failed its step)."""
    if type(e) is not StepSample:
        return False
    try:
        msgspec.convert(msgspec.structs.asdict(e), StepSample)
    except msgspec.ValidationError:
        return False
    return True


def _step_buffer(b: Any) -> bool:
    return (type(b) is _StepBuffer and type(b.events) is list and len(b.events) <= _MAX_RANK
            and all(_step_record(e) for e in b.events) and type(b.seen) is set
            and all(type(r) is int for r in b.seen) and _num(b.first_ts) and _num(b.last_ts))


def _cusum(c: Any) -> bool:
    """A CusumBank whose four per-slot arrays are of one length and their kinds."""
    return (type(c) is CusumBank and all(_num(getattr(c, k, None)) for k in (
        "k", "h", "z_clip", "clear_after", "h_cap")) and all(
        type(a) is np.ndarray and a.ndim == 1 and a.dtype.kind == kind
        and len(a) == len(c.score) for a, kind in (
            (c.score, "f"), (c.onset_ts, "f"), (c.alarmed, "b"), (c._quiet, "i"))))


def _is_str(x: Any) -> bool:
    return type(x) is str


def _str_or_none(x: Any) -> bool:
    return x is None or type(x) is str


def _checked_below(x: Any) -> bool:
    return True  # (JobMonitor.check_restored looks at it with its bounds)


# What each field of a restored JobMonitor must be (review27: the codec rebuilds it from fields
# of any type, and ~40 of them were restored unchecked -- a clock, a counter or a twin table
# forged in a snapshot failed every later step of the job).  The slot arrays and the fields with
# bounds are checked in check_restored; a new field needs an entry here (the assert below).
_FIELDS: dict[str, Callable[[Any], bool]] = {
    "job": _is_str, "cfg": lambda x: type(x) is Thresholds, "tenant": _str_or_none,
    "cluster": _str_or_none,
    "_pending": lambda x: type(x) is dict and all(
        type(k) is int and _step_buffer(b) for k, b in x.items()),
    "_restart_ranks": lambda x: type(x) is set and len(x) <= _MAX_RANK and all(
        type(r) is int for r in x),
    "_restart_held": lambda x: type(x) is list and len(x) <= _MAX_RANK and all(
        _step_record(e) for e in x),
    "_last_step": lambda x: type(x) is int, "_restart_step": lambda x: type(x) is int,
    "_slot": lambda x: is_map_of(x, int, int), "_rank_of": lambda x: type(x) is list and all(
        type(r) is int for r in x),
    "_hw": lambda x: type(x) is list and all(h is None or (
        type(h) is tuple and len(h) == 2 and type(h[0]) is str and type(h[1]) is int)
        for h in x),
    "_slow": _cusum, "_host": _cusum,
    "start_offsets": lambda x: is_map_of(x, int, (int, float)),
    "_gross_nodes": lambda x: type(x) is set and all(type(n) is str for n in x),
    "_found_nodes": lambda x: type(x) is dict and all(
        type(n) is str and type(v) is tuple and len(v) == 2 and all(type(i) is int for i in v)
        for n, v in x.items()),
    "_warm_sigma": _nums(2), "_event_ts": _nums(2),
    "_tail": lambda x: type(x) is np.ndarray and x.shape == _TAIL_EDGES.shape
    and x.dtype.kind == "f",
    "_grad_level": lambda x: is_map_of(x, int, (int, float)),
    "_losses": sdc.check_loss,
    "_hs_keys": lambda x: type(x) is list and all(type(k) is str for k in x),
    "_hr_keys": lambda x: type(x) is list and all(type(k) is str for k in x),
    **{name: _count for name in ("_evaluated", "_wander_n", "_wander_hot", "_wander_calm",
                                 "_twin_n", "_tail_n", "_ar_n", "_hl_n")},
    **{name: lambda x: type(x) is int for name in ("late", "duplicates", "restarts")},
    **{name: lambda x: type(x) is bool for name in ("_imbalanced", "_recur_live", "_wandering",
                                                    "_sus_on", "_split_active")},
    **{name: _num for name in (
        "clock", "_next_expire", "_last_step_ts", "_period", "_sigma", "_zscale",
        "_replica_noise", "_rep_sigma", "_wander", "_twin_sigma", "_sus_spread", "_sus_ms",
        "_host_sigma", "_host_seen_ts", "_host_level", "_usual_step_ms", "_ar_xy", "_ar_xx",
        "_hl_xy", "_hl_xx")},
    **{name: _checked_below for name in (
        "stop_told", "absent_told", "_expected", "_done", "_partial", "_event_run", "_hs", "_he",
        "_told_was", "_overflow", "_pace", "_hr", "_majority", "_mismatch", "_pair", "_tie_lean",
        "_prev_ck", "_ck_moved", "_split", "_parked_offsets",
        *(name for name, _ in _SLOT_ARRAYS))},
}


class JobMonitor(NumericChecks):
    """All step-derived state of one training job."""

    _replica_noise = 0.0  # (a snapshot written before it existed restores with this)
    _imbalanced = False   # (likewise)
    _host_seen_ts = -math.inf  # (likewise)
    _ar_xy = _ar_xx = 0.0      # (likewise: a snapshot before round 30 learns its lag-1 anew)
    _ar_n = 0
    _hl_xy = _hl_xx = 0.0      # (likewise, round 35: the host excess's lag-1 learnt anew)
    _hl_n = 0
    _pace: list[float] = job_pace.new_state()  # (likewise; replaced, never changed in place)
    _tie_lean: dict[int, list[Any]] = {}       # (likewise; replaced, never changed in place)
    # Not state (set outside __init__, so never in a snapshot: detector/statecodec.py takes
    # JobMonitor's fields from a fresh one); a restored monitor starts from these defaults.
    _moves = 0                                 # ranks moved to other hardware (a counter)
    _layout_moves = -1                         # _moves when the layout below was taken;
    _layout_seen = np.zeros(0, dtype=bool)     # per slot: in the step it was taken from,
    _layout_dp = np.zeros(0, dtype=np.int64)   # its replica then (-1: none), and whether
    _layout_one = np.zeros(0, dtype=bool)      # its replica is on one node (_one_node_replicas)
    _spikes_looked = False                     # every slot looked at for rising (_check_grad)
    _order = 0  # its place among its Monitors' jobs (Monitors.sweep visits them in this order)
    # Which ranks took part in the job's latest steps (_free_gone_slots): per slot, the
    # number of steps evaluated when it last took part in a step missing ranks, and when every
    # slot last took part in one.  Not state either: a restored monitor counts from there.
    _seen_at = np.zeros(0, dtype=np.int64)
    _whole_at = 0
    # The latest step each slot's rank was decided in (-1: none since ``_in_step_from``), to
    # tell a rank missing from a step decided "complete" from a duplicate (_late).  Not state
    # either: after a restore, a restart or slots renumbered (``_moves``) it starts again.
    _in_step = np.zeros(0, dtype=np.int64)
    _in_step_from = math.inf  # the first step it covers, and the newest
    _in_step_to = -1
    _in_step_key = (0, 0)     # (_moves, restarts) it was made at
    # Each slot's unit of _hs_keys (detector.host_time; -1: not known yet, -2: none), as made
    # at (_moves, restarts, _hs_keys' identity); not state either: made again after a restore.
    _hs_code = np.zeros(0, dtype=np.int64)
    _hs_code_at: tuple[int, int, int] = (-1, -1, 0)
    _hs_code_some = False
    _hs_layout: tuple[np.ndarray, np.ndarray, int] | None = None  # (host_time.regular)
    # The latest step's grad norms against each rank's own history, in a job whose peer
    # groups are pairs (_check_grad: the step's _evaluated, per position its deviation,
    # spread and history steps), for a checksum tie split on it (sdc.tiebreak); not state.
    _grad_now: tuple[int, np.ndarray, np.ndarray, np.ndarray] | None = None
    # Each slot's node of _hr_keys (detector.host_rise; -2: none), as made at (_moves,
    # restarts, _hr_keys' identity); not state either: made again after a restore.
    _hr_code = np.zeros(0, dtype=np.int64)
    _hr_code_at: tuple[int, int, int] = (-1, -1, 0)

    @property
    def _parked(self) -> dict[int, tuple[tuple[str, int] | None, float, float]]:
        """Ranks that left the job having learned a start offset -> (hardware, bias, cap):
        theirs again if they come back on that hardware (state: ``_parked_offsets``)."""
        return self._parked_offsets

    @property
    def _whole_layouts(self) -> dict[int, Any]:
        """The job's peer groups (0), replicas (1) and pipeline stages (2) by slot and their
        rows, as the last step with every rank had them (peer_stats.derive_layout; not state,
        as _fixed_rows)."""
        try:
            return self._layouts_whole
        except AttributeError:
            self._layouts_whole: dict[int, Any] = {}
            return self._layouts_whole

    @property
    def _fixed_rows(self) -> dict[bytes, Any]:
        """Layouts of the job's peer groups and replicas by slot (peer_stats.learn_layout;
        not state: made on first use, so never in a snapshot)."""
        try:
            return self._rows_by_slot
        except AttributeError:
            self._rows_by_slot: dict[bytes, Any] = {}
            return self._rows_by_slot

    def __init__(self, job: str, cfg: Thresholds) -> None:
        self.job = job
        self.cfg = cfg
        self.tenant: str | None = None
        self.cluster: str | None = None
        self.clock = float("-inf")
        self._next_expire = float("-inf")
        self._pending: dict[int, _StepBuffer] = {}
        self._done: dict[int, int] = {}       # step -> ranks it was decided with (< 0: timed out)
        self._partial: dict[int, set[int]] = {}  # ranks of the latest steps decided incomplete
        self._expected = math.inf              # ranks per step, learned
        self._last_step = -1
        self._last_step_ts = float("-inf")
        self._period = 0.0                     # seconds between consecutive steps, smoothed
        # The last step's time when the job was told stopped (detector.liveness._stops), until
        # it steps again (told resumed); -inf while it steps
        self.stop_told = float("-inf")
        # The nodes told absent from its steps while it steps on (detector.liveness._stops)
        self.absent_told: list[str] = []
        self._restart_step = -1                # a step number gone back: which, and the
        self._restart_ranks: set[int] = set()  # ranks that said so (see _restart_confirmed)
        self._restart_held: list[StepSample] = []  # their messages, the restarted step's own
        self._evaluated = 0                    # steps evaluated since the last (re)start
        self._sigma = 0.0
        self._zscale = 1.0
        self._replica_noise = 0.0              # replica-wide / within-replica spread, smoothed
        self._imbalanced = False               # in the batch-imbalance regime (hysteresis)
        self._rep_sigma = 0.0                  # spread of the replicas' medians, smoothed
        self._slot: dict[int, int] = {}               # rank -> its slot in the arrays below
        self._rank_of: list[int] = []                 # slot -> rank
        self._hw: list[tuple[str, int] | None] = []   # hardware each slot's rank ran on
        self._base = np.zeros(0)                      # each rank's learned bias (log ratio)
        self._slow = CusumBank(cfg.slow_k, cfg.slow_h, cfg.slow_z_clip, cfg.slow_clear_steps,
                               h_cap=1.2 * cfg.slow_h)
        self._slow_dev = np.zeros(0)                  # latest log ratio, for evidence
        self._run_sum = np.zeros(0)                   # sum of log ratios over the current run
        self._run_own = np.zeros(0)                   # ... of its deviation from its replica mates
        self._run_n = np.zeros(0, dtype=np.int64)
        self._run_since = np.zeros(0)                 # ts of the run's first clearly slow step
        self._reported = np.zeros(0, dtype=bool)      # slow rank reported (finding emitted)
        self._gross = np.zeros(0, dtype=np.int64)     # warm-up steps in a row >= gross_slowdown
        self._cap = np.zeros(0)                       # most bias each rank may learn (log ratio)
        self._fresh = np.zeros(0, dtype=bool)         # in its first warm-up on its GPU
        self.start_offsets: dict[int, float] = {}     # rank -> slowness learned at the start
        self._gross_onset = np.zeros(0)
        self._spikes = np.zeros(0)                    # decayed grad_norm spike counts
        self._spike_onset = np.zeros(0)
        self._spiking = np.zeros(0, dtype=bool)
        # Each rank's own history of log(grad_norm), in jobs whose peer groups are pairs (a
        # checksum tie's tiebreak, detector.sdc.grad_track): level, mean |deviation|, that of
        # its own part (less its replica's move), steps.
        self._gmean = np.zeros(0)
        self._gdev = np.zeros(0)
        self._gown = np.zeros(0)
        self._gn = np.zeros(0, dtype=np.int64)
        self._recur = np.zeros(0)                     # decayed counts of clear-outlier steps
        self._recur_onset = np.zeros(0)               # ts of the count's first step lately
        self._recurring = np.zeros(0, dtype=bool)     # reported slow as a recurring straggler
        self._recur_last = np.zeros(0, dtype=bool)    # the rank's last step was an outlier
        self._recur_live = False                      # some count above zero (decaying)
        self._sus = np.zeros((0, 3))                   # per rank: its decayed weight, the
        #                                               weighted sums of its deviation over its
        #                                               bias and of its square (_check_sustained)
        self._sus_onset = np.zeros(0)                 # ts its mean began to stand out
        self._sustained = np.zeros(0, dtype=bool)     # reported slow as a sustained shift
        # Classes of whole nodes alike from the start (detector.sku_class, _class_over): per
        # rank its class (0: none), whether it was looked at, its class's offset (log).
        self._sku = np.zeros(0, dtype=np.int64)
        self._sku_seen = np.zeros(0, dtype=bool)
        self._sku_off = np.zeros(0)
        self._sku_first = np.zeros(0)                 # its mean over the typical rank at its
        self._sku_first_se = np.zeros(0)              # first look, and that mean's error
        self._told = np.zeros(0)                      # the pace a CUSUM run was told at (0: none),
        self._told_onset = np.zeros(0)                # that run's onset, and steps grown past it
        self._grown = np.zeros(0, dtype=np.int64)     # in a row (_grown_runs)
        # Wandering workload (MoE routing, _wander_update): per rank its z smoothed over a few
        # steps and over many, the variance of the first about the second, its deviation over
        # its bias (log ratio) averaged over ~1 / _WANDER_MEAN_ALPHA steps, and whether it was
        # reported by the wandering job's rule; per job the index and the regime.
        self._wshort = np.zeros(0)
        self._wlong = np.zeros(0)
        self._wvar = np.zeros(0)
        self._wmean = np.zeros(0)
        self._wander_rep = np.zeros(0, dtype=bool)
        self._wander = 0.0                            # median _wvar over the iid expectation
        self._wandering = False                       # in the wandering regime (hysteresis)
        self._wander_n = 0                            # steps the sums above have taken
        self._wander_hot = 0                          # steps the index was high (not low since)
        self._wander_calm = 0                         # steps it read under _WANDER_OFF in a row
        # A rank against its twins (_twin_update): per rank its latest _TWIN_WINDOW deviations
        # from its peers (a ring), its twins (slot + 1; 0: none), its learned offset from their
        # median and its smoothed deviation over that offset, whether the rule reported it;
        # per job the steps written to the ring and the noise of the smoothed deviation.
        self._twin_hist = np.zeros((0, _TWIN_WINDOW))
        self._twins = np.zeros((0, _TWIN_MAX), dtype=np.int64)
        self._twin_base = np.zeros(0)
        self._twin_short = np.zeros(0)
        self._twin_rep = np.zeros(0, dtype=bool)
        # A rank of a job of two ranks (_check_pair): its run of steps slow (or, reported, calm)
        self._pair_run = np.zeros(0, dtype=np.int64)
        self._pair_rep = np.zeros(0, dtype=bool)
        # ... and its run of gross steady steps: how many, their lowest and highest log ratio
        self._pair_gross = np.zeros(0, dtype=np.int64)
        self._pair_lo = np.zeros(0)
        self._pair_hi = np.zeros(0)
        self._twin_n = 0
        self._twin_sigma = 0.0
        self._gross_nodes: set[str] = set()           # warm-up: nodes with a gross step
        self._told_was: dict[int, float] = {}  # slots told again this step -> pace told before
        self._found_nodes: dict[str, tuple[int, int]] = {}  # nodes found slow lately ->
        #                                               (when, in steps; the replica: -1 none)
        self._sus_spread = 0.0                        # the ranks' median step spread, lately
        self._warm_sigma = [0.0, 0.0]                 # warm-up: its steps' noise summed, steps
        self._sus_on = False                          # the sums kept (the job's spread wide)
        self._sus_ms = 0.0                            # its ranks' mean square deviation, lately
        self._host = CusumBank(cfg.slow_k, cfg.slow_h, cfg.slow_z_clip, cfg.slow_clear_steps,
                               h_cap=1.2 * cfg.slow_h)  # host time over the stage's (_check_host)
        self._host_sigma = 0.0                        # the job's noise of the host excess
        self._host_base = np.zeros(0)                 # each rank's learned host offset
        self._host_dev = np.zeros(0)                  # latest host excess over that offset
        self._host_sum = np.zeros(0)                  # sum of host excesses over the run
        self._host_n = np.zeros(0, dtype=np.int64)
        self._host_tx = np.zeros(0)                   # sum of (its index in the run) x excess
        self._host_told = np.zeros(0, dtype=bool)     # a raised run told again for its growth
        self._host_rep = np.zeros(0, dtype=bool)      # raised host_late (evidence)
        self._host_seen_ts = -math.inf                # decided ts of the last host check
        # A node's share of the job's host time (detector.host_time): its units' names (a
        # node's ranks of one stage and replica) and a row of numbers each.
        self._hs_keys: list[str] = []
        self._hs = np.zeros((0, host_time.NCOLS))
        # ... and each unit's slow saves in a row at the job's host events (detector.host_events)
        self._he = np.zeros((0, host_events.NCOLS))
        # Each node's host time in this job against its own past (detector.host_rise): the
        # nodes' names and a row of numbers each.
        self._hr_keys: list[str] = []
        self._hr = np.zeros((0, host_rise.NCOLS))
        self._host_level = 0.0                        # the job's median host share, smoothed
        self._pace = job_pace.new_state()             # its ranks' median compute (job_pace)
        self._usual_step_ms = 0.0                     # and its step time, on other steps
        self._event_ts = [-math.inf, -math.inf]       # its last two steps all ranks spent on
        #                                               host (newest first)
        self._event_run = 0                           # steps in a row over the level by that
        self._recent = np.zeros((0, _RECENT))          # its latest deviations over its bias
        self._tail = np.zeros(len(_TAIL_EDGES))        # the job's tail (_tail_update)
        self._tail_n = 0
        # The job's lag-1 autocorrelation of its healthy ranks' z (models.lag1: the smoothed
        # means of z_t z_(t-1) and z_(t-1)^2, steps) and each rank's last z (_ar_step)
        self._ar_xy = self._ar_xx = 0.0
        self._ar_n = 0
        # The job's lag-1 autocorrelation of its healthy ranks' host excess (models.lag1's
        # sums): how long a lone host run must last (_page_lone)
        self._hl_xy = self._hl_xx = 0.0
        self._hl_n = 0
        self._zprev = np.zeros(0)
        self._ar_score = np.zeros(0)                  # its CUSUM on z whitened by it (_ar_step)
        self._cold = np.zeros(0, dtype=np.int64)      # steps its cold start may last (_cold_steps)
        self._lone_rep = np.zeros(0, dtype=bool)      # paged alone by its host path (_page_lone)
        self._lone_streak = np.zeros(0, dtype=np.int64)  # steps in a row late by its host path
        self._host_dev_z = np.zeros(0)                # its last host excess in the job's sigmas
        self._grad_level: dict[int, float] = {}       # (pp, tp) group -> its log grad_norm level
        self._mismatch: dict[int, list[float]] = {}   # rank -> [onset_ts, agreeing steps]
        self._majority: dict[tuple[int, int, int], str] = {}  # (step, tp, pp) -> checksum,
        #                                                     for stragglers of partial steps
        self._pair: dict[int, list[float]] = {}       # rank -> [onset_ts, agreeing steps]:
        #                                               one of two replicas that disagree
        # A tie held to be judged on the next steps' grad norms (detector.step_numerics
        # _tie_open, sdc.lean_ok): its rank -> [onset_ts, run, peer, level, peer's level,
        # spread, peer's spread, split step, judged steps]
        self._tie_lean: dict[int, list[Any]] = {}
        self._split_active = False
        self._losses = sdc.ReplicaLoss()              # loss outliers by replica (detector.sdc)
        # The latest decided step's number, ranks and checksums (a skipped step's are unchanged:
        # _check_overflow), and whether the checksums moved on its latest step every rank sent a
        # grad norm on (over the step before it): only then is a step they keep a skip.  State:
        # kept out of it, a restore between two steps of an overflow run took the next skip for
        # nothing and escalated its source one skip late (meta34: blind12 B1, 4.6 s).
        self._prev_ck: tuple[int, tuple[int, ...], tuple[str | None, ...]] = (-1, (), ())
        self._ck_moved = False
        # A two-replica job's slow-replica run (replica_split): [peer-group keys, smoothed log
        # ratio a group, bias weight, looks in a row, onset ts, told].  State: kept out of it, a
        # restore inside the run looked again from zero, and the slow replica's lemon page came
        # its 15 looks after the restore (meta35: blind8 H6, up to 51 s; a restarted worker
        # re-fired the page at another detected_ts).
        self._split: list[Any] | None = None
        # Ranks that left the job having learned a start offset (_parked).  State: made on
        # first use (outside __init__) it was never snapshotted, and a restore while a rank was
        # away forgot its offset: back as slow as it always was, the rank was paged slow_node
        # at its GPU (revB35 F1, 811 s; the replay pages nothing).
        self._parked_offsets: dict[int, tuple[tuple[str, int] | None, float, float]] = {}
        self._overflow = overflow_source.OverflowSource()  # skipped steps' lone sources
        self.late = 0
        self.duplicates = 0
        self.restarts = 0

    # -- input ---------------------------------------------------------------------------

    def quiet(self, e: StepSample) -> bool:
        """Take a step message that only waits for its step's other ranks: True when ``e`` was
        applied and could make no finding.

        The common case of :meth:`add`, which calls it first; the batch path
        (detector.quiet) calls it alone.  It takes a message of a step already waiting that
        does not complete it, and a duplicate of a rank that step has, while the job's clock
        (this message's ``ts`` included) is short of the next expiry check.  A step's first
        message, a late one, a restart, the message that completes a step, an expiry due:
        False, having changed nothing, and :meth:`add`'s general path decides.
        """
        try:
            buf = self._pending[e.step]
        except KeyError:
            return False  # a new step, a late message, maybe a restart
        ts = e.ts
        clock = self.clock
        if ts > clock:
            clock = ts
        seen = buf.seen
        rank = e.rank
        if rank in seen:
            self.clock = clock
            self.duplicates += 1
            return True
        events = buf.events
        if clock >= self._next_expire or len(events) + 1 >= self._expected:
            return False
        self.clock = clock
        # buf.add(e), inline (one call less for every step message)
        seen.add(rank)
        events.append(e)
        if ts > buf.last_ts:
            buf.last_ts = ts
        elif ts < buf.first_ts:
            buf.first_ts = ts
        return True

    def in_step(self, step: int) -> bool:
        """Whether ``step`` is one the job is at: past its last decided step and at most one
        past the newest it is waiting on (not a restart's, not one after a pause)."""
        newest = max(self._pending, default=self._last_step)
        return self._last_step < step <= max(newest, self._last_step) + 1

    def add(self, e: StepSample, out: list[Finding]) -> None:
        """Take one step message; findings of any step it completes go to ``out``."""
        if self.quiet(e):
            return
        # The general path: it decides every message alike, quiet or not
        # (tests/test_batch_samples.py runs it alone as quiet's reference).
        ts = e.ts
        if ts > self.clock:
            self.clock = ts
        step = e.step
        buf = self._pending.get(step)
        if buf is None:
            held: Sequence[StepSample] = ()
            if step <= self._last_step and not self._restart_from_stray(step):
                if ts > self._last_step_ts + self.cfg.lateness_s:
                    if not self._restart_confirmed(e):
                        return
                    held, self._restart_held = self._restart_held, []
                    self.late -= len(held)  # (counted while unconfirmed: not late after all)
                    if self._reported.any() or self._host_rep.any():
                        self._retract_slow(ts, out)  # (no step of the old run will clear them)
                    self._restart()
                else:
                    self._late(e, out)
                    return
            if e.rank >= _MAX_RANK:
                return
            buf = self._pending[step] = _StepBuffer(ts)
            self.tenant = e.tenant
            self.cluster = e.cluster
            for h in held:  # the messages that confirmed a restart: this step's too
                buf.add(h)
        if e.rank in buf.seen:
            self.duplicates += 1
            return
        buf.add(e)
        if len(buf.events) >= self._expected:
            self._evaluate(step, buf.last_ts, out)
        if self.clock >= self._next_expire:
            self.expire(self.clock, out)

    def add_nonfinite(self, n: NonFinite, out: list[Finding]) -> None:
        """A NaN/inf loss or grad_norm on one rank: escalate at once (replicas disagree)."""
        out.append(Finding(
            n.ts, n.ts, "nonfinite", "sdc", "unknown", Scope.of_gpu(n.node, n.gpu), True, True,
            0.7, {"field": n.field, "step": n.step, "rank": n.rank},
            self.job, self.tenant, self.cluster, n.rank, n.dp_rank))

    def expire(self, now: float, out: list[Finding], *, quiet: bool = False) -> None:
        """Decide steps still waiting for ranks.

        A step missing only a straggler or two (``straggler_share``) is decided once its
        last message is ``straggler_wait_s`` old: 1 % of messages arriving a few seconds
        late would otherwise hold most steps of a large job for seconds.  A straggler that
        comes later is still checked against its step's checksum majority.  A step missing
        more waits the full allowed lateness; then the job is taken to have shrunk.

        A job whose steps stopped while other records moved the clock on has its slow ranks
        withdrawn (:meth:`_retract_slow`); a clock run on without records (``quiet``: a
        stream gone idle, a broker hiccup) is evidence of that only after
        :data:`STOPPED_QUIET_S` (the end of the input, never).
        """
        self._next_expire = now + 0.25  # checked a few times a second, not per message
        cfg = self.cfg
        if now != math.inf and now - self._last_step_ts > max(
                2 * cfg.lateness_s, cfg.job_stopped_steps * self._period,
                STOPPED_QUIET_S if quiet else 0.0) and (
                self._reported.any() or self._host_rep.any()
                or (len(self._hr) and self._hr[:, host_rise.RAISED].any())):
            self._retract_slow(now, out)
        limit = now - cfg.lateness_s
        newest = max(self._pending, default=-1)
        for step, buf in list(self._pending.items()):
            n = len(buf.events)
            exp = self._expected
            if buf.first_ts < limit:
                complete = n >= exp
                if exp == math.inf or 2 * n >= exp and not any(
                        abs(k) > n for s, k in self._done.items() if s > step):
                    # The job shrank.  A step with under half the ranks is a stray
                    # message (a bad step number), not a job that lost half its GPUs
                    # without restarting: it must not make every later step "complete"
                    # at its first message.  Nor is one whose later steps had more ranks
                    # (a worker restored mid-step: the step's first messages went to the
                    # worker before it).
                    self._expected = n
                self._evaluate(step, now, out, complete)
            elif now - buf.last_ts < cfg.straggler_wait_s:
                continue
            elif exp == math.inf:
                if step < newest:
                    # A new job's size is unknown: once a later step has begun and this one
                    # has stopped growing, its ranks are the job's (a late rank raises the
                    # count again) -- waiting the full lateness would delay every new job's
                    # first steps.
                    self._expected = n
                    self._evaluate(step, now, out, False)
            elif n >= exp - max(1, int(exp * cfg.straggler_share)):
                self._evaluate(step, now, out, n >= exp)

    def _late(self, e: StepSample, out: list[Finding]) -> None:
        self.late += 1
        n = self._done.get(e.step)
        if n is None:
            return
        ranks = self._partial.get(e.step)
        if n >= 0:
            # A step decided complete: a duplicate, unless this rank was not in it -- then the
            # job is bigger than the size it was decided at (a size learned from a first step
            # that was partial: a worker starting or restored mid-job, a node's records 3 s
            # ahead; blind6 F3 watched 4 of 16 ranks for good).
            if not self._missed(e.rank, e.step) or n > 2 * len(self._rank_of) + 64:
                return
            ranks = self._partial[e.step] = {_LATE_ONLY, e.rank}
            while len(self._partial) > _PARTIAL_KEPT:
                del self._partial[next(iter(self._partial))]
            n = self._done[e.step] = -n - 1
        elif ranks is not None:
            if e.rank in ranks or len(ranks) > 2 * len(self._rank_of) + 64 or (
                    _LATE_ONLY in ranks and not self._missed(e.rank, e.step)):
                return  # a duplicate of a rank the step had: not a sign of a bigger job (and
                #         a flood of forged ranks is not a job of millions)
            ranks.add(e.rank)
            n = self._done[e.step] = n - 1
        # A step decided before all ranks came was missing this rank.
        if -n > self._expected:
            self._expected = -n
        majority = self._majority.get((e.step, e.tp_rank, e.pp_rank))
        if majority is not None and e.param_checksum is not None and (
                e.param_checksum != majority and e.rank not in self._mismatch):
            self._mismatch[e.rank] = [e.ts, 0]
            out.append(self._checksum_minority(
                e.rank, e.dp_rank, self.clock, e.ts, e.step, e.param_checksum, majority,
                {"arrived_late": True}))

    def check_restored(self) -> None:
        """:class:`~detector.statecodec.SnapshotRefused` unless a restored monitor's step
        bookkeeping and checksum vote state (what :meth:`_late` and the vote read) have the
        shapes and bounds this class gives them: a forged snapshot must not make a worker fail
        on every record of the job, nor hold a rank set of millions."""
        ints = (int,)
        bad = bad_field(self, _FIELDS)
        refuse_unless(bad is None, f"JobMonitor.{bad}: malformed")
        if "stop_told" not in self.__dict__:
            self.stop_told = -math.inf  # (a snapshot before round 25: told as stepping)
        refuse_unless(type(self.stop_told) is float and not math.isnan(self.stop_told)
                      and self.stop_told != math.inf, "JobMonitor.stop_told")
        if "absent_told" not in self.__dict__:
            self.absent_told = []  # (a snapshot before round 25)
        refuse_unless(type(self.absent_told) is list and len(self.absent_told) <= 256 and all(
            type(n) is str for n in self.absent_told), "JobMonitor.absent_told")
        refuse_unless(type(self._expected) in (int, float) and (
            0 <= self._expected <= 4 * _MAX_RANK or self._expected == math.inf),
            "JobMonitor._expected")
        refuse_unless(is_map_of(self._done, ints, ints) and len(self._done) <= _DONE_KEPT + 1,
                      "JobMonitor._done")
        refuse_unless(is_map_of(self._partial, ints, set) and len(self._partial) <= _PARTIAL_KEPT
                      and all(len(r) <= 2 * _MAX_RANK and all(type(x) is int for x in r)
                              for r in self._partial.values()), "JobMonitor._partial")
        refuse_unless(type(self._event_run) is int and 0 <= self._event_run <= 1 << 62,
                      "JobMonitor._event_run")
        if "_prev_ck" not in self.__dict__:  # (a snapshot before round 34)
            self._prev_ck, self._ck_moved = (-1, (), ()), False
        ck = self._prev_ck
        refuse_unless(type(ck) is tuple and len(ck) == 3 and type(ck[0]) is int
                      and type(ck[1]) is tuple and type(ck[2]) is tuple
                      and len(ck[1]) == len(ck[2]) <= 2 * _MAX_RANK
                      and all(type(r) is int for r in ck[1])
                      and all(c is None or type(c) is str for c in ck[2])
                      and type(self._ck_moved) is bool, "JobMonitor._prev_ck / _ck_moved")
        if "_split" not in self.__dict__:  # (a snapshot before round 35: looks again)
            self._split = None
        refuse_unless(_split_ok(self._split), "JobMonitor._split")
        if "_parked_offsets" not in self.__dict__:  # (a snapshot before round 35)
            self._parked_offsets = {}
        refuse_unless(_parked_ok(self._parked_offsets), "JobMonitor._parked_offsets")
        refuse_unless(host_time.check_restored(self._hs_keys, self._hs)
                      and len(self._hs) == len(self._hs_keys), "JobMonitor._hs / _hs_keys")
        refuse_unless(host_events.check_restored(self._he), "JobMonitor._he")
        # Each per-slot array a slot an item, of its kind (round 22 added six: a short one
        # restored failed the job's every step with an IndexError -- review23).
        n = len(self._base) if type(self._base) is np.ndarray else -1
        for name in ("_zprev", "_ar_score"):
            if name not in self.__dict__ and n >= 0:
                setattr(self, name, np.zeros(n))  # (a snapshot before round 30: none yet)
        if "_cold" not in self.__dict__ and n >= 0:
            self._cold = np.zeros(n, dtype=np.int64)  # (a snapshot before round 34: none cold)
        if "_lone_rep" not in self.__dict__ and n >= 0:
            self._lone_rep = np.zeros(n, dtype=bool)  # (a snapshot before round 35: none paged)
            self._lone_streak = np.zeros(n, dtype=np.int64)
        if "_host_dev_z" not in self.__dict__ and n >= 0:
            self._host_dev_z = np.zeros(n)  # (a snapshot before loaderfix35: its lag-1 anew)
        for name, fill in _SLOT_ARRAYS:
            a = getattr(self, name, None)
            kind = "b" if type(fill) is bool else "i" if type(fill) is int else "f"
            refuse_unless(type(a) is np.ndarray and a.ndim >= 1 and len(a) == n
                          and a.dtype.kind == kind and a.shape[1:] == _SLOT_WIDTH.get(name, ()),
                          f"JobMonitor.{name}: not a slot array")
        # ... and what indexes them: slot + 1 (0: none) in the twin table, a rank's slot
        # (review27: a twin of slot 10^9 or a row of one column failed every step)
        refuse_unless(not len(self._twins) or 0 <= self._twins.min() <= self._twins.max() <= n,
                      "JobMonitor._twins: a twin past the job's slots")
        refuse_unless(len(self._hw) == n and len(self._rank_of) <= n
                      and len(self._slot) <= len(self._rank_of)
                      and all(0 <= s < len(self._rank_of) for s in self._slot.values()),
                      "JobMonitor._slot/_rank_of/_hw: not the job's slots")
        refuse_unless(len(self._slow.score) >= n and len(self._host.score) >= n,
                      "JobMonitor._slow/_host: not a score a slot")  # (a bank grows by 8 at least)
        refuse_unless(type(self._told_was) is dict and not self._told_was,
                      "JobMonitor._told_was: not an empty map (it lives within a step)")
        refuse_unless(overflow_source.check(self._overflow), "JobMonitor._overflow")
        refuse_unless(job_pace.check(self._pace), "JobMonitor._pace")
        refuse_unless(host_rise.check_restored(self._hr_keys, self._hr), "JobMonitor._hr")
        refuse_unless(type(self._majority) is dict and all(
            type(k) is tuple and len(k) == 3 and all(x is None or type(x) is int for x in k)
            and type(v) is str for k, v in self._majority.items())
            and len(self._majority) <= 2 * _MAJORITIES_KEPT, "JobMonitor._majority")
        for name, size in (("_mismatch", 2), ("_pair", 3)):
            refuse_unless(type(getattr(self, name)) is dict and all(
                type(k) is int and type(v) is list and 2 <= len(v) <= size
                and all(type(x) in (int, float) and x == x for x in v)
                for k, v in getattr(self, name).items()), f"JobMonitor.{name}")
        last = max(self._last_step, max(self._done, default=-1))
        refuse_unless(type(self._tie_lean) is dict and len(self._tie_lean) <= len(self._rank_of)
                      and all(sdc.lean_ok(k, v, last, self.clock)
                              for k, v in self._tie_lean.items()), "JobMonitor._tie_lean")

    def _missed(self, rank: int, step: int) -> bool:
        """Whether ``rank`` surely took no part in ``step``, decided complete: it has no slot
        (every rank of a decided step has one), or its latest step decided is older."""
        s = self._slot.get(rank)
        if s is None:
            return rank < _MAX_RANK
        return (step >= self._in_step_from and self._in_step_key == (self._moves, self.restarts)
                and s < len(self._in_step) and self._in_step[s] < step)

    def _note_in_step(self, step: int, slots: np.ndarray) -> None:
        """Each of ``slots`` took part in ``step`` (for :meth:`_missed`)."""
        at = self._in_step
        n = len(self._rank_of)
        key = (self._moves, self.restarts)
        if self._in_step_key != key or self._in_step_from == math.inf:
            at = self._in_step = np.full(n, -1, dtype=np.int64)
            self._in_step_from = self._in_step_to = step
            self._in_step_key = key
        elif step < self._in_step_from:
            return  # (older than what it covers: _missed cannot tell for it anyway)
        elif len(at) < n:
            at = self._in_step = np.concatenate([at, np.full(n - len(at), -1, dtype=np.int64)])
        if step >= self._in_step_to:
            self._in_step_to = step
            at[slots] = step
        else:  # (a step decided after a newer one: its ranks' latest stays the newer)
            at[slots] = np.maximum(at[slots], step)

    def _restart_confirmed(self, e: StepSample) -> bool:
        """A step number going back is a restart once half the job's ranks say so.

        One stray message with an old step number (a misconfigured producer, a
        replayed record) must not wipe every rank's history; a real restart
        from a checkpoint brings every rank back to the same step.  The messages
        that said so are held (:attr:`_restart_held`, at most half the job) and,
        once the restart is confirmed, go into the restarted step with the rest:
        dropped, the first step after a restart was decided with half the job's
        ranks, the job's size was learned as that half, and every later step was
        "complete" at its first half of messages -- half the ranks unwatched for
        the rest of the job (BENCHMARKS.md, "scenario=reboot: the missed
        grad-norm SDC").  Unconfirmed, they are counted ``late``.
        """
        if e.step != self._restart_step:
            self._restart_step, self._restart_ranks = e.step, set()
            self._restart_held = []
        if e.rank in self._restart_ranks:
            self.duplicates += 1
            return False
        self._restart_ranks.add(e.rank)
        need = 1 if self._expected == math.inf else max(1, int(self._expected) // 2)
        if len(self._restart_ranks) < need:
            if e.rank < _MAX_RANK:
                self._restart_held.append(e)
            self.late += 1
            return False
        self._restart_step, self._restart_ranks = -1, set()
        return True

    def _restart_from_stray(self, step: int) -> bool:
        """Whether ``step``, below the job's last step, is the job going on past a stray.

        One message with a step number far ahead (a bad producer) is decided alone, as a
        step missing ranks; in a job of two ranks that is half the job, so it becomes the
        job's last step, and the next real step looks like one going back -- a restart one
        rank confirms, wiping the job's history.  It is the job going on when the last step
        was decided incomplete and ``step`` lies beyond every other step decided: then the
        last step goes back to the one before the stray and ``step`` is a new step.  (A
        restart from a checkpoint goes back to a step the job had, or to that very step.)
        """
        last = self._last_step
        if step >= last or self._done.get(last, 0) >= 0:
            return False
        before = max((s for s in self._done if s != last), default=-1)
        if step <= before:
            return False
        self._last_step = before
        return True

    def _retract_slow(self, now: float, out: list[Finding]) -> None:
        """The job stopped (a node rebooted, the job crashed or was preempted): no step will
        confirm or clear its slow ranks, so they are withdrawn rather than left to page.

        A slow rank is a comparison with peers at the same step; without steps it is no
        longer observed.  A real fault shows again within a few steps once the job resumes.
        """
        for s in np.flatnonzero(self._reported[:len(self._rank_of)]).tolist():
            rank = self._rank_of[s]
            out.append(self._finding(
                rank, None, "slow_rank", "slow_node", "unknown", now, now, False, 0.0,
                {"step": self._last_step, "rank": rank,
                 "note": f"the job stopped: no step for {now - self._last_step_ts:.0f} s"}))
        for s in np.flatnonzero(self._host_rep[:len(self._rank_of)]).tolist():
            out.append(self._finding(self._rank_of[s], None, "host_late", "slow_node", "unknown",
                                     now, now, False, 0.0, {"step": self._last_step},
                                     verdict=False))
        self._host_share_withdraw(now, out)
        self._host_rise_withdraw(now, out)
        self._reset_slow(None)
        self._reported[:] = False
        self._wander_rep[:] = False
        self._twin_rep[:] = False
        self._pair_rep[:] = False
        self._pair_run[:] = 0
        self._pair_gross[:] = 0
        self._gross[:] = 0
        self._run_sum[:] = 0.0
        self._run_own[:] = 0.0
        self._run_n[:] = 0
        self._run_since[:] = 0.0
        self._recur[:] = 0.0
        self._recurring[:] = False
        self._recur_last[:] = False
        self._reset_sustained(None)
        self._reset_host(None)

    def _restart(self) -> None:
        """Step numbers went back while time went on: the job restarted from a checkpoint."""
        self.restarts += 1
        self._pending.clear()
        self._done.clear()
        self._partial.clear()
        self._expected = math.inf
        self._evaluated = 0
        self._gross_nodes.clear()
        self._found_nodes.clear()
        self._reset_slow(None)
        self._cold[:] = 0
        self._reported[:] = False
        self._wander_rep[:] = False
        self._twin_rep[:] = False
        self._pair_rep[:] = False
        self._pair_run[:] = 0
        self._pair_gross[:] = 0
        self._gross[:] = 0
        self._run_sum[:] = 0.0
        self._run_own[:] = 0.0
        self._run_n[:] = 0
        self._run_since[:] = 0.0
        self._spikes[:] = 0.0
        self._gn[:] = 0
        self._recur[:] = 0.0
        self._recurring[:] = False
        self._recur_last[:] = False
        self._reset_sustained(None)
        self._reset_host(None)
        self._host_share_reset()
        self._hr_keys = []
        self._hr = np.zeros((0, host_rise.NCOLS))
        self._majority.clear()  # keyed by step numbers, which now repeat
        self._tie_lean = {}     # (likewise; its tie stays paged)
        self._pace = job_pace.new_state()  # (learnt again: the correlator keeps the onset)
        self._last_step = -1
        self._seen_at = np.zeros(0, dtype=np.int64)  # (counted in evaluations, now from 0)
        self._whole_at = 0

    # -- analysis ------------------------------------------------------------------------

    def _evaluate(self, step: int, decided_ts: float, out: list[Finding],
                  complete: bool = True) -> None:
        buf = self._pending.pop(step)
        buf.columns()
        self._done[step] = len(buf.ranks) if complete else -len(buf.ranks)
        if len(self._done) > _DONE_KEPT:
            del self._done[next(iter(self._done))]
        if not complete:
            self._partial[step] = set(buf.seen)
            while len(self._partial) > _PARTIAL_KEPT:
                del self._partial[next(iter(self._partial))]
        while len(self._majority) > _MAJORITIES_KEPT:
            del self._majority[next(iter(self._majority))]
        if step > self._last_step and (self._expected == math.inf
                                       or 2 * len(buf.ranks) >= self._expected):
            # (a stray message with a step number of its own does not move the job on)
            # (the job's first step has no step before it: a step 0 after the initial -1 gave
            # an infinite gap, then a NaN period for good -- host_events never judged a save;
            # nor has a restart's first step 0: the restart's pause is no step -- review26)
            if step == self._last_step + 1 and self._last_step >= 0 and -math.inf < \
                    self._last_step_ts < buf.last_ts:
                gap = buf.last_ts - self._last_step_ts
                self._period = gap if self._period == 0.0 else self._period + 0.1 * (
                    gap - self._period)
            self._last_step = step
            self._last_step_ts = buf.last_ts
        slot = self._slot
        try:
            slot_of = _pick(slot, buf.ranks)
        except KeyError:  # ranks not seen before: slots for them
            for r in buf.ranks:
                if r not in slot:
                    slot[r] = len(self._rank_of)
                    self._rank_of.append(r)
            self._grow(len(self._rank_of))
            slot_of = _pick(slot, buf.ranks)
        slots = buf.slots = _ints(slot_of)
        moved = self._track_hardware(buf, slot_of, decided_ts, out)
        self._note_in_step(step, slots)
        n = len(slot_of)
        if n > self._expected or n < self._expected != math.inf and n == len(self._rank_of):
            # More ranks than the job was taken to have (a size learned from a partial first
            # step): it has them all.  Fewer, but every rank the job has a slot for: the
            # count held a rank that never took part in a step (a forged late message).
            self._expected = n
        if moved:
            if self._parked:
                self._unpark(moved)
            out.append(self._layout_finding(buf, moved, decided_ts))
        # each rank's peer group: (pp_rank, tp_rank) as one int (both < 2**24, the decoder's bound)
        groups = (_ints(buf.pp) << 24) | _ints(buf.tp)
        n = len(slot_of)
        # The groupings whose layouts are found by slot (peer_stats.learn_layout): the peer
        # groups (0), the replicas (1), and with pipeline stages the stages (2: _check_host's
        # medians by stage, ``groups >> 24``, whose layout _rows made anew every step -- cpu29).
        kinds = [(0, groups)]
        if self.cfg.replica_noise_ratio > 0.0:
            kinds.append((1, buf.dp_array()))
        pp = buf.pp
        if pp.count(pp[0]) != len(pp):
            kinds.append((2, groups >> 24))
        whole = self._whole_layouts
        every = n == len(self._rank_of)
        if every:
            # Every rank of the job is here (the usual step): the slots are a permutation of
            # 0..n-1, and the layouts of the peer groups and replicas are found through them,
            # whose order is the same every step (peer_stats.learn_layout).
            self._whole_at = self._evaluated
            order = np.empty(n + 1, dtype=np.intp)
            order[slots] = _arange(n)
            order[n] = n
            fixed = self._fixed_rows
            if len(fixed) > 8:
                fixed.clear()
            for i, values in kinds:
                found = learn_layout(values, order, fixed)
                if found is not None:
                    whole[i] = found
        else:
            # A step missing a straggler or two: its rows are the job's, less the absent
            # (peer_stats.derive_layout).
            for i, values in kinds:
                if i in whole and len(whole[i][0]) == len(self._rank_of):  # (every slot in it)
                    derive_layout(values, slots, whole[i])
            seen = self._seen_at
            if len(seen) < len(self._rank_of):
                seen = self._seen_at = np.concatenate([seen, np.full(
                    len(self._rank_of) - len(seen), self._evaluated, dtype=np.int64)])
            seen[slots] = self._evaluated
        ts = _floats(buf.ts)
        self._evaluated += 1
        busy, ok, host = self._busy(buf)
        if every:
            self._check_pace(busy, ok, decided_ts, out)
        self._check_slow(step, slots, groups, ts, busy, ok, buf, decided_ts, out)
        if ok is None and self._evaluated % _SPLIT_EVERY == 0 and len(slot_of) <= 16:
            replica_split(self, buf, busy, decided_ts, out)  # (lemon18: detector.lemon)
        if host:
            host_ms = self._check_host(step, slots, groups, ts, busy, buf, decided_ts, out)
            if host_ms is not None and self._evaluated > self.cfg.warmup_steps:
                self._host_rise(step, slots, buf, host_ms, decided_ts, out)
        self._check_grad(step, slots, groups, ts, _floats(buf.grad), buf, decided_ts, out)
        ov = self._overflow
        ov.seq += 1
        if ov.flagged or None in buf.grad:
            self._check_overflow(step, buf, groups, decided_ts, out)
        elif self._prev_ck[0] == step - 1 and buf.checksum[0] is not None:
            self._ck_moved = self._moved(buf)
        self._prev_ck = (step, buf.ranks, buf.checksum)
        checksum = buf.checksum
        if checksum[0] is not None or checksum.count(None) != len(checksum):
            self._check_checksums(step, buf, decided_ts, out, complete, groups)
        loss = buf.loss
        if loss[0] is not None or loss.count(None) != len(loss):
            out.extend(self._losses.step(step, _floats(loss), buf, groups, decided_ts, self.job,
                                         self.tenant, self.cluster))
        if not every and self._evaluated % _GONE_CHECK_STEPS == 0:
            self._free_gone_slots(decided_ts, out)

    def _check_pace(self, busy: np.ndarray, ok: np.ndarray | None, ts: float,
                    out: list[Finding]) -> None:
        """Tell the job's compute stepping up on every rank alike, or that step gone
        (detector.job_pace): the ranks' median ``compute_ms`` of a step every rank is in."""
        have = busy if ok is None else busy[ok]
        if len(have) < job_pace.MIN_RANKS:
            return
        med = median(have)  # (float(np.median(have)) bit for bit, a sort: peer_stats.median)
        said = job_pace.step(self._pace, med, ts, self._evaluated > self.cfg.warmup_steps)
        if said is not None:
            out.append(job_pace.finding(self._pace, med, ts, said, self.job, self.tenant,
                                        self.cluster))

    @staticmethod
    def _busy(buf: _StepBuffer) -> tuple[np.ndarray, np.ndarray | None, bool]:
        """Each rank's time in its own work this step: ``compute_ms``, or, when a producer
        sends no ``compute_ms``, ``step_ms - comm_ms``; which ranks have one (at least
        ``_MIN_BUSY_MS``, so not NaN; None: all, the usual step); and whether every rank sent
        ``compute_ms`` (as much) and ``comm_ms``, so its host time is known
        (:meth:`_check_host`).

        In synchronous training every rank's ``step_ms`` is about the same (the collectives
        make them wait for each other), but a slow rank is the one the others wait for: it
        blocks *least* in collectives.  So ``step_ms - comm_ms`` (compute plus data loading,
        the time it was not waiting) tells it apart just as ``compute_ms`` does.  One basis
        for the whole step: mixing them would compare a rank's compute with another's
        compute plus data loading.  Without either field nothing tells ranks apart (NaN:
        not compared).
        """
        busy = _floats(buf.compute)
        ok = busy >= _MIN_BUSY_MS
        if np.count_nonzero(ok) == len(ok):
            # (every rank sent a compute_ms: no NaN; comm_ms too when the first did -- a
            # producer sends it or not; _check_host makes sure)
            return busy, None, buf.comm[0] is not None
        if np.count_nonzero(np.isnan(busy)):
            comm = _floats(buf.comm)
            if not np.isnan(comm).all():
                busy = _floats(buf.step_ms) - comm
                ok = busy >= _MIN_BUSY_MS
                if np.count_nonzero(ok) == len(ok):
                    return busy, None, False
        return busy, ok, False

    def _grow(self, n: int) -> None:
        old = len(self._base)
        if n <= old:
            return
        n = max(n, 2 * old)
        self._hw.extend([None] * (n - old))
        for name, fill in _SLOT_ARRAYS:
            a = getattr(self, name)
            # (np.zeros and np.ones: half np.full's instructions, and a job's first step
            # makes 13 arrays)
            more = (np.full(n - old, self.cfg.slow_baseline_clip) if fill is None
                    else np.ones(n - old, dtype=a.dtype) if fill
                    else np.zeros((n - old, *a.shape[1:]), a.dtype))
            setattr(self, name, np.concatenate([a, more]))
        self._slow.ensure(n)
        self._host.ensure(n)

    def _free_gone_slots(self, ts: float, out: list[Finding]) -> None:
        """Give back the slots of ranks that left the job: in none of its last ``_GONE_STEPS``
        steps while it stepped on (an elastic job that shrank, a node replaced, a producer
        writing a stray rank number a step).

        Without this a live job kept a slot for every rank number it ever saw (room harden,
        2026-12-02: one stray rank a step was 6,008 slots after 6,000 steps, each step 2.5x
        slower to evaluate), and a job that lost a rank for good never again took the usual
        step's path (every slot in the step).  A new rank always gets a slot: nothing is
        refused.  What a leaving rank had reported is withdrawn (no step will confirm or
        clear it, as for a job that stopped, :meth:`_retract_slow`); one that comes back is a
        new rank, as on other hardware (:meth:`_track_hardware`), but for the start offset it
        learned, which it finds again on the same GPU (:meth:`_unpark`).
        """
        n = len(self._rank_of)
        seen = self._seen_at[:n]
        gone = np.flatnonzero(self._evaluated - np.maximum(seen, self._whole_at) >= _GONE_STEPS)
        if not len(gone):
            return
        rank_of, clip = self._rank_of, self.cfg.slow_baseline_clip
        parked = self._parked
        for s in gone.tolist():
            rank = rank_of[s]
            note = {"step": self._last_step, "rank": rank,
                    "note": f"the rank left the job: in none of its last {_GONE_STEPS} steps"}
            for signal, kind, cause, was in (
                    ("slow_rank", "slow_node", "unknown", bool(self._reported[s])),
                    ("grad_outlier", "sdc", "unknown", bool(self._spiking[s])),
                    ("checksum_mismatch", "sdc", "gpu_hardware",
                     self._mismatch.pop(rank, None) is not None),
                    ("host_late", "slow_node", "unknown", bool(self._host_rep[s]))):
                if was:
                    out.append(self._finding(rank, None, signal, kind, cause, ts, ts, False, 0.0,
                                             note, verdict=signal != "host_late"))
            if self._pair.pop(rank, None) is not None and not self._pair:  # (detector.sdc)
                out.append(sdc.tie_over(ts, self._last_step, note["note"], self.job,
                                        self.tenant, self.cluster))
            if self._cap[s] > clip:  # learned a start offset: kept for its return
                parked.pop(rank, None)
                parked[rank] = (self._hw[s], float(self._base[s]), float(self._cap[s]))
                while len(parked) > _PARKED_KEPT:
                    oldest = next(iter(parked))
                    del parked[oldest]
                    self.start_offsets.pop(oldest, None)
            else:
                self.start_offsets.pop(rank, None)
        keep = np.ones(n, dtype=bool)
        keep[gone] = False
        idx = np.flatnonzero(keep)
        for name, _ in _SLOT_ARRAYS:
            setattr(self, name, getattr(self, name)[idx])
        renum = np.zeros(n + 1, dtype=np.int64)  # (twins are slots + 1: renumbered, 0 if gone)
        renum[idx + 1] = np.arange(1, len(idx) + 1)
        self._twins = renum[np.clip(self._twins, 0, n)]
        self._slow.keep(idx)
        self._host.keep(idx)
        self._hw = [self._hw[i] for i in idx.tolist()]
        self._rank_of = [rank_of[i] for i in idx.tolist()]
        self._slot = {r: i for i, r in enumerate(self._rank_of)}
        self._seen_at = seen[idx]
        # Layouts learned by slot are void (slots renumbered): learned again at the next step.
        self._moves += 1
        self._fixed_rows.clear()
        self._whole_layouts.clear()
        self._spikes_looked = False

    def _unpark(self, moved: list[int]) -> None:
        """Ranks that come back on the GPU they left from take their learned start offset
        again (:meth:`_track_hardware` started them afresh, as on other hardware)."""
        parked = self._parked
        for rank in moved:
            s = self._slot[rank]
            was = parked.get(rank)
            if was is not None and was[0] == self._hw[s]:
                del parked[rank]
                _, self._base[s], self._cap[s] = was
                self._fresh[s] = False

    def _track_hardware(self, buf: _StepBuffer, slots: tuple[int, ...], ts: float,
                        out: list[Finding]) -> list[int]:
        """A rank that now runs on other hardware starts its history afresh; returns those.

        What it had reported on its old GPU is withdrawn there (nothing will clear it: the
        rank's steps now name another GPU), as for a rank that left the job."""
        hw = self._hw
        now = _pick(hw, slots)
        if now == buf.hw:
            return []
        at = [i for i, (h, b) in enumerate(zip(now, buf.hw, strict=True)) if h != b]
        kept = self._offsets_kept(buf, slots, now, at) if self.restarts else None
        for i in at:
            s = slots[i]
            if now[i] is not None and (self._reported[s] or self._host_rep[s]):
                note = {"step": self._last_step, "rank": buf.ranks[i],
                        "note": f"the rank moved to {buf.hw[i][0]} GPU {buf.hw[i][1]}"}
                for signal, was in (("slow_rank", self._reported[s]),
                                    ("host_late", self._host_rep[s])):
                    if was:
                        out.append(self._finding(buf.ranks[i], None, signal, "slow_node",
                                                 "unknown", ts, ts, False, 0.0, note,
                                                 verdict=signal == "slow_rank"))
            hw[s] = buf.hw[i]
        moved = [buf.ranks[i] for i in at]
        self._moves += 1
        m = _ints(slots)[at]
        self._reset_slow(m)
        self._reported[m] = False
        self._twin_rep[m] = False
        self._twins[m] = 0
        self._gross[m] = 0
        self._run_sum[m] = 0.0
        self._run_own[m] = 0.0
        self._run_n[m] = 0
        self._run_since[m] = 0.0
        self._base[m] = 0.0
        self._cap[m] = self.cfg.slow_baseline_clip
        # A start offset is learned only in the job's first start: a rank the job moved to
        # other hardware after a restart (a spare for a failed node) ran at its peers' pace
        # before, so a slowness the new GPU brings is a change (blind4 D5: a spare 15-22 %
        # slow learned as the offset of a fresh start, paged 13-39 steps later) -- beyond
        # the offset it keeps (_offsets_kept).
        self._fresh[m] = self.restarts == 0
        # A rank that joins the job past its warm-up starts cold (_cold_steps); in the
        # warm-up (a start, a restart) every rank does, alike.
        self._cold[m] = self.cfg.warmup_steps if self._evaluated >= self.cfg.warmup_steps else 0
        if kept is not None:
            self._base[m], self._cap[m] = kept
        self._spikes[m] = 0.0
        self._recur[m] = 0.0
        self._recurring[m] = False
        self._recur_last[m] = False
        self._reset_sustained(m)
        self._reset_host(m)
        return moved

    def _offsets_kept(self, buf: _StepBuffer, slots: tuple[int, ...],
                      now: tuple[tuple[str, int] | None, ...], at: list[int]
                      ) -> tuple[np.ndarray, np.ndarray]:
        """After a restart, the (bias, cap) each moved rank (``at``, positions in the step)
        keeps: the larger of the offset it had learned and the one its new GPU's last rank
        had learned there -- an offset is the rank's own work (an uneven shard, the rank that
        logs) or its GPU's silicon, and which one no step tells.

        Without this a job restarted on the same nodes in another order (torchrun numbers
        nodes as they join) paged the GPU 8 % slow since the job's start under its new rank,
        and a rank 8 % slow by its own work restarted on a healthy spare paged the spare
        (review round 13, S2 and S4: 5 steps after the restart).  A spare slower than either
        (blind4 D5) is still a change.
        """
        clip = self.cfg.slow_baseline_clip
        learned = {h: s for s, h in enumerate(self._hw[:len(self._rank_of)])
                   if h is not None and self._cap[s] > clip}
        base, cap = np.zeros(len(at)), np.full(len(at), clip)
        for j, i in enumerate(at):
            for s in (slots[i] if now[i] is not None else None, learned.get(buf.hw[i])):
                if s is not None and self._cap[s] > cap[j]:
                    base[j], cap[j] = self._base[s], self._cap[s]
        return base, cap

    def _layout_finding(self, buf: _StepBuffer, moved: list[int], ts: float) -> Finding:
        """Evidence only: where these ranks now run, so the correlator can say what isolating
        a unit takes out of the job (its granularity).  Sent when a rank first appears or
        moves, so a job's layout costs one finding, not one per step."""
        where = {r: i for i, r in enumerate(buf.ranks)}
        placement = [[r, buf.hw[where[r]][0], buf.hw[where[r]][1], buf.dp[where[r]]]
                     for r in moved]
        return Finding(ts, ts, "job_layout", "slow_node", "unknown", Scope.of_job(self.job),
                       True, False, 0.0, {"placement": placement}, self.job, self.tenant,
                       self.cluster)

    def _finding(self, rank: int, dp: int | None, signal: str, kind: str, cause: str, ts: float,
                 onset: float, active: bool, severity: float, evidence: dict[str, Any],
                 verdict: bool = True) -> Finding:
        slot = self._slot.get(rank)
        node, gpu = (self._hw[slot] if slot is not None else None) or ("?", 0)
        return Finding(ts, onset, signal, kind, cause, Scope.of_gpu(node, gpu), active, verdict,
                       severity, evidence, self.job, self.tenant, self.cluster, rank, dp)

    def _check_slow(self, step: int, slots: np.ndarray, groups: np.ndarray, ts: np.ndarray,
                    compute: np.ndarray, ok: np.ndarray | None, buf: _StepBuffer,
                    decided_ts: float, out: list[Finding]) -> None:
        """``compute``: :meth:`_busy`'s times, ``ok`` its ranks with one (None: all).

        In a wandering job (:meth:`_wander_update`) the step's slow ranks found by the other
        rules are held (:meth:`_hold_wandering`): only the wandering job's rule reports."""
        mark = len(out)
        told = bool(np.count_nonzero(self._reported[slots]))  # (a rank told slow before this step)
        if not told and self._ar_held():  # (or held by the run test: as told, _ar_step)
            told = bool(np.count_nonzero(self._slow.alarmed[slots]))
        self._check_slow_rules(step, slots, groups, ts, compute, ok, buf, decided_ts, out)
        # (the same place slow on several nodes: read before the holds below take any back)
        place = self._same_place(out, mark, slots, groups) if len(out) > mark else []
        # Routing is told from faults by the job's wander index once it can be read: a job
        # that reads under _WANDER_OFF there does not wander, and ranks slowing together in it
        # are faults (Alibaba PAI job 3: workers 6-9 1.3x their peers from iteration ~2200 of
        # a job whose index read 0.8-1.1 -- held as visiting for good while they stayed slow).
        # Once the index has read under _WANDER_OFF for _WANDER_HOLD_STEPS steps in a row the
        # job does not route (routing is its workload's, from its start): an index lifted later
        # is its slow ranks' own -- ranks going slow and staying slow move the peer median, and
        # so every rank's deviation, once (Alibaba job 3: 0.8-1.1 for 200 samples, 4-6 from
        # iteration ~2250 as workers 6-9 slowed; workers 8, 9 held as visiting for good).
        # Entering the wandering regime (100 steps at _WANDER_ON) holds all the same.  The calm
        # ends when its reason does: routing that starts later moves the median rank at once,
        # before the index reads it (_stirred); with no rank told slow such a step ends the
        # calm and its holds are back (review25's latch: 44 node pages from step 254).
        may_wander = (self._wander_n < _WANDER_MIN_STEPS + _WANDER_HOLD_STEPS
                      or self._wander >= _WANDER_OFF and self._wander_calm < _WANDER_HOLD_STEPS)
        if len(out) > mark and not may_wander and not told and self._stirred(slots):
            self._wander_calm = 0  # (the calm ended with it: its holds are back, _wander_update)
            may_wander = True
            # and the twins learnt in the calm are none (i.i.d. steps, a few routed ones:
            # experts 5 and 7 correlated by chance paged 4 nodes) -- picked anew (_twin_update)
            self._twin_n = 0
            self._twins[:] = 0
        if len(out) > mark and (self._wandering or (self._visiting(out, mark) and may_wander)):
            self._hold_wandering(out, mark)
        elif len(out) > mark and may_wander:
            self._hold_shared(out, mark, slots, groups)
        if place:
            self._hold_same_place(out, mark, place)
        if len(out) > mark:
            self._alarmed_without_places(out, mark, slots, groups)
        if len(out) > mark and decided_ts - self._event_ts[0] <= 2 * _AFTER_EVENT_S:
            self._hold_after_event(out, mark, decided_ts)

    def _hold_after_event(self, out: list[Finding], mark: int, now: float) -> None:
        """Take back a slow rank found on this step (``out[mark:]``) that looks like the
        write-back following a job-wide host step (a checkpoint's snapshot) until
        ``_AFTER_EVENT_S`` after that step: its run began after the step (or a few steps
        before it), it is under ``_AFTER_EVENT_RATIO`` slower than its peers, its node's
        ranks are slow with it (:meth:`_node_slow`: the write-back contends for the node's
        PCIe and memory, every GPU it feeds) and their host time is not up
        (:meth:`_host_up`).  The write-back, node by node, fades (blind10 K3); a rank still
        slow then is found again and reported (a node's ranks together: one hold for all).

        A fault is reported at once: one GPU slow among its node's mates (a thermal or
        power slowdown that began during a checkpoint; round 20's hold took every one under
        1.10x for up to 120 s: the reporting corpus' 10-15 % slowdowns median 7 -> 10
        steps), or a node whose ranks arrive late (its host path: blind3's host faults,
        held 10-30 s by round 20's hold)."""
        kept = []
        events = self._event_ts
        for f in out[mark:]:
            s = self._slot.get(f.rank) if f.rank is not None else None
            ev = f.evidence
            ratio = ev.get("mean_ratio_over_run", ev.get("compute_ratio_to_peers"))
            onset = f.onset_ts
            if (s is None or f.signal != "slow_rank" or not f.active or ratio is None
                    or ratio >= _AFTER_EVENT_RATIO or not any(
                        0.0 <= onset - e <= _AFTER_EVENT_S and now - e < _AFTER_EVENT_S
                        for e in events) or not self._node_slow(s) or self._host_up(s)):
                kept.append(f)
                continue
            self._reported[s] = self._sustained[s] = self._recurring[s] = False
        out[mark:] = kept

    def _node_alarmed(self, slot: int, place: Callable[[int], bool] | None = None) -> int:
        """How many of the job's ranks on ``slot``'s node (itself counted) are in a slow run
        whose CUSUM has alarmed -- each over its own noise -- by at least half ``slot``'s run
        mean, told slow already or not; 0 for a rank of no node, 1 alone.

        A rank found slow alone may have mates alarmed beside it that wait only on their
        effect size (``slow_min_effect``, :meth:`_node_alike`'s floor): a host fault ramping
        up slows the node's ranks alike, and the one over the bar first was escalated at its
        GPU, the node 17 s later when the rest passed it (blind23 D2, loop-s3: gpu08/6 found
        at +3.1 %, its 7 mates alarmed at +1.4-2.3 %).  Told ``node_alarmed`` at
        ``_NODE_ALARMED`` or more, for the correlator (host33, Correlator._slow_due's node
        rule): what finds ranks is unchanged.  ``place``: a mate it says True of is not
        counted (:meth:`_alarmed_without_places`)."""
        hw = self._hw
        node = hw[slot][0] if hw[slot] is not None else None
        if node is None:
            return 0
        at = [m for m, h in enumerate(hw[:len(self._rank_of)]) if h is not None and h[0] == node]
        n = self._run_n[at]
        mean = self._run_sum[at] / np.maximum(n, 1)
        mine = float(self._run_sum[slot]) / max(int(self._run_n[slot]), 1)
        ok = (n >= 2) & self._slow.alarmed[at] & (mean > 0.0) & (mean >= 0.5 * mine)
        if place is not None:  # (a mate slow as its place: the workload's, not the node's)
            ok &= np.array([m == slot or not place(m) for m in at], dtype=bool)
        return int(np.count_nonzero(ok | (np.array(at) == slot)))

    def _alarmed_without_places(self, out: list[Finding], mark: int, slots: np.ndarray,
                                groups: np.ndarray) -> None:
        """Tell the slow ranks found on this step (``out[mark:]``) ``node_alarmed`` counting no
        mate whose place is slow alike on other nodes (:meth:`_place_slow`): an MoE expert's
        GPUs, alarmed on every node that holds it, are the workload's, not evidence that the
        node is slow (moe34: a GPU 4.5 % slow for good beside a +2.5 % expert's two GPUs of its
        node, told node_alarmed 3, was paged at its node by the correlator's node rule) -- unless
        its node's other ranks are slow beside them (:meth:`_slow_beside`, revB34 F2: a host
        fault reads on the expert's GPUs too)."""
        def placed(m: int) -> bool:
            return self._place_slow(m, slots, groups)

        for i in range(mark, len(out)):
            f = out[i]
            s = self._slot.get(f.rank) if f.rank is not None else None
            if s is None or not f.evidence.get("node_alarmed"):
                continue
            k = self._node_alarmed(s, placed)
            if k < f.evidence["node_alarmed"] and self._slow_beside(s, placed):
                k = f.evidence["node_alarmed"]  # (its node slow beside its place mates)
            ev = {key: v for key, v in f.evidence.items() if key != "node_alarmed"}
            if k >= _NODE_ALARMED:
                ev["node_alarmed"] = k
            out[i] = f._replace(evidence=ev)

    def _node_slow(self, slot: int) -> bool:
        """Whether the job's other ranks on ``slot``'s node are slow with it: the median of
        their deviations from their peers at least half of its own (a node-wide slowdown,
        not one GPU among healthy mates; a node of one rank: False).  A rank's deviation is
        its mean over its slow run (the CUSUM above zero), its latest step's outside one:
        a write-back ending leaves the run's mean, not the latest step, slow."""
        hw = self._hw
        node = hw[slot][0] if hw[slot] is not None else None
        at = [m for m, h in enumerate(hw[:len(self._rank_of)])
              if h is not None and h[0] == node]
        if len(at) < 2:
            return False
        n = self._run_n[at]
        dev = np.where(n > 0, self._run_sum[at] / np.maximum(n, 1), self._slow_dev[at])
        mine = float(dev[at.index(slot)])
        return mine > 0.0 and float(np.median(np.delete(dev, at.index(slot)))) >= 0.5 * mine

    def _host_up(self, slot: int) -> bool:
        """Whether ``slot``'s unit (its node's ranks of its stage and replica,
        detector.host_time) is late by its host now (:func:`host_time.late`); False before
        the units are known or while they are stale (a move, a restart)."""
        code = self._hs_code
        if (slot >= len(code)
                or self._hs_code_at != (self._moves, self.restarts, id(self._hs_keys))):
            return False
        u = int(code[slot])
        return 0 <= u < len(self._hs) and host_time.late(self._hs[u])

    def _stirred(self, slots: np.ndarray) -> bool:
        """Whether the job's median rank moves now: the index of :meth:`_wander_update` read
        from this step's smoothed deviations (``_wshort`` about ``_wlong``, the ranks' median of
        their square over the i.i.d. figure) without its ~20 steps of smoothing, at
        ``_WANDER_ON`` or more.

        A job's calm (its index under ``_WANDER_OFF`` for ``_WANDER_HOLD_STEPS`` steps) says
        that it does not route *now*; routing that starts later (a gate's balance lost, a new
        data mix) moves every rank's pace at once, and the ranks it makes slow are found
        within ~5 steps, before the smoothed index reads it (1.5-2.0 on the step of the first
        finds, this figure 5-11: tests/test_review25.py).  A fault moves its own ranks: the
        median rank moves only once they move the peer median (Alibaba PAI job 3: 2.3 on
        the step workers 6, 7 were found, 12 fifty iterations later), and by then they are
        told -- :meth:`_check_slow` asks this only of a job with no rank told slow.

        Each rank's move is read about the ranks' median move: routing moves each rank its own
        way, while ranks a fault slows together lift the peer median and so move every other
        rank's deviation down alike -- one common move, no stir (review27: three of eight
        nodes ramping to 1.15x in a calm job read 3.2-4.5 uncentred, and their first finds,
        on three nodes at once, were held as visiting: paged 40-43 s after the onset, 21-27 s
        before live26; centred 1.0-1.3; late routing 5.2-11.3, Alibaba's jobs <= 2.6)."""
        if self._wander_n < _WANDER_MIN_STEPS or len(slots) < 2 * self.cfg.min_peers:
            return False
        move = self._wshort[slots] - self._wlong[slots]
        move = (move - median(move)) ** 2
        return median(move, scratch=True) / (_WANDER_SHORT / (2.0 - _WANDER_SHORT)) >= _WANDER_ON

    def _visiting(self, out: list[Finding], mark: int) -> bool:
        """Whether the slow ranks found on this step (``out[mark:]``) make the job's slowness
        one that visits unit after unit: found on ``_WANDER_NODES`` nodes or more, of more
        than one replica, within ``_WANDER_PLACE_STEPS`` steps (a few: routing finds the ranks of
        one expert together; two faults of one job 20 steps apart are two pages,
        tests/conftest.py's service incident).  A fault is on one unit (a
        GPU, a node; a TP group spanning nodes is one replica, tests/test_review_round13.py);
        MoE routing caught before its wandering is measurable (:meth:`_wander_update` needs
        ~100 steps) found the ranks holding one expert in two EP groups, two nodes, on one
        step, and 7 nodes in 15 s (blind8 H1)."""
        found = self._found_nodes
        now = self._evaluated
        for f in out[mark:]:
            if f.signal == "slow_rank" and f.active and f.scope.node is not None:
                found.pop(f.scope.node, None)
                found[f.scope.node] = (now, -1 if f.dp_rank is None else f.dp_rank)
        while found and (now - next(iter(found.values()))[0] > _WANDER_PLACE_STEPS
                         or len(found) > _WANDER_NODES_KEPT):
            del found[next(iter(found))]
        return len(found) >= _WANDER_NODES and len({dp for _, dp in found.values()}) > 1

    def _check_slow_rules(self, step: int, slots: np.ndarray, groups: np.ndarray,
                          ts: np.ndarray, compute: np.ndarray, ok: np.ndarray | None,
                          buf: _StepBuffer, decided_ts: float, out: list[Finding]) -> None:
        cfg = self.cfg
        if ok is not None:
            slots, groups, ts, compute = slots[ok], groups[ok], ts[ok], compute[ok]
        if len(slots) == 0:
            return
        x = np.log(compute)
        sr = sorted_rows(x, groups)
        comparable: np.ndarray | None = None  # (None: all comparable)
        if sr is not None and sr[2].k >= cfg.min_peers:
            # Every peer group of one size, large enough (the usual step): all comparable.
            # The job's noise is the median of the groups' scales, taken over a row a group.
            v, mid, rows = sr
            step_sigma = median(row_mads(v, mid, rows) * MAD_TO_SIGMA, scratch=True)
            med = mid[rows.back]
        else:
            med, scale, size, k = group_stats(x, groups) if sr is None else row_stats(sr)
            if k >= cfg.min_peers:  # (the general path: only with min_peers <= 0)
                step_sigma = median(scale, scratch=True)
            else:
                comparable, groups, n_comparable = self._comparable(x, groups, med, scale, size)
                if not n_comparable:
                    if ok is None:
                        self._check_pair(step, slots, compute, buf, decided_ts, out)
                    return
                step_sigma = median(scale if comparable is None else scale[comparable],
                                    scratch=True)
        told = None  # (the ranks out of the reference this step: _untold_reference)
        # Under runs (the job's lag-1 in force: _ar_held) a rank whose CUSUM alarmed and is not
        # told yet is out of the reference as a told one is
        ar_on = self._ar_on()
        held = self._ar_held(ar_on)
        if comparable is None and (held or np.count_nonzero(self._reported)):
            told = self._reported[slots]
            if held:
                told = told | self._slow.alarmed[slots]
            if np.count_nonzero(told) >= _TOLD_OUT:
                med, step_sigma, told = self._untold_reference(x, groups, told, med, step_sigma)
            else:
                told = None
        if comparable is None:
            r, d, gc, tc, mc = slots, x - med, groups, ts, med
        else:
            r, d, gc = slots[comparable], (x - med)[comparable], groups[comparable]
            tc, mc = ts[comparable], med[comparable]
        self._sigma = _smoothed(self._sigma, step_sigma, cfg.slow_sigma_alpha)
        sigma = max(self._sigma, cfg.slow_sigma_floor)
        warm = self._evaluated <= cfg.warmup_steps
        cold = (self._cold_steps(r, d, sigma) if not warm and np.count_nonzero(self._cold)
                else None)
        self._slow_dev[r] = d
        mates, imbalanced = self._replica_common(d, buf, ok, comparable, warm)
        common = mates if imbalanced else None
        base_r = self._base[r]  # (each rank's bias before this step's learning)
        if common is None:
            own = d
            z = (d - base_r) / sigma
            size, size_sigma, one = d, sigma, None
        else:
            # Each rank's deviation is its replica's share (the batch it drew this step) and
            # its own: one statistic from the two, each in units of its own noise, so a rank
            # slower than its replica mates stands out of the replica-wide noise, and a whole
            # replica slower than its peers (a node) is still counted, at its own noise --
            # for a replica on one node only (below).  ``own`` is the rank's deviation from
            # its replica mates, peer-centred (_peer_centred).
            own = _peer_centred(d - common, gc)
            over = own - base_r
            own_sigma = max(median(np.abs(over), scratch=True) * 1.4826, cfg.slow_sigma_floor)
            z_own = over / own_sigma
            # The replicas' spread is a property of the workload, not of one step: with few
            # replicas (DP 4) one step's MAD of 4 medians ranges from a tenth of it to twice
            # it, and a step whose other replicas happen to sit close together would make an
            # ordinary batch a 4-sigma surprise.  Smoothed like the job's noise scale.
            step_rep = median(np.abs(common), scratch=True) * 1.4826
            self._rep_sigma = _smoothed(self._rep_sigma, step_rep, cfg.slow_sigma_alpha)
            z_rep = common / max(self._rep_sigma, cfg.slow_sigma_floor)
            # A whole replica slower than its peers is a unit only when its ranks share one
            # node (a node's fault).  A replica spanning nodes is slow as a whole by its
            # batch: a bad GPU or node slows its own ranks, which stand out of their
            # replica's median by z_own alone (a node slows 8 of a 64-rank replica and
            # barely moves that median).  Counting z_rep there paged a healthy rank over
            # its replica mates when its 8-node replica drew the slowest batch on 10 of 21
            # steps (healthy fleet dp4-10s seed 55000).
            # A replica spanning nodes whose median stands _REPLICA_APART_Z of the replicas'
            # own spread over its peers on a step is no batch draw: the spread is what the
            # batches do, step by step.  It is scored as a replica on one node is (its whole
            # replica's deviation counts): blind15 O2 -- a pipeline's p2p waits held in
            # ``compute_ms`` slow all 16 ranks of a stage's low-clock GPU's replica alike
            # (17.5 %, 33-38 of the replicas' sigma, the sigma floored at slow_sigma_floor)
            # while the job sat in this regime (its replicas 0.4 % apart, ranks 0.2 %), and
            # no rank stood out of its replica mates: nothing paged in 700 s.  The CUSUM
            # still needs such a step several times in a row (slow_h), which batches that
            # move a replica by 5-20 % step to step (a spread this regime measures) do not do;
            # not in the warm-up, while that spread is still one step's MAD of a few medians.
            one = self._one_node_replicas(buf, r)
            if not warm:
                one = one | (z_rep >= _REPLICA_APART_Z)
            z = np.where(one, (z_own + z_rep) * math.sqrt(0.5), z_own)
            # A run is sized as it is scored: on a replica spanning nodes by the rank's own
            # deviation (its replica's batch is no evidence), over its learned bias (below).
            size, size_sigma = np.where(one, d, own), own_sigma
        # The MAD of a small peer group underestimates the spread, and real jitter has fatter
        # tails than a normal: rescale so the median |z| of a step is what it is for N(0, 1).
        # (over the ranks not told slow, as the reference above: a job's slow ranks are not
        # its noise)
        spread = median(np.abs(z if told is None else z[~told]), scratch=True) / 0.6745
        self._zscale += cfg.slow_sigma_alpha * (spread - self._zscale)
        z /= max(self._zscale, 1.0)
        learn = np.abs(z) < 3.0
        if warm:
            fresh: np.ndarray | None = self._fresh[r]  # (before the last warm-up step)
            if common is None and mates is not None:
                # Learn the start offset against the rank's replica mates on a replica that
                # spans nodes, also before imbalance is recognised (its smoothed ratio takes
                # tens of steps to pass replica_noise_ratio): against its DP peers a rank's
                # offset is buried under its replica's batches, and a healthy GPU 3.4 % over
                # its replica mates was left with the 2 % cap and paged hours later under
                # imbalance (healthy fleet dp4-10s seed 55000).  Without imbalance the
                # replica's median is ~0 and this is the same figure.  A replica on one node
                # keeps its deviation from its peers: that whole replica slow from the start
                # is its node's offset.
                own = np.where(self._one_node_replicas(buf, r), own,
                               _peer_centred(d - mates, gc))
            self._base[r] += 0.2 * (own - self._base[r])  # fast start, then slow tracking
            # An offset present from the job's first steps is this rank's normal (a shared
            # or slightly slower GPU, an uneven data shard): learned up to start_offset_max.
            # Only in a rank's first warm-up on its GPU: after a restart, a slowness that was
            # not there at the job's start is a change, not a baseline.
            f = r[self._fresh[r]]
            self._cap[f] = (self._base[f] + cfg.slow_baseline_clip).clip(
                cfg.slow_baseline_clip, math.log1p(cfg.start_offset_max))
            if self._evaluated == cfg.warmup_steps:
                self._note_offsets(f)
                self._fresh[r] = False
        else:
            if np.count_nonzero(self._slow.alarmed):  # (none alarmed: the usual step)
                learn &= ~self._slow.alarmed[r]
            if cold is not None:
                learn &= ~cold
            # base_r is self._base[r]: nothing learned since; kept where not learning
            self._base[r] = np.where(learn, base_r + cfg.slow_baseline_alpha * (own - base_r),
                                     base_r)
        # Only "this GPU is a little slower than its peers" is learned as normal: learning
        # "faster" would make its return to the median look like a slowdown.  After warm-up
        # no more slowness is learned than the rank showed from the start (at least 2 %):
        # a change after warm-up is a change, and pages.
        self._base.clip(0.0, self._cap, out=self._base)
        if warm:
            # The job's noise for the gross prior: its steps' spreads so far weighed alike --
            # the smoothed one is its first step's (alpha 0.05) through the warm-up, and one
            # step of 3-8 replicas drawing close together is a tenth of their spread (review16:
            # long-context DP 3 x TP 4 and DP 8 x TP 4, x lognormal(0, 0.42) a replica a step,
            # paged a healthy node at steps 3-5 with the smoothed noise at 0.07-0.16, 0.4 real).
            if self._evaluated <= 1:
                self._warm_sigma = [0.0, 0.0]
            acc_sigma = self._warm_sigma
            acc_sigma[0] += step_sigma
            acc_sigma[1] += 1
            pos = np.arange(len(compute)) if ok is None else ok.nonzero()[0]
            self._gross_prior(step, r, d, tc, mc, max(sigma, acc_sigma[0] / acc_sigma[1]), buf,
                              pos if comparable is None else pos[comparable], decided_ts, out)
            # The CUSUM runs from the first step: the warm-up (alike on every rank) moves the
            # peer median, not the ratio, so a GPU slow from it is a ratio from it (blind4 D5:
            # a spare 15-22 % slow found 13-39 steps after the restart).  After a restart the
            # job's noise and its ranks' offsets are known (a rank moved to other hardware
            # learns no more than slow_baseline_clip, _track_hardware).  A rank in its first
            # warm-up on its GPU has no history: it is scored under a conservative prior --
            # over the most a healthy rank may be slower from the start (start_offset_max,
            # what it may learn as its own) -- not left silent until its offset is learned.
            cusum_z = self._over_prior(fresh, z, base_r, size_sigma)
        else:
            cusum_z, fresh = z, None
            if cold is not None:  # (a cold step adds nothing to a rank's runs)
                cusum_z = np.where(cold, np.minimum(z, 0.0), z)
        prev_score = self._slow.score[r]
        _, cleared, score = self._slow.step(r, cusum_z, tc)
        if warm:
            self._zprev[r] = z
        else:
            self._ar_step(r, z, prev_score)
            if cold is not None:
                self._ar_score[r[cold]] = 0.0
        self._wander_update(step, r, gc, z, d, mc, buf, decided_ts, out)
        self._twin_update(step, r, gc, d, mc, buf, decided_ts, out)
        if not warm:  # (the gross prior's counters are the warm-up's)
            over_base = size - base_r
            zr = z
            if cold is not None:
                over_base = np.where(cold, np.minimum(over_base, 0.0), over_base)
                zr = cusum_z
            self._check_burst(step, r, over_base, tc, mc, buf, decided_ts, out,
                              None if common is not None else (d, gc))
            self._check_recurring(step, r, zr, over_base, tc, mc, buf, decided_ts, out)
            self._check_sustained(step, r, over_base, tc, mc, buf, decided_ts, out)
        # The mean slowdown of the current run (since the score left zero): an alarm is
        # reported only when the run is slow by a meaningful amount on average, not just
        # unusually noisy (the CUSUM measures surprise; this measures size).
        in_run = score > 0.0
        self._recent[r, self._evaluated % _RECENT] = cusum_z
        if fresh is not None and np.count_nonzero(fresh):
            # (the job's tail is measured on ranks whose bias is known: one still learning
            # its offset has a z of its learning, not of the job's noise)
            self._tail_update(z[~fresh], prev_score[~fresh])
        elif cold is not None:  # (nor is a cold start's)
            self._tail_update(z[~cold], prev_score[~cold])
        else:
            self._tail_update(z, prev_score)
        self._run_sum[r] = np.where(in_run, self._run_sum[r] + size, 0.0)
        if one is not None:  # (its replica's share apart: only a replica on one node differs)
            self._run_own[r] = np.where(in_run, self._run_own[r] + own, 0.0)
        self._run_n[r] = np.where(in_run, self._run_n[r] + 1, 0)
        # When the run became clearly slow (its first step >= 3 sigma; a step's ts is its
        # end): the CUSUM's onset is where the score left zero, which a chance slow step
        # just before the change can lead by a step or two; this says from when a throttle
        # would show on the GPU's telemetry (the correlator waits for the first sample taken
        # after it, Correlator._explanation_wait).  Tuning reproducer interval-10, seeds
        # 9600..9611: 10 % slowdowns' median 9.5 -> 8.5 steps, attribution unchanged.
        clearly = z >= _CLEARLY_SLOW_Z
        if np.count_nonzero(clearly):
            since = self._run_since[r]
            since = np.where((since == 0.0) & clearly, tc, since)
            self._run_since[r] = np.where(in_run, since, 0.0)
        elif np.count_nonzero(self._run_since):  # (no run clearly slow: the usual step)
            self._run_since[r] = np.where(in_run, self._run_since[r], 0.0)
        if np.count_nonzero(self._slow.alarmed):
            alarmed = self._slow.alarmed[r]
            at = (alarmed & ~self._reported[r]).nonzero()[0]
            waiting = r[at]
        else:  # (the usual step: no rank alarmed)
            waiting = r[:0]
        if len(waiting):
            # The run is where the CUSUM alarmed, so its mean is biased up: a healthy rank's
            # chance run of 8 steps at +1.8 sigma (tuning reproducer scenario-reboot s9012:
            # +3.5 % over 8 steps, mean of the draws 1.78 sigma) alarms the CUSUM and has a
            # mean above any small effect.  Its size is the mean less its standard error
            # margin; a real 10 % slowdown clears it by far at its alarm, a sustained 3 % one
            # after tens of steps, and a chance run ends (back to the median) first.
            # Under batch imbalance a rank whose replica spans nodes is scored on its own
            # deviation from its replica mates over its learned bias, and its run is sized
            # so: the mean of ``own`` less that bias and the margin.  Sized on ``d`` with no
            # margin (as it was), a healthy rank 2.3 % over its mates from the start paged
            # on 8 steps of its own deviation at +3.9-8.4 % whose ``d`` averaged +7.2 %
            # with its replica's batches (healthy fleet dp4-10s seed 90002).  A replica on
            # one node is scored on its replica's deviation too (below).
            n = np.maximum(self._run_n[waiting], 1)
            margin = cfg.slow_effect_z * size_sigma * max(self._zscale, 1.0) / np.sqrt(n)
            mean = self._run_sum[waiting] / n
            if one is not None:
                # A replica on one node is sized two ways, and counts if either is large
                # enough: as a rank on a replica spanning nodes is (its own deviation from its
                # replica mates over its bias, less its margin: a GPU slow inside its replica),
                # and on ``d``, its whole replica's deviation from its peers (a node slow as a
                # whole, TP keeping its ranks together), less the margin of that deviation's
                # noise: the replicas' spread with the rank's own.  Sized on ``d`` with no
                # margin (as it was), a 4-step run of a healthy node 1.5 % over its DP peers
                # with +-1 % a step (TP 8: its replica paced by its slowest GPU's offset)
                # averaged 2.7 % and paged (blind5 held workloads-s5, h100n009; the replicas'
                # spread 0.9 %).
                spans = ~one[at]
                by_own = np.where(spans, mean, self._run_own[waiting] / n) - self._base[waiting]
                rep_margin = (cfg.slow_effect_z * math.hypot(size_sigma, self._rep_sigma)
                              * max(self._zscale, 1.0) / np.sqrt(n))
                mean = np.where(spans, by_own, np.maximum(by_own, mean - rep_margin + margin))
            effect = np.exp(mean - margin) - 1.0
            if self._heavy(ar_on):
                # (a heavy tail under runs: a modest run lasts past the noise's episodes)
                effect = np.where((effect >= _HEAVY_EFFECT) | (n >= _HEAVY_STEPS), effect, 0.0)
            # Reported while its run goes on: its latest step adds to its score.  A run found
            # late -- held while it was a checkpoint's write-back (_hold_after_event), or by
            # another hold -- whose ranks are back at their peers' pace when the hold lets go
            # is over: its CUSUM stays alarmed for a few healthy steps (the score drains at
            # slow_k a step), and reporting it then paged a node whose write-back, 3.7 % over
            # 8 steps, had ended two steps before (blind10 held life-s7 hgx-a01, 120 s after
            # the snapshot).  A fresh alarm's latest step is always slow (it lifted the score
            # over slow_h).
            ongoing = cusum_z[at] > cfg.slow_k
            if ar_on:  # (a run under the job's lag-1: :meth:`_ar_step`)
                ongoing &= self._ar_score[waiting] > cfg.slow_h
            new = waiting[(effect >= cfg.slow_min_effect) & ongoing & self._persistent(waiting)]
        else:
            new = waiting
        alike: dict[int, int] = {}
        if len(new):
            new, alike = self._node_alike(new, r)
        if len(cleared):
            # (a rank reported as a recurring straggler clears as one: _check_recurring)
            cleared = cleared[self._reported[cleared] & ~self._recurring[cleared]
                              & ~self._sustained[cleared] & ~self._wander_rep[cleared]
                              & ~self._twin_rep[cleared]]
        grown = self._grown_runs(r, new)
        if len(new) == 0 and len(cleared) == 0 and len(grown) == 0:
            return
        peer_med = dict(zip(r.tolist(), np.exp(mc).tolist(), strict=True))
        dp_of = dict(zip(buf.ranks, buf.dp, strict=True))
        rank_of = self._rank_of
        for s in [*new.tolist(), *grown.tolist()]:  # slots; findings name the rank
            rank = rank_of[s]
            self._reported[s] = True
            ratio = math.exp(float(self._slow_dev[s]))
            mean = math.exp(float(self._run_sum[s] / max(self._run_n[s], 1)))
            self._told[s], self._told_onset[s] = ratio, self._slow.onset_ts[s]
            out.append(self._finding(
                rank, dp_of[rank], "slow_rank", "slow_node", "unknown", decided_ts,
                float(self._slow.onset_ts[s]), True, min(0.95, 0.5 + (mean - 1.0) * 3),
                {"step": step, "rank": rank, "compute_ratio_to_peers": round(ratio, 4),
                 "mean_ratio_over_run": round(mean, 4), "run_steps": int(self._run_n[s]),
                 "peer_median_compute_ms": round(peer_med[s], 2),
                 "noise_sigma": round(sigma, 4), "cusum": round(float(self._slow.score[s]), 2),
                 "baseline_ratio": round(math.exp(float(self._base[s])), 4),
                 **({"clearly_slow_since": round(float(self._run_since[s]), 3)}
                    if self._run_since[s] > 0.0 else {}),
                 # its host time over its stage's at its latest step (share of a step's work; over
                 # its learned offset): a node's host path slows compute and host alike
                 **({"host_excess": round(float(self._host_dev[s]), 4)}
                    if self._host_dev[s] != 0.0 else {}),
                 **({"start_offset": self.start_offsets[rank]} if rank in self.start_offsets
                    else {}),
                 **({"node_wide": alike[s]} if s in alike else {}),
                 **({"node_alarmed": k} if s not in alike
                    and (k := self._node_alarmed(s)) >= _NODE_ALARMED else {}),
                 **({"grown_from": round(float(self._told_was[s]), 4)} if s in self._told_was
                    else {})}))
        self._told_was.clear()
        for s in cleared.tolist():
            rank = rank_of[s]
            self._reported[s] = False
            self._told[s] = 0.0
            out.append(self._finding(rank, dp_of[rank], "slow_rank", "slow_node", "unknown",
                                     decided_ts, decided_ts, False, 0.0, {"step": step}))

    def _untold_reference(self, x: np.ndarray, groups: np.ndarray, told: np.ndarray,
                          med: np.ndarray, step_sigma: float
                          ) -> tuple[np.ndarray, float, np.ndarray | None]:
        """Each rank's peer median and the job's noise this step (``med``, ``step_sigma`` of
        all ranks) from its group's ranks not told slow, in each group with ``_TOLD_OUT`` or
        more ranks told (``told``) that keeps ``min_peers`` others; and the ranks so taken out
        (None: none).

        A rank told slow is a fault, not its job's normal: while it stays slow it is out of the
        reference its peers are judged against.  The median and the MAD break down with half of
        a group off its pace, and are dragged well before -- Alibaba job 3's four workers 1.3x
        slower among ten (two more 1.1x from the start, their learned offsets): the median sat
        between the steady and the slow, the noise went from 4 % to 13 % in 30 samples (and its
        rescale 0.8 -> 1.5), and workers 8 and 9, 1.27-1.30x the steady ones, scored under the
        CUSUM's allowance to the job's end.  A rank told slow that recovers is back at its
        peers' median, and clears as before.  One told rank in a group is left in: one moves a
        median of three or more by half a gap at most, and a node's ranks (one a group under
        TP) are judged as before (blind5's fan case: a node slow at a hot GPU's pace, joined
        to that GPU's page)."""
        uniq, inv = np.unique(groups, return_inverse=True)
        keep = ~told
        enough = ((np.bincount(inv[keep], minlength=len(uniq)) >= self.cfg.min_peers)
                  & (np.bincount(inv[told], minlength=len(uniq)) >= _TOLD_OUT))
        if not np.count_nonzero(enough):
            return med, step_sigma, None
        kmed, kscale, _, _ = group_stats(x[keep], groups[keep])
        gmed, gscale, gall = np.empty(len(uniq)), np.empty(len(uniq)), np.empty(len(uniq))
        gmed[inv[keep]], gscale[inv[keep]] = kmed, kscale
        gall[inv] = group_stats(x, groups)[1]
        return (np.where(enough[inv], gmed[inv], med),
                median(np.where(enough, gscale, gall), scratch=True), told & enough[inv])

    def _grown_runs(self, r: np.ndarray, new: np.ndarray) -> np.ndarray:
        """Slots whose CUSUM-reported run now runs well beyond the pace it was told at: told
        again (the same ``slow_rank``, fresh evidence and ``grown_from``), at most each time
        its excess doubles.

        A run is told once, at its alarm, with its pace of then; what the correlator weighs
        against it later (a minor power cap's clock loss, :meth:`Correlator._benign_explanation`)
        it weighs against that pace.  A slowdown ramping up is found early in its ramp, a few
        percent slow: a GPU routinely capped 3 % held a rank that went on to 24 % slower
        excused as power management until its run ended, never paged (22nd reporting corpus,
        powercap=fleet: a silent_slow ramp to 24 % over 67 s).  Work slows at most as its
        clock does, so a pace grown past twice the told excess plus ``_GROWN_MARGIN`` on
        ``_GROWN_STEPS`` steps in a row is a slowdown that the told pace no longer describes.
        Only the CUSUM's runs (the other rules report their own measures) of the same run."""
        told = self._told[r]
        if not np.count_nonzero(told):  # (the usual step: no run told)
            return r[:0]
        latest = np.exp(self._slow_dev[r])
        mine = ((told > 0.0) & self._reported[r] & (self._told_onset[r] == self._slow.onset_ts[r])
                & ~self._recurring[r] & ~self._sustained[r] & ~self._wander_rep[r]
                & ~self._twin_rep[r])
        over = mine & (latest - 1.0 >= 2.0 * (told - 1.0) + _GROWN_MARGIN)
        self._grown[r] = np.where(over, self._grown[r] + 1, 0)
        grown = r[(self._grown[r] >= _GROWN_STEPS) & ~np.isin(r, new)]
        for s in grown.tolist():
            self._told_was[s] = float(self._told[s])
            self._grown[s] = 0
        return grown

    def _wander_update(self, step: int, r: np.ndarray, groups: np.ndarray, z: np.ndarray,
                       over: np.ndarray, med: np.ndarray, buf: _StepBuffer, decided_ts: float,
                       out: list[Finding]) -> None:
        """Whether the job's slowness wanders between its ranks (MoE expert routing), and in
        such a job its rule for a slow rank: slow for good, and alone.

        Token routing makes a few expert-parallel ranks 10-35 % heavier for tens of steps,
        then others (blind8 H1: an AR(1) walk of each EP rank's load, ~20 steps of memory):
        slower and more persistent than sequence-length imbalance, whose draw is new every
        step, so the CUSUM (made for i.i.d. steps), the sustained rule (its standard error
        taken from i.i.d. steps) and the gross prior all paged it, on every node in turn.
        What names it: every rank's deviation is persistent over a few steps and moves over
        many.  Each rank's ``z`` smoothed over ~10 steps (``_WANDER_SHORT``) varies about its
        own long mean, over i.i.d. steps, by ``_WANDER_SHORT / (2 - _WANDER_SHORT)`` of z's
        variance; the job's index is the ranks' median of that variance over it (~1 for
        jitter and batch imbalance, a steady offset or one slow rank leaving the median
        alone; 3-8 under routing).  At ``_WANDER_ON`` (left under ``_WANDER_OFF``) the job
        wanders: its ranks found slow by the other rules are held (:meth:`_hold_wandering`).
        There a rank is slow when its deviation from its peers over its bias, averaged over
        ~``1 / _WANDER_MEAN_ALPHA`` steps (a wandering rank's returns to zero, a slow GPU's
        does not: a rank against its own history, as NVIDIA's straggler detection), is
        ``_WANDER_MIN_EFFECT`` over the ranks' median, and ``_WANDER_ALONE`` over every peer
        of its group on another node: routing makes the ranks holding one expert in every EP
        group hot together (4 nodes at a time in blind8), a fault is on one unit.  It clears
        back under half the first margin.
        """
        ws, wl, wv = self._wshort[r], self._wlong[r], self._wvar[r]
        zc = z.clip(-self.cfg.slow_z_clip, self.cfg.slow_z_clip)
        # (running means over the first steps: no start from zero to climb out of, and a
        # steady offset is its own from the start)
        first = 1.0 / (self._wander_n + 1)
        ws += max(_WANDER_SHORT, first) * (zc - ws)
        wl += max(_WANDER_LONG, first) * (zc - wl)
        wv += max(_WANDER_VAR, first) * ((ws - wl) ** 2 - wv)
        self._wshort[r], self._wlong[r], self._wvar[r] = ws, wl, wv
        wm = self._wmean[r]
        wm += max(_WANDER_MEAN_ALPHA, first) * (over - wm)
        self._wmean[r] = wm
        self._wander_n += 1
        if self._wander_n < _WANDER_MIN_STEPS or len(r) < 2 * self.cfg.min_peers:
            return
        self._wander = median(wv, scratch=True) / (_WANDER_SHORT / (2.0 - _WANDER_SHORT))
        # Entered only after _WANDER_HOLD_STEPS steps at _WANDER_ON or more: one move of every
        # rank's deviation (a GPU of four peers slowing moves its peers' median, and so each
        # peer's deviation, once) lifts the index for tens of steps, then it decays; routing
        # keeps it up (tests/test_steps_round13.py's heavy tail: 3.3 for ~60 steps).
        self._wander_hot = 0 if self._wander < _WANDER_OFF else (
            self._wander_hot + 1 if self._wander >= _WANDER_ON else self._wander_hot)
        if self._wander_calm < _WANDER_HOLD_STEPS:  # (latched once reached, till a stir: _stirred)
            self._wander_calm = self._wander_calm + 1 if self._wander < _WANDER_OFF else 0
        self._wandering = self._wander >= _WANDER_OFF and (
            self._wandering or self._wander_hot >= _WANDER_HOLD_STEPS)
        live = np.count_nonzero(self._wander_rep)
        if not self._wandering and not live:
            return
        mid = median(wm)
        lead = wm - mid
        ready = self._wander_n >= _WANDER_READY_STEPS
        cand = (lead >= math.log1p(_WANDER_MIN_EFFECT)) & ~self._reported[r] \
            if self._wandering and ready else np.zeros(len(r), dtype=bool)
        hw = self._hw
        rising = []
        for i in np.flatnonzero(cand).tolist():
            node = hw[r[i]][0] if hw[r[i]] is not None else None
            peers = np.flatnonzero((groups == groups[i]) & (np.arange(len(r)) != i))
            others = [float(wm[j]) for j in peers.tolist()
                      if hw[r[j]] is None or hw[r[j]][0] != node]
            if others and float(wm[i]) - max(others) >= math.log1p(_WANDER_ALONE):
                rising.append(int(r[i]))
        falling = r[self._wander_rep[r] & (lead < math.log1p(0.5 * _WANDER_MIN_EFFECT))] \
            if live else r[:0]
        if not rising and not len(falling):
            return
        at = {int(s): i for i, s in enumerate(r.tolist())}
        dp_of = dict(zip(buf.ranks, buf.dp, strict=True))
        for s in rising:
            rank, i = self._rank_of[s], at[s]
            self._reported[s] = self._wander_rep[s] = True
            ratio = math.exp(float(lead[i]))
            out.append(self._rule_finding(
                rank, dp_of[rank], decided_ts, ratio, step, float(self._slow_dev[s]),
                {"wander_mean_ratio": round(ratio, 4), "wander_index": round(self._wander, 2),
                 "peer_median_compute_ms": round(math.exp(float(med[i])), 2),
                 "baseline_ratio": round(math.exp(float(self._base[s])), 4),
                 "rule": f"a job whose slow ranks wander (routing): its mean over its bias, "
                         f"weighed over ~{1.0 / _WANDER_MEAN_ALPHA:.0f} steps, "
                         f">= {_WANDER_MIN_EFFECT:.0%} over the ranks' median and "
                         f">= {_WANDER_ALONE:.0%} over its peers' on other nodes"}))
        for s in falling.tolist():
            self._rule_cleared(s, self._wander_rep, step, dp_of, decided_ts, out)

    def _rule_finding(self, rank: int, dp: int | None, ts: float, ratio: float, step: int,
                      dev: float, evidence: dict[str, Any]) -> Finding:
        """A slow rank found by a rule sized by ``ratio`` (the wandering job's, the twins'):
        onset at ``ts``, its confidence from the ratio, ``dev`` its log ratio to its peers."""
        return self._finding(rank, dp, "slow_rank", "slow_node", "unknown", ts, ts, True,
                             min(0.95, 0.5 + (ratio - 1.0) * 3),
                             {"step": step, "rank": rank,
                              "compute_ratio_to_peers": round(math.exp(dev), 4), **evidence})

    def _hold_wandering(self, out: list[Finding], mark: int) -> None:
        """Take back the slow ranks the other rules found on this step of a wandering job
        (``out[mark:]``): not reported, so found again while they stay slow, and reported
        only by the wandering job's rule (:meth:`_wander_update`)."""
        kept = []
        for f in out[mark:]:
            if not _holdable(f) or f.rank is None or f.rank not in self._slot:
                kept.append(f)
                continue
            s = self._slot[f.rank]
            self._reported[s] = self._sustained[s] = self._recurring[s] = False
        out[mark:] = kept

    def _check_pair(self, step: int, slots: np.ndarray, compute: np.ndarray, buf: _StepBuffer,
                    decided_ts: float, out: list[Finding]) -> None:
        """A job of two ranks (DP 2): with two peers the median is no referee, but the
        collective is -- the rank that computes longer makes its partner wait for it, so the
        fast one's ``comm_ms`` rises by about the gap and the slow one's does not (blind12 B5:
        a GPU 1.22-1.38x slower went 183-369 steps unflagged).  A rank that is the waited-for
        one, ``_PAIR_RATIO`` slower, ``_PAIR_STEPS`` steps in a row is slow; cleared after as
        many steps under half that ratio -- or ``_PAIR_GROSS_STEPS`` steps gross and steady
        (:meth:`_pair_steady`)."""
        comm = _floats(buf.comm) if len(slots) == 2 else None
        if comm is None or np.isnan(comm).any():
            return
        run, rep = self._pair_run, self._pair_rep
        dp_of = dict(zip(buf.ranks, buf.dp, strict=True))
        for i in (0, 1):
            s, o = int(slots[i]), int(slots[1 - i])
            ratio = float(compute[i] / compute[1 - i])
            gap = float(compute[i] - compute[1 - i])
            waited = float(comm[1 - i] - comm[i])
            if not rep[s]:
                waits = waited >= _PAIR_WAIT_SHARE * gap
                slow = ratio >= _PAIR_RATIO and waits
                run[s] = run[s] + 1 if slow else 0
                gross = self._pair_steady(s, math.log(ratio) if waits and ratio > 0 else 0.0)
                if (run[s] >= _PAIR_STEPS or gross) and not self._reported[s]:
                    rep[s] = self._reported[s] = True
                    run[s] = self._pair_gross[s] = 0
                    rank = self._rank_of[s]
                    rule = (f">= {self.cfg.gross_slowdown:.0%} slower, steady, "
                            f"{_PAIR_GROSS_STEPS}" if gross else
                            f">= {_PAIR_RATIO - 1.0:.0%} slower {_PAIR_STEPS}")
                    out.append(self._rule_finding(
                        rank, dp_of.get(rank), decided_ts, ratio, step, math.log(ratio),
                        {"pair_ratio": round(ratio, 4), "partner": self._rank_of[o],
                         "partner_wait_ms": round(waited, 2),
                         **({"gross_outlier": True} if gross else {}),
                         "rule": f"of a job of two ranks, the one its partner waits for in "
                                 f"the collective, {rule} steps in a row"}))
            else:
                run[s] = run[s] + 1 if ratio < 1.0 + 0.5 * (_PAIR_RATIO - 1.0) else 0
                if run[s] >= _PAIR_STEPS:
                    run[s] = 0
                    self._rule_cleared(s, rep, step, dp_of, decided_ts, out)

    def _pair_steady(self, s: int, lr: float) -> bool:
        """Slot ``s`` of a job of two ranks at log ratio ``lr`` to its partner (which waits for
        it): whether its run of gross steps within ``_PAIR_STEADY`` of each other has reached
        ``_PAIR_GROSS_STEPS`` (a step out of the band starts a run of its own)."""
        n, lo, hi = int(self._pair_gross[s]), float(self._pair_lo[s]), float(self._pair_hi[s])
        if lr < math.log1p(self.cfg.gross_slowdown) - _GROSS_MARGIN:
            n = 0
        elif n and max(hi, lr) - min(lo, lr) <= _PAIR_STEADY:
            n, lo, hi = n + 1, min(lo, lr), max(hi, lr)
        else:
            n, lo, hi = 1, lr, lr
        self._pair_gross[s], self._pair_lo[s], self._pair_hi[s] = n, lo, hi
        return n >= _PAIR_GROSS_STEPS

    def _twin_update(self, step: int, r: np.ndarray, groups: np.ndarray, d: np.ndarray,
                     med: np.ndarray, buf: _StepBuffer, decided_ts: float,
                     out: list[Finding]) -> None:
        """A rank judged against its twins, step by step: the peers whose deviation moves
        with its own (:meth:`_twin_pick`).  A slowdown that is the GPU's follows the GPU; a
        routing wander follows the tokens, which make the ranks holding one expert in every
        EP group hot together (blind8 rail-moe: 4 ranks a peer group, their deviations
        correlated 0.95, others' <= 0.5).  So a rank's deviation from its twins' median stays
        at its offset (+-1.5 % a step) while its expert warms and cools, and steps up by the
        slowdown when its GPU slows, whatever its expert does: blind8 H2's GPU, cold by routing
        (-0.15) when it turned 1.16x slower, was found by the wandering job's 100-step mean
        140-440 s after its onset; against its twins the step is 10 noise units at once.

        Where deviations are i.i.d. no rank has twins (64 steps: 0 +- 0.13 each, and the twins must
        correlate with each other too): nothing is paid for but the ring and a look every
        ``_TWIN_EVERY`` steps (groups of at most ``_TWIN_GROUP_MAX``).  Slow: the deviation over the
        offset, smoothed over ~5 steps (``_TWIN_ALPHA``), >= ``_WANDER_MIN_EFFECT`` and >=
        ``_TWIN_Z`` of its noise (the ranks' spread of it); cleared under half that.  The twins of a
        rank reported slow are kept (its slowdown lowers their correlation: picked again, they
        would be lost)."""
        col = self._twin_n % _TWIN_WINDOW
        self._twin_hist[r, col] = d
        self._twin_n += 1
        live = np.count_nonzero(self._twin_rep)
        if self._twin_n < _TWIN_FIRST:
            return
        if self._twin_n % _TWIN_EVERY == 0:
            self._twin_pick(r, groups, min(self._twin_n, _TWIN_WINDOW))
        tw = self._twins[r]
        if not np.count_nonzero(tw):
            return
        cur = np.full(len(self._base) + 1, _NAN)  # (by slot + 1: 0, no twin, reads NaN)
        cur[r + 1] = d
        vals = cur[tw]
        ok = np.count_nonzero(~np.isnan(vals), axis=1) >= _TWIN_MIN
        if not np.count_nonzero(ok):
            return
        ro = r[ok]
        res = d[ok] - _row_nanmedians(vals[ok])  # (np.nanmedian(.., axis=1), a sixth)
        base = self._twin_base[ro]
        over = res - base
        cfg = self.cfg
        self._twin_sigma = _smoothed(self._twin_sigma,
                                     median(np.abs(over), scratch=True) * MAD_TO_SIGMA,
                                     cfg.slow_sigma_alpha)
        sigma = max(self._twin_sigma, cfg.slow_sigma_floor)
        short = self._twin_short[ro]
        short += _TWIN_ALPHA * (over - short)
        self._twin_short[ro] = short
        learn = ~self._reported[ro] & (np.abs(over) < 3.0 * sigma)
        self._twin_base[ro] = np.where(learn, base + _TWIN_BASE_ALPHA * over, base).clip(
            -cfg.slow_baseline_clip, cfg.slow_baseline_clip)
        need = max(math.log1p(_WANDER_MIN_EFFECT),
                   _TWIN_Z * sigma * math.sqrt(_TWIN_ALPHA / (2.0 - _TWIN_ALPHA)))
        rising = ro[(short >= need) & ~self._reported[ro]]
        falling = ro[self._twin_rep[ro] & (short < 0.5 * need)] if live else ro[:0]
        if not len(rising) and not len(falling):
            return
        at = {int(s): i for i, s in enumerate(r.tolist())}
        dp_of = dict(zip(buf.ranks, buf.dp, strict=True))
        rank_of = self._rank_of
        for s in rising.tolist():
            rank, i = rank_of[s], at[s]
            self._reported[s] = self._twin_rep[s] = True
            ratio = math.exp(float(self._twin_short[s]))
            twins = [rank_of[t - 1] for t in self._twins[s].tolist() if t]
            out.append(self._rule_finding(
                rank, dp_of[rank], decided_ts, ratio, step, float(d[i]),
                {"twin_ratio": round(ratio, 4), "twins": twins,
                 "twin_offset": round(math.exp(float(self._twin_base[s])), 4),
                 "peer_median_compute_ms": round(math.exp(float(med[i])), 2),
                 "rule": f"against its twins (the peers on other nodes whose compute moves "
                         f"with its own, correlation >= {_TWIN_CORR}): their median's pace "
                         f"over its offset, weighed over ~{1.0 / _TWIN_ALPHA:.0f} steps, "
                         f">= {_WANDER_MIN_EFFECT:.0%} slower"}))
        for s in falling.tolist():
            self._rule_cleared(s, self._twin_rep, step, dp_of, decided_ts, out)

    def _twin_pick(self, r: np.ndarray, groups: np.ndarray, n: int) -> None:
        """Each rank's twins: the peers of its group on another node whose deviations over
        the last ``n`` steps (at most ``_TWIN_WINDOW``) change from step to step as its own
        does, and as each other's (correlations >= ``_TWIN_CORR``), the most alike
        ``_TWIN_MAX`` of them, on ``_TWIN_MIN`` nodes at least (else none).  A rank's offset
        from a new set's median is learned anew from the window, within +-slow_baseline_clip
        (twins do the same work: a rank 9 % faster than its "twins" and back at their pace is
        no slowdown).  Not
        for a rank reported slow (its twins kept), nor in groups of more than
        ``_TWIN_GROUP_MAX`` ranks."""
        hist, hw = self._twin_hist[:, :n], self._hw
        last = (self._twin_n - 1) % _TWIN_WINDOW  # (the ring's newest column: no change across it)
        clip = self.cfg.slow_baseline_clip
        # (np.unique, np.diff, np.delete and np.fill_diagonal as the set, subtraction, slices
        # and strided store they come to: no Python wrappers, the same values -- cpu29)
        for g in sorted(set(groups.tolist())):
            idx = r[groups == g]
            k = len(idx)
            if k <= _TWIN_MIN or k > _TWIN_GROUP_MAX:
                continue
            h = hist[idx]
            dh = h[:, 1:] - h[:, :-1]
            if n == _TWIN_WINDOW and last < n - 1:
                dh = np.concatenate((dh[:, :last], dh[:, last + 1:]), axis=1)
            corr = _correlations(dh)
            # The ranks with no peer correlated enough (the usual, i.i.d. deviations) and no
            # twins now: the loop below would find none and change nothing.  One matrix
            # compare for the group instead of ~20 Python and numpy calls a rank (cpu28:
            # bench/steps_callgrind.py whole, 36,966 -> 34,396 instructions a step record).
            close = corr >= _TWIN_CORR
            close.flat[::k + 1] = False  # (the diagonal)
            look = (close.any(axis=1) | self._twins[idx].any(axis=1)).tolist()
            node = [None if hw[s] is None else hw[s][0] for s in idx.tolist()]
            for i, s in enumerate(idx.tolist()):
                if self._reported[s] or not look[i]:
                    continue
                c = corr[i]
                cand = [j for j in np.flatnonzero(c >= _TWIN_CORR).tolist()
                        if j != i and (node[i] is None or node[j] != node[i])]
                cand.sort(key=lambda j: -c[j])
                chosen: list[int] = []
                for j in cand:
                    if len(chosen) < _TWIN_MAX and all(corr[j, t] >= _TWIN_CORR for t in chosen):
                        chosen.append(j)
                new = np.zeros(_TWIN_MAX, dtype=np.int64)
                if len({node[j] for j in chosen}) >= _TWIN_MIN:
                    new[:len(chosen)] = idx[chosen] + 1
                if np.array_equal(new, self._twins[s]):
                    continue
                self._twins[s] = new
                self._twin_short[s] = 0.0
                self._twin_base[s] = 0.0 if not new[0] else float(np.clip(np.mean(
                    h[i] - np.median(h[chosen], axis=0)), -clip, clip))

    def _hold_shared(self, out: list[Finding], mark: int, slots: np.ndarray,
                     groups: np.ndarray) -> None:
        """Before a job's wandering can be decided (its first ``_WANDER_MIN_STEPS +
        _WANDER_HOLD_STEPS`` steps), or while its index says it may wander, take back a slow rank
        found on this step (``out[mark:]``) whose slowness peers of its group on other nodes share:
        ``_SHARED_PEERS`` of them with a smoothed z (``_wshort``, ~10 steps) at least
        ``_SHARED_SHARE`` of its own.  Routing makes the ranks holding one expert in every EP group
        hot together: blind8 rail-moe's early pages, a node's TP pair found by the CUSUM at steps
        28-35 of the monitor, before the index is read (30 steps; it read 0.7-1.2 there, over 2 from
        step ~90) or the regime entered, while its expert's 3 other ranks ran as slow on 3 other
        nodes.  A fault is on its own unit, its peers elsewhere at their pace; a rank held is found
        again on its next step and reported once its peers are not slow with it (as
        :meth:`_hold_wandering`)."""
        kept = []
        hw, ws = self._hw, self._wshort
        for f in out[mark:]:
            s = self._slot.get(f.rank) if f.rank is not None else None
            if s is None or not _holdable(f) or ws[s] <= 0.0:
                kept.append(f)
                continue
            at = np.flatnonzero(slots == s)
            node = hw[s][0] if hw[s] is not None else None
            peers = [p for p in slots[groups == groups[at[0]]].tolist() if p != s and (
                node is None or hw[p] is None or hw[p][0] != node)] if len(at) else []
            if sum(ws[p] >= _SHARED_SHARE * ws[s] for p in peers) < _SHARED_PEERS:
                kept.append(f)
                continue
            self._reported[s] = self._sustained[s] = self._recurring[s] = False
        out[mark:] = kept

    def _same_place(self, out: list[Finding], mark: int, slots: np.ndarray,
                    groups: np.ndarray) -> list[int]:
        """The slots of the slow ranks found on this step (``out[mark:]``) whose place is slow
        on other nodes too: the ranks of its peer group on the same GPU index of other nodes
        -- ``_PLACE_NODES`` distinct nodes and ``_PLACE_SHARE`` of those holding that index --
        with a smoothed z (``_wshort``, ~10 steps) at least ``_SHARED_SHARE`` of its own and
        within ``_PLACE_MARGIN`` of it, while its own node's other ranks of the group are not
        (fewer than half of them at that share; a node holding one rank of the group has no
        place to tell).  Nodes, not ranks: two processes on one GPU of a node slow as a whole
        are one node.  A share: a large pure-DP job's noise lifts 2 of 127 peers over half a
        real slowdown's early smoothed z.  The margin: a place explains its rank up to its
        own level, not a fault on top of it (revA31 4, tests/test_tail32.py).

        An MoE router makes one expert hot at a time, the same EP index in every EP group:
        with EP over the data-parallel ranks (EP rank = dp % 8) and four replicas to a node,
        the same two GPUs of four nodes, each node's other replicas at their pace, for 10-40
        steps, then another index (blind21 M1: escalated slow_node/unknown at the four nodes
        at once, 41 times in 5 of 8 logs, in a job whose wander index read calm -- one expert
        in eight leaves the median rank where it is -- so neither the wandering rules nor the
        stir test held it).  DESIGN has no ep_rank: the place is read from the hardware the
        ranks report.  A fault is on its own unit: one GPU, one node (its other ranks slow with
        it), a TP group; it does not slow the same GPU of three nodes together and leave their
        other GPUs alone."""
        place: list[int] = []
        for f in out[mark:]:
            s = self._slot.get(f.rank) if f.rank is not None else None
            if s is not None and s not in place and _holdable(f) and self._place_slow(
                    s, slots, groups):
                place.append(s)
        return place

    def _place_slow(self, s: int, slots: np.ndarray, groups: np.ndarray) -> bool:
        """Whether slot ``s``'s place is slow alike on other nodes, its node's other ranks of
        its peer group not (:meth:`_same_place`'s test, for one slot of this step's).

        A mate is slow with ``s`` when its smoothed z and the mean of its latest
        ``_PLACE_NOW`` steps' are both at the bar: a fault that slows the node slows each of
        its steps, while an expert that left a mate's GPU leaves it at its pace at once and its
        smoothed z fading for ~10 steps.  An expert moving every ~10 steps (the smoothed
        window) put the last expert's GPU over the bar with the next one's -- beside a GPU
        slow for good, half the mates -- and the next expert's GPU was found beside the slow
        GPU, its node paged 30-40 s after it (tests/test_moe34.py)."""
        hw, ws = self._hw, self._wshort
        if hw[s] is None or ws[s] <= 0.0:
            return False
        at = np.flatnonzero(slots == s)
        if not len(at):
            return False
        node, gpu = hw[s]
        bar = _SHARED_SHARE * ws[s]
        alike = max(bar, ws[s] - _PLACE_MARGIN)
        mates = slow_mates = 0
        nodes: set[str] = set()
        elsewhere: set[str] = set()
        for p in slots[groups == groups[at[0]]].tolist():
            h = hw[p]
            if p == s or h is None:
                continue
            if h[0] == node:  # (a mate slow now, not one its last expert left: below)
                mates += 1
                slow_mates += ws[p] >= bar and self._z_now(p) >= bar
            elif h[1] == gpu:
                nodes.add(h[0])
                if ws[p] >= alike:
                    elsewhere.add(h[0])
        return bool(mates and 2 * slow_mates < mates and len(elsewhere) >= max(
            _PLACE_NODES, math.ceil(_PLACE_SHARE * len(nodes))))

    def _hold_same_place(self, out: list[Finding], mark: int, place: list[int]) -> None:
        """Take back the slow ranks found on this step whose place is slow on other nodes too
        (``place``: :meth:`_same_place`'s slots), whichever rule found them, and start their
        runs anew (the CUSUMs and the run's sums at zero), held by another rule already or
        not: the place's slowness is its workload's, not a run to carry past the expert's
        move.  Held alarmed (as :meth:`_hold_shared` holds), the run went on scoring the
        rank's noise after the expert moved, and was reported on a later noise step over
        slow_k, its run's mean the expert's (blind21 model-s3: mx04's GPUs 4-5, an expert's
        for 40 steps, reported 10 steps after it moved).  A fault on a held rank is found on
        its new run once its place is no more slow elsewhere."""
        kept = []
        gone: Counter[str | None] = Counter()
        for f in out[mark:]:
            s = self._slot.get(f.rank) if f.rank is not None else None
            if s not in place or not _holdable(f):
                kept.append(f)
            elif f.evidence.get("node_wide"):
                gone[f.scope.node] += 1
        out[mark:] = kept
        # (read before the runs below are reset: a node slow beside its place mates, revB34 F2)
        placed = set(place).__contains__
        beside = {f.rank: self._slow_beside(s, placed) for f in kept
                  if gone[f.scope.node] and (s := self._slot.get(f.rank)) is not None}
        m = _ints(place)
        self._reported[m] = self._sustained[m] = self._recurring[m] = False
        self._reset_slow(m)
        self._run_sum[m] = self._run_own[m] = self._run_since[m] = 0.0
        self._run_n[m] = 0
        if gone:  # (moe34: mates taken back as their place's are not its node's ...)
            out[mark:] = [f if beside.get(f.rank) else  # (... unless its node is slow)
                          self._alike_without(f, gone[f.scope.node]) for f in kept]

    def _slow_beside(self, slot: int, place: Callable[[int], bool]) -> bool:
        """Whether the job's other ranks on ``slot``'s node -- neither ``slot`` nor one
        ``place`` says True of (slow as its place on other nodes, :meth:`_place_slow`) -- are
        slow beside it: at least one and half of them each in a slow run averaging
        ``slow_min_effect`` or more, its CUSUM half way to the alarm (over its own noise) or
        its latest steps (up to ``_PLACE_NOW``) ``_BESIDE_Z`` noise units or more over its
        pace (:meth:`_z_now`: a run's first step).

        A host fault (a CPU throttle, a NUMA mis-binding) slows every rank its host feeds, an
        MoE expert's GPUs on it too: those read host + expert, their node mates the host's
        share, so a share of the expert's GPUs' slowness leaves the mates under any bar their
        place's tests put (:meth:`_place_slow`), and the expert's GPUs read as their place's.
        With the node's other ranks slow beside them they are evidence of the node as much as
        of the workload, and are not discounted from it (revB34 F2: the expert's two GPUs taken
        back as their place's, the rank found first with them told alone -- a healthy GPU paged
        3 s before its node).  Not relative to ``slot``'s own run: an expert's GPU found with
        its host's slowness reads both.  A host fault slows the mates on the same steps, so
        from its first step: an expert's GPU found on it was paged alone before its mates'
        runs were two steps long.  An expert beside one slow GPU leaves the node's other ranks
        at their pace: one of them past ``_BESIDE_Z`` on a step is a few in a thousand, in a
        run half way to the alarm past the effect floor a few in a hundred, three of five at
        once <= 1e-4 -- discounted, the GPU is paged (tests/test_moe34.py)."""
        hw = self._hw
        node = hw[slot][0] if hw[slot] is not None else None
        if node is None:
            return False
        at = [m for m, h in enumerate(hw[:len(self._rank_of)])
              if h is not None and h[0] == node and m != slot and not place(m)]
        if not at:
            return False
        n = self._run_n[at]
        mean = self._run_sum[at] / np.maximum(n, 1)
        bank = self._slow
        slow = (n >= 1) & (mean >= math.log1p(self.cfg.slow_min_effect))
        k = sum(bool(ok) and (score >= 0.5 * bank.h or self._z_now(m, int(n_m)) >= _BESIDE_Z)
                for m, ok, n_m, score in zip(at, slow, n, bank.score[at], strict=True))
        return 2 * k >= len(at) and k > 0

    def _z_now(self, slot: int, run: int = _PLACE_NOW) -> float:
        """The mean of ``slot``'s latest steps' deviations in noise units (the CUSUM's), at
        most ``_PLACE_NOW`` of them and at most ``run`` (its run's: steps before it are at its
        pace)."""
        col = self._evaluated % _RECENT
        k = max(1, min(run, _PLACE_NOW))
        return float(self._recent[slot, [(col - j) % _RECENT for j in range(k)]].mean())

    def _alike_without(self, f: Finding, gone: int) -> Finding:
        """``f`` found with ``gone`` fewer node mates slow alike (``node_wide``): they were
        taken back as their place's (:meth:`_hold_same_place`), the workload's, not the node's.
        Under two it is alone: told ``node_alarmed`` as one found alone is (moe34: a GPU slow
        for good found with a moving MoE expert's two GPUs of its node, node_wide 3, was paged
        at the node by the correlator's node rule, Correlator._slow_due)."""
        wide = f.evidence.get("node_wide")
        s = self._slot.get(f.rank) if f.rank is not None else None
        if not gone or not wide or s is None:
            return f
        ev = {k: v for k, v in f.evidence.items() if k != "node_wide"}
        if wide - gone >= 2:
            ev["node_wide"] = wide - gone
        elif (k := self._node_alarmed(s)) >= _NODE_ALARMED:
            ev["node_alarmed"] = k
        return f._replace(evidence=ev)

    def _cold_steps(self, r: np.ndarray, d: np.ndarray, sigma: float) -> np.ndarray | None:
        """Which of ``r`` (slots; ``d`` their deviations from their peers this step, the job's
        noise ``sigma``) are in a cold start: joined the job past its warm-up (an elastic job
        taking a node back after a re-rendezvous, a spare without a restart:
        :meth:`_track_hardware`), at their first step there or slower than their peers by
        ``_COLD_FALL_Z`` sigma less than on their step before, within ``warmup_steps`` of the
        join (None: none).  A cold step adds nothing to the rank's runs and teaches it no
        offset; the first step that is not falling so ends the cold start.

        A process new on its GPU pays for a CUDA context, an allocator and autotuning: its
        first steps are slow and fall back to its peers' pace (blind24 E1: x2.6, 1.7, 1.25,
        1.1 on the rejoined node's 8 ranks, escalated at the node 3-7 s after the rejoin).
        Its peers are warm: at a job's start every rank is cold alike and the peer median
        takes it.  A rank that stays slow stops falling, and its steps score from there."""
        left = self._cold[r]
        cold = (left > 0) & ((left == self.cfg.warmup_steps)
                             | (d < self._slow_dev[r] - _COLD_FALL_Z * sigma))
        self._cold[r] = np.where(cold, left - 1, 0)
        return cold if np.count_nonzero(cold) else None

    def _over_prior(self, fresh: np.ndarray, z: np.ndarray, base_r: np.ndarray,
                    size_sigma: float) -> np.ndarray:
        """Warm-up scores ``z``, for ranks in their first warm-up on their GPU (``fresh``)
        taken over the prior: the most slowness a healthy rank may bring from the job's start
        (``start_offset_max``) instead of the bias learned so far.

        Below that prior a rank's steady offset is its own (learned, reported, never paged:
        Alibaba PAI's workers up to 11 % slower from the start on shared GPUs); above it
        the excess is scored from the first step, in the units the run is scored in, so a
        node 19 % slow from a job's first step is found within the warm-up rather than
        learned for ten steps and found ten later (blind4 D5 without the job's history).
        """
        if not np.count_nonzero(fresh):
            return z
        prior = math.log1p(self.cfg.start_offset_max)
        unit = size_sigma * max(self._zscale, 1.0)
        return np.where(fresh, z - (prior - base_r) / unit, z)

    def _ar_on(self) -> bool:
        """Whether the job's lag-1 is in force (models.lag1.in_force; :meth:`_ar_step`)."""
        return lag1.in_force((self._ar_xy, self._ar_xx, self._ar_n), len(self._rank_of)) > 0.0

    def _heavy(self, ar_on: bool) -> bool:
        """Whether a modest run must outlast the job's noise episodes (``_HEAVY_*``): under
        runs (``ar_on``: :meth:`_ar_on`) in a job whose tail reaches ``_HEAVY_SHARE`` at
        3 sigma; and while the job's noise is not measured -- its lag-1 not known yet
        (models.lag1.known) or its tail not read on ``_HEAVY_KNOWN`` rank-steps since the
        warm-up -- whatever it reads so far: a job's noise unmeasured is taken for real noise,
        runs and tail (Alibaba PAI job 2), not a Gaussian's."""
        ranks = len(self._rank_of)
        if self._tail_n * ranks < _HEAVY_KNOWN or not lag1.known(
                (self._ar_xy, self._ar_xx, self._ar_n), ranks):
            return True
        return ar_on and not _tail_light(float(self._tail[_HEAVY_EDGE]),
                                         min(self._tail_n, _TAIL_STEPS) * ranks)

    def _ar_held(self, on: bool | None = None) -> bool:
        """Whether the job's lag-1 is in force (``on``: :meth:`_ar_on`, when the caller has
        it) and some rank's CUSUM alarmed.  Such a rank, not told yet (held until its run
        outlasts the job's runs, or by the size and tail tests), is taken as told slow: out of
        the job's reference (:meth:`_untold_reference`) and no stir of its median
        (:meth:`_check_slow`).  Four of PAI job 3's ten workers slowing to 1.3x together,
        held, lifted the job's noise from 4 % to 12 % and its wander index (held as visiting)
        until none was ever told."""
        return (self._ar_on() if on is None else on) and bool(
            np.count_nonzero(self._slow.alarmed))

    def _reset_slow(self, slots: np.ndarray | None) -> None:
        """Forget the step CUSUMs of ``slots`` (None: every slot): the plain one (``_slow``)
        and the one under the job's lag-1 (``_ar_score``, :meth:`_ar_step`), always together.

        The two are sized apart: ``_ar_score`` is a slot array (:meth:`_grow`, its length the
        job's slots), the bank grows to at least that and often more (CusumBank.ensure: by 8
        at least, doubling its own length), so the bank's slots past the slot arrays hold no
        rank.  Indexing ``_ar_score`` by the bank's slots raised IndexError
        (tests/test_batch_samples.py); only the slots both have are the ranks'."""
        if slots is None:
            self._slow.reset(np.arange(len(self._slow.score)))
            self._ar_score[:] = 0.0
        else:
            self._slow.reset(slots)
            self._ar_score[slots[slots < len(self._ar_score)]] = 0.0

    def _ar_step(self, r: np.ndarray, z: np.ndarray, prev_score: np.ndarray) -> None:
        """After warm-up: learn the job's lag-1 autocorrelation from its healthy ranks' ``z``
        (slots ``r``; not told slow, not alarmed, its CUSUM at most half way to slow_h before
        this step) and, while it is in force (models.lag1: over ``lag1.ON``), score each
        rank's run as the step CUSUM does (slow_k, slow_h, slow_z_clip) on its ``z``
        pre-whitened at the estimate less ``lag1.ON`` (``_ar_score``): an alarm is reported
        only once that score is over slow_h too (:meth:`_check_slow_rules`, while the lag-1
        was in force before the step).  Under independent noise (the simulator's) nothing
        changes.

        Real step times come in runs (Alibaba PAI job 2: lag-1 0.45-0.71 a worker, blind20's
        noise): scored as independent, a chance run of 4 steps at +5-8 % of one rank of a TP8
        node lifted the CUSUM over slow_h and escalated the node (blind20 N1: 21 of its 37
        false positives), and PAI job 1's worker 2, +3.8-8.2 % over its peers for 8 samples,
        was paged.  A score's innovation is what its step brings that its last did not: a run
        that decays back pays for its return, and a sustained slowdown still scores two thirds
        of its size a step at the 0.4 used at lag-1 0.6 (tests/test_n1run.py).  The plain
        CUSUM still finds the run first, and its alarm takes the rank out of the job's
        reference while it is held (:meth:`_ar_held`)."""
        prev = self._zprev[r]
        self._zprev[r] = z
        healthy = ~self._reported[r] & (prev_score <= 0.5 * self.cfg.slow_h)
        if np.count_nonzero(self._slow.alarmed):
            healthy &= ~self._slow.alarmed[r]
        state = (self._ar_xy, self._ar_xx, self._ar_n)
        ranks = len(self._rank_of)
        was = lag1.in_force(state, ranks)
        state = lag1.update(state, z[healthy], prev[healthy])
        self._ar_xy, self._ar_xx, self._ar_n = state
        rho = lag1.in_force(state, ranks)
        if rho == 0.0:
            return
        # The plain bank's update (CusumBank.step: its k, z_clip and alarmed cap h_cap, here
        # always), seeded from its score the step the lag-1 comes into force (the sum's order
        # is this one's since round 30: a snapshot's scores are the same to the bit)
        bank = self._slow
        score = prev_score if was == 0.0 else self._ar_score[r]
        x = np.minimum(lag1.whiten(z, prev, rho), bank.z_clip) - bank.k
        self._ar_score[r] = (score + x).clip(0.0, bank.h_cap)

    def _tail_update(self, v: np.ndarray, prev: np.ndarray) -> None:
        """The job's tail: the share of rank-steps at or above each of ``_TAIL_EDGES`` (a
        deviation over the rank's bias), from ranks whose CUSUM was at zero before this step
        (so a slow rank's run does not count as the job's noise, and for i.i.d. noise the
        choice is independent of the step's value); the mean of the steps seen, then a mean
        over the last ~``1 / _TAIL_ALPHA`` steps."""
        v = v[prev == 0.0]
        if not len(v):
            return
        over = np.bincount(_TAIL_EDGES.searchsorted(v, side="right"),
                           minlength=len(_TAIL_EDGES) + 1)[:0:-1].cumsum()[::-1] / len(v)
        self._tail_n += 1
        self._tail += max(1.0 / self._tail_n, _TAIL_ALPHA) * (over - self._tail)

    def _persistent(self, waiting: np.ndarray) -> np.ndarray:
        """Per slot of ``waiting`` (alarmed, effect large enough): whether its run is more than
        the job's own tail can make by chance.

        MoE expert imbalance gives every TP group a heavy-tailed extra drawn anew each step
        (``0.02 x (Pareto(2) - 1)``: p90 +4 %, p99 +18 %); four steps at +5.5-10 % in a row
        happen to some rank by chance, cross a CUSUM scaled for Gaussian-like jitter, and
        paged healthy ranks (blind4 D4).  So the run's last ``_RECENT`` steps (at most) are
        scored on the job's measured tail (:meth:`_tail_update`): Fisher's sum of
        ``ln(1 / p)``, p the share of the job's rank-steps at least as slow (at least
        ``_TAIL_FLOOR``), must pass what chance gives k i.i.d. steps once in
        ``1 / _FISHER_ALPHA`` (``_FISHER``).  Under Gaussian jitter a 10 % slowdown has p at
        the floor on every step and passes in 3; a chance MoE run of 4 steps sums ~12 of 23.
        """
        col = self._evaluated % _RECENT
        ok = np.ones(len(waiting), dtype=bool)
        if self._tail_n == 0:
            return ok
        tail = np.maximum(self._tail, _TAIL_FLOOR)
        for i, s in enumerate(waiting.tolist()):
            k = min(max(int(self._run_n[s]), 1), _RECENT)
            vals = self._recent[s, [(col - j) % _RECENT for j in range(k)]]
            at = np.searchsorted(_TAIL_EDGES, vals, side="right")
            surprise = float(-np.log(np.where(at > 0, tail[at - 1], 1.0)).sum())
            ok[i] = surprise >= _FISHER[k]
        return ok

    def _node_alike(self, new: np.ndarray, r: np.ndarray) -> tuple[np.ndarray, dict[int, int]]:
        """Ranks found slow on this step (``new``, slots), with the job's other ranks on their
        nodes that are in a slow run alike, not reported yet: found with them, each told
        ``node_wide`` (how many of its node's ranks in this step are slow alike).

        With TP inside a node, ``compute_ms`` holds the TP all-reduces: one slow GPU (an
        NVLink fault, the host) makes every rank of the node slower than its DP peers by the
        same share, and their CUSUMs cross a step or two apart.  Found one by one, the first
        was paged alone at its GPU and each later one a new problem (blind4 D3: 6-7 GPU
        escalations beside the node's).  A mate counts when its run (the CUSUM above zero) is
        at least two steps long, its score half way to the alarm, and averages
        ``slow_min_effect`` and half the found rank's mean; it enters its CUSUM alarmed, so it
        clears by the same hysteresis as any slow rank.  A mate whose deviation this step is
        the found rank's (within ``_TP_LOCKED`` of it: a TP partner waits in the TP
        all-reduce, so their compute_ms are one) counts at any score: blind7 G3, an aged GPU
        (gh-03/1, 0x4 at a lower clock) and its partner gh-03/0 both 1.07x with start offsets
        of 4.3-4.7 %; the partner's CUSUM alarmed first and was escalated alone, the wrong GPU,
        while the aged one's score was 3.4 of 10 (found 5 steps later).  A lone slow GPU (its
        TP mates at the peers' pace) is found alone, as before.
        """
        hw = self._hw
        node_of = [h[0] if h is not None else None for h in _pick(hw, r.tolist())] \
            if len(r) > 1 else []
        n = np.maximum(self._run_n[r], 1)
        mean = self._run_sum[r] / n
        at = {int(s): i for i, s in enumerate(r.tolist())}
        bank = self._slow
        more: list[int] = []
        alike: dict[int, int] = {}
        for s in new.tolist():
            node = hw[s][0] if hw[s] is not None else None
            if node is None or s in alike:
                continue
            mine = [i for i, x in enumerate(node_of) if x == node]
            if len(mine) < 2:
                continue
            floor = max(math.log1p(self.cfg.slow_min_effect), 0.5 * float(mean[at[s]]))
            idx = np.array(mine)
            dev = self._slow_dev[s]
            locked = np.abs(self._slow_dev[r[idx]] - dev) <= _TP_LOCKED * abs(dev)
            slow = idx[(self._run_n[r[idx]] >= 2) & (mean[idx] >= floor)
                       & ((bank.score[r[idx]] >= 0.5 * bank.h) | locked)]
            group = set(r[slow].tolist()) | {s}
            if len(group) < 2:
                continue
            for m in group:
                alike[m] = len(group)
                if m != s and not self._reported[m] and m not in new:
                    more.append(m)
        if more:
            m = np.array(more, dtype=np.int64)
            bank.alarmed[m] = True
            bank.score[m] = np.maximum(bank.score[m], bank.h)
            new = np.concatenate([new, m])
        return new, alike

    def _comparable(self, x: np.ndarray, groups: np.ndarray, med: np.ndarray,
                    scale: np.ndarray, size: np.ndarray
                    ) -> tuple[np.ndarray | None, np.ndarray, int]:
        """Peer groups of different sizes or too small (:meth:`_check_slow`): ``med``,
        ``scale``, ``size`` in place for the stage where a group is too small; returns the
        ranks that have enough peers (None: all), each rank's group used, and how many
        ranks have enough peers."""
        cfg = self.cfg
        small = size < cfg.min_peers
        if np.count_nonzero(small):
            # Too few data-parallel peers (DP 2): compare with the whole pipeline stage
            # instead.  Tensor-parallel shards of a stage split every GEMM evenly, so each
            # does the same compute as its data-parallel peers; a stage is still never
            # compared with another stage.  A rank's steady offset from the stage (a shard
            # a little heavier) is learned as its own bias, like any GPU's.
            smed, sscale, ssize = group_median_scale(x[small], groups[small] >> 24)
            med[small], scale[small], size[small] = smed, sscale, ssize
            groups = np.where(small, (groups >> 24) | (1 << 48), groups)  # the group used
        comparable = size >= cfg.min_peers
        n = np.count_nonzero(comparable)
        return (None if n == len(size) else comparable), groups, n

    def _replica_common(self, d: np.ndarray, buf: _StepBuffer, ok: np.ndarray | None,
                        comparable: np.ndarray | None, warm: bool
                        ) -> tuple[np.ndarray | None, bool]:
        """Each rank's replica-wide deviation this step, and whether that is the job's main
        noise (None, False: no replicas to take medians of).

        Ranks of one data-parallel replica share its batch: with per-step sequence-length
        imbalance between replicas every rank of a replica is fast or slow together, by up
        to +-20 %, and a rank's ratio to its DP peers is mostly its replica's batch.  Used
        (not None) only while the spread of the replicas' medians stays
        ``replica_noise_ratio`` times the spread of the ranks around their replica's median
        (smoothed over steps; a fault on one GPU or one replica moves neither median much).
        Ordinary jitter is per rank: a median of >= 4 ranks spreads half as much as they do.
        Until then the medians still serve the warm-up: ranks of replicas spanning nodes
        learn their start offsets against them (:meth:`_check_slow`).
        ``ok`` and ``comparable`` pick ``d``'s ranks from the step's (None: all).  The medians
        are returned only when they are used: in the regime or in the warm-up (``warm``).
        """
        cfg = self.cfg
        if cfg.replica_noise_ratio <= 0.0:
            return None, False
        dp = buf.dp_array()
        if ok is not None:
            dp = dp[ok]
        if comparable is not None:
            dp = dp[comparable]
        known: np.ndarray | None = dp >= 0
        n_known = np.count_nonzero(known)
        if n_known < 16:
            return None, False
        if n_known == len(dp):
            known = None  # (all: the usual step)
        else:
            d, dp = d[known], dp[known]
        sr = sorted_rows(d, dp)
        multi: np.ndarray | None = None
        rep: np.ndarray | None = None
        if sr is not None and sr[2].k >= 4:
            # Replicas of one size, each of >= 4 ranks (the usual step): all count, and the
            # medians below are taken over a row a replica (:func:`sorted_rows`).
            v, mid, rows = sr
            if len(d) // rows.k < 4:
                return None, False
            within = median(row_deviations(v, mid).ravel(), scratch=True)
            across = median(np.abs(mid - median(mid)), scratch=True)
        else:
            if sr is None:
                med, size, _ = group_median(d, dp)
            else:
                v, mid, rows = sr
                med, size = mid[rows.back], row_sizes(rows, len(d))
            multi = size >= 4
            if len(set(dp[multi].tolist())) < 4:
                return None, False
            rep, dm = med[multi], d[multi]
            within = median(np.abs(dm - rep), scratch=True)
            across = median(np.abs(rep - median(rep)), scratch=True)
        ratio = across / max(within, 1e-6)
        # From the first step (not from zero): the warm-up learns each rank's offset on the
        # statistic this regime chooses -- under imbalance, against its replica mates.
        self._replica_noise = _smoothed(self._replica_noise, ratio, cfg.slow_sigma_alpha)
        # Entered above replica_noise_ratio, left only below replica_noise_exit: a workload
        # whose smoothed ratio sits just over the threshold (DP 4 with per-GPU speed offsets:
        # 3.07-4.40, minimum 2.31 after warm-up) flapped out of the regime on 137 of 3,961
        # steps, and on those a replica's batch became a rank's evidence and its bias was
        # learned at half size against its DP peers: a healthy GPU 4.5 % over its replica
        # mates paged at 8,373 s (healthy fleet dp4-10s seed 85001, BENCHMARKS.md "Final
        # fleet's one escalation").
        limit = cfg.replica_noise_exit if self._imbalanced else cfg.replica_noise_ratio
        self._imbalanced = self._replica_noise >= limit
        if not (self._imbalanced or warm):
            return None, False  # (the medians serve neither the score nor the warm-up)
        if rep is None:
            rep = mid[rows.back]
        if known is None and multi is None:
            return rep, self._imbalanced  # (every rank's replica median: rep as it is)
        common = np.zeros(len(known) if known is not None else len(d))
        idx = np.arange(len(d)) if known is None else known.nonzero()[0]
        common[idx if multi is None else idx[multi]] = rep
        return common, self._imbalanced

    def _one_node_replicas(self, buf: _StepBuffer, r: np.ndarray) -> np.ndarray:
        """Per rank of slots ``r`` (this step's): whether every rank of its replica this
        step is on its node.

        Kept per slot and taken again only when the job's layout changed: a rank moved to
        other hardware (:meth:`_track_hardware`), a rank named another replica, or the
        step's set of ranks is not the last one's.  Arrival order does not matter, so a
        step costs a few array comparisons, not a loop over the job's ranks.
        """
        slots = buf.slots
        n = len(self._rank_of)
        dp = buf.dp_array()
        seen = np.zeros(n, dtype=bool)
        seen[slots] = True
        if (self._layout_moves != self._moves or len(self._layout_seen) != n
                or not np.array_equal(seen, self._layout_seen)
                or not np.array_equal(dp, self._layout_dp[slots])):
            nodes: dict[int, set[str]] = {}
            for (node, _), rep in zip(buf.hw, buf.dp, strict=True):
                if rep is not None:
                    nodes.setdefault(rep, set()).add(node)
            one = np.zeros(n, dtype=bool)
            one[slots] = np.fromiter((rep is not None and len(nodes[rep]) == 1 for rep in buf.dp),
                                     dtype=bool, count=len(buf.dp))
            layout_dp = np.full(n, -1, dtype=np.int64)
            layout_dp[slots] = dp
            self._layout_moves, self._layout_seen = self._moves, seen
            self._layout_dp, self._layout_one = layout_dp, one
        return self._layout_one[r]

    def _note_offsets(self, r: np.ndarray) -> None:
        """Record the ranks whose learned start offset exceeds the 2 % any GPU may have.

        Policy: a rank steadily slower than its peers from the job's first steps (and less
        than ``start_offset_max``) is that rank's baseline, not a fault -- Alibaba's PAI job
        1 has three workers 8-10 % slower from the start on shared GPUs, by Alibaba's notes
        no stragglers.  It is reported (``start_offsets``, and in the evidence of any later
        slow_rank of that rank), never paged; a rank >= ``gross_slowdown`` slower is caught
        by the gross prior instead, and any change after warm-up pages as usual.
        """
        big = r[self._base[r] > self.cfg.slow_baseline_clip]
        for s in big.tolist():
            self.start_offsets[self._rank_of[s]] = round(math.expm1(float(self._base[s])), 4)

    def _gross_prior(self, step: int, r: np.ndarray, d: np.ndarray, ts: np.ndarray,
                     med: np.ndarray, sigma: float, buf: _StepBuffer, pos: np.ndarray,
                     decided_ts: float, out: list[Finding]) -> None:
        """Warm-up: report ranks far slower than their peers without waiting for history.

        Peer comparison needs no history for a gross outlier: >= 30 % slower than the peer
        median is far beyond jitter or a one-step stall (hence two steps in a row).  Per-step
        sequence-length imbalance is not: it slows a whole replica, every rank of it on
        every node it spans, by a share drawn anew each step -- two draws in a row can put a
        replica 30-40 % behind its peers.  A bad GPU slows itself, a bad node its own ranks,
        at every step.  So a rank is compared with what its replica shares on *other* nodes
        (:meth:`_replica_elsewhere`); a replica on one node cannot be told from its node by
        place, so a gross slowdown of that whole replica must last ``gross_steps + 1``
        steps (still within 3 steps of the start): the batch moves on, a node does not.
        The rank enters its CUSUM already alarmed, so it clears through the same hysteresis
        as any other slow rank once it keeps pace.
        """
        cfg = self.cfg
        limit = math.log1p(cfg.gross_slowdown)
        elsewhere, whole = self._replica_elsewhere(d, buf, pos)
        has = ~np.isnan(elsewhere)
        g = np.where(has, d - np.where(has, elsewhere, 0.0), d)
        # A rank compared with its peers as a whole (its replica on one node, or no replicas
        # known) carries its replica's batch in ``d``: where batches spread widely from step
        # to step, 30 % over the median is what the workload does.  Such a step counts only
        # when it is also clearly slow in the job's own noise (the peers' spread, ``sigma``, 2x):
        # one replica of a long-context job (each replica's compute x lognormal(0, 0.42) a
        # step, noise ~0.2) drew +104 %, +57 %, +33 % on three steps and its node was paged
        # (blind5 E4).  With ordinary jitter (1-3 %) 2 sigma is far below 30 %: no change.
        # A step within the job's noise of the limit counts (_GROSS_MARGIN_Z): the limit names
        # the slowdown, a measured step carries its jitter either side of it.
        floor = limit - min(_GROSS_MARGIN_Z * sigma, _GROSS_MARGIN)
        gross = (g >= floor) & (has | (g >= _GROSS_NOISE_Z * sigma))
        first = gross & (self._gross[r] == 0)
        self._gross_onset[r[first]] = ts[first]
        self._gross[r] = np.where(gross, self._gross[r] + 1, 0)
        need = np.where(~has & (whole >= floor), cfg.gross_steps + 1, cfg.gross_steps)
        new = gross & (self._gross[r] >= need) & ~self._reported[r]
        if np.count_nonzero(gross) and len(self._gross_nodes) < _WANDER_GROSS_NODES:
            hw, seen = self._hw, self._gross_nodes
            for s in r[gross].tolist():  # (bounded: _WANDER_GROSS_NODES names at most)
                if hw[s] is not None and len(seen) < _WANDER_GROSS_NODES:
                    seen.add(hw[s][0])
        if not new.any():
            return
        if len(self._gross_nodes) >= _WANDER_GROSS_NODES or self._wandering:
            # Gross steps on three nodes or more in one warm-up: a fault is on one unit (a GPU,
            # a node); a slowness that visits unit after unit is the workload's (MoE routing
            # caught mid-run, blind8 H1: 11 nodes >= 30 % over their replica elsewhere on the
            # second step, 3 others later).  Held: the ranks stay in their CUSUMs, judged after
            # the warm-up as the job's wandering lets (_wander_update).
            return
        dp_of = dict(zip(buf.ranks, buf.dp, strict=True))
        bank = self._slow
        for i in np.flatnonzero(new).tolist():
            s = int(r[i])  # a slot; the finding names the rank
            rank = self._rank_of[s]
            n = int(self._gross[s])
            bank.score[s], bank.alarmed[s] = bank.h_cap, True
            bank.onset_ts[s] = self._gross_onset[s]
            self._run_sum[s], self._run_n[s] = float(d[i]) * n, n
            self._run_own[s] = float(d[i]) * n
            self._reported[s] = True
            ratio = math.exp(float(d[i]))
            out.append(self._finding(
                rank, dp_of[rank], "slow_rank", "slow_node", "unknown", decided_ts,
                float(self._gross_onset[s]), True, min(0.95, 0.5 + (ratio - 1.0) * 3),
                {"step": step, "rank": rank, "compute_ratio_to_peers": round(ratio, 4),
                 "mean_ratio_over_run": round(ratio, 4), "run_steps": n,
                 "peer_median_compute_ms": round(math.exp(float(med[i])), 2),
                 "noise_sigma": round(sigma, 4), "gross_outlier": True,
                 **({"replica_elsewhere_ratio": round(math.exp(float(elsewhere[i])), 4)}
                    if has[i] else {}),
                 "rule": f">= {cfg.gross_slowdown:.0%} slower than the peer median for "
                         f"{cfg.gross_steps} steps during warm-up (no history needed)"}))

    def _check_burst(self, step: int, r: np.ndarray, g: np.ndarray, ts: np.ndarray,
                     med: np.ndarray, buf: _StepBuffer, decided_ts: float,
                     out: list[Finding],
                     peers: tuple[np.ndarray, np.ndarray] | None = None) -> None:
        """After warm-up: a burst -- a rank ``gross_slowdown`` slower than its peers (over its
        own learned bias ``g``) for ``gross_steps`` steps in a row, not reported slow -- is
        evidence (``slow_burst``), never a verdict; cleared on its first step back.

        An intermittent fault (a power brake in bursts of 12-30 s) slows a rank 2x for a few
        steps a burst: the CUSUM clips each step and the burst is over before it alarms, so
        no slow_rank is ever found (blind2 F3).  With a never-routine throttle seen on the
        rank's GPU or node meanwhile, the correlator takes it as the rank measurably slower
        than its peers (Correlator._burst_impact); alone it pages nobody.  The warm-up's
        gross-prior counters count it (unused after warm-up).

        "Its peers" is the group's median -- or, ``peers`` given (each rank's deviation from
        its group median ``med`` and its peer group; not under replica imbalance, where a
        replica's batch is no evidence), the lower median of its OTHER peers: a rank that
        much slower than half of them or more.  A node that is half its group (TP8 x DP2 on
        two nodes; a pipeline stage of 16 ranks on two nodes) puts the group's median
        between the halves: its ranks braked 1.6x were 1.26x the median, under the rule, and
        a brake seen on the one poll inside a burst explained nothing (blind14 psu-brake:
        fleet-s2 gx-11, pipe-s2 hx01, held pipe-s7 hx02 never paged).  The other half, at
        its normal pace, is the reference; more than half the group slow alike is the
        group's pace, no burst.
        """
        cfg = self.cfg
        limit = math.log1p(cfg.gross_slowdown)
        gross = g >= limit
        if peers is not None and len(g) and float(g.max()) >= 0.5 * limit:
            # (a rank half-way there: the usual step has none)
            near = np.flatnonzero(~gross & (g >= 0.5 * limit))
            if len(near):
                ref = _others_lower_median(peers[0] + med, peers[1], near)
                lift = med[near] - ref  # (NaN alone in its group: no lift)
                lift = np.where(lift > 0.0, lift, 0.0)
                if np.count_nonzero(g[near] + lift >= limit):
                    g, med = g.copy(), med.copy()
                    g[near] += lift
                    med[near] -= lift
                    gross = g >= limit
        counts = self._gross
        if not np.count_nonzero(gross) and not np.count_nonzero(counts):
            return  # (the usual step: no rank in a burst)
        prev = counts[r]
        first = gross & (prev == 0)
        self._gross_onset[r[first]] = ts[first]
        now = np.where(gross, prev + 1, 0)
        counts[r] = now
        told = (now == cfg.gross_steps) & ~self._reported[r]
        ended = ~gross & (prev >= cfg.gross_steps)
        if not np.count_nonzero(told) and not np.count_nonzero(ended):
            return
        dp_of = dict(zip(buf.ranks, buf.dp, strict=True))
        for i in np.flatnonzero(told | ended).tolist():
            s = int(r[i])  # a slot; the finding names the rank
            rank = self._rank_of[s]
            if not told[i]:
                f = self._finding(rank, dp_of[rank], "slow_burst", "slow_node", "unknown",
                                  decided_ts, decided_ts, False, 0.0, {"step": step})
            else:
                f = self._finding(
                    rank, dp_of[rank], "slow_burst", "slow_node", "unknown", decided_ts,
                    float(self._gross_onset[s]), True, 0.3,
                    {"step": step, "rank": rank,
                     "compute_ratio_to_peers": round(math.exp(float(g[i])), 4),
                     "run_steps": int(now[i]),
                     **({"step_period_s": round(self._period, 3)}
                        if math.isfinite(self._period) else {}),
                     "peer_median_compute_ms": round(math.exp(float(med[i])), 2),
                     "rule": f">= {cfg.gross_slowdown:.0%} slower than the peer median for "
                             f"{cfg.gross_steps} steps in a row: evidence, not a verdict"})
            out.append(f._replace(verdict=False))

    def _check_recurring(self, step: int, r: np.ndarray, z: np.ndarray, g: np.ndarray,
                         ts: np.ndarray, med: np.ndarray, buf: _StepBuffer, decided_ts: float,
                         out: list[Finding]) -> None:
        """After warm-up: a rank that is its group's clear outlier on a fixed share of its
        steps (a GPU slow on one step in five, +35-40 %, fine between) is slow
        (``slow_rank``), though no run of steps is.

        The CUSUM clips each step at ``slow_z_clip`` and drains on the steps between, by
        design (a one-off spike -- a GC pause, a loader stall -- pages nobody), so it never
        alarms on such a rank (blind3 B5: 13 of 16 never found, 3 after 194-287 s).  What
        chance spikes do not do is recur on the same rank: each rank keeps a count of its
        clear-outlier steps (z at the clip and ``slow_recur_min`` slower than its peers
        over its learned bias ``g``; the first of a run of them only, and none while the
        CUSUM has it slow: a sustained slowdown is the CUSUM's, and is one) decaying with a
        half-life of ``slow_recur_half_life_steps``; at ``slow_recur_count`` -- and
        ``slow_recur_ratio`` times the other ranks' mean count, so a workload that makes any
        rank the outlier now and then (sequence-length imbalance) raises no one -- the rank
        is reported as the gradient detector reports repeated spikes.  It clears when its
        count decays under ``slow_recur_clear``.
        """
        cfg = self.cfg
        recur = self._recur
        if self._recur_live:
            recur *= 0.5 ** (1.0 / cfg.slow_recur_half_life_steps)
        hit = z >= cfg.slow_z_clip
        if np.count_nonzero(hit):
            hit &= g >= math.log1p(cfg.slow_recur_min)
        last = self._recur_last
        if np.count_nonzero(hit) or np.count_nonzero(last):
            # An outlier step counts when the rank's step before was none (a slowdown's first
            # step: a sustained one, the CUSUM's, counts once), unless the CUSUM has it slow.
            was = last[r]
            last[r] = hit
            hit &= ~was & (self._recurring[r] | ~self._reported[r])
        if np.count_nonzero(hit):
            hr = r[hit]
            fresh = recur[hr] < 0.5
            self._recur_onset[hr[fresh]] = ts[hit][fresh]
            recur[hr] += 1.0
            self._recur_live = True
            top = hr[(recur[hr] >= cfg.slow_recur_count) & ~self._reported[hr]]
            if len(top):
                # (against the ranks that count: one told slow by another rule counts none,
                # and five such among ten halved the others' mean -- Alibaba job 4)
                n = len(self._rank_of)
                counting = self._recurring[:n] | ~self._reported[:n]
                total, n = float(recur[:n][counting].sum()), int(np.count_nonzero(counting))
                rising = [s for s in top.tolist() if n < 2 or recur[s] >= cfg.slow_recur_ratio
                          * (total - recur[s]) / (n - 1)]
                if rising:
                    rising = [s for s in rising
                              if self._recur_chance(s, buf, counting) < _RECUR_CHANCE]
            else:
                rising = []
        elif not self._recur_live:
            return  # (the usual step: no count)
        else:
            rising = []
        falling = ((recur < cfg.slow_recur_clear) & self._recurring).nonzero()[0].tolist() \
            if np.count_nonzero(self._recurring) else []
        if not rising and not falling:
            if not np.count_nonzero(recur >= 0.01):
                recur[:] = 0.0
                self._recur_live = False
            return
        dp_of = dict(zip(buf.ranks, buf.dp, strict=True))
        at = {int(s): i for i, s in enumerate(r.tolist())}
        for s in rising:
            rank = self._rank_of[s]
            self._reported[s] = self._recurring[s] = True
            i = at[s]
            out.append(self._finding(
                rank, dp_of[rank], "slow_rank", "slow_node", "unknown", decided_ts,
                float(self._recur_onset[s]), True, 0.6,
                {"step": step, "rank": rank,
                 "compute_ratio_to_peers": round(math.exp(float(self._slow_dev[s])), 4),
                 "peer_median_compute_ms": round(math.exp(float(med[i])), 2),
                 "recent_outlier_steps": round(float(recur[s]), 2),
                 "baseline_ratio": round(math.exp(float(self._base[s])), 4),
                 "rule": f"its peers' clear outlier (>= {cfg.slow_recur_min:.0%} slower, "
                         f"z >= {cfg.slow_z_clip:g}) on a recurring share of steps: a "
                         f"count decaying over {cfg.slow_recur_half_life_steps:g} steps "
                         f">= {cfg.slow_recur_count:g}"}))
        for s in falling:
            self._rule_cleared(s, self._recurring, step, dp_of, decided_ts, out)

    def _recur_chance(self, s: int, buf: _StepBuffer, counting: np.ndarray) -> float:
        """The chance that the job's recent clear-outlier steps, falling on its units alike,
        leave one of them with as many as slot ``s``'s unit has (Bonferroni over the units).

        A unit is a tensor-parallel group (its ranks' stage and replica: a TP group steps at
        its slowest member's pace, so one rank's pause makes every member an outlier at once;
        its count is its members' highest); the count of outlier steps is the units' recurring
        counts summed.  Uncoordinated Python GC (blind14 N6: each rank +150-400 ms on 1 step
        in ~45, a TP4 group held up on ~9 % of steps) gives every unit outlier steps at one
        rate, and over ~50 steps one of eight reaches 8.6 while the others' mean is 1.4 -- 4x
        it, 0.6 % by this chance: the job's workload.  A straggler among quiet units holds
        nearly all of them (8 of 8: 5e-7)."""
        units: dict[tuple[Any, Any], float] = {}
        mine = None
        recur = self._recur
        for rank, pp, dp in zip(buf.ranks, buf.pp, buf.dp, strict=True):
            sl = self._slot.get(rank)
            if sl is None or sl >= len(counting) or not counting[sl]:
                continue
            key = (pp, rank if dp is None else dp)
            v = float(recur[sl])
            if v > units.get(key, -1.0):
                units[key] = v
            if sl == s:
                mine = key
        k = len(units)
        if mine is None or k < 2:
            return 0.0
        return min(1.0, k * _binomial_tail(int(round(sum(units.values()))), 1.0 / k,
                                           int(units[mine])))

    def _check_sustained(self, step: int, r: np.ndarray, g: np.ndarray, ts: np.ndarray,
                         med: np.ndarray, buf: _StepBuffer, decided_ts: float,
                         out: list[Finding]) -> None:
        """After warm-up: a rank slower than its peers on average, step after step, by more
        than the job's step-to-step spread lets chance make (``slow_rank``), where that spread
        hides it from the CUSUM.

        Under a wide per-step spread -- a long-context job's replicas each drawing a
        document of 2-5x the compute, the slowest replica changing every step -- a GPU 30 %
        slower is ~0.6 noise units a step: under the CUSUM's allowance, so it never alarms,
        and no run of steps is gross (blind5 E5: h100n004 GPU 2, 25-35 % slower for ~100
        steps, never found).  What chance does not do is keep the SAME rank slow: the mean
        of its deviations over its learned bias ``g`` (weights decaying by ``_SUS_ALPHA``
        a step) has a standard error of its step-to-step spread over the square root of the
        steps it weighs, and shrinks as the steps add up while a real slowdown's does not.
        The mean is taken over the job's typical rank's (the median of the ranks' means: a
        skewed workload makes every rank's mean over its median alike) and its spread is
        the larger of its own and the ranks' median spread.  A rank whose mean stands
        ``_SUS_Z`` standard errors out, and by ``slow_min_effect`` with ``slow_effect_z``
        of them to spare, is reported; it clears when it falls back under ``_SUS_CLEAR_Z``.
        In force only where the ranks' median spread is ``_SUS_SPREAD`` or more: under
        ordinary jitter the CUSUM finds a 3 % slowdown within tens of steps.
        """
        cfg = self.cfg
        if not self._sus_on:
            # Off until the job's spread says the test may be needed (one dot product a step;
            # the sums below were +3.4 % of the step path on every step of every job).  Once
            # on, on for the job's life: the test as it was, from the first step kept.
            self._sus_ms = _smoothed(self._sus_ms, float(g @ g) / len(g), cfg.slow_sigma_alpha)
            if self._sus_ms < (_SUS_GATE * _SUS_SPREAD) ** 2:
                return
            self._sus_on = True
        keep = 1.0 - _SUS_ALPHA
        # (one gather and one scatter a step, on every step of a job whose spread is wide)
        acc = self._sus[r]
        acc *= keep
        acc[:, 0] += 1.0
        acc[:, 1] += g
        acc[:, 2] += g * g
        self._sus[r] = acc
        live = np.count_nonzero(self._sustained)
        if not live and self._sus_spread < _SUS_SPREAD and self._evaluated % _SUS_EVERY:
            return  # (the usual job, ordinary jitter, the CUSUM's: looked at now and then)
        w, s1, s2 = acc[:, 0], acc[:, 1], acc[:, 2]
        # The weights' squares sum to what the weights' sum says (weights keep ** j, j < k):
        # 1 - keep ** k = w (1 - keep), so sum of squares = (1 - (1 - w (1 - keep)) ** 2) /
        # (1 - keep ** 2); the mean weighs as many independent steps as w ** 2 / that.
        left = 1.0 - w * _SUS_ALPHA
        n_eff = w * w * (1.0 - keep * keep) / np.maximum(1.0 - left * left, 1e-12)
        ready = n_eff >= _SUS_MIN_N
        if not np.count_nonzero(ready) and not live:
            return  # (the first steps after a (re)start: too few to weigh)
        mean = s1 / w
        spread = np.sqrt(np.maximum(s2 / w - mean * mean, 0.0))
        job_spread = median(spread[ready], scratch=True) if np.count_nonzero(ready) else 0.0
        self._sus_spread = job_spread
        if job_spread < _SUS_SPREAD and not live:
            return
        se = np.maximum(spread, job_spread) / np.sqrt(n_eff)
        over = self._class_over(r, mean, se, ready) if np.count_nonzero(ready) else mean
        t = over / np.maximum(se, 1e-12)
        standing = ready & (t >= 1.0)
        onset = self._sus_onset
        rs = r[standing]
        onset[rs] = np.where(onset[rs] == 0.0, ts[standing], onset[rs])
        onset[r[~standing]] = 0.0
        # (not before the job's wandering is known: under MoE routing, whose runs last tens
        # of steps, the standard error of i.i.d. steps pages the hot ranks, blind8 H2)
        free = ready & ~self._reported[r] & (job_spread >= _SUS_SPREAD) \
            & (self._wander_n >= _WANDER_MIN_STEPS)
        rising = r[free & (t >= _SUS_Z)
                   & (np.expm1(over - cfg.slow_effect_z * se) >= cfg.slow_min_effect)]
        falling = r[self._sustained[r] & (t < _SUS_CLEAR_Z)] if live else r[:0]
        if not len(rising) and not len(falling):
            return
        at = {int(s): i for i, s in enumerate(r.tolist())}
        if len(rising):
            rising = self._sustained_alike(rising, r, free & (t >= 0.5 * _SUS_Z), over, at)
        dp_of = dict(zip(buf.ranks, buf.dp, strict=True))
        nodes = Counter(self._hw[s][0] for s in rising.tolist() if self._hw[s] is not None)
        for s in rising.tolist():
            rank, i = self._rank_of[s], at[s]
            self._reported[s] = self._sustained[s] = True
            hw = self._hw[s]
            alike = nodes[hw[0]] if hw is not None else 0
            ratio = math.exp(float(over[i]))
            out.append(self._finding(
                rank, dp_of[rank], "slow_rank", "slow_node", "unknown", decided_ts,
                float(onset[s]) or decided_ts, True, min(0.95, 0.5 + (ratio - 1.0) * 3),
                {"step": step, "rank": rank,
                 "compute_ratio_to_peers": round(math.exp(float(self._slow_dev[s])), 4),
                 "mean_ratio_over_run": round(ratio, 4),
                 "steps_weighed": round(float(n_eff[i]), 1),
                 "standard_errors": round(float(t[i]), 2),
                 "step_spread": round(float(max(spread[i], job_spread)), 4),
                 "peer_median_compute_ms": round(math.exp(float(med[i])), 2),
                 "baseline_ratio": round(math.exp(float(self._base[s])), 4),
                 **({"node_wide": alike} if alike >= 2 else {}),
                 "rule": f"its mean over its peers' median, weighed over ~"
                         f"{2.0 / _SUS_ALPHA - 1.0:.0f} steps, >= {_SUS_Z:g} standard errors "
                         f"of the job's step-to-step spread over the typical rank's"}))
        for s in falling.tolist():
            self._rule_cleared(s, self._sustained, step, dp_of, decided_ts, out)

    def _class_over(self, r: np.ndarray, mean: np.ndarray, se: np.ndarray,
                    ready: np.ndarray) -> np.ndarray:
        """Each rank's long ``mean`` over the job's typical rank, less its class's offset
        (detector.sku_class): the typical rank is the median of the ready ranks' means with
        each class's offset taken out; a rank's first look (its mean just weighs enough) is
        kept, and a whole node in no class joins one, or forms one with another whole node
        or more, when it stands out alike and where it stood at its first look (a second GPU
        model in the job, slower from the start).  A rank in no class is judged as before;
        a class's rank against its class's median."""
        cls = self._sku[r]
        over = mean - median((mean - self._sku_off[r])[ready], scratch=True)
        seen = self._sku_seen[r]
        new = ready & ~seen
        if np.count_nonzero(new):
            rn = r[new]
            self._sku_first[rn] = over[new]
            self._sku_first_se[rn] = se[new]
            self._sku_seen[rn] = True
            seen = seen | new
        free = seen & ready & (cls == 0)
        off, known = sku_class.offsets(cls - 1, over, se, ready)
        if np.count_nonzero(free):
            hw = self._hw
            nodes = [None if hw[s] is None else hw[s][0] for s in r.tolist()]
            found = sku_class.find(nodes, over - off, se, self._sku_first[r],
                                   self._sku_first_se[r], free, known)
            if found:
                k = np.array([found.get(n, -1) if n is not None else -1 for n in nodes])
                cls = np.where(k >= 0, k + 1, cls)
                self._sku[r] = cls
                off, _ = sku_class.offsets(cls - 1, over, se, ready)
        if not np.count_nonzero(cls):
            return over
        self._sku_off[r] = off
        return over - off

    def _rule_cleared(self, s: int, mine: np.ndarray, step: int, dp_of: dict[int, int | None],
                      decided_ts: float, out: list[Finding]) -> None:
        """Slot ``s``, reported slow by the rule whose flags are ``mine``, is no longer slow by
        it: cleared, unless another rule (the CUSUM, the recurring, sustained or wandering
        job's rule) still has it slow -- that one clears it."""
        mine[s] = False
        if (self._slow.alarmed[s] or self._recurring[s] or self._sustained[s]
                or self._wander_rep[s] or self._twin_rep[s] or self._pair_rep[s]):
            return
        rank = self._rank_of[s]
        self._reported[s] = False
        out.append(self._finding(rank, dp_of.get(rank), "slow_rank", "slow_node", "unknown",
                                 decided_ts, decided_ts, False, 0.0, {"step": step}))

    def _sustained_alike(self, rising: np.ndarray, r: np.ndarray, near: np.ndarray,
                         over: np.ndarray, at: dict[int, int]) -> np.ndarray:
        """``rising`` (slots) with the ranks on their nodes whose mean stands half as far out
        (``near``) and is at least half theirs: found with them, as :meth:`_node_alike` does
        for the CUSUM (TP inside a node: its ranks at the pace of its slowest GPU cross a
        step apart, and the first found alone was a GPU page beside its node's)."""
        hw = self._hw
        mine = {hw[s][0]: float(over[at[s]]) for s in rising.tolist() if hw[s] is not None}
        if not mine:
            return rising
        cand = r[near]
        more = [s for s in cand.tolist() if hw[s] is not None and hw[s][0] in mine
                and float(over[at[s]]) >= 0.5 * mine[hw[s][0]]]
        return np.unique(np.concatenate([rising, np.array(more, dtype=rising.dtype)]))

    def _reset_sustained(self, m: np.ndarray | None) -> None:
        """Forget the sustained-shift sums of slots ``m`` (None: all), as a restart does."""
        at = slice(None) if m is None else m
        self._sus[at] = 0.0
        self._sus_onset[at] = 0.0
        self._sustained[at] = False
        if m is None:
            self._sus_spread = 0.0

    def _check_host(self, step: int, slots: np.ndarray, groups: np.ndarray, ts: np.ndarray,
                    compute: np.ndarray, buf: _StepBuffer, decided_ts: float,
                    out: list[Finding]) -> np.ndarray | None:
        """A rank late by its host path while its compute is normal: ``host_late``, evidence.

        A rank's time in neither compute nor collectives, ``step_ms - compute_ms - comm_ms``
        (host-to-device copies, data loading, the CPU, its PCIe link), is what it adds to
        every step besides its compute: in synchronous training its peers wait for it in
        their collectives.  A downtrained PCIe link that replays little, a node whose CPUs
        are throttled or starved, a rank pinned to the far socket make that time stand out
        of its peers' while ``compute_ms`` is normal, so the compute CUSUM cannot see it.
        Each rank's host time less its pipeline stage's median (a stage's ranks load and copy
        alike; stages differ), in shares of the step's median busy time (``step_ms -
        comm_ms``: how much later it arrives), less its own learned offset (up to
        ``host_offset_max``, from the warm-up: rank 0's logging), in units of the job's
        noise, feeds a second robust CUSUM (the compute one's k, h and clip); an alarm whose
        run averages ``host_min_effect`` of a step's work (less ``slow_effect_z`` standard
        errors) on a rank the compute CUSUM has not reported, once the run has lasted
        ``host_hold_s``, is a ``host_late`` finding -- evidence, not a verdict: it joins a
        problem firing on the GPU (a PCIe replay rate's ``gpu_hardware``), and pages nobody
        on its own.  It clears as the CUSUM does.

        Why not a page: blind2's healthy "slow input pipeline on one tray for 3 min" (+45 %
        of a step in host time) is, by this signal, what blind3's K2 without its compute is
        (+14-17 % for 4-5 min); as a paging slow rank it added 16 FP node escalations to
        blind2 seeds 0..3 (0 before), and no duration or size separates the two without
        tuning on them (BENCHMARKS "steps, round 12").

        The hold: the one cause of a late host path telemetry names is a PCIe link's replay
        rate (detector.gpu_health), which needs six DCGM samples of replays; as a paging slow
        rank without it, a downtrained link was escalated ``unknown`` 26 s into blind3 K4 and
        its replay rate's ``gpu_hardware`` came after (attribution 2/2 -> 0/2, seeds 8..9).

        What does not page: a loader stall on one rank for one step (clipped at
        ``slow_z_clip``: one step adds at most 3 of the 10 an alarm needs, and drains), a
        checkpoint or any slowdown every rank's host shares (the stage's median moves with
        it), a job whose ranks all have the same host time, sequence-length imbalance (it
        moves compute and comm, not the host part).  A producer without ``compute_ms`` is
        scored on ``step_ms - comm_ms`` by the compute CUSUM already (host time included);
        one without ``comm_ms`` tells no rank's host time (every ``step_ms`` is the
        slowest rank's): not checked.

        Returns the ranks' host times (at least 0; read only), or None when a rank has none
        (NaN): what :meth:`_host_rise` judges, computed here once (it computed them again).
        """
        cfg = self.cfg
        busy = _floats(buf.step_ms) - _floats(buf.comm)  # compute + host: not waiting
        host = busy - compute
        if np.count_nonzero(np.isnan(host)):
            return None  # (a rank without comm_ms: no host times this step)
        np.maximum(host, 0.0, out=host)  # (rounding: step_ms may trail compute + comm)
        if len(host) < cfg.min_peers:
            return host
        scale = median(busy)
        if not scale > 0.0:
            return host
        pp = buf.pp
        if pp.count(pp[0]) != len(pp):  # (a C loop over the tuple: no numpy call)
            # (the medians alone: group_median_scale's MADs were half of this method's cost)
            med, size, _ = group_median(host, groups >> 24)
            e = np.where(size >= cfg.min_peers, (host - med) / scale, 0.0)
            job_med = median(host)
        else:  # (one stage: the usual job without pipeline parallelism)
            med = job_med = median(host)
            e = (host - med) / scale
        self._host_events(step, slots, buf, host, job_med, ts, decided_ts, out)
        r = slots
        self._host_sigma = _smoothed(self._host_sigma,
                                     median(np.abs(e), scratch=True) * MAD_TO_SIGMA,
                                     cfg.slow_sigma_alpha)
        sigma = max(self._host_sigma, cfg.host_sigma_floor)
        base = self._host_base[r]
        over = e - base
        self._host_dev[r] = over
        if self._evaluated <= cfg.warmup_steps:
            # An offset from the job's start, up to host_offset_max, is this rank's own
            # (rank 0 logs, a rank on the far socket); beyond it, a path slow from before
            # the job began (blind3 K4: a link trained down before the log) still shows.
            self._host_base[r] = (base + 0.2 * over).clip(0.0, cfg.host_offset_max)
            return host
        z = over / sigma
        healthy = ~self._reported[r] & ~self._host.alarmed[r]
        self._hl_xy, self._hl_xx, self._hl_n = lag1.update(
            (self._hl_xy, self._hl_xx, self._hl_n), z[healthy], self._host_dev_z[r][healthy])
        self._host_dev_z[r] = z
        learn = np.abs(z) < 3.0
        if np.count_nonzero(self._host.alarmed):
            learn &= ~self._host.alarmed[r]
        self._host_base[r] = np.where(learn, (base + cfg.slow_baseline_alpha * over).clip(
            0.0, cfg.host_offset_max), base)
        _, cleared, score = self._host.step(r, z, ts)
        self._lone_streak[r] = np.where(over >= cfg.host_min_effect, self._lone_streak[r] + 1, 0)
        in_run = score > 0.0
        self._host_sum[r] = np.where(in_run, self._host_sum[r] + over, 0.0)
        self._host_tx[r] = np.where(in_run, self._host_tx[r] + self._host_n[r] * over, 0.0)
        self._host_n[r] = np.where(in_run, self._host_n[r] + 1, 0)
        new = start = r[:0]
        if np.count_nonzero(self._host.alarmed):
            at = (self._host.alarmed[r] & ~self._host_rep[r] & ~self._reported[r]
                  & ~self._slow.alarmed[r]).nonzero()[0]
            if len(at):
                s_at = r[at]
                n = np.maximum(self._host_n[s_at], 1)
                mean = self._host_sum[s_at] / n
                margin = cfg.slow_effect_z * sigma / np.sqrt(n)
                big = mean - margin >= cfg.host_min_effect
                held = decided_ts - self._host.onset_ts[s_at] >= cfg.host_hold_s
                paged = self._page_lone(step, r, at[big], host, over, z, groups, buf, sigma,
                                        decided_ts, out) if np.count_nonzero(big) else at[:0]
                if len(paged):  # (paged as slow ranks: not host_late evidence as well)
                    rest = ~np.isin(at, paged)
                    at, big, held = at[rest], big[rest], held[rest]
                # Once one rank's run is held long enough, every rank late enough goes with it
                # on this step: a node's ranks leave zero a step or two apart by their noise
                # (when this paged, blind3_hostonly k8s-mixed s8: a GPU escalation beside its
                # node's).
                if np.count_nonzero(big & held):
                    new = at[big]
                elif np.count_nonzero(big) >= 2:
                    start = new = self._host_from_start(r, at[big], z[at[big]])
        if len(cleared):
            self._clear_lone(step, cleared, buf, decided_ts, out)
            cleared = cleared[self._host_rep[cleared]]
        # A raised host_late whose run has now lasted host_page_s is told again, with how long
        # (the correlator escalates it: Correlator._host_lasting) -- on the step that shows it,
        # so the end of the input (time run on without steps) confirms no duration.
        prev, self._host_seen_ts = self._host_seen_ts, decided_ts
        lasting = grew = r[:0]
        if np.count_nonzero(self._host_rep):
            due = self._host.onset_ts[r] + self._host_page_after(r)
            lasting = np.flatnonzero(self._host_rep[r] & (due <= decided_ts) & (due > prev))
            grew = self._host_grew(r)
            if len(grew):
                lasting = np.union1d(lasting, grew)
                self._host_told[r[grew]] = True
            if len(cleared) and len(lasting):
                lasting = lasting[~np.isin(r[lasting], cleared)]
        if len(start):
            # (raised and told lasting on one step: the host they share, late from the start)
            lasting = np.union1d(lasting, start)
            self._host_told[r[start]] = True
        if len(new) == 0 and len(cleared) == 0 and len(lasting) == 0:
            return host
        dp_of = dict(zip(buf.ranks, buf.dp, strict=True))
        rank_of = self._rank_of
        for i, again in [(i, False) for i in new.tolist()] + [(i, True) for i in lasting.tolist()]:
            sl = int(r[i])
            rank = rank_of[sl]
            self._host_rep[sl] = True
            mean = float(self._host_sum[sl]) / int(max(self._host_n[sl], 1))
            out.append(self._finding(
                rank, dp_of[rank], "host_late", "slow_node", "unknown", decided_ts,
                float(self._host.onset_ts[sl]), True, min(0.95, 0.5 + mean * 3),
                {"step": step, "rank": rank, "basis": "host_time",
                 **self._host_evidence(sl, float(host[i]), float(
                     med if np.ndim(med) == 0 else med[i]), sigma, "every rank of the node late "
                     "alike: the node's CPU clocks (`turbostat`) and its input pipeline"),
                 "peer_median_busy_ms": round(scale, 2),
                 "baseline_ratio": round(math.exp(float(self._base[sl])), 4),
                 "rule": f"time in neither compute nor collectives (step_ms - compute_ms - "
                         f"comm_ms) over its stage's median, averaging >= "
                         f"{cfg.host_min_effect:.0%} of a step's work, its compute normal: "
                         "its host path (PCIe link, CPU, data loading)",
                 **({"lasting_s": round(decided_ts - float(self._host.onset_ts[sl]), 1)}
                    if again else {}),
                 **({"growing": self._host_trend(sl)} if again and i in grew else {})},
                verdict=False))
        for sl in cleared.tolist():
            rank = rank_of[sl]
            self._host_rep[sl] = self._host_told[sl] = False
            out.append(self._finding(rank, dp_of.get(rank), "host_late", "slow_node", "unknown",
                                     decided_ts, decided_ts, False, 0.0, {"step": step},
                                     verdict=False))
        return host

    def _page_lone(self, step: int, r: np.ndarray, cand: np.ndarray, host: np.ndarray,
                   over: np.ndarray, z: np.ndarray, groups: np.ndarray, buf: _StepBuffer,
                   sigma: float, decided_ts: float, out: list[Finding]) -> np.ndarray:
        """Page, as ``slow_rank`` findings, the ranks of ``cand`` (indices into ``r``: alarmed
        host runs averaging host_min_effect, not reported) that straggle alone by their own
        host path while the job waits for them (:mod:`detector.host_straggler`); returns
        their indices.  Only a run that is new (the rank had not learned the most host offset
        a rank may own: a rank late from the job's start keeps host_late's holds) and still
        going (this step over the CUSUM's allowance, late ``host_straggler.STEPS`` steps in a
        row) is paged."""
        cfg = self.cfg
        sl = r[cand]
        # (the job's host noise not measured yet -- its lag-1 not known: nothing paged, the
        # streak counted on; measured, the steps its runs ask for)
        hl = (self._hl_xy, self._hl_xx, self._hl_n)
        if not lag1.known(hl, len(self._rank_of)):
            return cand[:0]
        steps = host_straggler.steps_for(lag1.rho_of(hl))
        cand = cand[(self._host_base[sl] < cfg.host_offset_max) & (z[cand] > cfg.slow_k)
                    & (self._lone_streak[sl] >= steps)]
        if not len(cand):
            return cand
        hw = buf.hw
        names: dict[str, int] = {}
        node = _ints([names.setdefault(h[0], len(names)) for h in hw])
        comm = _floats(buf.comm)
        n_run = self._host_n[r]
        run = np.where(n_run > 0, self._host_sum[r] / np.maximum(n_run, 1), 0.0)
        # (a mate slow in compute counts as late too: with TP inside the node its mates wait
        # for the late rank inside their compute -- the node's PCIe rules, _hold_for_ecc)
        paged = host_straggler.lone(cand, node, host, comm, over, run,
                                    self._host.alarmed[r] | self._slow.alarmed[r], groups,
                                    cfg.host_min_effect)
        dp_of = dict(zip(buf.ranks, buf.dp, strict=True))
        for i in paged.tolist():
            s = int(r[i])
            rank = self._rank_of[s]
            self._reported[s] = self._lone_rep[s] = True
            peers = np.flatnonzero(groups == groups[i])
            peers = peers[peers != i]
            mean = float(self._host_sum[s]) / int(max(self._host_n[s], 1))
            out.append(self._finding(
                rank, dp_of[rank], "slow_rank", "slow_node", "unknown", decided_ts,
                float(self._host.onset_ts[s]), True, min(0.95, 0.5 + mean * 3),
                {"step": step, "rank": rank, "basis": "host_time",
                 **self._host_evidence(s, float(host[i]), float(np.median(host[peers])), sigma,
                                       "then its loader process (CPU affinity, NUMA node, "
                                       "storage reads)"),
                 "comm_ms": round(float(comm[i]), 2),
                 "peer_median_comm_ms": round(float(np.median(comm[peers])), 2),
                 "rule": "time in neither compute nor collectives (step_ms - compute_ms - "
                         "comm_ms) over its peers', its node's other ranks not, the job "
                         "waiting for it (its comm_ms the lowest): its own host path "
                         "(PCIe link, loader)"}))
        return paged

    def _host_evidence(self, sl: int, host_ms: float, peer_ms: float, sigma: float,
                       then: str) -> dict[str, Any]:
        """What a finding of slot ``sl``'s host run says (``host_ms`` its host time this
        step, ``peer_ms`` its peers', ``sigma`` the job's host noise; ``then``: the diagnostic
        after its link's)."""
        node, gpu = self._hw[sl] or ("?", 0)
        runs = int(max(self._host_n[sl], 1))
        return {"host_ms": round(host_ms, 2), "peer_median_host_ms": round(peer_ms, 2),
                "host_excess_over_run": round(float(self._host_sum[sl]) / runs, 4),
                "run_steps": runs,
                "compute_ratio_to_peers": round(math.exp(float(self._slow_dev[sl])), 4),
                "host_baseline": round(float(self._host_base[sl]), 4),
                "noise_sigma": round(sigma, 4), "cusum": round(float(self._host.score[sl]), 2),
                "next_diagnostic": (
                    f"its host path: `nvidia-smi -q -d PCIE -i {gpu}` on {node} (link "
                    "generation and width below the maximum: reseat or RMA the link), "
                    f"`dcgmi diag -r 2` on {node} (PCIe bandwidth); {then}")}

    def _clear_lone(self, step: int, cleared: np.ndarray, buf: _StepBuffer,
                    decided_ts: float, out: list[Finding]) -> None:
        """Clear the lone stragglers (:meth:`_page_lone`) among ``cleared`` (slots whose host
        run cleared) still reported slow (another path may have withdrawn them: a restart, a
        move)."""
        mine = cleared[self._lone_rep[cleared]]
        if not len(mine):
            return
        dp_of = dict(zip(buf.ranks, buf.dp, strict=True))
        for s in mine.tolist():
            self._lone_rep[s] = False
            if self._reported[s]:
                self._reported[s] = False
                rank = self._rank_of[s]
                out.append(self._finding(rank, dp_of[rank], "slow_rank", "slow_node",
                                         "unknown", decided_ts, decided_ts, False, 0.0,
                                         {"step": step}))

    def _host_from_start(self, r: np.ndarray, big: np.ndarray, z: np.ndarray) -> np.ndarray:
        """Indices into ``r`` (of ``big``: alarmed host runs, not raised, averaging
        host_min_effect; ``z`` their scores this step) of ranks late by their host path since
        the job's (re)start, two or more on one node: each learnt the most host offset it may
        (``host_offset_max``) in the warm-up, its run began within ``_START_SLACK`` steps of
        the warm-up's end and has lasted ``_START_STEPS`` steps, goes on (this step over the
        CUSUM's allowance: a loader back at its peers' pace leaves its score up a few steps),
        and its line has not fallen under ``_START_KEPT`` of its start (:meth:`_host_trend`).
        Raised at once and told lasting (the correlator's escalation, at the node: the host
        they share) -- see ``_START_STEPS``.

        A rank alone keeps the holds (rank 0's logging, one loader's shard, one GPU's link: a
        PCIe replay rate names it); a node's ranks late only from mid-job keep them too (an
        input pipeline stalled and catching up: blind2's healthy 3 minutes)."""
        past = self._evaluated - self.cfg.warmup_steps
        if past < _START_PART_STEPS:
            return big[:0]
        sl = r[big]
        ok = ((self._host_n[sl] >= max(past - _START_SLACK, _START_PART_STEPS))
              & (self._host_base[sl] >= self.cfg.host_offset_max) & (z > self.cfg.slow_k))
        keep = []
        for i in np.flatnonzero(ok).tolist():
            t = self._host_trend(int(sl[i]))
            if t["to_share"] >= _START_KEPT * t["from_share"]:
                keep.append(i)
        hw = self._hw
        keep = [i for i in keep if hw[int(sl[i])] is not None]
        # (a whole node: its runs _START_STEPS long; a part of one: _START_PART_STEPS)
        whole = [i for i in keep if self._host_n[sl[i]] >= _START_STEPS]
        nodes = Counter(hw[int(sl[i])][0] for i in whole)
        part = Counter(hw[int(sl[i])][0] for i in keep)
        parts = {n for n, k in part.items() if k >= 2 and nodes[n] < 2 and self._host_part(r, n)}
        return np.array([big[i] for i in keep if nodes[hw[int(sl[i])][0]] >= 2 and i in whole
                         or hw[int(sl[i])][0] in parts], dtype=np.intp)

    def _host_part(self, r: np.ndarray, node: str) -> bool:
        """Whether ranks of ``node`` late from the start (:meth:`_host_from_start`) are a part of
        it whose mates were on time from the start: of the job's ranks on it this step (``r``)
        each is either late so (``_PART_LEARNT`` of the most host offset, ``host_offset_max``,
        learnt in the warm-up -- a noisy host's quiet steps teach a little back after it -- and
        its host CUSUM alarmed) or on time (less learnt, no alarm), and at least as many on time
        as late: a socket's GPUs are half its node's, a PCIe switch's fewer (a node's cold start
        with one or two ranks' shards cached is most of it late: revA35 3).  A loader back at its
        pace keeps most of its learnt offset (it unlearns slow_baseline_alpha a step, only while
        within 3 sigma: ~35 steps to half) with no alarm: neither, so its node's cold start is
        not a part's -- see ``_START_PART_STEPS``."""
        hw = self._hw
        mine = np.array([s for s in r.tolist() if hw[s] is not None and hw[s][0] == node],
                        dtype=np.intp)
        learnt = self._host_base[mine] >= _PART_LEARNT * self.cfg.host_offset_max
        alarmed = self._host.alarmed[mine]
        on_time = int(np.count_nonzero(~learnt & ~alarmed))
        late = int(np.count_nonzero(learnt & alarmed))
        return on_time >= late and on_time + late == len(mine)

    def _host_trend(self, sl: int) -> dict[str, float]:
        """A host_late run's least-squares line over its steps: its excess (shares of a step's
        work) at the run's first step and now, and the run's steps."""
        n = int(self._host_n[sl])
        mean = float(self._host_sum[sl]) / max(n, 1)
        half = (n - 1) / 2.0
        sii = n * (n * n - 1) / 12.0
        slope = (float(self._host_tx[sl]) - half * float(self._host_sum[sl])) / sii \
            if sii > 0.0 else 0.0
        return {"from_share": round(mean - slope * half, 4),
                "to_share": round(mean + slope * half, 4), "run_steps": n}

    def _host_grew(self, r: np.ndarray) -> np.ndarray:
        """Indices into ``r`` of raised host_late runs, not yet told for it, whose line has
        grown to ``_HOST_GROWN`` of a step's work from under ``_HOST_GROWN_FROM`` of that at
        the run's start: told again now, escalated as a lasting one (Correlator._host_lasting).

        A leak grows (blind14 N4: a rank's loader workers copying pages, its time in neither
        rising linearly from 0 to 0.73 s of a 0.9 s step over 12 min): waiting host_page_s
        (600 s) for it, as for a flat run, paged it at 70 % of the step, not when it became
        material.  What the wait is for -- an input pipeline catching up (blind2's healthy
        3-minute stall, +45 % of a step from its first step) -- starts at its height and
        falls; a slow CPU or link (blind3) is flat: neither grows from little."""
        at = np.flatnonzero(self._host_rep[r] & ~self._host_told[r])
        if not len(at):
            return at
        keep = []
        for i in at.tolist():
            t = self._host_trend(int(r[i]))
            if t["to_share"] >= _HOST_GROWN and t["from_share"] <= _HOST_GROWN_FROM \
                    * t["to_share"]:
                keep.append(i)
        return np.array(keep, dtype=np.intp)

    def _host_events(self, step: int, slots: np.ndarray, buf: _StepBuffer, host: np.ndarray,
                     host_med: float, ts: np.ndarray, decided_ts: float,
                     out: list[Finding]) -> None:
        """The job's host time this step (``host_med`` its median): a job-wide host step
        (every rank's: a checkpoint's snapshot, an evaluation) noted for
        :meth:`_hold_after_event`; after the warm-up each node's share (:meth:`_host_share`)."""
        sm = buf.step_ms
        step_ms = sorted((sm[0], sm[len(sm) // 2], sm[-1]))[1]  # (all about alike: synchronous)
        share = host_med / max(step_ms, 1e-9)
        # A save, an evaluation pass is a rare step: _SAVE_GAP_STEPS "events" in a row are the
        # job's own level (a job loading 6 % of its step from its first step; a job-wide rise
        # that stays), learnt as on any other step -- not every step an event for good.
        run = self._event_run = (self._event_run + 1 if share - self._host_level >= _EVENT_SHARE
                                 else 0)
        if 0 < run < _SAVE_GAP_STEPS:
            ev = self._event_ts
            # (from 5 usual steps before it: a CUSUM's run may begin a few steps early, on noise)
            at = float(ts.min()) - 0.005 * min(self._usual_step_ms or step_ms, step_ms)
            if at - ev[0] > 1.0:
                since = at - ev[0]
                ev[1], ev[0] = ev[0], at
                if since >= _SAVE_GAP_STEPS * self._period:
                    self._host_at_event(step, slots, buf, host, at, since, decided_ts, out)
        else:
            self._host_level = _smoothed(self._host_level, min(share, 1.0), 0.1)
            self._usual_step_ms = _smoothed(self._usual_step_ms, step_ms, 0.1)
        if self._evaluated > self.cfg.warmup_steps:
            self._host_share(step, slots, buf, host, step_ms, decided_ts, out)

    def _host_at_event(self, step: int, slots: np.ndarray, buf: _StepBuffer, host: np.ndarray,
                       event_ts: float, since_s: float, ts: float, out: list[Finding]) -> None:
        """A job-wide host event (a checkpoint save, from ``event_ts``): a node slow at its every
        one raised, or cleared when it is not (detector.host_events)."""
        code = self._host_codes(slots, buf)
        table = self._he = host_events.grow(self._he, len(self._hs_keys))
        for i, up, at in host_events.judge(table, code[slots], self._hs[:, host_time.STAGE],
                                           host, event_ts, since_s):
            node = host_time.node_of(self._hs_keys[i])
            out.append(Finding(
                ts, at, "host_events", "slow_node", "unknown", Scope.of_node(node), up, True,
                0.7 if up else 0.0,
                {"step": step, **host_events.evidence(node, table[i], since_s)} if up
                else {"step": step}, self.job, self.tenant, self.cluster))

    def _host_codes(self, slots: np.ndarray, buf: _StepBuffer) -> np.ndarray:
        """Each slot's unit of detector.host_time, made again when the job's ranks moved."""
        code = self._hs_code
        if (self._hs_code_at != (self._moves, self.restarts, id(self._hs_keys))
                or len(code) < len(self._rank_of)
                or (self._hs_code_some and np.count_nonzero(code[slots] == -1))):
            code = self._host_units(slots, buf)
        return code

    def _host_share(self, step: int, slots: np.ndarray, buf: _StepBuffer, host: np.ndarray,
                    step_ms: float, ts: float, out: list[Finding]) -> None:
        """A node whose ranks carry the job's excess host time for minutes (detector.host_time):
        its ``host_share`` finding raised, or cleared."""
        code = self._host_codes(slots, buf)
        lay = self._hs_layout
        if lay is not None and len(slots) == len(lay[0]):  # (every rank: the usual step)
            found = host_time.judge_regular(self._hs, lay, slots, host, step_ms, ts,
                                            self.cfg.host_node_page_s)
        else:
            found = host_time.judge(self._hs, code[slots], host, step_ms, ts,
                                    self.cfg.host_node_page_s)
        for i, up, at in found:
            if up and np.count_nonzero(self._host_rep[np.flatnonzero(code == i)]):
                # Its ranks are host_late already (their own CUSUM, past the warm-up's
                # offset): that path escalates them (_check_host, host_node_page_s); this
                # unit is looked at again next step (blind7 G5, tests/test_steps17.py).
                self._hs[i, host_time.RAISED] = 0.0
                continue
            key = self._hs_keys[i]
            out.append(Finding(
                ts, at, "host_share", "slow_node", "unknown",
                Scope.of_node(host_time.node_of(key)), up, True, 0.7 if up else 0.0,
                {"step": step, **host_time.evidence(key, self._hs[i], step_ms)} if up
                else {"step": step},
                self.job, self.tenant, self.cluster))

    def _host_units(self, slots: np.ndarray, buf: _StepBuffer) -> np.ndarray:
        """Each slot's unit (detector.host_time): its node's ranks of its stage and, in a job
        with tensor parallelism, of its replica (new units named, up to MAX_UNITS)."""
        keys = self._hs_keys
        index = {k: i for i, k in enumerate(keys)}
        code = np.full(len(self._rank_of), -1, dtype=np.int64)
        tp_any = any(buf.tp)
        hw = self._hw
        stages: list[int] = []
        nodes: list[int] = []
        node_id: dict[str, int] = {}
        for s, pp, dp in zip(slots.tolist(), buf.pp, buf.dp, strict=True):
            h = hw[s]
            key = host_time.unit_key(h[0], pp or 0, dp if tp_any else None) if h else None
            i = index.get(key) if key is not None else -2
            if i is None:
                if len(keys) >= host_time.MAX_UNITS:
                    i = -2
                else:
                    if not node_id:  # (the nodes of the units named so far, in their order)
                        for k, row in zip(keys, self._hs.tolist(), strict=False):
                            node_id.setdefault(host_time.node_of(k), int(row[host_time.NODE]))
                    i = index[key] = len(keys)
                    keys.append(key)
                    stages.append(pp or 0)
                    nodes.append(node_id.setdefault(h[0], len(keys) - 1))
            code[s] = i
        if stages:
            self._hs = host_time.grow(self._hs, len(keys), np.array(stages, dtype=float),
                                      np.array(nodes, dtype=float))
        self._hs_code, self._hs_code_at = code, (self._moves, self.restarts, id(keys))
        self._hs_code_some = len(slots) < len(self._rank_of)  # (made from some ranks only)
        self._hs_layout = None if self._hs_code_some else host_time.regular(code)
        return code

    def _host_share_withdraw(self, now: float, out: list[Finding]) -> None:
        """The job stopped stepping (a pause past job_stopped_steps, an evaluation pass
        among them): its raised nodes are cleared (a job gone for good must not leave a page
        open), their runs kept -- a run that goes on when the job steps again is raised again
        at once, within the correlator's quiet hold: the same page."""
        for signal, table, col in (("host_share", self._hs, host_time.RAISED),
                                   ("host_events", self._he, host_events.RAISED)):
            if len(table):
                raised = table[:, col]
                for i in np.flatnonzero(raised).tolist():
                    out.append(Finding(now, now, signal, "slow_node", "unknown",
                                       Scope.of_node(host_time.node_of(self._hs_keys[i])),
                                       False, True, 0.0, {"step": self._last_step}, self.job,
                                       self.tenant, self.cluster))
                raised[:] = 0.0

    def _host_rise(self, step: int, slots: np.ndarray, buf: _StepBuffer, host: np.ndarray,
                   ts: float, out: list[Finding]) -> None:
        """Each node's host time in this job against its own past and the job's other nodes
        (detector.host_rise): a node risen, or calm again -- evidence for the correlator's
        rule over the node's jobs (detector.host_node), any size of job.  ``host``: the
        ranks' host times, at least 0 (:meth:`_check_host`'s, which computes them once)."""
        code = self._hr_code
        if (self._hr_code_at != (self._moves, self.restarts, id(self._hr_keys))
                or len(code) < len(self._rank_of)):
            code = self._host_rise_nodes()
            self._host_rise_left(code, step, ts, out)
        sm = buf.step_ms
        step_ms = sorted((sm[0], sm[len(sm) // 2], sm[-1]))[1]  # (all about alike)
        for i, up, at in host_rise.judge(self._hr, code[slots], host, step_ms, ts):
            out.append(Finding(
                ts, at, "host_rise", "slow_node", "unknown", Scope.of_node(self._hr_keys[i]),
                up, False, 0.5 if up else 0.0,
                {"step": step, **host_rise.evidence(self._hr[i], step_ms)} if up
                else {"step": step}, self.job, self.tenant, self.cluster))

    def _host_rise_nodes(self) -> np.ndarray:
        """Each slot's node (detector.host_rise; new ones named, up to MAX_NODES)."""
        keys = self._hr_keys
        index = {k: i for i, k in enumerate(keys)}
        code = np.full(len(self._rank_of), -2, dtype=np.int64)
        for s, h in enumerate(self._hw[:len(self._rank_of)]):
            if h is None:
                continue
            i = index.get(h[0])
            if i is None and len(keys) < host_rise.MAX_NODES:
                i = index[h[0]] = len(keys)
                keys.append(h[0])
            if i is not None:
                code[s] = i
        self._hr = host_rise.grow(self._hr, len(keys))
        self._hr_code, self._hr_code_at = code, (self._moves, self.restarts, id(keys))
        return code

    def _host_rise_left(self, code: np.ndarray, step: int, ts: float,
                        out: list[Finding]) -> None:
        """Nodes risen for this job that none of its ranks runs on any more (a rank moved off a
        node, the job stepping on elsewhere): calm for it, their runs ended.  A node's judge
        runs only on the job's steps there, so without this the rise stood until the job
        stopped, and the node's later trouble of one other job made two (host_node)."""
        table = self._hr
        if not len(table) or not table[:, host_rise.RAISED].any():
            return
        here = np.zeros(len(table), dtype=bool)
        mine = code[code >= 0]
        here[mine[mine < len(table)]] = True
        for i in np.flatnonzero((table[:, host_rise.RAISED] != 0.0) & ~here).tolist():
            out.append(Finding(ts, ts, "host_rise", "slow_node", "unknown",
                               Scope.of_node(self._hr_keys[i]), False, False, 0.0,
                               {"step": step, "left": True}, self.job, self.tenant,
                               self.cluster))
            host_rise.forget(table, i)

    def _host_rise_withdraw(self, now: float, out: list[Finding]) -> None:
        """The job stopped stepping: its risen nodes are calm for it (their runs kept)."""
        if len(self._hr):
            raised = self._hr[:, host_rise.RAISED]
            for i in np.flatnonzero(raised).tolist():
                out.append(Finding(now, now, "host_rise", "slow_node", "unknown",
                                   Scope.of_node(self._hr_keys[i]), False, False, 0.0,
                                   {"step": self._last_step}, self.job, self.tenant,
                                   self.cluster))
            raised[:] = 0.0

    def _host_share_reset(self) -> None:
        """The job restarted: every unit learnt anew (its ranks may run elsewhere now)."""
        self._hs_keys = []
        self._hs = np.zeros((0, host_time.NCOLS))
        self._he = np.zeros((0, host_events.NCOLS))

    def _host_page_after(self, r: np.ndarray) -> np.ndarray:
        """Per slot of ``r``: how long a raised host_late run lasts before it is told again to
        be escalated (Correlator._host_lasting): ``host_node_page_s`` where two or more of the
        job's ranks on its node are raised (the host they share: a node's memory under
        pressure, its CPUs), ``host_page_s`` for a rank alone (its own loader or link)."""
        cfg = self.cfg
        after = np.full(len(r), cfg.host_page_s)
        hw = self._hw
        nodes = Counter(hw[s][0] for s in np.flatnonzero(self._host_rep).tolist()
                        if hw[s] is not None)
        shared = {n for n, k in nodes.items() if k >= 2}
        if shared:
            for i, s in enumerate(r.tolist()):
                if self._host_rep[s] and hw[s] is not None and hw[s][0] in shared:
                    after[i] = cfg.host_node_page_s
        return after

    def _reset_host(self, m: np.ndarray | None) -> None:
        """Forget the host-time runs of slots ``m`` and, for ranks on other hardware, their
        learned host offsets (None: every slot's runs, the job stopped or restarted)."""
        if m is None:
            self._host.reset(np.arange(len(self._host.score)))
            self._host_rep[:] = self._host_told[:] = self._lone_rep[:] = False
            self._host_sum[:] = self._host_tx[:] = 0.0
            self._host_n[:] = self._lone_streak[:] = 0
            return
        self._host.reset(m)
        self._host_rep[m] = self._host_told[m] = self._lone_rep[m] = False
        self._host_sum[m] = self._host_tx[m] = 0.0
        self._host_n[m] = self._lone_streak[m] = 0
        self._host_base[m] = 0.0

    @staticmethod
    def _replica_elsewhere(d: np.ndarray, buf: _StepBuffer, pos: np.ndarray
                           ) -> tuple[np.ndarray, np.ndarray]:
        """Per rank: the median deviation of its replica's ranks on other nodes (NaN when
        its replica has none reporting), and of its whole replica (NaN under 4 ranks).

        Warm-up only (``warmup_steps`` steps a start), so a loop over ranks is affordable.
        """
        n = len(d)
        elsewhere = np.full(n, _NAN)
        whole = np.full(n, _NAN)
        reps: dict[int, dict[str, list[int]]] = {}
        for j, i in enumerate(pos.tolist()):
            rep = buf.dp[i]
            if rep is not None:
                reps.setdefault(rep, {}).setdefault(buf.hw[i][0], []).append(j)
        for by_node in reps.values():
            members = [j for js in by_node.values() for j in js]
            if len(members) >= 4:
                whole[members] = median(d[members])
            if len(by_node) < 2:
                continue
            for node, js in by_node.items():
                others = [j for other, ks in by_node.items() if other != node for j in ks]
                elsewhere[js] = median(d[others])
        return elsewhere, whole


# A job of two data-parallel replicas, one computing slower (replica_split): every
# _SPLIT_EVERY-th step, a replica's compute over its peer's, smoothed (alpha) per peer group,
# past _SPLIT_RATIO on one side for _SPLIT_LOOKS looks in a row (60 steps: 30-70 s of a pool
# job).  Per-GPU spread is +-3 % (a replica at most ~6 % from its peer); sequence-length
# imbalance of +-20 % a step averages to ~4 % at this smoothing (sd; 3 sd to the limit).
_SPLIT_EVERY, _SPLIT_ALPHA, _SPLIT_RATIO, _SPLIT_LOOKS = 4, 0.1, math.log(1.12), 15


def _parked_ok(p: Any) -> bool:
    """Restored parked start offsets: at most ``_PARKED_KEPT`` of int rank -> (hardware or
    None, finite bias, finite cap)."""
    return type(p) is dict and len(p) <= _PARKED_KEPT and all(
        type(r) is int and type(v) is tuple and len(v) == 3
        and (v[0] is None or (type(v[0]) is tuple and len(v[0]) == 2 and type(v[0][0]) is str
                              and type(v[0][1]) is int))
        and all(type(x) in (int, float) and math.isfinite(x) for x in v[1:])
        for r, v in p.items())


def _split_ok(s: Any) -> bool:
    """A restored replica_split run: none, or its six items of their kinds, an item a group."""
    if s is None:
        return True
    if type(s) is not list or len(s) != 6:
        return False
    keys, level, weight, looks, onset, told = s
    return (type(keys) is list and len(keys) <= _MAX_RANK and all(
        type(k) is tuple and len(k) == 2 and all(type(x) is int for x in k) for k in keys)
        and type(level) is np.ndarray and level.shape == (len(keys),)
        and level.dtype.kind == "f" and bool(np.isfinite(level).all())
        and type(weight) is float and 0.0 <= weight <= 1.0
        and type(looks) is int and 0 <= looks <= 1 << 62 and _num(onset)
        and type(told) is bool)


def replica_split(job: JobMonitor, buf: _StepBuffer, busy: np.ndarray, ts: float,
                  out: list[Finding]) -> None:
    """Evidence only: in a job of exactly two data-parallel replicas, the GPUs of the one
    that computes lastingly slower than the other (a ``replica_split`` finding, once a job).

    Two peers a group are too few to compare (min_peers), and the pipeline stage's median
    of two slow and two fast ranks (TP 2 x DP 2) sits between them: nothing in this job can
    name the GPU -- the TP partner waits in the TP all-reduce and reports the same
    ``compute_ms`` -- nor tell a slow GPU from a replica's own work.  The correlator's
    memory across jobs can (detector.lemon): the same GPU in the slow replica of job after
    job.  Its run is state (``JobMonitor._split``): a restore goes on with it.
    """
    cfg = job.cfg
    if job._evaluated <= cfg.warmup_steps:
        return
    dp = buf.dp
    lo, hi = min(dp, key=lambda v: -1 if v is None else v), max(
        dp, key=lambda v: -1 if v is None else v)
    if lo is None or lo == hi:
        return
    pairs: dict[tuple[int, int], list[int]] = {}
    for i, (d, tp, pp) in enumerate(zip(dp, buf.tp, buf.pp, strict=True)):
        if d != lo and d != hi:
            return  # more than two replicas: their peers say which is slow
        pairs.setdefault((pp or 0, tp or 0), [-1, -1])[d == hi] = i
    if any(a < 0 or b < 0 for a, b in pairs.values()):
        return
    state = job._split
    keys = sorted(pairs)
    if state is None or state[0] != keys:
        state = job._split = [keys, np.zeros(len(keys)), 0.0, 0, ts, False]
    if state[5]:
        return  # told once a job
    idx = np.array([pairs[k] for k in keys])
    diff = np.log(busy[idx[:, 1]]) - np.log(busy[idx[:, 0]])  # the higher replica's over
    state[1] += _SPLIT_ALPHA * (diff - state[1])
    state[2] += _SPLIT_ALPHA * (1.0 - state[2])
    level = state[1] / state[2]  # (bias-corrected: the first looks weigh alike)
    up, down = level > _SPLIT_RATIO, level < -_SPLIT_RATIO
    if up.any() == down.any():  # neither side, or both: no one slow replica
        state[3], state[4] = 0, ts
        return
    state[3] += 1
    if state[3] < _SPLIT_LOOKS:
        return
    state[5] = True
    side, sel = (1, up) if up.any() else (0, down)
    slow = [int(i) for i in idx[sel, side]]
    gpus = [[buf.hw[i][0], int(buf.hw[i][1])] for i in slow]
    d_slow = hi if side else lo
    out.append(Finding(ts, state[4], "replica_split", "slow_node", "unknown",
                       Scope.of_replica(job.job, int(d_slow)), True, False, 0.3, {
                           "replica_gpus": gpus,
                           "compute_ratio_to_peers": round(math.exp(float(
                               np.abs(level[sel]).mean())), 3),
                           "run_steps": state[3] * _SPLIT_EVERY, "dp_ranks": 2},
                       job.job, job.tenant, job.cluster, None, int(d_slow)))
