"""cpu31 (round 31, issue 14): hot-path cuts that keep every bit of state.

NodeNics.quiet learns a port's usual xmit_wait and CNP rates inline (one Python call less a
port's quiet sample) from the CNP deltas it computed for its CNP test: each sample it takes
must leave the port as ``_learn_wait`` called with the old arguments would.
"""

from __future__ import annotations

import random
from types import SimpleNamespace

import pytest

from detector.events import NicSample
from detector.network import NodeNics, _learn_wait
from detector.thresholds import Thresholds

CFG = Thresholds()
_KEYS = ("cong_n", "wait_mean", "cnp_mean", "np_s", "rp_s")


def _streams(seed: int, ports: int = 3, n: int = 400) -> list[NicSample]:
    """Random samples of a node's ports: steady, jittered intervals, counters that mostly
    creep (the quiet path's case), with CNP and wait bursts, the odd error, reset, missing
    counter and interval change among them."""
    rng = random.Random(seed)
    out = []
    for k in range(ports):
        ts = 1000.0 + 0.37 * k
        c = [0] * 11
        interval = rng.choice((1.0, 5.0, 10.0))
        for _ in range(n):
            ts += interval * rng.uniform(0.97, 1.03)
            if rng.random() < 0.01:
                interval = rng.choice((1.0, 5.0, 10.0))
            gb = rng.uniform(5.0, 50.0) * interval
            c[0] += int(gb * 1.25e8)
            c[1] += int(gb * 1.2e8)
            c[6] += rng.randrange(0, 4_000_000 if rng.random() < 0.05 else 200_000)
            c[9] += rng.randrange(0, 5_000 if rng.random() < 0.05 else 400)
            c[10] += rng.randrange(0, 5_000 if rng.random() < 0.05 else 400)
            if rng.random() < 0.005:
                c[2] += 1
            if rng.random() < 0.003:
                c = [0] * 11  # a reset
            vals: list[int | None] = list(c)
            if rng.random() < 0.005:
                vals[rng.randrange(11)] = None
            out.append(NicSample(ts, "n0", f"mlx5_{k}", 1, "up", 400.0, *vals))
    out.sort(key=lambda s: s.ts)
    return out


@pytest.mark.parametrize("seed", range(6))
def test_a_quiet_nic_sample_learns_the_ports_usual_rates_as_learn_wait(seed: int) -> None:
    nics = NodeNics("n0")
    taken = 0
    for s in _streams(seed):
        p = nics._ports.get((s.nic, s.port))
        if p is None:
            nics.update(s, CFG, [])
            continue
        before = SimpleNamespace(**{k: getattr(p, k) for k in _KEYS})
        last, last_ts = list(p.counters._last), p.counters._last_ts
        prev_ts = p.last_ts
        if not nics.quiet(s, CFG):
            nics.update(s, CFG, [])
            continue
        dt = s.ts - prev_ts
        if s.ts <= last_ts or dt <= 0:
            continue
        taken += 1
        np_d = s.np_cnp_sent - last[9]
        rp_d = s.rp_cnp_handled - last[10]
        # what the quiet path did before the cut: the deltas over dt, and _learn_wait
        want = SimpleNamespace(**vars(before))
        want.np_s, want.rp_s = np_d / dt, rp_d / dt
        _learn_wait(want, (s.xmit_wait - last[6]) / dt, (np_d + rp_d) / dt, CFG)  # type: ignore[arg-type]
        got = tuple(getattr(p, k) for k in _KEYS)
        assert got == tuple(getattr(want, k) for k in _KEYS), (s, got)
        # bit for bit, not only ==
        assert [float(x).hex() for x in got] == [float(getattr(want, k)).hex() for k in _KEYS]
    assert taken > 300  # the inline path ran (most samples are quiet)
