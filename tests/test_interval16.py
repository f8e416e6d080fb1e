"""A slow rank's page carries what its GPU showed, and a hot GPU only delays it (room interval16).

- A slow rank on a GPU with a corrected single-bit error (SBE) storm: health15 made the rate
  alone evidence, not a verdict, so the rank is escalated ``slow_node/unknown`` -- with the
  SBE evidence attached and said (health15's open item: it was escalated without it).
- A slow rank held past its wait for its hot GPU's next sample (``Correlator._warming``) whose
  run ends first is paged when it ends, not forgotten (reproducer interval-30 s9944: a GPU
  26 C over its node's median, its rank 13 % slow for 38 s, the one 30 s sample in between
  in an intermittent thermal throttle's off phase -- the fault was never paged).
"""

from __future__ import annotations

from detector.alerts import ESCALATION
from detector.engine import Engine
from detector.testing import T0, ecc, feed, healthy_job, thermal


def _firing(alerts):
    return [a for a in alerts if a.status == "firing"]


def _node_samples(first: float, n: int, every: float, hot: dict[int, float] | None = None,
                  gpu: int = 3) -> list:
    """Thermal samples of node-000's 8 GPUs; ``hot`` maps a sample index to GPU ``gpu``'s
    temperature then (full clocks, no throttle reason: hot, not throttled)."""
    out = []
    for k in range(n):
        for g in range(8):
            temp = (hot or {}).get(k, 66.0) if g == gpu else 66.0
            out.append(thermal(first + every * k + 0.01 * g, "node-000", g, temp_c=temp))
    return out


def test_a_slow_rank_on_a_gpu_with_an_sbe_storm_is_paged_with_the_sbe_evidence():
    # 2 corrected errors a second on GPU 3 from +0 (evidence only: no remap, DBE, XID),
    # its rank 20 % slow from step 60.  Failed on main 23232f3: the escalation held only the
    # slow rank, and said "no XID/ECC ..." was not checked at all (the SBE finding hid it).
    steps = list(healthy_job(steps=120, slow={3: 1.2}, slow_from=60))
    storm = [ecc(T0 + t, "node-000", 3, sbe=4 + 2 * t) for t in range(0, 121, 10)]
    temps = _node_samples(T0 + 0.5, 120, 1.0)
    alerts = _firing(feed(Engine(), sorted(steps + storm + temps, key=lambda e: e.ts)))
    assert [(a.topic, a.kind, a.cause, a.scope.key) for a in alerts] == [
        (ESCALATION, "slow_node", "unknown", "gpu:node-000/3")]
    signals = [e["signal"] for e in alerts[0].evidence["signals"]]
    assert "slow_rank" in signals and "sbe_burst" in signals, signals
    ruled = alerts[0].to_dict()["evidence"]["ruled_out"]
    assert any(r.startswith("not ruled out: sbe_burst") for r in ruled), ruled
    assert "no thermal or power throttling on the GPU" in ruled, ruled


def test_a_slow_run_ending_while_held_for_a_hot_gpu_is_still_paged():
    # 30 s samples at +2, +32, ...; GPU 3 at 86 C on the +62 sample (heating), 93 C on +92
    # (full clocks, no reason bit), back at 66 C on +122.  Its rank is 13 % slow from step
    # 80 to step 100: found ~+84, due after the +92 sample, then held for the hot GPU's
    # next sample (+122) -- and its run ended (~+112), before it.  Cool, the same run is
    # paged at ~+93.6.  Failed on main 23232f3 (no alert at all).
    steps = list(healthy_job(steps=200, slow={3: 1.13}, slow_from=80, slow_to=100))
    temps = _node_samples(T0 + 2, 7, 30.0, hot={2: 86.0, 3: 93.0})
    alerts = _firing(feed(Engine(), sorted(steps + temps, key=lambda e: e.ts)))
    assert [(a.topic, a.kind, a.scope.key) for a in alerts] == [
        (ESCALATION, "slow_node", "gpu:node-000/3")]
    assert T0 + 100 <= alerts[0].detected_ts <= T0 + 122


def test_a_slow_run_ending_within_its_ordinary_wait_is_not_paged():
    # The guard: a run that ends before its wait for a cause is over is a transient, as
    # before (slow steps 80-89, samples at +10.3, +40.3, +70.3, +100.3, the GPU hot on the
    # +70.3 one: the first one taken after the first slow step ended is +100.3; the run's
    # finding clears before it is due).
    steps = list(healthy_job(steps=200, slow={3: 1.3}, slow_from=80, slow_to=90))
    temps = _node_samples(T0 + 10.3, 7, 30.0, hot={2: 86.0})
    alerts = _firing(feed(Engine(), sorted(steps + temps, key=lambda e: e.ts)))
    assert alerts == []
