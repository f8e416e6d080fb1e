"""Rebuilds bench/blind38/cases from the seed logs: generate the log, cut the reproducer.

    python -m bench.blind38.make_cases [--out bench/blind38/cases]

PLAN names, for each case, the story and seed it comes from and the cut (seconds after the
log's first record; ``sampled`` keeps the node collectors' rows of some nodes only, ``coords``
the step records of some (tp_rank, pp_rank) only); tests/test_blind38_cases.py says what
faultline does wrong in each, or which shape it gets right. Built from the freeze (c7894e8).
F cases are findings (strict xfails), G cases guards.
"""

from __future__ import annotations

import functools
from pathlib import Path

from bench.blind11.make_cases import make
from bench.blind38.cut import cut
from bench.blind38.generate import write

STEP, THERMAL, ECC, NIC = "telemetry.step", "telemetry.thermal", "telemetry.ecc", "telemetry.nic"
B1 = {f"b1-t{k:02d}" for k in range(1, 19)}
B2 = {f"b2-t{k:02d}" for k in range(1, 19)}
A2 = {f"a2-t{k:02d}" for k in range(1, 19)}

PLAN: dict[str, tuple] = {
    # cdu seed 0: an NVLink cartridge of rack b2 from 426 s: CRC and replay counters rising on
    # the 32 GPUs of b2-t04..t11 (their ECC rows only in the cut)
    "F1-nvlink-cartridge-isolated-gpu-by-gpu": ("cdu", 0, dict(
        t_from=380, t_to=540, topics={ECC}, nodes=B2, labels={"cartridge-nvl-b2"})),
    # tp8 seed 0: a1-t10/1 x1.12-1.20 from 232 s, nothing in telemetry; its TP8 group spans
    # a1-t09 and a1-t10 (dp_rank 4), its 7 mates compute ~x1.05 with it
    "F2-slow-gpu-in-a-two-tray-tp-group-escalated-at-its-replica": ("tp8", 0, dict(
        t_from=150, t_to=330, topics={STEP}, labels={"slowgpu-a1-t10-g1"})),
    # tp8 seed 0: rack a1's NVSwitch fabric slower from 636 s (every TP group in it x1.3-1.5
    # NVLink time, no counter): its 64 ranks compute ~x1.07 over rack a2's
    "F3-rack-nvswitch-fabric-slow-never-escalated": ("tp8", 0, dict(
        t_from=560, t_to=900, topics={STEP}, labels={"switchtray-nvl-a1"})),
    # cdu seed 3: rack b1's coolant loop losing flow from 232 s; the first 0x20 at 589 s
    # (b1-t16), on 4 trays in its first minute, spreading down the rack
    "F4-rack-coolant-loss-isolated-tray-by-tray": ("cdu", 3, dict(
        t_from=480, t_to=720, topics={THERMAL}, nodes=B1, labels={"coolant-nvl-b1"})),
    # tp8 seed 2: a2-t06/3's NVLink erring from 409 s (counters on the 423 s ECC row, XID 74
    # at 427 s), its TP group's (a2-t05, a2-t06) compute up with the NVLink time hidden in it;
    # rack a2's trays only (the slow GPU of rack a1 left out)
    "F5-erring-nvlink-escalated-unknown-before-its-counters": ("tp8", 2, dict(
        t_from=330, t_to=480, topics={STEP, ECC}, nodes=A2, labels={"nvlink-a2-t06-g3"})),
    # cdu seed 0: rack b1's coolant loop from 171 s, the first 0x20 at 544 s on 12 trays in
    # its first minute: one domain isolation 15 s later
    "G1-rack-coolant-loss-isolated-at-its-domain": ("cdu", 0, dict(
        t_from=450, t_to=640, topics={THERMAL}, nodes=B1, labels={"coolant-nvl-b1"})),
    # cdu seed 0: b2-t12/1's cold plate clogging from 286 s, 0x20 from 336 s; gb-small's steps
    "G2-clogged-cold-plate-isolated-thermal": ("cdu", 0, dict(
        t_from=250, t_to=420, topics={STEP, THERMAL}, jobs={"gb-small"}, sampled={"b2-t12"},
        labels={"hot-b2-t12-g1"})),
    # tp8 seed 0: a2-t15/3's NVLink erring from 347 s (XID 74 at 371 s)
    "G3-erring-nvlink-isolated-at-its-gpu": ("tp8", 0, dict(
        t_from=300, t_to=420, topics={ECC}, nodes={"a2-t15"}, labels={"nvlink-a2-t15-g3"})),
    # cdu seed 3: rack b3 drained at ~451 s: gb-eval saves, stops, restarts ~100 s later on
    # b1-t09..16 with two warm-up steps (before b1's heat reaches those trays at 589 s)
    "G4-rack-drain-and-job-move-page-nobody": ("cdu", 3, dict(
        t_from=380, t_to=585, topics={STEP}, jobs={"gb-eval"}, labels=set())),
}


def main(argv: list[str] | None = None) -> int:
    return make(PLAN, functools.cache(write), cut, Path(__file__).parent / "cases", __doc__,
                argv)


if __name__ == "__main__":
    raise SystemExit(main())
