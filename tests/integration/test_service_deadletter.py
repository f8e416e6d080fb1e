"""Bad input of every kind is dead-lettered with reason and bytes; good input around it works."""

from __future__ import annotations

import json
from pathlib import Path

import orjson
import pytest
from service_harness import Deployment, wait_for

pytestmark = pytest.mark.kafka

T0 = 1767225600.0
ECC, THERMAL, STEP, NIC = "telemetry.ecc", "telemetry.thermal", "telemetry.step", "telemetry.nic"


def ecc(ts: float, node: str, gpu: int, **extra: object) -> bytes:
    return orjson.dumps({"ts": ts, "node": node, "gpu": gpu, "sbe_volatile": 0,
                         "dbe_volatile": 0, **extra})


def step(ts: float, rank: int, **extra: object) -> bytes:
    return orjson.dumps({"ts": ts, "job": "job-dl", "step": 7, "rank": rank, "node": "node-b",
                         "gpu": rank, "step_ms": 1000.0, "compute_ms": 700.0, "comm_ms": 250.0,
                         **extra})


# (topic, key, value, what the reason must say)
BAD = [
    (ECC, b"node-a", b"{not json", "not valid JSON"),
    (THERMAL, b"node-a", b"[1, 2, 3]", "must be a JSON object"),
    (THERMAL, b"node-a", b'{"ts": 5.0, "node": "node-a", "gpu": "3"}', "field 'gpu'"),
    (ECC, b"node-a", b'{"ts": 5.0, "gpu": 0}', "field 'node': is required"),
    (ECC, b"node-a", b'{"ts": NaN, "node": "node-a", "gpu": 0}', "must be a finite number"),
    (STEP, b"job-dl", step(T0 + 5, 1, step_ms=-5.0, compute_ms=None, comm_ms=None),
     "field 'step_ms'"),
    (STEP, b"job-dl", step(T0 + 5, 2, tp_rank=0), "come all three or none"),
    (ECC, b"node-a", ecc(T0 + 5, "node-a", 2, recovery_action="explode"),
     "field 'recovery_action'"),
    (NIC, b"node-a", b"\xff\xfe\x00garbage", "not valid JSON"),
    (NIC, b"node-a", None, "has no value"),
    # Invalid by the contract, yet a NaN loss is what corruption looks like: the engine
    # hears of it too (an sdc escalation on that GPU).
    (STEP, b"job-dl", step(T0 + 6, 3).replace(b'"ts"', b'"loss":NaN,"ts"'),
     "must be a finite number"),
]


def test_bad_messages_go_to_the_dead_letter_topic_and_the_worker_goes_on(
        kafka_bootstrap: str, tmp_path: Path) -> None:
    dep = Deployment(kafka_bootstrap, tmp_path)
    try:
        worker = dep.start_worker("w1")
        wait_for("the worker's assignment", lambda: (worker.status() or {}).get("sources"), 60,
                 on_timeout=worker.log_tail)
        producer = dep.producer()
        good = 0
        for i, (topic, key, value, _) in enumerate(BAD):
            # Good samples between the bad ones, an XID 79 among them.
            producer.produce(dep.topic(ECC), ecc(T0 + i, "node-a", 1, xid=79 if i == 4 else None),
                             b"node-a")
            producer.produce(dep.topic(topic), value, key)
            good += 1
        assert producer.flush(30) == 0

        expected = {("fl:iso:hardware:gpu:node-a/1", "hardware"),
                    ("fl:esc:sdc:gpu:node-b/3", "sdc")}
        wait_for("the alerts of the good (and salvaged) messages",
                 lambda: {(v["dedup_key"], v["kind"]) for _, v in dep.alerts()} >= expected, 60,
                 on_timeout=worker.log_tail)

        dead = wait_for("every bad message in the dead-letter topic",
                        lambda: (d := dep.read_topic("telemetry.deadletter")) and
                        len(d) >= len(BAD) and d, 60, on_timeout=worker.log_tail)
        assert len(dead) == len(BAD)
        by_value = {m.value(): m for m in dead}
        for topic, key, value, why in BAD:
            m = by_value[value]
            headers = dict(m.headers())
            assert m.key() == key
            assert why in headers["faultline-reason"].decode(), headers
            assert headers["faultline-topic"].decode() == dep.topic(topic)
            assert int(headers["faultline-offset"]) >= 0
            assert headers["faultline-partition"].decode().isdigit()

        status = wait_for("the status file to count every message",
                          lambda: (st := worker.status()) and
                          st["counts"]["events"] >= good + len(BAD) and st, 30)
        assert status["counts"]["events"] == good + len(BAD)
        assert status["counts"]["deadletters"] == len(BAD)
        assert sum(s["events"] for s in status["sources"].values()) == good

        # Still running, still processing: one more XID on another GPU raises its own alert.
        assert worker.alive()
        producer.produce(dep.topic(ECC), ecc(T0 + 30, "node-a", 5, xid=79), b"node-a")
        assert producer.flush(30) == 0
        wait_for("an alert after the bad input",
                 lambda: any(v["dedup_key"] == "fl:iso:hardware:gpu:node-a/5"
                             for _, v in dep.alerts()), 60, on_timeout=worker.log_tail)
        assert worker.terminate() == 0, worker.log_tail()
        assert json.loads((worker.workdir / "status.json").read_text())["stopped"]
    finally:
        dep.stop_all()
