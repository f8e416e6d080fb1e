"""Rebuilds bench/blind14/cases from the seed logs: generate the log, cut the reproducer.

    python -m bench.blind14.make_cases [--out bench/blind14/cases]

PLAN names, for each case, the story and seed it comes from and the cut (seconds after the
log's first record); tests/test_blind14_cases.py says what faultline does wrong in each.
Empty at the freeze (54f1d26); filled after the first measurement on main (BENCHMARKS "blind14,
round 23").
"""

from __future__ import annotations

from pathlib import Path

from bench.blind11.make_cases import make
from bench.blind14.cut import cut
from bench.blind14.generate import write

STEP, THERMAL, ECC = "telemetry.step", "telemetry.thermal", "telemetry.ecc"
PLAN: dict[str, tuple] = {
    # fleet seed 0: the site collector on gx-10 sends pcie_replay = DCGM_INT64_BLANK for one
    # sample of GPU 1 at 390.9 s (no label: routine)
    "N1-dcgm-blank-counter": ("fleet", 0, dict(t_from=300, t_to=480, nodes={"gx-10"},
                                               topics={ECC}, labels=set())),
    # fleet seed 0: gx-05's checkpoint saves x2.4-3.2 from 351.9 s (ft-b, TP8 x DP4)
    "N2-slow-checkpoint-writer": ("fleet", 0, dict(t_from=300, t_to=900, jobs={"ft-b"},
                                                   topics={STEP}, labels={"slow-ckpt-writer"})),
    # fleet seed 4: gx-12's PSU brakes in 6-14 s bursts from 255.9 s; 16 of its 240 thermal
    # rows (30 s collector) show 0x88
    "N3-psu-brake-bursts-30s": ("fleet", 4, dict(t_from=200, t_to=720,
                                                 nodes={"gx-11", "gx-12"}, jobs={"pt-d"},
                                                 topics={STEP, THERMAL},
                                                 labels={"psu-brake-30s"})),
    # fleet seed 0: dp-c rank 0 (gx-09/0)'s loader leaks from 161 s, to 0.73 s a step at 900 s
    "N4-loader-leak-caught-late": ("fleet", 0, dict(t_from=100, t_to=900, jobs={"dp-c"},
                                                    topics={STEP}, labels={"loader-leak"})),
    # pipe seed 0: hx06/1 runs 7-10 C above its node's other GPUs, no throttle, not slower
    "N5-hot-gpu-no-throttle": ("pipe", 0, dict(t_from=100, t_to=300, nodes={"hx06"},
                                               topics={THERMAL}, labels=set())),
    # fleet seed 6: pt-a's uncoordinated GC pauses (each rank 1 step in ~45, +150-400 ms)
    "N6-gc-pauses-escalated": ("fleet", 6, dict(t_from=0, t_to=200, jobs={"pt-a"},
                                                topics={STEP}, labels=set())),
    # pipe seed 3: hx01's cron, 31 / 30 / 38 s runs from 180.7 s, every 328 s
    "N7-cron-straggler-short-runs": ("pipe", 3, dict(t_from=0, t_to=900, jobs={"pp-e"},
                                                     topics={STEP},
                                                     labels={"cron-straggler"})),
    # fleet seed 2 (round 26, old26): gx-11's PSU brakes in bursts from 285 s; one poll of its
    # 240 rows shows 0x88 (461.6 s, inside a burst); gx-11 is one of pt-d's two TP8 replicas
    "N8-psu-brake-seen-once-half-the-group": ("fleet", 2, dict(
        t_from=300, t_to=520, nodes={"gx-11", "gx-12"}, jobs={"pt-d"}, topics={STEP, THERMAL},
        labels={"psu-brake-30s"})),
    # pipe seed 0 (esc42, round 42): hx01's cron from 153.5 s, escalated for its compute at
    # 186 s; its host_share run, from 0.1 s after the compute run's onset, told at 799 s
    # while the page was quiet -- resolved and fired again under one dedup_key (esc41's
    # "another part of the step"); hx04 (a PSU brake) left out
    "N9-cron-straggler-paged-twice": ("pipe", 0, dict(
        t_from=0, t_to=820, nodes={"hx01", "hx02", "hx03", "hx05", "hx06", "hx07", "hx08"},
        jobs={"pp-e"}, topics={STEP}, labels={"cron-straggler"})),
}


def main(argv: list[str] | None = None) -> int:
    return make(PLAN, write, cut, Path(__file__).parent / "cases", __doc__, argv)


if __name__ == "__main__":
    raise SystemExit(main())
