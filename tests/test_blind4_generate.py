"""bench/blind4's logs against my reading of DESIGN's contract (one seed of each story)."""

from __future__ import annotations

import collections
import statistics

import pytest

from bench.blind4 import check
from bench.blind4.generate import build
from bench.blind4.story import STORIES


@pytest.fixture(scope="module", params=sorted(STORIES))
def log(request):
    recs, labels, topo = build(request.param, 0)
    records = (
        [{"topic": "topology", "value": topo}]
        + [{"topic": t, "value": v} for t, v in recs]
        + [{"topic": "labels", "value": lab} for lab in labels]
    )
    return request.param, records, labels


_TELE: dict[int, list] = {}


def _telemetry(records):
    if id(records) not in _TELE:
        _TELE[id(records)] = [
            (r["topic"], r["value"]) for r in records if r["topic"].startswith("telemetry.")
        ]
    return _TELE[id(records)]


def test_contract_holds(log):
    _, records, _ = log
    assert check.problems(records) == []


def test_breaking_the_contract_is_seen(log):
    _, records, _ = log
    bad = [dict(r) for r in records[:3000]]
    i = next(k for k, r in enumerate(bad) if r["topic"] == "telemetry.step")
    bad[i] = {
        "topic": "telemetry.step",
        "value": {**bad[i]["value"], "tp_rank": None, "dp_rank": 1},
    }
    bad.append({"topic": "labels", "value": {"fault_id": "x"}})
    bad.append(records[5])
    found = check.problems(bad)
    assert any("all three" in p for p in found)
    assert any("missing" in p for p in found)
    assert any("after a label" in p for p in found)


def test_every_label_has_its_target_in_window(log):
    story, records, labels = log
    assert len(labels) == 5, story
    tele = _telemetry(records)
    for lab in labels:
        s, e, sc = lab["start_ts"] - 1e-3, lab["end_ts"] + 1e-3, lab["scope"]
        if sc["level"] in ("gpu", "node", "nic"):
            hits = [v for _, v in tele if v["node"] == sc["node"] and s <= v["ts"] <= e]
        elif sc["level"] == "job":
            hits = [
                v
                for t, v in tele
                if t == "telemetry.step" and v["job"] == sc["job"] and s <= v["ts"] <= e
            ]
        else:
            hits = [v for t, v in tele if t == "telemetry.nic" and s <= v["ts"] <= e]
        assert hits, lab


def test_checksums_disagree_only_under_an_sdc_label(log):
    _, records, labels = log
    groups = collections.defaultdict(set)
    for t, v in _telemetry(records):
        if t == "telemetry.step" and v.get("param_checksum"):
            groups[(v["job"], v["step"], v.get("tp_rank"), v.get("pp_rank"))].add(
                (v["param_checksum"], v["ts"])
            )
    sdc = [lab for lab in labels if lab["kind"] == "sdc"]
    bad = []
    for k, vals in groups.items():
        # a restart repeats step numbers with new checksums: compare within one run of the step
        runs, last = [], None
        for c, ts in sorted(vals, key=lambda x: x[1]):
            if last is None or ts - last > 60:
                runs.append([])
            runs[-1].append((c, ts))
            last = ts
        bad += [(k, ts) for run in runs if len({c for c, _ in run}) > 1 for _, ts in run]
    assert bad, "no SDC visible"
    for (job, *_), ts in bad:
        assert any(lab["start_ts"] - 1e-3 <= ts <= lab["end_ts"] + 1e-3 for lab in sdc), (job, ts)


def test_first_step_of_every_attempt_is_a_warm_up(log):
    _, records, _ = log
    by_job = collections.defaultdict(dict)
    for t, v in _telemetry(records):
        if t == "telemetry.step" and v["rank"] == 0:
            by_job[v["job"]][v["step"]] = v["step_ms"]
    for job, steps in by_job.items():
        first = steps[min(steps)]
        assert first > 5 * statistics.median(steps.values()), job


def test_transport_shapes_present(log):
    story, records, _ = log
    tele = _telemetry(records)
    newest, late_dups = {}, 0
    seen = set()
    for t, v in tele:
        key = (t, v["node"], v.get("gpu"), v.get("nic"), v.get("rank"), v["ts"], v.get("xid"))
        if key in seen and newest[v["node"]] - v["ts"] > 30:
            late_dups += 1
        seen.add(key)
        newest[v["node"]] = max(newest.get(v["node"], v["ts"]), v["ts"])
    assert late_dups > 40, "no collector re-sending its last minute"
    med = statistics.median(v["ts"] for _, v in tele)
    node_med = collections.defaultdict(list)
    for _, v in tele:
        node_med[v["node"]].append(v["ts"])
    offs = sorted(abs(statistics.median(x) - med) for x in node_med.values())
    assert offs[-1] > 100, "no node with a skewed clock"
