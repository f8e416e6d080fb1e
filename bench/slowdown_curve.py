"""Slowdown size -> steps to detect: how fast faultline catches one slow rank.

For each seed, one simulated job (default: 128 GPUs of ``h100-128``, TP 8 x
PP 2 x DP 8, 1 s steps) gets one ``silent_slow`` fault per slowdown size —
one rank's compute_ms x (1 + size), no other signal, step shape by default —
placed by the simulator's planner (random rank, random time, >= 60 s apart,
after a 60 s warm-up). The log is generated and replayed in memory through
the full engine; a fault is detected when the DESIGN.md scorer says an alert
caught it. Steps to detect = steps the faulty rank reported from the fault's
first changed record up to the catching alert's ``detected_ts``, both
included (1 = the first slow step).

    python bench/slowdown_curve.py [--seeds 10] [--sizes 3,5,7,10,15,20,30] [--workers 2]

Target (DESIGN.md): a 10 % slowdown of one rank, median <= 10 steps.
"""

from __future__ import annotations

import argparse
import bisect
import dataclasses
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from detector.alerts import FiredAlert, Label  # noqa: E402
from detector.decoding import decode_value  # noqa: E402
from detector.engine import Engine  # noqa: E402
from detector.events import STEP, TELEMETRY_TOPICS, InvalidMessage  # noqa: E402
from detector.topology import Topology  # noqa: E402
from replay.scoring import score  # noqa: E402
from replay.sim.plan import BENIGN_KINDS, JobLayout, plan_scenario  # noqa: E402
from replay.sim.simulate import simulate  # noqa: E402

Result = tuple[float, bool, "int | None", "float | None", str]


def run_seed(args: tuple[int, tuple[float, ...], str, int, int, int, str, bool]) -> list[Result]:
    """One log: (size, detected, steps to detect, latency s, note) per fault."""
    seed, sizes, topo_path, tp, pp, dp, shape, benign = args
    topo = Topology.load(topo_path)
    n = len(sizes)
    duration = 60 + n * 120 + (n - 1) * 60 + 60
    sc = plan_scenario(topo, job=JobLayout(tp=tp, pp=pp, dp=dp), duration_s=duration, seed=seed,
                       faults=["silent_slow"] * n, benign=BENIGN_KINDS if benign else ())
    faults = tuple(dataclasses.replace(f, magnitude=m, shape=shape)
                   for f, m in zip(sc.faults, sizes, strict=True))
    sc = dataclasses.replace(sc, faults=faults)
    eng = Engine(None, topo)
    alerts = []
    labels: list[Label] = []
    step_ts: dict[tuple[str, int], list[float]] = {}
    targets = {(f.target["node"], f.target["gpu"]) for f in faults}
    telemetry = frozenset(TELEMETRY_TOPICS)
    for rec in simulate(sc):
        topic, value = rec["topic"], rec["value"]
        if topic == "labels":
            labels.append(Label.from_dict(value))
            continue
        if topic not in telemetry:
            continue
        try:
            ev = decode_value(topic, value)
        except InvalidMessage:
            continue
        if topic == STEP and (ev.node, ev.gpu) in targets:
            step_ts.setdefault((ev.node, ev.gpu), []).append(ev.ts)
        alerts.extend(eng.process(ev))
    alerts.extend(eng.finish())
    card = score(labels, [FiredAlert.from_record(a.topic, a.to_dict()) for a in alerts])
    size_of = {f"s{seed}-f{i:02d}-silent_slow": f.magnitude for i, f in enumerate(faults)}
    out = []
    for r in card.faults:
        size = size_of[r.label.fault_id]
        if not r.caught or r.by is None:
            lab = r.label
            near = sorted({f"{a.topic.rpartition('.')[2]} {a.kind}/{a.cause} {a.scope.key}"
                           for a in alerts if a.status == "firing"
                           and lab.start_ts - 5 <= a.detected_ts <= lab.end_ts + 60})
            during = [f"{b.kind}@{b.start_s:.0f}s" for b in sc.benign
                      if b.start_s - 10 <= lab.start_ts - sc.start_ts <= b.start_s
                      + b.duration_s + 60]
            out.append((size, False, None, None,
                        f"seed {seed} {lab.fault_id} {lab.scope.key} at "
                        f"{lab.start_ts - sc.start_ts:.0f}s..{lab.end_ts - sc.start_ts:.0f}s; "
                        f"alerts meanwhile: {near or 'none'}; benign near: {during or 'none'}"))
            continue
        ts = sorted(set(step_ts.get((r.label.scope.node, r.label.scope.gpu), [])))
        lo = bisect.bisect_left(ts, r.label.start_ts - 1e-6)
        hi = bisect.bisect_right(ts, r.by.detected_ts)
        out.append((size, True, hi - lo, r.latency_s, ""))
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--seeds", type=int, default=10, help="logs per size (default 10)")
    p.add_argument("--first-seed", type=int, default=5000)
    p.add_argument("--sizes", default="3,5,7,10,15,20,30", help="slowdowns in percent")
    p.add_argument("--topology", default=str(ROOT / "topologies" / "h100-128.topo"))
    p.add_argument("--tp", type=int, default=8)
    p.add_argument("--pp", type=int, default=2)
    p.add_argument("--dp", type=int, default=8)
    p.add_argument("--shape", default="step", choices=("step", "ramp", "intermittent"))
    p.add_argument("--benign", action="store_true",
                   help="sprinkle the simulator's benign events too (default: none)")
    p.add_argument("--workers", type=int, default=2)
    args = p.parse_args(argv)
    sizes = tuple(float(s) / 100 for s in args.sizes.split(","))
    tasks = [(args.first_seed + i, sizes, args.topology, args.tp, args.pp, args.dp, args.shape,
              args.benign) for i in range(args.seeds)]
    t0 = time.perf_counter()
    if args.workers > 1:
        with ProcessPoolExecutor(max_workers=args.workers) as pool:
            results = [r for rs in pool.map(run_seed, tasks) for r in rs]
    else:
        results = [r for t in tasks for r in run_seed(t)]
    took = time.perf_counter() - t0
    print(f"silent_slow ({args.shape}) of one rank, {args.tp * args.pp * args.dp} GPUs "
          f"(TP {args.tp} x PP {args.pp} x DP {args.dp}), 1 s steps, "
          f"{'with' if args.benign else 'no'} benign events; seeds {args.first_seed}.."
          f"{args.first_seed + args.seeds - 1}; {took:.0f} s")
    print(f"{'slowdown':>8}  {'faults':>6}  {'detected':>8}  {'rate':>5}  {'med_steps':>9}  "
          f"{'p90_steps':>9}  {'max_steps':>9}  {'med_lat_s':>9}")
    for size in sizes:
        rows = [r for r in results if r[0] == size]
        hit = [r for r in rows if r[1]]
        steps = np.array([r[2] for r in hit], dtype=float)
        lat = np.array([r[3] for r in hit], dtype=float)

        def q(a: np.ndarray, x: float) -> str:
            return f"{np.quantile(a, x):.1f}" if len(a) else "-"
        print(f"{size * 100:>7.0f}%  {len(rows):>6}  {len(hit):>8}  "
              f"{len(hit) / len(rows) if rows else 0:>5.2f}  {q(steps, 0.5):>9}  "
              f"{q(steps, 0.9):>9}  {f'{steps.max():.0f}' if len(steps) else '-':>9}  "
              f"{q(lat, 0.5):>9}")
    print("target: 10 % slowdown, median <= 10 steps")
    for r in results:
        if not r[1]:
            print(f"missed {r[0] * 100:.0f} %: {r[4]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
