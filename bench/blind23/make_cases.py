"""Rebuilds bench/blind23/cases from the seed logs: generate the log, cut the reproducer.

    python -m bench.blind23.make_cases [--out bench/blind23/cases]

PLAN names, for each case, the story and seed it comes from and the cut (seconds after the
log's first record); tests/test_blind23_cases.py says what faultline does wrong in each, or
which routine shape it keeps quiet. Built from the freeze (fe960c8). D1, D2, C1, L1, N1 and N2
are findings (strict xfails), the G cases guards.
"""

from __future__ import annotations

import functools
from pathlib import Path

from bench.blind11.make_cases import make
from bench.blind23.cut import cut
from bench.blind23.generate import write

STEP, THERMAL = "telemetry.step", "telemetry.thermal"
RACK3 = {"gpu13", "gpu14", "gpu15", "gpu16"}
L40S = {f"l40s-{i:02d}" for i in range(4)}

PLAN: dict[str, tuple] = {
    # loop seed 0: gpu13's coolant flow restricted from ~390 s (its 8 GPUs 0x20, some 0x40 from
    # ~500 s); mm-e's steps and rack 3's thermal
    "D1-node-flow-fault-paged-at-a-gpu-too": ("loop", 0, dict(
        t_from=380, t_to=600, nodes=RACK3, jobs={"mm-e"}, topics={STEP, THERMAL},
        labels={"flow-gpu13"})),
    # loop seed 2: gpu07's host CPU throttling from ~427 s (every rank of the node +8-14 %,
    # GPUs healthy); lm-d's steps
    "D2-host-cpu-throttle-escalated-at-a-gpu-first": ("loop", 2, dict(
        t_from=380, t_to=560, jobs={"lm-d"}, topics={STEP}, labels={"cpu-gpu07"})),
    # loop seed 3: gpu08's host CPU throttling from ~440 s, ramping (gpu08/6 over the effect
    # bar first, its 7 mates alarmed beside it); lm-d's steps without gpu04 (its coolant flow)
    "D2-host-cpu-throttle-ramp-escalated-at-a-gpu-first": ("loop", 3, dict(
        t_from=400, t_to=560, nodes={f"gpu{i:02d}" for i in range(1, 13)} - {"gpu04"},
        jobs={"lm-d"}, topics={STEP}, labels={"cpu-gpu08"})),
    # fleet seed 0: h100-07 GPU 0 stuck at 1590 MHz (no reason bit) once llm-a is requeued onto
    # it (~718 s); llm-a's steps and the thermal of its nodes
    "C1-stuck-clock-escalated-unknown": ("fleet", 0, dict(
        t_from=640, t_to=830, nodes={f"h100-{i:02d}" for i in range(2, 8)}, jobs={"llm-a"},
        topics={STEP, THERMAL}, labels={"clock-h100-07-g0"})),
    # fleet seed 0: rec-b launched at ~106 s, a100-03's loaders for GPUs 4-7 on the far socket
    # from its first step (~159 s); rec-b's steps
    "L1-numa-half-node-late-from-the-first-step-paged-late": ("fleet", 0, dict(
        t_from=100, t_to=440, jobs={"rec-b"}, topics={STEP}, labels={"numa-a100-03"})),
    # loop seed 4 (held): gpu01 GPU 1's real PAI residual run (4 steps at +3.8 %) 27-36 s into
    # the log; lm-d's steps. No fault
    "N1-pai-noise-run-at-the-log-start-escalated": ("loop", 4, dict(
        t_from=0, t_to=80, jobs={"lm-d"}, topics={STEP}, labels=set())),
    # fleet seed 6 (held): a100-00 GPU 6 at +2-5 % for ~30 steps from rec-b's 18th step -- not
    # cold-start drift: its noise there is PAI job 3 worker 9's straggle, which world.pai_pool
    # keeps (start35, tests/test_blind23_cases.py); rec-b's steps without the NUMA node a100-05
    "N2-cold-start-drift-escalated": ("fleet", 6, dict(
        t_from=100, t_to=260, nodes={f"a100-{i:02d}" for i in range(5)}, jobs={"rec-b"},
        topics={STEP}, labels=set())),
    # fleet seed 0: llm-a crashes at ~577 s (XID 13), requeued at ~713 s from its checkpoint
    # onto h100-02..07 in a new order, 5 % slower everywhere; without h100-07 (the stuck clock)
    "G1-requeue-from-checkpoint-onto-new-nodes-container-5pct": ("fleet", 0, dict(
        t_from=540, t_to=900, nodes={f"h100-{i:02d}" for i in range(7)}, jobs={"llm-a"},
        topics={STEP, "telemetry.ecc"}, labels=set())),
    # fleet seed 0: h100-06 drained, silent ~27-330 s, back on the new driver (counters from 0)
    "G2-rolling-upgrade-reboot-of-a-spare": ("fleet", 0, dict(
        t_from=0, t_to=340, nodes={"h100-06"}, labels=set())),
    # fleet seed 0: the L40S nodes before the fan (~538 s): 75-85 C, 0x4 most of the time
    "G3-l40s-hot-and-capped-is-normal": ("fleet", 0, dict(
        t_from=0, t_to=500, nodes=L40S, jobs={"ft-c"}, topics={STEP, THERMAL}, labels=set())),
    # loop seed 0: rack 0's CDU pump switchover (+3-5 C, 780-983 s), thermal only
    "G4-cdu-pump-switchover": ("loop", 0, dict(
        t_from=740, t_to=1000, nodes={"gpu01", "gpu02", "gpu03", "gpu04"}, topics={THERMAL},
        labels=set())),
    # loop seed 1: rack 3's CDU losing flow from ~330 s: all of mm-e throttling together
    "G5-cdu-rack-four-nodes-throttle-together": ("loop", 1, dict(
        t_from=300, t_to=760, nodes=RACK3, jobs={"mm-e"}, topics={STEP, THERMAL},
        labels={f"cdu-rack3-{n}" for n in RACK3})),
    # fleet seed 1: l40s-02's chassis fan failing from ~443 s
    "G6-l40s-fan-node": ("fleet", 1, dict(
        t_from=400, t_to=640, nodes=L40S, jobs={"ft-c"}, topics={STEP, THERMAL},
        labels={"fan-l40s-02"})),
    # loop seed 1: gpu12's host CPU throttling from ~252 s, escalated at the node alone
    "G7-host-cpu-throttle-escalated-at-the-node": ("loop", 1, dict(
        t_from=200, t_to=420, jobs={"lm-d"}, topics={STEP}, labels={"cpu-gpu12"})),
}


def main(argv: list[str] | None = None) -> int:
    return make(PLAN, functools.cache(write), cut, Path(__file__).parent / "cases", __doc__,
                argv)


if __name__ == "__main__":
    raise SystemExit(main())
