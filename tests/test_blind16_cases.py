"""blind16 (round 25): every reproducer of a faultline error the sixteenth blind generator found
replays (bench/blind16/cases, rebuilt by `python -m bench.blind16.make_cases`), each a strict
xfail whose reason is the finding. Measured on main 25af276 (the freeze; detector of b569a9c)."""

from __future__ import annotations

import functools
import tempfile
from pathlib import Path

import pytest

from bench.blind16.measure import replay
from bench.blind16.score import labels_of
from tests.test_blind15_cases import _every_fault_caught, _known_error

CASES = Path(__file__).resolve().parent.parent / "bench" / "blind16" / "cases"


def _caught_within(seconds: float):
    """Every fault caught, the first catch at most ``seconds`` after the label's start."""
    def right(sc: dict) -> bool:
        return _every_fault_caught(sc) and all(f["latency_s"] <= seconds for f in sc["faults"])
    right.__name__ = f"caught_within_{seconds:g}_s"
    return right


# case -> (what a right answer looks like, the strict-xfail reason or None, labels in the cut)
EXPECT: dict[str, tuple] = {
    "P1-overlap-straggler-unseen": (_every_fault_caught, None, 1),
    "P2-overlap-power-capped-straggler-late": (_caught_within(30.0), None, 1),
}


@functools.cache
def _scored(name: str) -> dict:
    return replay(CASES / f"{name}.jsonl.gz",
                  Path(tempfile.mkdtemp(prefix="blind16-")) / f"{name}.alerts.jsonl")


def test_every_case_has_an_expectation_and_its_labels():
    names = {p.name.removesuffix(".jsonl.gz") for p in CASES.glob("*.jsonl.gz")}
    assert names == set(EXPECT)
    for name in sorted(names):
        assert len(labels_of(CASES / f"{name}.jsonl.gz")) == EXPECT[name][2], name


@pytest.mark.parametrize("name", [pytest.param(n, marks=_known_error(why))
                                  for n, (_, why, _) in EXPECT.items()])
def test_case(name):
    right, _, _ = EXPECT[name]
    sc = _scored(name)
    missed = [f for f in sc["faults"] if not f["caught"]]
    assert right(sc), (missed, [p for p in sc["problems"] if not p["caught"]])
