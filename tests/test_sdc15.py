"""Room sdc15, round 15: bounded DP-2 tie findings, and SDC seen only in one replica's loss.

A DP-2 checksum tie (detector.sdc.tie) is one job finding per step's decision, however many
tensor/pipeline pairs disagree on it, its lists bounded with a count beside them (review13
D1: one finding per pair, each listing every candidate so far, was quadratic).
"""

from __future__ import annotations

from detector.alerts import ESCALATION
from detector.engine import Engine
from detector.monitors import Monitors
from detector.sdc import TIE_PAIRS_NAMED, TIE_RANKS_KEPT
from detector.testing import T0, feed, step


def _dp2(groups: int, diverging, steps: int = 14) -> list:
    """A DP-2 job of ``groups`` ranks a replica (TP8 x PP groups // 8); rank ``g`` of replica
    1 diverges from step ``diverging(g)`` on (None: never)."""
    out = []
    for s in range(steps):
        for d in range(2):
            for g in range(groups):
                r = d * groups + g
                bad = d == 1 and diverging(g) is not None and s >= diverging(g)
                out.append(step(T0 + s + 1e-5 * r, r, s, node=f"node-{r // 8:04d}", gpu=r % 8,
                                tp=g % 8, pp=g // 8, dp=d, checksum="ff" if bad else f"c{s}-{g}"))
    return out


def _ties(events: list) -> list:
    mon = Monitors()
    found: list = []
    for e in events:
        mon.process(e, found)
    return [f for f in found if f.signal == "checksum_pair"]


def test_a_whole_replica_of_1024_pairs_diverging_is_one_bounded_finding() -> None:
    # Fails on main 0f336aa: 1,024 findings holding 1,049,600 ranks.
    (f,) = _ties(_dp2(1024, lambda g: 10))
    ev = f.evidence
    assert ev["candidate_count"] == 2048 and ev["pairs_new"] == 1024
    assert ev["candidate_ranks"] == list(range(TIE_RANKS_KEPT))
    assert len(ev["checksums"]) == 2 * TIE_PAIRS_NAMED
    assert ev["candidates"].endswith(f"; and {1024 - TIE_PAIRS_NAMED} more pairs")
    assert "more nodes" in ev["next_diagnostic"] and len(ev["next_diagnostic"]) < 400


def test_pairs_diverging_on_later_steps_are_one_finding_a_step() -> None:
    # Pairs 0-3 on step 10, 4-7 on step 11, nothing new on 12-13: two findings, the second
    # (replacing the first: the same key) counting all 16 candidates.
    ties = _ties(_dp2(64, lambda g: 10 if g < 4 else 11 if g < 8 else None))
    assert [(f.evidence["step"], f.evidence["candidate_count"], f.evidence["pairs_new"])
            for f in ties] == [(10, 8, 4), (11, 16, 4)]
    assert ties[0].key == ties[1].key and ties[1].onset_ts == ties[0].onset_ts


def test_a_whole_replica_diverging_is_one_page() -> None:
    alerts = feed(Engine(), _dp2(64, lambda g: 10))
    assert [(a.status, a.topic, a.kind, a.cause, a.scope.key) for a in alerts] == [
        ("firing", ESCALATION, "sdc", "unknown", "job:job-1")]
    sig = alerts[0].evidence["signals"][0]
    assert sig["candidate_count"] == 128 and len(sig["candidate_ranks"]) == TIE_RANKS_KEPT
