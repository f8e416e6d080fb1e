"""blind2's generator writes what DESIGN.md's incident-log contract says (issue 10)."""

from __future__ import annotations

import gzip
from collections import Counter

import orjson
import pytest

from bench.blind2 import check, generate
from bench.blind2.shapes import SHAPES
from bench.blind2.story import STORIES


@pytest.fixture(scope="module", params=[("superpod", "mixed-30-10", 0), ("nvl72", "mixed-30-5", 1)])
def log(request):
    shape, cadence, seed = request.param
    records, summary = generate.build(shape, seed, cadence, minutes=8.0)
    return records, summary


def test_every_record_and_label_is_valid(log):
    records, _ = log
    assert check.log_errors(records) == []


def test_the_checker_rejects_what_the_contract_forbids():
    bad_step = {"ts": 1.0, "job": "j", "step": 1, "rank": 0, "node": "n", "gpu": 0,
                "step_ms": 10.0, "compute_ms": 8.0, "comm_ms": 5.0, "tp_rank": 0}
    errs = check.record_errors("telemetry.step", bad_step)
    assert any("all three" in e for e in errs) and any("step_ms <" in e for e in errs)
    late = [{"topic": "topology", "value": {}},
            {"topic": "telemetry.thermal", "value": {"ts": 100.0, "node": "n", "gpu": 0}},
            {"topic": "telemetry.thermal", "value": {"ts": 94.0, "node": "n", "gpu": 0}}]
    assert any("behind" in e for e in check.log_errors(late))


def test_layout_topology_first_labels_last_some_duplicates(log):
    records, _ = log
    topics = [r["topic"] for r in records]
    assert topics[0] == "topology"
    first_label = topics.index("labels")
    assert set(topics[first_label:]) == {"labels"}
    seen = Counter(orjson.dumps(r["value"]) for r in records if r["topic"].startswith("tele"))
    dups = sum(c - 1 for c in seen.values())
    assert 0 < dups < 0.01 * len(records)
    ts = [r["value"]["ts"] for r in records if r["topic"].startswith("tele")]
    assert any(b < a for a, b in zip(ts, ts[1:], strict=False)), "never out of event time"


def test_labels_start_and_end_on_records_the_fault_changed(log):
    records, _ = log
    labels = [r["value"] for r in records if r["topic"] == "labels"]
    assert labels
    stamps = {r["value"]["ts"] for r in records if r["topic"].startswith("tele")}
    for lab in labels:
        # exactly: a label rounded past its first record misses an alert made on that record
        assert lab["start_ts"] in stamps and lab["end_ts"] in stamps, lab["fault_id"]


def test_mixed_cadence_gives_nodes_different_intervals(log):
    records, _ = log
    per_node: dict[str, list[float]] = {}
    for r in records:
        if r["topic"] == "telemetry.thermal" and r["value"]["gpu"] == 0:
            per_node.setdefault(r["value"]["node"], []).append(r["value"]["ts"])
    gaps = {round(sorted(t)[2] - sorted(t)[1]) for t in per_node.values() if len(t) > 3}
    assert len(gaps) >= 2


def test_same_seed_same_bytes(tmp_path):
    a, _ = generate.build("nvl72", 4, "fast-5", minutes=2.0)
    b, _ = generate.build("nvl72", 4, "fast-5", minutes=2.0)
    assert a == b
    path = tmp_path / "x.jsonl.gz"
    generate.write(path, a)
    with gzip.open(path) as fh:
        assert sum(1 for _ in fh) == len(a)


def test_stories_label_every_fault_kind_asked_for():
    kinds = set()
    for shape_name, seed in (("superpod", 0), ("superpod", 1), ("nvl72", 2), ("nvl72", 3)):
        story = STORIES[shape_name](SHAPES[shape_name](), seed, generate.EPOCH, [None])
        labels = [f.label for f in story.faults]
        assert len(labels) >= 8 and len({lab.fault_id for lab in labels}) == len(labels)
        kinds |= {(lab.scope["level"], lab.cause, lab.attributable) for lab in labels}
        assert len(story.jobs) >= 4
    assert ("switch", "switch", True) in kinds
    assert ("node", "nic", True) in kinds
    assert ("nic", "nic", True) in kinds
    assert ("domain", "nvlink", True) in kinds
    assert ("gpu", "gpu_hardware", True) in kinds
    assert any(not attributable for _, _, attributable in kinds)
