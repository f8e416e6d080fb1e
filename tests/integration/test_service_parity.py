"""Through Kafka, one worker raises the same problems as the in-process replay of the same log."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import BUNDLED_INCIDENT, BUNDLED_TOPOLOGY
from service_harness import Deployment, expected_problems, firing, wait_for, wait_settled

from replay.runner import LogResult

pytestmark = pytest.mark.kafka


@pytest.mark.parametrize("delivery", ["batch", "agents"])
def test_one_worker_raises_the_problems_of_the_in_process_replay(
        kafka_bootstrap: str, service_incident_log: Path, service_incident_topology: Path | None,
        tmp_path: Path, delivery: str) -> None:
    dep = Deployment(kafka_bootstrap, tmp_path, service_incident_topology)
    dep.env["FAULTLINE_DELIVERY"] = delivery
    try:
        dep.produce_all(service_incident_log)
        worker = dep.start_worker("w1")
        wait_settled([worker], service_incident_log)
        expected = expected_problems(service_incident_log, service_incident_topology)
        assert expected, "the incident raises nothing in process: a test that cannot fail"
        assert dep.firing_problems() == expected
        assert worker.alive()
        assert worker.terminate() == 0, worker.log_tail()
        status = worker.status()
        assert status is not None and status["stopped"]
        assert status["counts"]["deadletters"] == 0
    finally:
        dep.stop_all()


def test_a_restarted_worker_resumes_from_its_snapshots(
        kafka_bootstrap: str, service_incident_log: Path, service_incident_topology: Path | None,
        tmp_path: Path) -> None:
    """After a graceful stop, a new worker restores every partition and re-raises nothing."""
    dep = Deployment(kafka_bootstrap, tmp_path, service_incident_topology)
    try:
        dep.produce_all(service_incident_log)
        first = dep.start_worker("first")
        wait_settled([first], service_incident_log)
        assert first.terminate() == 0, first.log_tail()
        alerts_before = len(dep.alerts())

        second = dep.start_worker("second")
        status = wait_for("the second worker's assignment",
                          lambda: (second.status() or {}).get("counts", {}).get("restored"), 60,
                          on_timeout=second.log_tail)
        assert status == 1 + 4 * 4  # every telemetry partition and the findings partition
        wait_for("a heartbeat after the restore",
                 lambda: second.released() >= first.released(), 30, on_timeout=second.log_tail)
        assert (second.status() or {})["counts"]["events"] == 0  # nothing read twice
        assert len(dep.alerts()) == alerts_before  # and nothing raised twice
    finally:
        dep.stop_all()


def test_the_bundled_incident_raises_the_same_problems_through_kafka(
        kafka_bootstrap: str, tmp_path: Path, bundled_incident_replay: LogResult) -> None:
    """Every fault kind and every benign event of the bundled incident, through one worker."""
    log, topology = BUNDLED_INCIDENT, BUNDLED_TOPOLOGY
    dep = Deployment(kafka_bootstrap, tmp_path, topology)
    try:
        dep.produce_all(log)
        worker = dep.start_worker("w1")
        wait_settled([worker], log)
        # expected_problems(log, topology), from the session's one in-process replay
        expected = firing((a.topic, a.to_dict()) for a in bundled_incident_replay.alerts)
        assert len(expected) == 10
        assert dep.firing_problems() == expected
        assert worker.terminate() == 0, worker.log_tail()
    finally:
        dep.stop_all()
