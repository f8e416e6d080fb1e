"""b16fix (round 25): blind16 P1 / P2 -- a straggler hidden by overlapped communication.

Under overlap every rank's wait for the slow GPU is timed inside its ``compute_ms``: the
job's ranks step up alike and no rank is slower than its peers.  detector.job_pace tells the
job's step up; the correlator pages the one GPU of the job whose clock fell at that moment
(no reason bit: an escalation; a SW power cap: a power isolation)."""

from __future__ import annotations

from detector import job_pace
from detector.alerts import ESCALATION, ISOLATION
from detector.engine import Engine
from detector.testing import T0, feed, healthy_job, thermal


def firing(alerts):
    return sorted({(a.topic, a.kind, a.cause, a.scope.key) for a in alerts
                   if a.status == "firing"})


def overlap_job(*, low: dict[int, tuple[float, int]] | None = None, slow_from: int = 120,
                alike: float = 1.24, steps: int = 180, clock_from: int | None = None) -> list:
    """16 ranks on node-000 / node-001 (GPU r % 8), 1 s steps, every rank's compute x
    ``alike`` from step ``slow_from`` (its waits timed inside compute); thermal every 10 s,
    each GPU ``r`` of ``low`` at (clock, reasons) from ``clock_from`` (``slow_from``)."""
    low = low or {}
    since = slow_from if clock_from is None else clock_from
    ev = []
    for e in healthy_job(ranks=16, steps=steps):
        if e.step >= slow_from:
            e = e._replace(compute_ms=e.compute_ms * alike, step_ms=e.step_ms * alike)
        ev.append(e)
    for k in range(0, steps, 10):
        for r in range(16):
            clock, bits = low.get(r, (1980.0, 0)) if k >= since else (1980.0, 0)
            ev.append(thermal(T0 + k + 0.3 + 0.001 * r, f"node-{r // 8:03d}", r % 8,
                              clock_mhz=clock, throttle=bits,
                              power_w=440.0 if bits else 600.0))
    return sorted(ev, key=lambda e: e.ts)


def test_the_pace_of_a_job_steps_up_on_three_steps_and_back():
    st = job_pace.new_state()
    said = [job_pace.step(st, 1000.0, k, warm=k >= 10) for k in range(40)]
    assert said.count(None) == 40 and st[job_pace.BASE] == 1000.0
    # a lone slow step (a save timed as compute) is no step up
    assert job_pace.step(st, 5000.0, 40, True) is None
    assert job_pace.step(st, 1000.0, 41, True) is None
    said = [job_pace.step(st, 1240.0, 50 + k, True) for k in range(3)]
    assert said == [None, None, True] and st[job_pace.SINCE] == 50
    said = [job_pace.step(st, 1010.0, 60 + k, True) for k in range(3)]
    assert said == [None, None, False]
    assert job_pace.check(st) and not job_pace.check([*st[:4], float("nan")])


def test_an_overlapped_straggler_at_a_reasonless_low_clock_is_escalated_at_its_gpu():
    # main: nothing (blind16 P1) -- no rank slower than its peers, the clock told nowhere
    alerts = feed(Engine(), overlap_job(low={11: (1560.0, 0)}), finish=False)
    assert firing(alerts) == [(ESCALATION, "slow_node", "unknown", "gpu:node-001/3")]
    page = next(a for a in alerts if a.status == "firing")
    assert page.detected_ts <= T0 + 120 + 60
    assert "1560 MHz" in page.evidence["ruled_out"][0]


def test_a_capped_overlapped_straggler_is_isolated_for_power_within_30_s():
    # main: only by the sustained-cap rule, 140-360 s after onset (blind16 P2)
    alerts = feed(Engine(), overlap_job(low={11: (1600.0, 0x4)}), finish=False)
    assert firing(alerts) == [(ISOLATION, "slow_node", "power", "gpu:node-001/3")]
    page = next(a for a in alerts if a.status == "firing")
    assert page.detected_ts <= T0 + 120 + 30


def test_what_pages_nobody():
    # two GPUs low with the step up: not one GPU's (a rack's, a fleet's)
    assert firing(feed(Engine(), overlap_job(low={3: (1600.0, 0x4), 11: (1600.0, 0x4)}),
                       finish=False)) == []
    assert firing(feed(Engine(), overlap_job(low={3: (1560.0, 0), 11: (1560.0, 0)}),
                       finish=False)) == []
    # a GPU low from long before the step up: not its cause
    assert firing(feed(Engine(), overlap_job(low={11: (1560.0, 0)}, clock_from=20),
                       finish=False)) == []
    # a clock 4.5 % lower (a driver's, a routine cap's) with the step up
    assert firing(feed(Engine(), overlap_job(low={11: (1890.0, 0)}), finish=False)) == []
    # a step up of the job with every GPU at its clock
    assert firing(feed(Engine(), overlap_job(), finish=False)) == []
