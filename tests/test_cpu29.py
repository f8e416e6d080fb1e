"""Room cpu29 (round 29, issue 14): the engine's CPU an event -- cuts that change nothing.

Each cut is compared with the code it replaced on random inputs: the replaced lines are kept
here as the reference, and a test fails when the cut is made wrong (checked by breaking it).
"""

from __future__ import annotations

import math
import random

import numpy as np
import pytest

from detector import steps as st
from detector.events import StepSample
from detector.thresholds import Thresholds


def _bits(a: np.ndarray) -> bytes:
    return np.ascontiguousarray(a, dtype=np.float64).tobytes()


def _job(seed: int, steps: int) -> list[StepSample]:
    """A 16-rank job (2 pipeline stages, TP 2, 4 nodes of 4 ranks): host times that wander,
    a node whose host time rises a third of a step from step 90 (host_late and host_rise
    findings), steps where a rank sends no comm_ms (no host times: NaN), steps whose
    parts exceed step_ms (host times below 0, taken as 0), and steps a rank misses (decided by
    expiry, fewer ranks)."""
    rng = random.Random(seed)
    out: list[StepSample] = []
    for step in range(steps):
        for rank in range(16):
            if step % 29 == 7 and rank == 5:
                continue  # (missed: the step is decided incomplete)
            node = rank // 4
            compute = 700.0 * math.exp(rng.gauss(0.0, 0.02))
            comm = 250.0 * math.exp(rng.gauss(0.0, 0.05))
            host = 40.0 * math.exp(rng.gauss(0.0, 0.3))
            if node == 2 and 90 <= step < 260:
                host += 330.0 * (0.8 + 0.4 * rng.random())
            step_ms = compute + comm + host
            if step % 23 == 11:
                step_ms = compute + comm - rng.random()  # (the parts over step_ms)
            comm_ms: float | None = comm
            if step % 37 == 19 and rank == 3:
                comm_ms = None
            ts = 100.0 + 1.1 * step + rank * 1e-3
            out.append(StepSample(ts, "job", step, rank, f"n{node}", rank % 4, step_ms,
                                  compute, comm_ms, rank % 2, rank // 8, (rank // 2) % 4))
    return out


@pytest.mark.parametrize("seed", range(4))
def test_host_times_once_are_the_host_times_host_rise_made(seed: int,
                                                            monkeypatch: pytest.MonkeyPatch
                                                            ) -> None:
    # _check_host hands its host times to _host_rise, which computed them again from the step
    # (main bb06987: ``_floats(step_ms) - _floats(comm) - compute``, none when one is NaN, at
    # least 0) and was called on every step with host times after the warm-up.  Each step:
    # the times _host_rise gets are those bits, and it is called exactly where it was.
    expected: list[bytes | None] = []
    got: list[bytes] = []
    check_host, host_rise = st.JobMonitor._check_host, st.JobMonitor._host_rise

    def spy_check(self: st.JobMonitor, step: int, slots: np.ndarray, groups: np.ndarray,
                  ts: np.ndarray, compute: np.ndarray, buf: st._StepBuffer, decided_ts: float,
                  out: list) -> np.ndarray | None:
        old = st._floats(buf.step_ms) - st._floats(buf.comm) - compute
        if np.count_nonzero(np.isnan(old)) or self._evaluated <= self.cfg.warmup_steps:
            expected.append(None)
        else:
            np.maximum(old, 0.0, out=old)
            expected.append(_bits(old))
        return check_host(self, step, slots, groups, ts, compute, buf, decided_ts, out)

    def spy_rise(self: st.JobMonitor, step: int, slots: np.ndarray, buf: st._StepBuffer,
                 host: np.ndarray, ts: float, out: list) -> None:
        assert len(got) < len(expected)
        got.extend([b""] * (len(expected) - 1 - len(got)))  # (steps it was not called on)
        got.append(_bits(host))
        host_rise(self, step, slots, buf, host, ts, out)

    monkeypatch.setattr(st.JobMonitor, "_check_host", spy_check)
    monkeypatch.setattr(st.JobMonitor, "_host_rise", spy_rise)
    mon = st.JobMonitor("job", Thresholds())
    out: list = []
    for e in _job(seed, 320):
        mon.add(e, out)
    mon.expire(math.inf, out)
    got.extend([b""] * (len(expected) - len(got)))
    assert [b"" if x is None else x for x in expected] == got
    assert expected.count(None) >= 8 and len(expected) - expected.count(None) >= 200
    signals = {f.signal for f in out}
    assert {"host_rise", "host_late"} <= signals, signals  # (the judges found the node)

