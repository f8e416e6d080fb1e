"""key45 (round 45, issue 10): two sites in one stream -- a row naming no ``cluster`` is its
node's, and a node is the cluster its named records say (revA44 F1a/F1b).

DESIGN makes ``cluster`` optional.  key43 keyed a row without it of a node no row had named yet
the home's (the source's home monitors took it) and kept that: in a stream of two sites whose
DCGM rows name none, east's node was named the home (west) from its first unnamed row -- its
GPU's power cap, under west, no longer explained its slow rank, under east (escalated unknown),
and its XID row without ``cluster`` then with it paged twice (fl:west:..., fl:east:...).

Now (CorrelatorPartition.cluster_of / _claimed) a node's first step record naming a cluster
tells the correlator where the node runs (a ``steps`` notice, seen till its step name is
dropped); an unnamed row takes its node's known cluster, the home only for a node no named
record has claimed; a node keyed the home by its unnamed rows alone moves when a record names
another cluster -- unless the home's correlator holds a signal of it (a page made): its
findings then stay home under one key till the home lets it go.
"""

from __future__ import annotations

import orjson
import pytest
from msgspec.structs import replace

from detector.engine import Engine
from detector.events import ECC, STEP, THERMAL
from detector.findings import SeenMessage, decode_message
from detector.pipeline.worker import PipelineWorker
from detector.testing import T0, ecc, feed, thermal
from detector.thresholds import Thresholds
from tests.test_revA44 import CLOCK, _dp_job


def _sites(fault: str, *, west_t0: float = 0.0, east_t0: float = 10.0, dcgm_t0: float = 0.5,
           xid_t: float = 150.0, dcgm: bool = True) -> list:
    """tests/test_revA44's _two_sites with its times free: west's job (node-100/101, every
    record named west) from T0 + ``west_t0``; east's node-000/001 DCGM rows naming no cluster
    every 10 s from T0 + ``dcgm_t0`` (``dcgm``), its job's step records naming east from
    T0 + ``east_t0`` (190 steps).  ``fault``: "xid" -- node-000 GPU 3's XID 79 on a row without
    ``cluster`` at ``xid_t`` and one with it 1 s later; "cap" -- its rank 3 12 % slow from
    step 120, its GPU capped (0x4, clock -11 %, 480 W) from then."""
    west = [replace(e, cluster="west", node=e.node.replace("node-0", "node-1"))
            for e in _dp_job(steps=200, job="wjob", seed=5, t0=T0 + west_t0)]
    east = [replace(e, cluster="east") for e in _dp_job(
        steps=190, job="ejob", seed=6, t0=T0 + east_t0,
        slow={3: (1.12, 120)} if fault == "cap" else None)]
    rows = []
    for k in range(int((east_t0 + 190) // 10) if dcgm else 0):
        for n in range(2):
            for g in range(8):
                t = T0 + dcgm_t0 + 10 * k + 0.01 * g
                capped = fault == "cap" and (n, g) == (0, 3) and t >= T0 + east_t0 + 120
                rows.append(thermal(t, f"node-{n:03d}", g, throttle=0x4 if capped else 0,
                                    clock_mhz=CLOCK / 1.12 if capped else CLOCK,
                                    power_w=480.0 if capped else 640.0))
    if fault == "xid":
        rows += [ecc(T0 + xid_t, "node-000", 3, xid=79),
                 replace(ecc(T0 + xid_t + 1, "node-000", 3, xid=79), cluster="east")]
    return sorted([*west, *east, *rows], key=lambda e: e.ts)


def _firing(alerts) -> list[tuple[str, str]]:
    return [(a.dedup_key, a.cause) for a in alerts if a.status == "firing"]


# (west_t0, east_t0, dcgm_t0): the DCGM rows first, before any home is known (revA44's); west
# first and the DCGM rows after it, before east's steps (the node keyed west, then claimed --
# fails on main: escalated unknown); east's steps before west's (east home); the DCGM rows
# after east's steps began.
SHAPES = [(0.0, 10.0, 0.5), (0.0, 10.0, 5.0), (2.0, 10.0, 5.0), (15.0, -5.0, 0.5),
          (0.0, 10.0, 20.5)]


@pytest.mark.parametrize(("west_t0", "east_t0", "dcgm_t0"), SHAPES)
def test_an_unnamed_cap_of_a_node_its_steps_name_explains_its_slow_rank(
        west_t0: float, east_t0: float, dcgm_t0: float) -> None:
    eng = Engine()
    alerts = feed(eng, _sites("cap", west_t0=west_t0, east_t0=east_t0, dcgm_t0=dcgm_t0),
                  finish=False)
    assert _firing(alerts) == [("fl:east:iso:slow_node:gpu:node-000/3", "power")]
    assert eng.stage._cluster_of["node-000"] == "east"


@pytest.mark.parametrize(("west_t0", "east_t0", "dcgm_t0"), SHAPES)
def test_an_unnamed_xid_of_a_node_its_steps_name_is_paged_once_under_theirs(
        west_t0: float, east_t0: float, dcgm_t0: float) -> None:
    alerts = feed(Engine(), _sites("xid", west_t0=west_t0, east_t0=east_t0, dcgm_t0=dcgm_t0),
                  finish=False)
    assert sorted({k for k, _ in _firing(alerts)}) == ["fl:east:iso:hardware:gpu:node-000/3"]


def test_a_node_keyed_home_by_its_unnamed_rows_moves_when_its_steps_name_another() -> None:
    """Fails on main (west's key): node-000's DCGM rows come after west's first record and
    10 s before east's steps; its XID at 150 s is east's."""
    eng = Engine()
    alerts = feed(eng, _sites("xid", dcgm_t0=5.0), finish=False)
    assert _firing(alerts) == [("fl:east:iso:hardware:gpu:node-000/3", "gpu_hardware")]
    stage = eng.stage
    assert stage.cluster_claims == 2 and not stage._defaulted  # (node-000 and node-001)
    # what the home's correlator was told of their telemetry went with them (and its XID's)
    assert "node-000" not in stage._seen and stage.others["east"][1]["node-000"] == {
        "thermal", "steps", "ecc"}
    assert stage.stats(0.0)["cluster_claims"] == 2


def test_a_page_made_home_before_the_node_was_claimed_keeps_its_one_key() -> None:
    """The XID (unnamed, then named east) at 100 s, east's steps from 200 s: paged under the
    home's key, which its named row and its steps' claim then keep -- one fault, one key."""
    eng = Engine()
    alerts = feed(eng, _sites("xid", dcgm_t0=5.0, east_t0=200.0, xid_t=100.0),
                  finish=False)
    assert sorted({k for k, _ in _firing(alerts)}) == ["fl:west:iso:hardware:gpu:node-000/3"]
    assert eng.stage._cluster_of["node-000"] == "west" and "node-000" in eng.stage._defaulted


def test_a_node_only_its_steps_named_keeps_its_cluster_past_unit_idle() -> None:
    """No DCGM row till node-000's XID, unnamed, 500 s into east's steps: its steps' claim is
    kept while they run (seen: a "steps" notice), not pruned after unit_idle_s (300 s)."""
    cfg = Thresholds(unit_idle_s=300.0)
    evs = _sites("xid", dcgm=False, xid_t=170.0)
    evs = [e for e in evs if e.ts < T0 + 170.5]  # (the unnamed row alone)
    late = [replace(e, ts=e.ts + 400.0, step=e.step + 400) for e in evs
            if getattr(e, "step", None) is not None and e.ts > T0 + 120.0]
    eng = Engine(cfg)
    alerts = feed(eng, sorted([*evs, *late, ecc(T0 + 570.0, "node-000", 3, xid=79)],
                              key=lambda e: e.ts), finish=False)
    assert sorted({k for k, _ in _firing(alerts)}) == ["fl:east:iso:hardware:gpu:node-000/3"]


def test_a_steps_claim_goes_with_its_job() -> None:
    """East's job stops at 100 s, west's runs on: its step names dropped (job_idle_s, its
    monitors run on by west's records) take their claim -- a "steps" forget -- and the node's
    cluster is pruned with its other state."""
    eng = Engine(Thresholds(job_idle_s=60.0, unit_idle_s=120.0))
    east = [e for e in _sites("xid", dcgm=False) if e.cluster == "east" and e.ts < T0 + 100.0]
    west = [replace(e, cluster="west", node=e.node.replace("node-0", "node-1"))
            for e in _dp_job(steps=600, job="wjob", seed=5)]
    feed(eng, sorted([*east, *(e for e in west if e.ts < T0 + 100.0)], key=lambda e: e.ts),
         finish=False)
    assert eng.stage.others["east"][1]["node-000"] == {"steps"}
    assert eng.stage._cluster_of["node-000"] == "east"
    feed(eng, [e for e in west if e.ts >= T0 + 100.0], finish=False)
    assert "node-000" not in eng.stage.others["east"][1]
    assert "node-000" not in eng.stage._cluster_of  # (pruned with its state)
    assert eng.stage._cluster_of["node-100"] == "west"  # (its steps run on)


def test_a_snapshot_keeps_which_nodes_no_record_named_yet() -> None:
    evs = _sites("xid", dcgm_t0=5.0)
    eng = Engine()
    feed(eng, [e for e in evs if e.ts < T0 + 9.0], finish=False)
    assert eng.stage._defaulted == {"node-000", "node-001"}
    eng = Engine.restore(eng.snapshot())
    assert eng.stage._defaulted == {"node-000", "node-001"}
    alerts = feed(eng, [e for e in evs if e.ts >= T0 + 9.0], finish=False)
    assert _firing(alerts) == [("fl:east:iso:hardware:gpu:node-000/3", "gpu_hardware")]


def test_a_steps_notice_is_a_findings_topic_message() -> None:
    msg = decode_message(orjson.dumps({"type": "seen", "source": f"{STEP}:0", "node": "n-1",
                                       "what": "steps", "cluster": "east"}), 0.0)
    assert type(msg) is SeenMessage and msg.what == "steps"


def _msg(ev) -> bytes:
    return orjson.dumps({k: v for k, v in ev._asdict().items() if v is not None})


def test_the_service_stages_page_the_unnamed_xid_once_under_its_steps_cluster() -> None:
    """The service's path (no broker): a step, an ECC and a thermal partition, one findings
    partition; the steps' notice travels the findings topic as a "seen" message.  Fails on
    main: fl:west:... and fl:east:..."""
    topics = {"StepSample": STEP, "EccSample": ECC, "ThermalSample": THERMAL}
    w = PipelineWorker(telemetry_topics={t: t for t in topics.values()},
                       findings_topic="findings", findings_partitions=1,
                       expected_sources=[f"{t}:0" for t in topics.values()],
                       hold_back_s=0.25, idle_advance_s=2.0)
    w.sources = {(t, 0): w.new_partition((t, 0), 0.0)  # type: ignore
                 for t in topics.values()}
    w.correlators = {("findings", 0): w.new_partition(("findings", 0), 0.0)}  # type: ignore
    evs = _sites("xid", dcgm_t0=5.0)
    findings: list[tuple[bytes, bytes]] = []
    alerts: list = []
    offs = dict.fromkeys(topics.values(), 0)
    now, pos = 0.0, 0

    def take(out) -> None:
        findings.extend((e.key, e.value) for e in out.findings)
        alerts.extend(a for a, _ in out.alerts)

    batches = [evs[i:i + 50] for i in range(0, len(evs), 50)]
    for batch in batches + [[]] * 20:
        now += 0.5
        fed: dict = {}
        for e in batch:
            topic = topics[type(e).__name__]
            fed.setdefault((topic, 0), []).append((offs[topic], b"k", _msg(e), None))
            offs[topic] += 1
        if fed:
            take(w.process(fed, now, lambda tp, off: True))
        take(w.heartbeat(now, lambda tp, off: True))
        new = [(pos + i, k, v, None) for i, (k, v) in enumerate(findings[pos:])]
        pos = len(findings)
        if new:
            take(w.process({("findings", 0): new}, now, lambda tp, off: True))
        else:
            take(w.release_all(now))
    assert any(orjson.loads(v).get("what") == "steps" for _, v in findings)
    assert sorted({a.dedup_key for a in alerts if a.status == "firing"}) == [
        "fl:east:iso:hardware:gpu:node-000/3"]
