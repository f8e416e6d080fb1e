"""Writes blind6's labelled incident logs.

    python -m bench.blind6.generate --out DIR --seed N [--story k8s-a100|slurm-pcie]
    python -m bench.blind6.generate --out DIR --corpus --seeds 0..3

Records go out in arrival order: each leaves its node at its true time plus a path delay
(50-600 ms; 0.4 % held longer, up to the story's limit), 0.2 % are delivered twice. The
topology record comes first, the labels last; `manifest.json` lists the healthy events.
"""

from __future__ import annotations

import argparse
import gzip
import json
import random
from pathlib import Path

from bench.blind6 import emit
from bench.blind6.story import STORIES, Story
from replay.evaluation.corpus import parse_seeds


def records(st: Story, seed: int) -> list[tuple[float, str, dict]]:
    rng = random.Random(3000 + seed)
    out = list(st.steps)
    for node in st.nodes:
        emit.thermal(node, st.t_end, st.faults, rng, out, st.ints)
        emit.ecc(node, st.t_end, st.faults, rng, out, st.recovery)
        emit.nic(node, st.t_end, st.faults, rng, out, st.rate_fn)
    for f in st.faults:
        out.extend(f.extra)
    arrivals = []
    for t, topic, v in out:
        delay = rng.uniform(0.05, 0.6)
        if rng.random() < 0.004:
            delay = rng.uniform(0.6, st.max_hold_s)
        arrivals.append((t + delay, topic, v))
        if rng.random() < 0.002:
            arrivals.append((t + delay + rng.uniform(0.0, 0.5), topic, v))
    if st.resend is not None:
        arrivals = _resend(arrivals, st, rng)
    arrivals.sort(key=lambda a: a[0])
    return arrivals


def _resend(arrivals: list, st: Story, rng: random.Random) -> list:
    """The node's DCGM collector restarts at t_r: nothing for gap_s, then it re-sends the
    samples of its last minute before the restart (its buffer), then goes on."""
    name, t_r, gap, minute = st.resend
    node = next(n for n in st.nodes if n.name == name)
    lo, hi = node.clock(t_r - minute), node.clock(t_r)
    kept = []
    for a, topic, v in arrivals:
        mine = topic in ("telemetry.thermal", "telemetry.ecc") and v.get("node") == name
        if mine and node.clock(t_r) <= v["ts"] < node.clock(t_r + gap):
            continue
        kept.append((a, topic, v))
        if mine and lo <= v["ts"] < hi:
            kept.append((t_r + gap + rng.uniform(0.0, 1.0), topic, v))
    return kept


def write(st: Story, seed: int, path: Path) -> dict:
    recs = records(st, seed)
    # a fault whose time never came (a shortened --minutes run) changed nothing: no label
    labels = [f.label() for f in st.faults if f.labelled and f.first <= f.last]
    with gzip.open(path, "wt", encoding="utf-8") as fh:
        fh.write(json.dumps({"topic": "topology",
                             "value": {"format": "slurm", "text": st.topology}}) + "\n")
        for _a, topic, v in recs:
            fh.write(json.dumps({"topic": topic, "value": v}, separators=(",", ":")) + "\n")
        for lab in labels:
            fh.write(json.dumps({"topic": "labels", "value": lab}) + "\n")
    return {"log": path.name, "story": st.name, "seed": seed, "records": len(recs),
            "labels": labels, "healthy": st.healthy}



def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--story", choices=sorted(STORIES), default=None)
    ap.add_argument("--corpus", action="store_true", help="both stories x --seeds")
    ap.add_argument("--seeds", default="0..3")
    ap.add_argument("--minutes", type=float, default=None)
    args = ap.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    seeds = parse_seeds(args.seeds) if args.corpus else [args.seed]
    stories = sorted(STORIES) if args.corpus or args.story is None else [args.story]
    manifest = []
    for seed in seeds:
        for name in stories:
            kw = {} if args.minutes is None else {"minutes": args.minutes}
            st = STORIES[name](seed, **kw)
            path = args.out / f"{name}-s{seed}.jsonl.gz"
            manifest.append(write(st, seed, path))
            m = manifest[-1]
            print(f"{path}: {m['records']} records, {len(m['labels'])} labels")
    (args.out / "manifest.json").write_text(json.dumps(manifest, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
