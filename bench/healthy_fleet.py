"""False isolations per 1,000 GPU-days on thousands of healthy GPU-days, per fleet variant.

Streams fault-free simulated fleets (replay/evaluation/fleet.py: eight
variants, ~2,500 GPU-days at ``--scale 1``) through the engine exactly as
``faultline replay`` decodes and feeds them, and prints per variant the GPU-days,
events, false isolations (the <= 1 per 1,000 GPU-days target), escalations
(pages), the rate and its one-sided 95 % upper bound, and the CPU seconds
spent. Every firing problem is listed. Run it niced on a shared machine:

    nice -n 10 python bench/healthy_fleet.py [--scale 1] [--workers 2] [--json OUT]
    python bench/healthy_fleet.py --cost     # CPU seconds per GPU-day, per variant (~1 min)
    python bench/healthy_fleet.py --report OUT.json   # the table of a run (also a stopped one)

Logs run in rounds (every variant's first log, then every second, ...), and
``--json`` is rewritten as each log finishes, so a run stopped early still
reports every variant on the GPU-days it did finish.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from replay.evaluation.fleet import per_variant  # noqa: E402


def main() -> int:
    from replay.evaluation.fleet import VARIANTS, run_fleets

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--variants", default=",".join(VARIANTS),
                    help=f"comma-separated, of: {', '.join(VARIANTS)}")
    ap.add_argument("--scale", type=float, default=1.0, help="x each variant's hours")
    ap.add_argument("--seed", type=int, default=7000)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--json", type=Path, help="write every log's result here (as they finish)")
    ap.add_argument("--cost", action="store_true",
                    help="measure CPU seconds per GPU-day on 20 simulated minutes a variant")
    ap.add_argument("--report", type=Path, nargs="+",
                    help="print the per-variant table of saved --json runs and exit")
    args = ap.parse_args()
    if args.report:
        for path in args.report:
            run = json.loads(path.read_text())
            print(f"{path} at {run['commit']}, scale {run['scale']}: {len(run['logs'])} logs")
            table(per_variant(run["logs"]))
        return 0
    names = [n.strip() for n in args.variants.split(",") if n.strip()]
    unknown = [n for n in names if n not in VARIANTS]
    if unknown or args.scale <= 0 or args.workers < 1:
        ap.error(f"unknown variants {unknown}" if unknown else "--scale and --workers > 0")
    if args.cost:
        args.scale = 1 / 72  # 20 minutes of a 24-hour variant
    commit = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"],
                            capture_output=True, text=True).stdout.strip()
    days = sum(VARIANTS[n].gpu_days(args.scale) for n in names)
    print(f"healthy fleets at {commit}: {len(names)} variants, {days:,.1f} GPU-days planned, "
          f"{args.workers} worker(s)", flush=True)
    t0 = time.perf_counter()
    done: list[dict] = []

    def note(r: dict) -> None:
        done.append(r)
        print(f"  {r['variant']:<14} seed {r['seed']}: {r['gpu_days']:7.1f} GPU-days, "
              f"{r['events']:>10,} events, {r['false_isolations']} false isolations, "
              f"{r['escalations']} escalations, {r['cpu_s']:.0f} CPU s", flush=True)
        for p in r["problems"]:
            print(f"      {p}", flush=True)
        if args.json:
            args.json.write_text(json.dumps({"commit": commit, "scale": args.scale,
                                             "logs": done}, indent=1) + "\n")

    results = run_fleets(names, args.scale, args.seed, args.workers, note)
    print()
    table(per_variant(results))
    print(f"wall {time.perf_counter() - t0:.0f} s at {commit}")
    return 0


def table(rows: list[dict]) -> None:
    print(f"{'variant':<14} {'logs':>4} {'GPU-days':>9} {'events':>12} {'false iso':>9} "
          f"{'escal.':>6} {'iso/1k GPU-d':>12} {'95% upper':>9} {'CPU s':>7} {'CPU s/GPU-d':>11}")
    for row in rows:
        print(f"{row['variant']:<14} {row['logs']:>4} {row['gpu_days']:>9.1f} "
              f"{row['events']:>12,} {row['false_isolations']:>9} {row['escalations']:>6} "
              f"{row['per_1k_gpu_days']:>12.2f} {row['upper95_per_1k']:>9.2f} "
              f"{row['cpu_s']:>7.0f} {row['cpu_s'] / max(row['gpu_days'], 1e-9):>11.2f}")


if __name__ == "__main__":
    sys.exit(main())
