"""Writes blind7's labelled incident logs (DESIGN's format): topology first, labels last.

    python -m bench.blind7.generate --out DIR --seed N [--story gh200-shared|h200-summer]
        [--minutes 20]
    python -m bench.blind7.generate --out DIR --corpus --seeds 0..3     # both stories x seeds

Arrival order: each record reaches the recorder 50-800 ms after its event time, 0.3 % of them
1-4.5 s late (a collector's retry), 0.2 % twice (at-least-once delivery); DESIGN allows 5 s.
"""

from __future__ import annotations

import argparse
import gzip
import json
import random
from pathlib import Path

from bench.blind7.stories import STORIES, build
from replay.evaluation.corpus import parse_seeds


def records(story: str, seed: int, minutes: float = 20.0) -> tuple[list[dict], dict]:
    w, topo = build(story, seed, minutes)
    rng = random.Random(f"arrival/{story}/{seed}")
    timed = []
    for i, (topic, v) in enumerate(w.records):
        late = rng.uniform(0.05, 0.8) + (rng.uniform(1.0, 4.5) if rng.random() < 0.003 else 0)
        timed.append((v["ts"] + late, i, topic, v))
        if rng.random() < 0.002:
            timed.append((v["ts"] + late + rng.uniform(0.1, 3.0), i, topic, v))
    timed.sort(key=lambda x: (x[0], x[1]))
    out = [{"topic": "topology", "value": topo}]
    out += [{"topic": topic, "value": v} for _, _, topic, v in timed]
    labels = [lab.value() for lab in w.labels]
    out += [{"topic": "labels", "value": lv} for lv in labels if lv]
    man = dict(w.manifest, labels=labels, records=len(out))
    return out, man


def write(out_dir: Path, story: str, seed: int, minutes: float = 20.0) -> Path:
    out_dir.mkdir(parents=True, exist_ok=True)
    recs, man = records(story, seed, minutes)
    path = out_dir / f"{story}-s{seed}.jsonl.gz"
    with gzip.open(path, "wt", encoding="utf-8", compresslevel=6) as fh:
        for rec in recs:
            fh.write(json.dumps(rec, separators=(",", ":")) + "\n")
    (out_dir / f"{story}-s{seed}.manifest.json").write_text(json.dumps(man, indent=1,
                                                                        default=str))
    return path



def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--seeds", default=None, help="with --corpus: 0..3 or 0,2,5")
    ap.add_argument("--story", choices=STORIES, default=STORIES[0])
    ap.add_argument("--corpus", action="store_true", help="both stories x --seeds")
    ap.add_argument("--minutes", type=float, default=20.0)
    args = ap.parse_args(argv)
    jobs = ([(s, n) for n in parse_seeds(args.seeds or "0..3") for s in STORIES] if args.corpus
            else [(args.story, args.seed)])
    for story, seed in jobs:
        print(write(args.out, story, seed, args.minutes))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
