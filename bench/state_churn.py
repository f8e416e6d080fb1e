"""State of a churning fleet: snapshot size per hour over a day, with and without pruning.

Feeds one Engine 36 h of a fleet (``replay/sim/churn.py``) whose oldest node
is replaced by a new one every 10 minutes, with an XID on every 12th leaving
node, and prints after each hour of event time the snapshot bytes (codec,
compressed and raw), GPUs tracked and nodes remembered — once with the
default pruning (``unit_idle_s`` 1 h, ``unit_fault_idle_s`` 24 h) and once with
pruning off (both infinite: what faultline did before).

    python bench/state_churn.py [--hours 24] [--nodes 8] [--sample-s 30]
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from detector.engine import Engine  # noqa: E402
from detector.statecodec import raw_size  # noqa: E402
from detector.testing import T0  # noqa: E402
from detector.thresholds import Thresholds  # noqa: E402
from replay.sim.churn import churn_events  # noqa: E402


def hourly(cfg: Thresholds, args: argparse.Namespace) -> list[dict[str, float]]:
    eng = Engine(cfg)
    rows = []
    next_hour = T0 + 3600.0
    n = 0
    t0 = time.perf_counter()

    def sample(hour: int) -> None:
        snap = eng.snapshot()
        st = eng.stats()
        rows.append({"hour": hour, "bytes": len(snap), "raw": raw_size(snap),
                     "gpus": st["gpus"], "nodes": st["nodes_seen"], "jobs": st["jobs"],
                     "problems": st["problems"]})

    for ev in churn_events(hours=args.hours, nodes=args.nodes, sample_s=args.sample_s):
        if ev.ts >= next_hour:
            sample(round((next_hour - T0) / 3600.0))
            next_hour += 3600.0
        eng.process(ev)
        n += 1
    sample(round(args.hours))
    rows[-1]["events"] = n
    rows[-1]["seconds"] = time.perf_counter() - t0
    return rows


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--hours", type=float, default=36.0)
    ap.add_argument("--nodes", type=int, default=8)
    ap.add_argument("--sample-s", type=float, default=30.0)
    args = ap.parse_args()
    pruned = hourly(Thresholds(), args)
    kept = hourly(Thresholds(unit_idle_s=math.inf, unit_fault_idle_s=math.inf), args)
    print(f"{args.nodes} nodes x 8 GPUs live at a time, one replaced every 10 min, "
          f"{pruned[-1]['events']:,} events over {args.hours:g} h "
          f"({pruned[-1]['seconds']:.0f} s with pruning)")
    print("| hour | snapshot B (pruned) | raw B | GPUs | nodes | jobs | problems | "
          "snapshot B (no pruning) | raw B | GPUs | nodes | jobs |")
    print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for a, b in zip(pruned, kept, strict=True):
        print(f"| {a['hour']} | {a['bytes']:,} | {a['raw']:,} | {a['gpus']} | {a['nodes']} | "
              f"{a['jobs']} | {a['problems']} | {b['bytes']:,} | {b['raw']:,} | {b['gpus']} | "
              f"{b['nodes']} | {b['jobs']} |")
    # Faulty GPUs are kept a day, so the plateau starts after 24 h.
    i = next((k for k, r in enumerate(pruned) if r["hour"] >= 24), len(pruned) // 2)
    a, b = pruned[i], pruned[-1]
    print(f"raw state, hour {a['hour']} -> {b['hour']}: pruned {a['raw']:,} -> {b['raw']:,} B "
          f"({(b['raw'] / a['raw'] - 1) * 100:+.1f} %); no pruning {kept[i]['raw']:,} -> "
          f"{kept[-1]['raw']:,} B ({(kept[-1]['raw'] / kept[i]['raw'] - 1) * 100:+.1f} %)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
