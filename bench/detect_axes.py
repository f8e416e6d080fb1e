"""Detection per axis of variation: one simulated log per axis value, replayed and scored.

A light matrix for the detection mechanisms (issue 10), not the evaluation
suite: for each value of each simulator axis (``replay/sim/axes.py``) one log
of a 128-GPU job (TP 8 x PP 2 x DP 8; DP 128 for ``fields=no_rank_fields``)
on ``topologies/h100-256.topo``, ``--duration`` s, every fault kind and every
benign event, the other axes at their defaults.  ``build`` writes the logs;
``score`` replays them through the engine this script is run with and prints
per log: faults, caught, false positives (problems that caught nothing:
workload effects and benign events paging someone), precision, recall,
attribution and latency; for ``scenario=slow_from_start`` the steps to detect
the rank slow from the first step (1 s steps: latency + 1).

    python bench/detect_axes.py build DIR [--seed 3100] [--duration 1200] [--workers 2]
    python bench/detect_axes.py score DIR [--workers 2]

To compare two versions of the engine, ``score`` the same DIR with this file
copied into each checkout (it needs only ``replay.runner`` and
``replay.scoring``).
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def cases() -> list[tuple[str, list[str]]]:
    """(name, extra simulate arguments) for every non-default axis value, and the default."""
    from replay.sim.axes import AXES
    out = [("default", [])]
    for axis, values in AXES.items():
        for v in values[1:]:
            extra = ["--axis", f"{axis}={v}"]
            if (axis, v) == ("fields", "no_rank_fields"):
                extra += ["--tp", "1", "--pp", "1", "--dp", "128"]
            out.append((f"{axis}={v}", extra))
    return out


def build_one(task: tuple[str, list[str], str, int, int]) -> str:
    name, extra, out_dir, seed, duration = task
    out = Path(out_dir) / f"{name.replace('=', '-')}.jsonl.gz"
    if not out.exists():
        subprocess.run([sys.executable, "-m", "detector.cli", "simulate", "--topology",
                        str(ROOT / "topologies" / "h100-256.topo"), "--out", str(out),
                        "--duration", str(duration), "--seed", str(seed), *extra],
                       check=True, cwd=ROOT, capture_output=True)
    return name


def score_one(path: str) -> dict:
    from replay.log import log_topology
    from replay.runner import replay_log
    res = replay_log(path, topology=log_topology(path))
    card = res.scorecard()
    t = card.total
    gross = [f.latency_s for f in card.faults
             if f.label.start_ts == min(x.label.start_ts for x in card.faults)]
    lat = [f.latency_s for f in card.faults if f.latency_s is not None]
    return {"log": Path(path).name.removesuffix(".jsonl.gz"), "faults": t.faults,
            "caught": t.caught, "fp": t.false_positives, "precision": t.precision,
            "recall": t.recall, "attribution": t.attribution,
            "lat_med": statistics.median(lat) if lat else None,
            "first_fault_latency": gross[0] if gross else None,
            "fp_list": [f"{a.topic.rsplit('.', 1)[-1]}:{a.kind}/{a.cause}@{a.scope.key}"
                        for a in card.false_positives],
            "missed": [f.label.fault_id for f in card.faults if not f.caught]}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("what", choices=("build", "score"))
    ap.add_argument("dir", type=Path)
    ap.add_argument("--seed", type=int, default=3100)
    ap.add_argument("--duration", type=int, default=1200)
    ap.add_argument("--workers", type=int, default=2)
    args = ap.parse_args()
    if args.what == "build":
        args.dir.mkdir(parents=True, exist_ok=True)
        tasks = [(n, e, str(args.dir), args.seed, args.duration) for n, e in cases()]
        with ProcessPoolExecutor(args.workers) as pool:
            for name in pool.map(build_one, tasks):
                print("built", name, flush=True)
        return 0
    logs = sorted(str(p) for p in args.dir.glob("*.jsonl.gz"))
    with ProcessPoolExecutor(args.workers) as pool:
        rows = list(pool.map(score_one, logs))
    print(f"{'log':<28} {'faults':>6} {'caught':>6} {'FP':>3} {'prec':>6} {'recall':>6} "
          f"{'attrib':>6} {'lat_med':>7} {'1st_lat':>7}")

    def f3(x: float | None) -> str:
        return "-" if x is None else f"{x:.3f}"

    for r in rows:
        print(f"{r['log']:<28} {r['faults']:>6} {r['caught']:>6} {r['fp']:>3} "
              f"{f3(r['precision']):>6} {f3(r['recall']):>6} {f3(r['attribution']):>6} "
              f"{f3(r['lat_med']):>7} {f3(r['first_fault_latency']):>7}")
    for r in rows:
        if r["fp_list"] or r["missed"]:
            print(f"{r['log']}: FP {r['fp_list']} missed {r['missed']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
