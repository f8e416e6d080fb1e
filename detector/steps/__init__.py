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

Where things are: a module a concern, its functions the JobMonitor's methods (bound in
its class body, detector/steps/job.py), their state the JobMonitor's (made in its
``__init__``):

- ``job``: :class:`JobMonitor` -- its state, the step messages in, restarts, a step's
  evaluation;
- ``ranks``: slots, ranks moved to other hardware, learned start offsets;
- ``slow``: the step CUSUMs and the slow-rank rules' judgement of one step;
- ``holds``: slow ranks taken back on the step they were found (events, places);
- ``noise``: the job's noise -- wandering, lag-1, its tail, cold starts;
- ``twins``: a rank against its twins, and jobs of two ranks;
- ``replicas``: replica-wide slowness, and a replica slow against the other;
- ``rules``: warm-up, burst, recurring and sustained stragglers;
- ``host``: a rank or a node late by its host path;
- ``alone``: a rank told slow with its node's others, told again slow alone once they are
  back at their pace (the correlator narrows a node's page to its GPU on it);
- ``phases``: a rank against its TP group's lockstep mates, where the job's steps spread too
  widely for its peers' CUSUM (RL rollout engines, each round ending at its batch's longest
  answer);
- ``asynchronous``: a job whose steps no two ranks share (asynchronous data parallelism): its
  workers compared over time windows;
- ``common``: the step buffer and what several of these read;
- detector.step_numerics: gradient norms, overflows and checksums (SDC).
"""

# ruff: noqa: F401
# (every name the old module defined, for whoever imports it from here)

import math

from detector.events import NonFinite, StepSample
from detector.findings import Finding
from detector.steps.common import (
    _AFTER_EVENT_RATIO,
    _AFTER_EVENT_S,
    _ARANGES,
    _BESIDE_Z,
    _CHECKSUM,
    _CLEARLY_SLOW_Z,
    _COMM,
    _COMPUTE,
    _DONE_KEPT,
    _DP,
    _FIELD,
    _FISHER_ALPHA,
    _FLOAT64,
    _GONE_CHECK_STEPS,
    _GONE_STEPS,
    _GPU,
    _GRAD,
    _GROSS_MARGIN,
    _GROSS_MARGIN_Z,
    _GROWN_MARGIN,
    _GROWN_STEPS,
    _HEAVY_EDGE,
    _HEAVY_EFFECT,
    _HEAVY_EPISODE_Z,
    _HEAVY_KNOWN,
    _HEAVY_SHARE,
    _HEAVY_STEPS,
    _HEAVY_SURE,
    _HEAVY_TRAIL,
    _INT64,
    _LATE_ONLY,
    _LOSS,
    _MAX_RANK,
    _MIN_BUSY_MS,
    _NODE,
    _NODE_ALARMED,
    _PACKERS,
    _PARKED_KEPT,
    _PLACE_MARGIN,
    _PLACE_NODES,
    _PLACE_NOW,
    _PLACE_SHARE,
    _PP,
    _RANK,
    _RECENT,
    _REPLICA_APART_Z,
    _SAVE_GAP_STEPS,
    _SHARED_PEERS,
    _SHARED_SHARE,
    _SLOT_ARRAYS,
    _SPLIT_ALPHA,
    _SPLIT_EVERY,
    _SPLIT_LOOKS,
    _SPLIT_RATIO,
    _STEP_MS,
    _TAIL_ALPHA,
    _TAIL_EDGES,
    _TAIL_FLOOR,
    _TAIL_STEPS,
    _TOLD_OUT,
    _TP,
    _TP_LOCKED,
    _TS,
    _TWIN_CORR,
    _TWIN_EVERY,
    _TWIN_FIRST,
    _TWIN_GROUP_MAX,
    _TWIN_MAX,
    _TWIN_MIN,
    _TWIN_WINDOW,
    _WANDER_ALONE,
    _WANDER_GROSS_NODES,
    _WANDER_HOLD_STEPS,
    _WANDER_LONG,
    _WANDER_MEAN_ALPHA,
    _WANDER_MIN_EFFECT,
    _WANDER_MIN_STEPS,
    _WANDER_NODES,
    _WANDER_NODES_KEPT,
    _WANDER_OFF,
    _WANDER_ON,
    _WANDER_PLACE_STEPS,
    _WANDER_READY_STEPS,
    _WANDER_SHORT,
    _WANDER_VAR,
    _arange,
    _dp_array,
    _floats,
    _ints,
    _packer,
    _smoothed,
    _StepBuffer,
)
from detector.steps.holds import (
    _holdable,
)
from detector.steps.host import (
    _EVENT_SHARE,
    _HOST_GROWN,
    _HOST_GROWN_FROM,
    _PART_LEARNT,
    _START_KEPT,
    _START_PART_STEPS,
    _START_SLACK,
    _START_STEPS,
)
from detector.steps.job import (
    _FIELDS,
    _MAJORITIES_KEPT,
    _PARTIAL_KEPT,
    _SLOT_WIDTH,
    STOPPED_QUIET_S,
    JobMonitor,
    _checked_below,
    _count,
    _cusum,
    _is_str,
    _num,
    _nums,
    _parked_ok,
    _split_ok,
    _step_buffer,
    _step_record,
    _str_or_none,
)
from detector.steps.noise import (
    _COLD_FALL_Z,
    _tail_light,
)
from detector.steps.replicas import (
    replica_split,
)
from detector.steps.rules import (
    _GROSS_NOISE_Z,
    _RECUR_CHANCE,
    _SUS_ALPHA,
    _SUS_CLEAR_Z,
    _SUS_EVERY,
    _SUS_GATE,
    _SUS_MIN_N,
    _SUS_SPREAD,
    _SUS_Z,
    _binomial_tail,
    _others_lower_median,
)
from detector.steps.slow import (
    _FISHER,
    _gamma_tail_quantile,
    _peer_centred,
)
from detector.steps.twins import (
    _PAIR_GROSS_STEPS,
    _PAIR_RATIO,
    _PAIR_STEADY,
    _PAIR_STEPS,
    _PAIR_WAIT_SHARE,
    _TWIN_ALPHA,
    _TWIN_BASE_ALPHA,
    _TWIN_Z,
    _correlations,
    _row_nanmedians,
)
from detector.thresholds import Thresholds
