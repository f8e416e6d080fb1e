"""blind18 (round 27): the generator is deterministic, every record keeps DESIGN's input contract
except the late partitions' arrival order (on purpose, and only theirs), every label is a valid
DESIGN label that spans records of its unit, the two stories make the shapes they exist for, and
a small log replays through `faultline replay` (exit status only: the detector's answers are
measured by bench/blind18/measure.py, not pinned here). The checker is blind12's."""

from __future__ import annotations

import json

import pytest

from bench.blind18 import generate
from bench.blind18.measure import replay
from tests.test_blind12_generate import _breaches, _label_breaches, _records


def _effects(log) -> list[dict]:
    return json.loads(log.with_name(log.name.replace(".jsonl.gz", ".effects.json")).read_text())


def _late_sources(log) -> tuple[set, set]:
    """The nodes whose partition was held or re-sent and the jobs whose step partition
    stalled: the only rows allowed to arrive over 5 s late."""
    fx = _effects(log)
    nodes = {e["scope"]["node"] for e in fx
             if e["effect"] in ("partition-leaderless", "producer-resend")}
    jobs = {e["scope"]["job"] for e in fx if e["effect"] == "step-partition-stalled"}
    return nodes, jobs


def _without_cluster(recs: list[dict]) -> list[dict]:
    """DESIGN's optional `cluster` field dropped (blind12's checker counts an XID row's keys)."""
    return [{"topic": r["topic"], "value": {k: x for k, x in r["value"].items()
                                            if k != "cluster"}}
            if r["topic"].startswith("telemetry.") else r for r in recs]


@pytest.mark.parametrize("story", ["delivery", "clusters"])
def test_generator_is_deterministic_and_keeps_the_contract(story, tmp_path):
    logs = [generate.write(tmp_path / d, story, 5, minutes=6.0) for d in ("one", "two")]
    assert logs[0].read_bytes() == logs[1].read_bytes()
    recs = _without_cluster(_records(logs[0]))
    nodes, jobs = _late_sources(logs[0])
    assert bool(nodes) == (story == "delivery") and bool(jobs) == (story == "delivery")
    on_time = [r for r in recs if r["topic"] in ("topology", "labels") or (
        r["value"].get("node") not in nodes if r["topic"] != "telemetry.step"
        else r["value"]["job"] not in jobs)]
    assert _breaches(on_time) == []
    assert bool(_breaches(recs)) == (story == "delivery")
    assert _label_breaches(recs) == []
    labels = {r["value"]["fault_id"] for r in recs if r["topic"] == "labels"}
    assert len(labels) == (3 if story == "delivery" else 4)


def test_delivery_the_dbe_lands_late_and_the_resent_rows_twice(tmp_path):
    """The XID 48 is made while its node's partition has no leader: it lands after step rows
    of the dead job's relaunch-free minutes (over 30 s of event time later); the re-sending
    producer delivers a window of rows twice, and the erring port's symbol counter is seen
    going back when the copies land."""
    log = generate.write(tmp_path, "delivery", 3)
    recs = _records(log)
    lab = {r["value"]["fault_id"]: r["value"] for r in recs if r["topic"] == "labels"}
    i = next(i for i, r in enumerate(recs) if r["value"].get("xid") == 48)
    assert recs[i]["value"]["ts"] == lab["dbe-in-stalled-partition"]["start_ts"]
    newest = max(r["value"]["ts"] for r in recs[1:i])
    assert newest - recs[i]["value"]["ts"] > 30.0
    seen: dict = {}
    for r in recs:
        if r["topic"].startswith("telemetry."):
            k = json.dumps(r["value"], sort_keys=True)
            seen[k] = seen.get(k, 0) + 1
    assert sum(n == 2 for n in seen.values()) > 20
    sc = lab["port-errors-resent"]["scope"]
    sym = [r["value"]["symbol_errors"] for r in recs if r["topic"] == "telemetry.nic"
           and r["value"]["node"] == sc["node"] and r["value"]["nic"] == sc["nic"]]
    assert any(b < a for a, b in zip(sym, sym[1:], strict=False))


def test_clusters_share_host_names_and_on_odd_seeds_a_job_name(tmp_path):
    """Every record names its cluster; both clusters name hosts gpu-001..008; on odd seeds both
    run a job called sft-7b (ranks 0-31 twice), on even seeds west's is sft-13b."""
    for seed, shared in ((1, True), (2, False)):
        recs = [r["value"] for r in _records(generate.write(tmp_path, "clusters", seed,
                                                            minutes=4.0))
                if r["topic"].startswith("telemetry.")]
        assert {v["cluster"] for v in recs} == {"east", "west"}
        hosts = {c: {v["node"] for v in recs if v["cluster"] == c} for c in ("east", "west")}
        assert hosts["east"] == hosts["west"] == {f"gpu-{i:03d}" for i in range(1, 9)}
        jobs = {c: {v["job"] for v in recs if v["cluster"] == c and "job" in v}
                for c in ("east", "west")}
        assert ("sft-7b" in jobs["west"]) == shared and "sft-7b" in jobs["east"]


def test_seeds_differ(tmp_path):
    a, b = (_records(generate.write(tmp_path, "delivery", k, minutes=4.0)) for k in (1, 2))
    assert [r["value"] for r in a if r["topic"] == "labels"] != [
        r["value"] for r in b if r["topic"] == "labels"]


def test_a_small_log_replays(tmp_path):
    """`faultline replay` exits 0 on a 3-minute log (blind12's runner; the score is not read)."""
    replay(generate.write(tmp_path, "clusters", 6, minutes=3.0), tmp_path / "alerts.jsonl")
