"""Rebuilds bench/blind37/cases from the seed logs: generate the log, cut the reproducer.

    python -m bench.blind37.make_cases [--out bench/blind37/cases]

PLAN names, for each case, the story and seed it comes from and the cut (seconds after the
log's first record; ``sampled`` keeps the node collectors' rows of some nodes only);
tests/test_blind37_cases.py says what faultline does wrong in each, or which shape it gets
right. Built from the freeze (39741d2; the writer's JSON separators fixed after it, the records
unchanged). F cases are findings (strict xfails), G cases guards.
"""

from __future__ import annotations

import functools
from pathlib import Path

from bench.blind11.make_cases import make
from bench.blind37.cut import cut
from bench.blind37.generate import write

STEP, THERMAL, ECC, NIC = "telemetry.step", "telemetry.thermal", "telemetry.ecc", "telemetry.nic"

PLAN: dict[str, tuple] = {
    # pair16 seed 0: fb-05's host under memory pressure from 408 s: its 8 ranks and their 8
    # partner ranks on fb-06 (after the resize at ~490 s, another node) compute ~x1.07 alike
    "F1-host-memory-pressure-missed": ("pair16", 0, dict(
        t_from=250, t_to=900, topics={STEP}, labels={"hostmem-fb-05"})),
    # node8 seed 0: a one-step loader stall (~2 s) on fa-06/1 at 342 s: its 7 shard-group mates
    # wait in their first all-gather (compute x1.47 for one step); fa-07/3 slow from 198 s
    "F2-one-step-loader-stall-pages-its-shard-group": ("node8", 0, dict(
        t_from=0, t_to=400, topics={STEP}, labels={"slowgpu-fa-07-g3"})),
    # pair16 seed 0: fb-03/3 in SW thermal slowdown from 362 s (0x20, clock ~1,600 MHz): its
    # 15 shard-group mates on fb-03 and fb-04 compute x~1.15 with it
    "F3-hot-gpus-shard-group-mate-escalated": ("pair16", 0, dict(
        t_from=0, t_to=406, topics={STEP, THERMAL}, sampled={"fb-03", "fb-04"},
        labels={"hot-fb-03-g3"})),
    # pair16 seed 0: fb-08's mlx5_6 down on its 149 s row (link_downed +1), 2-8 s a flap
    "F4-link-down-paged-a-poll-late": ("pair16", 0, dict(
        t_from=100, t_to=250, topics={NIC}, nodes={"fb-08"}, labels={"flap-fb-08-mlx5_6"})),
    # node8 seed 1: fa-03/2 x1.12-1.20 from 235 s, nothing in telemetry: its node's 8 ranks
    # compute alike (the shard group), the other 56 wait in comm_ms
    "G1-slow-gpu-dragging-its-shard-group-escalated-at-its-node": ("node8", 1, dict(
        t_from=150, t_to=340, topics={STEP}, labels={"slowgpu-fa-03-g2"})),
    # node8 seed 0: fa-02's mlx5_7 retrained at 200 Gb/s from 419 s, no error counter
    "G2-nic-at-half-rate-isolated": ("node8", 0, dict(
        t_from=380, t_to=560, topics={NIC}, nodes={"fa-02"}, labels={"nicdeg-fa-02-mlx5_7"})),
    # node8 seed 1: fa-04's mlx5_5 with symbol errors at 400 Gb/s from 354 s
    "G3-nic-with-symbol-errors-isolated": ("node8", 1, dict(
        t_from=300, t_to=450, topics={NIC}, nodes={"fa-04"}, labels={"nicdeg-fa-04-mlx5_5"})),
    # node8 seed 3: fa-04/6's PCIe link at x8 from 495 s: its offload exposed, its node's
    # ranks wait on it; shard position 6's all-reduce slower on every node (fa-08/0 slow since
    # 232 s, its label kept: its node is escalated as the cut begins)
    "G4-pcie-x8-escalated-at-its-node": ("node8", 3, dict(
        t_from=420, t_to=620, topics={STEP}, labels={"pcie8-fa-04-g6", "slowgpu-fa-08-g0"})),
    # node8 seed 0: three healthy nodes' 24 ranks through a sharded save (~436 s), a deeper
    # prefetch switched on (~458 s) and a one-step loader stall on fa-03/0 (~400 s)
    "G5-save-deeper-prefetch-and-a-stall-page-nobody": ("node8", 0, dict(
        t_from=300, t_to=600, topics={STEP}, nodes={"fa-01", "fa-03", "fa-08"}, labels=set())),
}


def main(argv: list[str] | None = None) -> int:
    return make(PLAN, functools.cache(write), cut, Path(__file__).parent / "cases", __doc__,
                argv)


if __name__ == "__main__":
    raise SystemExit(main())
