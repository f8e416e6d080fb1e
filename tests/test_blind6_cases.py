"""faultline errors found by blind6's generator (issue 10, round 15), one reproducer each.

Each case is cut from a blind6 tuning log (`bench/blind6/cases/`, `python -m bench.blind6.cut`,
labels inside) and replayed through the command line as an operator would (`faultline replay
CASE --alerts-out FILE`, topology from the log). The strict xfails state what an operator
needs; they stay xfails until faultline does it (BENCHMARKS.md "blind6, round 15").
"""

from __future__ import annotations

import gzip
import json
import math
from pathlib import Path

from bench.blind6 import generate, measure
from bench.blind6 import score as sc
from bench.blind6.story import STORIES

CASES = Path(__file__).resolve().parents[1] / "bench" / "blind6" / "cases"


def run(name: str, tmp_path: Path) -> tuple[list[tuple[str, dict]], sc.Score]:
    """(firing alerts as (topic, value), DESIGN's score) of the case `name`."""
    log = CASES / f"{name}.jsonl.gz"
    out = tmp_path / f"{name}.alerts.jsonl"
    measure.replay(log, out)
    alerts = [(t, a) for t, a in sc.alerts_of(out) if a.get("status") == "firing"]
    return alerts, sc.score(sc.labels_of(log), alerts, name)


def test_every_case_replays(tmp_path):
    """The harness itself (not an xfail): each case is there, replays, and has its labels."""
    want = {"F1-mig-hot": 0, "F2-sbe-storm": 0, "F3-sdc-late-start": 1}
    assert {p.name.removesuffix(".jsonl.gz") for p in CASES.glob("*.jsonl.gz")} == set(want)
    for name, n in want.items():
        assert len(sc.labels_of(CASES / f"{name}.jsonl.gz")) == n, name
        run(name, tmp_path)
        assert (tmp_path / f"{name}.alerts.jsonl").exists(), name


def test_generator_is_deterministic_and_keeps_the_contract(tmp_path):
    """A 90-second story of each kind: the same seed gives the same bytes, and every step
    record keeps step_ms >= compute_ms + comm_ms with finite numbers."""
    for name in STORIES:
        logs = []
        for k in range(2):
            path = tmp_path / f"{name}-{k}.jsonl.gz"
            generate.write(STORIES[name](0, minutes=1.5), 0, path)
            logs.append(gzip.decompress(path.read_bytes()))
        assert logs[0] == logs[1], name
        recs = [json.loads(line) for line in logs[0].splitlines()]
        assert recs[0]["topic"] == "topology"
        for r in recs[1:]:
            v = r["value"]
            if r["topic"] == "telemetry.step":
                assert v["step_ms"] + 1e-6 >= v["compute_ms"] + v["comm_ms"], v
                assert v["comm_ms"] >= 0, v
            if r["topic"].startswith("telemetry."):
                assert all(not isinstance(x, float) or math.isfinite(x) for x in v.values()), v


# (Was a strict xfail: "F1: a GPU running two busy MIG slices (350-364 W, 64-65 C, no throttle
# bit) beside its node's half-started GPUs (node median 49 C) is isolated as slow_node/thermal
# ('hot', +12 C limit)"; fixed by mig16: hot is judged against the mates' temperatures at its
# own power -- the node's degrees per watt over its GPUs' heat-sink-lagged power.)
def test_busy_gpu_beside_idle_ones_is_not_hot(tmp_path):
    # a100-10 in MIG mode (two 3g.40gb slices a GPU, a single-GPU job on each), the first
    # 4 min of the log while the 16 slice jobs start one by one: GPUs with both slices busy
    # draw 350-390 W at 53-65 C, GPUs with one slice ~205 W at 37-45 C, idle ones 56 W at
    # 31-33 C. An A100 at 65 C is 20 C below its slowdown point, clocks at 1410 MHz, no
    # job is slower: temperature follows load, and the load differs per GPU here.
    alerts, res = run("F1-mig-hot", tmp_path)
    assert alerts == [], "nothing to page: a healthy node with uneven load"


# (Was a strict xfail: "F2: corrected single-bit ECC errors alone (0.5/s for 5 min on a100-10
# GPU 1: no DBE, no XID, no remap, no slowdown) are isolated as hardware/gpu_memory (sbe_burst,
# 101 recent errors > 100)"; fixed by health15: an SBE rate alone is evidence.)
def test_sbe_storm_alone_is_not_isolated(tmp_path):
    # ECC corrects single-bit errors; what needs action is a DBE, a pending or failed row
    # remap, or XID 48/63/64/94/95 (REFERENCE 3: even XID 92 "high SBE rate" is IGNORE /
    # CONTACT_SUPPORT). sbe_volatile climbs 8 a sample (15 s) from 4 to 160 and stops;
    # nothing else on the GPU changes. A site may want a ticket; not a drain.
    alerts, res = run("F2-sbe-storm", tmp_path)
    assert alerts == [], "no isolation on corrected errors alone"


# (Was a strict xfail: "F3: when the first step faultline sees of a job is partial (only
# pcie-b02's 4 ranks, its clock 3 s ahead), its checksum vote later compares 3 of 8 replicas
# and flags the diverged rank at step 1240, 9 steps after the onset at 1231"; fixed by sdc16:
# a job's size learned from a partial first step is raised by the ranks that come after.)
def test_checksum_mismatch_flagged_at_its_step_after_a_partial_first_step(tmp_path):
    # r-tp2 (TP2 x DP8 on pcie-b01..b04, checksum every step, ~0.95 s steps). The case
    # starts mid-job as a worker starting (or a replayed window) does: the first records
    # are step 1214 of pcie-b02, whose clock chrony is slewing back from ~3 s ahead; the
    # other ranks' 1214 fall before the cut. Rank 7's checksum diverges from step 1231 on.
    # Cut so that the first step is whole (or from the job's start) faultline flags 1231
    # with 8 replicas compared; DESIGN's target is the same step.
    alerts, res = run("F3-sdc-late-start", tmp_path)
    steps = [s.get("step") for _t, a in alerts
             for s in (a.get("evidence") or {}).get("signals", [])
             if s.get("signal") == "checksum_mismatch"]
    assert steps and min(steps) == 1231, f"flagged at step {min(steps) if steps else None}"
