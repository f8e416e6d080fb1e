"""Rebuilds bench/blind22/cases from the seed logs: generate the log, cut the reproducer.

    python -m bench.blind22.make_cases [--out bench/blind22/cases]

PLAN names, for each case, the story and seed it comes from and the cut (seconds after the
log's first record); tests/test_blind22_cases.py says what faultline does wrong in each, or
which routine shape it keeps quiet. Built from the freeze (753b2e9). N1, R1 and W1 are
findings (strict xfails), the G cases guards.
"""

from __future__ import annotations

from pathlib import Path

from bench.blind11.make_cases import make
from bench.blind22.cut import cut
from bench.blind22.generate import write

EL_A = {f"sx{i:02d}" for i in range(1, 9)} | {"sx16"}
REUSED = {"sx09", "sx10", "sx11", "sx12"}
STEP = {"telemetry.step"}

PLAN: dict[str, tuple] = {
    # sched seed 0: lp-b's rank on sx09 GPU 0 runs a real PAI job-2 residual run (4 steps at
    # ~+3.7 %, the job's noise ~0.7 %) around 41 s. No fault
    "N1-one-rank-pai-noise-run-escalated": ("sched", 0, dict(
        t_from=0, t_to=100, jobs={"lp-b"}, topics=STEP, labels=set())),
    # sched seed 0: lp-b preempted at ~511 s (nodes killed 0-2 s apart: its last step from some
    # nodes only), hp-c (tenant prod) launched on the same GPUs 3-15 s later, step 0 at ~30 s
    # (compile). Steps and thermal of sx09-12, no ECC (the remap fault's). No fault
    "G1-preempt-and-reuse-by-another-tenant": ("sched", 0, dict(
        t_from=470, t_to=690, nodes=REUSED, jobs={"lp-b", "hp-c"},
        topics={"telemetry.step", "telemetry.thermal"}, labels=set())),
    # sched seed 1: el-a shrinks at ~272 s (sx02 drained; 7 nodes, new dp_ranks, from its
    # checkpoint: steps repeat) and grows at ~460 s (sx16 joins, the same again). No fault
    "G2-elastic-shrink-grow-rewind": ("sched", 1, dict(
        t_from=230, t_to=560, jobs={"el-a"}, topics=STEP, labels=set())),
    # sched seed 0: XID 119 on sx06 GPU 1 at ~719 s (again ~25-60 s later); el-a hangs until its
    # watchdog, restarts without sx06 at ~990 s from its checkpoint
    "G3-gsp-hang-watchdog-restart": ("sched", 0, dict(
        t_from=680, t_to=1060, nodes=EL_A, jobs={"el-a"},
        topics={"telemetry.step", "telemetry.ecc", "telemetry.thermal"},
        labels={"gsp-sx06-g1"})),
    # sched seed 1: sx11 GPU 4's corrected errors from ~244 s (under lp-b), XID 63 with
    # row_remap_pending at ~353 s (again ~696, ~726 s), lp-b preempted at ~424 s, XID 64 and
    # row_remap_failure at ~779 s under hp-c; sx11's ECC only
    "R1-xid63-remap-pending-not-acted-on": ("sched", 1, dict(
        t_from=200, t_to=840, nodes={"sx11"}, topics={"telemetry.ecc"},
        labels={"remap-sx11-g4"})),
    # sched seed 1: sx05 GPU 3's checksum alone against its 7 DP peers from ~817 s (numbering
    # after the grow)
    "G5-sdc-after-the-grow": ("sched", 1, dict(
        t_from=760, t_to=880, jobs={"el-a"}, topics=STEP, labels={"sdc-sx05-g3"})),
    # fabric seed 0: hgx007 mlx5_2 flaps at ~529 s (down 4-9 s) and retrains at 100 Gb/s; its
    # first poll after (529.7 s) shows link_downed 1, rate 100, 226 symbol and 6 receive
    # errors; hgx007's ports only
    "W1-link-downed-paged-a-poll-late": ("fabric", 0, dict(
        t_from=470, t_to=650, nodes={"hgx007"}, topics={"telemetry.nic"},
        labels={"width-hgx007-mlx5_2"})),
    # fabric seed 0: hgx003's NVMe stalls its loader from ~351 s (pt-a's steps)
    "G7-nvme-loader-stalls-neither-part": ("fabric", 0, dict(
        t_from=300, t_to=560, jobs={"pt-a"}, topics=STEP, labels={"nvme-hgx003"})),
    # fabric seed 0: the checkpoint storm at ~203 s, both jobs' steps. No fault
    "G8-checkpoint-storm-both-jobs": ("fabric", 0, dict(
        t_from=170, t_to=300, topics=STEP, labels=set())),
    # fabric seed 1: hgx001 mlx5_1's symbol errors climbing from ~466 s; hgx001's ports only
    "G9-marginal-optic-symbol-errors": ("fabric", 1, dict(
        t_from=440, t_to=780, nodes={"hgx001"}, topics={"telemetry.nic"},
        labels={"ber-hgx001-mlx5_1"})),
}


def main(argv: list[str] | None = None) -> int:
    return make(PLAN, write, cut, Path(__file__).parent / "cases", __doc__, argv)


if __name__ == "__main__":
    raise SystemExit(main())
