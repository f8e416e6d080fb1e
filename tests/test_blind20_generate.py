"""blind20 (round 29): the generator is deterministic, every record keeps DESIGN's input contract,
every label is a valid DESIGN label that spans records of its unit, the two stories make the
shapes they exist for, and a small log replays through `faultline replay` (exit status only:
the detector's answers are measured by bench/blind20/measure.py, not pinned here). The checker
is blind12's."""

from __future__ import annotations

import json

import pytest

from bench.blind20 import generate
from bench.blind20.measure import replay
from tests.test_blind12_generate import _breaches, _label_breaches, _records

FAULTS = {"fabric": {"nic-pcie-x8", "port-flap"},
          "board": {"pcie-switch-pair", "sbe-storm-remap", "rack-cooling-bd09",
                    "rack-cooling-bd10", "rack-cooling-bd11"}}


def _tele(recs: list[dict], topic: str) -> list[dict]:
    return [r["value"] for r in recs if r["topic"] == f"telemetry.{topic}"]


def _labels(recs: list[dict]) -> dict[str, dict]:
    return {r["value"]["fault_id"]: r["value"] for r in recs if r["topic"] == "labels"}


def _deltas(rows: list[dict], key: str) -> list[float]:
    rows = sorted(rows, key=lambda v: v["ts"])
    return [b[key] - a[key] for a, b in zip(rows, rows[1:], strict=False)]


@pytest.mark.parametrize("story", ["fabric", "board"])
def test_generator_is_deterministic_and_keeps_the_contract(story, tmp_path):
    logs = [generate.write(tmp_path / d, story, 5, minutes=6.0) for d in ("one", "two")]
    assert logs[0].read_bytes() == logs[1].read_bytes()
    recs = _records(logs[0])
    assert _breaches(recs) == []
    assert _label_breaches(recs) == []
    assert set(_labels(recs)) == FAULTS[story]
    fx = json.loads(logs[0].with_name(f"{story}-s5.effects.json").read_text())
    assert fx and all(e["start_ts"] <= e["end_ts"] for e in fx)


def test_fabric_x8_nic_sends_cnps_at_full_rate_and_the_flap_counts_downs(tmp_path):
    """The x8 NIC negotiates 400 like every port and moves its job's bytes, but sends CNPs at
    >= 50x any other port of its node; the flapping port's link_downed rises once a flap; the
    topology is a Slurm topology.conf."""
    recs = _records(generate.write(tmp_path, "fabric", 1, minutes=8.0))
    assert recs[0]["value"]["format"] == "slurm"
    lab = _labels(recs)
    x8 = lab["nic-pcie-x8"]["scope"]
    nic = [v for v in _tele(recs, "nic") if v["ts"] > lab["nic-pcie-x8"]["start_ts"] + 60]
    mine = [v for v in nic if (v["node"], v["nic"]) == (x8["node"], x8["nic"])]
    assert {v["rate_gbps"] for v in mine} == {400.0}
    bad = sum(_deltas(mine, "np_cnp_sent"))
    for k in range(8):
        other = [v for v in nic if v["node"] == x8["node"] and v["nic"] == f"mlx5_{k}"]
        if f"mlx5_{k}" != x8["nic"]:
            assert bad >= 50 * sum(_deltas(other, "np_cnp_sent"))
    fl = lab["port-flap"]["scope"]
    port = [v for v in _tele(recs, "nic") if (v["node"], v["nic"]) == (fl["node"], fl["nic"])]
    assert sum(_deltas(port, "link_downed")) >= 2


def test_board_pair_replays_storm_remaps_rack_throttles(tmp_path):
    """The PCIe pair's two GPUs replay and no other GPU of the node; XID 92 comes before 63
    and the remap is pending after it; SW thermal 0x20 shows only on the rack losing its
    cooling, never in the warm aisle."""
    recs = _records(generate.write(tmp_path, "board", 2, minutes=15.0))
    lab = _labels(recs)
    node = lab["pcie-switch-pair"]["scope"]["node"]
    ecc = [v for v in _tele(recs, "ecc") if "xid" not in v]
    moved = {g for g in range(8)
             if sum(_deltas([v for v in ecc if v["node"] == node and v["gpu"] == g],
                            "pcie_replay")) > 50}
    assert len(moved) == 2 and min(moved) % 2 == 0 and max(moved) == min(moved) + 1
    sc = lab["sbe-storm-remap"]["scope"]
    xids = [v["xid"] for v in sorted(_tele(recs, "ecc"), key=lambda v: v["ts"])
            if "xid" in v and (v["node"], v["gpu"]) == (sc["node"], sc["gpu"])]
    assert xids[0] == 92 and 63 in xids
    mine = [v for v in ecc if (v["node"], v["gpu"]) == (sc["node"], sc["gpu"])]
    assert mine[-1]["row_remap_pending"] and not mine[0]["row_remap_pending"]
    hot = {v["node"] for v in _tele(recs, "thermal") if v["throttle"] & 0x20}
    assert hot and hot <= {"bd09", "bd10", "bd11"}


def test_seeds_differ(tmp_path):
    a, b = (_records(generate.write(tmp_path, "fabric", k, minutes=5.0)) for k in (1, 2))
    assert [r["value"] for r in a if r["topic"] == "labels"] != [
        r["value"] for r in b if r["topic"] == "labels"]


def test_a_small_log_replays(tmp_path):
    """`faultline replay` exits 0 on a 4-minute log (blind12's runner; the score is not read)."""
    replay(generate.write(tmp_path, "board", 6, minutes=4.0), tmp_path / "alerts.jsonl")
