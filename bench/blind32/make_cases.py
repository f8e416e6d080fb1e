"""Rebuilds bench/blind32/cases from the seed logs: generate the log, cut the reproducer.

    python -m bench.blind32.make_cases [--out bench/blind32/cases]

PLAN names, for each case, the story and seed it comes from and the cut (seconds after the
log's first record); tests/test_blind32_cases.py says what faultline does wrong in each, or
which routine shape it keeps quiet. Built from the freeze (423cb36), no generator change since.
F cases are findings (strict xfails), G cases guards.
"""

from __future__ import annotations

import functools
from pathlib import Path

from bench.blind11.make_cases import make
from bench.blind32.cut import cut
from bench.blind32.generate import write

STEP, THERMAL, ECC, NIC = ("telemetry.step", "telemetry.thermal", "telemetry.ecc",
                           "telemetry.nic")


def _stages(*pp: int) -> set[tuple[int, int]]:
    """Every TP rank's peer group of the pipeline stages ``pp``."""
    return {(tp, p) for tp in range(8) for p in pp}


PLAN: dict[str, tuple] = {
    # zb seed 0: z-08 GPU 3's power limit left at ~460 W from ~168 s (0x4 on every row, clock
    # -10 %, its TP group x1.12 over its stage peers): escalated slow_node/unknown at ~181 s.
    # Stage 3's steps, and its nodes' DCGM rows
    "F1-power-limit-left-low-escalated-unknown": ("zb", 0, dict(
        t_from=100, t_to=330, topics={STEP, THERMAL}, coords=_stages(3),
        sampled={"z-04", "z-08", "z-12"},
        labels={"cap-z-08-g3"})),
    # selfheal seed 7 (held): h-07's real PAI noise runs ~4 % over its stage peers for 7
    # steps around ~160-179 s (no fault; a snapshot, the replication and h-07's persist turn
    # near it): escalated slow_node/unknown at the node. llm-pt's steps before h-05's fault
    "F2-real-noise-excursion-escalated": ("selfheal", 7, dict(
        t_from=0, t_to=205, topics={STEP}, labels=set())),
    # zb seed 3: two of the three last-stage replicas go slow 10 s apart (z-04 GPU 3 x1.07-1.10
    # at ~239 s, z-12 GPU 7's power limit at ~248 s): neither is paged (the median of three is
    # a slow one). Steps, and the stage-3 nodes' DCGM rows
    "F3-two-of-three-stage-peers-slow-never-paged": ("zb", 3, dict(
        t_from=150, t_to=450, topics={STEP, THERMAL}, sampled={"z-04", "z-08", "z-12"},
        labels={"cap-z-12-g7", "slow-z-04-g3"})),
    # zb seed 5 (held): replica 1 holds z-07's power limit (stage 2, from ~155 s) and, from
    # ~348 s, z-08 GPU 6 x1.07-1.10 (stage 3): the second is escalated as replica dp_rank 1,
    # not its node (a miss and a false positive). Stages 2-3's steps, their DCGM rows
    "F4-second-slow-node-of-a-replica-paged-as-the-replica": ("zb", 5, dict(
        t_from=100, t_to=450, topics={STEP, THERMAL}, coords=_stages(2, 3),
        sampled={"z-03", "z-07", "z-08", "z-11"}, labels={"cap-z-07-g6", "slow-z-08-g6"})),
    # zb seed 7 (held): z-08 GPU 1 (stage 3, the slowest stage) x1.07-1.10 from ~403 s, near
    # the context extension: escalated at ~509 s (~30 steps). Stage 3's steps
    "F5-slowest-stage-slow-gpu-paged-after-100-s": ("zb", 7, dict(
        t_from=330, t_to=560, topics={STEP}, coords=_stages(3), labels={"slow-z-08-g1"})),
    # selfheal seed 0: h-08 GPU 6 falls off the bus at ~414 s (XID 79), the job hangs ~43 s,
    # restarts in process on the spare h-09 and re-runs steps; h-09 GPU 4 runs hot under the
    # load (0x20 at 88 C). Not h-02 and h-05 (their slow GPU and port)
    "G1-gpu-off-the-bus-restart-on-a-spare-that-runs-hot": ("selfheal", 0, dict(
        t_from=380, t_to=600,
        nodes={"h-01", "h-03", "h-04", "h-06", "h-07", "h-08", "h-09", "h-10"},
        labels={"xid79-h-08-g6", "hot-h-09-g4"})),
    # selfheal seed 1: the first 255 s -- a snapshot, the persist rotation node after node,
    # the replication bursts, the spares' burn-ins: quiet
    "G2-snapshot-persist-replication-burnins-quiet": ("selfheal", 1, dict(
        t_from=0, t_to=255, labels=set())),
    # selfheal seed 3: h-02 mlx5_3 flaps at ~269 s and comes back at 200 Gb/s. Its port rows
    "G3-port-back-at-half-rate": ("selfheal", 3, dict(
        t_from=230, t_to=330, nodes={"h-02"}, topics={NIC}, labels={"nic-h-02-mlx5_3"})),
    # zb seed 2: the context extension at ~326 s (one step +18-28 s in neither, then every rank
    # x1.55-1.75) and a save at ~400 s: quiet. Not z-01 (its power limit)
    "G4-context-extension-and-a-save-quiet": ("zb", 2, dict(
        t_from=280, t_to=470, nodes={f"z-{i:02d}" for i in range(2, 13)}, labels=set())),
    # zb seed 0: z-02 GPU 1's checksum leaves its two replicas' at ~718 s. Its peer group
    "G5-checksum-one-against-two": ("zb", 0, dict(
        t_from=690, t_to=760, topics={STEP}, coords={(1, 1)}, labels={"sdc-z-02-g1"})),
    # zb seed 1: z-02 GPU 6's SBE creep from ~539 s to XID 92 and a row remap. Its ECC rows
    "G6-sbe-creep-to-xid-92": ("zb", 1, dict(
        t_from=500, t_to=800, nodes={"z-02"}, topics={ECC}, labels={"sbe-z-02-g6"})),
    # selfheal seed 0: h-02 GPU 5 x1.09-1.13 from ~155 s among snapshots and persist turns
    "G7-hidden-slow-gpu-in-a-healing-job": ("selfheal", 0, dict(
        t_from=60, t_to=260, topics={STEP}, labels={"slow-h-02-g5"})),
}


def main(argv: list[str] | None = None) -> int:
    return make(PLAN, functools.cache(write), cut, Path(__file__).parent / "cases", __doc__,
                argv)


if __name__ == "__main__":
    raise SystemExit(main())
