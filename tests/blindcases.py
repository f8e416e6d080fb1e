"""What the blind generators' case files share (tests/test_blind8_cases.py ... blind16's).

Each file keeps what is its own -- EXPECT (case -> what a right answer looks like, the strict
xfail reason or None, [labels in the cut]) and its generator's contract checks -- and takes
from here the replay of a case scored by its generator's score.py, the predicates a right
answer is made of, and the parametrized ``test_case`` (a case with a reason is a strict xfail:
it must fail, with an AssertionError, until its fix lands).  A score here is the dict of
``bench.blindN.score.score``: ``faults`` (each ``caught``, ``latency_s``, ``cause_ok``) and
``problems`` (each ``caught``, ``kind``, ``scope``).
"""

from __future__ import annotations

import contextlib
import functools
import io
import tempfile
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from detector.cli import main as cli_main

Score = dict[str, Any]
Right = Callable[[Score], bool]
BENCH = Path(__file__).resolve().parent.parent / "bench"


def cases_of(blind: str) -> Path:
    """bench/<blind>/cases: the generator's reproducers."""
    return BENCH / blind / "cases"


def names_of(cases: Path) -> set[str]:
    """The cases in ``cases`` (their files' names without .jsonl.gz)."""
    return {p.name.removesuffix(".jsonl.gz") for p in cases.glob("*.jsonl.gz")}


def label_counts(cases: Path, labels_of: Callable[[Path], list]) -> dict[str, int]:
    """Each case's labels in its cut (a file's name -> how many): what a file's EXPECT says
    of its cases, checked against the files there."""
    return {name: len(labels_of(cases / f"{name}.jsonl.gz")) for name in sorted(names_of(cases))}


# -- replays, once a case a session ---------------------------------------------------------


def cli_scorer(cases: Path, score: ModuleType, *, with_alerts: bool = False
               ) -> Callable[[str], Score]:
    """A case's score: `faultline replay CASE --alerts-out F --quiet` in this process (the
    command line's own entry point), scored by ``score`` (a bench.blindN.score module); with
    the alerts under "alerts" when ``with_alerts``."""
    @functools.cache
    def scored(name: str) -> Score:
        case = cases / f"{name}.jsonl.gz"
        out = Path(tempfile.mkdtemp(prefix=f"{cases.parent.name}-")) / f"{name}.alerts.jsonl"
        with contextlib.redirect_stdout(io.StringIO()):
            rc = cli_main(["replay", str(case), "--alerts-out", str(out), "--quiet"])
        if rc not in (0, None):  # (not an assert: a strict xfail takes AssertionError as its
            #                       detection error, and would pass with nothing replayed)
            raise RuntimeError(f"faultline replay {case.name}: exit {rc}")
        alerts = score.alerts_of(out)
        sc = score.score(score.labels_of(case), alerts, name)
        return {**sc, "alerts": alerts} if with_alerts else sc
    return scored


def measure_scorer(cases: Path, replay: Callable[[Path, Path], Score]) -> Callable[[str], Score]:
    """A case's score by its generator's own ``measure.replay(log, alerts_out)``."""
    @functools.cache
    def scored(name: str) -> Score:
        return replay(cases / f"{name}.jsonl.gz",
                      Path(tempfile.mkdtemp(prefix=f"{cases.parent.name}-"))
                      / f"{name}.alerts.jsonl")
    return scored


# -- what a right answer looks like ---------------------------------------------------------


def every_fault_caught(sc: Score) -> bool:
    """A fault in the cut, and every one caught."""
    return bool(sc["faults"]) and all(f["caught"] for f in sc["faults"])


def no_fault_missed(sc: Score) -> bool:
    """No fault of the cut missed (a cut with none passes)."""
    return all(f["caught"] for f in sc["faults"])


def no_false_positive(sc: Score) -> bool:
    """Every firing problem catches a fault."""
    return all(p["caught"] for p in sc["problems"])


def nothing_paged(sc: Score) -> bool:
    """Routine shapes only: no fault, and no firing problem (a recommendation or an
    escalation) at all."""
    return not sc["faults"] and not sc["problems"]


def caught_within(seconds: float) -> Right:
    """Every fault caught, the first catch at most ``seconds`` after the label's start."""
    def right(sc: Score) -> bool:
        return every_fault_caught(sc) and all(f["latency_s"] <= seconds for f in sc["faults"])
    right.__name__ = f"caught_within_{seconds:g}_s"
    return right


def alone_and_right(sc: Score) -> bool:
    """Every fault caught with its cause, and no firing problem that catches nothing."""
    return every_fault_caught(sc) and all(f["cause_ok"] for f in sc["faults"]) and (
        no_false_positive(sc))


def at_once_and_alone(sc: Score) -> bool:
    """Caught at the first changed record (within a second), right and alone."""
    return caught_within(1.0)(sc) and alone_and_right(sc)


def caught_and_no_stray(kind: str) -> Right:
    """Every fault caught and no ``kind`` problem beside it that catches nothing (DESIGN:
    nothing coarser or finer counts)."""
    def right(sc: Score) -> bool:
        return every_fault_caught(sc) and all(p["caught"] for p in sc["problems"]
                                              if p["kind"] == kind)
    right.__name__ = f"caught_and_no_stray_{kind}"
    return right


# -- the test --------------------------------------------------------------------------------


def known_error(why: str | None) -> list[Any]:
    """A strict xfail with the finding as its reason (none when ``why`` is None)."""
    return [] if why is None else [pytest.mark.xfail(strict=True, raises=AssertionError,
                                                     reason=why)]


def case_test(expect: dict[str, tuple], scored: Callable[[str], Score]) -> Callable[[str], None]:
    """The parametrized ``test_case`` of a file whose EXPECT maps a case to (right, reason,
    ...): its score is right, or a strict xfail while its reason stands."""
    @pytest.mark.parametrize("name", [pytest.param(n, marks=known_error(e[1]))
                                      for n, e in expect.items()])
    def test_case(name: str) -> None:
        sc = scored(name)
        assert expect[name][0](sc), ([f for f in sc["faults"] if not f["caught"]],
                                     [p for p in sc["problems"] if not p["caught"]])
    return test_case
