"""A healthy DP-2 fleet -- every peer group two ranks (TP8 x PP16 x DP2 on 256 GPUs), the shape
steps.duo's two-peer rule reads -- through the engine, as bench.healthy_fleet's variants do.

Round 47 (peers47's probe, kept here so the next round can reproduce it): on main 66c7a95 the two
peers' rule escalated 3 healthy units in 42.6 GPU-days (seeds 470301, 470311: a +-20 % per-step
sequence-length imbalance, one-step loader stalls); the start a7032c4 escalated none on 470301.

    python -m bench.healthy_dp2 [HOURS] [SEED]       # 2 hours, seed 470301 by default
"""
import sys

from replay.evaluation.fleet import _H256, Variant, run_log


def main() -> None:
    hours = float(sys.argv[1]) if len(sys.argv) > 1 else 2.0
    seed = int(sys.argv[2]) if len(sys.argv) > 2 else 470301
    variants = [Variant("dp2-10s", _H256, 8, 16, 2, hours, 4.0,
                        {"interval": "10", "speed": "offsets", "workload": "seqlen"}),
                Variant("dp2-stall-30s", _H256, 8, 16, 2, hours, 6.0,
                        {"interval": "30", "workload": "loader_stall", "clocks": "varied"})]
    for i, v in enumerate(variants):
        for j, r in enumerate(v.logs(1.0)):
            res = run_log((r, seed + 10 * i + j))
            print(res["variant"], res["seed"], f"{res['gpu_days']:.1f} GPU-days", res["events"],
                  "false isolations", res["false_isolations"], "escalations", res["escalations"],
                  res["problems"][:6], flush=True)


if __name__ == "__main__":
    main()
