"""The blind generator (bench/blind) keeps DESIGN.md's contract: records, labels, order.

The checks are written from DESIGN.md alone, not from faultline's decoder, so
that the generator stays independent of the code it measures.
"""

from __future__ import annotations

import math

import pytest

from bench.blind.generate import generate

KINDS = {"slow_node", "hardware", "network", "sdc", "unattributed"}
CAUSES = {"thermal", "power", "gpu_memory", "gpu_hardware", "nvlink", "nic", "switch",
          "software", "unknown"}
SCOPE_KEYS = {"gpu": {"node", "gpu"}, "node": {"node"}, "nic": {"node", "nic"},
              "switch": {"switch"}, "domain": {"domain"}, "replica": {"job", "dp_rank"},
              "job": {"job"}}
FLOATS = {"step_ms", "compute_ms", "comm_ms", "loss", "grad_norm", "gpu_temp_c", "mem_temp_c",
          "power_w", "sm_clock_mhz", "rate_gbps"}
INTS = {"step", "rank", "gpu", "tp_rank", "pp_rank", "dp_rank", "port", "sbe_volatile",
        "dbe_volatile", "retired_pages_sbe", "retired_pages_dbe", "pcie_replay",
        "nvlink_crc_errors", "nvlink_replay_errors", "nvlink_recovery_errors", "tx_bytes",
        "rx_bytes", "symbol_errors", "link_downed", "rcv_errors", "xmit_discards", "xmit_wait",
        "out_of_sequence", "packet_seq_err", "np_cnp_sent", "rp_cnp_handled", "throttle", "xid"}
REQUIRED = {
    "telemetry.step": {"ts", "job", "step", "rank", "node", "gpu", "step_ms"},
    "telemetry.ecc": {"ts", "node", "gpu"},
    "telemetry.nic": {"ts", "node", "nic", "port"},
    "telemetry.thermal": {"ts", "node", "gpu"},
}


@pytest.fixture(scope="module", params=[(128, 10.0), (256, 30.0)], ids=["hgx4-i10", "dgx-i30"])
def log(request):
    gpus, interval = request.param
    records, _faults = generate(gpus, seed=1, minutes=6.0, interval_s=interval)
    return records


def check_value(topic: str, v: dict) -> None:
    missing = REQUIRED[topic] - v.keys()
    assert not missing, (topic, missing, v)
    assert isinstance(v["ts"], float) and math.isfinite(v["ts"])
    for k, x in v.items():
        if x is None:
            continue
        if k in INTS:
            assert isinstance(x, int) and not isinstance(x, bool) and 0 <= x < 2**63, (k, v)
        elif k in FLOATS:
            assert isinstance(x, int | float) and math.isfinite(x) and x >= 0, (k, v)
    if topic == "telemetry.step":
        par = {"tp_rank", "pp_rank", "dp_rank"} & v.keys()
        assert par in (set(), {"tp_rank", "pp_rank", "dp_rank"}), v
        spent = v.get("compute_ms", 0.0) + v.get("comm_ms", 0.0)
        assert v["step_ms"] >= spent - 1e-6, v
    if topic == "telemetry.nic":
        assert v.get("link_state") in (None, "up", "down")
    if topic == "telemetry.ecc" and v.get("recovery_action") is not None:
        assert v["recovery_action"] in ("none", "gpu_reset", "node_reboot", "drain_p2p",
                                        "drain_and_reset")


def test_records_follow_the_contract(log):
    assert log[0]["topic"] == "topology" and log[0]["value"]["format"] == "slurm"
    assert "SwitchName=" in log[0]["value"]["text"]
    topics = {r["topic"] for r in log}
    assert topics == {"topology", "labels", *REQUIRED}
    for r in log:
        if r["topic"] in REQUIRED:
            check_value(r["topic"], r["value"])


def test_event_time_disorder_stays_within_five_seconds(log):
    high = -math.inf
    worst = 0.0
    seen: set[bytes] = set()
    dups = 0
    for r in log:
        if r["topic"] not in REQUIRED:
            continue
        ts = r["value"]["ts"]
        worst = max(worst, high - ts)
        high = max(high, ts)
        key = repr(sorted(r["value"].items())).encode()
        dups += key in seen
        seen.add(key)
    assert 0.0 < worst <= 5.0  # disordered, but within the contract's 5 s
    assert dups > 0  # at-least-once delivery shows


def test_labels_are_well_formed_and_sit_on_real_records(log):
    labels = [r["value"] for r in log if r["topic"] == "labels"]
    assert len(labels) >= 5
    stamps = {r["value"]["ts"] for r in log if r["topic"] in REQUIRED}
    ids = set()
    for lab in labels:
        assert set(lab) == {"fault_id", "kind", "cause", "scope", "start_ts", "end_ts",
                            "attributable"}
        assert lab["fault_id"] not in ids
        ids.add(lab["fault_id"])
        assert lab["kind"] in KINDS and lab["cause"] in CAUSES
        assert isinstance(lab["attributable"], bool)
        level = lab["scope"]["level"]
        assert SCOPE_KEYS[level] <= lab["scope"].keys()
        assert lab["start_ts"] <= lab["end_ts"]
        # a label starts and ends on the event time of a record the fault changed
        assert lab["start_ts"] in stamps and lab["end_ts"] in stamps, lab
    assert any(not lab["attributable"] for lab in labels)


def test_healthy_noise_is_there(log):
    """Power capping, idle GPUs and application XIDs are in the log: nothing to page about."""
    thermal = [r["value"] for r in log if r["topic"] == "telemetry.thermal"]
    assert sum(v["throttle"] & 0x4 != 0 for v in thermal) > len(thermal) // 10
    assert any(v["throttle"] & 0x1 for v in thermal)
    xids = {r["value"]["xid"] for r in log if r["topic"] == "telemetry.ecc"}
    assert 45 in xids and xids & {13, 31, 43}
