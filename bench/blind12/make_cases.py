"""Rebuilds bench/blind12/cases from the seed logs: generate the log, cut the reproducer.

    python -m bench.blind12.make_cases [--out bench/blind12/cases]

PLAN names, for each case, the story and seed it comes from and the cut (seconds after the
log's first record); tests/test_blind12_cases.py says what faultline does wrong in each.
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

from bench.blind12.cut import cut
from bench.blind12.generate import write

PLAN: dict[str, tuple] = {}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=Path(__file__).parent / "cases")
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        for name, (story, seed, how) in PLAN.items():
            log = write(Path(tmp), story, seed)
            n = cut(log, args.out / f"{name}.jsonl.gz", **how)
            print(f"{name}: {n} records")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
