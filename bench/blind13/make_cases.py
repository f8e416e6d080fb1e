"""Rebuilds bench/blind13/cases from the seed logs: generate the log, cut the reproducer.

    python -m bench.blind13.make_cases [--out bench/blind13/cases]

PLAN names, for each case, the story and seed it comes from and the cut (seconds after the
log's first record); tests/test_blind13_cases.py says what faultline does wrong in each.
"""

from __future__ import annotations

from pathlib import Path

from bench.blind11.make_cases import make
from bench.blind13.cut import cut
from bench.blind13.generate import write

STEP, THERMAL, NIC = "telemetry.step", "telemetry.thermal", "telemetry.nic"
PLAN: dict[str, tuple] = {
    # grow seed 0: el-pt's rank on gr-01/1 hangs after its step ending at 615.0 s; the
    # NCCL watchdog kills the job at 830.6 s (every other GPU of gr-01..06 spinning)
    "M1-rank-hang-no-page": ("grow", 0, dict(t_from=480, t_to=880,
                                              nodes={f"gr-0{i}" for i in range(1, 7)},
                                              jobs={"el-pt"}, topics={STEP, THERMAL},
                                              labels={"rank-hang"})),
    # lake seed 1: lk-14 mlx5_5 seen down (link_downed +1, 346 symbol errors) at 221.6 s
    "M2-link-down-13s-late": ("lake", 1, dict(t_from=150, t_to=330, nodes={"lk-14"},
                                               topics={NIC}, labels={"ib-flap"})),
}


def main(argv: list[str] | None = None) -> int:
    return make(PLAN, write, cut, Path(__file__).parent / "cases", __doc__, argv)


if __name__ == "__main__":
    raise SystemExit(main())
