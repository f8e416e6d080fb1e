"""A job's monitor: its steps gathered by number, decided whole, and evaluated.

:class:`JobMonitor` owns a job's state (made in ``__init__``, snapshot whole by
detector.statecodec, checked by :meth:`~JobMonitor.check_restored`), takes its step
messages (``quiet``, ``add``, ``expire``, late ones, restarts) and runs each decided step
through :meth:`~JobMonitor._evaluate`; the judgement of the step is in the concern
modules (listed in detector/steps/__init__.py), whose functions its class body binds
as its methods.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import msgspec
import numpy as np

from detector import host_events, host_rise, host_time, job_pace, overflow_source, sdc
from detector.alerts import Scope
from detector.events import NonFinite, StepSample
from detector.findings import Finding
from detector.statecodec import bad_field, is_finite, is_map_of, is_time, refuse_unless
from detector.step_numerics import NumericChecks, _pick
from detector.steps.asynchronous import _Async
from detector.steps.common import (
    _DONE_KEPT,
    _GONE_CHECK_STEPS,
    _LATE_ONLY,
    _MAX_RANK,
    _MIN_BUSY_MS,
    _PARKED_KEPT,
    _RECENT,
    _SLOT_ARRAYS,
    _SPLIT_EVERY,
    _TAIL_EDGES,
    _TWIN_MAX,
    _TWIN_WINDOW,
    _arange,
    _floats,
    _ints,
    _StepBuffer,
)
from detector.steps.replicas import replica_split
from detector.thresholds import Thresholds
from models import excursion
from models.cusum_bank import CusumBank
from models.numpy_c import count_nonzero
from models.peer_stats import derive_layout, learn_layout, median

# A job whose clock was run on without records (``expire(quiet=True)``: the service's idle
# advance of a step partition holding only this job, a backlog's run-through) and that decided
# no step for this long has stopped: its slow ranks are withdrawn, as another record's clock
# would have after job_stopped_steps periods -- not left to page until the job is forgotten
# (job_idle_s: review30 finding 5).  A broker hiccup this long withdraws them too; a slow rank
# still slow is found again within a few steps once the steps come back.
STOPPED_QUIET_S = 240.0
# A step this many of the job's periods after the one before holds more than its work: a
# checkpoint save, an evaluation pass (blind27 held churn-s6's saves: 2.4-3.8 of its period).
LONG_STEP = 2.0
# A step whose ranks' records end seconds apart by design -- rollout engines, each reporting a
# round when its own batch's longest answer is done (blind36: rounds 0.6-2x, records of one
# round 4-10 s apart) -- waits for its missing ranks that much longer than DESIGN's disorder:
# the slowest engine's record, often the slow GPU's, came past the 5 s and was decided out
# of every round it was slowest in (rl46: blind36 F1).  The spread is each complete step's
# last ts less its first, its decayed maximum; in force from _STEP_SPREAD_MIN (a synchronous
# job's ranks end a step within milliseconds: never), at most _STEP_SPREAD_MAX.
_STEP_SPREAD_MIN = 2.0
_STEP_SPREAD_MAX = 15.0
_STEP_SPREAD_KEEP = 0.95
_PARTIAL_KEPT = 8  # rank sets of steps decided incomplete, to tell a late rank from a duplicate
_MAJORITIES_KEPT = 4096

# ... and each one's shape past its slot (a row of the twin ring, the twins, the sums)
_SLOT_WIDTH = {"_sus": (3,), "_recent": (_RECENT,), "_twin_hist": (_TWIN_WINDOW,),
               "_twins": (_TWIN_MAX,), "_exc_s": (len(excursion.ALPHAS),),
               "_exc_v": (len(excursion.ALPHAS),), "_spike_seq": (sdc.SPIKES_KEPT,),
               "_big_seq": (sdc.SPIKES_KEPT,)}


def _num(x: Any) -> bool:
    """A number as a step writes one (NaN and the infinities are a state's own: none raises)."""
    return type(x) in (int, float)


def _spread(x: Any) -> bool:
    """A spread, a mean square, a period or a sum of squares as the rules keep them: finite and
    0 or more (svc39: an infinite or negative one restored as is widened or narrowed every
    judgement of the job -- a 1e308 sigma hid every slow rank)."""
    return type(x) in (int, float) and 0.0 <= x < math.inf


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
    "_found_since": lambda x: type(x) is dict and len(x) <= 64 and all(
        type(n) is str and type(v) is int for n, v in x.items()),
    "_warm_sigma": _nums(2), "_event_ts": _nums(2),
    "_event_long": lambda x: type(x) is list and len(x) == 2 and all(type(b) is bool for b in x),
    "_tail": lambda x: type(x) is np.ndarray and x.shape == _TAIL_EDGES.shape
    and x.dtype.kind == "f",
    "_grad_level": lambda x: is_map_of(x, int, (int, float)),
    "_losses": sdc.check_loss, "_spike_rate": sdc.spike_rate_ok, "_loss_climb": sdc.climb_ok,
    "_hs_keys": lambda x: type(x) is list and all(type(k) is str for k in x),
    "_hr_keys": lambda x: type(x) is list and all(type(k) is str for k in x),
    "_log_eps": lambda x: type(x) is dict and len(x) <= 4 and all(
        type(k) is str and type(v) is list and len(v) <= 6 and all(type(i) is int for i in v)
        for k, v in x.items()),
    **{name: _count for name in ("_evaluated", "_wander_n", "_wander_hot", "_wander_calm",
                                 "_twin_n", "_tail_n", "_ar_n", "_hl_n",
                                 "_exc_n", "_past_hold")},
    **{name: lambda x: type(x) is int for name in ("late", "duplicates", "restarts")},
    **{name: lambda x: type(x) is bool for name in ("_imbalanced", "_recur_live", "_wandering",
                                                    "_sus_on", "_split_active")},
    # (svc39: a time finite or -inf -- none yet; +inf made every later step late: the job
    # blind -- the rest finite, the spreads from 0.)
    **{name: is_time for name in ("clock", "_next_expire", "_last_step_ts", "_host_seen_ts")},
    **{name: _spread for name in (
        "_period", "_sigma", "_zscale", "_quiet_z", "_replica_noise", "_rep_sigma", "_wander",
        "_twin_sigma", "_sus_spread", "_sus_ms", "_host_sigma", "_usual_step_ms", "_ar_xx",
        "_hl_xx", "_past_sigma", "_step_spread")},
    **{name: is_finite for name in ("_host_level", "_ar_xy", "_hl_xy", "_past_level")},
    **{name: _checked_below for name in (
        "stop_told", "absent_told", "_expected", "_done", "_partial", "_event_run", "_hs", "_he",
        "_told_was", "_overflow", "_pace", "_hr", "_majority", "_mismatch", "_pair", "_tie_lean",
        "_prev_ck", "_ck_moved", "_split", "_parked_offsets",
        *(name for name, _ in _SLOT_ARRAYS))},
}


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



class JobMonitor(NumericChecks):
    """All step-derived state of one training job."""

    _replica_noise = 0.0  # (a snapshot written before it existed restores with this)
    _imbalanced = False   # (likewise)
    _host_seen_ts = -math.inf  # (likewise)
    _ar_xy = _ar_xx = 0.0      # (likewise: a snapshot before round 30 learns its lag-1 anew)
    _ar_n = 0
    _exc_n = 0                 # (likewise, round 41: the job's excursions measured anew)
    _past_level = _past_sigma = 0.0  # (likewise, round 42: own pasts learned anew)
    _past_hold = 0
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
    _order = 0  # its place among its Monitors' jobs (Monitors.sweep visits them in this order)
    # Which ranks took part in the job's latest steps (_free_gone_slots): per slot, the
    # number of steps evaluated when it last took part in a step missing ranks, and when every
    # slot last took part in one.  Not state either: a restored monitor counts from there.
    _seen_at = np.zeros(0, dtype=np.int64)
    _whole_at = 0
    # GPUs that joined the job past its warm-up (_joined; made on first use, per monitor)
    _joined_at: dict[tuple[str, int], int] | None = None
    # ... and when its ranks last moved to other hardware (a re-form), counted alike: a slot
    # in no step since is a rank that left, not one whose records are lost (detector.liveness).
    _moved_at = 0
    # ... with the job's last step before them -- or before its first step that lacked ranks
    # after one with all -- and that step (event times), and whether that last step was far
    # over the job's period (a save in it: _long_step_ts): a re-form's gap, which
    # detector.liveness reads (_reforms, _went_on_without); not state either.
    _moved_gap: tuple[float, float, bool] = (-math.inf, -math.inf, False)
    _was_whole = False  # (whether its latest step evaluated had every rank)
    # The latest step far over the job's period (LONG_STEP of it after the step before: a
    # checkpoint save, an evaluation pass, in it) and, at its latest restart, its last step's
    # time and how many steps the restart went back -- what detector.liveness reads of a job
    # that re-formed without a node (a save finished and the job went on from it, or a crash:
    # the job back to an older checkpoint); not state either (learnt anew after a restore).
    _long_step_ts = -math.inf
    _went_back: tuple[float, int] = (-math.inf, 0)
    # (_moves, restarts, node -> its slots, nodes absent) as detector.liveness._reforms last
    # looked: the nodes a re-form took the job off; not state either (learnt anew on restore).
    _live_nodes: tuple[int, int, dict[str, int], list[str]] | None = None
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
    # A job whose steps no two ranks share: its windows (detector.steps.asynchronous); not
    # state either (made on first use; a restored monitor learns them anew).
    _async: _Async | None = None

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
    def _joined(self) -> dict[tuple[str, int], int]:
        """GPUs that joined the job past its warm-up -> its steps evaluated then
        (steps.ranks._track_hardware, steps.holds._gross_joiner; not state, as _seen_at:
        a restored monitor judges a GPU that joined before the restore as before this)."""
        if self._joined_at is None:
            self._joined_at = {}
        return self._joined_at

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
        self._quiet_z = 0.0                    # ... and a quiet stage's (_quiet_stages)
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
        # ... the steps (counts evaluated) of each rank's latest spikes and big spikes, oldest
        # first (0: none), and the job's spikes, big ones and rank-steps, decayed
        # (detector.sdc.spike_cluster)
        self._spike_seq = np.zeros((0, sdc.SPIKES_KEPT))
        self._big_seq = np.zeros((0, sdc.SPIKES_KEPT))
        self._spike_rate = [0.0, 0.0, 0.0]
        # Each rank's deviation from its peers' log(grad_norm), smoothed, its steps off in a
        # row, when they began and whether it was paged (step_numerics._grad_drift)
        self._gd_fast = np.zeros(0)
        self._gd_run = np.zeros(0, dtype=np.int64)
        self._gd_onset = np.zeros(0)
        self._gd_rep = np.zeros(0, dtype=bool)
        self._gd_last = np.zeros(0, dtype=np.int64)   # ... and the step (evaluated) last off
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
        self._told_mates = np.zeros(0)                # its node mates' pace then, when told
        #                                               alike with them (0: not; _grown_runs)
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
        self._found_since: dict[str, int] = {}  # ... since when each was found on end (steps)
        self._sus_spread = 0.0                        # the ranks' median step spread, lately
        self._warm_sigma = [0.0, 0.0]                 # warm-up: its steps' noise summed, steps
        self._sus_on = False                          # the sums kept (the job's spread wide)
        self._sus_ms = 0.0                            # its ranks' mean square deviation, lately
        self._step_spread = 0.0                       # its steps' records' ts spread, lately
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
        # ... the first steps of rank 0's and the last rank's episodes, alone on a node
        # (_note_episodes, a few units of a few episodes)
        self._log_eps: dict[str, list[int]] = {}
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
        self._event_long = [False, False]             # ... each one long (a synchronous save)
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
        # The job's excursions (models.excursion, _excursion_update): per rank its deviation
        # over its bias smoothed at a few spans and their mean squares; per job the steps
        self._exc_s = np.zeros((0, len(excursion.ALPHAS)))
        self._exc_v = np.zeros((0, len(excursion.ALPHAS)))
        self._exc_n = 0
        # A rank against its own past pace (detector.steps.past): per rank its level of log
        # compute over the job's common change, its change over that smoothed, steps learned,
        # its run of steps slow so and whether the rule reported it; per job the common
        # change's level, the smoothed change's noise and the steps its levels are held anew.
        self._past_base = np.zeros(0)
        self._past_short = np.zeros(0)
        self._past_n = np.zeros(0, dtype=np.int64)
        self._past_run = np.zeros(0, dtype=np.int64)
        self._past_rep = np.zeros(0, dtype=bool)
        self._past_var = np.zeros(0)                  # ... and its smoothed change's wander
        self._past_gross = np.zeros(0, dtype=np.int64)  # ... its steps in a row gross over it
        # A rank against its TP mates in a job of wide spread (detector.steps.phases): its
        # steps in a row over every mate, and whether the rule reported it
        self._tp_run = np.zeros(0, dtype=np.int64)
        self._tp_rep = np.zeros(0, dtype=bool)
        self._past_level = 0.0
        # A job whose slowness moves from rank to rank (detector.steps.experts): per rank its
        # alarmed run's longest so far (steps, sum) and its latest episode's end (the job's
        # evaluated count then), steps and mean deviation
        self._ep_n = np.zeros(0, dtype=np.int64)
        self._ep_peak = np.zeros(0)
        self._ep_rhold = np.zeros(0, dtype=np.int64)  # ... held as an expert's: for how long,
        self._ep_rtop = np.zeros(0)                   # ... how slow the runs it was held by
        self._ep_rranks = np.zeros(0, dtype=np.int64)  # ... on how many ranks, of how many
        self._ep_rnodes = np.zeros(0, dtype=np.int64)  # ... nodes
        self._ep_end = np.zeros(0, dtype=np.int64)
        self._ep_len = np.zeros(0, dtype=np.int64)
        self._ep_mean = np.zeros(0)
        self._ep_with = np.zeros(0, dtype=bool)  # ... its run slow beside another node's
        self._ep_node = np.zeros(0, dtype=bool)  # ... its run begun with most of its node's
        self._past_sigma = 0.0
        self._past_hold = 0
        # The job's lag-1 autocorrelation of its healthy ranks' host excess (models.lag1's
        # sums): how long a lone host run must last (_page_lone)
        self._hl_xy = self._hl_xx = 0.0
        self._hl_n = 0
        self._zprev = np.zeros(0)
        self._ar_score = np.zeros(0)                  # its CUSUM on z whitened by it (_ar_step)
        self._cold = np.zeros(0, dtype=np.int64)      # steps its cold start may last (_cold_steps)
        self._lone_rep = np.zeros(0, dtype=bool)      # paged alone by its host path (_page_lone)
        self._lone_streak = np.zeros(0, dtype=np.int64)  # steps late by its host path in its run
        self._host_base0 = np.zeros(0)                # its host offset when its run began
        self._host_recent = np.zeros(0)               # its host excess over it, smoothed (~4 steps)
        self._host_dev_z = np.zeros(0)                # its last host excess in the job's sigmas
        self._with_mates = np.zeros(0, dtype=bool)    # told slow with its node's (_tell_alone)
        self._alone_told = np.zeros(0, dtype=bool)    # told again slow alone on its node
        self._held = np.zeros(0, dtype=bool)          # of a told run: told held (_held_runs)
        self._paced = np.zeros(0, dtype=np.int64)     # warm-up steps at its peers' pace
        self._stage_sigma = np.zeros(0)               # its stage's noise (_quiet_stages)
        # Its place, (pp_rank << 24 | tp_rank) + 1 (0: no step yet), as its latest step said:
        # what its findings carry (_finding; stage44: a TP group is one job, replica, stage)
        self._tp_pp = np.zeros(0, dtype=np.int64)
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
        self._loss_climb = list(sdc.CLIMB_NEW)        # the job's loss over its level (sdc)
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
        self._async_see(e, out)  # (steps no two ranks share: detector.steps.asynchronous)
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
                    self._restart(step)
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
            spread = buf.last_ts - buf.first_ts
            kept = self._step_spread * _STEP_SPREAD_KEEP
            self._step_spread = min(spread if spread > kept else kept, _STEP_SPREAD_MAX)
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
        last message is ``straggler_wait_s`` old on the job's own clock (its newest step
        message, not ``now``: see below): 1 % of messages arriving a few seconds late would
        otherwise hold most steps of a large job for seconds.  A straggler that
        comes later is still checked against its step's checksum majority.  A step missing
        more waits the full allowed lateness; then the job is taken to have shrunk.

        A job whose steps stopped while other records moved the clock on has its slow ranks
        withdrawn (:meth:`_retract_slow`); a clock run on without records (``quiet``: a
        stream gone idle, a broker hiccup) is evidence of that only after
        :data:`STOPPED_QUIET_S` (the end of the input, never).
        """
        self._next_expire = now + 0.25  # checked a few times a second, not per message
        cfg = self.cfg
        if self._async is not None:
            self._async_expire(now, out)
        if now != math.inf and now - self._last_step_ts > max(
                2 * cfg.lateness_s, cfg.job_stopped_steps * self._period,
                STOPPED_QUIET_S if quiet else 0.0) and (
                self._reported.any() or self._host_rep.any()
                or (len(self._hr) and self._hr[:, host_rise.RAISED].any())):
            self._retract_slow(now, out)
        extra = self._step_spread if self._step_spread >= _STEP_SPREAD_MIN else 0.0
        limit = now - cfg.lateness_s - extra
        # A straggler's wait runs on the job's own clock (its step messages' newest ts), not
        # on ``now``: the partition's clock, which other records move -- other topics in the
        # replay's one stream, other jobs of a service's step partition, an idle advance's
        # wall time.  Which ranks a step is decided with is then a function of the job's
        # records in their order (one partition: the same in both paths), not of how other
        # streams interleave with them (meta35 blind7 G3: a rank 1-2.7 s behind other
        # topics' records, within DESIGN's 5 s, was left out by the replay, kept by the
        # service, and the two paged the node 42 s apart).  The full lateness stays on
        # ``now``: past DESIGN's 5 s of disorder nothing more of the step can come.
        waited = self.clock if self.clock < now else now
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
            elif waited - buf.last_ts < cfg.straggler_wait_s + extra:
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
        if now == math.inf and self._lone_rep.any():
            self._lone_unlasted(out)

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
        if "_step_spread" not in self.__dict__:  # (a snapshot before rl46: learnt anew)
            self._step_spread = 0.0
        if "_found_since" not in self.__dict__:  # (a snapshot before rl46: from now)
            self._found_since = {}
        if "_quiet_z" not in self.__dict__:  # (a snapshot before slow42: learnt anew)
            self._quiet_z = 0.0
        if "_log_eps" not in self.__dict__:  # (a snapshot before slow42: none noted)
            self._log_eps = {}
        if "_event_long" not in self.__dict__:  # (before slow42: held after each, as then)
            self._event_long = [False, False]
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
        self._hs = host_time.widen(self._hs)  # (a snapshot before round 37: no spreads)
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
        if "_with_mates" not in self.__dict__ and n >= 0:
            self._with_mates = np.zeros(n, dtype=bool)  # (a snapshot before moe36: none told)
            self._alone_told = np.zeros(n, dtype=bool)
        if "_past_base" not in self.__dict__ and n >= 0:  # (a snapshot before peer42: anew)
            self._past_base, self._past_short = np.zeros(n), np.zeros(n)
            self._past_n = np.zeros(n, dtype=np.int64)
            self._past_run = np.zeros(n, dtype=np.int64)
            self._past_rep = np.zeros(n, dtype=bool)
            self._past_var = np.zeros(n)
        if "_past_gross" not in self.__dict__ and n >= 0:  # (a snapshot before trace45)
            self._past_gross = np.zeros(n, dtype=np.int64)
        if "_tp_run" not in self.__dict__ and n >= 0:  # (a snapshot before rl46: none yet)
            self._tp_run = np.zeros(n, dtype=np.int64)
            self._tp_rep = np.zeros(n, dtype=bool)
        if "_exc_s" not in self.__dict__ and n >= 0:  # (a snapshot before noise41: anew)
            self._exc_s = np.zeros((n, len(excursion.ALPHAS)))
            self._exc_v = np.zeros((n, len(excursion.ALPHAS)))
        if "_held" not in self.__dict__ and n >= 0:
            self._held = np.zeros(n, dtype=bool)  # (a snapshot before noise39: none held)
        if "_paced" not in self.__dict__ and n >= 0:
            self._paced = np.zeros(n, dtype=np.int64)  # (before tenant41: none at pace yet)
        if "_stage_sigma" not in self.__dict__ and n >= 0:
            self._stage_sigma = np.zeros(n)  # (a snapshot before slow42: learnt anew)
        if "_told_mates" not in self.__dict__ and n >= 0:
            self._told_mates = np.zeros(n)  # (a snapshot before cap44: none told alike)
        if "_gd_fast" not in self.__dict__ and n >= 0:
            self._gd_fast = np.zeros(n)  # (before sdc45: learnt anew)
            self._gd_run = np.zeros(n, dtype=np.int64)
            self._gd_onset = np.zeros(n)
            self._gd_rep = np.zeros(n, dtype=bool)
            self._gd_last = np.zeros(n, dtype=np.int64)
        if "_loss_climb" not in self.__dict__:
            self._loss_climb = list(sdc.CLIMB_NEW)  # (before sdc45: learnt anew)
        if "_tp_pp" not in self.__dict__ and n >= 0:
            self._tp_pp = np.zeros(n, dtype=np.int64)  # (before stage44: each rank's next step)
        if "_spike_seq" not in self.__dict__ and n >= 0:
            self._spike_seq = np.zeros((n, sdc.SPIKES_KEPT))  # (before sdc45: spikes anew)
            self._big_seq = np.zeros((n, sdc.SPIKES_KEPT))
            self._spike_rate = [0.0, 0.0, 0.0]
        if "_ep_rhold" not in self.__dict__ and n >= 0:  # (a snapshot before moe46's relay)
            self._ep_rhold = np.zeros(n, dtype=np.int64)
            self._ep_rtop = np.zeros(n)
            self._ep_rranks = np.zeros(n, dtype=np.int64)
            self._ep_rnodes = np.zeros(n, dtype=np.int64)
        if "_ep_n" not in self.__dict__ and n >= 0:  # (a snapshot before moe44: none yet)
            self._ep_n = np.zeros(n, dtype=np.int64)
            self._ep_peak = np.zeros(n)
            self._ep_end = np.zeros(n, dtype=np.int64)
            self._ep_len = np.zeros(n, dtype=np.int64)
            self._ep_mean = np.zeros(n)
        if "_ep_with" not in self.__dict__ and n >= 0:  # (a snapshot before moe45: none)
            self._ep_with = np.zeros(n, dtype=bool)
        if "_ep_node" not in self.__dict__ and n >= 0:  # (a snapshot before moe46: none)
            self._ep_node = np.zeros(n, dtype=bool)
        if "_host_base0" not in self.__dict__ and n >= 0:
            self._host_base0 = np.zeros(n)  # (a snapshot before loader36: runs judged anew)
            self._host_recent = np.zeros(n)
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
        if step in self._done:  # (a straggler of a decided step, the usual late message:
            return False        # ``before`` below is at least ``step`` -- no scan of _done)
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
        self._clear_runs()

    def _clear_runs(self) -> None:
        """The per-rank run state a job's stop or its restart leaves behind: reported flags,
        pair and gross counts, run sums, recurrences, sustained and host runs."""
        self._reported[:] = False
        self._held[:] = False
        self._wander_rep[:] = False
        self._twin_rep[:] = False
        self._past_rep[:] = False
        self._past_run[:] = 0
        self._tp_rep[:] = False
        self._tp_run[:] = 0
        self._past_gross[:] = 0
        self._pair_rep[:] = False
        self._pair_run[:] = 0
        self._pair_gross[:] = 0
        self._gross[:] = 0
        self._paced[:] = 0
        self._run_sum[:] = 0.0
        self._run_own[:] = 0.0
        self._run_n[:] = 0
        self._run_since[:] = 0.0
        self._recur[:] = 0.0
        self._recurring[:] = False
        self._recur_last[:] = False
        self._reset_sustained(None)
        self._reset_host(None)

    def _restart(self, step: int) -> None:
        """Step numbers went back (to ``step``) while time went on: the job restarted from a
        checkpoint."""
        self.restarts += 1
        self._went_back = (self._last_step_ts, self._last_step - step)
        self._pending.clear()
        self._done.clear()
        self._partial.clear()
        self._expected = math.inf
        self._evaluated = 0
        self._gross_nodes.clear()
        self._found_nodes.clear()
        self._found_since.clear()
        self._joined.clear()  # (counted in evaluations, now from 0)
        self._reset_slow(None)
        self._cold[:] = 0
        self._spikes[:] = 0.0
        self._spike_seq[:] = 0.0  # (counted in evaluations, now from 0)
        self._big_seq[:] = 0.0
        self._gd_last[:] = 0
        self._gn[:] = 0
        self._clear_runs()
        self._host_share_reset()
        self._hr_keys = []
        self._hr = np.zeros((0, host_rise.NCOLS))
        self._majority.clear()  # keyed by step numbers, which now repeat
        self._tie_lean = {}     # (likewise; its tie stays paged)
        if not self._loss_climb[5]:  # (the loss is the checkpoint's: its level learnt anew;
            self._loss_climb = list(sdc.CLIMB_NEW)  # a job paged keeps its page and level:
        else:                                       # back at it from a checkpoint before
            self._loss_climb[6] = -1                # the onset, it is resolved)
        self._pace = job_pace.new_state()  # (learnt again: the correlator keeps the onset)
        self._last_step = -1
        self._seen_at = np.zeros(0, dtype=np.int64)  # (counted in evaluations, now from 0)
        self._whole_at = 0
        self._moved_at = 0

    # -- analysis ------------------------------------------------------------------------

    def _evaluate(self, step: int, decided_ts: float, out: list[Finding],
                  complete: bool = True) -> None:
        buf = self._pending.pop(step)
        buf.columns()
        before = self._last_step_ts
        saved = self._long_step_ts == before  # (the step before this one was long)
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
                if self._period > 0.0 and gap > LONG_STEP * self._period:
                    self._long_step_ts = buf.last_ts
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
        slot_of, moved, placed = self._track_hardware(buf, slot_of, decided_ts, out)
        slots = buf.slots = _ints(slot_of)
        self._note_in_step(step, slots)
        n = len(slot_of)
        if n > self._expected or n < self._expected != math.inf and n == len(self._rank_of):
            # More ranks than the job was taken to have (a size learned from a partial first
            # step): it has them all.  Fewer, but every rank the job has a slot for: the
            # count held a rank that never took part in a step (a forged late message).
            self._expected = n
        if moved or placed:
            self._moved_at = self._evaluated
            self._moved_gap = (before, buf.last_ts, saved)
            if moved and self._parked:
                self._unpark(moved)
            out.append(self._layout_finding(buf, moved + placed, decided_ts))
        # each rank's peer group: (pp_rank, tp_rank) as one int (both < 2**24, the decoder's bound)
        groups = (_ints(buf.pp) << 24) | _ints(buf.tp)
        self._tp_pp[slots] = groups + 1
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
            if self._was_whole:  # (fewer ranks from here on: a shrink?)
                self._moved_gap = (before, buf.last_ts, saved)
        self._was_whole = every
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
        grad = _floats(buf.grad)
        self._check_grad(step, slots, groups, ts, grad, buf, decided_ts, out)
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
            losses = _floats(loss)
            out.extend(self._losses.step(step, losses, buf, groups, decided_ts, self.job,
                                         self.tenant, self.cluster))
            climb = sdc.loss_climb(self._loss_climb, step, losses, grad, float(buf.ts[0]),
                                   decided_ts, self.job, self.tenant, self.cluster)
            if climb is not None:
                out.append(climb)
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
        if count_nonzero(ok) == len(ok):
            # (every rank sent a compute_ms: no NaN; comm_ms too when the first did -- a
            # producer sends it or not; _check_host makes sure)
            return busy, None, buf.comm[0] is not None
        if count_nonzero(np.isnan(busy)):
            comm = _floats(buf.comm)
            if not np.isnan(comm).all():
                busy = _floats(buf.step_ms) - comm
                ok = busy >= _MIN_BUSY_MS
                if count_nonzero(ok) == len(ok):
                    return busy, None, False
        return busy, ok, False

    def _finding(self, rank: int, dp: int | None, signal: str, kind: str, cause: str, ts: float,
                 onset: float, active: bool, severity: float, evidence: dict[str, Any],
                 verdict: bool = True) -> Finding:
        slot = self._slot.get(rank)
        node, gpu = (self._hw[slot] if slot is not None else None) or ("?", 0)
        place = int(self._tp_pp[slot]) - 1 if slot is not None else -1
        tp, pp = (place & 0xFFFFFF, place >> 24) if place >= 0 else (None, None)
        return Finding(ts, onset, signal, kind, cause, Scope.of_gpu(node, gpu), active, verdict,
                       severity, evidence, self.job, self.tenant, self.cluster, rank, dp,
                       False, tp, pp)

    # Its other methods, a module a concern (see detector/steps/__init__.py): functions of those
    # modules bound here -- one class, one MRO, every lookup as when they stood here.
    from detector.steps.alone import (
        _mark_with_mates,
        _tell_alone,
    )
    from detector.steps.asynchronous import (
        _async_expire,
        _async_finding,
        _async_judge,
        _async_see,
        _async_withdraw,
    )
    from detector.steps.experts import (
        _experts_held,
        _experts_hold_rules,
        _experts_moving,
        _experts_node_runs,
        _experts_note,
        _experts_offsets_left,
    )
    from detector.steps.holds import (
        _alarmed_without_places,
        _alike_without,
        _gross_joiner,
        _gross_start,
        _hold_after_event,
        _hold_same_place,
        _hold_shared,
        _hold_wandering,
        _place_slow,
        _same_place,
        _settled,
        _slow_before,
        _slow_beside,
        _visiting,
        _z_now,
    )
    from detector.steps.host import (
        _check_host,
        _clear_lone,
        _host_at_event,
        _host_codes,
        _host_events,
        _host_evidence,
        _host_from_start,
        _host_grew,
        _host_page_after,
        _host_part,
        _host_rise,
        _host_rise_left,
        _host_rise_nodes,
        _host_rise_withdraw,
        _host_share,
        _host_share_reset,
        _host_share_withdraw,
        _host_trend,
        _host_units,
        _lone_from_start,
        _lone_unlasted,
        _note_episodes,
        _page_lone,
        _periodic,
        _reset_host,
    )
    from detector.steps.noise import (
        _ar_held,
        _ar_on,
        _ar_step,
        _clear_of_wander,
        _cold_steps,
        _excursion_held,
        _excursion_update,
        _fleet_held,
        _heavy,
        _lag1_read,
        _memory_read,
        _over_prior,
        _tail_update,
        _unmeasured,
        _wander_update,
    )
    from detector.steps.past import _past_gross_start, _past_update
    from detector.steps.phases import _check_tp_mates
    from detector.steps.ranks import (
        _afresh,
        _follow_hardware,
        _free_gone_slots,
        _grow,
        _layout_finding,
        _left_gpu,
        _note_offsets,
        _offsets_kept,
        _track_hardware,
        _unpark,
    )
    from detector.steps.replicas import (
        _one_node_replicas,
        _replica_common,
        _replica_elsewhere,
    )
    from detector.steps.rules import (
        _check_burst,
        _check_recurring,
        _check_sustained,
        _class_over,
        _gross_prior,
        _recur_chance,
        _reset_sustained,
        _rule_cleared,
        _sustained_alike,
    )
    from detector.steps.slow import (
        _beside_told,
        _check_slow,
        _check_slow_rules,
        _comparable,
        _grown_runs,
        _held_runs,
        _hold_after_snapshot,
        _host_up,
        _mates_pace,
        _most_of_node,
        _node_alarmed,
        _node_alike,
        _node_grown,
        _node_slow,
        _persistent,
        _quiet_stages,
        _reset_slow,
        _rule_finding,
        _slots_by_node,
        _stage_noise,
        _still_slow,
        _stirred,
        _untold_reference,
        _waited,
    )
    from detector.steps.twins import (
        _check_pair,
        _pair_steady,
        _twin_pick,
        _twin_pick_group,
        _twin_update,
    )
