"""Writes blind8's labelled incident logs (DESIGN's format): topology first, labels last.

    python -m bench.blind8.generate --out DIR --seed N [--story rail-moe|scale-1k] [--minutes 20]
    python -m bench.blind8.generate --out DIR --corpus --seeds 0..3     # both stories x seeds

Arrival: a record reaches the recorder 30-600 ms after it happened (true time: a node whose
clock is off stamps a different `ts`), 0.2 % of them 1-4 s later (a retry), 0.1 % twice; the
duplicating nodes' records all twice, 0.5-2.5 s apart. DESIGN allows 5 s of disorder.
"""

from __future__ import annotations

import argparse
import gzip
import json
import random
from pathlib import Path

from bench.blind8.stories import STORIES, build
from replay.evaluation.corpus import parse_seeds


def records(story: str, seed: int, minutes: float = 20.0) -> tuple[list[dict], dict]:
    w, topo = build(story, seed, minutes)
    rng = random.Random(f"blind8/arrival/{story}/{seed}")
    timed = []
    for i, (t, topic, v, node) in enumerate(w.records):
        at = t + rng.uniform(0.03, 0.6)
        late = rng.random() < 0.002 and not w.nodes[node].no_late and not w.nodes[node].dup
        if late:
            at += rng.uniform(1.0, 4.0)
        timed.append((at, i, topic, v))
        if w.nodes[node].dup:
            timed.append((at + rng.uniform(0.5, 2.5), i, topic, v))
        elif rng.random() < 0.001 and not late:
            timed.append((at + rng.uniform(0.1, 2.0), i, topic, v))
    timed.sort(key=lambda x: (x[0], x[1]))
    out = [{"topic": "topology", "value": topo}]
    out += [{"topic": topic, "value": v} for _, _, topic, v in timed]
    labels = [lv for lv in (lab.value() for lab in w.labels) if lv]
    out += [{"topic": "labels", "value": lv} for lv in labels]
    return out, dict(w.manifest, labels=labels, records=len(out))


def write(out_dir: Path, story: str, seed: int, minutes: float = 20.0) -> Path:
    out_dir.mkdir(parents=True, exist_ok=True)
    recs, man = records(story, seed, minutes)
    path = out_dir / f"{story}-s{seed}.jsonl.gz"
    with gzip.GzipFile(path, "wb", compresslevel=6, mtime=0) as fh:
        for rec in recs:
            fh.write((json.dumps(rec, separators=(",", ":")) + "\n").encode())
    (out_dir / f"{story}-s{seed}.manifest.json").write_text(
        json.dumps(man, indent=1, default=str))
    return path



def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--seeds", default="0..3", help="with --corpus: 0..3 or 0,2,5")
    ap.add_argument("--story", choices=STORIES, default=STORIES[0])
    ap.add_argument("--corpus", action="store_true", help="both stories x --seeds")
    ap.add_argument("--minutes", type=float, default=20.0)
    args = ap.parse_args(argv)
    todo = ([(s, n) for n in parse_seeds(args.seeds) for s in STORIES] if args.corpus
            else [(args.story, args.seed)])
    for story, seed in todo:
        print(write(args.out, story, seed, args.minutes), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
