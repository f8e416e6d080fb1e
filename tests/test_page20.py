"""page20 (round 20): one fault, one page that says what to do (blind10 K4, K5, K6).

- A GPU isolated for PCIe replays whose rank is slow again in a later storm is that
  isolation's evidence, not a second page (K4); an escalation of its slowness sent just before
  the replays showed is resolved at once, pointing at the isolation.
- A worse finding under an open isolation (XID 79: the GPU fell off the bus) fires the
  isolation again at once with the wider action, same dedup_key (K6).
"""

from __future__ import annotations

import orjson
import pytest

from detector.alerts import ESCALATION, ISOLATION
from detector.engine import Engine
from detector.findings import decode_message
from detector.testing import T0, ecc, feed, healthy_job, thermal

NODE, GPU, RANK = "node-000", 3, 3
ISO_KEY = f"fl:iso:hardware:gpu:{NODE}/{GPU}"
ESC_KEY = f"fl:esc:slow_node:gpu:{NODE}/{GPU}"


def _ecc(replays: dict[float, int], xid_at: float | None = None, seconds: float = 600.0):
    """node-000 GPU 3's ECC rows every 30 s: PCIe replay counter stepping by ``replays``
    (at the row at or after each second), an XID 79 row at ``xid_at``."""
    out, total, t = [], 0, 15.0
    while t < seconds:
        total += sum(n for at, n in replays.items() if t - 30.0 < at <= t)
        out.append(ecc(T0 + t, NODE, GPU, pcie=total))
        t += 30.0
    if xid_at is not None:
        out.append(ecc(T0 + xid_at, NODE, GPU, pcie=total, xid=79))
    return out


def _run(events) -> list:
    return feed(Engine(), sorted(events, key=lambda e: e.ts))


def _msgs(alerts, key):
    return [(a.status, a.action.name, round(a.detected_ts - T0, 1)) for a in alerts
            if a.dedup_key == key]


def test_xid79_under_an_open_replay_isolation_fires_it_again_with_drain_node() -> None:
    # (Fails on main: the isolation's only firing message says drain_gpu; drain_node is in
    # no firing message -- blind10 K6.)
    job = healthy_job(steps=500)
    alerts = _run([*job, *_ecc({40.0: 600}, xid_at=300.0)])
    got = _msgs(alerts, ISO_KEY)
    firing = [g for g in got if g[0] == "firing"]
    assert [g[1] for g in firing] == ["drain_gpu", "drain_node"], got
    assert 300.0 <= firing[1][2] <= 301.0, got  # at the XID, not at resolution
    refire = [a for a in alerts if a.dedup_key == ISO_KEY and a.status == "firing"][1]
    assert refire.evidence["action_was"] == "drain_gpu"
    assert any(s["signal"] == "xid" and s.get("xid") == 79 for s in refire.evidence["signals"])


def test_a_later_xid_with_no_wider_action_sends_nothing_new() -> None:
    # A repeat of what the page says already is evidence, not a re-page.
    job = healthy_job(steps=500)
    alerts = _run([*job, *_ecc({40.0: 600, 200.0: 600})])
    assert [g[0] for g in _msgs(alerts, ISO_KEY)].count("firing") == 1


def test_a_slow_rank_in_a_later_storm_joins_the_open_isolation() -> None:
    # (Fails on main: rank 3's slowness at ~250 s, after the first storm's finding cleared
    # but with the isolation still open, is escalated slow_node/unknown -- a second page for
    # the GPU, blind10 K4.)
    job = healthy_job(steps=500, slow={RANK: 1.15}, slow_from=250, slow_to=330)
    engine = Engine()
    alerts = feed(engine, sorted([*job, *_ecc({40.0: 600, 330.0: 600})], key=lambda e: e.ts))
    assert not [a for a in alerts if a.topic == ESCALATION and a.status == "firing"], [
        (a.dedup_key, a.detected_ts - T0) for a in alerts]
    assert [a.status for a in alerts if a.dedup_key == ISO_KEY].count("firing") == 1
    held = engine.correlator.problems[ISO_KEY].evidence  # (said when it resolves)
    assert any(s["signal"] == "slow_rank" and s["ts"] > T0 + 250.0 for s in held), held


def test_an_escalation_just_before_the_replays_show_is_superseded_by_the_isolation() -> None:
    # Rank 3 slow from 100 s is escalated (no thermal telemetry: a 3 s wait); the ECC poll
    # shows its GPU's replays at 135 s.  (Fails on main: the escalation stays firing beside
    # the isolation until its quiet time, 600 s after the rank is back.)
    job = healthy_job(steps=500, slow={RANK: 1.2}, slow_from=100, slow_to=200)
    alerts = _run([*job, *_ecc({130.0: 600})])
    esc = [a for a in alerts if a.dedup_key == ESC_KEY]
    iso = [a for a in alerts if a.dedup_key == ISO_KEY]
    assert [a.status for a in esc] == ["firing", "resolved"], _msgs(alerts, ESC_KEY)
    assert iso and iso[0].status == "firing"
    assert esc[1].evidence["superseded_by"] == ISO_KEY
    assert esc[1].detected_ts <= iso[0].detected_ts + 1.0
    assert ESC_KEY in iso[-1].evidence["supersedes"]
    assert iso[0].topic == ISOLATION


def _clocks(locked_mhz: float, seconds: float = 300.0):
    """Thermal rows every 10 s for 4 nodes x 8 GPUs, busy, no clock-event reason: node-000's
    GPUs at ``locked_mhz`` (~350 W), the others at their 1980 MHz boost (~690 W)."""
    out = []
    for n in range(4):
        for g in range(8):
            t = 0.3 + 0.01 * g + 0.1 * n
            while t < seconds:
                locked = n == 0
                out.append(thermal(T0 + t, f"node-{n:03d}", g, temp_c=55.0 if locked else 68.0,
                                   clock_mhz=locked_mhz if locked else 1980.0,
                                   power_w=350.0 if locked else 690.0))
                t += 10.0
    return out


def test_a_node_slow_at_a_clock_held_with_no_reason_is_paged_with_the_clock() -> None:
    # (Fails on main: the node's escalation says "no thermal or power throttling" and
    # `dcgmi diag -r 3`, and no clock anywhere -- blind10 K5.)
    # (clu39, blind30 F2: every slow GPU of the node held so is DESIGN's `software` cause --
    # an isolation at the node whose action resets the clocks, no longer an escalation.)
    job = healthy_job(ranks=32, steps=240, slow={r: 1.3 for r in range(8)}, slow_from=120)
    alerts = _run([*job, *_clocks(1395.0)])
    esc = [a for a in alerts if a.topic == ISOLATION and a.status == "firing"
           and a.scope.key == "node:node-000" and a.cause == "software"]
    assert esc, [(a.topic, a.scope.key, a.status) for a in alerts]
    assert esc[0].action.name == "reset_clocks" and "-rgc" in esc[0].action.detail
    ev = esc[0].evidence
    assert ev["sm_clock"]["sm_clock_mhz"] == 1395.0 and ev["sm_clock"]["peers_median_mhz"] == 1980.0
    assert ev["ruled_out"][0].startswith("not ruled out: SM clock 1395 MHz")
    assert "nvidia-smi -q -d CLOCK" in ev["next_diagnostic"] and "-rac" in esc[0].action.detail


def test_a_node_slow_at_its_peers_clock_says_nothing_of_clocks() -> None:
    job = healthy_job(ranks=32, steps=240, slow={r: 1.3 for r in range(8)}, slow_from=120)
    alerts = _run([*job, *_clocks(1975.0)])
    esc = [a for a in alerts if a.topic == ESCALATION and a.status == "firing"]
    assert esc and all("sm_clock" not in a.evidence for a in esc)
    assert all("nvidia-smi" not in a.evidence["next_diagnostic"] for a in esc)


def _clock_message(clock: object) -> bytes:
    return orjson.dumps({"type": "finding", "source": "telemetry.thermal:0", "id": [1, 0],
                         "tag": T0, "finding": {
                             "ts": T0, "onset_ts": T0, "signal": "sm_clock", "kind": "slow_node",
                             "cause": "unknown", "scope": {"level": "gpu", "node": "n1", "gpu": 0},
                             "active": True, "verdict": False, "severity": 0.0,
                             "evidence": {"sm_clock_mhz": clock, "power_w": None}}})


def test_the_clock_finding_crosses_the_findings_topic_typed() -> None:
    # The service sends it between stages: a forged clock of the wrong type is refused there.
    assert decode_message(_clock_message(1395.0), T0 + 10.0).finding.evidence[
        "sm_clock_mhz"] == 1395.0
    with pytest.raises(ValueError, match="sm_clock_mhz"):
        decode_message(_clock_message("1395"), T0 + 10.0)
