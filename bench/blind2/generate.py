"""Write blind2 incident logs: python -m bench.blind2.generate --out DIR --seed N.

    python -m bench.blind2.generate --out DIR --seed 3 [--shape superpod|nvl72]
        [--cadence mixed-30-10|mixed-30-5|fast-5|slow-30] [--minutes 30]
    python -m bench.blind2.generate --out DIR --corpus --seeds 0..3   # every shape x cadence

A log is JSON Lines (gzip): the topology record first, telemetry in arrival
order (event time with up to 4.9 s of disorder and ~0.2 % duplicates), the
labels last -- DESIGN.md "Incident logs".
"""

from __future__ import annotations

import argparse
import gzip
import random
from pathlib import Path

import orjson

from replay.evaluation.corpus import parse_seeds

from .emit import Activity, emit_gpu_telemetry, emit_nic_telemetry, emit_steps
from .shapes import CADENCES, SHAPES, assign_cadence
from .story import STORIES

EPOCH = 1_793_000_000.0          # 2026-10-26, UTC
MAX_DELAY_S = 4.9                # DESIGN: out of event-time order by up to 5 s
DUP_SHARE = 0.002
DEFAULT_CADENCE = {"superpod": "mixed-30-10", "nvl72": "mixed-30-5"}


def build(shape_name: str, seed: int, cadence: str | None = None,
          minutes: float | None = None) -> tuple[list[dict], dict]:
    """The records of one log (topology, telemetry in arrival order, labels) and a summary."""
    rng = random.Random(seed)
    shape = SHAPES[shape_name]()
    cadence = cadence or DEFAULT_CADENCE[shape_name]
    assign_cadence(shape, cadence, rng)
    t0 = EPOCH + seed * 86_400.0 + rng.uniform(0.0, 3600.0)
    holder: list = [None]
    story = STORIES[shape_name](shape, seed, t0, holder)
    end = story.end if minutes is None else min(story.end, t0 + minutes * 60.0)
    act = Activity(story.jobs)
    holder[0] = act
    out: list = []
    for job in story.jobs:
        emit_steps(shape, job, story.faults, story.healthy, random.Random(rng.random()), out,
                   end)
    emit_gpu_telemetry(shape, act, story.faults, story.healthy, t0, end,
                       random.Random(rng.random()), out)
    emit_nic_telemetry(shape, act, story.faults, story.healthy, t0, end,
                       random.Random(rng.random()), out)
    out = [(topic, rec) for topic, rec in out if rec["ts"] < end]
    arrivals = _arrival_order(out, random.Random(rng.random()))
    labels = []
    for f in story.faults:
        lab = f.label
        if lab.start_ts is None or lab.start_ts >= end:
            continue                          # not reached in a shortened log
        labels.append(lab.record())
    records = [{"topic": "topology", "value": {"format": shape.topology_format,
                                                 "text": shape.topology_text}}]
    records += [{"topic": topic, "value": rec} for topic, rec in arrivals]
    records += [{"topic": "labels", "value": lab} for lab in labels]
    summary = {"shape": shape_name, "seed": seed, "cadence": cadence,
               "records": len(records), "faults": len(labels),
               "gpus": sum(n.gpus for n in shape.nodes), "minutes": (end - t0) / 60.0}
    return records, summary


def _arrival_order(out: list, rng: random.Random) -> list:
    """Sort by arrival: steps reach the bus 0-1.5 s late, a collector's sample as one
    batch 0.1-2.5 s late, 1 % of each up to MAX_DELAY_S; a few are sent twice."""
    keyed = []
    batch_delay: dict[tuple, float] = {}
    for i, (topic, rec) in enumerate(out):
        if topic == "telemetry.step":
            d = rng.uniform(0.02, 1.5)
        else:
            key = (topic, rec["node"], rec["ts"])
            d = batch_delay.get(key)
            if d is None:
                d = batch_delay[key] = rng.uniform(0.1, 2.5)
        if rng.random() < 0.01:
            d = rng.uniform(2.5, MAX_DELAY_S)
        keyed.append((rec["ts"] + d, i, topic, rec))
        if rng.random() < DUP_SHARE:
            keyed.append((min(rec["ts"] + MAX_DELAY_S, rec["ts"] + d + rng.uniform(0.0, 2.0)),
                          i, topic, rec))
    keyed.sort(key=lambda k: (k[0], k[1]))
    return [(topic, rec) for _, _, topic, rec in keyed]


def write(path: Path, records: list[dict]) -> None:
    with gzip.open(path, "wb", compresslevel=5) as fh:
        for rec in records:
            fh.write(orjson.dumps(rec) + b"\n")


def log_name(shape: str, seed: int, cadence: str) -> str:
    return f"blind2-{shape}-{cadence}-s{seed:02d}.jsonl.gz"



def corpus_cells() -> list[tuple[str, str]]:
    """Every shape at its mixed cadence and at one uniform cadence."""
    return [("superpod", "mixed-30-10"), ("superpod", "slow-30"),
            ("nvl72", "mixed-30-5"), ("nvl72", "fast-5")]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.blind2.generate", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True, type=Path)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--shape", choices=sorted(SHAPES), default=None,
                    help="default: superpod for even seeds, nvl72 for odd")
    ap.add_argument("--cadence", choices=sorted(CADENCES), default=None)
    ap.add_argument("--minutes", type=float, default=None)
    ap.add_argument("--corpus", action="store_true", help="every shape x cadence cell")
    ap.add_argument("--seeds", default="0..1")
    args = ap.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    jobs = []
    if args.corpus:
        jobs = [(shape, seed, cad) for seed in parse_seeds(args.seeds)
                for shape, cad in corpus_cells()]
    else:
        shape = args.shape or ("superpod" if args.seed % 2 == 0 else "nvl72")
        jobs = [(shape, args.seed, args.cadence or DEFAULT_CADENCE[shape])]
    for shape, seed, cad in jobs:
        records, summary = build(shape, seed, cad, args.minutes)
        path = args.out / log_name(shape, seed, cad)
        write(path, records)
        print(f"{path}  {summary['records']} records, {summary['faults']} faults, "
              f"{summary['gpus']} GPUs, {summary['minutes']:.1f} min")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
