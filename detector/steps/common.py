"""What several of a job monitor's concerns share: the step buffer, numpy helpers and
constants read in more than one module of detector.steps.
"""

from __future__ import annotations

import math
import struct
from collections.abc import Callable, Sequence

import numpy as np
from msgspec.structs import astuple

from detector.events import StepSample

_MAX_RANK = 1 << 24  # as the decoder's bound (DESIGN.md "Bounds")
_DONE_KEPT = 256  # evaluated steps remembered, to recognise late messages

# In a rank set of _partial: the step was decided complete, and the set holds only the ranks
# that came after (JobMonitor._late).
_LATE_ONLY = -1
_CLEARLY_SLOW_Z = 3.0  # a step this many noise units slower than its peers: clearly slow
_REPLICA_APART_Z = 10.0  # a replica this many of the replicas' sigma off: not its batch

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
# An episode is told from a fault by its length, not its height, up to a height real noise does
# not reach (noise38, blind28 F4): scaled PAI job-2 noise at a 2 % CoV makes 4-step episodes at
# +9-15 % (5-6 sd; 3.1-5.9 of the job's noise less their margin) on healthy ranks, escalated at
# their alarm -- over _HEAVY_EFFECT, as a 10 % slowdown is.  PAI's own workers reach 6.2 sigma
# on one sample, 5.0 over four (tests/test_noise38.py).  So while a job's noise is not measured
# (JobMonitor._unmeasured) a run is told before _HEAVY_STEPS only when its mean less its margin
# is also _HEAVY_EPISODE_Z of the job's noise (a 30 % straggler on 2 % noise: 13), after it only
# while slow throughout (JobMonitor._still_slow, its last _HEAVY_TRAIL steps and those before);
# a 10 % slowdown on 2 % noise waits for its 7th step.  Measured heavy: the same (tenant41,
# round 41: blind28 H2, H6, H7 -- 4-step episodes at +9-14 % in jobs whose tail was read heavy,
# told at their alarm by their share alone), a high run high at its latest step too.  What
# waits is its escalation without a cause (noise39): the run is told at its alarm marked
# ``noise_hold`` (JobMonitor._held_runs), paged there with a cause its GPU or node names (a
# power brake: tests/test_brake38.py), and a run beside a node mate told slow is no episode of
# one rank's noise (JobMonitor._beside_told): told whole at its alarm.
# A slow run's mean is read at its job's lag-1 (JobMonitor._lag1_read, noise39: revA38 F2, F5):
# at most _LAG1_READ_MAX (a mean's variance factor grows without bound towards 1), and before
# the estimate has lag1.MIN_FEW steps at least _LAG1_PRIOR, PAI job 2's median worker
# (tests/test_noise29.py: 0.45-0.71, median 0.587), as the job's noise unmeasured is taken;
# only while the run is shorter than _LAG1_MEMORIES of the noise's memory ((1 + rho) / (1 - rho)
# steps, noise40): a longer run is no single excursion of the noise.
# A run within the job's excursions (JobMonitor._excursion_held) is under this many of the spread
# of its peers' means of its length: over it, it is no excursion the job makes (a normal's tail
# there is one in ~290,000; a job of 64 ranks makes ~4 windows of 16 steps a step).  Healthy runs
# read 3.6-3.9 (blind31 F1, tune vlm-s2 v-07; revA40 F9); a real 3 % straggler in PAI noise 8-9
# (blind23 N2: held under a margin on the spread instead); a memory-bound GPU on the VLM's vision
# stage, whose 31-step means spread by 3 %, 4.2-4.6 at its 6th-7th step (blind31 G1)
_EXC_Z = 4.5

_LAG1_PRIOR = 0.587
_LAG1_READ_MAX = 0.95
_LAG1_MEMORIES = 2.0
_HEAVY_EDGE = 4
_HEAVY_SHARE = 2e-3
_HEAVY_EFFECT = 0.06
_HEAVY_EPISODE_Z = 8.0
_HEAVY_STEPS = 7
_HEAVY_TRAIL = 3
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

# Less time than this in a step's own work is no measurement (a kernel launch alone takes
# microseconds): like 0, not compared.  A partner's 1e-300 ms made the pair rule's ratio
# 7e302 and paged the other rank of a job of two (review23's leftover; review24).
_MIN_BUSY_MS = 1e-3
_TOLD_OUT = 2              # ranks of a peer group told slow that take the told out of its
#                            reference (JobMonitor._untold_reference)
_TP_LOCKED = 0.1           # a node mate this close to a found rank's deviation: in step with it
#                            (JobMonitor._node_alike; blind7 G3: 0.0703 and 0.0690)

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

# JobMonitor's per-slot arrays (an item per rank's slot) and what a new slot holds (None: the
# cap any rank may learn, Thresholds.slow_baseline_clip): _grow makes room in each,
# _free_gone_slots takes the ranks that left out of each.
_SLOT_ARRAYS: tuple[tuple[str, float | bool | None], ...] = (
    ("_base", 0.0), ("_slow_dev", 0.0), ("_run_sum", 0.0), ("_run_n", 0), ("_run_since", 0.0),
    ("_reported", False), ("_gross", 0), ("_gross_onset", 0.0), ("_cap", None),
    ("_fresh", True), ("_spikes", 0.0), ("_spike_onset", 0.0), ("_spiking", False),
    ("_gd_fast", 0.0), ("_gd_run", 0), ("_gd_onset", 0.0), ("_gd_rep", False), ("_gd_last", 0),
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
    ("_lone_streak", 0), ("_host_dev_z", 0.0), ("_with_mates", False), ("_alone_told", False),
    ("_host_base0", 0.0), ("_host_recent", 0.0), ("_held", False), ("_paced", 0),
    ("_exc_s", 0.0), ("_exc_v", 0.0),
    ("_ep_rhold", 0), ("_ep_rtop", 0.0), ("_ep_rranks", 0), ("_ep_rnodes", 0),
    ("_past_base", 0.0), ("_past_short", 0.0), ("_past_n", 0), ("_past_run", 0),
    ("_past_rep", False), ("_past_var", 0.0), ("_stage_sigma", 0.0), ("_told_mates", 0.0),
    ("_tp_pp", 0), ("_spike_seq", 0.0), ("_big_seq", 0.0),
    ("_ep_n", 0), ("_ep_peak", 0.0), ("_ep_end", 0), ("_ep_len", 0), ("_ep_mean", 0.0),
    ("_ep_with", False), ("_past_gross", 0), ("_ep_node", False))


def _smoothed(prev: float, x: float, alpha: float) -> float:
    """An exponentially weighted mean that starts at its first value (0.0: none yet)."""
    return x if prev == 0.0 else prev + alpha * (x - prev)


# ... and a rank against its TP mates (detector.steps.phases): its steps in a row over them, and
# whether the rule reported it (rl46; added apart from the tuple, whose last line every round's
# new arrays meet at)
_SLOT_ARRAYS += (("_tp_run", 0), ("_tp_rep", False))


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


# A job of two data-parallel replicas, one computing slower (replica_split): every
# _SPLIT_EVERY-th step, a replica's compute over its peer's, smoothed (alpha) per peer group,
# past _SPLIT_RATIO on one side for _SPLIT_LOOKS looks in a row (60 steps: 30-70 s of a pool
# job).  Per-GPU spread is +-3 % (a replica at most ~6 % from its peer); sequence-length
# imbalance of +-20 % a step averages to ~4 % at this smoothing (sd; 3 sd to the limit).
_SPLIT_EVERY, _SPLIT_ALPHA, _SPLIT_RATIO, _SPLIT_LOOKS = 4, 0.1, math.log(1.12), 15

# A run in a job whose steps come in runs (its lag-1 read, JobMonitor._lag1_read) is escalated
# without a cause only once its mean stands this many standard errors of a mean of as many of the
# job's correlated steps over its pace (JobMonitor._fleet_held; noise44: a fleet's false-alarm
# budget read on real PAI noise, BENCHMARKS "noise44, round 44")
_FLEET_Z = 7.0
# ... a run under this (DESIGN's target slowdown, paged in <= 10 steps by the rules before); a
# slowdown over it is no tail of the noise (Alibaba job 3's workers 6-9 at 1.15-1.3x, four of ten,
# lift the job's noise 4 % -> 13 %: read against it, worker 7 waited 15 samples)
_FLEET_UNDER = 0.10
# ... and a run in a job whose noise is remembered beyond its lag-1 (its n-step means, measured:
# models.excursion, JobMonitor._memory_read, spread this many times what its lag-1 says or more)
# is held so too, at that factor, whatever lag holds the memory (noise46: revA45 F1)
_MEMORY_ON = 2.0
# ... while the run is shorter than this: F1's healthy runs lasted 13-30 steps; a run that
# outlasts them is a fault's (a slow GPU stays slow), and is told as before -- a site's cap held
# so past its wave (revA38 F1's waves at 10 s polls: a 92-step run told as the cap was let go)
# was escalated unknown
_MEMORY_STEPS = 40
