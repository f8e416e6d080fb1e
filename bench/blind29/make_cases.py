"""Rebuilds bench/blind29/cases from the seed logs: generate the log, cut the reproducer.

    python -m bench.blind29.make_cases [--out bench/blind29/cases]

PLAN names, for each case, the story and seed it comes from and the cut (seconds after the
log's first record); tests/test_blind29_cases.py says what faultline does wrong in each, or
which routine shape it keeps quiet. Built from the freeze (and its topology fix e36065e), no
generator change since. F cases are findings (strict xfails), G cases guards.
"""

from __future__ import annotations

import functools
from pathlib import Path

from bench.blind11.make_cases import make
from bench.blind29.cut import cut
from bench.blind29.generate import write

STEP, THERMAL, ECC, NIC = ("telemetry.step", "telemetry.thermal", "telemetry.ecc",
                           "telemetry.nic")

PLAN: dict[str, tuple] = {
    # async seed 0: gpu-06 GPU 5's clock stuck at ~66 % from ~296 s (throttle 0, power down),
    # its worker ~1.45x; never paged. The steps of 24 workers (three nodes with no other
    # fault), gpu-06's thermal rows
    "F1-stuck-clock-never-paged": ("async", 0, dict(
        t_from=250, t_to=450, topics={STEP, THERMAL}, nodes={"gpu-03", "gpu-04", "gpu-06"},
        sampled={"gpu-06"},
        labels={"clock-gpu-06-g5"})),
    # async seed 0: gpu-01 GPU 6's worker 18-25 % slow from ~178 s, nothing in telemetry; in
    # asynchronous training no two workers share a step number. 24 workers' steps
    "F2-async-hidden-slow-worker-never-paged": ("async", 0, dict(
        t_from=100, t_to=290, topics={STEP}, nodes={"gpu-01", "gpu-03", "gpu-04"},
        labels={"slow-gpu-01-g6"})),
    # async seed 0: XID 48 on gpu-02 GPU 5 at ~429 s kills its worker; its idle port mlx5_5 is
    # isolated network/nic at ~484 s. gpu-02's ECC and port rows
    "F3-dead-workers-idle-port-isolated": ("async", 0, dict(
        t_from=380, t_to=560, nodes={"gpu-02"}, topics={ECC, NIC},
        labels={"xid48-gpu-02-g5"})),
    # diloco seed 1: w-h100-03's TP8 group 3-5 % over its peers for ~11 steps (the slowest of
    # eight GPUs' PAI noise), escalated slow_node/unknown at ~82 s. dl-30b's steps
    "F4-node-wide-noise-run-escalated": ("diloco", 1, dict(
        t_from=0, t_to=150, topics={STEP}, labels=set())),
    # diloco seed 1: w-h100-06 GPU 7 falls off the bus (XID 79) at ~738 s, isolated at once;
    # 93 s later a second page for it, unattributed gpu_missing. Every node's DCGM rows (both
    # sites': the page needs the other site's rows; w-h100-04 GPU 6's cold plate is a fault too)
    "F5-gpu-missing-paged-beside-its-xid79": ("diloco", 1, dict(
        t_from=700, t_to=900, topics={ECC, THERMAL},
        labels={"xid79-w-h100-06-g7", "hot-w-h100-04-g6"})),
    # diloco seed 7 (held): e-h100-04 GPU 2's cold plate failing from ~200 s; its node
    # escalated slow_node/unknown at ~324 s, isolated slow_node/thermal 17 s later. dl-30b's
    # steps, e-h100-04's thermal rows
    "F6-hot-gpu-escalated-unknown-before-its-thermal-page": ("diloco", 7, dict(
        t_from=200, t_to=400, topics={STEP, THERMAL}, sampled={"e-h100-04"},
        labels={"hot-e-h100-04-g2"})),
    # diloco seed 0: w-h100-05 GPU 7's checksum leaves its 15 peers at the outer sync at
    # ~495 s (checksums on sync steps only). tp_rank 7's steps
    "G1-checksum-minority-at-an-outer-sync": ("diloco", 0, dict(
        t_from=450, t_to=560, topics={STEP}, coords={(7, 0)},
        labels={"sdc-w-h100-05-g7"})),
    # diloco seed 0: e-h100-01 mlx5_4 flapping from ~581 s (its site's steps stall)
    "G2-port-flapping-under-one-site": ("diloco", 0, dict(
        t_from=540, t_to=800, nodes={"e-h100-01"}, topics={NIC},
        labels={"flap-e-h100-01-mlx5_4"})),
    # diloco seed 0: XID 79 on w-h100-06 GPU 3 at ~677 s; its site stops, the other runs on
    "G3-xid79-one-site-down-the-other-runs-on": ("diloco", 0, dict(
        t_from=640, t_to=760, nodes={"w-h100-06"}, topics={ECC, THERMAL},
        labels={"xid79-w-h100-06-g3"})),
    # diloco seed 0: w-h100-01 GPU 3's cold plate failing from ~210 s, 0x20 at 88 C
    "G4-hot-gpu-slows-its-site": ("diloco", 0, dict(
        t_from=180, t_to=420, nodes={"w-h100-01"}, topics={THERMAL},
        labels={"hot-w-h100-01-g3"})),
    # diloco seed 0: the two sites a few steps apart, east under its cap, an outer sync at
    # ~154 s (the early site waits in comm_ms). dl-30b's steps
    "G5-sites-apart-and-an-outer-sync": ("diloco", 0, dict(
        t_from=0, t_to=200, topics={STEP}, labels=set())),
    # async seed 3: a parameter-server hot shard (170-214 s, every worker's comm x1.6-2.2) and
    # the chief's evaluation (rank 0 silent 262-299 s). Steps of three nodes with no fault
    "G6-hot-shard-and-chief-evaluation": ("async", 3, dict(
        t_from=150, t_to=440, topics={STEP}, nodes={"gpu-01", "gpu-04", "gpu-06"},
        labels=set())),
    # async seed 0: gpu-05 mlx5_0 losing symbols from ~611 s, retrained at 200 Gb/s
    "G7-port-losing-symbols-retrains-at-half-rate": ("async", 0, dict(
        t_from=580, t_to=900, nodes={"gpu-05"}, topics={NIC},
        labels={"ber-gpu-05-mlx5_0"})),
}


def main(argv: list[str] | None = None) -> int:
    return make(PLAN, functools.cache(write), cut, Path(__file__).parent / "cases", __doc__,
                argv)


if __name__ == "__main__":
    raise SystemExit(main())
