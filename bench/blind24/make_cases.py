"""Rebuilds bench/blind24/cases from the seed logs: generate the log, cut the reproducer.

    python -m bench.blind24.make_cases [--out bench/blind24/cases]

PLAN names, for each case, the story and seed it comes from and the cut (seconds after the
log's first record); tests/test_blind24_cases.py says what faultline does wrong in each, or
which routine shape it keeps quiet. Built from 247603e (the freeze ca4e355 with the noise fix).
P1, E1, N1 and T1 are findings (strict xfails), the G cases guards.
"""

from __future__ import annotations

import functools
from pathlib import Path

from bench.blind11.make_cases import make
from bench.blind24.cut import cut
from bench.blind24.generate import write

STEP, THERMAL = "telemetry.step", "telemetry.thermal"
PT = {f"hx-{i:02d}" for i in range(12)}
ELASTIC = {f"hx-{i:02d}" for i in range(12, 16)}
BIG = {f"gn{i:03d}" for i in range(1, 9)}

PLAN: dict[str, tuple] = {
    # drift seed 0: hx-05 GPU 7's draw creeping up from ~348 s, at its 700 W cap (0x4) with its
    # clock giving way; pt-dense's tp_rank 3 (its 24 peers) and hx-05's DCGM samples
    "P1-power-capped-drift-escalated-unknown": ("drift", 0, dict(
        t_from=300, t_to=1000, nodes=PT, jobs={"pt-dense"}, topics={STEP, THERMAL},
        labels={"leak-hx-05-g7"}, coords={(3, 0)}, sampled={"hx-05"})),
    # drift seed 0: hx-13 rejoins ft-elastic at ~750 s as ranks 24-31, its first four steps
    # cold (x2.6, 1.7, 1.25, 1.1). No fault
    "E1-elastic-rejoin-cold-steps-escalated": ("drift", 0, dict(
        t_from=640, t_to=800, nodes=ELASTIC, jobs={"ft-elastic"}, topics={STEP}, labels=set())),
    # churn seed 2: hp-012, a one-node sweep job from ~543 s; a healthy rank's PAI residual run
    # (4 steps at +4 %) ~125 steps in. No fault
    "N1-sweep-young-job-noise-run-escalated": ("churn", 2, dict(
        t_from=530, t_to=700, jobs={"hp-012"}, topics={STEP}, labels=set())),
    # churn seed 5 (held): gn018 GPU 2's die heating too fast from ~345 s: 0x20 in 8 of its 25
    # 30 s samples after that, its clock cut to 810-1350 MHz, up to 22 C over its 7 mates
    "T1-inference-gpu-throttling-in-bursts-never-paged": ("churn", 5, dict(
        t_from=300, t_to=1080, nodes={"gn018"}, topics={THERMAL}, labels={"tim-gn018-g2"})),
    # drift seed 0: ft-elastic loses hx-13 at ~399 s (a 20-45 s re-rendezvous), hx-14/15's GPUs
    # renumbered, every rank's share x32/24 until ~730 s
    "G1-elastic-shrink-ranks-renumbered": ("drift", 0, dict(
        t_from=300, t_to=720, nodes=ELASTIC, jobs={"ft-elastic"}, topics={STEP},
        labels=set())),
    # churn seed 1: gn003's clock stepped 4.0 s back at ~274 s and forward at ~493 s while its
    # GPU 4 computes wrong now and then (from ~271 s); pt-big's (tp 0, pp 0) peers
    "G2-ntp-step-on-the-sdc-node-blinds-nothing": ("churn", 1, dict(
        t_from=200, t_to=520, nodes=BIG, jobs={"pt-big"}, topics={STEP},
        labels={"sdc-gn003-g4"}, coords={(0, 0)})),
    # drift seed 0: a bad batch on every replica at ~792 s (loss x3-6, grad-norm x8-30 on every
    # rank, checksums agree); pt-dense's tp_rank 1 (no fault in that peer group)
    "G3-bad-batch-on-every-replica": ("drift", 0, dict(
        t_from=740, t_to=840, nodes=PT, jobs={"pt-dense"}, topics={STEP}, labels=set(),
        coords={(1, 0)})),
    # churn seed 0: two healthy inference servers' bursts (0x4 at their peaks), the whole log
    "G4-inference-bursts-at-the-cap": ("churn", 0, dict(
        t_from=0, t_to=1080, nodes={"gn017", "gn019"}, topics={THERMAL}, labels=set())),
    # churn seed 0: gn011 GPU 3's hot HBM under hp-008 and then hp-013 (cool between)
    "G5-hot-hbm-under-each-sweep-job": ("churn", 0, dict(
        t_from=120, t_to=880, nodes={"gn011"}, topics={STEP, THERMAL},
        labels={"hbm-gn011-g3"})),
    # drift seed 0: hx-01 GPU 4's compute drifting up from ~268 s, nothing in its telemetry;
    # pt-dense's tp_rank 0
    "G6-reasonless-drift-escalated-at-its-gpu": ("drift", 0, dict(
        t_from=200, t_to=620, nodes=PT, jobs={"pt-dense"}, topics={STEP, THERMAL},
        labels={"age-hx-01-g4"}, coords={(0, 0)}, sampled={"hx-01"})),
    # drift seed 1: hx-11 GPU 1 wrong every 50-150 steps from ~315 s; pt-dense's tp_rank 1
    "G7-intermittent-sdc-caught-at-its-first-hit": ("drift", 1, dict(
        t_from=250, t_to=700, nodes=PT, jobs={"pt-dense"}, topics={STEP},
        labels={"sdc-hx-11-g1"}, coords={(1, 0)})),
    # churn seed 0: gn018 GPU 3's die heating too fast from ~350 s, 0x20 / 0x40 in its bursts,
    # gn018's clock stepped 2.6 s back by NTP at ~331 s and forward at ~562 s
    "G8-inference-gpu-throttling-in-bursts": ("churn", 0, dict(
        t_from=300, t_to=800, nodes={"gn018"}, topics={THERMAL}, labels={"tim-gn018-g3"})),
}


def main(argv: list[str] | None = None) -> int:
    return make(PLAN, functools.cache(write), cut, Path(__file__).parent / "cases", __doc__,
                argv)


if __name__ == "__main__":
    raise SystemExit(main())
