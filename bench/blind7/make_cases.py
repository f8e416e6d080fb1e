"""Rebuilds bench/blind7/cases/ from the corpus logs: one small reproducer per class of error.

    python -m bench.blind7.make_cases [--corpus DIR]     # DIR holds (or gets) the seed logs

Each case is a window of one log (seconds from its first record) with the nodes, jobs and
topics the error needs; tests/test_blind7_cases.py replays them.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from bench.blind7.cut import cut
from bench.blind7.generate import write

HERE = Path(__file__).resolve().parent / "cases"
LEAF2 = ["gh-05", "gh-06", "gh-07", "gh-08"]
SERVE_PORTS = ["gh-07/mlx5_2", "gh-07/mlx5_3", "gh-08/mlx5_2", "gh-08/mlx5_3"]
# name: (story, seed, from, to, keyword arguments of cut)
CASES = {
    "G1-serving-ports-beside-training": ("gh200-shared", 0, 0, 300, dict(
        topics=["telemetry.nic"], labels=[])),
    "G2-tenant-congestion-on-leaf2": ("gh200-shared", 1, 400, 740, dict(
        nodes=LEAF2, topics=["telemetry.nic", "telemetry.step"], labels=["xtenant"],
        drop_nics=SERVE_PORTS)),
    "G3-tp-partner-named": ("gh200-shared", 1, 0, 900, dict(
        topics=["telemetry.step", "telemetry.thermal", "telemetry.nic", "telemetry.ecc"],
        topic_nodes={"telemetry.nic": ["gh-03"], "telemetry.ecc": ["gh-03"]},
        labels=["aging", "halfrate"])),
    "G4-node-lost": ("h200-summer", 0, 600, 1000, dict(
        nodes=["hgx-01", "hgx-02", "hgx-04", "hgx-05", "hgx-06"], jobs=["pt-a"],
        labels=["node-lost"])),
    "G5-loader-pressure": ("h200-summer", 0, 560, 940, dict(
        nodes=["hgx-07", "hgx-08", "hgx-09", "hgx-10"], jobs=["vlm-sft-b"],
        topics=["telemetry.step"], labels=["loader"])),
    "G6-fanwall-two-pages": ("h200-summer", 5, 250, 500, dict(
        nodes=["hgx-01", "hgx-02", "hgx-03", "hgx-04", "hgx-05", "hgx-06"], jobs=["pt-a"],
        topics=["telemetry.step", "telemetry.thermal"], labels=["fanwall"])),
}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--corpus", type=Path, default=Path("/tmp/blind7/cases-src"))
    ap.add_argument("--only", default=None)
    args = ap.parse_args(argv)
    for name, (story, seed, a, b, kw) in CASES.items():
        if args.only and args.only not in name:
            continue
        log = args.corpus / f"{story}-s{seed}.jsonl.gz"
        if not log.exists():
            write(args.corpus, story, seed)
        n = cut(log, HERE / f"{name}.jsonl.gz", a, b, **kw)
        print(f"{name}: {n} records")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
