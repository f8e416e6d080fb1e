"""A slow rank waits for its GPU's thermal telemetry only as long as that telemetry can tell.

The first thermal sample taken after the slowdown began shows a throttle if
there is one; once it is due (the collector's cadence and phase are known) the
slow rank is decided: attributed if the sample showed a throttle, escalated
otherwise -- not one whole interval and a quarter later.
"""

from __future__ import annotations

from detector.alerts import ESCALATION, ISOLATION
from detector.engine import Engine
from detector.testing import T0, feed, healthy_job, thermal


def _firing(alerts):
    return [a for a in alerts if a.status == "firing"]


def _temps(first: float, n: int, *, throttle_from: int | None = None, gpu: int = 3,
           every: float = 30.0):
    return [thermal(first + every * k, "node-000", gpu,
                    clock_mhz=1650.0 if throttle_from is not None and k >= throttle_from
                    else 1980.0,
                    throttle=0x40 if throttle_from is not None and k >= throttle_from else 0,
                    temp_c=91.0 if throttle_from is not None and k >= throttle_from else 66.0)
            for k in range(n)]


def test_at_30_s_a_clean_sample_after_the_onset_decides_at_once():
    steps = list(healthy_job(steps=160, slow={3: 1.15}, slow_from=80))
    temps = _temps(T0 + 2, 6)  # samples at +2, +32, +62, +92: the slowdown starts at +80
    alerts = _firing(feed(Engine(), sorted(steps + temps, key=lambda e: e.ts)))
    assert [(a.topic, a.cause, a.scope.key) for a in alerts] == [
        (ESCALATION, "unknown", "gpu:node-000/3")]
    # decided when the +92 sample is due (plus its slack), not 1.25 x 30 s + 1 s after the
    # slow rank was found (~+122)
    assert alerts[0].detected_ts - (T0 + 80) <= 15.0


def test_a_sample_before_the_first_clearly_slow_step_ended_does_not_rule_out_a_throttle():
    # Step 80, the first slow one, ends at +80: a sample at +79.6 may predate the change
    # (the step's own work began at +79), so the next one decides.
    steps = list(healthy_job(steps=160, slow={3: 1.15}, slow_from=80))
    temps = _temps(T0 + 19.6, 5, throttle_from=3)  # +19.6, +49.6, +79.6 clean, +109.6 hot
    alerts = _firing(feed(Engine(), sorted(steps + temps, key=lambda e: e.ts)))
    assert [(a.topic, a.cause, a.scope.key) for a in alerts] == [
        (ISOLATION, "thermal", "gpu:node-000/3")]


def test_a_clean_sample_after_the_first_clearly_slow_step_decides():
    # At a 10 s interval a sample half a step after the first slow step ended (+80.5) was
    # taken after the change (a step's ts is its end): a throttle would show.  Waiting
    # past the CUSUM's onset plus two steps for the next sample (+90.5, decided ~+91.5)
    # only delays the page; the rank is decided once escalate_after_s has passed.
    steps = list(healthy_job(steps=160, slow={3: 1.15}, slow_from=80))
    temps = _temps(T0 + 0.5, 16, every=10.0)  # ..., +70.5, +80.5, +90.5, ...: all clean
    alerts = _firing(feed(Engine(), sorted(steps + temps, key=lambda e: e.ts)))
    assert [(a.topic, a.cause, a.scope.key) for a in alerts] == [
        (ESCALATION, "unknown", "gpu:node-000/3")]
    assert alerts[0].detected_ts - (T0 + 80) <= 9.0
    assert alerts[0].evidence["signals"][0]["clearly_slow_since"] <= T0 + 80.1


def test_a_gross_outlier_from_the_start_with_1_hz_telemetry_is_decided_at_its_second_step():
    events = list(healthy_job(steps=40, slow={5: 2.35}, slow_from=0))
    temps = _temps(T0 - 3.5, 45, gpu=5, every=1.0)
    alerts = _firing(feed(Engine(), sorted(events + temps, key=lambda e: e.ts)))
    assert [(a.topic, a.scope.key) for a in alerts] == [(ESCALATION, "gpu:node-000/5")]
    steps_seen = sum(1 for e in events if e.rank == 5 and e.ts <= alerts[0].detected_ts)
    assert steps_seen <= 2


def test_a_slow_rank_found_before_the_cadence_is_known_waits_for_the_next_sample():
    # A 30 s collector's interval is told after two like gaps (its third sample, +62 s):
    # a rank slow from +20 s, found at ~+24 s, waited only escalate_after_s and was paged
    # `unknown` before the +32 s sample showed the throttle (tuning reproducer interval-30
    # s9605: a power fault 65 s into the log).
    steps = list(healthy_job(steps=100, slow={3: 1.15}, slow_from=20))
    temps = _temps(T0 + 2, 4, throttle_from=1)  # +2 clean, +32 hot, ...
    alerts = _firing(feed(Engine(), sorted(steps + temps, key=lambda e: e.ts)))
    assert [(a.topic, a.cause, a.scope.key) for a in alerts][:1] == [
        (ISOLATION, "thermal", "gpu:node-000/3")]


def test_a_slow_rank_waiting_for_an_unknown_cadence_is_decided_once_it_is_known():
    # The same with every sample clean: once the third sample tells the cadence (+62 s)
    # the wait is what it is for a known 30 s collector, not the unknown-cadence hold.
    steps = list(healthy_job(steps=140, slow={3: 1.15}, slow_from=40))
    temps = _temps(T0 + 2, 5)  # +2, +32, +62 (cadence told), +92, +122: all clean
    alerts = _firing(feed(Engine(), sorted(steps + temps, key=lambda e: e.ts)))
    assert [(a.topic, a.cause, a.scope.key) for a in alerts] == [
        (ESCALATION, "unknown", "gpu:node-000/3")]
    # found ~+44, held until the cadence is told at +62; the first sample after the slowdown
    # began (+62) is then in hand: decided at once, not at +44 + 38.5 s
    assert alerts[0].detected_ts - T0 <= 66.0
