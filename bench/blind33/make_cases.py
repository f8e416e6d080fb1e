"""Rebuilds bench/blind33/cases from the seed logs: generate the log, cut the reproducer.

    python -m bench.blind33.make_cases [--out bench/blind33/cases]

PLAN names, for each case, the story and seed it comes from and the cut (seconds after the
log's first record); tests/test_blind33_cases.py says what faultline does wrong in each, or
which routine shape it keeps quiet. Built from the freeze (3c2db41), no generator change since.
F cases are findings (strict xfails), G cases guards.
"""

from __future__ import annotations

import functools
from pathlib import Path

from bench.blind11.make_cases import make
from bench.blind33.cut import cut
from bench.blind33.generate import write

STEP, THERMAL, ECC, NIC = ("telemetry.step", "telemetry.thermal", "telemetry.ecc",
                           "telemetry.nic")



def _stage(pp: int) -> set[tuple[int, int]]:
    """Every TP rank's peer group of pipeline stage ``pp``."""
    return {(tp, pp) for tp in range(8)}


SMOOTH_STAGE = {0: {"g-01", "g-02", "g-05", "g-06", "g-09", "g-10", "g-13", "g-14"},
                1: {"g-03", "g-04", "g-07", "g-08", "g-11", "g-12", "g-15", "g-16"}}
PROFILES_STAGE = {0: {"p-01", "p-03", "p-05", "p-07"}, 1: {"p-02", "p-04", "p-06", "p-08"}}

PLAN: dict[str, tuple] = {
    # smooth seed 2: g-06 GPU 1's power ramp limited from ~694 s (0x4 at ~1,000 W, clock -8 %);
    # its TP group (g-05 + g-06, replica 1, stage 0) x~1.09: escalated at replica dp_rank 1
    # (~719 s; in the whole log the tray is never paged, in the cut at ~769 s). The last
    # 300 s, every tray (g-03's hot GPU: replica 0 escalated too; g-16's PSU)
    "F1-limited-ramp-on-a-two-tray-tp-group-paged-as-the-replica": ("smooth", 2, dict(
        t_from=600, t_to=900, topics={STEP, THERMAL},
        labels={"ramp-g-06-g1", "flow-g-03-g1", "psu-g-16"})),
    # smooth seed 0: g-02 GPU 2's cold plate loses flow from ~179 s; its TP group is g-01 +
    # g-02: g-01 (no signal of its own) escalated slow_node/unknown at ~278 s beside g-02's page
    "F2-hot-gpus-partner-tray-paged": ("smooth", 0, dict(
        t_from=100, t_to=500, topics={STEP, THERMAL}, coords=_stage(0), sampled=SMOOTH_STAGE[0],
        labels={"flow-g-02-g2"})),
    # profiles seed 1: p-07 GPU 3's application clocks left at the max-Q clock from ~599 s
    # (0x2, clock -8 %, power ~560 W): escalated slow_node/unknown. Stage 0 (before the VRM)
    "F3-clock-held-by-application-clocks-escalated-unknown": ("profiles", 1, dict(
        t_from=540, t_to=715, topics={STEP, THERMAL}, coords=_stage(0),
        sampled=PROFILES_STAGE[0], labels={"clock-p-07-g3"})),
    # profiles seed 0: p-04 GPU 3's VRM brakes (0x80|0x8) 3-8 s every 15-40 s from ~688 s,
    # the steps it overlaps ~x2: never paged. Stage 1
    "F4-vrm-brake-episodes-never-paged": ("profiles", 0, dict(
        t_from=640, t_to=900, topics={STEP, THERMAL}, coords=_stage(1),
        sampled=PROFILES_STAGE[1], labels={"vrm-p-04-g3"})),
    # (F5 on profiles seed 1 -- the max-Q profile on p-04 alone from ~135 s -- was not cut in
    # round 42: slow42's branch caught it.)  profiles seed 0: the max-Q profile on p-06 alone
    # from ~138 s (0x4 on its 8 GPUs, clock 1,845 MHz against 1,935-1,965 before a save and on
    # the other nodes, ~487 W against ~530 W, its ranks x~1.085) to the job-wide switch at
    # ~300-309 s: escalated slow_node/unknown at ~147.5 s (cap44). Stage 1, the save at ~118 s
    "F5-one-node-max-q-profile-escalated-unknown": ("profiles", 0, dict(
        t_from=60, t_to=330, topics={STEP, THERMAL}, coords=_stage(1),
        sampled=PROFILES_STAGE[1], labels={"profile-p-06"})),
    # smooth seed 1: g-12's PSU brakes its four GPUs from ~630 s: isolated power at the tray
    # at ~637 s, and again under a second key (one with the cluster, one without). Stage 1,
    # before g-08's ramp
    "F6-tray-psu-brake-paged-under-two-keys": ("smooth", 1, dict(
        t_from=580, t_to=720, topics={STEP, THERMAL}, coords=_stage(1),
        sampled=SMOOTH_STAGE[1], labels={"psu-g-12"})),
    # profiles seed 0: the job-wide max-Q switch walking node by node (~300-310 s), a save and
    # a frozen power reading: quiet
    "G2-job-wide-profile-switch-quiet": ("profiles", 0, dict(
        t_from=300, t_to=580, labels=set())),
}


def main(argv: list[str] | None = None) -> int:
    return make(PLAN, functools.cache(write), cut, Path(__file__).parent / "cases", __doc__,
                argv)


if __name__ == "__main__":
    raise SystemExit(main())
