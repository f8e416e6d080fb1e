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
PLAN: dict[str, tuple] = {
    # pipe seed 1: leaf-b's ASIC from 514 s; pp04 really faces leaf-b, the file says leaf-a
    "O1-moved-node-ports-as-nic-alerts": ("pipe", 1, dict(t_from=440, t_to=640, topics={NIC},
                                                          labels={"leaf-b-asic"})),
    # pipe seed 1: pp04/0 (stage 1, replica 2) loses a quarter of its clock at 233 s
    "O2-stage-gpu-replica-escalated": ("pipe", 1, dict(t_from=120, t_to=420,
                                                       topics={STEP, THERMAL},
                                                       labels={"stage-gpu-clock"})),
    # pipe seed 3: pp04/1 (stage 1, replica 2) loses 29 % of its clock at 214 s; the job sits in
    # the replica-imbalance regime (its replicas 0.4 % apart, ranks 0.2 %), so no rank stands
    # out of its replica mates (b15rest, round 26)
    "O2b-stage-gpu-replica-read-as-batch": ("pipe", 3, dict(t_from=0, t_to=420,
                                                            topics={STEP, THERMAL},
                                                            labels={"stage-gpu-clock"})),
    # fabric seed 0: fx10/3 (the job's index) hot from 208 s; fx10's collector calls it gpu 1
    "O3-renumbered-hot-gpu": ("fabric", 0, dict(t_from=120, t_to=420,
                                                nodes={"fx09", "fx10", "fx11", "fx15"},
                                                jobs={"ft-b"}, topics={STEP, THERMAL},
                                                labels={"hot-gpu-renumbered"})),
    # pipe seed 3: pp01's collector holds its rows from 287 s and sends them at 570 s (the cut
    # ends at 552 s, before leaf-b's ASIC, and starts at 0: from 200 s nothing fires; pp04's
    # slow GPU from 214 s is in it, unlabelled)
    "O4-late-batch-as-dead-node": ("pipe", 3, dict(t_from=0, t_to=552,
                                                   topics={STEP, THERMAL, ECC, NIC},
                                                   labels=set())),
}


def main(argv: list[str] | None = None) -> int:
    return make(PLAN, write, cut, Path(__file__).parent / "cases", __doc__, argv)


if __name__ == "__main__":
    raise SystemExit(main())
