"""Rebuilds bench/blind8/cases from the seed logs (generated into --corpus when missing).

    python -m bench.blind8.make_cases [--corpus /tmp/blind8/corp/tune]

Each case is a cut (cut.py) of one seed log: a window, a few nodes and topics, the labels that
matter; tests/test_blind8_cases.py replays them (strict xfails name what faultline does).
"""

from __future__ import annotations

import argparse
from pathlib import Path

from bench.blind8 import generate
from bench.blind8.cut import cut

HERE = Path(__file__).resolve().parent / "cases"
STEP, ECC, NIC, THERMAL = ("telemetry.step", "telemetry.ecc", "telemetry.nic",
                           "telemetry.thermal")
NONE = {"-"}   # keep no label: every alert of the case is a false positive

# name -> (story, seed, from_s, to_s, nodes, topics, labels, step_nodes)
CASES = {
    "H1-moe-routing-pages": ("rail-moe", 1, 0, 130, None, {STEP}, NONE, None),
    "H2-open-escalation-hides-slow-gpu": ("rail-moe", 3, 0, 600, None, {STEP}, {"slow-gpu"},
                                          None),
    "H3-nvswitch-eight-gpu-pages": ("rail-moe", 0, 840, 960, {"hgx-01"}, {ECC, THERMAL},
                                    {"nvswitch"}, None),
    "H4-rail-leaf-port-pages": ("rail-moe", 0, 540, 700, None, {NIC}, {"rail-half"}, None),
    "H5-lemon-xid31": ("scale-1k", 0, 200, 860, {"gpu0133"}, {STEP, ECC, THERMAL},
                       {"lemon-xid31"}, None),
    "H6-pool-dp2-slow": ("scale-1k", 0, 300, 1000, {"gpu0136"}, {STEP, ECC, THERMAL},
                         {"pool-slow"}, None),
}


def build(corpus: Path, names: list[str] | None = None) -> None:
    HERE.mkdir(exist_ok=True)
    for name, (story, seed, a, b, nodes, topics, labels, step_nodes) in CASES.items():
        if names and name not in names:
            continue
        src = corpus / f"{story}-s{seed}.jsonl.gz"
        if not src.exists():
            generate.write(corpus, story, seed)
        n = cut(src, HERE / f"{name}.jsonl.gz", a, b, nodes, None, topics, labels, step_nodes)
        print(f"{name}: {n} records")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--corpus", type=Path, default=Path("/tmp/blind8/corp/tune"))
    ap.add_argument("names", nargs="*")
    args = ap.parse_args(argv)
    build(args.corpus, args.names)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
