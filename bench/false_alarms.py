"""False alarms on healthy telemetry: the full engine on healthy logs, the step detectors at scale.

Two measurements, printed separately because they measure different things:

1. **Full engine, healthy logs** (``--corpus DIR``): every log of an
   evaluation corpus without faults (healthy training plus the simulator's
   benign events: checkpoints, GC spikes, application XIDs, counter resets,
   telemetry pauses, power-cap blips, single SBEs, duplicated and late
   messages) is replayed through ``faultline replay``'s engine. Every firing
   problem is false; isolations are what the <= 1 per 1,000 GPU-days target
   counts, escalations are pages. All four telemetry topics, every detector,
   the correlator. Limited by the telemetry a 2-core box can replay
   (tens of GPU-days).

2. **Step detectors at scale** (always): 1,000 GPU-days of telemetry at
   1 Hz is ~10^9 events, so the step detectors — where noise, not a counter,
   decides — are driven directly: the real :class:`detector.steps.JobMonitor`
   gets synthetic healthy step messages (1 s steps) for ``--gpu-days`` GPU-days
   of rank-steps per job layout (default: 128 ranks, TP 8 x PP 2 x DP 8, and
   1,024 ranks, TP 8 x PP 4 x DP 32 — a peer group of 8 replicas is noisier
   than one of 32).
   The model is the simulator's healthy step model (replay/sim/model.py):
   compute_ms = stage base (0.88/0.95/1.0/0.93 x 680 ms by pipeline stage) x a
   per-GPU bias N(1, 0.4 %) x lognormal(0, 1.5 %) jitter; grad_norm = slow
   sinusoidal level x per-shard norm x per-replica lognormal(0, 10 %) x
   per-rank (1 + 0.5 % N); param_checksum equal within each (tp, pp) group;
   plus the benign step events: a checkpoint every ~10 min (5-20 steps of
   compute x 1.2-1.5 on every rank), a GC/page-fault spike on one random rank
   about once a minute (one step x 1.5-3), report jitter 0-20 ms, 0.3 % of
   messages duplicated and 1 % delivered 1-3 steps late. Counted: findings
   that go active — ``slow_rank`` (would become an escalation: a slow rank
   isolates only with a hardware explanation, and these have none),
   ``grad_outlier`` (escalation), ``checksum_mismatch`` (isolation),
   ``checksum_split``. Thermal, ECC and NIC detectors are not in this part:
   they fire on counters and flags that stay at zero in healthy telemetry, so
   their false alarms come from benign events, which part 1 measures.

    python bench/false_alarms.py [--corpus DIR] [--gpu-days 1000] [--workers 2]
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from collections import Counter
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from detector.alerts import ESCALATION, ISOLATION  # noqa: E402
from detector.events import StepSample  # noqa: E402
from detector.steps import JobMonitor  # noqa: E402
from detector.thresholds import Thresholds  # noqa: E402
from replay.evaluation.corpus import read_manifest, resolve_topology  # noqa: E402
from replay.evaluation.ettr import EttrModel  # noqa: E402
from replay.evaluation.evaluate import FAULTLINE, assemble, evaluate_task  # noqa: E402

STAGE_FRACTION = (0.88, 0.95, 1.0, 0.93)  # as replay/sim/model.py
BASE_MS = 680.0
T0 = 1767225600.0


def healthy_job(task: tuple[int, int, int, int, int]) -> dict[str, object]:
    """Drive one JobMonitor through ``steps`` healthy steps; count the findings."""
    seed, tp, pp, dp, steps = task
    rng = np.random.default_rng(seed)
    n = tp * pp * dp
    r = np.arange(n)
    tp_of, dp_of, pp_of = r % tp, (r // tp) % dp, r // (tp * dp)
    base = BASE_MS * np.array(STAGE_FRACTION)[pp_of % 4] * (1 + 0.004 * rng.standard_normal(n))
    shard = np.exp(0.2 * rng.standard_normal(tp * pp))[pp_of * tp + tp_of]
    group = (pp_of * tp + tp_of).tolist()
    nodes = [f"node-{i // 8:04d}" for i in range(n)]
    gpus = (r % 8).tolist()
    ranks, tps, pps, dps = r.tolist(), tp_of.tolist(), pp_of.tolist(), dp_of.tolist()
    job = f"job-{seed}"
    jobs, nones, step_ms = [job] * n, [None] * n, [1000.0] * n
    comm = [250.0] * n
    grad_period = float(rng.uniform(200, 600))
    monitor = JobMonitor(job, Thresholds())
    findings: list = []
    late: dict[int, list[StepSample]] = {}
    ckpt_at, ckpt_left, ckpt_f = int(rng.uniform(300, 900)), 0, 1.0
    first = int(rng.integers(1000, 50000))
    t_start = time.perf_counter()
    for s in range(steps):
        compute = base * np.exp(0.015 * rng.standard_normal(n))
        if s == ckpt_at:
            ckpt_left, ckpt_f = int(rng.integers(5, 21)), float(rng.uniform(1.2, 1.5))
            ckpt_at = s + int(rng.uniform(300, 900))
        if ckpt_left > 0:
            compute *= ckpt_f
            ckpt_left -= 1
        if rng.random() < 1 / 60:
            compute[int(rng.integers(n))] *= float(rng.uniform(1.5, 3.0))
        end = T0 + s
        ts = (end + 0.02 * rng.random(n)).round(6).tolist()
        level = 1.0 + 0.08 * math.sin(2 * math.pi * s / grad_period)
        grad = (level * shard * np.exp(0.1 * rng.standard_normal(dp))[dp_of]
                * (1 + 0.005 * rng.standard_normal(n))).round(4).tolist()
        sums = [f"{first + s:x}/{g}" for g in range(tp * pp)]
        checks = [sums[g] for g in group]
        msgs = list(map(StepSample._make, zip(
            ts, jobs, [first + s] * n, ranks, nodes, gpus, step_ms, compute.round(2).tolist(),
            comm, tps, pps, dps, nones, grad, checks, nones, nones, strict=True)))
        u = rng.random(n)
        held = np.flatnonzero(u < 0.01)
        for i in held.tolist():
            late.setdefault(s + int(rng.integers(1, 4)), []).append(msgs[i])
        dup = np.flatnonzero(u > 1 - 0.003).tolist()
        batch = late.pop(s, [])
        if len(held):
            keep = np.ones(n, dtype=bool)
            keep[held] = False
            batch += [m for m, k in zip(msgs, keep.tolist(), strict=True) if k]
        else:
            batch += msgs
        batch += [msgs[i] for i in dup]  # delivered twice
        for m in batch:
            monitor.add(m, findings)
    for s in sorted(late):
        for m in late[s]:
            monitor.add(m, findings)
    monitor.expire(T0 + steps + 10.0, findings)
    active = [f for f in findings if f.active]
    return {"ranks": n, "steps": steps, "seconds": time.perf_counter() - t_start,
            "counts": Counter(f.signal for f in active),
            "examples": [(f.signal, f.scope.key, {k: v for k, v in f.evidence.items()
                                                  if k != "majority_checksum"})
                         for f in active[:5]]}


def step_detectors(gpu_days: float, shapes: list[tuple[int, int, int]], workers: int,
                   first_seed: int) -> None:
    print("2. step detectors at scale: detector.steps.JobMonitor on synthetic healthy steps "
          "(simulator's healthy step model + checkpoints, spikes, duplicates, late messages)")
    for k, (tp, pp, dp) in enumerate(shapes):
        _one_shape(gpu_days, tp, pp, dp, workers, first_seed + 1000 * k)


def _one_shape(gpu_days: float, tp: int, pp: int, dp: int, workers: int,
               first_seed: int) -> None:
    n = tp * pp * dp
    total_steps = math.ceil(gpu_days * 86400 / n)
    jobs = max(workers, math.ceil(total_steps / 20000))
    per = math.ceil(total_steps / jobs)
    tasks = [(first_seed + i, tp, pp, dp, per) for i in range(jobs)]
    t0 = time.perf_counter()
    with ProcessPoolExecutor(max_workers=workers) as pool:
        results = list(pool.map(healthy_job, tasks))
    took = time.perf_counter() - t0
    counts: Counter[str] = Counter()
    for res in results:
        counts.update(res["counts"])  # type: ignore[arg-type]
    rank_steps = sum(int(res["ranks"]) * int(res["steps"]) for res in results)  # type: ignore
    days = rank_steps / 86400
    print(f"   {jobs} jobs x {n} ranks (TP {tp} x PP {pp} x DP {dp}) x {per:,} steps of 1 s = "
          f"{rank_steps:,} rank-steps = {days:,.1f} GPU-days in {took:.0f} s "
          f"({rank_steps / took:,.0f} rank-steps/s on {workers} workers)")
    for signal, becomes in (("slow_rank", "escalation"), ("grad_outlier", "escalation"),
                            ("checksum_mismatch", "isolation"), ("checksum_split", "escalation")):
        c = counts.get(signal, 0)
        print(f"   {signal:<18} {c:>6} findings = {1000 * c / days:8.2f} per 1,000 GPU-days "
              f"(each would be an {becomes})")
    iso = counts.get("checksum_mismatch", 0)
    print(f"   false isolations from the step detectors: {iso} = {1000 * iso / days:.2f} per "
          f"1,000 GPU-days (target <= 1)")
    shown = [e for res in results for e in res["examples"]][:8]  # type: ignore[union-attr]
    for signal, unit, evidence in shown:
        print(f"     e.g. {signal} {unit} {evidence}")


def full_engine(corpus: str, workers: int) -> None:
    man = read_manifest(corpus)
    healthy = [e for e in man["logs"] if not e["faults"]]
    if not healthy:
        print(f"1. full engine: {corpus} has no healthy logs")
        return
    cdir = Path(corpus)
    tasks = [(str(cdir / e["file"]), e, str(resolve_topology(e["topology"], cdir)), False)
             for e in healthy]
    t0 = time.perf_counter()
    with ProcessPoolExecutor(max_workers=workers) as pool:
        logs = list(pool.map(evaluate_task, tasks))
    ev = assemble(corpus, man, logs, EttrModel(), time.perf_counter() - t0)
    d = ev.detectors[FAULTLINE]
    events = sum(lg.events for lg in logs)
    print(f"1. full engine on the healthy logs of {corpus}: {len(logs)} logs, "
          f"{sum(lg.gpus for lg in logs)} GPUs, {events:,} events, {d.healthy_gpu_days:.1f} "
          f"GPU-days, replayed in {time.perf_counter() - t0:.0f} s")
    rate = d.false_isolations_per_1k_gpu_days
    print(f"   false isolations: {d.healthy_false_isolations} = "
          f"{rate if rate is not None else float('nan'):.1f} per 1,000 GPU-days (target <= 1; "
          f"zero in {d.healthy_gpu_days:.1f} GPU-days bounds the rate at "
          f"{3000 / d.healthy_gpu_days:.0f} per 1,000 GPU-days, 95 %)")
    print(f"   escalations (pages): {d.healthy_escalations}")
    for a in d.card.false_positives:
        kind = "isolation" if a.topic == ISOLATION else "escalation" if a.topic == ESCALATION \
            else a.topic
        sig = [s.get("signal") for s in a.raw.get("evidence", {}).get("signals", [])]
        print(f"     {kind} {a.kind}/{a.cause} {a.scope.key} signals={sig}")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--corpus", default=None, help="evaluation corpus whose healthy logs to replay")
    p.add_argument("--gpu-days", type=float, default=1000.0,
                   help="GPU-days of rank-steps for the step detectors (default 1000)")
    p.add_argument("--shapes", default="8x2x8,8x4x32", metavar="TPxPPxDP,...",
                   help="job layouts, each run for --gpu-days (default 8x2x8,8x4x32: the peer "
                   "group size, DP, matters most)")
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--first-seed", type=int, default=7000)
    args = p.parse_args(argv)
    if args.corpus:
        full_engine(args.corpus, args.workers)
    else:
        print("1. full engine: skipped (give --corpus DIR with healthy logs)")
    try:
        shapes = [tuple(int(x) for x in s.lower().split("x")) for s in args.shapes.split(",")]
        if any(len(s) != 3 or min(s) < 1 for s in shapes):
            raise ValueError
    except ValueError:
        p.error(f"--shapes: expected TPxPPxDP,..., got {args.shapes!r}")
    step_detectors(args.gpu_days, shapes, args.workers, args.first_seed)  # type: ignore[arg-type]
    return 0


if __name__ == "__main__":
    sys.exit(main())
