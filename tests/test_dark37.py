"""dark37: a node called dark when its job did not lose it (issue 10; blind27 F3, revA36 F7).

A node's death stops its jobs' steps within a step period of its last row (the step in flight
never ends).  A job that stopped *before* the node went quiet (a hang of its own, a save), or
that steps on with the node's ranks elsewhere (an elastic re-form without it), did not lose it:
no page.  Still paged: a node that dies mid-step, whatever its job does next (a crash restart
without it), at 10 s and 30 s polls.  Built on tests/test_liveness.py's fleet (8 nodes of two
GPUs, a rank a GPU, 2 s steps).
"""

from __future__ import annotations

import pytest

from replay.runner import replay_log
from tests.test_liveness import NODES, T0, firing, fleet, silent_pages, write

DARK = "node-003"
SPARE = "node-008"


def _steps(spans: list[tuple[float, float, list[str], int]]) -> list[dict]:
    """Step records of job-1, one rank a GPU, every 2 s: per span [from, to) the nodes it runs
    on (ranks numbered in that order) and what its step numbers start from."""
    out = []
    for a, b, nodes, first in spans:
        t, step = T0 + a + 1.0, first
        while t < T0 + b:
            for k, node in enumerate(nodes):
                for gpu in range(2):
                    out.append({"topic": "telemetry.step", "value": {
                        "ts": t, "job": "job-1", "step": step, "rank": 2 * k + gpu,
                        "node": node, "gpu": gpu, "step_ms": 2000.0, "compute_ms": 1500.0,
                        "comm_ms": 480.0}})
            t += 2.0
            step += 1
    return out


def _reform(*, dark_after: float, interval: float, swap: bool, seed: int,
            crash: bool = False) -> list[dict]:
    """job-1 steps on the 8 nodes until 380 s; node-003 goes dark ``dark_after`` s on and
    never comes back.  Graceful (not ``crash``): the job saves, every GPU idle, and re-forms
    at 450 s without node-003 -- onto node-008 in its place (``swap``) or on the 7 others --
    its step numbers going on.  ``crash``: node-003 dies in the step in flight, the other
    GPUs spin in NCCL (busy) and torchrun restarts the job at 450 s without it from a
    checkpoint (step numbers back by 100)."""
    stop, resume = 380.0, 450.0
    nodes = NODES + [SPARE] if swap else NODES
    recs = fleet(seconds=1000, interval=interval, nic_interval=interval, job=False, seed=seed,
                 nodes=nodes, dead={DARK: (stop + dark_after, 1e9)},
                 idle=None if crash else (stop + 1.0, resume))
    after = [n for n in NODES if n != DARK] + ([SPARE] if swap else [])
    last = int(stop / 2)
    recs += _steps([(0.0, stop, NODES, 0),
                    (resume, 1000.0, after, last - 100 if crash else last)])
    return sorted(recs, key=lambda r: r["value"]["ts"])


@pytest.mark.parametrize("swap", [True, False])
@pytest.mark.parametrize(("interval", "dark_after"), [(10.0, 20.0), (10.0, 35.0), (30.0, 35.0),
                                                      (30.0, 50.0)])
def test_a_node_gone_during_its_jobs_re_form_without_it_is_not_paged(
        tmp_path, interval: float, swap: bool, dark_after: float) -> None:
    """blind27 F3's shape: the job saved (its GPUs idle) and re-formed without node-003 --
    onto a spare or on fewer nodes -- and node-003 went dark during the rendezvous, once the
    job had stopped: no page (paged 240 s on before: the job noted on the node while it
    paused).  (Gone 20 s after the job's last step at 30 s polls, the node's last row may
    precede that step's next: a death in the step in flight then, paged.)"""
    for seed in (0, 1):
        recs = _reform(dark_after=dark_after, interval=interval, swap=swap, seed=seed)
        assert firing(replay_log(write(tmp_path, recs)).alerts) == [], seed


@pytest.mark.parametrize("interval", [10.0, 30.0])
@pytest.mark.parametrize("swap", [True, False])
def test_a_node_dead_mid_step_is_paged_though_its_job_restarts_without_it(
        tmp_path, interval: float, swap: bool) -> None:
    """node-003 dies in its job's step in flight (0.5 s after its last step): the job hangs,
    its GPUs busy, then restarts without it -- still the node's page, before the restart."""
    for seed in (0, 1):
        recs = _reform(dark_after=0.5, interval=interval, swap=swap, seed=seed, crash=True)
        pages = silent_pages(replay_log(write(tmp_path, recs)).alerts)
        assert [(a.status, a.scope.key) for a in pages] == [("firing", f"node:{DARK}")], seed
        assert pages[0].detected_ts < T0 + 450.0


@pytest.mark.parametrize("interval", [10.0, 30.0])
@pytest.mark.parametrize("before", [20.0, 40.0, 60.0])
def test_a_collector_restart_during_a_job_hang_is_no_dark_node(
        tmp_path, interval: float, before: float) -> None:
    """revA36 F7 varied: the job hangs on every node (NCCL waiting, GPUs busy) ``before`` s
    before node-003's collectors restart (every topic quiet 400-440 s): its silence did not
    stop the job -- no page (paged at 419-446 s before, 10 and 30 s polls).  (Hung 10 s
    before a silence at 30 s polls, the node's last row may precede the hang: a death then.)"""
    for seed in (0, 1, 2):
        recs = [r for r in fleet(seconds=900, interval=interval, nic_interval=interval,
                                 seed=seed, quiet={DARK: (400.0, 440.0, ("thermal", "ecc", "nic"))})
                if r["topic"] != "telemetry.step" or r["value"]["ts"] - T0 < 400.0 - before]
        assert firing(replay_log(write(tmp_path, recs)).alerts) == [], seed
