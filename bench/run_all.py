"""Every performance benchmark of BENCHMARKS.md, in one run (``make bench``).

1. bench/kafka_throughput.py: raw Kafka consumption, no-op Faust (default
   path and batch delivery), one faultline worker, the engine in process,
   1 and 2 workers, latency at 50 % and 90 % of the worker's maximum rate; raw,
   batch delivery and the worker best of 3 each, taking turns (``--ratio 3``: issue 14's
   ratio, worker / raw, by wall and by CPU);
2. bench/state_scale.py: engine state and resident memory at 1,000, 10,000
   and 100,000 GPUs.

Detection quality (bench/false_alarms.py, bench/slowdown_curve.py,
``faultline evaluate``) is measured separately: it takes longer and does not
depend on the machine's speed.

    python bench/run_all.py [--out DIR]     # tables on stdout, JSON in DIR
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parent


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=None, help="write each benchmark's JSON here")
    args = ap.parse_args()
    out = Path(args.out) if args.out else None
    if out:
        out.mkdir(parents=True, exist_ok=True)
    for script in ("kafka_throughput.py", "state_scale.py"):
        cmd = [sys.executable, str(BENCH / script)]
        if script == "kafka_throughput.py":
            cmd += ["--ratio", "3"]  # issue 14's ratio: best of 3 each in one sitting
        if out:
            cmd += ["--json", str(out / script.replace(".py", ".json"))]
        print(f"\n## {script}\n", flush=True)
        code = subprocess.call(cmd)
        if code:
            return code
    return 0


if __name__ == "__main__":
    sys.exit(main())
