"""Rebuilds bench/blind35/cases from the seed logs: generate the log, cut the reproducer.

    python -m bench.blind35.make_cases [--out bench/blind35/cases]

PLAN names, for each case, the story and seed it comes from and the cut (seconds after the
log's first record; ``coords`` keeps the step records of some (tp_rank, pp_rank) peer groups
only, ``sampled`` the node collectors' rows of some nodes only); tests/test_blind35_cases.py
says what faultline does wrong in each, or which shape it gets right. Built from the freeze
(e308824). F cases are findings (strict xfails), G cases guards.
"""

from __future__ import annotations

import functools
from pathlib import Path

from bench.blind11.make_cases import make
from bench.blind35.cut import cut
from bench.blind35.generate import write

STEP, THERMAL, ECC = "telemetry.step", "telemetry.thermal", "telemetry.ecc"

PLAN: dict[str, tuple] = {
    # numerics seed 0: nm-03/4 (the embedding shard, 8 DP peers) logs a local grad norm
    # x1.18-1.35 its peers' at every step from 253 s; nothing else changes
    "F1-one-kernel-drift-local-norm-missed": ("numerics", 0, dict(
        t_from=0, t_to=560, topics={STEP}, coords={(0, 0)},
        labels={"drift-nm-03-g4"})),
    # numerics seed 0: optimizer state corrupted once at 566 s, spread by the all-gather:
    # every replica's loss x1.25-1.4 and climbing, every norm x3-6, checksums agree
    "F2-all-gather-spread-corruption-missed": ("numerics", 0, dict(
        t_from=450, t_to=900, topics={STEP}, coords={(1, 0), (2, 1)},
        labels={"prop-dense-a"})),
    # corners seed 1: fp8-b's hard samples (one rank's local norm x1.8-2.6 for one step, at
    # random); two land on nc-02/7 within 45 steps
    "F3-hard-samples-escalated": ("corners", 1, dict(
        t_from=0, t_to=200, jobs={"fp8-b"}, topics={STEP}, coords={(1, 0)},
        labels=set())),
    # corners seed 0: nc-03/5 wrong only above 81.5 C (single-step checksum minorities of 16)
    # and nc-02/3 overflowing alone (its norm null, the job skipping)
    "G1-hot-only-checksum-and-sole-overflow-escalated": ("corners", 0, dict(
        t_from=410, t_to=900, jobs={"fp8-b"}, topics={STEP, THERMAL}, coords={(1, 0)},
        sampled={"nc-03"}, labels={"hot-nc-03-g5", "nan-nc-02-g3"})),
    # corners seed 1: nc-07/3 wrong on the first step after an evaluation pause (1 of 4)
    "G2-voltage-corner-after-eval-escalated": ("corners", 1, dict(
        t_from=250, t_to=600, jobs={"fp8-c"}, topics={STEP}, coords={(3, 0)},
        labels={"vmin-nc-07-g3"})),
    # numerics seed 1: nm-02/4's corrected errors doubling every 80-130 s, then XID 48
    "G3-hbm-climb-then-dbe-isolated": ("numerics", 1, dict(
        t_from=100, t_to=700, topics={ECC}, nodes={"nm-02"}, labels={"hbm-nm-02-g4"})),
    # numerics seed 0 before its faults' groups: the LR warm-up, fp16 overflow skips, a bad
    # shard, an attention-logit blow-up, an evaluation pass (three peer groups)
    "G4-routine-numerics-page-nobody": ("numerics", 0, dict(
        t_from=0, t_to=560, topics={STEP}, coords={(1, 0), (2, 1), (3, 1)}, labels=set())),
}


def main(argv: list[str] | None = None) -> int:
    return make(PLAN, functools.cache(write), cut, Path(__file__).parent / "cases", __doc__,
                argv)


if __name__ == "__main__":
    raise SystemExit(main())
