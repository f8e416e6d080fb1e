"""Rebuilds bench/blind14/cases from the seed logs: generate the log, cut the reproducer.

    python -m bench.blind14.make_cases [--out bench/blind14/cases]

PLAN names, for each case, the story and seed it comes from and the cut (seconds after the
log's first record); tests/test_blind14_cases.py says what faultline does wrong in each.
Empty at the freeze: faultline had replayed nothing of blind14's output.
"""

from __future__ import annotations

from pathlib import Path

from bench.blind11.make_cases import make
from bench.blind14.cut import cut
from bench.blind14.generate import write

STEP, THERMAL, ECC = "telemetry.step", "telemetry.thermal", "telemetry.ecc"
PLAN: dict[str, tuple] = {}


def main(argv: list[str] | None = None) -> int:
    return make(PLAN, write, cut, Path(__file__).parent / "cases", __doc__, argv)


if __name__ == "__main__":
    raise SystemExit(main())
