"""``faultline pager`` through a sink outage, on the real broker: nothing lost, nothing doubled.

The webhook answers 503 while the outage lasts.  The pager keeps retrying and
commits nothing behind the waiting pages; SIGKILLed in the middle of it and
started again, it delivers every page exactly once when the sink is back.
Meanwhile flow control holds ``max_in_flight``.
"""

from __future__ import annotations

import threading
import uuid
from pathlib import Path

import pytest
from confluent_kafka import Consumer, TopicPartition
from servers_harness import wait_for
from test_servers_pager_kafka import Run, message

from detector.alerts import ISOLATION
from detector.pager.testing import Receiver

pytestmark = pytest.mark.kafka


def _messages_in(run: Run, topic: str) -> int:
    c = Consumer({"bootstrap.servers": run.bootstrap, "group.id": uuid.uuid4().hex})
    try:
        low, high = c.get_watermark_offsets(TopicPartition(topic, 0), timeout=10)
        return high - low
    finally:
        c.close()


def _config(run: Run, webhook: str, **pager: object) -> None:
    extra = "".join(f"{k} = {v}\n" for k, v in pager.items())
    run.config.write_text(f"""
[pager]
commit_interval_s = 0.2
{extra}
[pager.sinks.tickets]
type = "webhook"
url = "{webhook}/tickets"
backoff_initial_s = 0.05
backoff_max_s = 0.2

[pager.sinks.tickets.storm]
enabled = false
""")


def test_sigkill_during_an_outage_loses_and_doubles_nothing(kafka_bootstrap: str,
                                                            tmp_path: Path) -> None:
    outage = threading.Event()
    outage.set()
    with Receiver(decide=lambda: 503 if outage.is_set() else 200) as rx:
        run = Run(kafka_bootstrap, tmp_path, rx.url)
        _config(run, rx.url)
        nodes = [f"node-{i:03d}" for i in range(12)]
        run.produce([message(ISOLATION, n) for n in nodes]
                    + [message(ISOLATION, n, "resolved") for n in nodes[:3]])
        pager = run.start()
        try:
            rx.wait_for("503s", lambda reqs: len(reqs) >= 5, 60)
        finally:
            pager.kill()  # SIGKILL: no drain, no last commit
            pager.wait(10)
        assert not run.all_committed()
        pager = run.start()
        try:
            before = len(rx.requests)
            rx.wait_for("the restarted pager retrying", lambda reqs: len(reqs) >= before + 3, 60)
            outage.clear()
            rx.wait_for("every open alert paged", lambda reqs: {
                b["alert"]["scope"]["node"] for r in reqs if r.status == 200
                for b in [r.json()]} >= set(nodes[3:]), 60)
            wait_for("every offset committed", run.all_committed, 30, on_timeout=run.log)
        finally:
            run.stop(pager)
        sent = sorted((b["event"], b["alert"]["scope"]["node"]) for b in rx.bodies(200))
        # The open alerts are paged exactly once.  The three resolved in the backlog are
        # either not paged at all (their trigger and resolve met before the sink came back,
        # as a restarted pager reads them) or triggered and resolved once each.
        assert [x for x in sent if x[1] in nodes[3:]] == [("trigger", n) for n in nodes[3:]]
        for n in nodes[:3]:
            assert [e for e, node in sent if node == n] in ([], ["resolve", "trigger"]), sent
        assert _messages_in(run, run.prefix + "alerts.deadletter") == 0


def test_flow_control_holds_max_in_flight(kafka_bootstrap: str, tmp_path: Path) -> None:
    outage = threading.Event()
    outage.set()
    with Receiver(decide=lambda: 503 if outage.is_set() else 200) as rx:
        run = Run(kafka_bootstrap, tmp_path, rx.url)
        _config(run, rx.url, max_in_flight=40)
        run.produce([message(ISOLATION, f"node-{i:03d}") for i in range(300)])
        pager = run.start()
        try:
            wait_for("40 alerts in flight",
                     lambda: run.metric("faultline_pager_in_flight") == 40, 60,
                     on_timeout=run.log)
            consumed = run.metric('faultline_pager_alerts_total{status="firing",'
                                  'topic="alerts.isolation"}')
            outage.clear()
            rx.wait_for("all 300 delivered",
                        lambda reqs: len([r for r in reqs if r.status == 200]) >= 300, 60)
            wait_for("every offset committed", run.all_committed, 30, on_timeout=run.log)
            peak = run.metric("faultline_pager_in_flight_peak")
        finally:
            run.stop(pager)
        assert consumed == 40 and peak == 40, (consumed, peak)
        assert len(rx.bodies(200)) == 300


def test_a_backlog_does_not_page_for_alerts_already_resolved(kafka_bootstrap: str,
                                                             tmp_path: Path) -> None:
    with Receiver() as rx:
        run = Run(kafka_bootstrap, tmp_path, rx.url)
        _config(run, rx.url)
        gone = [message(ISOLATION, f"node-{i:03d}") for i in range(20)]
        still = message(ISOLATION, "node-100")
        # One partition's backlog: triggers, then the resolves of all but one.
        run.produce([*gone, still, *[message(ISOLATION, f"node-{i:03d}", "resolved")
                                     for i in range(20)]])
        pager = run.start()
        try:
            wait_for("every offset committed", run.all_committed, 60, on_timeout=run.log)
            cleared = run.metric("faultline_pager_cleared_in_backlog_total")
        finally:
            run.stop(pager)
        # The webhook (like PagerDuty) never heard of the resolved ones: nothing to send.
        assert [(b["event"], b["dedup_key"]) for b in rx.bodies()] == [("trigger", still[1])]
        assert cleared == 20
