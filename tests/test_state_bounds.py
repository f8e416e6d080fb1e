"""State stays bounded while a fleet churns: silent GPUs and nodes are forgotten, faulty ones later.

``unit_idle_s`` (1 h) after its last sample a healthy GPU's or node's monitors
are dropped, ``unit_fault_idle_s`` (24 h) when it raised a fault; a unit that
comes back starts afresh.  Through the service the correlator hears that a
node was forgotten, so escalations stop citing it as "seen".
"""

from __future__ import annotations

import math

import orjson

from detector.engine import Engine
from detector.events import ECC
from detector.pipeline.correlator import CorrelatorPartition
from detector.pipeline.source import SourcePartition
from detector.testing import T0, ecc, feed, nic, thermal
from detector.thresholds import Thresholds
from replay.sim.churn import churn_events

HOUR = 3600.0


def _hourly(cfg: Thresholds, hours: float) -> tuple[list[dict], list]:
    eng = Engine(cfg)
    rows, alerts = [], []
    next_hour = T0 + HOUR
    for ev in churn_events(hours=hours, nodes=2, gpus=2, nics=1, sample_s=120.0,
                           fault_every=6):
        if ev.ts >= next_hour:
            rows.append(eng.stats())
            next_hour += HOUR
        alerts += eng.process(ev)
    return rows, alerts


def test_a_churning_fleet_reaches_a_plateau_and_without_pruning_does_not() -> None:
    pruned, alerts = _hourly(Thresholds(), 32)
    kept, _ = _hourly(Thresholds(unit_idle_s=math.inf, unit_fault_idle_s=math.inf), 32)
    # after a day (faulty GPUs are kept that long) the state stops growing
    assert pruned[-1]["gpus"] <= pruned[25]["gpus"] + 1
    assert pruned[-1]["nodes_seen"] <= pruned[25]["nodes_seen"] + 1
    assert pruned[-1]["problems"] <= pruned[25]["problems"] + 1
    assert kept[-1]["gpus"] > 3 * pruned[-1]["gpus"]  # one new node every 10 minutes
    assert kept[-1]["gpus"] > kept[25]["gpus"] + 20
    # the latched XIDs of GPUs that left resolve after a day without telemetry
    gone = [a for a in alerts if a.status == "resolved" and a.cause != "unknown"
            and "resolved_because" in a.evidence]
    assert gone and all("no telemetry from" in a.evidence["resolved_because"] for a in gone)
    # a node leaving for good under a job that goes on elsewhere is no page (silent18: 188
    # silent-node escalations in 32 h before, 15 after: the simulator's job ending on the very
    # record its node leaves at; silent19: none -- the job's other GPUs went on to the next job)
    assert sum(a.kind == "unattributed" and a.status == "firing" for a in alerts) == 0


def test_a_silent_node_is_forgotten_and_comes_back_as_new() -> None:
    eng = Engine()
    feed(eng, [ecc(T0, "node-a", 0, dbe=3), thermal(T0, "node-a", 0),
               nic(T0, "node-a", "mlx5_0", tx=10**12, rx=10**12),
               ecc(T0, "node-b", 0)], finish=False)
    assert eng.was_seen("node-a", "nic")
    # node-b goes on reporting; node-a is silent for more than an hour
    feed(eng, [ecc(T0 + t, "node-b", 0) for t in range(60, int(2 * HOUR), 60)], finish=False)
    assert not any(eng.was_seen("node-a", s) for s in ("ecc", "thermal", "nic"))
    assert eng.was_seen("node-b", "ecc")
    assert eng.stats()["gpus"] == 1 and eng.stats()["nodes_with_nics"] == 0
    # back with the same cumulative counters: a baseline, not an increase (no DBE alert)
    back = feed(eng, [ecc(T0 + 2 * HOUR, "node-a", 0, dbe=3),
                      ecc(T0 + 2 * HOUR + 60, "node-a", 0, dbe=3)], finish=False)
    assert back == [] and eng.was_seen("node-a", "ecc")


def test_a_faulty_gpu_is_kept_a_day_so_its_reset_resolves_the_problem() -> None:
    eng = Engine()
    fired = feed(eng, [ecc(T0, "node-a", 0, sbe=50), ecc(T0 + 1, "node-a", 0, sbe=50, xid=79),
                       ecc(T0 + 2, "node-b", 0)], finish=False)
    assert [a.status for a in fired] == ["firing"]
    feed(eng, [ecc(T0 + t, "node-b", 0) for t in range(60, int(3 * HOUR), 60)], finish=False)
    assert eng.was_seen("node-a", "ecc")  # silent 3 h, but it had a fault
    # back after repair: the counters were reset with the GPU
    out = feed(eng, [ecc(T0 + 3 * HOUR + t, "node-a", 0, sbe=0) for t in range(0, 120, 10)],
               finish=False)
    assert [(a.status, a.scope.key) for a in out] == [("resolved", "gpu:node-a/0")]
    assert "resolved_because" not in out[0].evidence


def test_the_service_correlator_hears_that_a_node_was_forgotten() -> None:
    src = SourcePartition(ECC, 0, 1)
    corr = CorrelatorPartition(0, expected=[src.source])
    emits: list = []
    records = [(i, b"n", orjson.dumps(ev._asdict()), None) for i, ev in enumerate(
        [ecc(T0, "node-a", 0), *(ecc(T0 + t, "node-b", 0) for t in range(0, 7200, 300))])]
    src.process(records, 0.0, emits, [])
    kinds = [orjson.loads(e.value)["type"] for e in emits]
    assert kinds.count("seen") == 2 and kinds.count("forget") == 1
    forget = next(e for e in emits if b'"forget"' in e.value)
    assert forget.partition is None  # every correlator: the node's cluster is not known
    for offset, e in enumerate(emits):
        corr.on_message(offset, e.value, 0.0)
    assert not corr.was_seen("node-a", "ecc") and corr.was_seen("node-b", "ecc")
    assert corr.invalid == 0
