"""faultline errors found by blind2's generator (issue 10, round 10), one reproducer each.

Each case is a small log cut from a blind2 log (`bench/blind2/cases/`, labels inside),
replayed through the command line exactly as an operator would (`faultline replay LOG
--alerts-out FILE`, topology from the log). Each test states what an operator needs;
they are strict xfails until faultline does it (see /work/helpers/blind2-findings.md).
"""

from __future__ import annotations

import gzip
import os
import subprocess
import sys
from pathlib import Path

import orjson
import pytest

ROOT = Path(__file__).resolve().parents[1]
CASES = ROOT / "bench" / "blind2" / "cases"
CLI = "import sys; from detector.cli import main; sys.argv[0] = 'faultline'; sys.exit(main())"


def replay(name: str, tmp_path: Path) -> tuple[list[dict], dict]:
    """Firing alerts of one case, and its label."""
    log = CASES / f"{name}.jsonl.gz"
    out = tmp_path / "alerts.jsonl"
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    subprocess.run([sys.executable, "-c", CLI, "replay", str(log), "--alerts-out", str(out),
                    "--quiet"], check=True, env=env, capture_output=True, cwd=ROOT)
    alerts = [orjson.loads(line) for line in out.read_bytes().splitlines() if line.strip()]
    with gzip.open(log) as fh:
        label = next(r["value"] for r in map(orjson.loads, fh) if r["topic"] == "labels")
    return [a for a in alerts if a["value"]["status"] == "firing"], label


def test_the_cases_replay_and_carry_their_fault(tmp_path):
    """The harness itself: every case replays and names a fault (not an xfail)."""
    for log in sorted(CASES.glob("*.jsonl.gz")):
        _, label = replay(log.name.removesuffix(".jsonl.gz"), tmp_path)
        assert label["start_ts"] <= label["end_ts"]


# (Was a strict xfail: "F1: storage ports that stay up split a node's every-compute-port-down
# into 8 NIC isolations".  Now a node's fabric ports are the NICs its topology puts under a
# switch, when it names them: Correlator._every_port.)
def test_node_with_every_compute_port_down_is_one_node_alert(tmp_path):
    alerts, label = replay("node-ports-down-storage-up", tmp_path)
    node = label["scope"]["node"]
    mine = [a["value"] for a in alerts if a["value"]["scope"].get("node") == node]
    assert [v["scope"] for v in mine] == [{"level": "node", "node": node}], (
        "one drain of the node, not one isolation per port")


@pytest.mark.parametrize("case", ["half-rate-port-ib", "half-rate-port-roce"])
def test_port_trained_at_half_rate_is_reported(case, tmp_path):
    """(Was a strict xfail: F2, a port at half rate from the start was never reported.)"""
    alerts, label = replay(case, tmp_path)
    want = label["scope"]
    hits = [a["value"] for a in alerts
            if a["value"]["scope"].get("level") == "nic"
            and a["value"]["scope"].get("node") == want["node"]
            and a["value"]["scope"].get("nic") == want["nic"]]
    assert hits and hits[0]["cause"] == "nic", "a check_link on the port, rate as evidence"
    assert hits[0]["action"]["name"] == "check_link"
    sig = hits[0]["evidence"]["signals"][0]
    assert (sig["rate_gbps"], sig["peer_rate_gbps"]) == (200.0, 400.0)
    assert len(alerts) == len(hits), "and nothing else"


def test_intermittent_power_brake_on_a_tray_is_a_node_power_alert(tmp_path):
    # (Was a strict xfail: "F3: power-brake bursts (0x80|0x8 on every GPU of a tray, its ranks
    # 2.3x slow) page nobody at 30 s DCGM cadence" -- a burst of >= 30 % slower steps is now
    # evidence (slow_burst), explained by a never-routine reason sampled during it; room cause.)
    alerts, label = replay("power-brake-bursts-30s", tmp_path)
    node = label["scope"]["node"]
    hits = [a for a in alerts if a["value"]["scope"] == {"level": "node", "node": node}]
    assert hits, "the tray, by the second burst"
    assert hits[0]["value"]["cause"] == "power"
    assert hits[0]["value"]["detected_ts"] <= label["end_ts"]


@pytest.mark.parametrize("case", ["hot-gpu-escalated-unknown", "hot-gpu-after-idle"])
def test_slow_gpu_already_thermally_throttled_is_attributed_thermal(case, tmp_path):
    # (Was a strict xfail: "F4: a slow GPU already at 84 C with 0x60 is escalated 'unknown'
    # before the thermal isolation" -- the 0x60 sample followed a 0x4 one and was never told:
    # detector.thermal tells throttle_seen again when the reasons change; room cause.
    # hot-gpu-after-idle was one too, F4b: five idle minutes (0x1, 345 MHz) had taught the
    # clock baseline the parked clock -- an idle GPU's clock is no baseline now; room thermal.)
    alerts, label = replay(case, tmp_path)
    node, gpu = label["scope"]["node"], label["scope"]["gpu"]
    mine = [a["value"] for a in alerts
            if a["value"]["scope"].get("node") == node
            and a["value"]["scope"].get("gpu") in (gpu, None)]
    assert mine, "the hot GPU is reported"
    assert mine[0]["cause"] == "thermal", "the first page names the cause telemetry shows"
    assert len({v["dedup_key"] for v in mine}) == 1, "one problem, one page"


# (Was a strict xfail: "F5: an NVSwitch tray failing at mixed DCGM cadence gives 32 GPU NVLink
# isolations before the domain alert".  Now a part's window opened by a faster collector is
# held until its slower nodes have been sampled: Correlator._may_be_failing.)
def test_nvswitch_tray_failure_is_one_domain_alert(tmp_path):
    alerts, label = replay("nvswitch-tray-mixed-cadence", tmp_path)
    scopes = [a["value"]["scope"] for a in alerts]
    assert {"level": "domain", "domain": label["scope"]["domain"]} in scopes
    assert [s for s in scopes if s["level"] == "gpu"] == [], (
        "no GPU drains for errors that every GPU of the rack shares")
