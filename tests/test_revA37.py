"""revA37 (round 37, issue 10): adversarial review of round 37's detector changes.

Probes built with the rooms' own generators (tests/elasticjob.py via tests/test_elastic37.py,
tests/test_dark37.py on tests/test_liveness.py's fleet, tests/test_revA35.py's job), varied in
what the rooms did not tune on.  Guards that hold, and one finding pinned as a strict xfail:

F1 (real fault missed; pre-existing -- the same on e2211f3, before dark37): a node that dies
mid-step (every topic gone 0.5 s after its job's last step) whose job re-forms within 10-40 s
without it (torchelastic onto a spare or on fewer nodes, step numbers going on or back to a
checkpoint) is never paged dark: 18 of 24 probe runs missed and 2 paged 230 s late (10/30 s
polls, spare or not, pause 10/20/40 s, seeds 0-1); 20 of 24 missed with a checkpoint restart
(steps back 100).  dark37's crash guard re-forms after 70 s; at 40 s and 10 s polls it pages.
Fixed in dark38 (round 38: the job's re-form without the node is told, liveness._reforms and
_left_lost): 48 of 48 probe runs paged in time, seeds 2-3; the marker is gone.

F2 (wrong cause; pre-existing -- the same on 0dfd18e, before return37): a node's cooling under
pure data parallelism (tests/test_return37.py's log, TP 1: GPU 2 at 90 C throttling 0x40, then
GPU 7 at 90 C too braking 0x80) pages GPU 7 ``power`` at 10 and 30 s polls (8 of 8 probe runs:
seeds 5-6, rank +8/+15 %), ``thermal`` at 1 s polls (4 of 4) -- the cause hangs on the poll.
Fixed by brake38 (round 38): 0x80 on a GPU at hot_gpu_c beside its node's heat is the heat's
(GpuThermal._cause).

F3 (wrong unit, noisy; pre-existing -- the same on 0dfd18e): HW slowdown 0x8 on cool GPUs spreading
over a node one GPU a poll (its supply or board failing; tests/test_therm36.py's node_polls) pages
GPU 0 gpu_hardware and then power, GPUs 1-4 power each, then the node: 7 pages for one node's
fault at 10 and 30 s polls; four GPUs at once (0-3 or 0/2/4/6) 4-5 GPU pages and no node page.
Fixed by brake38 (round 38): two GPUs braking at once are the node's (tests/test_brake38.py).
"""

from __future__ import annotations

import random

import pytest

from detector.engine import Engine
from detector.testing import feed
from replay.runner import replay_log
from tests.elasticjob import elastic_job
from tests.test_dark37 import DARK, SPARE, _reform, _steps
from tests.test_elastic37 import churn
from tests.test_liveness import NODES, T0, firing, fleet, silent_pages, write
from tests.test_return37 import _log, _pages
from tests.test_revA35 import WORK, job
from tests.test_therm36 import node_polls


def _fast_reform(*, interval: float, swap: bool, seed: int, pause: float,
                 back: int = 0) -> list[dict]:
    """node-003 dies in its job's step in flight (no record of it from 380.5 s on); the other
    ranks hang (GPUs busy in NCCL) and torchelastic re-forms the job without it ``pause`` s
    later -- onto node-008 (``swap``) or on the 7 others -- ``back`` steps back."""
    stop = 380.0
    nodes = NODES + [SPARE] if swap else NODES
    recs = fleet(seconds=1000, interval=interval, nic_interval=interval, job=False, seed=seed,
                 nodes=nodes, dead={DARK: (stop + 0.5, 1e9)})
    after = [n for n in NODES if n != DARK] + ([SPARE] if swap else [])
    last = int(stop / 2)
    recs += _steps([(0.0, stop, NODES, 0), (stop + pause, 1000.0, after, last - back)])
    return sorted(recs, key=lambda r: r["value"]["ts"])


@pytest.mark.parametrize(("interval", "swap", "pause"), [(10.0, True, 10.0), (30.0, False, 20.0)])
def test_a_node_dead_mid_step_is_paged_though_its_job_re_forms_at_once(
        tmp_path, interval: float, swap: bool, pause: float) -> None:
    recs = _fast_reform(interval=interval, swap=swap, seed=0, pause=pause)
    pages = silent_pages(replay_log(write(tmp_path, recs)).alerts)
    assert [(a.status, a.scope.key) for a in pages][:1] == [("firing", f"node:{DARK}")]
    assert pages[0].detected_ts < T0 + 380.0 + 3 * interval + 30.0


@pytest.mark.parametrize("poll_s", [10, 30])
def test_a_hot_gpus_brake_beside_its_nodes_heat_under_pure_dp_is_thermal_at_any_poll(
        poll_s: int) -> None:
    pages = _pages(_log(seed=5, hot=(100, 600), brake=(330, 520), poll_s=poll_s, gpn=8, tp=1,
                        floats=False, brake_hot=True, brake_slow=1.08))
    seven = [p for p in pages if p[0] == "firing" and p[2] == "gpu:node-000/7"]
    assert seven and all(p[1] == "thermal" for p in seven), pages


def test_guard_the_same_at_1_s_polls_is_thermal() -> None:
    pages = _pages(_log(seed=5, hot=(100, 600), brake=(330, 520), poll_s=1, gpn=8, tp=1,
                        floats=False, brake_hot=True, brake_slow=1.08))
    assert ("firing", "thermal", "gpu:node-000/7", 330) in pages, pages


@pytest.mark.parametrize("interval", [10.0, 30.0])
def test_hw_slowdown_spreading_over_a_nodes_gpus_is_one_node_page(interval: float) -> None:
    # (brake38: 7 pages before -- GPU 0 gpu_hardware then power, GPUs 1-4 power, the node)
    alerts = feed(Engine(), node_polls({g: 6 + g for g in range(8)}, interval=interval,
                                       polls=30), finish=False)
    keys = {a.scope.key for a in alerts if a.status == "firing"}
    assert keys == {"node:node-000"}, sorted(keys)


# -- guards that hold -------------------------------------------------------------------------


@pytest.mark.parametrize("kw", [{"nodes": 4}, {"gpus": 8, "nodes": 4}, {"every": 10, "reforms": 10},
                                {"crash_at": 1}, {"tp": 4, "gpus": 8, "nodes": 6}],
                         ids=["dp16", "g8-dp32", "re-form-every-10", "crash-first", "tp4-g8"])
def test_healthy_elastic_churn_in_shapes_not_tuned_on_pages_nobody(kw: dict) -> None:
    # (elastic37's slots following their GPUs: seeds 4-7 of 8 shapes, 32 runs, none paged)
    recs, _ = churn(5, new_slow=None, **kw)
    assert firing(feed(Engine(), recs)) == []


@pytest.mark.parametrize("seed", [0, 1])
def test_a_slow_gpu_through_re_forms_that_reclaim_any_vm_is_its_only_page(seed: int) -> None:
    # (12 % slow from step 20; any VM reclaimed, its own VM included, members re-ranked every
    # re-form: no healthy GPU inherits its evidence -- 24 of 24 probe runs, seeds 0-11)
    rng = random.Random(seed)
    cur = [f"vm-{i:02d}" for i in range(8)]
    segs: list = [(cur[:], 30, "start")]
    joined = 8
    for i in range(8):
        if i % 2 == 0:
            cur.remove(rng.choice(cur))
        else:
            cur.append(f"vm-{joined:02d}")
            joined += 1
        rng.shuffle(cur)
        segs.append((cur[:], max(8, 25 + rng.randint(-8, 8)), "reform"))
    recs = elastic_job(segs, gpus=4, seed=seed, slow={("vm-03", 1): (1.12, 20)})
    keys = {a.scope.key for a in feed(Engine(), recs)}
    assert keys == {"gpu:vm-03/1"}, keys


@pytest.mark.parametrize("interval", [10.0, 30.0])
def test_a_node_dead_late_in_its_step_is_paged_before_its_job_restarts(
        tmp_path, interval: float) -> None:
    # (dark37's crash guard at 1.9 s of a 2 s step, seeds 2-3: paged at +22..57 s, 24/24)
    recs = _reform(dark_after=1.9, interval=interval, swap=False, seed=2, crash=True)
    pages = silent_pages(replay_log(write(tmp_path, recs)).alerts)
    assert [(a.status, a.scope.key) for a in pages] == [("firing", f"node:{DARK}")]
    assert pages[0].detected_ts < T0 + 450.0


def test_a_short_recurring_host_stall_under_wide_jitter_is_still_paged() -> None:
    # (host37's noise floor: node-001's 8 ranks +15 % of a step for 3 steps every 50, loaders
    # +-30 % i.i.d.: paged on 0dfd18e and after, both seeds 1 and 3)
    def cron(s: int, r: int) -> float:
        return 0.15 * WORK if 8 <= r < 16 and s >= 100 and s % 50 < 3 else 0.0

    got = [(a.cause, a.scope.key) for a in feed(Engine(), job(steps=800, jitter=0.3, seed=3,
                                                               loader=cron))
           if a.status == "firing"]
    assert got == [("unknown", "node:node-001")]
