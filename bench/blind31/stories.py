"""blind31's two stories; every choice (times, nodes, sizes) drawn from the seed."""

from __future__ import annotations

import hashlib
import math
import random

from bench.blind31.jobs import SyncJob, Work, layout
from bench.blind31.world import Log, Node, ecc_rows, nic_rows, symbol_rate, thermal_rows, topology

T0 = 1_781_000_000.0


def _sum(seed: int, step: int, salt: str = "") -> str:
    return hashlib.blake2b(f"{seed}/{step}/{salt}".encode(), digest_size=8).hexdigest()


def _rows(log: Log, nodes: dict[str, Node], t0: float, t1: float, cluster: str, traffic,
          thermal: dict | None = None, nvlink: dict | None = None,
          port: dict | None = None) -> None:
    """Every node's thermal, ECC and IB rows over ``t0..t1``."""
    extra = {"cluster": cluster}
    for name, nd in nodes.items():
        thermal_rows(log, nd, t0, t1, extra, (thermal or {}).get(name))
        ecc_rows(log, name, nd.rng, t0, t1, extra,
                 nvlink if nvlink and nvlink["node"] == name else None)
        nic_rows(log, name, nd.rng, t0, t1, extra, lambda ts, n=name: traffic(n, ts),
                 port if port and port["node"] == name else None)


def vlm(seed: int, seconds: int) -> tuple[Log, str]:
    """A vision-language model's pretraining: TP8 x PP2 x DP4 on v-01..08, the vision encoder
    on stage 0, each replica's batch a mix of text, images and video clips."""
    rng = random.Random(f"blind31-vlm-{seed}")
    t0 = T0 + seed * 86_400.0
    t1 = t0 + seconds
    names = [f"v-{i:02d}" for i in range(1, 9)]
    spares = ["v-09", "v-10"]
    log = Log(seed)
    nodes = {n: Node.make(n, random.Random(f"vlm-{seed}-{n}"), t0) for n in names + spares}
    ranks = layout(names, tp=8, pp=2)
    job = SyncJob(log, "vlm-pt", "mm", "mm-a", ranks, nodes, rng, rng.uniform(0.008, 0.014),
                  steps_max=3000)
    hbm_node, load_node, nvl_node = rng.sample(names, 3)
    hbm_gpu, nvl_gpu = rng.randrange(8), rng.randrange(8)
    t_hbm = t0 + seconds * rng.uniform(0.18, 0.32)
    t_load = t0 + seconds * rng.uniform(0.45, 0.60)
    t_nvl = t0 + seconds * rng.uniform(0.65, 0.80)
    f_hbm = log.fault(f"hbm-{hbm_node}-g{hbm_gpu}", "slow_node", "unknown",
                      {"level": "gpu", "node": hbm_node, "gpu": hbm_gpu}, False)
    f_load = log.fault(f"loader-{load_node}", "slow_node", "unknown",
                       {"level": "node", "node": load_node}, False)
    f_nvl = log.fault(f"nvl-{nvl_node}-g{nvl_gpu}", "hardware", "nvlink",
                      {"level": "gpu", "node": nvl_node, "gpu": nvl_gpu})
    a_hbm = rng.uniform(0.04, 0.06)
    k_nvl = rng.uniform(0.07, 0.10)
    base = (rng.uniform(1550.0, 1750.0), rng.uniform(1350.0, 1500.0))
    draw = (rng.uniform(600.0, 640.0), rng.uniform(620.0, 650.0))
    ar = rng.uniform(300.0, 420.0)
    m0, m1 = 0.10, rng.uniform(0.20, 0.24)
    t_cur = t0 + seconds * rng.uniform(0.38, 0.55)
    sd, lag = rng.uniform(0.06, 0.08), 0.6
    x = [0.0] * 4
    save_every = rng.randint(80, 120)
    stall_step, stall_node = rng.randint(40, 200), rng.choice(names)
    t = t0 + rng.uniform(5.0, 15.0)
    job_start, step = t, 0
    log.effect("data_mix", {"job": "vlm-pt"}, t, t1,
               f"each replica's video share wanders (AR(1), sd {sd:.3f}, lag-1 {lag}): its "
               "stage-0 node computes up to +25 % for a few steps, its stage-1 node +5 %")
    log.effect("vision_stage", {"job": "vlm-pt"}, t, t1,
               "stage 0 (vision encoder) computes 10-25 % longer than stage 1")
    log.effect("curriculum", {"job": "vlm-pt"}, t_cur, t_cur + 20.0,
               f"the data mix's video share steps {m0:.2f} -> {m1:.2f} over 20 s: every "
               "stage-0 rank +11-15 %, every stage-1 rank +3 %, for good")
    for sp in spares:
        log.effect("idle_spare", {"node": sp}, t0, t1, "a spare, idle all log")
    while True:
        m = m0 if t < t_cur else m0 + (m1 - m0) * min(1.0, (t - t_cur) / 20.0)
        v = []
        for d in range(4):
            x[d] = lag * x[d] + math.sqrt(1 - lag * lag) * sd * rng.gauss(0.0, 1.0)
            v.append(min(0.6, max(0.0, m + x[d])))
        comp, demand, loader, tags = [], [], [], {}
        for p in ranks:
            c = base[p.pp] * (1.0 + (1.1 if p.pp == 0 else 0.25) * (v[p.dp] - m0))
            if p.node == hbm_node and p.gpu == hbm_gpu and t >= t_hbm:
                c *= 1.0 + a_hbm + (0.3 if p.pp == 0 else 0.1) * v[p.dp]
                tags[p.rank] = f_hbm
            if p.node == nvl_node and p.gpu == nvl_gpu and t >= t_nvl:
                c *= 1.0 + k_nvl
                tags[p.rank] = f_nvl
            comp.append(c)
            demand.append(draw[p.pp] + (200.0 * v[p.dp] if p.pp == 0 else 0.0))
            ld = rng.uniform(8.0, 25.0)
            if rng.random() < 0.0015:
                ld += rng.uniform(300.0, 900.0)
            if step == stall_step and p.node == stall_node:
                ld += 2000.0
            if p.node == load_node and t >= t_load:
                ld += rng.uniform(350.0, 600.0)
                tags[p.rank] = f_load
            loader.append(ld)
        saving = step > 0 and step % save_every == 0
        if saving:
            save_s = rng.uniform(12.0, 20.0)
            loader = [ld + save_s * 1000.0 for ld in loader]
            log.effect("save", {"job": "vlm-pt"}, t, t + save_s + 3.0,
                       f"a checkpoint save of {save_s:.1f} s on every rank, in neither")
        if step == stall_step:
            log.effect("loader_stall", {"node": stall_node}, t, t + 5.0,
                       "one step's loader stall on every rank of the node (2 s); the job "
                       "waits")
        nxt = job.step(step, t, Work(comp, demand, ar * rng.uniform(0.97, 1.05), loader, tags))
        step += 1
        t = nxt
        if t > t1 - 3.0:
            break
    for sp in spares:
        nodes[sp].idle(t0, t1)
    log.effect("power_cap", {"job": "vlm-pt"}, job_start, t1,
               "a video-heavy batch can take a stage-0 GPU to its 700 W limit: 0x4, a few "
               "per cent of clock, that replica alone")

    def traffic(node: str, ts: float) -> float:
        return 0.0 if node in spares else 4.5e9
    _rows(log, nodes, t0, t1, "mm-a", traffic,
          nvlink={"node": nvl_node, "gpu": nvl_gpu, "fault": f_nvl, "from_ts": t_nvl,
                  "rate": rng.uniform(4.0, 12.0)})
    return log, topology("vlm", names + spares)


BUCKETS = (("256px-16f", 0.45, 480.0), ("512px-16f", 1.0, 640.0), ("512px-32f", 1.9, 735.0),
           ("720p-32f", 3.0, 770.0))
WEIGHTS = (0.25, 0.35, 0.25, 0.15)


def diffusion(seed: int, seconds: int) -> tuple[Log, str]:
    """A video diffusion model's training: pure DP (FSDP) over 48 GPUs on d-01..06; every step
    all ranks draw one resolution x length bucket, so the job's step swings 0.45-3x."""
    rng = random.Random(f"blind31-diffusion-{seed}")
    t0 = T0 + seed * 86_400.0 + 40_000.0
    t1 = t0 + seconds
    names = [f"d-{i:02d}" for i in range(1, 7)]
    log = Log(seed + 1000)
    nodes = {n: Node.make(n, random.Random(f"diff-{seed}-{n}"), t0) for n in names}
    ranks = layout(names, tp=None)
    job = SyncJob(log, "vid-dit", "gen", "mm-b", ranks, nodes, rng, rng.uniform(0.012, 0.02),
                  steps_max=3000)
    hot_node, brake_node, ber_node, sdc_node = rng.sample(names[1:], 4)
    hot_gpu, sdc_gpu, ber_nic = rng.randrange(8), rng.randrange(8), f"mlx5_{rng.randrange(8)}"
    t_hot = t0 + seconds * rng.uniform(0.15, 0.30)
    t_brake = t0 + seconds * rng.uniform(0.40, 0.55)
    t_ber = t0 + seconds * rng.uniform(0.55, 0.68)
    t_sdc = t0 + seconds * rng.uniform(0.75, 0.85)
    f_hot = log.fault(f"hot-{hot_node}-g{hot_gpu}", "slow_node", "thermal",
                      {"level": "gpu", "node": hot_node, "gpu": hot_gpu})
    f_brake = log.fault(f"brake-{brake_node}", "slow_node", "power",
                        {"level": "node", "node": brake_node})
    f_ber = log.fault(f"ber-{ber_node}-{ber_nic}", "network", "nic",
                      {"level": "nic", "node": ber_node, "nic": ber_nic, "port": 1})
    f_sdc = log.fault(f"sdc-{sdc_node}-g{sdc_gpu}", "sdc", "gpu_hardware",
                      {"level": "gpu", "node": sdc_node, "gpu": sdc_gpu})
    hot_r = rng.uniform(2.5, 2.8)
    brake = (600.0, rng.uniform(400.0, 440.0))
    port = {"node": ber_node, "nic": ber_nic, "fault": f_ber, "from_ts": t_ber,
            "ber0": rng.uniform(1.0, 3.0), "double_s": rng.uniform(40.0, 60.0)}
    first_flap = t_ber + port["double_s"] * math.log2(60.0 / port["ber0"])
    flaps, f = [], first_flap
    while f < t1:
        flaps.append(f)
        f += rng.uniform(60.0, 120.0)
    port["flaps"] = flaps
    base = rng.uniform(560.0, 650.0)
    ar0 = rng.uniform(180.0, 250.0)
    save_every, preview_every = rng.randint(150, 220), rng.randint(120, 170)
    t = t0 + rng.uniform(5.0, 15.0)
    step, flap_i = 0, 0
    slow_tags = {(hot_node, hot_gpu): (f_hot, 0x20)}
    slow_tags.update({(brake_node, g): (f_brake, 0x80) for g in range(8)})
    hot_set = brake_set = False
    log.effect("buckets", {"job": "vid-dit"}, t, t1,
               "every step all 48 ranks take one bucket (256px-16f .. 720p-32f): the job's "
               "step swings 0.45-3x from one step to the next, every rank alike")
    log.effect("power_cap", {"job": "vid-dit"}, t, t1,
               "the two heavy buckets ask 735-770 W: every GPU at its 700 W limit with 0x4, "
               "a few per cent of clock, on 40 % of steps")
    while True:
        if not hot_set and t >= t_hot:
            nodes[hot_node].gpus[hot_gpu].r_cw *= hot_r
            hot_set = True
        if not brake_set and t >= t_brake:
            nodes[brake_node].brake = brake
            brake_set = True
        name, cost, draw = rng.choices(BUCKETS, WEIGHTS)[0]
        comp = [base * cost * rng.uniform(0.97, 1.03) for _ in ranks]
        demand = [draw * rng.uniform(0.985, 1.015) for _ in ranks]
        loader = [rng.uniform(10.0, 30.0) + (rng.uniform(300.0, 900.0)
                                             if rng.random() < 0.0015 else 0.0) for _ in ranks]
        ar = ar0 * rng.uniform(0.97, 1.05)
        rate = symbol_rate(port, t)
        if rate > 10.0:  # link-level retransmissions stretch the ring's slowest hop
            ar *= 1.0 + min(0.3, 0.06 * math.log2(rate / 10.0))
        while flap_i < len(flaps) and flaps[flap_i] <= t:
            ar += rng.uniform(2000.0, 4000.0)  # NCCL retries over the retrained link
            flap_i += 1
        tags = {}
        checks = [_sum(seed, step)] * len(ranks)
        for p in ranks:
            if p.node == sdc_node and p.gpu == sdc_gpu and t >= t_sdc:
                checks[p.rank] = _sum(seed, step, "bad")
                tags[p.rank] = f_sdc
        if step > 0 and step % preview_every == 0:
            pv = rng.uniform(6.0, 11.0)
            loader[0] += pv * 1000.0
            log.effect("preview", {"node": "d-01"}, t, t + pv + 5.0,
                       f"rank 0 renders preview clips for {pv:.1f} s (in neither); the other "
                       "47 ranks wait in comm")
        if step > 0 and step % save_every == 0:
            sv = rng.uniform(10.0, 16.0)
            loader = [ld + sv * 1000.0 for ld in loader]
            log.effect("save", {"job": "vid-dit"}, t, t + sv + 4.0,
                       f"a checkpoint save of {sv:.1f} s on every rank, in neither")
        t = job.step(step, t, Work(comp, demand, ar, loader, tags, checks), slow_tags)
        step += 1
        if t > t1 - 3.0:
            break

    def traffic(node: str, ts: float) -> float:
        return 9.0e9
    hot = {hot_node: {hot_gpu: (f_hot, t_hot, 0)}}
    hot.setdefault(brake_node, {}).update({g: (f_brake, t_brake, 0x80) for g in range(8)})
    _rows(log, nodes, t0, t1, "mm-b", traffic, thermal=hot, port=port)
    return log, topology("diffusion", names)


STORIES = {"vlm": vlm, "diffusion": diffusion}
