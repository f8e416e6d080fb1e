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
from replay.log import Record, read_records, write_records

pytestmark = pytest.mark.kafka



def split_log(log: Path, at_ts: float, tmp: Path) -> tuple[Path, Path]:
    """The log's records before ``at_ts`` (and any topology record), and the rest."""
    head, tail = [], []
    for rec in read_records(log):
        if not isinstance(rec, Record):
            continue
        ts = rec.value.get("ts") if isinstance(rec.value, dict) else None
        (tail if isinstance(ts, (int, float)) and ts >= at_ts else head).append(
            {"topic": rec.topic, "value": rec.value})
    write_records(tmp / "head.jsonl", head)
    write_records(tmp / "tail.jsonl", tail)
    return tmp / "head.jsonl", tmp / "tail.jsonl"


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
        # The kill lands mid-log: the first half is in, a first alert is out, and the
        # second half arrives only after the kill (a condition, not a race with a clock).
        head, tail = split_log(service_incident_log, (start + end) / 2, tmp_path)
        dep.produce_all(head)
        wait_for("a first alert", dep.firing_problems, 60, interval_s=0.5,
                 on_timeout=first.log_tail)
        first.kill()  # SIGKILL: no snapshot, no commit, no goodbye to the group

        second = dep.start_worker("second")
        dep.produce_all(tail)
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
