"""GPU health counters that are routine vs faults (room health15, round 15; blind6's findings).

A corrected single-bit (SBE) error rate alone is evidence, not a recommendation: ECC corrected
the errors, NVIDIA's catalogue marks even XID 92 ("high SBE rate") IGNORE, and DCGM's memory
health watch acts on DBEs, pending retirements, retired pages past the limit and row-remap
failures, never on an SBE rate (BENCHMARKS.md "health15, round 15").  With memory that needs a
reset (a row remap pending) or has failed to remap, the same rate is a verdict, and the alert
says what it rests on.
"""

from __future__ import annotations

import math

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


# -- NVLink errors growing slowly ------------------------------------------------------------


def crc_growth(r0: float = 0.035, tau: float = 150.0, every: float = 15.0, seconds: int = 900,
               replays: bool = True):
    """blind6's NVLink CRC story: r0 * e^(t / tau) errors a second from t = 0, a replay per 12
    CRC errors (none with ``replays`` False), sampled every ``every`` s; and the time of the
    first sample that counts an error."""
    out, first, t = [], None, 7.0
    while t <= seconds:
        n = int(r0 * tau * (math.exp(t / tau) - 1.0))
        if n and first is None:
            first = t
        out.append(ecc(T0 + t, "a100-02", 5, nvlink=(n, n // 12 if replays else 0, 0)))
        t += every
    return out, T0 + (first or 0.0)


def test_nvlink_crc_growing_slowly_is_isolated_once_the_link_replays() -> None:
    # Failed on main 61dfd29: isolated 435 s after the first counted error (50 recent errors,
    # ~0.9/s); replays come at the 12th CRC error (DCGM's NVLink watch fails on one).
    samples, first = crc_growth()
    fired = [a for a in feed(Engine(), samples) if a.status == "firing"]
    assert [(a.topic, a.kind, a.cause, a.scope.key) for a in fired] == [
        (ISOLATION, "hardware", "nvlink", "gpu:a100-02/5")]
    assert fired[0].detected_ts - first <= 240.0, fired[0].detected_ts - first
    assert "replay" in repr(fired[0].to_dict())


def test_nvlink_crc_alone_or_a_lone_replay_stays_under_the_rate_rule() -> None:
    # CRC errors without replays wait for the rate rule (50 recent), as before; a trickle
    # of CRC errors with a replay now and then (a healthy link's) pages nothing.
    samples, first = crc_growth(replays=False)
    fired = [a for a in feed(Engine(), samples) if a.status == "firing"]
    assert fired and fired[0].detected_ts - first > 300.0
    trickle = [ecc(T0 + 15.0 * i, "a100-02", 5, nvlink=(i // 4, i // 40, 0))
               for i in range(240)]  # 1 CRC a minute, a replay every 10 min, for an hour
    assert [a for a in feed(Engine(), trickle) if a.status == "firing"] == []
