"""Write labelled incident logs from an independent ("blind") telemetry generator.

    python -m bench.blind.generate --out DIR --seed N [--gpus 256|128] [--minutes 30]
        [--interval 10|30] [--seeds A..B] [--all]

``--all`` writes the round-9 corpus: both cluster shapes x intervals 10 and 30 x
the seeds (default 0..3). Each log is JSON Lines, gzip: a ``topology`` record
(the site's plain Slurm ``topology.conf``), telemetry in arrival order (event
time disordered by up to 5 s, a few duplicates), and the labels at the end, as
DESIGN.md "Incident logs" describes. Written without reading faultline's
detectors, simulator or tests: see bench/blind/README.md.
"""

from __future__ import annotations

import argparse
import gzip
import sys
from pathlib import Path

import numpy as np
import orjson

from bench.blind.cluster import shape_for_gpus
from bench.blind.hardware import Grid
from bench.blind.plan import build_plan
from bench.blind.telemetry import gpu_records, nic_records, sample_times
from bench.blind.workload import StepOutput, attempts_of, simulate_job

MAX_DELAY_S = 4.6  # arrival after event time; the contract allows disorder up to 5 s
DUPLICATE_P = 0.002


def generate(gpus: int, seed: int, minutes: float, interval_s: float) -> tuple[list[dict], list]:
    """All records of one log in the order they are written, and the plan's faults."""
    shape = shape_for_gpus(gpus)
    plan = build_plan(shape, seed, minutes * 60.0, interval_s)
    rng = np.random.default_rng([seed, gpus, int(interval_s), 0x5EED])
    attempts = {j.name: attempts_of(j, plan) for j in plan.jobs}
    grid = Grid(plan, [a for v in attempts.values() for a in v], rng)
    recs: list = []
    steps = []
    for job in plan.jobs:
        so = StepOutput()
        simulate_job(job, attempts[job.name], plan, grid, plan.faults, rng, so)
        steps.append(so)
        recs.extend(r for r in so.records if r[0] >= plan.t0)
    times = sample_times(plan, rng)
    gpu_records(plan, grid, times, rng, recs)
    nic_records(plan, grid, times, steps, rng, recs)
    # arrival order: most records come quickly, a few late (up to MAX_DELAY_S), a few twice
    delay = np.where(rng.random(len(recs)) < 0.03, rng.uniform(0.3, MAX_DELAY_S, len(recs)),
                     rng.uniform(0.0, 0.3, len(recs)))
    keyed = [(r[0] + float(d), i, r) for i, (r, d) in enumerate(zip(recs, delay, strict=True))]
    dup = np.flatnonzero(rng.random(len(recs)) < DUPLICATE_P)
    for i in dup:
        ts = recs[i][0]
        keyed.append((ts + float(rng.uniform(delay[i], MAX_DELAY_S)), len(keyed), recs[i]))
    keyed.sort(key=lambda k: (k[0], k[1]))
    out = [{"topic": "topology", "value": {"format": "slurm", "text": shape.topology_text}}]
    out.extend({"topic": topic, "value": value} for _a, _i, (_ts, topic, value) in keyed)
    # a fault whose moment found nothing to change (a short log: its job was still restarting)
    # is no fault; the 30-minute corpus logs keep all of theirs (generate prints the list)
    faults = [f for f in plan.faults if f.lo <= f.hi]
    out.extend({"topic": "labels", "value": f.label()} for f in faults)
    return out, faults


def write_log(path: Path, records: list[dict]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with gzip.open(path, "wb", compresslevel=5) as fh:
        fh.write(b"".join(orjson.dumps(r) + b"\n" for r in records))


def log_name(gpus: int, seed: int, interval_s: float, minutes: float) -> str:
    shape = shape_for_gpus(gpus).name
    return f"blind-{shape}-i{int(interval_s)}-m{int(minutes)}-s{seed}.jsonl.gz"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", required=True, type=Path, help="folder to write logs into")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--seeds", help="A..B: several seeds (overrides --seed)")
    ap.add_argument("--gpus", type=int, default=256, choices=(256, 128))
    ap.add_argument("--minutes", type=float, default=30.0)
    ap.add_argument("--interval", type=float, default=10.0)
    ap.add_argument("--all", action="store_true", help="both shapes x intervals 10, 30")
    args = ap.parse_args(argv)
    seeds = [args.seed]
    if args.seeds:
        a, b = args.seeds.split("..")
        seeds = list(range(int(a), int(b) + 1))
    cells = [(args.gpus, args.interval)]
    if args.all:
        cells = [(g, i) for g in (256, 128) for i in (10.0, 30.0)]
    for gpus, interval in cells:
        for seed in seeds:
            records, faults = generate(gpus, seed, args.minutes, interval)
            path = args.out / log_name(gpus, seed, interval, args.minutes)
            write_log(path, records)
            print(f"{path}: {len(records)} records, {len(faults)} faults "
                  f"({', '.join(f.what for f in faults)})", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
