"""Rebuilds bench/blind16/cases from the seed logs: generate the log, cut the reproducer.

    python -m bench.blind16.make_cases [--out bench/blind16/cases]

PLAN names, for each case, the story and seed it comes from and the cut (seconds after the
log's first record); tests/test_blind16_cases.py says what faultline does wrong in each.
"""

from __future__ import annotations

from pathlib import Path

from bench.blind11.make_cases import make
from bench.blind16.cut import cut
from bench.blind16.generate import write

STEP, THERMAL = "telemetry.step", "telemetry.thermal"
FSDP_NODES = {f"ov{i:02d}" for i in range(1, 9)}
PLAN: dict[str, tuple] = {
    # overlap seed 1: ov04/6's clock x0.78 (no reason bit) from 254 s; fsdp-a's every rank
    # computes x1.25 alike, ov04/6's comm_ms the job's smallest
    "P1-overlap-straggler-unseen": ("overlap", 1, dict(t_from=120, t_to=480, nodes=FSDP_NODES,
                                                       jobs={"fsdp-a"}, topics={STEP, THERMAL},
                                                       labels={"fsdp-straggler"})),
    # overlap seed 0: ov02/7's power limit left at ~440 W from 262 s (0x4 at 440 W, clock 1575)
    "P2-overlap-power-capped-straggler-late": ("overlap", 0, dict(
        t_from=120, t_to=480, nodes=FSDP_NODES, jobs={"fsdp-a"}, topics={STEP, THERMAL},
        labels={"fsdp-straggler"})),
}


def main(argv: list[str] | None = None) -> int:
    return make(PLAN, write, cut, Path(__file__).parent / "cases", __doc__, argv)


if __name__ == "__main__":
    raise SystemExit(main())
