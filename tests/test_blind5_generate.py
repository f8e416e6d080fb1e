"""bench/blind5's logs against my reading of DESIGN's contract (one short seed of each story)."""

from __future__ import annotations

import gzip
import json
from collections import defaultdict

import pytest

from bench.blind5.check import problems
from bench.blind5.generate import main as generate
from bench.blind5.story import STORIES

MINUTES = 11
SEED = 1


@pytest.fixture(scope="module")
def logs(tmp_path_factory):
    out = tmp_path_factory.mktemp("blind5")
    assert generate(["--out", str(out), "--corpus", "--seeds", str(SEED),
                     "--minutes", str(MINUTES)]) == 0
    found = {}
    for name in STORIES:
        path = out / f"{name}-s{SEED}.jsonl.gz"
        with gzip.open(path, "rt", encoding="utf-8") as fh:
            found[name] = (path, [json.loads(x) for x in fh])
    return found


@pytest.mark.parametrize("story", sorted(STORIES))
def test_log_keeps_the_input_contract(logs, story):
    path, _recs = logs[story]
    errs, _late = problems(str(path))
    assert errs == []


@pytest.mark.parametrize("story", sorted(STORIES))
def test_labels_span_records_of_their_unit(logs, story):
    _path, recs = logs[story]
    labels = [r["value"] for r in recs if r["topic"] == "labels"]
    assert labels, "a short log still has labelled faults"
    ts = [r["value"]["ts"] for r in recs if r["topic"].startswith("telemetry.")]
    for lab in labels:
        assert min(ts) <= lab["start_ts"] <= lab["end_ts"] <= max(ts)
        sc = lab["scope"]
        if "node" in sc:
            own = [r["value"]["ts"] for r in recs if r["topic"].startswith("telemetry.")
                   and r["value"].get("node") == sc["node"]]
            assert any(lab["start_ts"] <= t <= lab["end_ts"] for t in own), lab["fault_id"]


def test_only_the_late_partition_is_out_of_order(logs):
    """Records more than 5 s behind their node's own latest are the held-back partition's."""
    story = STORIES["ops"](SEED, MINUTES)
    late_nodes = {n for nodes, _a, _b in story.late for n in nodes}
    _path, recs = logs["ops"]
    newest: dict[tuple[str, str], float] = {}
    behind = defaultdict(int)
    for r in recs:
        if not r["topic"].startswith("telemetry."):
            continue
        v = r["value"]
        key = (r["topic"], v["node"])
        if v["ts"] < newest.get(key, -1e18) - 5.0:
            behind[v["node"]] += 1
        newest[key] = max(newest.get(key, -1e18), v["ts"])
    assert set(behind) <= late_nodes


def test_dbe_is_an_xid_event_on_the_labelled_gpu(logs):
    _path, recs = logs["ops"]
    lab = next(r["value"] for r in recs if r["topic"] == "labels"
               and r["value"]["fault_id"].endswith("-dbe"))
    xids = [r["value"] for r in recs if r["topic"] == "telemetry.ecc"
            and r["value"].get("xid") is not None]
    assert {(v["node"], v["gpu"], v["xid"]) for v in xids} == {
        (lab["scope"]["node"], lab["scope"]["gpu"], 48),
        (lab["scope"]["node"], lab["scope"]["gpu"], 63)}


def test_elastic_job_grows_and_resumes_from_its_checkpoint(logs):
    _path, recs = logs["ops"]
    by_step = defaultdict(set)
    for r in recs:
        v = r["value"]
        if r["topic"] == "telemetry.step" and v["job"] == "sft-elastic-b":
            by_step[v["step"]].add(v["rank"])
    worlds = sorted({max(ranks) + 1 for ranks in by_step.values()})
    assert worlds == [16, 32]


def test_generation_is_reproducible(tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    for d in (a, b):
        assert generate(["--out", str(d), "--story", "workloads", "--seed", "3",
                         "--minutes", "3"]) == 0
    assert gzip.decompress((a / "workloads-s3.jsonl.gz").read_bytes()) == \
        gzip.decompress((b / "workloads-s3.jsonl.gz").read_bytes())
