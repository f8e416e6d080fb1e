"""Issue 14's ratio in one sitting (bench/kafka_throughput.py --ratio N): each consumer's best
run, the worker's share of raw by wall and by CPU -- the arithmetic, with the runs faked
(perf38, round 38; the real runs need a broker: BENCHMARKS "perf38, round 38")."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "bench"))

import kafka_throughput as kt  # noqa: E402

N = 1000


class _Broker:
    bootstrap = "127.0.0.1:1"


def test_best_of_each_and_the_ratios(monkeypatch):
    # raw's second turn is its best, the worker's third; the first serve is untimed
    walls = {"raw": [0.010, 0.004, 0.008], "faust-batch": [0.003, 0.002, 0.004]}
    cpus = {"raw": [0.006, 0.003, 0.005], "faust-batch": [0.002, 0.001, 0.002]}
    serves = iter([(99.0, 99.0), (0.030, 0.020), (0.020, 0.025), (0.010, 0.012)])
    turn = {"raw": 0, "faust-batch": 0}

    def consumer(mode, bootstrap, topics, n):
        k = turn[mode]
        turn[mode] += 1
        return {"mode": mode, "messages": n, "wall_s": walls[mode][k], "cpu_s": cpus[mode][k]}

    def serve(*args, **kw):
        wall, cpu = next(serves)
        return {"mode": "faultline x1", "messages": N, "wall_s": wall, "cpu_s": cpu}

    monkeypatch.setattr(kt, "reference_consumer", consumer)
    monkeypatch.setattr(kt, "serve", serve)
    said: list[str] = []
    out = kt.ratio_sitting(_Broker(), "p.", ["p.t"], N, None, 8, Path("."), 3, said.append)
    assert out["best"]["raw"]["wall_s"] == 0.004
    assert out["best"]["faultline"]["wall_s"] == 0.010
    assert out["wall_ratio"] == pytest.approx(0.4)
    assert out["cpu_ratio"] == pytest.approx(0.003 / 0.012)  # each one's least CPU
    assert out["transport_wall_ratio"] == pytest.approx(2.0)
    assert out["turn_wall_ratios"] == pytest.approx([0.010 / 0.030, 0.004 / 0.020, 0.8])
    assert len(said) == 4 and "best of 3" in said[-1]
