"""Cost of the training-side step reporter on the training thread, per step (target < 50 us).

Runs a do-nothing training loop twice — bare, then with ``reporter.step(n)``,
``s.compute()``, ``s.comm()``, ``loss`` and ``grad_norm`` — producing into a
real broker (one it starts, or ``--bootstrap``), and prints the difference per
step: what the reporter adds to a step.  Also the cost of ``param_checksum``
over numpy parameters of a given size.

    python bench/reporter_cost.py [--steps 200000] [--bootstrap HOST:PORT]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from kafka_bench import Broker  # noqa: E402

from faultline_reporter import Placement, StepReporter, param_checksum  # noqa: E402


def bare(steps: int) -> float:
    t0 = time.perf_counter()
    for i in range(steps):
        loss = 1.0 / (i + 1)
        _ = loss
    return time.perf_counter() - t0


def reported(r: StepReporter, steps: int) -> float:
    t0 = time.perf_counter()
    for i in range(steps):
        with r.step(i) as s:
            with s.compute():
                loss = 1.0 / (i + 1)
            with s.comm():
                pass
            s.loss, s.grad_norm = loss, 0.5
    return time.perf_counter() - t0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=200_000)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--params-mib", type=float, default=256.0,
                    help="numpy parameters checksummed, MiB (float32)")
    ap.add_argument("--bootstrap", default=None)
    ap.add_argument("--json", default=None)
    args = ap.parse_args()
    with Broker(args.bootstrap) as broker:
        r = StepReporter("bench-job", bootstrap=broker.bootstrap,
                         topic=f"bench-{uuid.uuid4().hex[:8]}.telemetry.step",
                         placement=Placement(3, 3, "node-000"), buffer_messages=1_000_000)
        reported(r, 2000)  # warm up (connection, allocations)
        costs = []
        for _ in range(args.repeats):
            n = args.steps
            costs.append((reported(r, n) - bare(n)) / n * 1e6)
        left = r.close(60)
    import numpy as np

    n = int(args.params_mib * (1 << 20) / 4)
    params = [np.random.default_rng(0).standard_normal(n // 8, dtype=np.float32)
              for _ in range(8)]
    t0 = time.perf_counter()
    param_checksum(params)
    cks_s = time.perf_counter() - t0
    res = {"steps": args.steps, "repeats": args.repeats,
           "us_per_step_median": round(statistics.median(costs), 2),
           "us_per_step_min": round(min(costs), 2), "us_per_step_max": round(max(costs), 2),
           "sent": r.sent, "dropped": r.dropped, "undelivered_at_close": left,
           "checksum_mib": args.params_mib, "checksum_ms": round(cks_s * 1e3, 1),
           "checksum_gib_per_s": round(args.params_mib / 1024 / cks_s, 2)}
    print(f"reporter cost per step: median {res['us_per_step_median']} us "
          f"(min {res['us_per_step_min']}, max {res['us_per_step_max']}) over {args.repeats} x "
          f"{args.steps:,} steps; sent {r.sent:,}, dropped {r.dropped}")
    print(f"param_checksum: {args.params_mib:g} MiB of float32 in {res['checksum_ms']} ms "
          f"({res['checksum_gib_per_s']} GiB/s)")
    if args.json:
        Path(args.json).write_text(json.dumps(res, indent=2))
    return 0 if r.dropped == 0 and not left else 1


if __name__ == "__main__":
    sys.exit(main())
