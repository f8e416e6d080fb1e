"""hard40 (round 40, issues 10 and 14): round 39's loose ends in state and clusters.

1. A restored snapshot's *finite* far-future time (year 2100 in a clock, a watermark, a GPU's
   newest sample) passed svc39's checks (``is_time``: not NaN, not +inf) and blinded what it
   held -- every later record late.  Each restored time is now held to the restoring worker's
   wall clock + MAX_AHEAD_S (without one, to the state's own clock), deadlines to a day past
   that; GpuHealth's SBE rate (a RisingRate) was restored on its type alone.
2. CorrelatorPartition._cluster_of kept a node gone for a day for ever (bounded only at
   65,536 nodes): it goes now with the node's other state.
3. A node whose *first* row is an XID without ``cluster`` was paged under a key naming none,
   then again under its cluster's when its later rows named it: one fault, two pages.
"""

from __future__ import annotations

import math
from typing import Any

import pytest

from detector.engine import Engine
from detector.events import THERMAL, EccSample
from detector.pipeline.correlator import CorrelatorPartition
from detector.pipeline.source import SourcePartition
from detector.statecodec import UNSIGNED, SnapshotRefused
from detector.testing import T0, ecc, feed, healthy_job, nic, thermal
from models.decay import DecayingCount
from models.rising import RisingRate

NODE = "node-000"
YEAR_S = 365.25 * 86_400.0
Y2100 = T0 + 74 * YEAR_S  # (T0 is 2026-01-01)


def _refused(eng: Engine, what: str) -> None:
    with pytest.raises(SnapshotRefused) as exc:
        Engine.restore(eng.snapshot())
    assert exc.value.reason == "malformed"
    assert what in str(exc.value)


# -- 1a. GpuHealth's SBE rate: restored on its type alone ------------------------------------


def _sbe_samples(start: int, stop: int) -> list[Any]:
    """GPU 1 of node-000 at 10 s polls: corrected errors at a steady trickle, then climbing
    (a failing HBM stack: paged sbe_rising), GPU 0 clean."""
    out = []
    total = 0
    for k in range(start, stop, 10):
        for g in (0, 1):
            if g == 1:
                total = sum(2 if t < 300 else 2 * 1.6 ** ((t - 300) // 60) for t in range(
                    0, k + 1, 10))
            out.append(ecc(T0 + k, NODE, g, sbe=int(total) if g == 1 else 0))
    return out


def _sbe_engine(cut: int) -> tuple[Engine, RisingRate]:
    eng = Engine()
    feed(eng, _sbe_samples(0, cut), finish=False)
    rise = eng.monitors._ecc[(NODE, 1)]._sbe_rise
    assert type(rise) is RisingRate and rise.running  # (live: a run with bins)
    return eng, rise


def _history(half_life_s: float, value: float) -> DecayingCount:
    d = DecayingCount(half_life_s)
    d._value = value
    return d


RISE_FORGED = [
    ("bin_s", 0.0), ("bin_s", -50.0), ("bin_s", math.inf), ("bins", 0), ("bins", 3.0),
    ("events", -1.0), ("step", 0.0), ("z", math.nan), ("history_factor", math.inf),
    ("_edges", [T0 + 100.0, T0]), ("_edges", [math.inf]), ("_edges", "T0"),
    ("_counts", [-1]), ("_counts", [1, 2, 3, 4, 5]), ("_open", -1), ("_lead", -2),
    ("_last_ts", math.inf), ("_first_ts", math.inf), ("_changed_ts", math.nan),
    ("_history", _history(0.0, 1.0)), ("_history", 3.0),
]


@pytest.mark.parametrize(("field", "value"), RISE_FORGED, ids=lambda v: repr(v)[:24])
def test_a_forged_sbe_rate_is_refused(field: str, value: Any) -> None:
    # All fail before: GpuHealth's FIELDS checked `_sbe_rise` by its type only (a zero bin
    # divided by zero on the GPU's next reading; unsorted edges, a negative count, a +inf
    # time restored as they were).
    eng, rise = _sbe_engine(420)
    setattr(rise, field, value)
    _refused(eng, "GpuHealth._sbe_rise")


def test_an_sbe_rate_of_mismatched_bins_is_refused() -> None:
    eng, rise = _sbe_engine(420)
    rise._counts = [*rise._counts, 5]  # (one count more than the edges close)
    _refused(eng, "GpuHealth._sbe_rise")


@pytest.mark.parametrize("cut", [360, 420, 480])
def test_a_real_snapshot_of_a_climbing_sbe_rate_restores_and_pages_the_same(cut: int) -> None:
    straight = feed(Engine(), _sbe_samples(0, 900))
    assert any(a.status == "firing" and a.scope.key == f"gpu:{NODE}/1" for a in straight)
    eng, _ = _sbe_engine(cut)
    before = feed(eng, [], finish=False)
    got = feed(Engine.restore(eng.snapshot()), _sbe_samples(cut, 900))
    assert before + got == straight


# -- 1b. a finite far-future time --------------------------------------------------------------


def _mixed(start: int, stop: int) -> list[Any]:
    """A 16-rank job (rank 3 1.3x slow from step 30) beside its nodes' thermal, ECC and NIC
    rows at 5 s."""
    out: list[Any] = [e for e in healthy_job(steps=120, slow={3: 1.3}, slow_from=30)
                      if start <= e.step < stop]
    for k in range(start, stop, 5):
        for node in ("node-000", "node-001"):
            out += [thermal(T0 + k, node, g) for g in range(8)]
            out += [ecc(T0 + k, node, g) for g in range(8)]
            out.append(nic(T0 + k, node, "mlx5_0", tx=k * 10**9, rx=k * 10**9))
    return sorted(out, key=lambda e: e.ts)


def _mixed_engine() -> Engine:
    eng = Engine()
    feed(eng, _mixed(0, 60), finish=False)
    return eng


def _job(eng: Engine) -> Any:
    return eng.monitors._jobs["job-1"]


def _port(eng: Engine) -> Any:
    return next(iter(eng.monitors._nics[NODE]._ports.values()))


FAR_FORGED = [  # (what holds it, field, the name the refusal gives)
    (lambda e: e.monitors._thermal[(NODE, 2)], "_last_ts", "GpuThermal._last_ts"),
    (_job, "clock", "JobMonitor.clock"),
    (_job, "_last_step_ts", "JobMonitor._last_step_ts"),
    (lambda e: e.monitors._ecc[(NODE, 1)], "_sbe_ts", "GpuHealth._sbe_ts"),
    (_port, "last_ts", "NicPort.last_ts"),
    (lambda e: e.monitors._node_temps[NODE], "median_ts", "NodeTemps.median_ts"),
    (lambda e: e.monitors, "_next_prune", "Monitors._next_prune"),
    (_job, "_next_expire", "JobMonitor._next_expire"),
    (lambda e: e.correlator, "_clock", "correlator._clock"),
    (lambda e: e.correlator, "_next_prune", "correlator._next_prune"),
    (lambda e: e.stage, "released", "released"),
]


@pytest.mark.parametrize(("holder", "field", "name"), FAR_FORGED,
                         ids=[f[2] for f in FAR_FORGED])
def test_a_finite_far_future_time_is_refused(holder: Any, field: str, name: str) -> None:
    # All fail before (svc39's is_time takes any finite number): a GPU's newest sample at
    # 2100 took every later sample of it as late, a job's clock every step, the correlator's
    # clock every finding -- blind until 2100.
    eng = _mixed_engine()
    setattr(holder(eng), field, Y2100)
    _refused(eng, name)


def test_a_watermark_far_ahead_of_the_source_is_refused() -> None:
    eng = _mixed_engine()
    next(iter(eng.stage.sources.values())).wm = Y2100
    _refused(eng, "sources: a watermark")


def test_a_deadline_within_a_day_restores() -> None:
    """A prune an hour ahead is what the live code sets: not a far-future time."""
    eng = _mixed_engine()
    eng.monitors._next_prune = eng.clock + 3_600.0
    Engine.restore(eng.snapshot())


WALL = T0 + 60.0


def _thermal_partition() -> SourcePartition:
    part = SourcePartition(THERMAL, 0, 1, wall_clock=lambda: WALL)
    import orjson

    raws = [orjson.dumps({"ts": T0 + k, "node": f"node-{k % 3}", "gpu": 0, "gpu_temp_c": 65.0,
                          "power_w": 500.0, "sm_clock_mhz": 1980.0, "throttle": 0})
            for k in range(20)]
    part.process([(i, b"k", r, None) for i, r in enumerate(raws)], WALL, [], [])
    return part


def test_a_partition_clock_far_past_the_wall_clock_is_refused() -> None:
    # Fails before: the whole state at 2100 (its clock and every GPU's newest sample agree),
    # restored by a worker whose wall clock says 2026 -- every live record late.
    part = _thermal_partition()
    mon = part.monitors
    mon.clock = Y2100
    for m in mon._thermal.values():
        m._last_ts = Y2100
    offset, blob = part.snapshot(UNSIGNED)
    with pytest.raises(SnapshotRefused) as exc:
        SourcePartition.restore(THERMAL, 0, 1, offset, blob, wall_clock=lambda: WALL)
    assert "Monitors.clock" in str(exc.value)
    # (the live state restores, its clock within the wall clock's reach)
    offset, blob = _thermal_partition().snapshot(UNSIGNED)
    back = SourcePartition.restore(THERMAL, 0, 1, offset, blob, wall_clock=lambda: WALL)
    assert back.monitors.clock == T0 + 19


def test_a_findings_partition_far_past_the_wall_clock_is_refused() -> None:
    corr = CorrelatorPartition(0, now=T0)
    corr.released = corr.correlator._clock = Y2100
    offset, blob = corr.snapshot(UNSIGNED)
    CorrelatorPartition.restore(0, offset, blob, now=T0)  # (no wall clock: consistent)
    with pytest.raises(SnapshotRefused) as exc:
        CorrelatorPartition.restore(0, offset, blob, now=T0, wall_clock=lambda: WALL)
    assert "correlator._clock" in str(exc.value)


def test_the_worker_holds_a_findings_snapshot_to_its_wall_clock() -> None:
    from detector.pipeline.worker import PipelineWorker

    w = PipelineWorker(telemetry_topics={THERMAL: THERMAL}, findings_topic="findings",
                       findings_partitions=1, expected_sources=[f"{THERMAL}:0"],
                       wall_clock=lambda: WALL)
    corr = CorrelatorPartition(0, now=T0)
    corr.released = Y2100
    offset, blob = corr.snapshot(UNSIGNED)
    with pytest.raises(SnapshotRefused):
        w.restore_partition(("findings", 0), offset, blob, 0.0)


@pytest.mark.parametrize("cut", [30, 45])
def test_a_real_mixed_snapshot_restores_and_pages_the_same(cut: int) -> None:
    straight = feed(Engine(), _mixed(0, 120))
    assert any(a.status == "firing" and a.scope.gpu == 3 for a in straight)
    eng = Engine()
    before = feed(eng, _mixed(0, cut), finish=False)
    got = feed(Engine.restore(eng.snapshot()), _mixed(cut, 120))
    assert before + got == straight


# -- 2 and 3. a node's cluster ---------------------------------------------------------------


def _ecc_c(ts: float, node: str, gpu: int, cluster: str | None, *, dbe: int = 0,
           xid: int | None = None) -> EccSample:
    return EccSample(ts, node, gpu, 0, dbe, 0, dbe, False, False, xid, 0, 0, 0, 0, "none",
                     cluster=cluster)


def _run(eng: Engine, evs: list[Any]) -> list[Any]:
    alerts = []
    for ev in evs:
        alerts += eng.process(ev)
    return alerts


def _east(start: float, n: int, node: str = "gpu-001") -> list[Any]:
    return [_ecc_c(start + 10 * k, node, g, "east") for k in range(n) for g in range(8)]


def test_a_node_whose_first_row_is_an_xid_without_cluster_is_paged_once() -> None:
    """Fails before: fl:iso:hardware:gpu:gpu-004/3 on the XID (the node's cluster unknown),
    then fl:east:iso:hardware:gpu:gpu-004/3 on its DBE rows naming east -- two pages.  (Since
    key43 the XID row is the home's, east, at once -- the source's monitors took it there --:
    both under east's key; hard40 kept both unnamed, ``_HOME``, which now stands only for a
    node paged before any home was known: test below.)"""
    eng = Engine()
    assert _run(eng, _east(1_000.0, 6)) == []
    alerts = _run(eng, [_ecc_c(1_065.0, "gpu-004", 3, None, xid=94)])
    assert [a.dedup_key for a in alerts] == ["fl:east:iso:hardware:gpu:gpu-004/3"]
    later = [_ecc_c(1_066.0 + 10 * k, "gpu-004", g, "east", dbe=int(g == 3 and k > 0))
             for k in range(4) for g in range(8)]
    alerts += _run(eng, later) + eng.finish()
    assert {a.dedup_key for a in alerts if a.status == "firing"} == {
        "fl:east:iso:hardware:gpu:gpu-004/3"}


def test_a_node_paged_before_any_cluster_was_named_keeps_its_unnamed_key() -> None:
    """hard40's rule where no home is known yet: the stream's first rows name no cluster, an
    XID pages gpu-004 under no cluster's key, then its rows (and the fleet's) name east."""
    eng = Engine()
    alerts = _run(eng, [_ecc_c(1_000.0 + 10 * k, "gpu-004", g, None)
                        for k in range(6) for g in range(8)])
    alerts += _run(eng, [_ecc_c(1_065.0, "gpu-004", 3, None, xid=94)])
    assert [a.dedup_key for a in alerts] == ["fl:iso:hardware:gpu:gpu-004/3"]
    later = [_ecc_c(1_066.0 + 10 * k, node, g, "east", dbe=int(node == "gpu-004" and g == 3
                                                             and k > 0))
             for k in range(4) for node in ("gpu-001", "gpu-004") for g in range(8)]
    alerts += _run(eng, later) + eng.finish()
    assert {a.dedup_key for a in alerts if a.status == "firing"} == {
        "fl:iso:hardware:gpu:gpu-004/3"}
    assert eng.stage.cluster_moves >= 1


def test_a_node_whose_rows_name_its_cluster_first_keeps_it() -> None:
    """Pin (clu39): rows naming east before the XID row without one -- east's key."""
    eng = Engine()
    _run(eng, _east(1_000.0, 6) + _east(1_000.0, 2, node="gpu-004"))
    alerts = _run(eng, [_ecc_c(1_065.0, "gpu-004", 3, None, xid=94)])
    assert [a.dedup_key for a in alerts] == ["fl:east:iso:hardware:gpu:gpu-004/3"]


def test_a_node_gone_for_a_day_forgets_its_cluster() -> None:
    """Fails before: gpu-004's entry stayed (bounded only at MAX_NODE_CLUSTERS nodes)."""
    eng = Engine()
    _run(eng, _east(1_000.0, 3) + _east(1_000.0, 3, node="gpu-004"))
    assert eng.stage._cluster_of.get("gpu-004") == "east"
    # gpu-001 reports on for 2.5 hours; gpu-004 is gone (its monitors forgotten after an hour)
    _run(eng, [_ecc_c(1_100.0 + 200 * k, "gpu-001", 0, "east") for k in range(45)])
    assert "gpu-004" not in eng.stage._cluster_of
    assert eng.stage._cluster_of.get("gpu-001") == "east"
    assert set(eng.stage._cluster_at) == set(eng.stage._cluster_of)


def test_a_node_with_a_firing_fault_keeps_its_cluster() -> None:
    """Its latched XID waits for the GPU's reset (or unit_fault_idle_s, a day): its rows
    without `cluster` must still find east's problem when it comes back."""
    eng = Engine()
    _run(eng, _east(1_000.0, 3) + _east(1_000.0, 3, node="gpu-004"))
    _run(eng, [_ecc_c(1_040.0, "gpu-004", 3, "east", xid=79)])
    _run(eng, [_ecc_c(1_100.0 + 200 * k, "gpu-001", 0, "east") for k in range(45)])
    assert eng.stage._cluster_of.get("gpu-004") == "east"
    alerts = _run(eng, [_ecc_c(10_100.0, "gpu-004", 3, None, xid=79)])
    assert {a.dedup_key for a in alerts} <= {"fl:east:iso:hardware:gpu:gpu-004/3"}


def test_the_nodes_times_survive_a_snapshot() -> None:
    eng = Engine()
    _run(eng, _east(1_000.0, 3))
    back = Engine.restore(eng.snapshot())
    assert back.stage._cluster_at == eng.stage._cluster_at
    state = UNSIGNED.decode(eng.snapshot(), "engine")
    state["correlator"]["cluster_at"] = {"gpu-001": Y2100 + 10 * YEAR_S}
    with pytest.raises(SnapshotRefused):
        Engine.restore(UNSIGNED.encode(state, "engine"))
    del state["correlator"]["cluster_at"]  # (a snapshot of round 39: as of its clock)
    back = Engine.restore(UNSIGNED.encode(state, "engine"))
    assert set(back.stage._cluster_at) == {"gpu-001"}


# -- 5. a cohort's clock policy (blind30 F3) ------------------------------------------------


def _cohort(low_nodes: tuple[int, ...], clock_low: float, slow: float) -> list[tuple]:
    """Eight nodes of 8 GPUs, one 64-rank job; ``low_nodes``' GPUs busy at ``clock_low``
    with no clock-event reason (the others at 1,980 MHz) and their ranks ``slow`` times
    their peers' compute from step 40."""
    ranks = {r: slow for n in low_nodes for r in range(n * 8, n * 8 + 8)}
    evs: list[Any] = list(healthy_job(ranks=64, steps=150, slow=ranks, slow_from=40))
    for k in range(0, 150, 5):
        for n in range(8):
            clock = clock_low if n in low_nodes else 1980.0
            evs += [thermal(T0 + k, f"node-{n:03d}", g, clock_mhz=clock, power_w=650.0)
                    for g in range(8)]
    evs.sort(key=lambda e: e.ts)
    return [(a.topic.split(".")[1], a.cause, a.scope.key)
            for a in feed(Engine(), evs) if a.status == "firing"]


def test_two_nodes_at_a_cohorts_lower_clock_page_nobody() -> None:
    # Fails before: both escalated slow_node/unknown (blind30 F3's shape: 1,845 MHz against
    # 1,980, no reason bit, their ranks 6 % slow -- within the clock's 7 % share).
    assert _cohort((2, 3), 1845.0, 1.06) == []


@pytest.mark.parametrize(("low", "clock", "slow", "pages"), [
    ((2,), 1845.0, 1.06, [("escalation", "unknown", "node:node-002")]),  # one node: no cohort
    ((2, 3), 1845.0, 1.15, [("escalation", "unknown", "node:node-002"),  # beyond its clock
                            ("escalation", "unknown", "node:node-003")]),
    ((2, 3), 1700.0, 1.08, [("isolation", "software", "node:node-002"),  # held: clu39's
                            ("isolation", "software", "node:node-003")]),
    ((2, 3), 1980.0, 1.06, [("escalation", "unknown", "node:node-002"),  # no clock lost
                            ("escalation", "unknown", "node:node-003")]),
], ids=["alone", "beyond-its-clock", "held", "no-clock-loss"])
def test_guard_what_a_clock_policy_does_not_explain(low: tuple[int, ...], clock: float,
                                                    slow: float, pages: list) -> None:
    assert _cohort(low, clock, slow) == pages
