"""blind34's two stories: mixture-of-experts training, every choice from the seed.

``ep``: an H100 MoE job whose expert-parallel groups span four nodes on two rails each; a GPU
whose HBM overheats under the expert weights, a NIC on one all-to-all rail degrading, silent
corruption in one rank's expert gradients. ``extremes``: a sub-100 ms MoE job (EP8 inside a
node over NVLink) beside a TP8 x PP2 x DP4 MoE job whose steps take about two minutes; an
NVLink going bad under the fast job's all-to-all, a GPU running hot in the slow job, a rank
whose parameters stop agreeing with its peers'.
"""

from __future__ import annotations

import random
from collections.abc import Callable

from bench.blind34.jobs import MoeJob, Rank, run
from bench.blind34.world import T0, Gpu, Log, Port, ramp

STORIES = ("ep", "extremes")


def _topology(cluster: str, prefix: str, n: int) -> str:
    nodes = f"{prefix}-[01-{n:02d}]"
    rails = "".join(f"SwitchName=rail{k} Nodes={nodes} Nics=mlx5_{k}\n" for k in range(8))
    return (f"Topology={cluster} Version=1\nNodeSet={nodes} Gpus=8 Nics=mlx5_[0-7]\n"
            f"Rack=rack-[1-{n // 2}] Nodes={nodes}\n{rails}"
            f"SwitchName=spine-[1-2] Switches=rail[0-7]\n")


def _idle_in(spans: list[tuple[float, float]]) -> Callable[[float], bool]:
    def idle(ts: float) -> bool:
        return any(a <= ts < b for a, b in spans)
    return idle


def _saves(rng: random.Random, first: int, every: tuple[int, int],
           pause_s: tuple[float, float]) -> Callable[[int], float]:
    """A synchronous checkpoint after every ``every`` steps: ``pause_s`` seconds of idle."""
    nxt = [first + rng.randint(*every)]

    def saves(step: int) -> float:
        if step < nxt[0]:
            return 0.0
        nxt[0] = step + rng.randint(*every)
        return round(rng.uniform(*pause_s), 2)
    return saves


def _mark_pauses(log: Log, job: str, pauses: list[tuple[float, float]], steps: list) -> None:
    ends = {round(t1, 3): s for s, _, t1 in steps}
    for a, b in pauses:
        log.effect("save", {"job": job}, a, b, f"step {ends.get(round(a, 3), '?')}: "
                   "synchronous checkpoint, every rank idle")


def ep(seed: int, minutes: float) -> Log:
    """One MoE job, PP2 x DP32 (EP8 groups across four nodes, on two rails each)."""
    rng = random.Random(34_000 + seed)
    t0, t1 = T0 + 86_400.0 * seed, T0 + 86_400.0 * seed + 60.0 * minutes
    dur = t1 - t0
    log = Log(rng, _topology("ep-a", "e", 10), "ep-a", "moe")
    nodes = [f"e-{i:02d}" for i in range(1, 11)]
    ranks = []
    for pp in range(2):
        for dp in range(32):
            node, gpu = nodes[pp * 4 + dp // 8], dp % 8
            rank = pp * 32 + dp
            ranks.append(Rank(rank, node, gpu, 0, pp, dp, (pp, gpu // 2), (rank,)))
    c0 = rng.uniform(620, 700)
    cf_at = t0 + dur * rng.uniform(0.60, 0.70)
    drift = rng.uniform(1.4, 1.8)
    job = MoeJob("moe-a", ranks, {0: c0, 1: c0 * rng.uniform(1.03, 1.06)}, 0.5,
                 rng.uniform(140, 180), rng.uniform(60, 80), 80.0, 6.0,
                 capacity=lambda ts: 1.25 if ts < cf_at else 1.10,
                 spread=lambda ts: 1.0 + (drift - 1.0) * (ts - t0) / dur)
    log.effect("capacity-factor-drop", {"job": "moe-a"}, cf_at, t1,
               "capacity factor 1.25 -> 1.10: expert work and a hot expert's extra both lower")
    log.effect("aux-loss-drift", {"job": "moe-a"}, t0, t1,
               f"routing jitter x1.0 -> x{drift:.2f} over the log")
    gpus = {(n, g): Gpu(n, g, busy_w=rng.uniform(600, 660), die_c=rng.uniform(58, 66),
                        mem_c=rng.uniform(66, 74)) for n in nodes for g in range(8)}
    ports = {(n, k): Port(n, f"mlx5_{k}") for n in nodes for k in range(8)}
    for n in nodes[8:]:
        for g in range(8):
            gpus[(n, g)].idle = lambda ts: True
        for k in range(8):
            ports[(n, k)].bytes_s = 1e5
    hbm_n, nic_n, sdc_n = rng.sample(nodes[:8], 3)
    # the HBM: memory climbs under the expert weights, the die stays where it was
    hbm_g = rng.randrange(8)
    a = t0 + dur * rng.uniform(0.15, 0.30)
    climb = rng.uniform(120, 180)
    hot = gpus[(hbm_n, hbm_g)]
    top = 95.0 - hot.mem_c + rng.uniform(2.0, 5.0)
    mem = ramp(a, a + climb, top)
    hot.mem_extra_c.append(mem)
    hot_at = a + climb * (95.0 - hot.mem_c) / top
    hot.reasons.append(lambda ts: 0x40 if ts >= hot_at else 0)
    hot.clock_x.append(lambda ts: 0.85 if ts >= hot_at else 1.0)
    slow_x = rng.uniform(1.14, 1.20)
    (hr,) = [r.rank for r in ranks if (r.node, r.gpu) == (hbm_n, hbm_g)]
    job.slow[hr] = lambda ts: slow_x if ts >= hot_at else 1.0 + 0.03 * mem(ts) / top
    log.label(f"hbm-{hbm_n}-g{hbm_g}", "slow_node", "thermal",
              {"level": "gpu", "node": hbm_n, "gpu": hbm_g}, a, t1)
    # a NIC on one all-to-all rail: errors, then the link trains down to 200 Gb/s
    nic_k = rng.randrange(8)
    b = t0 + dur * rng.uniform(0.30, 0.42)
    down = b + rng.uniform(60, 100)
    p = ports[(nic_n, nic_k)]
    p.symbol_s = lambda ts: 0.0 if ts < b else rng.uniform(5, 40)
    p.rcv_s = lambda ts: 0.0 if ts < b else rng.uniform(0.5, 4)
    p.rate_gbps = lambda ts: 200.0 if ts >= down else 400.0
    p.wait_s = lambda ts: 2.0e5 if ts < b else (6.0e5 if ts < down else 1.5e6)
    a2a = rng.uniform(1.20, 1.30), rng.uniform(1.6, 1.8)
    stage = nodes.index(nic_n) // 4
    job.a2a_x[(stage, nic_k // 2)] = lambda ts: 1.0 if ts < b else (
        a2a[0] if ts < down else a2a[1])
    log.label(f"nic-{nic_n}-mlx5_{nic_k}", "network", "nic",
              {"level": "nic", "node": nic_n, "nic": f"mlx5_{nic_k}", "port": 1}, b, t1)
    # silent corruption in one rank's expert gradients: its local grad norm, now and then
    sdc_g = rng.randrange(8)
    c = t0 + dur * rng.uniform(0.50, 0.70)
    (sr,) = [r.rank for r in ranks if (r.node, r.gpu) == (sdc_n, sdc_g)]
    every = rng.randint(4, 9)
    hits: list[float] = []

    def grad_x(rank: int, step: int, ts: float) -> float:
        if rank != sr or ts < c or step % every:
            return 1.0
        hits.append(ts)
        return rng.uniform(3.0, 12.0)
    job.grad_x = grad_x
    pauses = run(log, rng, job, t0 + 0.5, t1, 20_000 + 100 * seed,
                 _saves(rng, 20_000 + 100 * seed, (200, 300), (10.0, 14.0)))
    if hits:
        log.label(f"sdc-{sdc_n}-g{sdc_g}", "sdc", "unknown",
                  {"level": "gpu", "node": sdc_n, "gpu": sdc_g}, hits[0], hits[-1],
                  attributable=False)
    _mark_pauses(log, "moe-a", pauses, job.steps_out)
    idle = _idle_in(pauses)
    for n in nodes[:8]:
        for g in range(8):
            gpus[(n, g)].idle = idle
    log.sample(list(gpus.values()), list(ports.values()), t0, t1)
    return log


def extremes(seed: int, minutes: float) -> Log:
    """A ~65 ms MoE job on two nodes and a ~2 min MoE job on eight."""
    rng = random.Random(34_500 + seed)
    t0, t1 = T0 + 86_400.0 * seed + 43_200.0, T0 + 86_400.0 * seed + 43_200.0 + 60.0 * minutes
    dur = t1 - t0
    log = Log(rng, _topology("ep-b", "x", 10), "ep-b", "lab")
    nodes = [f"x-{i:02d}" for i in range(1, 11)]
    gpus = {(n, g): Gpu(n, g, busy_w=rng.uniform(560, 650), die_c=rng.uniform(57, 65),
                        mem_c=rng.uniform(64, 72)) for n in nodes for g in range(8)}
    ports = {(n, k): Port(n, f"mlx5_{k}") for n in nodes for k in range(8)}
    # the fast job: DP16, EP8 inside each node (NVLink all-to-all)
    fast = [Rank(i, nodes[i // 8], i % 8, 0, 0, i, (i // 8,), (i,)) for i in range(16)]
    stalls: dict[int, tuple[int, float]] = {}
    s0 = 400_000 + 1000 * seed
    k = s0 + rng.randint(150, 400)
    while k < s0 + 20_000:
        stalls[k] = (rng.randrange(16), rng.uniform(15, 40))
        k += rng.randint(150, 400)
    fjob = MoeJob("moe-s", fast, {0: rng.uniform(42, 52)}, 0.45, rng.uniform(9, 12),
                  rng.uniform(6, 9), 0.0, 2.0, cov=0.015, hot_steps=(50, 300),
                  stall=stalls.get)
    nvl_n, hot_n, ckm_n = nodes[rng.randrange(2)], *rng.sample(nodes[2:], 2)
    nvl_g = rng.randrange(8)
    a = t0 + dur * rng.uniform(0.20, 0.40)
    rate = rng.uniform(20, 120)
    gpus[(nvl_n, nvl_g)].nvlink_errs = lambda ts: (0, 0, 0) if ts < a else (
        int(rate * (ts - a)), int(rate * (ts - a) / 12), int((ts - a) / 200))
    worst = rng.uniform(1.3, 1.6)
    fjob.a2a_x[(nodes.index(nvl_n),)] = lambda ts: 1.0 + ramp(a, a + 60, worst - 1.0)(ts)
    log.label(f"nvl-{nvl_n}-g{nvl_g}", "hardware", "nvlink",
              {"level": "gpu", "node": nvl_n, "gpu": nvl_g}, a, t1)
    fpauses = run(log, rng, fjob, t0 + 0.2, t1, s0,
                  _saves(rng, s0, (3000, 4500), (8.0, 12.0)))
    for st, (r, ms) in sorted(stalls.items()):
        hit = [x for x in fjob.steps_out if x[0] == st]
        if hit:
            log.effect("gc-pause", {"job": "moe-s", "node": fast[r].node, "gpu": fast[r].gpu},
                       hit[0][1], hit[0][2], f"step {st}: rank {r} +{ms:.0f} ms (garbage "
                       "collection), every rank waits")
    _mark_pauses(log, "moe-s", fpauses, fjob.steps_out)
    # the slow job: TP8 (a node) x PP2 x DP4, EP4 over the DP ranks (a TP group sees one
    # set of tokens: it routes as one), ~2 min steps
    slow = []
    for pp in range(2):
        for dp in range(4):
            node = nodes[2 + pp * 4 + dp]
            for tp in range(8):
                rank = pp * 32 + dp * 8 + tp
                slow.append(Rank(rank, node, tp, tp, pp, dp, (pp,), (pp, dp), (pp, dp)))
    c0 = rng.uniform(95_000, 115_000)
    ljob = MoeJob("moe-l", slow, {0: c0, 1: c0 * rng.uniform(1.02, 1.05)}, 0.4,
                  rng.uniform(8_000, 12_000), rng.uniform(3_000, 4_000), 5_000.0, 400.0,
                  hot_steps=(1, 3))
    hot_g = rng.randrange(8)
    b = t0 + dur * rng.uniform(0.20, 0.35)
    climb = rng.uniform(120, 180)
    g = gpus[(hot_n, hot_g)]
    top = 89.0 + rng.uniform(0, 3) - g.die_c
    g.die_extra_c.append(ramp(b, b + climb, top))
    hot_at = b + climb * (87.0 - g.die_c) / top
    g.reasons.append(lambda ts: 0x20 if ts >= hot_at else 0)
    g.clock_x.append(lambda ts: 0.88 if ts >= hot_at else 1.0)
    (hr,) = [r.rank for r in slow if (r.node, r.gpu) == (hot_n, hot_g)]
    lx = rng.uniform(1.08, 1.12)
    ljob.slow[hr] = lambda ts: lx if ts >= hot_at else 1.0
    log.label(f"hot-{hot_n}-g{hot_g}", "slow_node", "thermal",
              {"level": "gpu", "node": hot_n, "gpu": hot_g}, b, t1)
    ckm_g = rng.randrange(8)
    c = t0 + dur * rng.uniform(0.45, 0.60)
    (cr,) = [r.rank for r in slow if (r.node, r.gpu) == (ckm_n, ckm_g)]
    bad: list[float] = []

    def bad_sum(rank: int, step: int, ts: float) -> bool:
        if rank == cr and ts >= c:
            bad.append(ts)
            return True
        return False
    ljob.bad_sum = bad_sum
    first = 7_000 + 10 * seed
    save_at = first + rng.randint(2, 4)
    lpauses = run(log, rng, ljob, t0 + rng.uniform(5, 60), t1, first,
                  lambda s: round(rng.uniform(30, 50), 2) if s == save_at else 0.0)
    if bad:
        log.label(f"ckm-{ckm_n}-g{ckm_g}", "sdc", "gpu_hardware",
                  {"level": "gpu", "node": ckm_n, "gpu": ckm_g}, bad[0], bad[-1])
    _mark_pauses(log, "moe-l", lpauses, ljob.steps_out)
    log.effect("long-steps", {"job": "moe-l"}, t0, t1,
               "~2 min steps (64-way gradient accumulation): one step record a rank each")
    fidle, lidle = _idle_in(fpauses), _idle_in(lpauses)
    for (n, _), gg in gpus.items():
        gg.idle = fidle if n in nodes[:2] else lidle
    log.sample(list(gpus.values()), list(ports.values()), t0, t1)
    return log


def build(story: str, seed: int, minutes: float) -> Log:
    """The story's log for ``seed``."""
    return {"ep": ep, "extremes": extremes}[story](seed, minutes)
