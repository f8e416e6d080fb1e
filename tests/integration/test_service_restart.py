"""A worker killed mid-log: its successor restores the snapshots; the problems come out the same."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

import pytest
from service_harness import (
    Deployment,
    expected_problems,
    firing,
    log_span,
    wait_for,
    wait_settled,
)

from detector.alerts import Scope

pytestmark = pytest.mark.kafka

# The log is produced paced by event time, over this many wall seconds, so the kill
# lands while records are still arriving.
PRODUCE_OVER_S = 15.0


def test_killed_worker_is_replaced_without_losing_or_doubling_a_problem(
        kafka_bootstrap: str, service_incident_log: Path, service_incident_topology: Path | None,
        tmp_path: Path) -> None:
    expected = expected_problems(service_incident_log, service_incident_topology)
    start, end = log_span(service_incident_log)
    dep = Deployment(kafka_bootstrap, tmp_path, service_incident_topology)
    dep.env["FAULTLINE_SNAPSHOT_KEY"] = "restart-test-key"  # signed snapshots, read back
    try:
        first = dep.start_worker("first")
        wait_for("the first worker's assignment", lambda: (first.status() or {}).get("sources"),
                 60, on_timeout=first.log_tail)
        producer = dep.produce_log(service_incident_log,
                                   speed=max(1.0, (end - start) / PRODUCE_OVER_S))
        wait_for("a first alert", dep.firing_problems, 60, interval_s=0.5,
                 on_timeout=first.log_tail)
        assert producer.poll() is None, "the log was all produced before the kill: too fast"
        first.kill()  # SIGKILL: no snapshot, no commit, no goodbye to the group

        second = dep.start_worker("second")
        out, _ = producer.communicate(timeout=120)
        assert producer.returncode == 0, out.decode(errors="replace")
        wait_settled([second], service_incident_log, timeout_s=120)

        alerts = dep.alerts()
        assert firing(alerts) == expected
        keys: dict[tuple[str, str, str], set[str]] = defaultdict(set)
        for topic, v in alerts:
            keys[(topic, v["kind"], Scope.from_dict(v["scope"]).key)].add(v["dedup_key"])
        assert all(len(k) == 1 for k in keys.values()), keys
        status = second.status() or {}
        assert status["counts"]["restored"] > 0, "the second worker started from nothing"
        assert status["counts"]["refused"] == 0, second.log_tail()
        assert second.terminate() == 0, second.log_tail()
    finally:
        dep.stop_all()
