"""faultline's pager into a real Alertmanager, and on to a webhook: grouped, labelled, resolved."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
from prometheus_client import CollectorRegistry
from servers_harness import alertmanager

from detector.alerts import ESCALATION
from detector.metrics import PagerMetrics
from detector.pager.config import PagerConfig
from detector.pager.core import FileDeadLetters, Pager
from detector.pager.testing import Receiver, alert, resolved

pytestmark = pytest.mark.servers

AM_CONFIG = """
route:
  receiver: hook
  group_by: [cluster, kind, cause]
  group_wait: 1s
  group_interval: 1s
  repeat_interval: 1h
receivers:
  - name: hook
    webhook_configs:
      - url: {url}/alertmanager
        send_resolved: true
"""


def groups(rx: Receiver, status: str, kind: str) -> list[dict[str, Any]]:
    return [b for b in rx.bodies() if b["status"] == status and
            b["groupLabels"].get("kind") == kind]


def test_alertmanager_groups_labels_and_resolves_faultline_alerts(tmp_path: Path) -> None:
    with Receiver() as rx, alertmanager(tmp_path, AM_CONFIG.format(url=rx.url)) as am:
        cfg = PagerConfig.from_dict({
            "sinks": {"alertmanager": {"url": am.url, "backoff_initial_s": 0.05}},
            "deadletter_file": str(tmp_path / "dead.jsonl"),
            "state_dir": str(tmp_path / "state")}, env={})
        pager = Pager(cfg, PagerMetrics(CollectorRegistry(), cfg.sinks),
                      FileDeadLetters(tmp_path / "dead.jsonl"))
        pager.start()
        try:
            # Live alerts: detected now. (Alertmanager sends an alert that started longer
            # than group_wait ago at once, without waiting for its group.)
            now = time.time()
            nics = [alert(f"node-{i:03d}", detected_ts=now) for i in range(3)]
            esc = alert("node-042", topic=ESCALATION, kind="unattributed", cause="unknown",
                        detected_ts=now)
            for a in (*nics, esc):
                pager.submit(a, None)

            # One group for the three NIC alerts; were they posted further apart than
            # group_wait on a loaded machine, the group's next notification has all three.
            nic_group = rx.wait_for("the NIC group with all three alerts", lambda _: [
                g for g in groups(rx, "firing", "network") if len(g["alerts"]) == 3], 20)[-1]
            assert nic_group["groupLabels"] == {"cluster": "c1", "kind": "network",
                                                "cause": "nic"}
            assert sorted(a["labels"]["node"] for a in nic_group["alerts"]) == [
                "node-000", "node-001", "node-002"]
            first = next(a for a in nic_group["alerts"] if a["labels"]["node"] == "node-000")
            assert first["labels"] == {
                "alertname": "FaultlineIsolation", "topic": "isolation", "source": "faultline",
                "kind": "network", "cause": "nic", "severity": "warning", "level": "nic",
                "node": "node-000", "nic": "mlx5_0", "cluster": "c1", "tenant": "tenant-a",
                "action": "check_link", "dedup_key": nics[0].dedup_key}
            ann = first["annotations"]
            assert ann["summary"] == ("[faultline isolation] network/nic on "
                                      "nic:node-000/mlx5_0: signal=link_down")
            assert ann["action"].startswith("check_link: look at nic:node-000/mlx5_0 "
                                            "(requires approval); rollback:")
            assert '"link_down"' in ann["evidence"]

            (esc_group,) = rx.wait_for("the escalation", lambda _: groups(
                rx, "firing", "unattributed"), 20)
            (e,) = esc_group["alerts"]
            assert e["labels"]["alertname"] == "FaultlineEscalation"
            assert e["labels"]["severity"] == "critical"
            assert e["annotations"]["next_diagnostic"] == "`dcgmi diag -r 3` on node-042"

            for a in nics:
                pager.submit(resolved(a), None)
            done = rx.wait_for("the NIC group resolved", lambda _: [
                g for g in groups(rx, "resolved", "network") if len(g["alerts"]) == 3], 20)[-1]
            assert sorted(a["status"] for a in done["alerts"]) == ["resolved"] * 3
            # The escalation still fires: Alertmanager was not told otherwise.
            active = {a["labels"]["alertname"] for a in
                      _get(am.url + "/api/v2/alerts?active=true&silenced=false")}
            assert active == {"FaultlineEscalation"}
        finally:
            pager.close(5)


def _get(url: str) -> Any:
    from servers_harness import http_json
    return http_json(url)
