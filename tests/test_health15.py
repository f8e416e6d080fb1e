"""GPU health counters that are routine vs faults (room health15, round 15; blind6's findings).

A corrected single-bit (SBE) error rate alone is evidence, not a recommendation: ECC corrected
the errors, NVIDIA's catalogue marks even XID 92 ("high SBE rate") IGNORE, and DCGM's memory
health watch acts on DBEs, pending retirements, retired pages past the limit and row-remap
failures, never on an SBE rate (BENCHMARKS.md "health15, round 15").  With memory that needs a
reset (a row remap pending) or has failed to remap, the same rate is a verdict, and the alert
says what it rests on.
"""

from __future__ import annotations

from detector.alerts import ISOLATION
from detector.engine import Engine
from detector.findings import Finding
from detector.gpu_health import GpuHealth
from detector.testing import T0, ecc, feed
from detector.thresholds import Thresholds


def storm(seconds: int = 300, per_s: float = 1.0, every: float = 15.0, **flags_from):
    """A GPU's ECC samples (every ``every`` s) while ``per_s`` corrected errors a second
    accrue on it; ``flags_from`` = {"pending": T} sets that flag from T s on."""
    out, n, t = [], 4, 0.0
    while t <= seconds:
        kw = {k: t >= v for k, v in flags_from.items()}
        out.append(ecc(T0 + t, "a100-10", 1, sbe=n, **kw))
        t += every
        n += round(per_s * every)
    return out


def test_sbe_storm_alone_is_evidence_never_an_isolation() -> None:
    # blind6 F2's shape: 8 corrected errors a 15 s sample (0.5/s) for 5 min, and 2/s.
    # Failed on main 61dfd29: isolated hardware/gpu_memory at ~101 recent errors > 100.
    for per_s in (0.5, 2.0, 50.0):
        alerts = feed(Engine(), storm(per_s=per_s))
        assert [a for a in alerts if a.status == "firing"] == [], per_s
    g, cfg = GpuHealth("a100-10", 1, Thresholds()), Thresholds()
    found: list[Finding] = []
    for s in storm(per_s=2.0):
        g.update(s, cfg, found)
    raised = [f for f in found if f.signal == "sbe_burst" and f.active]
    assert len(raised) == 1 and not raised[0].verdict
    assert raised[0].evidence["rests_on"].startswith("corrected single-bit errors alone")


def test_sbe_storm_with_a_row_remap_pending_is_isolated_and_says_why() -> None:
    # The same rate, and from 120 s on a row remap pending (the row stays in use until a
    # GPU reset): a verdict on the sample that shows the flag.
    alerts = feed(Engine(), storm(per_s=2.0, pending=120.0))
    fired = [a for a in alerts if a.status == "firing"]
    assert [(a.topic, a.kind, a.cause, a.scope.key) for a in fired][:1] == [
        (ISOLATION, "hardware", "gpu_memory", "gpu:a100-10/1")]
    assert fired[0].detected_ts == T0 + 120.0
    text = repr(fired[0].to_dict())
    assert "row remap pending" in text, text


def test_sbe_storm_already_pending_is_a_verdict_when_it_passes_the_limit() -> None:
    # Pending from the first sample (evidence alone: a remap waits for the next reset); the
    # rate passing its limit on that GPU is the verdict, said so.
    g, cfg = GpuHealth("a100-10", 1, Thresholds()), Thresholds()
    found: list[Finding] = []
    for s in storm(per_s=2.0, pending=0.0):
        g.update(s, cfg, found)
    raised = [f for f in found if f.signal == "sbe_burst" and f.active]
    assert len(raised) == 1 and raised[0].verdict
    assert "row remap pending" in raised[0].evidence["rests_on"]
