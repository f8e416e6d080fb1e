"""Rebuilds bench/blind12/cases from the seed logs: generate the log, cut the reproducer.

    python -m bench.blind12.make_cases [--out bench/blind12/cases]

PLAN names, for each case, the story and seed it comes from and the cut (seconds after the
log's first record); tests/test_blind12_cases.py says what faultline does wrong in each.
"""

from __future__ import annotations

from pathlib import Path

from bench.blind11.make_cases import make
from bench.blind12.cut import cut
from bench.blind12.generate import write

STEP, THERMAL, ECC = "telemetry.step", "telemetry.thermal", "telemetry.ecc"
PLAN: dict[str, tuple] = {
    # nvl72 seed 0: rack b's power shelf brakes all 18 trays from 412 s
    "B1-rack-brake-as-tray-alerts": ("nvl72", 0, dict(t_from=330, t_to=640,
                                                      topics={STEP, THERMAL},
                                                      labels={"rack-brake"})),
    # nvl72 seed 0: gb-b08/0's gradients non-finite on 1 step in 7-14 from 567 s
    "B2-inf-grads-hidden-by-loss-scale": ("nvl72", 0, dict(t_from=520, t_to=760,
                                                           jobs={"moe-fp16"}, topics={STEP},
                                                           labels={"inf-grads"})),
    # pool seed 0: a CPU hog on b200-06 from 457 to 723 s
    "B3-cpu-hog-node": ("pool", 0, dict(t_from=400, t_to=740, topics={STEP},
                                        labels={"cpu-hog"})),
    # nvl72 seed 2: XID 149 on gb-b10/1 at 138.6 s, its NVLink counters on the next ECC poll
    "B4-xid149-not-an-event": ("nvl72", 2, dict(t_from=100, t_to=240, nodes={"gb-b10"},
                                                topics={ECC, THERMAL},
                                                labels={"nvlink-xid149"})),
    # pool seed 2: b200-04/0 computes 1.36x its one peer in DP2 job pt-2007 (183 steps)
    "B5-slow-gpu-two-peers": ("pool", 2, dict(t_from=0, t_to=200, nodes={"b200-04"},
                                              jobs={"pt-2007"}, topics={STEP, THERMAL},
                                              labels={"slow-gpu"})),
}


def main(argv: list[str] | None = None) -> int:
    return make(PLAN, write, cut, Path(__file__).parent / "cases", __doc__, argv)


if __name__ == "__main__":
    raise SystemExit(main())
