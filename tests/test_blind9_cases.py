"""blind9 (round 18): the generator is deterministic and keeps DESIGN's input contract, and
every reproducer of a faultline error it found replays (bench/blind9/cases, strict xfails)."""

from __future__ import annotations

import gzip
import json
import math

import pytest

from bench.blind9 import generate
from bench.blind9 import score as scoring
from tests import blindcases as bc

CASES = bc.cases_of("blind9")
NEED = {"telemetry.step": ("ts", "job", "step", "rank", "node", "gpu", "step_ms"),
        "telemetry.ecc": ("ts", "node", "gpu"), "telemetry.thermal": ("ts", "node", "gpu"),
        "telemetry.nic": ("ts", "node", "nic", "port")}


@pytest.mark.parametrize("story,minutes", [("ops-hgx", 2.5), ("nvl72", 2.0)])
def test_generator_is_deterministic_and_keeps_the_contract(story, minutes, tmp_path):
    a = generate.write(tmp_path / "a", story, 3, minutes=minutes)
    b = generate.write(tmp_path / "b", story, 3, minutes=minutes)
    assert a.read_bytes() == b.read_bytes()
    with gzip.open(a, "rt", encoding="utf-8") as fh:
        recs = [json.loads(line) for line in fh]
    assert recs[0]["topic"] == "topology"
    newest: dict = {}
    steps = 0
    for r in recs[1:]:
        topic, v = r["topic"], r["value"]
        if topic == "labels":
            assert v["start_ts"] <= v["end_ts"] and v["scope"]["level"]
            continue
        assert all(k in v for k in NEED[topic]), (topic, v)
        assert not any(isinstance(x, float) and not math.isfinite(x) for x in v.values())
        key = (topic, v["node"])
        assert v["ts"] > newest.get(key, 0.0) - 5.0, (key, v["ts"])     # DESIGN: <= 5 s late
        newest[key] = max(newest.get(key, 0.0), v["ts"])
        if topic == "telemetry.step":
            steps += 1
            assert v["step_ms"] >= v["compute_ms"] + v["comm_ms"] - 0.02 and v["comm_ms"] >= 0
    assert steps > 1000


def _right(sc) -> bool:
    return bc.no_fault_missed(sc) and bc.no_false_positive(sc)


# name -> (what a right answer looks like, the strict-xfail reason or None). Built by
# `python -m bench.blind9.make_cases` from the seed logs named there; measured on main ead8264.
EXPECT: dict[str, tuple] = {
    # (Was a strict xfail: "G1: ops-hgx-s0's rack r2 PDU trips at 913.3 s: h100-05..08 and
    # their leaf-r2 go dark together; faultline escalates 4 separate silent nodes at
    # 1146.8-1157.1 s and never names leaf-r2 -- a miss and 4 false positives (8/8 pdu-trips
    # missed, 4 node pages each)".  silent18: a part of the fleet going dark is one page.)
    "G1-pdu-trip-node-pages": (_right, None),
    # (Was a strict xfail: "G2: nvl72-s0's rack 3 (NVLink domain nvl72-r3, 18 trays) loses
    # power at 868.4 s: faultline escalates the 18 trays one by one at 1112.6-1123.0 s and
    # never names the domain -- a miss and 18 false positives (8/8 rack-power missed)".
    # silent18: one page at the domain.)
    "G2-nvl72-rack-dark-node-pages": (_right, None),
    # (Was a strict xfail: "G3: ops-hgx-s0's a100-08 runs no job the whole log (drained) and
    # its collectors stop at 574 s; faultline escalates it as a silent node at 913.1 s -- an
    # operator's drain paged (a100-08 8/8 logs, nvl-r2-c18 8/8, h100-15 2/8 before its
    # return)".  silent18: no job ran on it to the end, no page.)
    "G3-drained-idle-node-paged": (bc.no_false_positive, None),
    # (Was a strict xfail: "G4 (measured on 3df6121, after silent18): ops-hgx-s7's rack r1
    # PDU trips at 851.4 s: h100-01..04 and leaf-r1 stay dark for the log's last 349 s and
    # faultline sends nothing -- no leaf, no node page (the other 7 logs' trips are named
    # leaf-rN 240-250 s after)".  Passes from silent18's e3013f9 on.)
    "G4-pdu-trip-never-paged": (_right, None),
}


_replay = bc.cli_scorer(CASES, scoring)  # (in this process, once a case)


def test_every_case_has_an_expectation_and_replays():
    names = bc.names_of(CASES)
    assert names == set(EXPECT)
    for name in sorted(names):
        sc = _replay(name)
        # (a case pinning a false page has nothing left to score once it is mended: silent18)
        assert sc["faults"] or sc["problems"] or EXPECT[name][0] is bc.no_false_positive, name


test_case = bc.case_test(EXPECT, _replay)
