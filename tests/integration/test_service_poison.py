"""Messages that once stopped a worker, through the real broker (issue 11).

A deeply nested message, ranks of 2^63 and 1,048,575, a year-2100 ``ts`` and
an ANSI-escaped name, interleaved with an incident log and
around a SIGKILL: the workers stay up, each bad message is dead-lettered with
its reason, and the problems raised are the in-process replay's.  Then every
Kafka compression codec real shippers use, produced by Debian's ``kcat``.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import orjson
import pytest
from service_harness import (
    Deployment,
    expected_problems,
    firing,
    log_span,
    wait_for,
    wait_settled,
)
from test_service_restart import split_log

from detector.events import ECC, STEP
from detector.metrics import invalid_reason
from detector.service.kafka_io import DEADLETTER
from detector.testing import poison_messages
from replay.log import Record, read_records

pytestmark = pytest.mark.kafka


def _last_step(log: Path, before_ts: float) -> tuple[str, int, str]:
    """(job, step, node) of the log's last step record before ``before_ts``."""
    found = ("job-1", 0, "node-000")
    for rec in read_records(log):
        if isinstance(rec, Record) and rec.topic == STEP and rec.value["ts"] < before_ts:
            found = (rec.value["job"], rec.value["step"], rec.value["node"])
    return found


def _send_poison(dep: Deployment, log: Path, ts: float) -> int:
    job, step, node = _last_step(log, ts)
    producer = dep.producer()
    sent = 0
    for topic, raw in poison_messages(ts, job=job, node=node, step_no=step, nan_loss=False):
        key = (job if topic == STEP else node).encode()
        producer.produce(dep.topic(topic), value=raw, key=key)
        sent += 1
    assert producer.flush(30) == 0
    return sent


def test_poison_interleaved_with_an_incident_and_a_kill_changes_no_problem(
        kafka_bootstrap: str, service_incident_log: Path, service_incident_topology: Path | None,
        tmp_path: Path) -> None:
    expected = expected_problems(service_incident_log, service_incident_topology)
    start, end = log_span(service_incident_log)
    mid = (start + end) / 2
    dep = Deployment(kafka_bootstrap, tmp_path, service_incident_topology)
    try:
        first = dep.start_worker("first")
        wait_for("the first worker's assignment", lambda: (first.status() or {}).get("sources"),
                 60, on_timeout=first.log_tail)
        head, tail = split_log(service_incident_log, mid, tmp_path)
        _send_poison(dep, service_incident_log, start)  # the first records some partitions see
        dep.produce_all(head)
        _send_poison(dep, service_incident_log, mid - 1.0)
        wait_for("a first alert", dep.firing_problems, 60, interval_s=0.5,
                 on_timeout=first.log_tail)
        assert first.alive(), first.log_tail()
        first.kill()  # SIGKILL: its successor meets the same messages again

        second = dep.start_worker("second")
        _send_poison(dep, service_incident_log, mid + 1.0)
        dep.produce_all(tail)
        wait_settled([second], service_incident_log, timeout_s=180)
        assert second.alive(), second.log_tail()

        assert firing(dep.alerts()) == expected
        dead = dep.read_topic(DEADLETTER)
        labels = {invalid_reason(dict(m.headers())["faultline-reason"].decode()) for m in dead}
        assert {"too_deep", "out_of_range", "ts_out_of_range", "bad_name",
                "missing_field"} <= labels, labels
        assert "engine_error" not in labels and "other" not in labels
        assert second.terminate() == 0, second.log_tail()
    finally:
        dep.stop_all()


def test_every_compression_codec_shippers_use_is_read(kafka_bootstrap: str,
                                                      tmp_path: Path) -> None:
    """kcat -z gzip|snappy|lz4|zstd: one batch each, an XID 48 on its own GPU in each."""
    # Not a skip: `make test` installs kcat (`make servers`), and a skip would hide a failure.
    assert shutil.which("kcat"), "needs Debian's kcat: run `make servers`"
    codecs = ("gzip", "snappy", "lz4", "zstd")
    dep = Deployment(kafka_bootstrap, tmp_path)
    try:
        worker = dep.start_worker("w1")
        wait_for("the worker's assignment", lambda: (worker.status() or {}).get("sources"), 60,
                 on_timeout=worker.log_tail)
        ts = 1767225600.0
        for gpu, codec in enumerate(codecs):
            lines = [orjson.dumps({"ts": ts + i, "node": "node-kcat", "gpu": gpu,
                                   "dbe_volatile": int(i >= 5), "xid": 48 if i == 5 else None})
                     for i in range(10)]
            out = subprocess.run(
                ["kcat", "-P", "-b", kafka_bootstrap, "-t", dep.topic(ECC), "-k", "node-kcat",
                 "-z", codec, "-X", "linger.ms=50"],
                input=b"\n".join(lines) + b"\n", capture_output=True, timeout=60)
            assert out.returncode == 0, out.stderr.decode()

        def scopes() -> set[str]:
            return {p[2] for p in dep.firing_problems()}

        want = {f"gpu:node-kcat/{gpu}" for gpu in range(len(codecs))}
        wait_for("an XID 48 alert from each codec's batch", lambda: want <= scopes(), 90,
                 interval_s=0.5, on_timeout=worker.log_tail)
        assert worker.alive(), worker.log_tail()
        status = worker.status() or {}
        assert status["counts"]["deadletters"] == 0, worker.log_tail()
    finally:
        dep.stop_all()
