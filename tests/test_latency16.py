"""Issue 14, round 16: the latency bench's warm-up lasts until our broker's JIT compilers are
quiet, feeding what a measured run feeds (bench/kafka_throughput.py ``warm_up``).

In the lead's round-16 set (after 3 warm-up runs of the log fed once) the first two measured
runs still had the broker's JIT compilers take 2.7 and 1.5 CPU-seconds and the worker fell
seconds behind in exactly those two runs; the later ones took 0.0-0.5 s.  A warm-up that
stops at a fixed count measured a broker still compiling.
"""

from __future__ import annotations

import math
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "bench"))

import kafka_throughput as kt  # noqa: E402


def _runs(jits: list[float]) -> tuple[list[int], object]:
    ran: list[int] = []

    def run(k: int) -> float:
        ran.append(k)
        return jits[k]

    return ran, run


def test_warm_up_goes_on_while_the_jit_compiles() -> None:
    # the lead's warm-ups (2.0, 0.9, 0.7 s), then what the first measured runs took (2.7, 1.5)
    ran, run = _runs([2.0, 0.9, 0.7, 2.7, 1.5, 0.3, 0.1, 0.0, 0.0])
    assert kt.warm_up(run, 3, 8) == 7
    assert ran == list(range(7))


def test_warm_up_stops_at_its_least_when_quiet_and_at_its_most() -> None:
    ran, run = _runs([0.1] * 9)
    assert kt.warm_up(run, 3, 8) == 3
    ran, run = _runs([3.0] * 9)
    assert kt.warm_up(run, 3, 8) == 8
    ran, run = _runs([math.nan] * 9)  # an existing broker (--bootstrap): no JIT to wait for
    assert kt.warm_up(run, 3, 8) == 3
    ran, run = _runs([3.0] * 9)
    assert kt.warm_up(run, 0, 8) == 0 and ran == []  # --warmup-runs 0: none
