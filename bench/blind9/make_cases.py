"""Rebuilds bench/blind9/cases/ from the seed logs: each a cut of one log (cut.py).

    python -m bench.blind9.make_cases [--corpus DIR]     # DIR holds the seed logs, else generated
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

from bench.blind9 import generate
from bench.blind9.cut import cut

CASES = Path(__file__).resolve().parent / "cases"
_H = [f"h100-{i:02d}" for i in range(1, 13)]
_R3 = [f"nvl-r3-c{i:02d}" for i in range(1, 19)]
_R2 = [f"nvl-r2-c{i:02d}" for i in range(11, 18)]

# name -> (story, seed, from s, to s, nodes, jobs, labels)
SPECS = {
    "G1-pdu-trip-node-pages": ("ops-hgx", 0, 700, 1200, _H, None, {"pdu-trip"}),
    "G2-nvl72-rack-dark-node-pages": ("nvl72", 0, 650, 1200, _R3 + _R2, {"sft-gb200"},
                                       {"rack-power"}),
    "G3-drained-idle-node-paged": ("ops-hgx", 0, 300, 1000,
                                   [f"a100-{i:02d}" for i in range(5, 9)], None, {"none"}),
    "G4-pdu-trip-never-paged": ("ops-hgx", 7, 700, 1200, _H[:8], None, {"pdu-trip"}),
}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--corpus", type=Path, default=None)
    a = ap.parse_args(argv)
    CASES.mkdir(exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix="blind9-cases-"))
    for name, (story, seed, t0, t1, nodes, jobs, labels) in SPECS.items():
        log = (a.corpus or tmp) / f"{story}-s{seed}.jsonl.gz"
        if not log.exists():
            log = generate.write(tmp, story, seed)
        n = cut(log, CASES / f"{name}.jsonl.gz", t0, t1, set(nodes), jobs, labels)
        print(f"{name}: {n} records")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
