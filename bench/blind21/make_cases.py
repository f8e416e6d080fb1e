"""Rebuilds bench/blind21/cases from the seed logs: generate the log, cut the reproducer.

    python -m bench.blind21.make_cases [--out bench/blind21/cases]

PLAN names, for each case, the story and seed it comes from and the cut (seconds after the
log's first record); tests/test_blind21_cases.py says what faultline does wrong in each, or
which routine shape it keeps quiet. Built from the fixed generator (e440e17: PAI job 2 noise).
"""

from __future__ import annotations

from pathlib import Path

from bench.blind11.make_cases import make
from bench.blind21.cut import cut
from bench.blind21.generate import write

FT_B = {"dc09", "dc10", "dc11", "dc12"}
MOE = {f"mx{n:02d}" for n in range(1, 9)}

PLAN: dict[str, tuple] = {
    # facility seed 0: the DR cap lowers dc09-16's limits to ~500 W at 238-262 s (each node's
    # BMC in turn); ft-b (TP8 x DP4 on dc09-12, all four capped) ~8 % slower, its GPUs' cap
    # depths differing by their own demand. No fault
    "D1-dr-cap-row-paged-as-node-power": ("facility", 0, dict(
        t_from=150, t_to=420, nodes=FT_B, jobs={"ft-b"},
        topics={"telemetry.step", "telemetry.thermal"}, labels=set())),
    # facility seed 3: the DR cap reaches dc09 first (241 s, its eight GPUs on one poll), the
    # row's other nodes 4-24 s after; ft-b's rank 3 on dc09, in a noise run since ~20 s before,
    # is found slow alone on the cap's first step, its seven mates alike 2.5 s later (from the
    # log's start: the job's noise learnt). No fault (site46, round 46: the tune log's one
    # false positive)
    "D2-dr-cap-first-node-rank-alone-paged-power": ("facility", 3, dict(
        t_from=0, t_to=330, nodes=FT_B | {f"dc{n:02d}" for n in range(3, 9)},
        jobs={"ft-b", "llm-a"}, topics={"telemetry.step", "telemetry.thermal"},
        labels=set())),
    # facility seed 1: ft-c (dc13-14) ends at ~552 s; Slurm reboots dc13 for its firmware
    # flash at ~630 s, dark until ~888 s; dc14-16 keep reporting. No fault
    "F1-flash-after-job-end-paged-silent": ("facility", 1, dict(
        t_from=420, t_to=960, nodes={"dc13", "dc14", "dc15", "dc16"}, jobs={"ft-c"},
        labels=set())),
    # model seed 1: moe-a (TP2 x DP32, EP8 over dp % 8) -- the hot expert on an EP index of
    # the even nodes mx02/04/06/08 for tens of steps around 300 s. No fault
    "M1-moe-hot-expert-four-nodes-escalated": ("model", 1, dict(
        t_from=0, t_to=400, nodes=MOE, jobs={"moe-a"}, topics={"telemetry.step"},
        labels=set())),
    # facility seed 0: llm-a's rank on dc05 GPU 5 runs a real PAI job-2 residual run (4 steps
    # at ~+5 %, noise 1 %) around 90 s. No fault
    "N2-one-rank-real-noise-run-escalated": ("facility", 0, dict(
        t_from=0, t_to=200, jobs={"llm-a"}, topics={"telemetry.step"}, labels=set())),
    # facility seed 0: llm-a's rank on dc08 GPU 6 runs a real PAI job-2 residual run (6 steps
    # at +2-5 %, mean 3.9 %, noise 0.94 %) at steps 138-143, the job's lag-1 (0.54) in force.
    # No fault (moe31, round 31: cut from the tune log; N2's shape after the lag-1 is used)
    "N3-real-noise-run-under-lag1-escalated": ("facility", 0, dict(
        t_from=0, t_to=470, jobs={"llm-a"}, topics={"telemetry.step"}, labels=set())),
    # model seed 2: XID 79 on mx04 GPU 5 at ~386 s; torchrun kills mx04's ranks, srun the rest
    # in 5-15 s; the GPU reports nothing after
    "G1-xid79-teardown": ("model", 2, dict(
        t_from=300, t_to=520, nodes=MOE, labels={"xid79-mx04-g5"})),
    # facility seed 2: dc05's PSU brakes in bursts from ~818 s (0x80 on all 8 GPUs)
    "G2-psu-brake-bursts": ("facility", 2, dict(
        t_from=760, t_to=900, nodes={"dc01", "dc02", "dc03", "dc04", "dc05", "dc06", "dc07",
                                     "dc08"}, jobs={"llm-a"},
        topics={"telemetry.step", "telemetry.thermal"}, labels={"psu-dc05"})),
    # facility seed 0: the warm aisle (dc01-08, inlet +4-7 C over the log), thermal rows only,
    # four nodes without a fault. No fault
    "G3-warm-aisle-thermal": ("facility", 0, dict(
        t_from=0, t_to=1320, nodes={"dc01", "dc02", "dc04", "dc06"},
        topics={"telemetry.thermal"}, labels=set())),
    # facility seed 0: dc15, an idle spare, dark for its firmware flash at ~78-340 s, back
    # with its port counters from zero; dc16, dc01, dc02 keep reporting. No fault
    "G4-spare-firmware-flash": ("facility", 0, dict(
        t_from=0, t_to=520, nodes={"dc15", "dc16", "dc01", "dc02"},
        topics={"telemetry.thermal", "telemetry.ecc", "telemetry.nic"}, labels=set())),
}


def main(argv: list[str] | None = None) -> int:
    return make(PLAN, write, cut, Path(__file__).parent / "cases", __doc__, argv)


if __name__ == "__main__":
    raise SystemExit(main())
