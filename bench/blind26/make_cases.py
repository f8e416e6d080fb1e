"""Rebuilds bench/blind26/cases from the seed logs: generate the log, cut the reproducer.

    python -m bench.blind26.make_cases [--out bench/blind26/cases]

PLAN names, for each case, the story and seed it comes from and the cut (seconds after the
log's first record); tests/test_blind26_cases.py says what faultline does wrong in each, or
which routine shape it keeps quiet. Built from the freeze 3d04f7d (no fix since). F1 is a
finding (a strict xfail), the G cases guards.
"""

from __future__ import annotations

import functools
from pathlib import Path

from bench.blind11.make_cases import make
from bench.blind26.cut import cut
from bench.blind26.generate import write

STEP, THERMAL, ECC, NIC = ("telemetry.step", "telemetry.thermal", "telemetry.ecc",
                           "telemetry.nic")
DCGM = {THERMAL, ECC}


def _gpus(a: int, b: int) -> set[str]:
    return {f"gpu-{i:04d}" for i in range(a, b)}


def _hgx(a: int, b: int) -> set[str]:
    return {f"hgx-{i:03d}" for i in range(a, b)}


PLAN: dict[str, tuple] = {
    # pretrain seed 0: the rolling dcgm-exporter upgrade (64 nodes a wave every 45 s from
    # ~123 s, each node's DCGM rows missing 35-70 s) runs into the synchronous checkpoint at
    # 331-375 s; gpu-0064..0127 (stage 0), every topic, tp_rank 0's steps
    "F1-rolling-exporter-upgrade-across-a-checkpoint-pages-silent-nodes": ("pretrain", 0, dict(
        t_from=0, t_to=420, nodes=_gpus(64, 128), coords={(0, 0)}, labels=set())),
    # pretrain seed 0: gpu-0188 GPU 6's thermal interface degrading from ~248 s, SW thermal
    # slowdown (0x20) from ~378 s; stage 1's tp_rank 6 and gpu-0188's thermal rows
    "G1-thermal-interface-gpu-at-0x20-caught-at-its-gpu": ("pretrain", 0, dict(
        t_from=200, t_to=500, nodes=_gpus(128, 256), coords={(6, 1)}, topics={STEP, THERMAL},
        labels={"hot-gpu-0188-g6"}, sampled={"gpu-0188"})),
    # pretrain seed 0: rail1-leaf15 failing from ~408 s (rcv_errors, xmit_wait on its 32
    # ports); the port rows of leaves 14 and 15
    "G2-failing-rail-leaf-one-switch-alert": ("pretrain", 0, dict(
        t_from=360, t_to=560, nodes=_gpus(448, 512), topics={NIC},
        labels={"leaf-rail1-leaf15"})),
    # pretrain seed 0: XID 48 on gpu-0051 GPU 0 at ~570 s, 4,096 ranks silent until the
    # restart at ~779 s on a spare; stage 0's tp_rank 0 and gpu-0051's DCGM rows
    "G3-xid48-crash-and-restart-on-a-spare": ("pretrain", 0, dict(
        t_from=520, t_to=900, nodes=_gpus(0, 128) | {"gpu-0533"}, coords={(0, 0)},
        topics={STEP} | DCGM, labels={"dbe-gpu-0051-g0"}, sampled={"gpu-0051"})),
    # pretrain seed 0: gpu-0250 GPU 7's checksum diverges from ~129 s; its 128 DP peers
    "G4-sdc-one-rank-of-128-dp-peers": ("pretrain", 0, dict(
        t_from=60, t_to=260, nodes=_gpus(128, 256), coords={(7, 1)}, topics={STEP},
        labels={"sdc-gpu-0250-g7"})),
    # tenants seed 0: hgx-345 loses a PSU at ~456 s (0x80 on its 8 GPUs); ft-11's steps and
    # its nodes' thermal rows
    "G5-psu-lost-power-brake-on-a-node": ("tenants", 0, dict(
        t_from=380, t_to=600, nodes=_hgx(344, 352), jobs={"ft-11"}, topics={STEP, THERMAL},
        labels={"psu-hgx-345"})),
    # tenants seed 0: hgx-224 mlx5_6's optic failing from ~219 s; hgx-224..231's ports
    "G6-roce-optic-failing-at-its-port": ("tenants", 0, dict(
        t_from=180, t_to=420, nodes=_hgx(224, 232), topics={NIC},
        labels={"nic-hgx-224-mlx5_6"})),
    # tenants seed 0: hgx-039 GPU 2's corrected errors climbing from ~544 s, XID 92 at ~712 s
    "G7-sbe-storm-then-xid92": ("tenants", 0, dict(
        t_from=500, t_to=900, nodes={"hgx-039"}, topics={ECC},
        labels={"sbe-hgx-039-g2"})),
    # tenants seed 0: the same storm with the two polls before it (sbe36, round 36): the
    # climb 27 -> 66 -> 87 a minute, paged at its third poll (120 s), XID 92 at 168 s
    "G13-sbe-climb-paged-at-its-third-poll": ("tenants", 0, dict(
        t_from=420, t_to=900, nodes={"hgx-039"}, topics={ECC},
        labels={"sbe-hgx-039-g2"})),
    # tenants seed 0: hgx-393 GPU 0 at HW slowdown (0x8) from sw-21's first step (~500 s)
    "G8-hw-slowdown-from-a-short-jobs-first-step": ("tenants", 0, dict(
        t_from=460, t_to=700, nodes=_hgx(392, 396), topics={STEP, THERMAL},
        labels={"hwslow-hgx-393-g0"})),
    # tenants seed 0: another tenant's storage burst congests leaves 08-09 at ~321-529 s
    # (CNPs, xmit_wait; ft-00..07 slower together); ft-00 and ft-01 with their ports
    "G9-incast-cnps-and-slower-comm": ("tenants", 0, dict(
        t_from=260, t_to=600, nodes=_hgx(256, 272), jobs={"ft-00", "ft-01"},
        topics={STEP, NIC}, labels=set())),
    # tenants seed 0: short jobs coming and going on slots 4-7 (cold starts, new tenants)
    "G10-short-jobs-cold-starts-and-churn": ("tenants", 0, dict(
        t_from=0, t_to=600, nodes=_hgx(400, 416), topics={STEP, THERMAL}, labels=set())),
    # pretrain seed 0: a row's inlet +3.5-5.5 C from ~483 s (racks 34-67); 16 of its nodes
    "G11-row-inlet-warming": ("pretrain", 0, dict(
        t_from=440, t_to=900, nodes=_gpus(136, 152), topics={THERMAL}, labels=set())),
    # pretrain seed 0: GC pauses, host stalls, the stage imbalance and the checkpoint at
    # 331-375 s; stage 0's tp_rank 0 (128 ranks), steps only
    "G12-gc-pauses-host-stalls-and-a-checkpoint": ("pretrain", 0, dict(
        t_from=0, t_to=520, nodes=_gpus(0, 128), coords={(0, 0)}, topics={STEP},
        labels=set())),
}


def main(argv: list[str] | None = None) -> int:
    return make(PLAN, functools.cache(write), cut, Path(__file__).parent / "cases", __doc__,
                argv)


if __name__ == "__main__":
    raise SystemExit(main())
