"""Rebuilds bench/blind15/cases from the seed logs: generate the log, cut the reproducer.

    python -m bench.blind15.make_cases [--out bench/blind15/cases]

PLAN names, for each case, the story and seed it comes from and the cut (seconds after the
log's first record); tests/test_blind15_cases.py says what faultline does wrong in each.
"""

from __future__ import annotations

from pathlib import Path

from bench.blind11.make_cases import make
from bench.blind15.cut import cut
from bench.blind15.generate import write

STEP, THERMAL, ECC, NIC = "telemetry.step", "telemetry.thermal", "telemetry.ecc", "telemetry.nic"
PLAN: dict[str, tuple] = {}


def main(argv: list[str] | None = None) -> int:
    return make(PLAN, write, cut, Path(__file__).parent / "cases", __doc__, argv)


if __name__ == "__main__":
    raise SystemExit(main())
