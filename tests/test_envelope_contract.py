"""The alert envelope is one contract between the engine and every reader of alerts.

Alerts here are made by the engine (never by ``pager.testing.envelope()``), written as
the JSON the service produces, and read back the way the pager reads a Kafka message:
then routed, grouped by the storm control and turned into payloads.  Renaming or
dropping an envelope field in ``Alert.to_dict`` fails these tests.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest

from detector.alerts import ESCALATION, ISOLATION, Alert, Granularity, Scope
from detector.engine import Engine
from detector.pager.config import PagerConfig, StormConfig
from detector.pager.payloads import alertmanager_alert, details, webhook_body
from detector.pager.routing import Router
from detector.pager.storm import StormControl
from detector.testing import T0, ecc, feed, healthy_job


def _engine_alerts(hw_cluster: str = "c1") -> list[Alert]:
    """Three double-bit ECC errors on three nodes of cluster c1 (tenant t-a), and a slow rank
    with no cause in cluster c2 (tenant t-b): isolations and an escalation, from the engine.
    (A unit is (cluster, node): c1's node-000 is not c2's, where the job runs -- ``hw_cluster``
    "c2" puts the errors on the job's GPUs.)"""
    hw = [ecc(T0 + 5.0 + i, f"node-00{i}", 2, dbe=1, xid=48)._replace(cluster=hw_cluster,
                                                                        tenant="t-a")
          for i in range(3)]
    steps = [s._replace(cluster="c2", tenant="t-b")
             for s in healthy_job(steps=90, slow={3: 1.3}, slow_from=10, slow_to=25)]
    events = sorted([*hw, *steps], key=lambda e: e.ts)
    return feed(Engine(), events)


def _as_the_pager_reads_it(a: Alert) -> Alert:
    wire = orjson.dumps(a.to_dict())  # what the service produces to the alert topic
    return Alert.from_record(a.topic, orjson.loads(wire))


@pytest.fixture(scope="module")
def alerts() -> list[Alert]:
    made = _engine_alerts()
    assert {(a.topic, a.kind) for a in made if a.status == "firing"} == {
        (ISOLATION, "hardware"), (ESCALATION, "slow_node")}
    return [_as_the_pager_reads_it(a) for a in made]


def test_every_envelope_field_survives_the_wire() -> None:
    for a in _engine_alerts():
        back = _as_the_pager_reads_it(a)
        assert back.to_dict() == a.to_dict()
        for name in ("dedup_key", "status", "kind", "cause", "scope", "action", "onset_ts",
                     "detected_ts", "confidence", "evidence", "job", "tenant", "cluster",
                     "summary", "granularity", "recovery", "id"):
            assert getattr(back, name) == getattr(a, name), name


def _pager(routes: list[dict[str, Any]]) -> PagerConfig:
    return PagerConfig.from_dict({
        "sinks": {s: {"type": "webhook", "url": f"http://127.0.0.1:1/{s}"}
                  for s in ("c1-oncall", "t-b-tickets", "rest")},
        "routes": routes, "default_sinks": ["rest"]}, env={})


def test_engine_alerts_are_routed_by_cluster_and_tenant(alerts: list[Alert]) -> None:
    router = Router(_pager([{"cluster": "c1", "sinks": ["c1-oncall"]},
                            {"tenant": "t-b", "sinks": ["t-b-tickets"]}]))
    routed = {}
    for a in alerts:
        severity = router.severity(a.topic, a.kind)
        routed[a.scope.key, a.status] = router.route(a.topic, a.kind, a.cause, severity,
                                                     a.tenant, a.cluster, a.status)
    assert routed[("gpu:node-000/2", "firing")] == ("c1-oncall",)
    assert routed[("gpu:node-000/3", "firing")] == ("t-b-tickets",)
    assert "rest" not in {s for sinks in routed.values() for s in sinks}


def test_the_pager_delivers_engine_alerts_by_their_cluster_and_tenant(
        alerts: list[Alert], tmp_path: Path) -> None:
    """The whole pager (routing, storm control off, webhook delivery), not the Router alone:
    it once read the tenant and cluster back out of the envelope dict by name."""
    from prometheus_client import CollectorRegistry

    from detector.metrics import PagerMetrics
    from detector.pager.core import FileDeadLetters, Pager
    from detector.pager.testing import Receiver

    with Receiver() as c1, Receiver() as tb, Receiver() as rest:
        cfg = PagerConfig.from_dict({
            "sinks": {name: {"type": "webhook", "url": rx.url, "storm": {"enabled": False}}
                      for name, rx in (("c1-oncall", c1), ("t-b-tickets", tb), ("rest", rest))},
            "routes": [{"cluster": "c1", "sinks": ["c1-oncall"]},
                       {"tenant": "t-b", "sinks": ["t-b-tickets"]}],
            "default_sinks": ["rest"], "state_dir": str(tmp_path / "state")}, env={})
        pager = Pager(cfg, PagerMetrics(CollectorRegistry(), cfg.sinks),
                      FileDeadLetters(tmp_path / "dead.jsonl"))
        pager.start()
        for a in alerts:
            pager.submit(a, None)
        assert pager.close(30)
    for rx, cluster in ((c1, "c1"), (tb, "c2")):
        sent = sorted((b["alert"]["dedup_key"], b["event"]) for b in rx.bodies())
        assert sent == sorted((a.dedup_key, "trigger" if a.status == "firing" else "resolve")
                              for a in alerts if a.cluster == cluster)
    assert rest.requests == []


def test_storm_control_groups_engine_alerts_by_cluster(alerts: list[Alert]) -> None:
    storm = StormControl("oncall", StormConfig(hold_s=0.0, group_wait_s=5.0), now=0.0)
    firing = [a for a in alerts if a.status == "firing"]
    out = []
    for a in firing:
        assert storm.group_key(a)[0] == a.cluster and a.cluster in ("c1", "c2")
        out += storm.offer(a, "warning", None, now=0.0)
    out += storm.due(now=5.0)
    groups = sorted((n.alert.cluster, n.alert.kind, 1 + len(n.members)) for n in out
                    if n.alert is not None)
    assert groups == [("c1", "hardware", 3), ("c2", "slow_node", 1)]
    switch = StormControl("s", StormConfig(group_wait_s=5.0, group_by=("tenant", "job")),
                          now=0.0)
    assert {switch.group_key(a) for a in firing} == {("t-a", ""), ("t-b", "job-1")}


def test_payloads_carry_the_engine_alerts_fields(alerts: list[Alert]) -> None:
    from detector.pager.notification import Notification

    a = next(x for x in alerts if x.kind == "hardware" and x.status == "firing")
    am = alertmanager_alert(a, "warning", wall_now=T0, ttl_s=240.0)
    assert am["labels"]["cluster"] == "c1" and am["labels"]["tenant"] == "t-a"
    assert am["annotations"]["action"].startswith("drain_gpu: GPU 2 on node-000")
    assert am["annotations"]["detection_latency_s"] == "0.000"
    n = Notification("pd", "trigger", a.dedup_key, "warning", a)
    d = details(n, 65536)
    assert d["scope"] == a.scope.to_dict() and d["cluster"] == "c1"
    assert d["action"]["rollback"] == a.action.rollback  # type: ignore[union-attr]
    body = webhook_body(n, wall_now=T0, details_max_bytes=65536)
    assert body["alert"] == a.to_dict()
    esc = next(x for x in alerts if x.topic == ESCALATION and x.status == "firing")
    assert alertmanager_alert(esc, "critical", wall_now=T0, ttl_s=240.0)["annotations"][
        "next_diagnostic"] == esc.evidence["next_diagnostic"]


@pytest.mark.parametrize(("change", "why"), [
    (lambda v: v.pop("dedup_key"), "'dedup_key'"),
    (lambda v: v.update(status="maybe"), "status must be firing or resolved"),
    (lambda v: v.update(scope={"level": "gpu", "node": "n"}), "needs 'gpu'"),
    (lambda v: v.update(granularity={"gpus": "eight"}), "granularity 'gpus'"),
])
def test_a_broken_envelope_is_refused_with_the_reason(change: Any, why: str) -> None:
    v = _engine_alerts()[0].to_dict()
    change(v)
    with pytest.raises(ValueError, match="not an alert envelope") as exc:
        Alert.from_record(ISOLATION, v)
    assert why in str(exc.value)


def test_fields_a_newer_engine_adds_are_passed_on() -> None:
    v = {**_engine_alerts()[0].to_dict(), "runbook_url": "https://runbooks/x"}
    a = Alert.from_record(ISOLATION, v)
    assert a.to_dict()["runbook_url"] == "https://runbooks/x"


# -- the three figures: detection latency, isolation granularity, recovery time ----------


def test_every_engine_alert_carries_the_three_figures() -> None:
    from detector.thresholds import Thresholds

    made = feed(Engine(Thresholds(checkpoint_interval_s=600.0, restart_s=120.0)),
                sorted([*[s._replace(cluster="c2") for s in healthy_job(
                    ranks=32, steps=90, slow={3: 1.3}, slow_from=10, slow_to=25)],
                        ecc(T0 + 5.0, "node-001", 2, dbe=1, xid=48)], key=lambda e: e.ts))
    assert made and all(a.granularity is not None and a.recovery is not None for a in made)
    by = {(a.scope.key, a.status): a for a in made}
    hw = by["gpu:node-001/2", "firing"]
    # healthy_job: 32 ranks, node-000..003 with 8 GPUs each, one pipeline stage, dp = rank.
    assert hw.granularity == Granularity(gpus=1, ranks=1, dp_replicas=1, share_of_job=0.0312,
                                         jobs=1)
    assert hw.recovery is not None and hw.recovery.estimate_s == 120.0 + 300.0
    assert "checkpoint interval 600 s, restart 120 s" in hw.recovery.basis
    slow = by["gpu:node-000/3", "firing"]
    assert slow.topic == ESCALATION and slow.granularity.ranks == 1  # type: ignore[union-attr]
    assert slow.recovery.basis.startswith("needs a human first")  # type: ignore[union-attr]
    done = by["gpu:node-000/3", "resolved"]
    assert done.recovery.measured_s == pytest.approx(  # type: ignore[union-attr]
        done.detected_ts - done.onset_ts)
    assert hw.to_dict()["granularity"] == {"gpus": 1, "ranks": 1, "dp_replicas": 1,
                                           "share_of_job": 0.0312, "jobs": 1}


def test_a_node_takes_out_its_gpus_and_a_switch_the_nodes_behind_it() -> None:
    from detector.recovery import Placement
    from detector.topology import Topology

    topo = Topology.load(Path(__file__).resolve().parent.parent / "topologies"
                         / "h100-128.topo")
    lay = Placement()
    nodes = topo.nodes()[:4]
    lay.learn("job-1", [[r, nodes[r // 8], r % 8, r // 16] for r in range(32)])  # tp=16
    g = lay.granularity(Scope.of_node(nodes[1]), topo, None)
    assert (g.gpus, g.ranks, g.dp_replicas, g.share_of_job) == (8, 8, 1, 0.5)
    switch = topo.switch_of(nodes[0], topo.nics_of(nodes[0])[0])
    assert switch is not None
    g = lay.granularity(Scope.of_switch(switch), topo, None)
    assert g.gpus == 8 * len(topo.nodes_under(switch)) and g.share_of_job == 1.0
    lay.forget("job-1")
    assert lay.granularity(Scope.of_node(nodes[1]), topo, None) == Granularity(gpus=8)


def test_the_pager_shows_the_three_figures(alerts: list[Alert]) -> None:
    from detector.pager.notification import Notification

    # (the errors on the job's own GPUs: its cluster's; c1's hosts run no job -- "1 GPU")
    a = next(_as_the_pager_reads_it(x) for x in _engine_alerts("c2")
             if x.kind == "hardware" and x.status == "firing")
    ann = alertmanager_alert(a, "warning", wall_now=T0, ttl_s=240.0)["annotations"]
    assert ann["detection_latency_s"] == "0.000"
    assert ann["granularity"] == "1 GPU, 1 rank, 1 DP replica (6.2 % of the job)"
    c1 = next(x for x in alerts if x.kind == "hardware" and x.status == "firing")
    assert c1.cluster == "c1" and alertmanager_alert(
        c1, "warning", wall_now=T0, ttl_s=240.0)["annotations"]["granularity"] == "1 GPU"
    assert ann["recovery"].startswith("~20 min: drain the GPU + restart from the last checkpoint")
    d = details(Notification("pd", "trigger", a.dedup_key, "warning", a), 65536)
    assert d["granularity"] == {"gpus": 1, "ranks": 1, "dp_replicas": 1,
                                "share_of_job": 0.0625, "jobs": 1}
    assert d["recovery"]["estimate_s"] == 1200.0 and d["detection_latency_s"] == 0.0
    r = next(x for x in alerts if x.status == "resolved")  # the slow rank's escalation
    ann = alertmanager_alert(r, "critical", wall_now=T0, ttl_s=240.0)["annotations"]
    assert " measured (estimated ~20 min): needs a human first" in ann["recovery"]
    assert r.recovery is not None and r.recovery.measured_s == round(
        r.detected_ts - r.onset_ts, 3)
