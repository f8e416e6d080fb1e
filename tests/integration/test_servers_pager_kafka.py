"""``faultline pager`` end to end: alert topics on the real broker in, a webhook out.

Each alert is delivered, then its offset committed; a message that is not an
alert goes to the dead-letter topic with the reason.  Stopped and started
again, the pager delivers what came meanwhile — nothing committed is sent
again, nothing is lost — and a storm group sent before the restart still
resolves as one.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import urllib.request
import uuid
from pathlib import Path
from typing import Any

import orjson
import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic
from servers_harness import ROOT, free_port, wait_for

from detector.alerts import ESCALATION, ISOLATION
from detector.pager.testing import Receiver, envelope

pytestmark = pytest.mark.kafka

PARTITIONS = 2


class Run:
    """One test's topics and consumer group, and the pager processes it starts."""

    def __init__(self, bootstrap: str, tmp: Path, webhook: str) -> None:
        self.bootstrap = bootstrap
        self.tmp = tmp
        self.prefix = f"pg-{uuid.uuid4().hex[:10]}."
        self.group = f"{self.prefix}pager"
        admin = AdminClient({"bootstrap.servers": bootstrap})
        futures = admin.create_topics([NewTopic(self.prefix + t, num_partitions=PARTITIONS,
                                                replication_factor=1)
                                       for t in (ISOLATION, ESCALATION)])
        for f in futures.values():
            f.result(30)
        self.config = tmp / "faultline.toml"
        self.config.write_text(f"""
[pager]
commit_interval_s = 0.2

[pager.sinks.tickets]
type = "webhook"
url = "{webhook}/tickets"
backoff_initial_s = 0.05

[pager.sinks.tickets.storm]
group_wait_s = 1.0
group_interval_s = 1.0
""")
        self.producer = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True})
        self.runs = 0
        self.metrics_port = free_port()

    def produce(self, messages: list[tuple[str, str, bytes]]) -> None:
        for topic, key, value in messages:
            self.producer.produce(self.prefix + topic, value, key.encode())
        assert self.producer.flush(30) == 0

    def start(self) -> subprocess.Popen[bytes]:
        self.runs += 1
        env = {k: v for k, v in os.environ.items() if not k.startswith("FAULTLINE_")}
        env.update(PYTHONUNBUFFERED="1", FAULTLINE_SESSION_TIMEOUT_S="6")
        log = open(self.tmp / f"pager-{self.runs}.log", "wb")  # noqa: SIM115
        try:
            return subprocess.Popen(
                [sys.executable, "-m", "detector.cli", "pager", "--config", str(self.config),
                 "--bootstrap", self.bootstrap, "--topic-prefix", self.prefix,
                 "--group-id", self.group, "--workdir", str(self.tmp / "state"),
                 "--metrics-port", str(self.metrics_port)],
                cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT)
        finally:
            log.close()

    def metric(self, sample: str) -> float | None:
        """One sample of the running pager's /metrics (None when absent or unreachable)."""
        opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
        try:
            with opener.open(f"http://127.0.0.1:{self.metrics_port}/metrics", timeout=5) as r:
                text = r.read().decode()
        except OSError:
            return None
        for line in text.splitlines():
            if line.startswith(sample + " "):
                return float(line.rsplit(" ", 1)[1])
        return None

    def log(self) -> str:
        return (self.tmp / f"pager-{self.runs}.log").read_text(errors="replace")[-4000:]

    def stop(self, proc: subprocess.Popen[bytes]) -> None:
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(30) == 0, self.log()

    def all_committed(self) -> bool:
        """Whether the group's committed offsets are at the end of every alert partition."""
        c = Consumer({"bootstrap.servers": self.bootstrap, "group.id": self.group,
                      "enable.auto.commit": False})
        try:
            tps = [TopicPartition(self.prefix + t, p) for t in (ISOLATION, ESCALATION)
                   for p in range(PARTITIONS)]
            committed = c.committed(tps, timeout=10)
            for tp in committed:
                _, high = c.get_watermark_offsets(tp, timeout=10)
                if high > 0 and tp.offset != high:
                    return False
            return True
        finally:
            c.close()

    def dead_letters(self) -> list[dict[str, Any]]:
        c = Consumer({"bootstrap.servers": self.bootstrap, "group.id": uuid.uuid4().hex,
                      "auto.offset.reset": "earliest", "enable.auto.commit": False})
        out: list[dict[str, Any]] = []
        try:
            c.subscribe([self.prefix + "alerts.deadletter"])
            for _ in range(40):
                msg = c.poll(0.5)
                if msg is not None and msg.error() is None:
                    out.append({"value": orjson.loads(msg.value()),
                                "headers": dict(msg.headers() or [])})
                    break
        finally:
            c.close()
        return out


def message(topic: str, node: str, status: str = "firing", **kw: Any) -> tuple[str, str, bytes]:
    v = envelope(node, topic=topic, status=status, **kw)
    return topic, v["dedup_key"], orjson.dumps(v)


def test_pager_delivers_commits_and_resumes_without_repeats_or_losses(
        kafka_bootstrap: str, tmp_path: Path) -> None:
    with Receiver() as rx:
        run = Run(kafka_bootstrap, tmp_path, rx.url)
        nics = [message(ISOLATION, f"node-{i:03d}") for i in range(4)]
        escalations = [message(ESCALATION, "node-100", kind="sdc", cause="unknown", level="gpu",
                               gpu=1),
                       message(ESCALATION, "node-101", kind="unattributed", cause="unknown")]
        run.produce([*nics, *escalations, nics[0],  # a duplicate
                     (ISOLATION, "junk", b'{"not": "an alert"}')])

        nic_keys = sorted(m[1] for m in nics)
        esc_keys = sorted(e[1] for e in escalations)

        def covered(bodies: list[dict[str, Any]]) -> list[str]:
            """Every alert key the trigger notifications speak for (primary and grouped)."""
            return sorted([b["dedup_key"] for b in bodies if b["event"] == "trigger"]
                          + [g["dedup_key"] for b in bodies for g in b.get("grouped", [])])

        pager = run.start()
        try:
            # Storm control groups the four NIC alerts (group_wait 1 s); should the two
            # partitions come in further apart than that on a loaded machine, they are two
            # groups: the test waits for every alert, not for a number of POSTs.
            rx.wait_for("every alert in a notification", lambda _: covered(rx.bodies())
                        == sorted(nic_keys + esc_keys), 60)
            wait_for("every offset committed", run.all_committed, 30, on_timeout=run.log)
            notes = len(rx.requests)
            assert run.metric('faultline_pager_deliveries_total{sink="tickets"}') == notes
            assert run.metric('faultline_pager_held_back_total{reason="grouped",'
                              'sink="tickets"}') == 6 - notes
            assert run.metric("faultline_pager_invalid_total") == 1
            (dead,) = run.dead_letters()
            assert "not an alert envelope" in dead["value"]["reason"]
            assert dead["headers"]["faultline-reason"].startswith(
                b"alerts.isolation: not an alert envelope: ")
        finally:
            run.stop(pager)
        first = rx.bodies()
        assert covered(first) == sorted(nic_keys + esc_keys)  # each alert once, the duplicate not
        nic_notes = [b for b in first if b["dedup_key"] not in esc_keys]
        assert 1 <= len(nic_notes) <= 2 and all(b["event"] == "trigger" for b in nic_notes)
        group = max(nic_notes, key=lambda b: len(b.get("grouped", [])))
        assert group["storm"].startswith(f"{1 + len(group['grouped'])} alerts alike "
                                         f"({1 + len(group['grouped'])} network/nic)")
        assert sorted(b["dedup_key"] for b in first if not b.get("grouped")
                      and b["dedup_key"] in esc_keys) == esc_keys

        # Meanwhile: the NIC alerts resolve and a new problem fires.
        new = message(ESCALATION, "node-102", kind="hardware", cause="gpu_hardware")
        run.produce([*[message(ISOLATION, f"node-{i:03d}", "resolved") for i in range(4)], new])
        pager = run.start()
        try:
            rx.wait_for("each NIC notification's resolve and the new escalation",
                        lambda reqs: len(reqs) >= notes + len(nic_notes) + 1, 60)
            wait_for("every offset committed", run.all_committed, 30, on_timeout=run.log)
        finally:
            run.stop(pager)
        second = rx.bodies()[notes:]
        # A group sent before the restart still resolves as one notification.
        assert sorted((b["event"], b["dedup_key"]) for b in second) == sorted(
            [("resolve", b["dedup_key"]) for b in nic_notes] + [("trigger", new[1])])
        assert len(rx.requests) == notes + len(nic_notes) + 1  # nothing delivered twice
