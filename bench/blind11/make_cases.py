"""Rebuilds bench/blind11/cases from the seed logs: generate the log, cut the reproducer.

    python -m bench.blind11.make_cases [--out bench/blind11/cases]

PLAN names, for each case, the story and seed it comes from and the cut (seconds after the
log's first record); tests/test_blind11_cases.py says what faultline does wrong in each.
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

from bench.blind11.cut import cut
from bench.blind11.generate import write

PLAN = {
    # mixed seed 2: h200-01/1 computes 1.095x from 253 s; lc-pack's steps only
    "L2-h200-slow-at-h100-pace": ("mixed", 2, dict(t_from=150, t_to=750, jobs={"lc-pack"},
                                                   topics={"telemetry.step"},
                                                   labels={"h200-slow"})),
    # mixed seed 0: nvl-03 back from its driver upgrade at 695 s without GPU 1
    "L3-gpu-missing-after-reboot": ("mixed", 0, dict(t_from=480, t_to=1200, nodes={"nvl-03"},
                                                     labels={"gpu-missing"})),
}


def make(plan: dict, write, cut, default_out: Path, doc: str,
         argv: list[str] | None = None) -> int:
    """Generate each case's seed log with ``write`` and cut it with ``cut`` into --out
    (one driver for blind11's and blind12's plans)."""
    ap = argparse.ArgumentParser(description=doc.splitlines()[0])
    ap.add_argument("--out", type=Path, default=default_out)
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        for name, (story, seed, how) in plan.items():
            log = write(Path(tmp), story, seed)
            n = cut(log, args.out / f"{name}.jsonl.gz", **how)
            print(f"{name}: {n} records")
    return 0


def main(argv: list[str] | None = None) -> int:
    return make(PLAN, write, cut, Path(__file__).parent / "cases", __doc__, argv)


if __name__ == "__main__":
    raise SystemExit(main())
