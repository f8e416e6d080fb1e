"""blind19 (round 28): the generator is deterministic, every record keeps DESIGN's input contract,
every label is a valid DESIGN label that spans records of its unit, the two stories make the
shapes they exist for, and a small log replays through `faultline replay` (exit status only:
the detector's answers are measured by bench/blind19/measure.py, not pinned here). The checker
is blind12's."""

from __future__ import annotations

import json

import pytest

from bench.blind19 import generate
from bench.blind19.measure import replay
from tests.test_blind12_generate import _breaches, _label_breaches, _records

FAULTS = {"ops": {"port-hdr-after-upgrade", "dbe-then-reset", "diag-hw-slowdown"},
          "replicas": {"third-node-slow", "replica-sdc", "dp2-checksum"}}


def _tele(recs: list[dict], topic: str) -> list[dict]:
    return [r["value"] for r in recs if r["topic"] == f"telemetry.{topic}"]


def _labels(recs: list[dict]) -> dict[str, dict]:
    return {r["value"]["fault_id"]: r["value"] for r in recs if r["topic"] == "labels"}


@pytest.mark.parametrize("story", ["ops", "replicas"])
def test_generator_is_deterministic_and_keeps_the_contract(story, tmp_path):
    logs = [generate.write(tmp_path / d, story, 5) for d in ("one", "two")]
    assert logs[0].read_bytes() == logs[1].read_bytes()
    recs = _records(logs[0])
    assert _breaches(recs) == []
    assert _label_breaches(recs) == []
    assert set(_labels(recs)) == FAULTS[story]
    fx = json.loads(logs[0].with_name(f"{story}-s5.effects.json").read_text())
    assert fx and all(e["start_ts"] <= e["end_ts"] for e in fx)


def test_ops_reset_clears_one_gpu_and_the_diag_runs_without_a_job(tmp_path):
    """The operator's `nvidia-smi -r` takes the DBE GPU's volatile counters and remap state back
    to 0 / none while its node's other GPUs keep theirs; op09's port runs at 200 beside seven
    at 400; under `dcgmi diag -r 3` on op08 no step row names op08 and one GPU shows 0x8."""
    recs = _records(generate.write(tmp_path, "ops", 2))
    lab = _labels(recs)
    sc = lab["dbe-then-reset"]["scope"]
    ecc = [v for v in _tele(recs, "ecc") if v["node"] == sc["node"] and "xid" not in v]
    mine = [v for v in ecc if v["gpu"] == sc["gpu"]]
    assert any(v["row_remap_pending"] and v["dbe_volatile"] == 1 for v in mine)
    assert mine[-1]["dbe_volatile"] == 0 and not mine[-1]["row_remap_pending"]
    assert mine[-1]["recovery_action"] == "none" and mine[-1]["retired_pages_dbe"] == 1
    for g in set(range(8)) - {sc["gpu"]}:   # no reset there: each counter as it began
        rows = [v for v in ecc if v["gpu"] == g]
        assert rows[0]["pcie_replay"] == rows[-1]["pcie_replay"]
        assert rows[0]["sbe_volatile"] == rows[-1]["sbe_volatile"]
    assert any(mine[0][k] != mine[-1][k] for k in ("pcie_replay", "sbe_volatile")) or (
        mine[0]["pcie_replay"] == mine[0]["sbe_volatile"] == 0)
    ps = lab["port-hdr-after-upgrade"]["scope"]
    rates = {(v["nic"], v["rate_gbps"]) for v in _tele(recs, "nic")
             if v["node"] == "op09" and v["ts"] > lab["port-hdr-after-upgrade"]["start_ts"]}
    assert rates == {(f"mlx5_{k}", 400.0) for k in range(8) if f"mlx5_{k}" != ps["nic"]} | {
        (ps["nic"], 200.0)}
    hw = lab["diag-hw-slowdown"]
    th = [v for v in _tele(recs, "thermal") if v["node"] == "op08"
          and hw["start_ts"] <= v["ts"] <= hw["end_ts"]]
    assert {v["throttle"] for v in th if v["gpu"] == hw["scope"]["gpu"]} == {0x8}
    assert {v["throttle"] for v in th if v["gpu"] != hw["scope"]["gpu"]} == {0x4}
    assert not [v for v in _tele(recs, "step") if v["node"] == "op08"
                and hw["start_ts"] <= v["ts"] <= hw["end_ts"]]


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_replicas_sdc_repeats_on_one_replica_bad_samples_do_not(seed, tmp_path):
    """The SDC replica's loss spikes again and again; each bad sample spikes another replica
    once; the corrupted tp-r rank's checksum differs from its one peer's at every checksum
    step after the onset; on even seeds the slow node's GPUs sit at 0x4 under 560 W."""
    recs = _records(generate.write(tmp_path, "replicas", seed))
    lab = _labels(recs)
    steps = _tele(recs, "step")
    sdc = lab["replica-sdc"]["scope"]
    spiked = [v for v in steps if v["job"] == "dp-r" and v["loss"] > 3.2]
    on_sdc = [v for v in spiked if (v["node"], v["gpu"]) == (sdc["node"], sdc["gpu"])]
    assert len(on_sdc) >= 5
    others = [v["dp_rank"] for v in spiked if v not in on_sdc]
    assert others and all(others.count(d) == 1 for d in others)
    c = lab["dp2-checksum"]["scope"]["gpu"]
    ck = [v for v in steps if v["job"] == "tp-r" and "param_checksum" in v
          and v["ts"] >= lab["dp2-checksum"]["start_ts"]]
    assert ck
    for v in ck:
        if v["rank"] == c:
            peer = next(p for p in ck if p["step"] == v["step"] and p["rank"] == (c + 4) % 8)
            assert peer["param_checksum"] != v["param_checksum"]
    slow = lab["third-node-slow"]
    assert slow["attributable"] == (seed % 2 == 0)
    if seed % 2 == 0:
        th = [v for v in _tele(recs, "thermal") if v["node"] == slow["scope"]["node"]
              and v["ts"] > slow["start_ts"] + 60]
        assert th and all(v["throttle"] == 0x4 and v["power_w"] < 560 for v in th)


def test_seeds_differ(tmp_path):
    a, b = (_records(generate.write(tmp_path, "ops", k, minutes=4.0)) for k in (1, 2))
    assert [r["value"] for r in a if r["topic"] == "labels"] != [
        r["value"] for r in b if r["topic"] == "labels"]


def test_a_small_log_replays(tmp_path):
    """`faultline replay` exits 0 on a 3-minute log (blind12's runner; the score is not read)."""
    replay(generate.write(tmp_path, "replicas", 6, minutes=3.0), tmp_path / "alerts.jsonl")
