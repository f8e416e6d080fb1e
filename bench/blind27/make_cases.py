"""Rebuilds bench/blind27/cases from the seed logs: generate the log, cut the reproducer.

    python -m bench.blind27.make_cases [--out bench/blind27/cases]

PLAN names, for each case, the story and seed it comes from and the cut (seconds after the
log's first record); tests/test_blind27_cases.py says what faultline does wrong in each, or
which routine shape it keeps quiet. Built from the freezes bd7fecb (spot, serve) and a40edba
(churn), no fix since. F cases are findings (strict xfails), G cases guards.
"""

from __future__ import annotations

import functools
from pathlib import Path

from bench.blind11.make_cases import make
from bench.blind27.cut import cut
from bench.blind27.generate import write

STEP, THERMAL, ECC, NIC = ("telemetry.step", "telemetry.thermal", "telemetry.ecc",
                           "telemetry.nic")


def _n(prefix: str, *idx: int) -> set[str]:
    return {f"{prefix}-{i:02d}" for i in idx}


PLAN: dict[str, tuple] = {
    # serve seed 4: inf-01 GPU 6 serves the hot replica (1.45-1.6x the traffic share): at the
    # 700 W cap (0x4) from ~100 s, 13 C over its node's median because it draws ~250 W more;
    # its cooling is its mates'. inf-01's thermal rows
    "F1-busiest-serving-gpu-at-the-power-cap-paged-thermal": ("serve", 4, dict(
        t_from=0, t_to=300, nodes=_n("inf", 1), topics={THERMAL}, labels=set())),
    # spot seed 0: spot-01 GPU 0's NVLink CRC / replay errors climbing from ~187 s
    "G1-nvlink-errors-climbing": ("spot", 0, dict(
        t_from=150, t_to=400, nodes=_n("spot", 1), topics={ECC},
        labels={"nvl-spot-01-g0"})),
    # spot seed 0: spot-13 GPU 1's cooling degrading from ~276 s, 0x20 from ~416 s
    "G2-spot-gpu-cooling-degrading-to-0x20": ("spot", 0, dict(
        t_from=240, t_to=560, nodes=_n("spot", 13), topics={THERMAL},
        labels={"hot-spot-13-g1"})),
    # spot seed 0: XID 79 on spot-12 GPU 5 at ~577 s, the job dead, restarted at ~660 s from
    # its checkpoint without spot-12; tp_rank 5's steps (not spot-01's: its NVLink fault
    # slows its ranks), spot-12's DCGM rows
    "G3-xid79-crash-and-elastic-restart": ("spot", 0, dict(
        t_from=540, t_to=760, nodes=_n("spot", 0, *range(2, 20)), topics={STEP, THERMAL, ECC},
        coords={(5, 0)},
        sampled=_n("spot", 12), labels={"xid79-spot-12-g5"})),
    # spot seed 0: the new VM spot-16 up at ~270 s with mlx5_3 at 200 Gb/s, in the job ~317 s
    "G4-new-vm-port-at-half-rate": ("spot", 0, dict(
        t_from=240, t_to=480, nodes=_n("spot", 16), topics={NIC},
        labels={"rate-spot-16-mlx5_3"})),
    # spot seed 0: spot-09 reclaimed (notice ~111 s, the job re-forms without it, gone ~231 s);
    # eight healthy VMs' every topic, their ranks' steps
    "G5-reclaim-shrink-and-a-vm-gone": ("spot", 0, dict(
        t_from=60, t_to=300, nodes=_n("spot", 0, 2, 3, 4, 5, 6, 7, 9), labels=set())),
    # serve seed 0: inf-04 GPU 1's cooling weak from ~152 s, 0x20 in bursts
    "G6-serving-gpu-0x20-only-in-bursts": ("serve", 0, dict(
        t_from=100, t_to=420, nodes=_n("inf", 4), topics={THERMAL},
        labels={"cool-inf-04-g1"})),
    # serve seed 0: XID 94 on inf-09 GPU 6 at ~507 s, pending reset from then
    "G7-xid94-on-a-serving-gpu": ("serve", 0, dict(
        t_from=460, t_to=620, nodes=_n("inf", 9), topics={ECC, THERMAL},
        labels={"xid94-inf-09-g6"})),
    # serve seed 0: inf-07 mlx5_1 flapping from ~563 s
    "G8-serving-port-flapping": ("serve", 0, dict(
        t_from=520, t_to=800, nodes=_n("inf", 7), topics={NIC},
        labels={"flap-inf-07-mlx5_1"})),
    # serve seed 0: trn-00 GPU 3's PCIe replays from ~287 s, its rank ~11 % slower
    "G9-pcie-replays-slowing-a-training-rank": ("serve", 0, dict(
        t_from=240, t_to=520, nodes=_n("trn", *range(8)), topics={STEP, ECC},
        sampled=_n("trn", 0), labels={"pcie-trn-00-g3"})),
    # serve seed 1: traffic bursts, the hot replica (inf-05), the autoscaler parking inf-12..15
    # (130-270 s) and the rolling model reload
    "G10-bursts-autoscaler-and-rolling-reload": ("serve", 1, dict(
        t_from=0, t_to=900, nodes=_n("inf", 0, 1, 5, 12, 13, 14, 15), labels=set())),
    # churn seed 3: the first new VM sp-12 (up ~160 s) joins at ~256 s with GPU 7 computing
    # x1.35-1.45 from its first step; every rank's steps (sp-09 GPU 6, ~11 % slow from ~179 s,
    # is a fault too: its label is left out, its page a stray)
    "F2-new-vm-gpu-40pct-slow-from-its-first-step-missed": ("churn", 3, dict(
        t_from=150, t_to=900, topics={STEP}, labels={"straggler-sp-12-g7"})),
    # churn seed 0: sp-06 reclaimed at ~504 s (30 s notice), the job re-formed at ~540 s onto
    # 11 VMs (sp-06 out, sp-13 in), sp-06's rows stop at ~532 s: escalated at ~772 s as a host
    # gone dark; the whole log, tp_rank 0's steps (the faults' labels left out)
    "F3-reclaimed-vm-replaced-in-one-re-form-escalated-as-dark": ("churn", 0, dict(
        t_from=0, t_to=900, coords={(0, 0)}, labels=set())),
    # churn seed 3: sp-06, a healthy VM, has two one-step host stalls (1.1 s at ~89 s, 1.4 s at
    # ~490 s) among ~150 steps (sp-08 has five); every rank's steps
    "F4-two-one-step-host-stalls-400s-apart-escalated": ("churn", 3, dict(
        t_from=0, t_to=520, topics={STEP}, labels=set())),
    # churn seed 0: sp-04 GPU 7 ~11 % slow from ~155 s through re-forms every ~2 min
    "G11-gpu-11pct-slow-through-re-forms": ("churn", 0, dict(
        t_from=100, t_to=420, topics={STEP}, coords={(7, 0)}, labels={"slow-sp-04-g7"})),
    # churn seed 0: the second new VM (sp-02 again, a reused name) handed over with GPU 2
    # waiting for a reset (~303 s)
    "G12-new-vm-handed-over-needing-a-reset": ("churn", 0, dict(
        t_from=280, t_to=420, nodes=_n("sp", 2), topics={ECC},
        labels={"remap-sp-02-g2"})),
    # churn seed 2: reclaims, re-forms, new VMs (reused names, counters starting over) over
    # 10 min; every VM's steps (tp_rank 0), thermal and port rows
    "G13-reclaims-re-forms-and-reused-names": ("churn", 2, dict(
        t_from=0, t_to=600, topics={STEP, THERMAL, NIC}, coords={(0, 0)}, labels=set())),
}


def main(argv: list[str] | None = None) -> int:
    return make(PLAN, functools.cache(write), cut, Path(__file__).parent / "cases", __doc__,
                argv)


if __name__ == "__main__":
    raise SystemExit(main())
