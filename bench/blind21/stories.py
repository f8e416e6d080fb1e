"""blind21's two stories: `facility` (the building and the calendar) and `model` (the model's
own shapes). Every choice comes from the seed; each story returns its topology record, its
records in arrival order, its labels and its routine effects."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from bench.blind21 import sim
from bench.blind21 import world as W

STORIES = ("facility", "model")
T0 = 1_796_000_000.0          # 2026-11-30 UTC: a weekday afternoon, when utilities ask for DR


@dataclass
class Built:
    topology: dict
    records: list[tuple[str, dict]]
    labels: list[dict]
    effects: list[dict]


def _label(rec: sim.Recorder, fid: str, kind: str, cause: str, scope: dict,
           attributable: bool = True) -> dict:
    a, b = rec.spans[fid]
    return {"fault_id": fid, "kind": kind, "cause": cause, "scope": scope,
            "start_ts": a, "end_ts": b, "attributable": attributable}


def _effect(cl: sim.Cluster, name: str, scope: dict, a: float, b: float, **why) -> dict:
    return {"effect": name, "scope": scope, "start_ts": round(cl.t0 + a, 3),
            "end_ts": round(cl.t0 + b, 3), "expect": "pages nobody", **why}


def _dark(cl: sim.Cluster, node: str, a: float, b: float) -> None:
    cl.dark[node].append((a, b))


def facility(seed: int, minutes: float) -> Built:
    """16 HGX H100 `dc01..16` under a Slurm topology.conf: a demand-response power cap on a
    row, a rolling firmware flash, a warm afternoon on one aisle; a PSU failing, a GPU's heat
    sink losing contact."""
    rng = np.random.default_rng([21, seed, 1])
    T = int(minutes * 60)
    nodes = [f"dc{n:02d}" for n in range(1, 17)]
    cl = sim.Cluster(nodes, T0 + seed * 86_400.0, T, rng)
    fx: list[dict] = []
    topo = {"format": "slurm", "text": (
        "# site topology.conf (tree plugin)\n"
        "SwitchName=leaf1 Nodes=dc[01-08] LinkSpeed=400\n"
        "SwitchName=leaf2 Nodes=dc[09-16] LinkSpeed=400\n"
        "SwitchName=spine1 Switches=leaf[1-2]\n")}
    end = T - 1.0
    llm = sim.Job("llm-a", "research", nodes[0:8], 8, 2, 4, float(rng.uniform(2800, 3200)),
                  float(rng.uniform(0, 3)), end, demand_w=670.0, comm_frac=0.14,
                  save_every_s=float(rng.uniform(300, 420)), save_s=float(rng.uniform(8, 14)))
    ftb = sim.Job("ft-b", "product", nodes[8:12], 8, 1, 4, float(rng.uniform(1300, 1500)),
                  float(rng.uniform(0, 3)), end, demand_w=640.0,
                  save_every_s=float(rng.uniform(240, 360)), save_s=float(rng.uniform(5, 9)))
    c_end = float(rng.uniform(0.35, 0.45)) * T
    ftc = sim.Job("ft-c", "product", nodes[12:14], 8, 1, 2, float(rng.uniform(1000, 1200)),
                  float(rng.uniform(0, 5)), c_end, demand_w=650.0)
    jobs = [llm, ftb, ftc]
    for j in jobs:
        cl.occupy(j)
    fx.append(_effect(cl, "job-ends", {"job": "ft-c"}, c_end - 5, c_end + 5))

    # A rolling firmware flash (BMC + GPU VBIOS): Slurm reboots idle nodes one at a time --
    # the spares first, then ft-c's two nodes once it has ended (`scontrol reboot ASAP`).
    t = float(rng.uniform(0.04, 0.08)) * T
    for node, after in (("dc15", None), ("dc16", None), ("dc13", c_end), ("dc14", None)):
        if after is not None:
            t = max(t, after + float(rng.uniform(15, 45)))
        d = float(rng.uniform(180, 300))
        if t + d < T - 30:
            _dark(cl, node, t, t + d)
            fx.append(_effect(cl, "firmware-flash", {"node": node}, t, t + d + 30))
        t += d + float(rng.uniform(20, 60))

    # The afternoon on one aisle: inlet up 4-7 C over the log (the sun on the west wall).
    aisle = nodes[0:8] if seed % 2 == 0 else nodes[8:16]
    amp = float(rng.uniform(4.0, 7.0))
    warm = amp * np.sin(0.5 * math.pi * np.arange(T) / T)
    for node in aisle:
        cl.inlet[nodes.index(node)] += warm
        fx.append(_effect(cl, "diurnal-aisle", {"node": node}, 0, T))

    # Demand response: the utility asks for load shed; the site's power manager caps every
    # GPU of one row for 12-15 minutes (each node's BMC within 25 s). Even seeds the row is
    # dc09-16 (whole jobs), odd seeds dc03-10 (half of llm-a's stage-0 replicas, half of ft-b).
    row = nodes[8:16] if seed % 2 == 0 else nodes[2:10]
    dr_a = float(rng.uniform(0.18, 0.28)) * T
    dr_b = min(dr_a + float(rng.uniform(12, 15)) * 60, T - 40.0)
    cap_w = float(rng.uniform(460, 540))
    for node in row:
        a = int(dr_a + rng.uniform(0, 25))
        b = int(dr_b + rng.uniform(0, 25))
        for g in range(8):
            cl.limit[cl.gi(node, g), a:b] = cap_w
        fx.append(_effect(cl, "dr-power-cap", {"node": node}, a, b, cap_w=round(cap_w)))
    for j in jobs:
        if set(j.nodes) & set(row):
            fx.append(_effect(cl, "dr-power-cap", {"job": j.name}, dr_a, dr_b + 25))

    # A PSU failing: the BMC asserts PWRBRK# in bursts -- HW power brake (0x80) on every GPU
    # of the node, 2-10 s at a time. Even seeds outside the capped row, odd seeds inside it.
    pool = [n for n in nodes[0:8] if n not in row] if seed % 2 == 0 else nodes[4:10]
    psu = pool[int(rng.integers(len(pool)))]
    t = float(rng.uniform(0.55, 0.70)) * T
    fid_psu = f"psu-{psu}"
    rows, steps = cl.tag("row", fid_psu), cl.tag("step", fid_psu)
    while t < T - 5:
        d = float(rng.uniform(2, 10))
        a, b = int(t), min(int(t + d), T)
        for g in range(8):
            i = cl.gi(psu, g)
            cl.brake[i, a:b] = True
            rows[i, a:b] = steps[i, a:b] = True
        t += d + float(rng.uniform(6, 40))

    # A heat sink losing contact (pump-out of its thermal interface): one GPU's thermal
    # resistance climbs 0.035-0.05 C/W over 14-20 min until SW thermal slowdown holds it at 87 C.
    gpus = [(n, g) for n in nodes[0:12] if n != psu for g in range(8)]
    hs_node, hs_gpu = gpus[int(rng.integers(len(gpus)))]
    i = cl.gi(hs_node, hs_gpu)
    a = int(float(rng.uniform(0.08, 0.18)) * T)
    ramp = float(rng.uniform(14, 20)) * 60
    d_r = float(rng.uniform(0.035, 0.05))
    x = np.clip((np.arange(T) - a) / ramp, 0.0, 1.0)
    cl.r_th[i] = cl.r_th[i] + d_r * x
    fid_hs = f"heatsink-{hs_node}-g{hs_gpu}"
    cl.tag("row", fid_hs)[i, a:] = True

    cl.settle()
    cl.tag("step", fid_hs)[i] = (cl.reasons[i] & 0x20) > 0
    rec = sim.Recorder(np.random.default_rng([21, seed, 1, 1]))
    for j in jobs:
        sim.run_job(cl, j, rec, rng)
    sim.sample(cl, rec, rng, 10.0, 30.0, 10.0,
               {**{n: 6.0 for n in llm.nodes}, **{n: 9.0 for n in ftb.nodes},
                **{n: 8.0 for n in ftc.nodes}})
    labels = [_label(rec, fid_psu, "slow_node", "power", {"level": "node", "node": psu})]
    if fid_hs in rec.spans:
        labels.append(_label(rec, fid_hs, "slow_node", "thermal",
                             {"level": "gpu", "node": hs_node, "gpu": hs_gpu}))
    fx += [_effect(cl, "checkpoint-save", {"job": j.name}, s, e) for j in jobs
           for s, e in j.saves]
    return Built(topo, rec.records(), labels, fx)


def _moe_extra(rng: np.random.Generator, n: int):
    """Expert-parallel routing over 8 EP ranks (dp % 8): one hot expert at a time, held 10-40
    steps at +8-25 % of its EP rank's expert work, then moving; every EP rank's load drawn anew
    each step too. The expert FFN is ~45 % of a step's compute; the capacity factor (1.25)
    bounds the hot rank."""
    hot = np.zeros(n, int)
    mag = np.zeros(n)
    k = 0
    while k < n:
        d = int(rng.integers(10, 41))
        hot[k:k + d] = int(rng.integers(8))
        mag[k:k + d] = float(rng.uniform(0.08, 0.25))
        k += d
    noise = rng.normal(0.0, 0.025, (n, 8))

    def extra(job: sim.Job, k: int, ranks: list) -> np.ndarray:
        kk = (job.step0 - 1 + k) % n
        ep = np.array([dp % 8 for *_, dp in ranks])
        return 1.0 + 0.45 * (np.where(ep == hot[kk], mag[kk], 0.0) + noise[kk, ep])
    return extra


def _cp_extra(rng: np.random.Generator, n: int, cp: int, dp: int):
    """Context parallelism inside `dp_rank` (the reporter's dp rank is Megatron's data-
    parallel-with-context rank): each CP chunk's attention (~55 % of compute at 128k) follows
    its packed documents' masks, drawn anew each step; the step's total length too (x ~4 %)."""
    part = rng.normal(0.0, 0.07, (n, cp * dp))
    whole = rng.normal(0.0, 0.04, n)

    def extra(job: sim.Job, k: int, ranks: list) -> np.ndarray:
        kk = k % n
        idx = np.array([d for *_, d in ranks])
        return (1.0 + 0.55 * part[kk, idx]) * math.exp(whole[kk])
    return extra


def model(seed: int, minutes: float) -> Built:
    """16 HGX H100 `mx01..16`, faultline topology with racks: a mixture-of-experts job whose
    hot expert moves between ranks, a long-context job with context-parallel ranks reported as
    data-parallel; a GPU falling off the bus under the MoE job (the job dies, is requeued), a
    GPU of the long-context job silently slow."""
    rng = np.random.default_rng([21, seed, 2])
    T = int(minutes * 60)
    nodes = [f"mx{n:02d}" for n in range(1, 17)]
    cl = sim.Cluster(nodes, T0 + seed * 86_400.0 + 3_600.0, T, rng)
    fx: list[dict] = []
    topo = {"format": "faultline", "text": (
        "Topology=mx-128 Version=1\n"
        "NodeSet=mx[01-16] Gpus=8 Nics=mlx5_[0-7]\n"
        "Rack=rack-[1-4] Nodes=mx[01-16]\n"
        "SwitchName=leaf-[1-2] Nodes=mx[01-16]\n"
        "SwitchName=spine-1 Switches=leaf-[1-2]\n")}
    end = T - 1.0
    t_x = float(rng.uniform(0.28, 0.38)) * T
    moe_nodes = nodes[0:8]
    moe_step = float(rng.uniform(2000, 2400))
    moe_extra = _moe_extra(rng, 4000)
    moe1 = sim.Job("moe-a", "research", moe_nodes, 2, 1, 32, moe_step, float(rng.uniform(0, 3)),
                   t_x, demand_w=640.0, comm_frac=0.22, jitter=0.012, extra=moe_extra,
                   save_every_s=float(rng.uniform(240, 330)), save_s=float(rng.uniform(6, 10)))
    lc = sim.Job("lc-b", "longctx", nodes[8:12], 8, 1, 2, float(rng.uniform(5500, 6500)),
                 float(rng.uniform(0, 5)), end, demand_w=690.0, comm_frac=0.15, cp=2,
                 extra=_cp_extra(rng, 1000, 2, 2), save_every_s=float(rng.uniform(360, 480)),
                 save_s=float(rng.uniform(10, 16)))
    # The XID 79 GPU and the teardown: torchrun on its node kills the node's other ranks at
    # once; even seeds srun (--kill-on-bad-exit) kills the rest in 5-15 s, odd seeds they spin
    # in NCCL until the watchdog (420-600 s). Slurm requeues the job 60-150 s later on a spare
    # (mx13 in the lost node's place), from its last checkpoint; NHC has drained the node.
    bad_node = moe_nodes[int(rng.integers(8))]
    bad_gpu = int(rng.integers(8))
    fid_x = f"xid79-{bad_node}-g{bad_gpu}"
    kill = float(rng.uniform(5, 15)) if seed % 2 == 0 else float(rng.uniform(420, 600))
    down = min(t_x + kill, T - 1.0)
    t_r = down + float(rng.uniform(60, 150))
    moe2_nodes = [("mx13" if n == bad_node else n) for n in moe_nodes]
    moe2 = sim.Job("moe-a", "research", moe2_nodes, 2, 1, 32, moe_step, t_r, end,
                   demand_w=640.0, comm_frac=0.22, jitter=0.012, extra=moe_extra,
                   save_every_s=moe1.save_every_s, save_s=moe1.save_s,
                   cold_steps=int(rng.integers(4, 9)))
    jobs = [moe1, lc] + ([moe2] if t_r < T - 60 else [])
    for j in jobs:
        cl.occupy(j)
    rows = cl.tag("row", fid_x)
    a = int(t_x)
    for node in moe_nodes:
        for g in range(8):
            i = cl.gi(node, g)
            if node == bad_node:
                cl.gone[i] = a + 1 if g == bad_gpu else cl.gone[i]
                rows[i, a:a + 3] = True
            else:
                cl.spin[i, a:int(down)] = True
                rows[i, a:int(down) + 1] = True
    cl.extra_ecc.append((t_x + 0.05, bad_node, bad_gpu, {"xid": 79}, {fid_x}))
    fx.append(_effect(cl, "nccl-teardown", {"job": "moe-a"}, t_x, down,
                      how="srun kill-on-bad-exit" if seed % 2 == 0 else "NCCL watchdog"))
    fx.append(_effect(cl, "node-drained", {"node": bad_node}, t_x, T))
    if moe2 in jobs:
        fx.append(_effect(cl, "requeue-cold-start", {"job": "moe-a"}, t_r, t_r + 60))
    fx.append(_effect(cl, "moe-routing", {"job": "moe-a"}, 0, T))
    fx.append(_effect(cl, "context-parallel-masks", {"job": "lc-b"}, 0, T))

    # A GPU of the long-context job silently 8-14 % slow (no clock, reason or counter moves).
    s_node = nodes[8 + int(rng.integers(4))]
    s_gpu = int(rng.integers(8))
    t_s = float(rng.uniform(0.45, 0.60)) * T
    fid_s = f"slow-gpu-{s_node}-g{s_gpu}"
    lc.faults.append((fid_s, (s_node, s_gpu), t_s, float(rng.uniform(1.08, 1.14))))

    cl.settle()
    rec = sim.Recorder(np.random.default_rng([21, seed, 2, 1]))
    sim.run_job(cl, moe1, rec, rng)
    if moe2 in jobs:
        moe2.step0 = (moe1.saved_steps[-1] + 1) if moe1.saved_steps else 1
        sim.run_job(cl, moe2, rec, rng)
    sim.run_job(cl, lc, rec, rng)
    gbs = {**{n: 7.0 for n in moe_nodes}, "mx13": 7.0, **{n: 5.0 for n in lc.nodes}}
    sim.sample(cl, rec, rng, 15.0, 60.0, 15.0, gbs)
    labels = [_label(rec, fid_x, "hardware", "gpu_hardware",
                     {"level": "gpu", "node": bad_node, "gpu": bad_gpu}),
              _label(rec, fid_s, "slow_node", "unknown",
                     {"level": "gpu", "node": s_node, "gpu": s_gpu}, attributable=False)]
    fx += [_effect(cl, "checkpoint-save", {"job": j.name}, s, e) for j in jobs
           for s, e in j.saves]
    return Built(topo, rec.records(), labels, fx)


def build(story: str, seed: int, minutes: float | None = None) -> Built:
    return {"facility": facility, "model": model}[story](seed, minutes or 22.0)


__all__ = ["STORIES", "Built", "build", "W"]
