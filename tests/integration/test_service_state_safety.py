"""A crafted message on faultline.state runs no code: it is refused, and the worker goes on.

Before the worker ever starts, its state topic is filled with one message per
partition it will get: a pickle that would create a marker file (what
``pickle.loads`` on restore used to run), or a well-formed but unsigned
snapshot when the worker has a ``snapshot_key`` — each claiming an offset far
past the end, so a worker that trusted it would skip the whole log.  The
worker must refuse every one (log line, metric), start each partition from
the group's committed position, and raise the problems of the in-process
replay.
"""

from __future__ import annotations

import pickle
import socket
import urllib.request
from pathlib import Path

import pytest
from service_harness import Deployment, expected_problems, wait_settled

from detector.events import TELEMETRY_TOPICS
from detector.monitors import Monitors
from detector.service.kafka_io import FINDINGS, STATE, ensure_topics
from detector.service.state_store import encode_value, snapshot_key
from detector.settings import Settings
from detector.statecodec import encode_state

pytestmark = pytest.mark.kafka

CLAIMED_OFFSET = 10**12  # far past the end: trusting it would skip everything


class _Marker:
    def __init__(self, path: Path) -> None:
        self.path = path

    def __reduce__(self) -> tuple:
        import os
        return (os.system, (f"touch {self.path}",))


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_crafted_state_messages_are_refused_and_the_worker_goes_on(
        kafka_bootstrap: str, service_incident_log: Path, service_incident_topology: Path | None,
        tmp_path: Path) -> None:
    key = "test-snapshot-key"  # the pickles are refused before any key is looked at
    marker = tmp_path / "code-ran"
    dep = Deployment(kafka_bootstrap, tmp_path, service_incident_topology)
    port = _free_port()
    dep.env["FAULTLINE_METRICS_PORT"] = str(port)
    dep.env["FAULTLINE_SNAPSHOT_KEY"] = key
    settings = Settings.load(env=dep.env)
    partitions = ensure_topics(settings)
    crafted_pickle = pickle.dumps(_Marker(marker))
    foreign = encode_state({"v": 1, "monitors": Monitors(), "idle_seq": 0, "events": 0,
                            "invalid": 0})  # our format, but nobody signed it
    producer = dep.producer()
    sent = 0
    for contract in (*TELEMETRY_TOPICS, FINDINGS):
        real = settings.topic(contract)
        for p in range(partitions[real]):
            blob = foreign if p % 2 else crafted_pickle
            producer.produce(settings.topic(STATE), encode_value(CLAIMED_OFFSET, blob),
                             snapshot_key(settings.group_id, real, p).encode())
            sent += 1
    assert producer.flush(30) == 0
    try:
        dep.produce_all(service_incident_log)
        worker = dep.start_worker("w1")
        wait_settled([worker], service_incident_log)
        expected = expected_problems(service_incident_log, service_incident_topology)
        assert expected and dep.firing_problems() == expected
        assert not marker.exists(), "a state message ran code in the worker"
        status = worker.status() or {}
        assert status["counts"]["refused"] == sent and status["counts"]["restored"] == 0
        log = worker.log_tail(400)
        assert "snapshot of" in log and "refused (not_a_snapshot)" in log
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as r:
            metrics = r.read().decode()
        assert 'faultline_snapshot_refused_total{reason="not_a_snapshot"}' in metrics
        assert 'faultline_snapshot_refused_total{reason="unsigned"}' in metrics
        assert "refused (unsigned)" in log
        assert worker.alive()
        assert worker.terminate() == 0, worker.log_tail()
    finally:
        dep.stop_all()
