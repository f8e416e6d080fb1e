"""Rebuilds bench/blind18/cases from the seed logs: generate the log, cut the reproducer.

    python -m bench.blind18.make_cases [--out bench/blind18/cases]

PLAN names, for each case, the story and seed it comes from and the cut (seconds after the
log's first record); tests/test_blind18_cases.py says what faultline does wrong in each.
"""

from __future__ import annotations

from pathlib import Path

from bench.blind11.make_cases import make
from bench.blind18.cut import cut
from bench.blind18.generate import write

PLAN: dict[str, tuple] = {
    # clusters seed 0: east and west both name hosts gpu-001..008; no fault in the cut, only
    # the two clusters' port and ECC rows (east's ports with old errors and link_downed 4)
    "C1-two-clusters-counters-read-as-jumps": ("clusters", 0, dict(
        t_from=0, t_to=200, topics={"telemetry.nic", "telemetry.ecc"}, labels=set())),
    # clusters seed 0: west's gpu-004 mlx5_3 errs from ~450 s (counters from 0); east's port of
    # that name holds ~30,000 old symbol errors
    "C2-west-port-errors-under-east-names": ("clusters", 0, dict(
        t_from=380, t_to=640, nodes={"gpu-004"}, topics={"telemetry.nic"},
        labels={"port-errors-west"})),
    # clusters seed 1: both clusters run a job named sft-7b; west's gpu-001/7 computes ~1.2x
    # from ~289 s (nothing in telemetry says why)
    "C3-west-straggler-in-a-shared-job-name": ("clusters", 1, dict(
        t_from=230, t_to=430, jobs={"sft-7b"}, topics={"telemetry.step"},
        labels={"slow-gpu-west"})),
}


def main(argv: list[str] | None = None) -> int:
    return make(PLAN, write, cut, Path(__file__).parent / "cases", __doc__, argv)


if __name__ == "__main__":
    raise SystemExit(main())
