"""Rebuilds bench/blind20/cases from the seed logs: generate the log, cut the reproducer.

    python -m bench.blind20.make_cases [--out bench/blind20/cases]

PLAN names, for each case, the story and seed it comes from and the cut (seconds after the
log's first record); tests/test_blind20_cases.py says what faultline does wrong in each.
"""

from __future__ import annotations

from pathlib import Path

from bench.blind11.make_cases import make
from bench.blind20.cut import cut
from bench.blind20.generate import write

PLAN: dict[str, tuple] = {
    # fabric seed 0: ft-c (TP8 x DP3 on fb13, fb14, fb16) starts at ~222 s; fb14's mlx5_6 sits
    # behind PCIe x8: ~3,000 CNPs/s sent (its siblings <= 30), the job's other mlx5_6 ports
    # handle CNPs and wait (xmit_wait ~6e6/s), the job's reduce x1.3-1.6 from its first step
    "X1-nic-pcie-x8-from-job-start-unseen": ("fabric", 0, dict(
        t_from=180, t_to=480, nodes={"fb13", "fb14", "fb16"}, labels={"nic-pcie-x8"})),
    # fabric seed 1: llm-a (TP8 x PP2 x DP4); fb12's TP group runs ~5 % slow for 4-5 steps
    # around 210 s (a real PAI worker's residual run, the max of the node's eight ranks). No fault
    "N1-node-wide-excursion-escalated": ("fabric", 1, dict(
        t_from=0, t_to=260, jobs={"llm-a"}, topics={"telemetry.step"}, labels=set())),
    # fabric seed 0: a shared file system stalls every save from 566 s (x3.5-6, GPUs idle). No fault
    "S1-storage-stall-saves": ("fabric", 0, dict(
        t_from=480, t_to=900, jobs={"llm-a"}, topics={"telemetry.step", "telemetry.thermal"},
        nodes={"fb01", "fb02", "fb03", "fb04", "fb09", "fb10", "fb11", "fb12"}, labels=set())),
    # board seed 2: the PCIe switch under bd04's GPUs 2-3 replays from ~352 s (each +10-60 per
    # 30 s row); their ranks' host time +4-9 % of a step, the node's other six computing as late
    "P1-pcie-switch-pair-paged-as-two-gpus": ("board", 2, dict(
        t_from=280, t_to=560, nodes={"bd01", "bd02", "bd03", "bd04"}, jobs={"pt-a"},
        labels={"pcie-switch-pair"})),
    # board seed 2: rack-3's rear-door cooling stops at ~412 s; bd09-11 (ft-c) reach 87 C and
    # hold there at 0x20; bd12 idles in the same rack
    "C1-rack-cooling-three-nodes": ("board", 2, dict(
        t_from=400, t_to=760, nodes={"bd09", "bd10", "bd11", "bd12"}, jobs={"ft-c"},
        topics={"telemetry.step", "telemetry.thermal"},
        labels={"rack-cooling-bd09", "rack-cooling-bd10", "rack-cooling-bd11"})),
}


def main(argv: list[str] | None = None) -> int:
    return make(PLAN, write, cut, Path(__file__).parent / "cases", __doc__, argv)


if __name__ == "__main__":
    raise SystemExit(main())
