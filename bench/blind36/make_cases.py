"""Rebuilds bench/blind36/cases from the seed logs: generate the log, cut the reproducer.

    python -m bench.blind36.make_cases [--out bench/blind36/cases]

PLAN names, for each case, the story and seed it comes from and the cut (seconds after the
log's first record; ``coords`` keeps the step records of some (tp_rank, pp_rank) peer groups
only, ``sampled`` the node collectors' rows of some nodes only); tests/test_blind36_cases.py
says what faultline does wrong in each, or which shape it gets right. Built from the freeze
(ffcd7d3). F cases are findings (strict xfails), G cases guards.
"""

from __future__ import annotations

import functools
from pathlib import Path

from bench.blind11.make_cases import make
from bench.blind36.cut import cut
from bench.blind36.generate import write

STEP, THERMAL, ECC, NIC = "telemetry.step", "telemetry.thermal", "telemetry.ecc", "telemetry.nic"

PLAN: dict[str, tuple] = {
    # disagg seed 0: da-05/3 (TP rank 1 of engine 2) decodes x1.18-1.30 from 231 s; its 16
    # engines' rounds spread 0.6-2x by their longest answers
    "F1-rollout-gpu-slow-at-decode-missed": ("disagg", 0, dict(
        t_from=0, t_to=900, jobs={"grpo-gen"}, topics={STEP}, coords={(1, 0)},
        labels={"slowgen-da-05-g3"})),
    # hybrid seed 1: hb-01/7's HBM reaches 95 C in long decodes only, 0x40 and 0.72x decode
    # there, from 205 s; training untouched
    "F2-hbm-hot-in-long-decodes-missed": ("hybrid", 1, dict(
        t_from=0, t_to=900, topics={STEP, THERMAL}, coords={(7, 0)}, sampled={"hb-01"},
        labels={"hbmheat-hb-01-g7"})),
    # hybrid seed 1: hb-07/6 capped at 500-560 W from 370 s: 0x4 below the board's limit in
    # training and prefill only, its training x1.15-1.21
    "F3-cap-felt-in-training-only-missed": ("hybrid", 1, dict(
        t_from=0, t_to=900, topics={STEP, THERMAL}, coords={(6, 0)}, sampled={"hb-07"},
        labels={"pcap-hb-07-g6"})),
    # hybrid seed 1: hb-05/0 x1.10-1.16 in both phases from 370 s, nothing in telemetry
    "F4-gpu-slow-in-both-phases-missed": ("hybrid", 1, dict(
        t_from=0, t_to=900, topics={STEP}, coords={(0, 0)}, labels={"slowco-hb-05-g0"})),
    # disagg seed 0: da-07's mlx5_0 errs only under the weight-sync bursts from 400 s
    "G1-nic-erring-under-sync-only-isolated": ("disagg", 0, dict(
        t_from=300, t_to=600, topics={NIC}, nodes={"da-07"},
        labels={"syncnic-da-07-mlx5_0"})),
    # disagg seed 1: XID 94 (contained ECC) on da-08/7 kills its engine mid-round at 624 s
    "G2-xid94-kills-an-engine-isolated": ("disagg", 1, dict(
        t_from=550, t_to=750, topics={ECC}, nodes={"da-08"}, labels={"xid-da-08-g7"})),
    # disagg seed 0: the trainer's and the engines' routine (answer-length spread, hard-prompt
    # batches, longer answers allowed, weight-sync waits, rollout waits, a save)
    "G3-disagg-routine-pages-nobody": ("disagg", 0, dict(
        t_from=0, t_to=900, topics={STEP}, coords={(0, 0)}, labels=set())),
    # hybrid seed 2: a peer group with no fault: answer spread, resampling, longer answers,
    # power swinging 375-700 W (0x4 at the limit in training)
    "G4-hybrid-routine-pages-nobody": ("hybrid", 2, dict(
        t_from=0, t_to=900, topics={STEP, THERMAL}, coords={(3, 0)}, sampled={"hb-03"},
        labels=set())),
}


def main(argv: list[str] | None = None) -> int:
    return make(PLAN, functools.cache(write), cut, Path(__file__).parent / "cases", __doc__,
                argv)


if __name__ == "__main__":
    raise SystemExit(main())
