"""esc41 (round 41, issue 10): one firing page must not hide a second problem of the same unit.

A node's slow page waits out the flap window (600 s) after its findings clear: a rank slow,
then not, then slow again is one incident.  A quiet page's return that reads another part of
the step -- its host path late where the page was for its compute, or the reverse -- is another
fault: the quiet page resolves ("ended_before") and the new run is paged (blind31 F4).  Built in
process (Engine, no broker, no wall clock) from a synchronous DP job of 4 nodes x 4 GPUs whose
node-001 runs slow in compute for ``compute`` steps and late in its host path for ``host`` steps.
"""

from __future__ import annotations

import numpy as np

from detector.engine import Engine
from detector.testing import T0, feed, step
from tests.test_revA40 import _fired, _locked
from tests.test_revA40 import _job as _clock_job

GPN, NODES = 4, 4
COMPUTE_MS, HOST_MS, COMM_MS = 700.0, 60.0, 120.0


def _job(compute: range, host: range, *, steps: int = 520, seed: int = 0) -> list:
    """1 s steps; node-001's ranks' compute x1.2 over steps ``compute``, their host time
    (time in neither compute nor collectives) +25 % of a step's work over steps ``host``."""
    rng = np.random.default_rng(seed)
    ranks = NODES * GPN
    ev = []
    for s in range(steps):
        c = COMPUTE_MS * rng.lognormal(0.0, 0.015, ranks)
        h = HOST_MS * rng.uniform(0.9, 1.1, ranks)
        for r in range(GPN, 2 * GPN):
            c[r] *= 1.2 if s in compute else 1.0
            h[r] += 0.25 * COMPUTE_MS if s in host else 0.0
        top = float((c + h).max())
        for r in range(ranks):
            comm = top - c[r] - h[r] + COMM_MS
            ev.append(step(T0 + s + 0.001 * r, r, s, node=f"node-{r // GPN:03d}", gpu=r % GPN,
                           step_ms=round(top + COMM_MS, 2), compute_ms=round(float(c[r]), 2),
                           comm_ms=round(float(comm), 2), dp=r))
    return ev


def _messages(events) -> list[tuple[str, str, str, int]]:
    return [(a.status, a.scope.key, a.evidence["signals"][0]["signal"],
             round(a.detected_ts - T0)) for a in feed(Engine(), events)
            if a.scope.key == "node:node-001"]


def test_a_host_fault_after_a_quiet_compute_page_is_paged() -> None:
    # (1 fails before: node-001's compute page of 104 s, quiet from ~135 s, took the host
    # fault of 200 s as its return -- one firing message, at 104 s)
    got = _messages(_job(range(100, 130), range(200, 520)))
    assert [(s, sig) for s, _, sig, _ in got] == [
        ("firing", "slow_rank"), ("resolved", "slow_rank"), ("firing", "host_late")], got
    assert got[1][3] == got[2][3] >= 200 + 235  # (ended as the host run was paged)


def test_guard_a_compute_page_slow_again_in_compute_is_one_incident() -> None:
    # (issue 10's flap rule: the same part of the step again within the window -- one page)
    got = _messages(_job(list(range(100, 130)) + list(range(250, 520)), range(0)))
    assert [(s, sig) for s, _, sig, _ in got] == [("firing", "slow_rank")], got


def test_guard_a_lock_reset_with_no_fault_under_it_leaves_one_page() -> None:
    # (revA40 F4's shape without its fault: the node's software page, nothing narrowed to a
    # GPU once the clocks are back -- its ranks all back at their pace; 2 of 2 seeds)
    for seed in (0, 1):
        got = _fired(_clock_job(_locked({2}, lock=(100, 200)), steps=600, seed=seed))
        assert [g[:3] for g in got] == [("isolation", "software", "node:node-002")], got
