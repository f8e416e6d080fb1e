"""Rebuilds bench/blind19/cases from the seed logs: generate the log, cut the reproducer.

    python -m bench.blind19.make_cases [--out bench/blind19/cases]

PLAN names, for each case, the story and seed it comes from and the cut (seconds after the
log's first record); tests/test_blind19_cases.py says what faultline does wrong in each.
"""

from __future__ import annotations

from pathlib import Path

from bench.blind11.make_cases import make
from bench.blind19.cut import cut
from bench.blind19.generate import write

PLAN: dict[str, tuple] = {
    # ops seed 0: ft-o is told to stop at ~343 s (a save, then exit); op08, drained, goes dark
    # for its driver upgrade 369-470 s; ft-o is requeued on op05-07 + op09 at ~419 s. No fault.
    "O1-drained-node-rebooted-paged-silent": ("ops", 0, dict(
        t_from=250, t_to=500, nodes={"op05", "op06", "op07", "op08"}, labels=set())),
    # ops seed 3: op08 under dcgmi diag -r 3 (532-784 s, no job); GPU 4 at 0x8 from 569 s,
    # clock ~1230 MHz against its siblings' ~1850 (x0.66), power ~480 W
    "O2-diag-hw-slowdown-unraised": ("ops", 3, dict(
        t_from=480, t_to=800, nodes={"op08"}, topics={"telemetry.thermal", "telemetry.ecc"},
        labels={"diag-hw-slowdown"})),
    # replicas seed 0: tp-r (TP4 x DP2 on rp04); GPU 0's copy corrupted from ~509 s: its
    # checksum differs from rank 4's (its only peer), its grad norm x1.2-1.5, replica 0's loss up
    "R1-dp2-checksum-pair-escalated-as-job": ("replicas", 0, dict(
        t_from=400, t_to=640, jobs={"tp-r"}, topics={"telemetry.step"},
        labels={"dp2-checksum"})),
    # replicas seed 1: dp-r (TP1 x DP24); rp03/4 (replica 20) spikes from ~416 s; rp02 slow
    # (a third of the peers, PROCHOT, unattributable) from ~293 s
    "R2-one-gpu-replica-sdc-paged-twice": ("replicas", 1, dict(
        t_from=360, t_to=620, jobs={"dp-r"}, topics={"telemetry.step"},
        labels={"replica-sdc", "third-node-slow"})),
    # replicas seed 2: rp01's GPUs capped at ~500 W by its BMC from ~297 s (0x4); dp-r's
    # eight ranks there compute ~x1.12; rp02/7 (replica 15) SDC from ~304 s
    "R3-node-cap-paged-at-one-gpu-first": ("replicas", 2, dict(
        t_from=200, t_to=420, nodes={"rp01", "rp02", "rp03"},
        topics={"telemetry.step", "telemetry.thermal"},
        labels={"third-node-slow", "replica-sdc"})),
}


def main(argv: list[str] | None = None) -> int:
    return make(PLAN, write, cut, Path(__file__).parent / "cases", __doc__, argv)


if __name__ == "__main__":
    raise SystemExit(main())
