"""blind37's two stories: HSDP sharded within a node (``node8``) and across a node pair
(``pair16``); every choice from the seed, the labels from the records the faults changed."""

from __future__ import annotations

import random

from bench.blind37.fsdp import Fault, Job, Shape
from bench.blind37.world import GPUS, NICS, Busy, Gpu, Log, Port, ecc, ports, thermal, topology

STORIES = ("node8", "pair16")
EPOCH = 1_767_225_600.0  # 2026-01-01


def _label(log: Log, fid: str, kind: str, cause: str, scope: dict, start: float, end: float,
           attributable: bool) -> None:
    log.labels.append({"fault_id": fid, "kind": kind, "cause": cause, "scope": scope,
                       "start_ts": round(start, 3), "end_ts": round(end, 3),
                       "attributable": attributable})


def _collect(log: Log, rng: random.Random, job: Job, nodes: list[str], t0: float, t1: float,
             gpus: dict, nics: dict) -> None:
    for nd in nodes:
        busy = [job.busy.get((nd, g)) or Busy() for g in range(GPUS)]
        thermal(log, rng, nd, t0, t1, busy, [gpus[(nd, g)] for g in range(GPUS)])
        ecc(log, rng, nd, t0, t1)
        ports(log, rng, nd, t0, t1, [nics[(nd, k)] for k in range(GPUS)])


def _stalls(rng: random.Random, steps: int, nodes: list[str], log: Log, name: str,
            t0: float, step_s: float) -> dict:
    """3-5 one-step loader stalls (0.6-2.0 s) on one rank each: routine."""
    out = {}
    for _ in range(rng.randint(3, 5)):
        s, nd, g = rng.randrange(5, steps), rng.choice(nodes), rng.randrange(GPUS)
        out[(s, nd, g)] = rng.uniform(0.6, 2.0)
    return out


def node8(seed: int, minutes: float) -> Log:
    """HSDP, shard group = one node (NVLink all-gathers), 8 replicas over the fabric."""
    rng = random.Random(3707_000 + seed)
    nodes = [f"fa-{i:02d}" for i in range(1, 9)]
    log = Log(random.Random(rng.random()), topology("fs-a", nodes))
    t0 = EPOCH + seed * 86_400.0 + 3_600.0
    dur = minutes * 60.0
    t1 = t0 + dur
    shape = Shape(compute_s=rng.uniform(2.5, 2.9), exposed=rng.uniform(0.04, 0.06),
                  hidden=rng.uniform(0.88, 0.95), hidden_next=rng.uniform(0.85, 0.92),
                  allreduce_s=rng.uniform(0.22, 0.30), other_s=rng.uniform(0.05, 0.08),
                  offload_s=rng.uniform(0.40, 0.46), offload_window_s=0.5,
                  nic_bytes=int(3.5e9), cross_node=False)
    job = Job("hsdp-node8", "fs-a", "pretrain", shape, random.Random(rng.random()))
    gpus = {(nd, g): Gpu() for nd in nodes for g in range(GPUS)}
    nics = {(nd, k): Port() for nd in nodes for k in range(GPUS)}
    job.ports = nics
    a, b, c = rng.sample(nodes, 3)
    g_slow = rng.randrange(GPUS)
    k_nic, k_pcie = rng.sample(range(GPUS), 2)
    slow = Fault(f"slowgpu-{a}-g{g_slow}", a, g_slow, t0 + dur * rng.uniform(0.15, 0.30),
                 work=rng.uniform(1.12, 1.20))
    t_nic = t0 + dur * rng.uniform(0.35, 0.50)
    pt = nics[(b, k_nic)]
    if seed % 2 == 0:       # retrained at half its lanes: 200 Gb/s, no error
        pt.half_rate_from = t_nic
        nic = Fault(f"nicdeg-{b}-{NICS[k_nic]}", b, k_nic, t_nic, ar=rng.uniform(1.6, 1.9))
    else:                   # a bad cable: symbol errors, link-level retransmits
        pt.errs_from, pt.err_rate = t_nic, rng.uniform(20, 200)
        nic = Fault(f"nicdeg-{b}-{NICS[k_nic]}", b, k_nic, t_nic, ar=rng.uniform(1.3, 1.5))
    pcie = Fault(f"pcie8-{c}-g{k_pcie}", c, k_pcie, t0 + dur * rng.uniform(0.50, 0.65),
                 offload_bw=0.5, ar=rng.uniform(1.3, 1.5))
    job.faults = [slow, nic, pcie]
    step_s = shape.compute_s * (1 + shape.exposed) + shape.allreduce_s + shape.other_s
    steps = int(dur / step_s)
    stalls = _stalls(rng, steps, nodes, log, job.name, t0, step_s)
    save_at = t0 + dur * rng.uniform(0.25, 0.75)
    save_s = rng.uniform(6.0, 10.0)
    log.effect("sharded-save", {"job": job.name}, save_at - 5, save_at + save_s + 10)
    pref_at = t0 + dur * rng.uniform(0.40, 0.60)
    deeper = shape.exposed * rng.uniform(0.3, 0.5)
    log.effect("prefetch-deeper", {"job": job.name}, pref_at - 5, pref_at + 120)
    log.effect("packed-length-spread", {"job": job.name}, t0, t1)
    end = job.run(log, [[(nd, g) for g in range(GPUS)] for nd in nodes], t0 + 5.0, t1,
                  exposed=lambda t: deeper if t >= pref_at else None,
                  saves=[(save_at, save_s)], stalls=stalls)
    _collect(log, rng, job, nodes, t0, t1, gpus, nics)
    last = max(end, t1 - 10.0)
    for f, scope, kind, cause, attr, tele in (
            (slow, {"level": "gpu", "node": a, "gpu": g_slow}, "slow_node", "unknown", False,
             float("inf")),
            (nic, {"level": "nic", "node": b, "nic": NICS[k_nic], "port": 1}, "network", "nic",
             True, pt.first),
            (pcie, {"level": "gpu", "node": c, "gpu": k_pcie}, "slow_node", "unknown", False,
             float("inf"))):
        _label(log, f.fid, kind, cause, scope, min(f.first, tele), last, attr)
    return log


def pair16(seed: int, minutes: float) -> Log:
    """HSDP, shard group = two nodes (all-gathers over the fabric), 4 replicas; resized to 3
    mid-run (the freed pair goes idle; the rendezvous regroups the survivors)."""
    rng = random.Random(3707_500 + seed)
    nodes = [f"fb-{i:02d}" for i in range(1, 9)]
    log = Log(random.Random(rng.random()), topology("fs-b", nodes))
    t0 = EPOCH + seed * 86_400.0 + 7_200.0
    dur = minutes * 60.0
    t1 = t0 + dur
    shape = Shape(compute_s=rng.uniform(3.3, 3.8), exposed=rng.uniform(0.09, 0.13),
                  hidden=rng.uniform(0.85, 0.93), hidden_next=rng.uniform(0.85, 0.92),
                  allreduce_s=rng.uniform(0.28, 0.36), other_s=rng.uniform(0.06, 0.09),
                  offload_s=rng.uniform(0.42, 0.48), offload_window_s=0.55,
                  nic_bytes=int(9e9), cross_node=True)
    job = Job("hsdp-pair16", "fs-b", "sft", shape, random.Random(rng.random()))
    gpus = {(nd, g): Gpu() for nd in nodes for g in range(GPUS)}
    nics = {(nd, k): Port() for nd in nodes for k in range(GPUS)}
    job.ports = nics
    pairs = [nodes[i:i + 2] for i in range(0, 8, 2)]
    freed = rng.choice(pairs)
    stay = [nd for nd in nodes if nd not in freed]
    a, b, c = rng.sample(stay, 3)
    k_flap = rng.randrange(GPUS)
    g_hot = rng.randrange(GPUS)
    t_flap = t0 + dur * rng.uniform(0.15, 0.35)
    downs, t = [], t_flap
    while t < t1:
        d = rng.uniform(2.0, 8.0)
        downs.append((t, t + d))
        t += d + rng.uniform(40.0, 120.0)
    nics[(a, k_flap)].downs = downs
    flap = Fault(f"flap-{a}-{NICS[k_flap]}", a, k_flap, t_flap, downs=downs)
    t_hot = t0 + dur * rng.uniform(0.25, 0.45)
    clk = rng.uniform(1560.0, 1680.0)
    gpus[(b, g_hot)] = Gpu(hot_from=t_hot, hot_clock_mhz=clk)
    hot = Fault(f"hot-{b}-g{g_hot}", b, g_hot, t_hot, work=(1980.0 / clk) ** 0.9,
                work_from=18.0)
    mem = Fault(f"hostmem-{c}", c, 0, t0 + dur * rng.uniform(0.40, 0.70),
                offload_bw=rng.uniform(0.5, 0.6), offload_jitter=0.25, whole_node=True)
    job.faults = [flap, hot, mem]
    step_s = shape.compute_s * (1 + shape.exposed) + shape.allreduce_s + shape.other_s
    steps = int(dur / step_s)
    stalls = _stalls(rng, steps, nodes, log, job.name, t0, step_s)
    log.effect("packed-length-spread", {"job": job.name}, t0, t1)
    t_resize = t0 + dur * rng.uniform(0.50, 0.62)
    save_s = rng.uniform(6.0, 10.0)
    end1 = job.run(log, [[(nd, g) for nd in pr for g in range(GPUS)] for pr in pairs],
                   t0 + 5.0, t_resize, saves=[(t_resize - 2 * step_s, save_s)], stalls=stalls)
    gap = rng.uniform(70.0, 110.0)
    regroup = stay[:]
    while True:
        rng.shuffle(regroup)
        new = [regroup[i:i + 2] for i in range(0, 6, 2)]
        if not any(sorted(p) in [sorted(q) for q in pairs] for p in new):
            break
    log.effect("elastic-resize-reshard", {"job": job.name}, t_resize - 2 * step_s - 5,
               end1 + gap + 6 * step_s)
    for nd in freed:
        log.effect("freed-node-idle", {"node": nd}, end1, t1)
    end = job.run(log, [[(nd, g) for nd in pr for g in range(GPUS)] for pr in new],
                  end1 + gap, t1, stalls=stalls, warmup=2)
    _collect(log, rng, job, nodes, t0, t1, gpus, nics)
    last = max(end, t1 - 10.0)
    for f, scope, kind, cause, attr, tele in (
            (flap, {"level": "nic", "node": a, "nic": NICS[k_flap], "port": 1}, "network",
             "nic", True, nics[(a, k_flap)].first),
            (hot, {"level": "gpu", "node": b, "gpu": g_hot}, "slow_node", "thermal", True,
             gpus[(b, g_hot)].first),
            (mem, {"level": "node", "node": c}, "slow_node", "unknown", False, float("inf"))):
        _label(log, f.fid, kind, cause, scope, min(f.first, tele), last, attr)
    return log


def build(story: str, seed: int, minutes: float) -> Log:
    return {"node8": node8, "pair16": pair16}[story](seed, minutes)
