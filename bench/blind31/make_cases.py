"""Rebuilds bench/blind31/cases from the seed logs: generate the log, cut the reproducer.

    python -m bench.blind31.make_cases [--out bench/blind31/cases]

PLAN names, for each case, the story and seed it comes from and the cut (seconds after the
log's first record); tests/test_blind31_cases.py says what faultline does wrong in each, or
which routine shape it keeps quiet. Built from the freeze (82d8f0f), no generator change since.
F cases are findings (strict xfails), G cases guards.
"""

from __future__ import annotations

import functools
from pathlib import Path

from bench.blind11.make_cases import make
from bench.blind31.cut import cut
from bench.blind31.generate import write

STEP, THERMAL, ECC, NIC = ("telemetry.step", "telemetry.thermal", "telemetry.ecc",
                           "telemetry.nic")
QUIET0 = {"d-01", "d-03", "d-05", "d-06"}   # diffusion seed 0: no hot GPU, no brake

PLAN: dict[str, tuple] = {
    # vlm seed 0: replica 3's stage-0 node v-07 draws video-heavy batches (its compute up to
    # x1.23 of its 3 stage peers, x1.07 over an 18-step run; every replica has such runs):
    # escalated slow_node/unknown at the node at ~143 s. vlm-pt's steps
    "F1-data-mix-swing-escalated": ("vlm", 0, dict(
        t_from=0, t_to=200, jobs={"vlm-pt"}, topics={STEP}, labels=set())),
    # vlm seed 0: v-06's host starves its loader from ~481 s (every rank of the node 0.35-0.6 s
    # more in neither a step, ~25 % of the step; the job waits): escalated only at ~722 s
    # (host_late after 90 steps, 242 s). vlm-pt's steps
    "F2-starved-loader-paged-after-240-s": ("vlm", 0, dict(
        t_from=300, t_to=760, jobs={"vlm-pt"}, topics={STEP}, labels={"loader-v-06"})),
    # vlm seed 2: v-06 GPU 6 (stage 1) computes x(1.05 + 0.1 v), ~6-7 %, from ~230 s, its TP
    # group waiting for it: never paged (the cut ends before v-02's loader fault). vlm-pt's
    # steps
    "F3-stage1-memory-bound-slow-gpu-never-paged": ("vlm", 2, dict(
        t_from=0, t_to=430, jobs={"vlm-pt"}, topics={STEP}, labels={"hbm-v-06-g6"})),
    # vlm seed 4 (held): v-07 escalated for a data-mix run at ~354 s, never resolved; its
    # host starves its loader from ~456 s: no page (the node's problem already firing under
    # the same dedup key). vlm-pt's steps
    "F4-real-fault-masked-by-a-firing-swing-escalation": ("vlm", 4, dict(
        t_from=0, t_to=900, jobs={"vlm-pt"}, topics={STEP}, labels={"loader-v-07"})),
    # diffusion seed 5 (held): d-03's power brake from ~432 s: escalated slow_node/unknown at
    # ~445 s, isolated slow_node/power 2 s later (two dedup keys, the first catch unknown).
    # Not d-05 (its hot GPU)
    "F5-brake-escalated-unknown-before-its-power-page": ("diffusion", 5, dict(
        t_from=380, t_to=500, nodes={"d-01", "d-02", "d-03", "d-04", "d-06"},
        topics={STEP, THERMAL}, sampled={"d-03", "d-04"},
        labels={"brake-d-03"})),
    # vlm seed 1: v-01 GPU 6 (stage 0) x(1.05 + 0.3 v) from ~241 s: escalated at its node 28 s
    # later. vlm-pt's steps
    "G1-stage0-memory-bound-slow-gpu": ("vlm", 1, dict(
        t_from=120, t_to=400, jobs={"vlm-pt"}, topics={STEP}, labels={"hbm-v-01-g6"})),
    # vlm seed 1: the first 235 s -- data-mix swings, the vision stage, a save at ~222 s: quiet
    "G2-data-mix-swings-and-a-save-quiet": ("vlm", 1, dict(
        t_from=0, t_to=235, jobs={"vlm-pt"}, topics={STEP}, labels=set())),
    # vlm seed 0: XID 74 on v-04 GPU 0 at ~668 s, CRC errors climbing. v-04's ECC rows
    "G3-nvlink-errors-in-a-tp-group": ("vlm", 0, dict(
        t_from=630, t_to=760, nodes={"v-04"}, topics={ECC}, labels={"nvl-v-04-g0"})),
    # vlm seed 0 (trace45, round 45): the same NVLink errors with the job's steps from its
    # start -- v-04's TP group (stage 1) waits for GPU 0, every rank x1.07-1.10 together, under
    # the job's wander and PAI noise's fleet bar -- and v-01 GPU 5's memory-bound slowdown
    # from ~236 s. vlm-pt's steps, v-04's ECC rows
    "G9-nvlink-tp-group-under-the-fleet-bar": ("vlm", 0, dict(
        t_from=0, t_to=700, jobs={"vlm-pt"}, topics={STEP, ECC}, sampled={"v-04"},
        labels={"nvl-v-04-g0", "hbm-v-01-g5"})),
    # diffusion seed 0: d-04 GPU 7's paste pumped out at ~157 s: 88 C and 0x20 on heavy buckets
    "G4-cold-plate-holding-only-on-heavy-buckets": ("diffusion", 0, dict(
        t_from=100, t_to=300, topics={STEP, THERMAL}, sampled={"d-04", "d-05"},
        labels={"hot-d-04-g7"})),
    # diffusion seed 0: d-02's power brake (0x80) on the 512px+ buckets from ~409 s (not d-04:
    # its hot GPU)
    "G5-psu-brake-only-on-heavy-buckets": ("diffusion", 0, dict(
        t_from=360, t_to=480, nodes=QUIET0 | {"d-02"}, topics={STEP, THERMAL},
        sampled={"d-02", "d-03"},
        labels={"brake-d-02"})),
    # diffusion seed 0: d-06 mlx5_6's symbol errors creeping from ~528 s, then flaps (not
    # d-02, d-04: their brake and hot GPU)
    "G6-creeping-optic-then-flaps": ("diffusion", 0, dict(
        t_from=480, t_to=700, nodes=QUIET0, topics={STEP, NIC}, sampled={"d-06"},
        labels={"ber-d-06-mlx5_6"})),
    # diffusion seed 0: d-03 GPU 0's checksum leaves the other 47 at ~773 s (pure DP)
    "G7-checksum-minority-in-pure-dp": ("diffusion", 0, dict(
        t_from=740, t_to=820, nodes=QUIET0, topics={STEP}, labels={"sdc-d-03-g0"})),
    # diffusion seed 0: d-01 and d-05 (no fault) all log -- bucket swings 0.45-3x, 0x4 on 40 %
    # of steps, rank 0's previews (6-11 s in neither), saves
    "G8-buckets-previews-and-power-cap-quiet": ("diffusion", 0, dict(
        t_from=0, t_to=900, nodes={"d-01", "d-05"}, labels=set())),
}


def main(argv: list[str] | None = None) -> int:
    return make(PLAN, functools.cache(write), cut, Path(__file__).parent / "cases", __doc__,
                argv)


if __name__ == "__main__":
    raise SystemExit(main())
