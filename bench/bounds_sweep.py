"""Room bounds (round 9): what a record costs beside many jobs kept, counted by callgrind.

A flood of one-message jobs (100 a second of event time, room harden's shape): ``N`` of them
are taken first, then 2,000 more are counted (``valgrind --toggle-collect`` on a
``functools.reduce`` over them), in one Engine.  The sweep once a second of event time visited
every job kept (O(jobs) a sweep); it should cost the same at any ``N``.

    PYTHONPATH=$PWD python bench/bounds_sweep.py [N ...]     # default: 2000 6000 20000

Also prints the plateau of rank slots of a job with one stray rank number a step (harden's
``rank_numbers_that_come_and_go``), without valgrind.
"""

from __future__ import annotations

import argparse
import functools
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

COUNTED = 2000


def inner(n: int) -> int:
    from detector.engine import Engine
    from detector.testing import T0, step

    eng = Engine()
    records = [step(T0 + 0.01 * i, 0, 0, job=f"stray-{i}") for i in range(n + COUNTED)]
    for e in records[:n]:
        eng.process(e)
    functools.reduce(lambda _, e: eng.process(e), records[n:], None)
    return len(eng.monitors._jobs)


def count(n: int) -> tuple[int, int]:
    with tempfile.TemporaryDirectory(prefix="bounds-sweep-") as tmp:
        out = Path(tmp) / "cg.out"
        env = {**os.environ, "PYTHONHASHSEED": "0", "PYTHONPATH": str(ROOT)}
        run = subprocess.run(
            ["valgrind", "--tool=callgrind", "--toggle-collect=functools_reduce",
             f"--callgrind-out-file={out}", sys.executable, __file__, "--inner", str(n)],
            env=env, cwd=ROOT, capture_output=True, text=True, check=True)
        jobs = int(run.stdout.split()[-1])
        total = re.search(r"^summary: (\d+)", out.read_text(errors="replace"), re.M)
        assert total is not None, "no summary line in the callgrind output"
        return int(total.group(1)), jobs


def stray_ranks() -> int:
    from detector.engine import Engine
    from detector.testing import T0, step

    eng = Engine()
    for s in range(720):  # 2 h at 10 s a step, one stray rank number a step
        t = T0 + 10.0 * s
        eng.process(step(t + 0.0005, 1000 + s, s, node="node-x", gpu=s % 8))
        for r in range(8):
            eng.process(step(t + 0.001 * r, r, s))
    return len(eng.monitors._jobs["job-1"]._rank_of)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("jobs", nargs="*", type=int, default=[2000, 6000, 20000])
    ap.add_argument("--inner", type=int, default=None, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.inner is not None:
        print(inner(args.inner))
        return 0
    print(f"rank slots after 2 h of one stray rank a step (8 real ranks): {stray_ranks()}")
    for n in args.jobs:
        total, jobs = count(n)
        print(f"{n:7,d} one-message jobs kept: {total / COUNTED:9,.0f} instructions a record "
              f"over the next {COUNTED:,} ({jobs:,} jobs at the end)", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
