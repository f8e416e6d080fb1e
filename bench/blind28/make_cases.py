"""Rebuilds bench/blind28/cases from the seed logs: generate the log, cut the reproducer.

    python -m bench.blind28.make_cases [--out bench/blind28/cases]

PLAN names, for each case, the story and seed it comes from and the cut (seconds after the
log's first record); tests/test_blind28_cases.py says what faultline does wrong in each, or
which routine shape it keeps quiet. Built from the freeze 08fada9 and its writer fix 4a43c6d
(compact lines, a port's bytes capped at line rate), no fix since. F cases are findings (strict
xfails), G cases guards.
"""

from __future__ import annotations

import functools
from pathlib import Path

from bench.blind11.make_cases import make
from bench.blind28.cut import cut
from bench.blind28.generate import write

STEP, THERMAL, ECC, NIC = ("telemetry.step", "telemetry.thermal", "telemetry.ecc",
                           "telemetry.nic")


def _n(prefix: str, *idx: int) -> set[str]:
    return {f"{prefix}{i:02d}" for i in idx}


PLAN: dict[str, tuple] = {
    # packed seed 0: on gpu-r07-n02..04 mlx5_2 carries asr-b's GPU 4 and a fine-tune's GPU 5
    # (8 GB/s) while mlx5_0 carries rec-emb and llm-a (14 GB/s, 59 during an upload); isolated
    # at ~348 s as a port with low throughput. Their port rows only
    "F1-light-tenant-port-isolated-as-degraded-nic": ("packed", 0, dict(
        t_from=200, t_to=520, nodes=_n("gpu-r07-n", 2, 3, 4), topics={NIC}, labels=set())),
    # packed seed 2: the same reading on four r08 nodes becomes a leaf alert at ~291 s;
    # gpu-r08-n01 mlx5_1 starts losing symbols at ~304 s and is never paged. r08's port rows
    "F2-false-leaf-alert-hides-a-port-losing-symbols": ("packed", 2, dict(
        t_from=0, t_to=600, nodes=_n("gpu-r08-n", *range(1, 9)), topics={NIC},
        labels={"ber-gpu-r08-n01-mlx5_1"})),
    # packed seed 0: gpu-r08-n05's power supply: 0x80 on all 8 GPUs from ~423 s (four
    # tenants' jobs): the node isolated, and five GPUs beside it. Every rank's steps, that
    # node's thermal rows (gpu-r08-n07 GPU 3's hidden slowdown is a fault too: its label is
    # left out, its page a stray)
    "F3-power-brake-under-four-tenants-isolated-gpu-by-gpu": ("packed", 0, dict(
        t_from=380, t_to=600, topics={STEP, THERMAL}, sampled=_n("gpu-r08-n", 5),
        labels={"brake-gpu-r08-n05"})),
    # packed seed 2: rec-emb's rank on gpu-r07-n06 GPU 0 +9-15 % for 4 steps at ~37 s (the
    # real PAI tail at a 2 % CoV), escalated. rec-emb's steps
    "F4-four-step-noise-excursion-escalated": ("packed", 2, dict(
        t_from=0, t_to=120, topics={STEP}, jobs={"rec-emb"}, labels=set())),
    # packed seed 0: llm-a GPU 1 of gpu-r08-n04 leaves its TP rank's checksum at ~614 s;
    # llm-a's steps on every node but gpu-r08-n05 (its power brake is another fault)
    "G1-checksum-minority-on-a-shared-node": ("packed", 0, dict(
        t_from=580, t_to=700, topics={STEP}, jobs={"llm-a"},
        nodes=_n("gpu-r07-n", *range(1, 9)) | _n("gpu-r08-n", 1, 2, 3, 4, 6, 7, 8),
        labels={"sdc-gpu-r08-n04-g1"})),
    # packed seed 3: gpu-r08-n05 mlx5_1 (llm-a's and asr-b's) losing symbols from ~198 s (its
    # node's light mlx5_3 is isolated too: F1)
    "G2-shared-port-losing-symbols": ("packed", 3, dict(
        t_from=150, t_to=450, nodes=_n("gpu-r08-n", 5), topics={NIC},
        labels={"ber-gpu-r08-n05-mlx5_1"})),
    # packed seed 1: asr-b GPU 3 of gpu-r08-n04 12-18 % slow from ~129 s, nothing in telemetry
    "G3-hidden-slow-gpu-beside-other-tenants": ("packed", 1, dict(
        t_from=80, t_to=400, topics={STEP}, jobs={"asr-b"}, labels={"slow-gpu-r08-n04-g3"})),
    # packed seed 3: rec-emb's checkpoint uploads slow llm-a's all-reduce; both jobs' steps
    "G4-neighbour-checkpoint-upload": ("packed", 3, dict(
        t_from=0, t_to=190, topics={STEP}, jobs={"llm-a", "rec-emb"}, labels=set())),
    # spread seed 0: XID 94 on hgx-a10 GPU 4 at ~474 s, sft-c dies
    "G5-xid94-kills-one-tenants-job": ("spread", 0, dict(
        t_from=440, t_to=600, nodes=_n("hgx-a", 10), topics={ECC, THERMAL},
        labels={"xid94-hgx-a10-g4"})),
    # spread seed 0: hgx-a04 mlx5_1 (pt-7b's and sft-c's) flapping from ~522 s
    "G6-shared-port-flapping": ("spread", 0, dict(
        t_from=480, t_to=800, nodes=_n("hgx-a", 4), topics={NIC},
        labels={"flap-hgx-a04-mlx5_1"})),
    # spread seed 0: hgx-a02's fans failing from ~287 s, 0x20 on its busiest GPUs
    "G7-node-fans-failing-under-three-jobs": ("spread", 0, dict(
        t_from=250, t_to=700, nodes=_n("hgx-a", 2), topics={THERMAL},
        labels={"fan-hgx-a02"})),
    # spread seed 0: ft-new starts at ~311 s on hgx-a05..08, hgx-a07 GPU 6 x1.35-1.45
    "G8-new-jobs-gpu-slow-from-its-first-step": ("spread", 0, dict(
        t_from=290, t_to=500, topics={STEP}, jobs={"ft-new"},
        labels={"straggler-hgx-a07-g6"})),
    # nic38 (round 38): F1 and F2 with the steps of the jobs on those nodes (their layout says
    # which jobs run behind which port: detector/correlate/ports.py). F1's three nodes, every
    # job's steps there; F2's r08 nodes to 420 s, all jobs but asr-b (its hidden slow GPU on
    # gpu-r08-n06 is another fault, its label left out), mlx5_1 of gpu-r08-n01 losing symbols
    "G9-light-tenant-ports-beside-their-jobs-steps": ("packed", 0, dict(
        t_from=200, t_to=520, nodes=_n("gpu-r07-n", 2, 3, 4), topics={NIC, STEP},
        labels=set())),
    "G10-port-losing-symbols-beside-light-tenant-ports": ("packed", 2, dict(
        t_from=0, t_to=420, nodes=_n("gpu-r08-n", *range(1, 9)), topics={NIC, STEP},
        jobs={"rec-emb", "llm-a", "ft-r-00", "ft-r-01", "ft-s-00", "ft-s-01"},
        labels={"ber-gpu-r08-n01-mlx5_1"})),
    # tenant41 (round 41): the GPU-level slow_node/unknown escalations left in tune (seeds 0..3)
    # beside routine shapes, each with its job's steps alone from the log's start (routine all).
    # packed seed 1: a one-step host stall on gpu-r08-n08 at ~250 s slows both of ft-s-01's
    # ranks there (GPUs 5, 6) x2.2 for its steps 9-10, in its warm-up: GPU 6 escalated
    "H1-host-stall-in-a-new-jobs-warm-up": ("packed", 1, dict(
        t_from=0, t_to=300, topics={STEP}, jobs={"ft-s-01"}, labels=set())),
    # packed seed 2: rec-emb's rank on gpu-r08-n05 GPU 0 +11-14 % for 4 steps at ~302 s
    "H2-rec-emb-four-step-excursion": ("packed", 2, dict(
        t_from=0, t_to=340, topics={STEP}, jobs={"rec-emb"}, labels=set())),
    # packed seed 2: ft-r-02's rank on gpu-r08-n02 GPU 5 +5 % for 8 steps at ~805 s
    "H3-fine-tune-eight-step-run": ("packed", 2, dict(
        t_from=0, t_to=880, topics={STEP}, jobs={"ft-r-02"}, labels=set())),
    # packed seed 2: gpu-r07-n01's power supply (0x80 from ~516 s, paged power at its node at
    # ~520 s): a brake episode at ~868 s slows ft-p-02's two ranks there x1.9 and its GPU 6 is
    # escalated unknown. ft-p-02's and rec-emb's steps, that node's thermal rows
    "H4-brake-episode-under-a-new-fine-tune": ("packed", 2, dict(
        t_from=480, t_to=905, topics={STEP, THERMAL}, jobs={"ft-p-02", "rec-emb"},
        sampled=_n("gpu-r07-n", 1), labels={"brake-gpu-r07-n01"})),
    # packed seed 3: ft-q-01's rank on gpu-r07-n06 GPU 6 +5 % for 10 steps at ~630 s
    "H5-fine-tune-ten-step-run": ("packed", 3, dict(
        t_from=0, t_to=660, topics={STEP}, jobs={"ft-q-01"}, labels=set())),
    # spread seed 2: dpo-s's rank on hgx-a01 GPU 5 +11 % for 4 steps at ~690 s
    "H6-dpo-four-step-excursion": ("spread", 2, dict(
        t_from=0, t_to=720, topics={STEP}, jobs={"dpo-s"}, labels=set())),
    # spread seed 2: ft-new's rank on hgx-a08 GPU 6 +11 % for 4 steps at ~720 s (its hgx-a05
    # GPU 5 slow from its first step is a fault: caught)
    "H7-fine-tune-four-step-excursion": ("spread", 2, dict(
        t_from=0, t_to=750, topics={STEP}, jobs={"ft-new"}, labels={"straggler-hgx-a05-g5"})),
    # spread seed 3: ft-n-00's rank on hgx-a09 GPU 6 +3.6 % over 27 steps at ~245-275 s
    "H8-fine-tune-long-shallow-run": ("spread", 3, dict(
        t_from=0, t_to=340, topics={STEP}, jobs={"ft-n-00"}, labels=set())),
}


def only(names: list[str], out: Path | None = None) -> None:
    """Rebuild only ``names`` (a quicker loop while a case's cut is being chosen)."""
    out = out or Path(__file__).parent / "cases"
    make({n: PLAN[n] for n in names}, functools.cache(write), cut, out, __doc__, [
        "--out", str(out)])


def main(argv: list[str] | None = None) -> int:
    return make(PLAN, functools.cache(write), cut, Path(__file__).parent / "cases", __doc__,
                argv)


if __name__ == "__main__":
    raise SystemExit(main())
