"""What the untrusted-input bounds of round 8 (room fixes) cost and hold.

    python bench/input_bounds.py reporter N     # N reporter steps, do-nothing producer
    python bench/input_bounds.py collector N    # N collector ticks on an 8-GPU dcgm page
    python bench/input_bounds.py topology K     # harden's 3 lines of K nodes: CPU s, peak RSS
    python bench/input_bounds.py hugeline       # one 64 MiB line in a gzip: read_records' peak

Run the first two under ``valgrind --tool=callgrind`` with N and with 0: the
difference over N is the instructions per step / tick (wall clock on a shared
machine is noise).
"""

from __future__ import annotations

import gzip
import os
import resource
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

T0 = 1767225600.0


def reporter(n: int) -> None:
    from faultline_reporter import Placement, StepReporter

    class Nothing:
        def produce(self, topic: str, value: bytes, key: bytes) -> None:
            pass

        def poll(self, timeout: float) -> int:
            return 0

    r = StepReporter("job-1", producer=Nothing(), clock=lambda: T0,
                     placement=Placement(3, 3, "node-000", 0, 0, 3))
    for i in range(n):
        with r.step(i) as s:
            s.compute_ms, s.comm_ms, s.loss, s.grad_norm = 700.0, 250.0, 2.0, 1.0
            s.param_checksum = "ck"


def collector(n: int) -> None:
    from prometheus_client import CollectorRegistry

    from detector.collect.agent import CollectMetrics, Collector
    from detector.collect.sinks import LogSink
    from detector.collect.testing import DcgmState

    page = DcgmState(gpus=8).text()
    sink = LogSink(os.devnull)  # as bench/collect_cpu.py: serialised, written nowhere
    c = Collector("node-a", sink, CollectMetrics(CollectorRegistry()), dcgm_url="dcgm",
                  fetch=lambda u, t: page, clock=lambda: T0)
    for _ in range(n):
        c.tick()
    sink.close()


def topology(k: int) -> None:
    from detector.topology import Topology, TopologyError

    text = "\n".join(f"SwitchName=leaf{i} Nodes=n{i}x[0-{k - 1}]" for i in range(3))
    t = time.process_time()
    try:
        Topology.from_text(text, fmt="slurm")
        out = "accepted"
    except TopologyError as exc:
        out = f"refused: {exc}"
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"{out[:120]} | {time.process_time() - t:.2f} s CPU, peak RSS {rss:.0f} MiB")


def hugeline() -> None:
    from replay.log import read_records

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "bomb.jsonl.gz"
        line = b'{"topic": "telemetry.ecc", "value": "' + b"x" * (64 << 20) + b'"}\n'
        path.write_bytes(gzip.compress(line + b'{"topic": "labels", "value": {}}\n', 1))
        del line
        tracemalloc.start()
        got = list(read_records(path))
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
    print(f"{len(got)} records "
          f"({type(got[0]).__name__}, {type(got[-1]).__name__}); peak {peak / 2**20:.1f} MiB")


if __name__ == "__main__":
    what = sys.argv[1]
    if what == "hugeline":
        hugeline()
    else:
        {"reporter": reporter, "collector": collector, "topology": topology}[what](
            int(sys.argv[2]))
