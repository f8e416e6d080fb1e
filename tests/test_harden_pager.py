"""Adversarial review (room harden, round 8): alert messages the pager consumes from Kafka.

The pager reads ``alerts.isolation``/``alerts.escalation``, which anyone with
write access fills.  The rule (README, "Pager"): a message that is not an alert
envelope is dead-lettered and the pager goes on with the next alert.  These
tests drive the consumer's own path, ``_Loop._handle`` of
:mod:`detector.pager.kafka_io` (the one ``faultline pager`` runs for every
message it polls), with a webhook sink posting to a local receiver; only the
Kafka message object is a stand-in (confluent-kafka's ``Message`` cannot be
built in Python), and the consumer is a real one that is never polled.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson
import pytest
from prometheus_client import CollectorRegistry

from detector.alerts import ISOLATION
from detector.metrics import PagerMetrics
from detector.pager.config import PagerConfig
from detector.pager.core import FileDeadLetters, Pager
from detector.pager.kafka_io import _Loop
from detector.pager.notification import Notification
from detector.pager.sinks import AlertmanagerSink
from detector.pager.testing import Receiver, alert, envelope
from detector.settings import Settings

FAST = {"backoff_initial_s": 0.01, "backoff_max_s": 0.05, "timeout_s": 5.0}


@dataclass
class _Message:
    """What ``_Loop._handle`` reads of a polled message."""

    topic_name: str
    raw: bytes | None
    at: int

    def error(self) -> None:
        return None

    def topic(self) -> str:
        return self.topic_name

    def partition(self) -> int:
        return 0

    def offset(self) -> int:
        return self.at

    def value(self) -> bytes | None:
        return self.raw

    def key(self) -> bytes:
        return b"k"


@dataclass
class _Harness:
    loop: _Loop
    pager: Pager
    rx: Receiver
    dead_file: Path
    topic: str
    sent: int = 0

    def handle(self, value: dict[str, Any] | bytes | None) -> None:
        raw = value if value is None or isinstance(value, bytes) else orjson.dumps(value)
        self.loop._handle(_Message(self.topic, raw, self.sent))
        self.sent += 1

    def dead(self) -> list[dict[str, Any]]:
        if not self.dead_file.exists():
            return []
        return [orjson.loads(line) for line in self.dead_file.read_bytes().splitlines()]


@contextmanager
def _pager(tmp: Path, storm: dict[str, Any] | None = None) -> Iterator[_Harness]:
    with Receiver() as rx:
        sink: dict[str, Any] = {"type": "webhook", "url": rx.url + "/t", **FAST}
        sink["storm"] = storm if storm is not None else {"enabled": False}
        cfg = PagerConfig.from_dict({"sinks": {"w": sink},
                                     "deadletter_file": str(tmp / "dead.jsonl"),
                                     "state_dir": str(tmp / "state")}, env={})
        settings = Settings.load(env={}, overrides={"bootstrap_servers": "127.0.0.1:9"})
        metrics = PagerMetrics(CollectorRegistry(), cfg.sinks)
        dead = FileDeadLetters(tmp / "dead.jsonl")
        pager = Pager(cfg, metrics, dead, topology=None)
        pager.start()
        topic = settings.topic(ISOLATION)
        loop = _Loop(settings, cfg, pager, metrics, dead, {topic: ISOLATION}, None)
        try:
            yield _Harness(loop, pager, rx, tmp / "dead.jsonl", topic)
        finally:
            pager.close(5.0)
            loop.consumer.close()


def _with(value: dict[str, Any], path: str, x: Any) -> dict[str, Any]:
    v = orjson.loads(orjson.dumps(value))
    *head, last = path.split(".")
    d = v
    for k in head:
        d = d.setdefault(k, {})
    d[last] = x
    return v


def _good(node: str) -> dict[str, Any]:
    return envelope(node, dedup_key=f"fl:c1:iso:network:nic:{node}/mlx5_0")


# -- pins --------------------------------------------------------------------------------

BAD = [
    ("onset_ts", float("nan")), ("onset_ts", "nan"), ("detected_ts", 1e308),
    ("detected_ts", -1e20), ("onset_ts", "1e999"), ("confidence", "x"), ("status", 5),
    ("status", "FIRING"), ("scope", None), ("scope.level", "rack"), ("scope.gpu", True),
    ("granularity", "8"), ("granularity.gpus", 1.5), ("recovery.estimate_s", True),
    ("action", [1]), ("evidence", [1, 2]), ("dedup_key", None), ("summary", {"a": 1}),
    ("kind", None), ("scope.node", "node-\u202e7"), ("summary", "x" * 2_000_000),
]


def test_wrong_shapes_on_the_alert_topic_are_dead_lettered_and_the_next_alert_goes_out(
        tmp_path: Path) -> None:
    with _pager(tmp_path) as h:
        for i, (path, x) in enumerate(BAD):
            h.handle(_with(_good(f"bad-{i}"), path, x))
        for raw in (None, b"", b"\xff", b"[" * 5000, b"null", b'"x"', b"1e999"):
            h.handle(raw)
        h.handle(_good("node-001"))
        h.rx.wait_for("the good alert", lambda reqs: any(
            r.json()["alert"]["scope"]["node"] == "node-001" for r in reqs))
        assert h.pager.close(5.0)
    delivered = [r.json()["alert"]["scope"]["node"] for r in h.rx.requests]
    # each bad message went somewhere a person can see, once: delivered as it was (a string
    # where a number is read as one, a list of evidence dropped), or dead-lettered with why
    assert len(h.dead()) + len(delivered) == len(BAD) + 7 + 1
    assert all("not an alert envelope" in d["value"]["reason"] for d in h.dead())
    assert delivered[-1] == "node-001"


# -- findings ----------------------------------------------------------------------------

@pytest.mark.parametrize(("path", "x"), [("dedup_key", None), ("kind", None),
                                         ("onset_ts", "nan"), ("detected_ts", "1e999")])
def test_a_required_field_null_or_not_finite_is_dead_lettered(path: str, x: Any,
                                                              tmp_path: Path) -> None:
    with _pager(tmp_path) as h:
        h.handle(_with(_good("node-002"), path, x))
        h.handle(_good("node-001"))
        h.rx.wait_for("the good alert", lambda reqs: any(
            r.json()["alert"]["scope"]["node"] == "node-001" for r in reqs))
        assert h.pager.close(5.0)
    assert [r.json()["alert"]["scope"]["node"] for r in h.rx.requests] == ["node-001"]
    assert len(h.dead()) == 1


@pytest.mark.parametrize("field", ["switch", "domain", "node", "job"])
def test_a_scope_id_of_the_wrong_type_does_not_stop_the_pager(field: str,
                                                              tmp_path: Path) -> None:
    storm = {"group_by": ["cluster", field, "kind", "cause"], "group_wait_s": 0.0}
    with _pager(tmp_path, storm) as h:
        bad = _with(_good("node-002"), f"scope.{field}", ["node-002"])
        errors: list[BaseException] = []
        try:
            h.handle(bad)
        except Exception as exc:  # noqa: BLE001 - what the pager's loop would die of
            errors.append(exc)
        h.handle(_good("node-001"))
        h.loop.pager.tick()
        h.rx.wait_for("the good alert", lambda reqs: any(
            r.json()["alert"]["scope"]["node"] == "node-001" for r in reqs))
    assert errors == []
    assert len(h.dead()) == 1



def test_delivering_an_alert_does_not_cost_more_the_more_are_active(tmp_path: Path) -> None:
    """A storm of distinct firing alerts: the Alertmanager sink's state write a delivery does
    not grow with the alerts already active (it rewrote the whole active set after every
    delivery: O(n^2), a 2 MB rewrite an alert at 3,000 active).  Bytes this process wrote
    (Linux's /proc/self/io wchar: files and sockets alike) a delivery, first 150 against
    last 150 of 600."""
    def wchar() -> int:
        io = Path("/proc/self/io").read_text()
        return int(next(x for x in io.splitlines() if x.startswith("wchar:")).split()[1])

    written: list[int] = []
    with Receiver() as rx:
        cfg = PagerConfig.from_dict({"sinks": {"am": {"type": "alertmanager", "url": rx.url,
                                                      **FAST}},
                                     "deadletter_file": str(tmp_path / "dead.jsonl"),
                                     "state_dir": str(tmp_path / "state")}, env={})
        (tmp_path / "state").mkdir()
        sink = AlertmanagerSink(cfg.sinks["am"], PagerMetrics(CollectorRegistry(), cfg.sinks),
                                state_dir=tmp_path / "state", stop=threading.Event())
        for i in range(600):
            a = alert(f"node-{i:05d}")
            before = wchar()
            assert sink.deliver(Notification("am", "trigger", a.dedup_key, "warning",
                                             a)).delivered
            written.append(wchar() - before)
        restored = AlertmanagerSink(cfg.sinks["am"],
                                    PagerMetrics(CollectorRegistry(), cfg.sinks),
                                    state_dir=tmp_path / "state", stop=threading.Event())
        assert restored.active == sink.active and len(sink.active) == 600
    first, last = sum(written[:150]) / 150, sum(written[-150:]) / 150
    assert first > 0 and last <= 2 * first, (
        f"{first:,.0f} B written a delivery at first, {last:,.0f} B last")
