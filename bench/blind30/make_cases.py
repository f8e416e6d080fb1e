"""Rebuilds bench/blind30/cases from the seed logs: generate the log, cut the reproducer.

    python -m bench.blind30.make_cases [--out bench/blind30/cases]

PLAN names, for each case, the story and seed it comes from and the cut (seconds after the
log's first record); tests/test_blind30_cases.py says what faultline does wrong in each, or
which routine shape it keeps quiet. Built from the freeze (a4fa5ac), no generator change since.
F cases are findings (strict xfails), G cases guards.
"""

from __future__ import annotations

import functools
from pathlib import Path

from bench.blind11.make_cases import make
from bench.blind30.cut import cut
from bench.blind30.generate import write

STEP, THERMAL, ECC, NIC = ("telemetry.step", "telemetry.thermal", "telemetry.ecc",
                           "telemetry.nic")
ROLL = [f"r-{i:02d}" for i in range(1, 13)]
LM_A = [f"c-{i:02d}" for i in range(1, 9)]
LM_B = [f"c-{i:02d}" for i in range(9, 13)]

PLAN: dict[str, tuple] = {
    # rolling seed 0: XID 94 on r-08 GPU 3 at ~646 s (an old-driver node): isolated
    # hardware/gpu_memory at once on the XID (its event row carries no `cluster`), and again
    # 24 s later on the DBE counters (rows with cluster `rollout`): two dedup keys. r-08's ECC
    "F1-xid94-paged-twice-cluster-on-its-rows-not-on-the-event": ("rolling", 0, dict(
        t_from=620, t_to=720, nodes={"r-08"}, topics={ECC}, labels={"xid94-r-08-g3"})),
    # canary seed 0: XID 119 (GSP) on c-09 GPU 6 at ~637 s, new driver: isolated on the XID,
    # again 9 s later on `recovery_action` gpu_reset. c-09's ECC
    "F1b-xid119-paged-twice-on-the-recovery-action": ("canary", 0, dict(
        t_from=610, t_to=700, nodes={"c-09"}, topics={ECC}, labels={"xid119-c-09-g6"})),
    # rolling seed 0: a firmware tool's clock lock on r-09 (every GPU 1,200 MHz busy, no reason
    # bit); the job lands on it at its restart (~466 s): escalated slow_node/unknown at the
    # node at ~487 s. llm-ft's steps, r-09's and r-03's thermal rows
    "F2-node-clock-lock-escalated-unknown": ("rolling", 0, dict(
        t_from=440, t_to=600, topics={STEP, THERMAL}, sampled={"r-09", "r-03"},
        labels={"lock-r-09"})),
    # canary seed 2: the canary cohort c-07/c-08 (busy clock 1,830-1,860 MHz by policy, no
    # reason bit, 2.5-3.5 % slower compute) escalated slow_node/unknown at ~45 s and ~114 s.
    # lm-a's steps and thermal rows
    "F3-canary-clock-policy-escalated": ("canary", 2, dict(
        t_from=0, t_to=200, nodes=set(LM_A), topics={STEP, THERMAL}, labels=set())),
    # canary seed 1: lm-b (pure DP, 32 ranks, PAI noise at 1.5-2 %) c-11 GPU 4 6 % over its
    # peers for 8 steps, escalated slow_node/unknown at ~81 s. lm-b's steps
    "F4-pure-dp-noise-run-escalated": ("canary", 1, dict(
        t_from=0, t_to=150, nodes=set(LM_B), topics={STEP}, labels=set())),
    # canary seed 7 (held; esc42, round 42): c-12 GPU 1 12-18 % slow from ~264 s, nothing in
    # telemetry (pure DP), escalated at its GPU at ~272 s; lm-b restarted cold at ~754 s (an
    # XID on c-10), GPU 1's rank slow again from the first steps and GPU 3's 4-step noise run
    # (x1.05-1.08, steps 757-760 s) beside it: node c-12 escalated at ~763 s -- a second page
    # for GPU 1's one fault.  lm-b's steps on c-09..c-12
    "F5-paged-gpus-node-escalated-at-the-restart": ("canary", 7, dict(
        t_from=200, t_to=850, nodes=set(LM_B), jobs={"lm-b"}, topics={STEP},
        labels={"slow-c-12-g1"})),
    # rolling seed 0: r-11 back from its upgrade (~150 s) with mlx5_7 at 200 Gb/s losing
    # symbols, idle: isolated network/nic at ~167 s
    "G1-port-retrained-at-half-rate-after-the-reboot": ("rolling", 0, dict(
        t_from=100, t_to=300, nodes={"r-11"}, topics={NIC}, labels={"rate-r-11-mlx5_7"})),
    # canary seed 0: c-11 GPU 6 14 % slow from ~220 s, nothing in telemetry (pure DP)
    "G2-hidden-slow-gpu-in-pure-dp": ("canary", 0, dict(
        t_from=150, t_to=400, nodes=set(LM_B), topics={STEP}, labels={"slow-c-11-g6"})),
    # canary seed 0: c-01 GPU 7's cold plate failing from ~221 s, 0x20 at 88 C
    "G3-hot-gpu-under-a-mixed-cohort-job": ("canary", 0, dict(
        t_from=180, t_to=420, nodes=set(LM_A), topics={STEP, THERMAL},
        labels={"hot-c-01-g7"})),
    # canary seed 0: c-08 GPU 5's checksum leaves its 7 peers at ~422 s (lm-a's tp_rank 5)
    "G4-checksum-minority-on-a-canary-gpu": ("canary", 0, dict(
        t_from=400, t_to=470, jobs={"lm-a"}, topics={STEP}, coords={(5, 0)},
        labels={"sdc-c-08-g5"})),
    # rolling seed 0: spares r-09, r-10, r-12 dark 60-110 s for their upgrade, back on the new
    # driver (idle clock 210 MHz, power averaged, recovery_action) with every counter at 0
    "G5-spares-dark-and-back-on-the-new-driver": ("rolling", 0, dict(
        t_from=0, t_to=330, nodes={"r-09", "r-10", "r-12"}, labels=set())),
    # rolling seed 0: a one-step loader stall (r-08, ~333 s), the planned stop (~378 s), r-01
    # and r-02 dark for their upgrade; every node but r-11 (its port is a fault)
    "G6-planned-stop-and-upgrades": ("rolling", 0, dict(
        t_from=320, t_to=462, nodes=set(ROLL) - {"r-11"}, labels=set())),
}


def main(argv: list[str] | None = None) -> int:
    return make(PLAN, functools.cache(write), cut, Path(__file__).parent / "cases", __doc__,
                argv)


if __name__ == "__main__":
    raise SystemExit(main())
