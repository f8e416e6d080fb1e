"""Step analysis of one large job: milliseconds per step in JobMonitor, messages in random order.

A synchronous TP 8 x PP 4 job of --ranks ranks (8 GPUs a node, replicas of 32 ranks on 4
nodes) under per-step sequence-length imbalance (each replica's batch +-20 %, drawn anew each
step: the regime in which every step asks which replicas sit on one node), 2 % jitter per
rank, each step's messages arriving in a new random order.  Times ``JobMonitor.add`` over
--steps steps after the warm-up (best of --repeat runs); prints ms per step and us per message.

    python bench/big_job_steps.py [--ranks 4096] [--steps 60] [--repeat 3]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from detector.events import StepSample  # noqa: E402
from detector.findings import Finding  # noqa: E402
from detector.steps import JobMonitor  # noqa: E402
from detector.thresholds import Thresholds  # noqa: E402

TP, PP = 8, 4


def steps(ranks: int, n: int, seed: int) -> list[list[StepSample]]:
    """``n`` steps of the job, each a list of its messages in arrival order."""
    rng = np.random.default_rng(seed)
    dp = ranks // (TP * PP)
    out = []
    for s in range(n):
        batch = np.exp(rng.uniform(-0.2, 0.2, dp))
        compute = 1000.0 * batch[np.arange(ranks) // (TP * PP)] * np.exp(
            rng.normal(0.0, 0.02, ranks))
        step_ms = float(compute.max()) + 250.0
        t0 = 1_700_000_000.0 + 2.0 * s
        order = rng.permutation(ranks)
        out.append([StepSample(t0 + 0.02 * rng.random(), "job-big", s, int(r),
                               f"node-{r // 8:04d}", int(r % 8), round(step_ms, 2),
                               compute_ms=round(float(compute[r]), 2), comm_ms=None,
                               tp_rank=int(r % TP), pp_rank=int((r // TP) % PP),
                               dp_rank=int(r // (TP * PP)))
                    for r in order.tolist()])
    return out


def run(job: list[list[StepSample]], warm: int) -> float:
    """Seconds in JobMonitor.add for the steps after ``warm``."""
    mon = JobMonitor("job-big", Thresholds())
    found: list[Finding] = []
    for msgs in job[:warm]:
        for m in msgs:
            mon.add(m, found)
    t0 = time.perf_counter()
    for msgs in job[warm:]:
        for m in msgs:
            mon.add(m, found)
    return time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ranks", type=int, default=4096)
    ap.add_argument("--steps", type=int, default=60)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    warm = Thresholds().warmup_steps + 2
    job = steps(args.ranks, warm + args.steps + 1, seed=1)
    best = min(run(job, warm) for _ in range(args.repeat))
    n = args.steps + 1
    print(f"{args.ranks} ranks, {n} steps after warm-up, best of {args.repeat}: "
          f"{1e3 * best / n:.2f} ms a step, {1e6 * best / (n * args.ranks):.2f} us a message")


if __name__ == "__main__":
    main()
