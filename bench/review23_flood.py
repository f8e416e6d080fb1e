"""Room review23 (round 23): round 22's new correlator state under a flood of new ids.

Three floods of ``N`` findings into one Correlator, as a forged findings topic (or a huge
fleet) would bring them: host-time rises of ``N`` jobs over 50,000 nodes (detector.host_node),
``gpus_busy`` of ``N`` nodes naming 64 idle GPUs each (Correlator._idle), and ``N`` jobs each
with a hung rank (a 3-GPU layout, one GPU idle, the job silent: detector.hang).  Prints the
CPU seconds, the memory the state holds (tracemalloc) and the sizes of the new state.

    PYTHONPATH=$PWD python bench/review23_flood.py [N]      # default 20000
"""

from __future__ import annotations

import sys
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from detector.alerts import Scope  # noqa: E402
from detector.correlate import Correlator  # noqa: E402
from detector.findings import Finding  # noqa: E402
from detector.pipeline.correlator import CorrelatorPartition  # noqa: E402

T0 = 1767225600.0


def _rises(corr: Correlator, n: int) -> None:
    out: list = []
    for i in range(n):
        corr.on_finding(Finding(T0 + i * 1e-3, T0, "host_rise", "slow_node", "unknown",
                                Scope.of_node(f"n{i % 50000}"), True, False, 0.5,
                                {"host_excess_ms": 250.0, "host_excess_share": 0.25},
                                f"j{i}", "t"), out)
        out.clear()


def _idle(corr: Correlator, n: int) -> None:
    out: list = []
    for i in range(n):
        corr.on_finding(Finding(T0, T0, "gpus_busy", "slow_node", "power", Scope.of_node(f"n{i}"),
                                True, False, 0.0, {"idle_gpus": list(range(1000, 1064))}), out)


def _hangs(corr: Correlator, n: int) -> None:
    out: list = []
    for i in range(n):
        job, node = f"j{i}", f"n{i}"
        layout = [[r, node, r, r] for r in range(3)]
        corr.on_finding(Finding(T0, T0, "job_layout", "slow_node", "unknown", Scope.of_job(job),
                                True, False, 0.0, {"placement": layout}, job), out)
        corr.on_finding(Finding(T0, T0, "gpus_busy", "slow_node", "power", Scope.of_node(node),
                                True, False, 0.0, {"idle_gpus": [1]}), out)
        corr.on_finding(Finding(T0 + 100, T0, "silent", "unattributed", "unknown",
                                Scope.of_job(job), True, False, 0.0,
                                {"last_step_ts": T0, "step_period_s": 1.0, "hang_s": 60.0}, job),
                        out)
        out.clear()


def measure(name: str, flood: Callable[[Correlator, int], None], n: int) -> None:
    corr = CorrelatorPartition(0, now=T0).correlator
    corr.seen = lambda node, topic: True
    tracemalloc.start()
    cpu = time.process_time()
    flood(corr, n)
    cpu = time.process_time() - cpu
    held, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    print(f"{name:28s} {n:>7,} ids  {cpu:7.1f} s CPU  held {held / 1e6:6.1f} MB "
          f"(peak {peak / 1e6:6.1f})  _host_rise {len(corr._host_rise):>5} nodes  "
          f"_hangs {len(corr._hangs):>5}  _idle {len(corr._idle):>6}  "
          f"problems {len(corr.problems):>5}", flush=True)


def main() -> int:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 20000
    measure("host_rise (host_node)", _rises, n)
    measure("gpus_busy, 64 idle (_idle)", _idle, n)
    measure("hung ranks (hang)", _hangs, n)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
