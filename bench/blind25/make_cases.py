"""Rebuilds bench/blind25/cases from the seed logs: generate the log, cut the reproducer.

    python -m bench.blind25.make_cases [--out bench/blind25/cases]

PLAN names, for each case, the story and seed it comes from and the cut (seconds after the
log's first record); tests/test_blind25_cases.py says what faultline does wrong in each, or
which routine shape it keeps quiet. Built from the freeze 008127b (no fix since). P1 is a
finding (a strict xfail), the G cases guards.
"""

from __future__ import annotations

import functools
from pathlib import Path

from bench.blind11.make_cases import make
from bench.blind25.cut import cut
from bench.blind25.generate import write

STEP, THERMAL, ECC, NIC = ("telemetry.step", "telemetry.thermal", "telemetry.ecc",
                           "telemetry.nic")
DCGM = {THERMAL, ECC, NIC}
LM = {f"fab-n{i:02d}" for i in range(1, 13)}
DL = {"fab-n13", "fab-n14", "fab-n15"}

PLAN: dict[str, tuple] = {
    # fabric seed 0: fab-n13 GPU 5's PCIe link at x8 from ~327 s: its loader x1.5-1.9, the
    # job's step +20 %; img-dl's steps only (its replay counter left out)
    "P1-pcie-x8-loader-straggler-unseen-in-steps": ("fabric", 0, dict(
        t_from=260, t_to=460, nodes=DL, jobs={"img-dl"}, topics={STEP},
        labels={"pcie-fab-n13-g5"})),
    # fabric seed 0: the same with fab-n13's DCGM rows: caught by its PCIe replays
    "G1-pcie-x8-caught-by-its-replays": ("fabric", 0, dict(
        t_from=260, t_to=460, nodes=DL, jobs={"img-dl"}, topics={STEP, ECC},
        labels={"pcie-fab-n13-g5"}, sampled={"fab-n13"})),
    # fabric seed 0: fab-n04 GPU 4's NVLink degraded from ~322 s (CRC / replays climbing, the
    # node's TP all-reduces x1.35-1.7); tp-lm's tp_rank 4 and fab-n04's DCGM rows
    "G2-nvlink-degraded-caught-at-its-gpu": ("fabric", 0, dict(
        t_from=250, t_to=450, nodes=LM, jobs={"tp-lm"}, topics={STEP, ECC},
        labels={"nvl-fab-n04-g4"}, coords={(4, 0)}, sampled={"fab-n04"})),
    # mixed seed 0: b200-02 GPU 4 off the bus (XID 79) at ~564 s, b2-lm hung until its
    # watchdog, its GPUs idle after; tp_rank 0's steps, b200-02 / b200-03's DCGM rows
    "G3-xid79-hang-and-watchdog": ("mixed", 0, dict(
        t_from=450, t_to=911, nodes={f"b200-{i:02d}" for i in range(1, 9)}, jobs={"b2-lm"},
        topics={STEP, THERMAL, ECC}, labels={"bus-b200-02-g4"}, coords={(0, 0)},
        sampled={"b200-02", "b200-03"})),
    # mixed seed 0: h100-01 GPU 6's XID 74 at ~149 s, h1-ft's all-reduce slower
    "G4-xid74-under-a-pure-dp-job": ("mixed", 0, dict(
        t_from=110, t_to=210, nodes={f"h100-{i:02d}" for i in range(1, 9)}, jobs={"h1-ft"},
        topics={STEP, ECC}, labels={"xid74-h100-01-g6"}, sampled={"h100-01"})),
    # fabric seed 0: dcgm-exporter restarted on fab-n11 at ~635 s (2 scrapes missing, the
    # first after it partial), a healthy NVLink's CRC errors on its GPU 6 at ~594 s
    "G5-dcgm-exporter-restart-partial-scrape": ("fabric", 0, dict(
        t_from=560, t_to=760, nodes={"fab-n11"}, topics=DCGM, labels=set())),
    # mixed seed 0: dcgm-exporter restarted on the busy b200-06 at ~266 s (30 s scrapes)
    "G6-dcgm-exporter-restart-on-a-busy-b200": ("mixed", 0, dict(
        t_from=200, t_to=460, nodes={"b200-06"}, topics=DCGM | {STEP}, labels=set())),
    # fabric seed 0: fab-n05's rows of ~556-600 s shipped ~30-74 s late, some twice
    "G7-collector-batch-30-90-s-late": ("fabric", 0, dict(
        t_from=480, t_to=720, nodes={"fab-n05", "fab-n06", "fab-n07"}, topics=DCGM,
        labels=set())),
    # fabric seed 0: the spare fab-n16's NIC driver reloaded at ~228 s (mlx5_2 / mlx5_3
    # swapped, counters at 0)
    "G8-nic-reload-names-swapped": ("fabric", 0, dict(
        t_from=150, t_to=400, nodes={"fab-n16"}, topics=DCGM, labels=set())),
    # mixed seed 0: idle h100-12's NIC driver reloaded at ~223 s (ports back as ibpBUSs0)
    "G9-nic-reload-ports-renamed": ("mixed", 0, dict(
        t_from=150, t_to=420, nodes={"h100-12"}, topics=DCGM, labels=set())),
    # mixed seed 0: idle h100-09's GPU driver reloaded at ~307 s (volatile counters at 0)
    "G10-gpu-driver-reload-counters-zero": ("mixed", 0, dict(
        t_from=240, t_to=560, nodes={"h100-09"}, topics=DCGM, labels=set())),
    # mixed seed 0: B200s at their 1000 W cap (0x4) under load beside a busy H100
    "G11-b200-at-its-cap-beside-h100": ("mixed", 0, dict(
        t_from=0, t_to=540, nodes={"b200-01", "b200-05", "h100-03"}, topics={THERMAL},
        labels=set())),
}


def main(argv: list[str] | None = None) -> int:
    return make(PLAN, functools.cache(write), cut, Path(__file__).parent / "cases", __doc__,
                argv)


if __name__ == "__main__":
    raise SystemExit(main())
