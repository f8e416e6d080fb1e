"""blind36's two stories, every choice from the seed: ``disagg`` (separate trainer and rollout
pools) and ``hybrid`` (one pool whose GPUs switch between generating and training)."""

from __future__ import annotations

import math
import random

from bench.blind36 import world
from bench.blind36.rl import Disagg, Gen, Hybrid, Rank
from bench.blind36.world import Gpu, Log

STORIES = ("disagg", "hybrid")
T0 = 1_797_000_000.0


def _gpus(rng: random.Random, prefix: str) -> dict[tuple[str, int], Gpu]:
    return {(f"{prefix}-{n:02d}", g): Gpu(f"{prefix}-{n:02d}", g, rng.uniform(-2.0, 3.0),
                                          sbe0=rng.choice((0, 0, 0, 1, 2)))
            for n in range(1, 9) for g in range(8)}


def _first(log: Log, topic: str, node: str, t: float, gpu: int | None = None,
           nic: str | None = None, pred=lambda v: True) -> float:
    """The event time of the first ``topic`` record of the unit at or after ``t``."""
    return min((v["ts"] for _, _, tp, v in log.records
                if tp == topic and v["node"] == node and v["ts"] >= t
                and (gpu is None or v.get("gpu") == gpu) and (nic is None or v.get("nic") == nic)
                and pred(v)), default=math.inf)


def _last(log: Log, node: str, gpu: int | None = None, topic: str | None = None) -> float:
    return max((v["ts"] for _, _, tp, v in log.records
                if v["node"] == node and (gpu is None or v.get("gpu") == gpu)
                and (topic is None or tp == topic)), default=-math.inf)


def _collect(log: Log, rng: random.Random, gpus: dict, bursts: dict, ecc: dict, t0: float,
             t1: float) -> None:
    nodes = sorted({n for n, _ in gpus})
    order = [gpus[k] for k in sorted(gpus)]
    world.thermal_rows(log, rng, order, t0, t1)
    world.ecc_rows(log, rng, order, ecc, t0, t1)
    world.nic_rows(log, rng, nodes, bursts, t0, t1)


def disagg(seed: int, minutes: float) -> Log:
    """A GRPO trainer (TP8 x DP4 on da-01..04) and 16 TP2 rollout engines (da-05..08)."""
    rng = random.Random(seed * 1_000_003 + 3601)
    t0 = T0 + seed * 100_000.0
    t_end = t0 + minutes * 60.0
    log = Log(seed, world.topology("rl-a", "da"))
    gpus = _gpus(rng, "da")
    trainer = [Rank(dp * 8 + tp, f"da-{dp + 1:02d}", tp, tp, dp)
               for dp in range(4) for tp in range(8)]
    engines = [tuple(Rank(2 * e + tp, f"da-{5 + e // 4:02d}", 2 * (e % 4) + tp, tp, e)
                     for tp in range(2)) for e in range(16)]
    span = t_end - t0
    gen = Gen(prompts=32, median_tok=180.0, sigma=0.55, cap=2048,
              tok_ms=rng.uniform(9.5, 11.0), prefill_s=1.2,
              raise_at=t0 + span * rng.uniform(0.45, 0.6), raise_x=1.35, raise_cap=3072)
    log.effect("longer-answers-allowed", {"job": "grpo-gen"}, gen.raise_at, t_end)
    n_steps = int(span / 13.0) * 3
    job = Disagg("rl-a", "post", trainer, engines, gpus, gen, train_s=rng.uniform(3.2, 3.6),
                 save=(int(n_steps * rng.uniform(0.35, 0.5)), rng.uniform(6.0, 10.0)))
    slow_n, port_n, xid_n = rng.sample([f"da-{n:02d}" for n in range(5, 9)], 3)
    slow_g, xid_g, port_k = rng.randrange(8), rng.randrange(8), rng.randrange(8)
    job.slow_gen = (slow_n, slow_g, t0 + span * rng.uniform(0.2, 0.4), rng.uniform(1.18, 1.3))
    job.bad_port = (port_n, port_k, t0 + span * rng.uniform(0.3, 0.5), rng.uniform(1.6, 2.2))
    job.xid = (xid_n, xid_g, t0 + span * rng.uniform(0.55, 0.75), rng.uniform(30.0, 45.0))
    job.run(log, rng, t0, t_end)
    _collect(log, rng, gpus, job.bursts, job.ecc, t0, t_end)
    # labels: each from the first record the fault changes to the unit's last
    n, g, frm, _ = job.slow_gen
    first = min((ts for ts, i, nn, gg in job.stamps["gen"]
                 if (nn, gg) == (n, g) and job.round_at[i] >= frm), default=math.inf)
    log.label(f"slowgen-{n}-g{g}", "slow_node", "unknown", {"level": "gpu", "node": n, "gpu": g},
              first, _last(log, n, g, "telemetry.step"), False)
    n, k, frm, _ = job.bad_port
    bad = min((b.t1 for b in job.bursts[(n, k)] if b.symbol_errors), default=math.inf)
    sync0 = min((b.t0 for b in job.bursts[(n, k)] if b.symbol_errors), default=math.inf)
    first = min(_first(log, "telemetry.nic", n, bad, nic=f"mlx5_{k}"),
                min((ts for ts, *_ in job.stamps["gen"] if ts >= sync0), default=math.inf))
    log.label(f"syncnic-{n}-mlx5_{k}", "network", "nic",
              {"level": "nic", "node": n, "nic": f"mlx5_{k}", "port": 1}, first,
              _last(log, n, None, "telemetry.nic"), True)
    n, g, at, _ = job.xid if job.ecc else (*job.xid[:2], math.inf, 0)
    log.label(f"xid-{n}-g{g}", "hardware", "gpu_memory", {"level": "gpu", "node": n, "gpu": g},
              at, _last(log, n, g, "telemetry.ecc"), True)
    return log


def hybrid(seed: int, minutes: float) -> Log:
    """One colocated GRPO job (TP8 x DP8 on hb-01..08) alternating generation and training."""
    rng = random.Random(seed * 1_000_033 + 3602)
    t0 = T0 + seed * 100_000.0 + 50_000.0
    t_end = t0 + minutes * 60.0
    log = Log(seed + 1000, world.topology("rl-b", "hb"))
    gpus = _gpus(rng, "hb")
    ranks = [Rank(dp * 8 + tp, f"hb-{dp + 1:02d}", tp, tp, dp)
             for dp in range(8) for tp in range(8)]
    span = t_end - t0
    gen = Gen(prompts=16, median_tok=500.0, sigma=0.5, cap=4096,
              tok_ms=rng.uniform(6.0, 7.0), prefill_s=2.0,
              raise_at=t0 + span * rng.uniform(0.45, 0.6), raise_x=1.3, raise_cap=6144,
              long_p=0.03)
    log.effect("longer-answers-allowed", {"job": "grpo-hybrid"}, gen.raise_at, t_end)
    job = Hybrid("rl-b", "reason", ranks, gpus, gen, train_s=rng.uniform(4.4, 5.0),
                 save=(int(span / 30.0 * rng.uniform(0.3, 0.5)), rng.uniform(8.0, 12.0)))
    hot_n, slow_n, cap_n = rng.sample([f"hb-{n:02d}" for n in range(1, 9)], 3)
    hot_g, slow_g, cap_g = (rng.randrange(8) for _ in range(3))
    hot_from = t0 + span * rng.uniform(0.15, 0.3)
    extra = rng.uniform(36.0, 42.0)
    gpus[(hot_n, hot_g)].hbm_extra_c = lambda t: extra if t >= hot_from else 0.0
    job.hot = (hot_n, hot_g, hot_from)
    job.slow = (slow_n, slow_g, t0 + span * rng.uniform(0.2, 0.4), rng.uniform(1.10, 1.16))
    job.capped = (cap_n, cap_g, t0 + span * rng.uniform(0.25, 0.45), rng.uniform(500.0, 560.0))
    job.run(log, rng, t0, t_end)
    _collect(log, rng, gpus, job.bursts, {}, t0, t_end)
    first = _first(log, "telemetry.thermal", hot_n, gpu=hot_g,
                   t=min((p.t0 for p in gpus[(hot_n, hot_g)].phases if p.t0 >= hot_from),
                         default=math.inf))
    log.label(f"hbmheat-{hot_n}-g{hot_g}", "slow_node", "thermal",
              {"level": "gpu", "node": hot_n, "gpu": hot_g}, first,
              _last(log, hot_n, hot_g, "telemetry.step"), True)
    n, g, frm, _ = job.slow
    first = min((ts for ts, i, nn, gg in job.stamps if (nn, gg) == (n, g)
                 and job.starts[i] >= frm), default=math.inf)
    log.label(f"slowco-{n}-g{g}", "slow_node", "unknown", {"level": "gpu", "node": n, "gpu": g},
              first, _last(log, n, g, "telemetry.step"), False)
    n, g, frm, _ = job.capped
    first = min(min((ts for ts, i, nn, gg in job.stamps if (nn, gg) == (n, g)
                     and job.starts[i] >= frm), default=math.inf),
                _first(log, "telemetry.thermal", n, frm, gpu=g,
                       pred=lambda v: bool(v["throttle"] & 0x4) and v["power_w"] < 600))
    log.label(f"pcap-{n}-g{g}", "slow_node", "power", {"level": "gpu", "node": n, "gpu": g},
              first, _last(log, n, g, "telemetry.step"), True)
    return log


def build(story: str, seed: int, minutes: float) -> Log:
    return {"disagg": disagg, "hybrid": hybrid}[story](seed, minutes)
