"""revA34 F1-F3 on pager34's hold (detector/pager/hold.py, storm.py, kafka_io.py).

- F2: the hold applies ONLY to pages the detector has a path to take back within seconds
  (the correlator's ``_resolve_now`` callers): a finer slow-node escalation a coarser unit
  supersedes, a node's (or GPU's) power/thermal isolation a domain's or site's cap takes back,
  a NIC page a rail's retrain takes back.  A node gone dark, a hung job, a GPU gone missing
  are told at once (revA34 p1/dark.py: the dark page waited 30 s instead of 10).
- F1: a held page released into a group already notified after it arrived waits only
  ``group_wait_s`` more, not the group interval (revA34 p2/split.py: 310 s instead of 10).
- F3: on a Kafka revoke the pages held or waiting from the revoked partitions are dropped
  (uncommitted: the new owner reads them again), so the old owner sends no trigger whose
  resolve goes to the new owner (revA34 p6/rebal.py).

Waits are on a FakeClock (pure storm control), never on wall-clock sleeps.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from prometheus_client import CollectorRegistry

from detector.alerts import ESCALATION, ISOLATION
from detector.metrics import PagerMetrics
from detector.pager.config import PagerConfig, StormConfig
from detector.pager.core import FileDeadLetters, OffsetTracker, Pager
from detector.pager.hold import held
from detector.pager.storm import StormControl
from detector.pager.testing import FakeClock, alert, resolved


def first_sent(storm: StormControl, offers: list[tuple[float, Any]], until: float = 400.0
               ) -> dict[str, float]:
    """Offer each (time, alert), step the clock by 0.5 s; when each scope key first goes out."""
    got: dict[str, float] = {}

    def take(notes: list[Any], t: float) -> None:
        for n in notes:
            if n.event != "trigger" or n.alert is None:
                continue
            for a in (n.alert, *n.members):
                got.setdefault(a.scope.key, t)

    todo = sorted(offers, key=lambda x: x[0])
    t = 0.0
    while t <= until:
        while todo and todo[0][0] <= t:
            _, a = todo.pop(0)
            take(storm.offer(a, "critical", None, now=t), t)
        take(storm.due(t), t)
        t += 0.5
    return got


# -- F2: hold only what the detector takes back ------------------------------------------


def dark_node() -> Any:
    """liveness's page of a node gone dark under its job (tests/test_silent19)."""
    return alert("node-003", topic=ESCALATION, kind="unattributed", cause="unknown",
                 level="node", evidence={"signals": [{"signal": "silent"}]})


def hung_job() -> Any:
    return alert("node-003", topic=ESCALATION, kind="unattributed", cause="unknown",
                 level="job", job="job-7", evidence={"signals": [{"signal": "silent"}]})


def gpu_missing() -> Any:
    return alert("node-003", topic=ESCALATION, kind="unattributed", cause="unknown",
                 level="gpu", gpu=5, evidence={"signals": [{"signal": "gpu_missing"}]})


def test_only_pages_a_withdrawal_path_takes_back_are_held() -> None:
    assert not held(dark_node())
    assert not held(hung_job())
    assert not held(gpu_missing())
    # an unattributed escalation of a slow rank: no path withdraws it
    assert not held(alert("n1", topic=ESCALATION, kind="unattributed", cause="unknown",
                          evidence={"signals": [{"signal": "slow_rank"}]}))
    # a switch's isolation, a job's slow_node escalation: nothing takes them back within seconds
    assert not held(alert("leaf-03", kind="network", cause="switch", level="switch",
                          evidence={"signals": [{"signal": "port_errors"}]}))
    assert not held(alert("n1", topic=ESCALATION, kind="slow_node", cause="unknown",
                          level="job", evidence={"signals": [{"signal": "slow_rank"}]}))
    # and the pages a withdrawal path takes back are still held:
    slow = {"signals": [{"signal": "slow_rank"}]}
    # _superseded: a GPU's / a node's slow_node escalation a coarser page takes over
    assert held(alert("n1", topic=ESCALATION, kind="slow_node", cause="unknown", level="gpu",
                      evidence=slow))
    assert held(alert("n1", topic=ESCALATION, kind="slow_node", cause="unknown", level="node",
                      evidence=slow))
    # _withdraw_for_site / a domain's power or heat: a node's or GPU's power/thermal isolation
    assert held(alert("n1", topic=ISOLATION, kind="slow_node", cause="power", level="node",
                      evidence=slow))
    assert held(alert("n1", topic=ISOLATION, kind="slow_node", cause="thermal", level="gpu",
                      evidence=slow))
    # _retake_retrain: a NIC page
    assert held(alert("n1", evidence={"signals": [{"signal": "link_rate"}]}))
    # ... but never a hardware event's, whatever its shape
    assert not held(alert("n1", evidence={"signals": [{"signal": "link_down"}]}))
    assert not held(alert("n1", topic=ESCALATION, kind="slow_node", cause="unknown",
                          level="gpu", evidence={"signals": [{"signal": "xid", "xid": 79}]}))


def test_a_dark_node_reaches_the_sink_after_the_group_wait_only() -> None:
    """revA34 p1/dark.py: main sent it at pager t = 30 (held 20 + wait 10); base at 10."""
    s = StormControl("pd", StormConfig(), now=0.0)
    a = dark_node()
    assert first_sent(s, [(0.0, a)], until=60.0) == {a.scope.key: s.config.group_wait_s}


# -- F1: a held page released into a group notified after it arrived ----------------------


def test_a_held_page_beside_an_unheld_one_waits_no_more_than_hold_plus_group_wait() -> None:
    """revA34 p2/split.py: link_down (unheld) and nic_throughput (held) NIC pages of one
    group at t = 0; main sent the held one at 310 s (the group interval)."""
    cfg = StormConfig()
    s = StormControl("pd", cfg, now=0.0)
    down = alert("node-001", evidence={"signals": [{"signal": "link_down"}]})
    slow = alert("node-002", evidence={"signals": [{"signal": "nic_throughput"}]})
    assert held(slow) and not held(down)
    got = first_sent(s, [(0.0, down), (0.0, slow)])
    assert got[down.scope.key] == cfg.group_wait_s
    assert got[slow.scope.key] <= cfg.hold_s + cfg.group_wait_s
    # one that arrived after its group went out still waits the group interval
    s = StormControl("pd", cfg, now=0.0)
    got = first_sent(s, [(0.0, down), (15.0, slow)])
    assert got[slow.scope.key] == cfg.group_wait_s + cfg.group_interval_s
    # released into a notified group, it is still taken back quietly in its group wait
    s = StormControl("pd", cfg, now=0.0)
    s.offer(down, "critical", None, now=0.0)
    s.offer(slow, "critical", None, now=0.0)
    assert [n.dedup_key for n in s.due(10.0)] == [down.dedup_key]
    assert s.due(20.0) == []  # released: waits its group_wait
    assert s.offer(resolved(slow), "critical", None, now=25.0) == []  # cleared, nobody paged
    assert s.due(400.0) == []


# -- F3: a revoke drops what the revoked partitions' messages left held -------------------


def make_pager(tmp: Path, clock: FakeClock) -> Pager:
    cfg = PagerConfig.from_dict({"sinks": {"pagerduty": {
        "url": "http://127.0.0.1:9/v2/enqueue", "routing_key": "R0ut1ngKeyR0ut1ngKeyR0ut1ngKey00",
        "storm": {}}}, "deadletter_file": str(tmp / "dead.jsonl")}, env={})
    return Pager(cfg, PagerMetrics(CollectorRegistry(), cfg.sinks),
                 FileDeadLetters(tmp / "dead.jsonl"), clock=clock)


def queued(pager: Pager) -> list[tuple[str, str]]:
    q = pager.workers["pagerduty"].queue
    out = []
    while not q.empty():
        n = q.get_nowait()
        out.append((n.event, n.dedup_key))
    return out


class _Consumer:
    def __init__(self) -> None:
        self.commits: list[tuple[str, int, int]] = []

    def commit(self, *, offsets: list[Any], asynchronous: bool) -> None:
        self.commits += [(tp.topic, tp.partition, tp.offset) for tp in offsets]


def loop_for(pager: Pager, tracker: OffsetTracker) -> Any:
    """kafka_io's loop without a broker: the revoke handler's own state only."""
    from detector.pager import kafka_io

    loop = object.__new__(kafka_io._Loop)
    loop.pager = pager
    loop.tracker = tracker
    loop.committed = {}
    loop.consumer = _Consumer()
    loop.metrics = pager.metrics
    loop.real_topics = {"alerts.isolation": "alerts.isolation"}
    return loop


def test_a_revoke_drops_the_pages_held_from_the_revoked_partition(tmp_path: Path) -> None:
    """revA34 p6/rebal.py: pager A held a page when its partition moved to B (at 5 s); B got
    the resolve (at 8 s); A sent the trigger at 30 s, never resolved in PagerDuty."""
    from confluent_kafka import TopicPartition

    clock = FakeClock(0.0)
    pager = make_pager(tmp_path, clock)  # workers not started: their queues are the outbox
    tracker = OffsetTracker()
    page = alert("node-001", kind="slow_node", cause="power", level="node",
                 evidence={"signals": [{"signal": "slow_rank"}]})
    other = alert("node-002", kind="slow_node", cause="power", level="node",
                  evidence={"signals": [{"signal": "slow_rank"}]})
    pager.submit(page, tracker.ticket("alerts.isolation", 0, 6))
    pager.submit(other, tracker.ticket("alerts.isolation", 1, 3))  # a partition A keeps
    clock.advance(5.0)
    pager.tick()
    loop = loop_for(pager, tracker)
    loop._on_revoke(None, [TopicPartition("alerts.isolation", 0)])
    # committed short of the held page: the new owner reads it again
    assert loop.consumer.commits == [("alerts.isolation", 0, 6)]
    for _ in range(120):
        clock.advance(0.5)
        pager.tick()
    assert queued(pager) == [("trigger", other.dedup_key)]  # the kept partition's page only


def test_a_revoke_drops_pages_waiting_their_group_and_the_backlog_too(tmp_path: Path) -> None:
    from confluent_kafka import TopicPartition

    clock = FakeClock(0.0)
    pager = make_pager(tmp_path, clock)
    tracker = OffsetTracker()
    dark = dark_node()  # not held: waits its group_wait
    late = alert("node-009", kind="slow_node", cause="power", level="node",
                 evidence={"signals": [{"signal": "slow_rank"}]})
    pager.submit(dark, tracker.ticket("alerts.escalation", 0, 1))
    pager.submit(late, tracker.ticket("alerts.isolation", 0, 2), backlog=True)
    assert pager.backlog_size() == 1
    loop = loop_for(pager, tracker)
    loop._on_revoke(None, [TopicPartition("alerts.escalation", 0),
                           TopicPartition("alerts.isolation", 0)])
    assert pager.backlog_size() == 0
    for _ in range(120):
        clock.advance(0.5)
        pager.tick()
    assert queued(pager) == []
