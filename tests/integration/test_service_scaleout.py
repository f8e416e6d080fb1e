"""Two workers in one group share the partitions and together raise what one worker raises."""

from __future__ import annotations

from pathlib import Path

import pytest
from service_harness import Deployment, expected_problems, wait_for, wait_settled

from replay.log import Record, read_records

pytestmark = pytest.mark.kafka

TELEMETRY_PARTITIONS = 4 * 4  # four topics, FAULTLINE_PARTITIONS_TELEMETRY=4 in the harness


def test_two_workers_share_the_partitions_and_raise_the_same_problems(
        kafka_bootstrap: str, service_incident_log: Path, service_incident_topology: Path | None,
        tmp_path: Path) -> None:
    expected = expected_problems(service_incident_log, service_incident_topology)
    records = sum(1 for r in read_records(service_incident_log)
                  if isinstance(r, Record) and r.topic.startswith("telemetry."))
    dep = Deployment(kafka_bootstrap, tmp_path, service_incident_topology)
    try:
        workers = [dep.start_worker("a"), dep.start_worker("b")]

        def split() -> bool:
            held = [len((w.status() or {}).get("sources", {})) for w in workers]
            return all(held) and sum(held) == TELEMETRY_PARTITIONS

        wait_for("both workers to hold telemetry partitions", split, 90,
                 on_timeout=lambda: "\n".join(w.log_tail() for w in workers))
        dep.produce_all(service_incident_log)
        wait_settled(workers, service_incident_log)

        assert dep.firing_problems() == expected
        wait_for("the status files to count every record",
                 lambda: sum((w.status() or {})["counts"]["events"] for w in workers) >= records,
                 30)
        for w in workers:
            assert w.terminate() == 0, w.log_tail()
    finally:
        dep.stop_all()
