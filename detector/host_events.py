"""A node slow at every one of its job's host events (its checkpoint saves): a page.

A synchronous checkpoint save is a step every rank spends in neither compute nor collectives
(DESIGN: ``step_ms - compute_ms - comm_ms``, checkpoint I/O); the job's step ends with its
slowest writer, and every other rank waits for it in its next collective.  Each node writes its
own shards down its own storage path, so the nodes' save times are alike (blind14: 8-12 s each);
a node whose path is degraded -- its storage port retrained at a quarter of its rate, a failing
local disk -- takes two to three times as long at *every* save and is perfect between (blind14
N2: 19-38 s against 8-12 s, once every 40 steps).  :mod:`detector.host_time` smooths a node's
excess over ~16 steps and sees one step in 40 as noise; :mod:`detector.steps`' CUSUMs clip it.
The save steps are long by design -- the job's own step is no reference -- so the comparison is
made within the event: the node against the other nodes of its stage at the same step.

At each job-wide host event (detector.steps ``_host_events``: the job's median host share
``_EVENT_SHARE`` over its usual), a unit's host time (the lower median of its ranks', the units
of :mod:`detector.host_time`: a node's ranks of one stage and replica) is an outlier when it is
``RATIO`` times its stage's lower median of units or more, and its excess over that median costs
the job ``SHARE`` of its time since its previous event or more (a slow save that is not material
over the interval pages nobody).  A unit an outlier at ``EVENTS`` events in a row is a
``host_events`` finding (a verdict: the correlator escalates it at the node, slow_node/unknown,
as it does ``host_share``); it clears at the first event it is not.

What does not page: every node saving alike (the stage's reference moves with it); an async
checkpoint's write-back (compute, after the event; blind10 K3) or one node ending last at a
different node each time (not in a row); an evaluation pass, a batch ramp or a restart (every
rank's); one slow save (one event); the job's first event seen (no interval to judge it by).

>>> import numpy as np
>>> table = grow(np.zeros((0, NCOLS)), 4)
>>> u, stage = np.array([0, 0, 1, 1, 2, 2, 3, 3]), np.zeros(4)
>>> found = []
>>> for k in range(5):                           # a save every 60 s, 10 s on every node ...
...     host = np.full(8, 10_000.0)
...     host[2:4] = 27_000.0                     # ... but 27 s on the second one
...     found += [(k, i, up) for i, up, at in judge(table, u, stage, host, 60.0 * k, 60.0)]
>>> found                                        # raised at its third slow save
[(2, 1, True)]
>>> host[2:4] = 11_000.0                         # its path repaired: cleared at the next save
>>> judge(table, u, stage, host, 300.0, 60.0)
[(1, False, 300.0)]
"""

from __future__ import annotations

from typing import Any

import numpy as np

from detector.host_time import MAX_HOST_MS, MAX_UNITS, _lower_medians

RATIO = 1.5     # a save half again as long as its stage's usual writer's: the node's path at
#                 two thirds of the others' bandwidth, past the spread of nodes writing equal
#                 shards (blind14's healthy saves: 0.76-1.11x their median)
SHARE = 0.02    # and the excess this share of the job's time since its last event
EVENTS = 3      # outlier at this many events in a row: raised
# A unit's row: outlier events in a row, raised (1.0) or not, ts of the first outlier event of
# the run, its latest ratio to its stage and its excess (ms), the events judged.
RUN, RAISED, FROM, RATIO_AT, EXCESS_MS, SEEN = range(6)
NCOLS = 6


def grow(table: np.ndarray, n: int) -> np.ndarray:
    """``table`` with rows for units up to ``n`` (new ones: no run)."""
    old = len(table)
    if n <= old:
        return table
    return np.concatenate([table, np.zeros((n - old, NCOLS))])


def judge(table: np.ndarray, units: np.ndarray, stages: np.ndarray, host_ms: np.ndarray,
          ts: float, since_s: float) -> list[tuple[int, bool, float]]:
    """One job-wide host event: each rank's unit (-1, -2: none), each unit's stage, each rank's
    host time (ms), the event's ts and the time since the job's previous event (inf: none
    seen); returns the units raised (True, with their run's first ts) or cleared (False)."""
    ok = units >= 0
    if not ok.all():
        units, host_ms = units[ok], host_ms[ok]
    if len(units) < 4 or not since_s > 0.0:
        return []
    uid, val, size = _lower_medians(np.clip(host_ms, 0.0, MAX_HOST_MS), units)
    two = size >= 2  # (a unit of one rank: its own shard, not a node's path)
    uid, val = uid[two].astype(np.intp), val[two]
    if len(uid) < 2:
        return []
    stage = stages[uid]
    sid, ref, n = _lower_medians(val, stage)
    at = np.searchsorted(sid, stage)
    ref, n = ref[at], n[at]
    excess = val - ref
    out_now = ((n >= 2) & (val >= RATIO * ref) & (excess > 0.0)
               & (excess >= SHARE * 1000.0 * since_s))
    rows = table[uid]
    rows[:, SEEN] += 1.0
    first = out_now & (rows[:, RUN] == 0.0)
    rows[first, FROM] = ts
    rows[:, RUN] = np.where(out_now, rows[:, RUN] + 1.0, 0.0)
    rows[:, RATIO_AT] = np.where(ref > 0.0, val / np.maximum(ref, 1e-9), 1.0)
    rows[:, EXCESS_MS] = excess
    found: list[tuple[int, bool, float]] = []
    up = out_now & (rows[:, RUN] >= EVENTS) & (rows[:, RAISED] == 0.0)
    down = ~out_now & (rows[:, RAISED] != 0.0)
    for i in np.flatnonzero(up).tolist():
        found.append((int(uid[i]), True, float(rows[i, FROM])))
    for i in np.flatnonzero(down).tolist():
        found.append((int(uid[i]), False, ts))
    rows[up, RAISED] = 1.0
    rows[down, RAISED] = 0.0
    table[uid] = rows
    return found


def evidence(node: str, row: np.ndarray, since_s: float) -> dict[str, Any]:
    """What a raised unit's finding says."""
    return {
        "signal": "host_events", "basis": "host_time",
        "slow_events_in_a_row": int(row[RUN]),
        "host_ratio_to_stage": round(float(row[RATIO_AT]), 3),
        "host_excess_ms": round(float(row[EXCESS_MS]), 1),
        "since_previous_event_s": round(since_s, 1),
        "rule": (f"at each of the job's last {int(row[RUN])} host events (steps every rank "
                 "spends in neither compute nor collectives: checkpoint saves) its ranks' time "
                 f"in neither was >= {RATIO:.2f}x its stage's other nodes' and cost >= "
                 f"{SHARE:.0%} of the job's time since the event before: its storage or host "
                 "path, not the job's save"),
        "next_diagnostic": (
            f"on {node}: the checkpoint storage path (the frontend NIC's link rate: `ethtool` "
            "on the storage interface; `iostat -x 5` and `nvme smart-log` on a local disk; the "
            "filesystem client's write throughput, e.g. `fio --rw=write` to the checkpoint "
            "directory against another node's)"),
    }


def check_restored(table: Any) -> bool:
    """Whether a restored job's table has this module's shape and bounds."""
    return (isinstance(table, np.ndarray) and table.dtype == np.float64 and table.ndim == 2
            and table.shape[1] == NCOLS and len(table) <= MAX_UNITS
            and bool(np.isfinite(table).all()))
