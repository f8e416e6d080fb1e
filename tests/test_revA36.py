"""revA36: adversarial review of round 36's detector changes (issue 10).

Probes built with the repo's own generators (tests/moejob.py: moe31's 64-rank TP-2 job with a
moving MoE expert; tests/test_liveness.py's fleet), varying what the rooms did not tune on:
rank noise under runs (lag-1 0.5-0.8), 4-GPU nodes, no ``compute_ms``, a host fault's ranks
recovering apart, a GPU fault told alone long before a host fault of its node.  Strict xfails
are findings left open (their reasons: what, n of m probe runs, a fix idea); the other tests
are guards that held.  Probe scripts: /tmp/revA36/narrow_probe.py, /tmp/revA36/live_probe.py.
"""

from __future__ import annotations

import random

import numpy as np
import pytest
from msgspec.structs import replace

from detector.engine import Engine
from detector.events import ThermalSample
from detector.monitors import Monitors
from detector.testing import T0, ecc, feed, healthy_job, step
from replay.runner import replay_log
from tests.moejob import MOVES, moe_job, units
from tests.test_liveness import firing as live_firing
from tests.test_liveness import fleet, write
from tests.test_revA35 import NODE
from tests.test_steps_round12 import COMPUTE, _on, job
from tests.test_therm33 import CLOCK, _clock, job_steps
from tests.test_therm35 import firing, node_log
from tests.test_therm36 import node_polls

NODE5 = tuple(range(40, 48))
NODE_PAGE = ["node:node-005"]


def _host(x: float, end: int = 10**6, ranks: tuple[int, ...] = NODE5) -> tuple:
    """A host fault (a CPU throttle, a NUMA mis-binding): ``ranks`` +x from step 170."""
    return tuple((170, end, r, x) for r in ranks)


def _narrowed(alerts: list) -> list[tuple[str, str]]:
    return sorted({(a.scope.key, a.evidence["narrowed_from"]) for a in alerts
                   if "narrowed_from" in a.evidence})


# -- finding 1: a host fault beside the moving expert, rank noise under long runs ----------


# (Was a strict xfail: "revA36 F1 (healthy GPU paged / node missed): a host fault on node-005
# (its 8 ranks +6 % or +10 % from step 170, lasting or ending at 230) while moe31's expert
# moves, each rank's log compute an AR(1) of lag-1 0.8: paged at a GPU of node-005 that has no
# fault (/3, /2, /4 -- /4 the expert's) in 8 of 8 runs at +10 % ...".  The job wanders (its
# CUSUM findings held, JobMonitor._hold_wandering); the GPU was the expert's rank found by its
# twins (JobMonitor._twin_update), told with nothing of its 7 mates alarmed alike beside it.
# Fixed by host37: a rule's finding (twins, wandering, pair) is told node_alarmed as the
# CUSUM's are (JobMonitor._rule_finding).)
@pytest.mark.parametrize(("seed", "x", "end"), [
    (3682, 0.06, 230),      # gpu:node-005/3 alone, the node missed
    (3680, 0.10, 10**6),    # gpu:node-005/3 + the node
    (3681, 0.10, 230),      # gpu:node-005/4 (the expert's GPU) alone
])
def test_f1_a_host_fault_beside_the_expert_under_long_runs_is_its_node(
        seed: int, x: float, end: int) -> None:
    alerts = feed(Engine(), moe_job(seed=seed, hot=MOVES, rho=0.8, slow=_host(x, end)))
    assert [u for u in units(alerts) if "node-005" in u] == NODE_PAGE


@pytest.mark.parametrize("seed", (3682, 3683))
def test_f1_guard_the_same_fault_without_the_expert_is_its_node(seed: int) -> None:
    alerts = feed(Engine(), moe_job(seed=seed, rho=0.8, slow=_host(0.06, 230)))
    assert units(alerts) == NODE_PAGE


# -- guards of moe36's narrowing (detector.steps.alone, detector.correlate.narrow) ---------


@pytest.mark.parametrize("seed", (3680, 3682))
def test_a_work_blip_at_a_gpu_fault_start_on_4_gpu_nodes_is_narrowed_to_the_gpu(
        seed: int) -> None:
    """moe34 (a) on 4-GPU nodes (node-010 = ranks 40-43): narrowed, 6 of 6 probe runs."""
    blip = ((168, 176, 40, 0.08), (168, 176, 41, 0.08))
    alerts = feed(Engine(), moe_job(seed=seed, hot=MOVES, gpus=4,
                                    slow=((170, 10**6, 43, 0.08), *blip)))
    assert _narrowed(alerts) == [("gpu:node-010/3", "node:node-010")]


@pytest.mark.parametrize("tail", (6, 15))
def test_a_host_fault_whose_last_rank_recovers_late_is_not_narrowed(tail: int) -> None:
    """node-005's host fault (+10 %) ends at 230, GPU 3's rank ``tail`` steps later (its
    process the last moved back): the node, never narrowed (18 of 18 probe runs)."""
    slow = tuple((170, 230 + (tail if r == 43 else 0), r, 0.10) for r in NODE5)
    alerts = feed(Engine(), moe_job(seed=3681, hot=MOVES, slow=slow))
    assert units(alerts) == NODE_PAGE and _narrowed(alerts) == []


def test_a_host_fault_ending_under_runs_or_without_compute_ms_is_not_narrowed() -> None:
    """Lag-1 0.5, and no ``compute_ms`` (work = step less collectives): the node, never
    narrowed (12 of 12 probe runs)."""
    for kw in ({"rho": 0.5}, {"compute": False}):
        alerts = feed(Engine(), moe_job(seed=3680, hot=MOVES, slow=_host(0.10, 230), **kw))
        assert units(alerts) == NODE_PAGE and _narrowed(alerts) == [], kw


def test_a_gpu_told_alone_long_before_a_host_fault_of_its_node_leaves_the_node_paged() -> None:
    """da59198's _slow_before: GPU 3's rank +8 % from step 100 (paged alone), then the node's
    host fault from 170 -- the mate slow long before is not counted with the host fault's
    ranks, and the node is still paged (12 of 12 probe runs, expert or not)."""
    slow = ((100, 10**6, 43, 0.08), *_host(0.06))
    alerts = feed(Engine(), moe_job(seed=3681, hot=MOVES, slow=slow))
    assert units(alerts) == ["gpu:node-005/3", "node:node-005"]


# -- finding: sbe36's climb (GpuHealth._sbe_climbing, models.rising) on a steady storm -----


def _steady_storm(seed: int, *, rate: float = 1.0, refresh_s: float = 0.0, poll_s: float = 60.0,
                  minutes: int = 30) -> list:
    """A healthy GPU's corrected errors at a steady ``rate`` a second (Poisson; blind6's MIG
    GPU: 0.5-2 a second for minutes), after ten quiet minutes, its ECC row polled every
    ``poll_s`` (+-10 %); ``refresh_s``: the counter read is the one the driver / DCGM's field
    watch refreshed last, every ``refresh_s`` (0: current)."""
    rng = np.random.default_rng(seed)
    end = minutes * 60.0
    times = np.cumsum(rng.exponential(1.0 / rate, int(rate * end * 1.5) + 100))
    phase = rng.uniform(0, refresh_s) if refresh_s else 0.0
    rows = [ecc(T0 + k * poll_s, "node-000", 0) for k in range(int(600 / poll_s))]
    t = rng.uniform(0, poll_s)
    while t < end:
        shown = t if not refresh_s else (
            phase + ((t - phase) // refresh_s) * refresh_s if t >= phase else -1.0)
        rows.append(ecc(T0 + 600.0 + t, "node-000", 0,
                        sbe=int(np.searchsorted(times, shown, side="right"))))
        t += poll_s * rng.uniform(0.9, 1.1)
    return rows


@pytest.mark.parametrize(("seed", "refresh_s", "poll_s"), [
    (17, 0.0, 60.0), (24, 0.0, 60.0), (1, 30.0, 10.0)])
def test_f2_a_steady_corrected_error_storm_is_no_climb(seed: int, refresh_s: float,
                                                        poll_s: float) -> None:
    """revA36 F2, fixed (sbefix36): a steady storm (1 a second, Poisson, from a quiet start)
    was paged sbe_rising -- the partial first poll, then one noisy step.  Now the first bin is
    no rate, bins are cut at the counter's changes, and a climb is two rises in a row
    (models.rising): /tmp/sbefix36/probe.py, 200 seeds: 60 s polls 1/200 (was 4/40), 30 s
    0/200 (3/40), 30 s refresh at 10 s 0/200 (9/40), 60 s refresh at 15 s at 2/s 0/200
    (11/40); 3 fail before."""
    rows = _steady_storm(seed, refresh_s=refresh_s, poll_s=poll_s)
    assert [a.scope.key for a in feed(Engine(), rows) if a.status == "firing"] == []


@pytest.mark.parametrize("seed", (0, 1, 2))
def test_a_steady_storm_read_current_every_10_s_is_no_climb(seed: int) -> None:
    """The guard that holds: the same storm read current at 10 s polls (0 of 40 seeds)."""
    rows = _steady_storm(seed, poll_s=10.0)
    assert [a.scope.key for a in feed(Engine(), rows) if a.status == "firing"] == []


# -- finding: therm36's 0x8 cause (GpuThermal._own_cause) on a GPU drawing hard -----------


def _hw8_polls(*, interval: float, power_w: float = 700.0, polls: int = 24) -> list:
    """therm36's node (tests/test_therm36.py's node_polls, its job): GPU 3 asserts HW slowdown
    (0x8) alone from poll 6, cool (64 C), its clock x0.88 -- but its draw stays at ``power_w``
    (its mates 640 W), not down with its clock as a regulator holding its voltage down makes
    it: NVML's "power draw too high" (an EDP excursion under a heavier kernel)."""
    rng = np.random.default_rng(3)
    out: list = []
    for k in range(polls):
        t = T0 + k * interval
        for i, g in enumerate((7, 0, 1, 2, 3, 4, 5, 6)):
            on = g == 3 and k >= 6
            out.append(ThermalSample(
                t + 0.01 * i, "node-000", g, 64.0, 70.0,
                round((power_w if g == 3 else 640.0) + float(rng.normal(0, 5)), 1),
                CLOCK * (0.88 if on else 1.0), 0x8 if on else 0, None, None))
            out.append(ThermalSample(t + 0.2 + 0.01 * i, "node-001", g, 61, 67, 640.0, CLOCK,
                                     0, None, None))
    out += job_steps({3: 6}, polls, interval, rng)
    out.sort(key=lambda e: e.ts)
    return out


# (Was a strict xfail, revA36 F3: "HW slowdown (0x8) alone on one cool GPU whose draw stays at
# 700 W -- above its mates' 640 W and not down with its clock -- is paged cause gpu_hardware".
# Fixed by therm36: gpu_hardware only when its draw is under DRAW_BELOW of its mates'.)
@pytest.mark.parametrize("interval", [10.0, 30.0])
def test_f3_hw_slowdown_on_a_gpu_drawing_hard_is_its_power(interval: float) -> None:
    alerts = feed(Engine(), _hw8_polls(interval=interval), finish=False)
    assert {(a.scope.key, a.cause) for a in alerts if a.status == "firing"} == {
        ("gpu:node-000/3", "power")}


# -- finding: therm36's fast cooling fault (revA35 2) with its sensors' noise ---------------


# (Was a strict xfail, revA36 F5: revA35 2's node cooling failing fast, +1 C a 10 s poll, under
# +-0.5-1 C of sensor noise paged gpu:node-000/7 and then the node, 1 of 6 seeds at sd 0.5 and 2
# of 6 at sd 1.0.  Fixed by therm37: the mates judged level over the polls since its run began,
# against their own moves' noise -- NodeTemps.mates_steady; 0 of 48 probe runs, 10 of 48 before.)
@pytest.mark.parametrize(("seed", "sd"), [(1, 0.5), (2, 1.0), (15, 0.5), (9, 1.0)])
def test_f5_a_fast_cooling_fault_with_noisy_sensors_is_one_node_page(seed: int,
                                                                    sd: float) -> None:
    tab = np.random.default_rng(seed).normal(0.0, sd, (400, 8))
    k0, lag = 60, 3

    def temp(k: int, g: int) -> float:
        return 70.0 + 0.4 * g + max(0, k - k0) + (6.0 if g == 7 else 0.0) + tab[k, g]

    first = {7: k0 + 1, 0: k0 + 1 + lag, 1: k0 + 1 + lag, 2: k0 + 2 + lag}
    alerts = feed(Engine(), node_log(temp, first, polls=k0 + 1 + lag + 12, interval=10.0),
                  finish=False)
    assert firing(alerts) == [NODE]


# -- guard of live36's one liveness rule (liveness._overdue, _quiet_at) ----------------------


def test_a_job_hung_everywhere_under_designs_disorder_pages_no_dark_node(tmp_path) -> None:
    """The job stops stepping on every node at 400 s (a hang; GPUs busy) while every node
    reports on (dcgm-exporter's 30 s, no NIC), each row up to 5 s late and out of order
    (DESIGN's disorder): no node is quiet past its rows -- none paged (12 of 12 probe runs,
    10 and 30 s polls).  (A node dying so is paged 51-57 s on at 30 s, as before live36.)"""
    rng = random.Random(2)
    recs = [r for r in fleet(seconds=900, interval=30.0, nic_interval=None, seed=2)
            if r["topic"] != "telemetry.step" or r["value"]["ts"] - T0 < 400]
    recs = [r for _, _, r in sorted(((r["value"]["ts"] + rng.uniform(0, 5.0), i, r)
                                     for i, r in enumerate(recs)), key=lambda x: x[:2])]
    assert live_firing(replay_log(write(tmp_path, recs)).alerts) == []


# (Was a strict xfail, revA36 F6: under TP-8-in-node GPU 3 alone at HW slowdown (0x8), cool,
# its clock 65 %, was paged node:node-000 gpu_hardware, drain_node -- 8 GPUs for one.  Fixed by
# therm37: a gpu_hardware page stays at its GPU, the node's ranks its consequence
# (detector.correlate.problems._NODE_HELD).)
def test_f6_hw_slowdown_of_one_gpu_under_tp_in_node_is_that_gpus_page() -> None:
    rng = np.random.default_rng(4)
    events = [e for e in node_polls({3: 6}) if type(e) is ThermalSample]
    for s in range(120):
        end = T0 + 1.0 + s * 2.0
        slow = CLOCK / _clock(int((end + 5.0 - T0) // 10.0), 6)
        for r in range(16):
            c = 700.0 * float(rng.lognormal(0.0, 0.015)) * (slow if r < 8 else 1.0)
            events.append(step(end + 0.001 * r, r, s, step_ms=round(700.0 * slow + 250.0, 2),
                               compute_ms=round(c, 2), tp=r % 8, dp=r // 8))
    events.sort(key=lambda e: e.ts)
    alerts = feed(Engine(), events, finish=False)
    assert {(a.scope.key, a.cause) for a in alerts if a.status == "firing"} == {
        ("gpu:node-000/3", "gpu_hardware")}


# -- guard of meta36's _mid_step (Monitors._ahead) ------------------------------------------


@pytest.mark.parametrize("pause", [30.0, 120.0])
def test_rank_zero_reporting_its_step_after_a_checkpoint_save_takes_no_offset(
        pause: float) -> None:
    """Rank 0 saves a checkpoint after step 20 and only then emits its step-20 record (its
    step_ms as measured, the save not in it); the job's next steps come ``pause`` later: the
    stream paused, no node is taken ahead, the slow rank is still found (6 of 6 probe runs,
    30/60/120 s, step_ms with or without the pause)."""
    mon = Monitors()
    found: list = []
    for e in healthy_job(ranks=32, steps=60, step_s=6.0, slow={20: 1.25}, slow_from=30):
        if e.step > 20 or (e.step == 20 and e.rank == 0):
            e = replace(e, ts=e.ts + pause)
        mon.process(e, found)
    assert not mon._skew
    assert ("slow_rank", "gpu:node-002/4") in {(f.signal, f.scope.key) for f in found}


def test_f7_a_collector_restart_during_a_job_hang_is_no_dark_node(tmp_path) -> None:
    """revA36 F7 (fixed, dark37: liveness._ran_to): a job hung on every node from 380 s (NCCL
    waiting, GPUs busy), node-003's collectors restart 20 s later (every topic quiet 400-440
    s): its silence did not stop the job -- no page (paged 'stopped stepping' at 419 s
    before; varied in tests/test_dark37.py)."""
    recs = [r for r in fleet(seconds=900, interval=10.0, nic_interval=10.0, seed=0,
                             quiet={"node-003": (400.0, 440.0, ("thermal", "ecc", "nic"))})
            if r["topic"] != "telemetry.step" or r["value"]["ts"] - T0 < 380.0]
    assert live_firing(replay_log(write(tmp_path, recs)).alerts) == []


# -- finding: loader36's rank-0 exception (JobMonitor._lone_from_start) ---------------------


@pytest.mark.parametrize("seed", (0, 1))
def test_f4_the_last_rank_logging_from_the_first_step_pages_nobody(seed: int) -> None:
    """revA36 F4 (fixed, loaderfix36): the job's last rank -- Megatron-LM's logging rank
    (print_rank_last) -- late by its host path +8 % of a step from the first step pages
    nobody, as rank 0 with the same shape does (it was escalated at gpu:node-003/7 ~72 s in,
    3/3 seeds: loader36's _lone_from_start exempted rank 0 only)."""
    alerts = feed(Engine(), job(ranks=32, steps=400, seed=seed, host=_on({31}, 0.08 * COMPUTE)))
    assert [a.scope.key for a in alerts if a.status == "firing"] == []
