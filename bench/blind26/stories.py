"""blind26's two stories at 4,096-GPU scale, every choice from the seed.

``pretrain``: one 4,096-GPU job (TP8 x PP4 x DP128 on 512 HGX H100 nodes, 32 spares), a rail-
optimized InfiniBand fabric (8 rails x 17 leaves, 16 spines), collectors at 30 s.
``tenants``: 3,584 GPUs shared by many tenants (a 2,048-GPU job, sixteen 64-GPU jobs, 4-node jobs
coming and going), RoCE, a Slurm topology.conf, collectors at 30 s.
"""

from __future__ import annotations

import random
from collections.abc import Callable

from bench.blind26.collect import Hooks, collect
from bench.blind26.sim import Activity, Job, run
from bench.blind26.world import HOLD_C, LIMIT_W, Log, compute_factor, make_nodes, xid_row

T_BASE = 1_790_000_000.0


def _clamp(x: float) -> float:
    return 0.0 if x < 0 else 1.0 if x > 1 else x


def _hot_gpu(fid: str, g, inlet: float, t_f: float, ramp_s: float, k: float):
    """A GPU whose thermal interface degrades (TIM pump-out): thermal resistance x k over
    ``ramp_s``; past 88 C the firmware's SW thermal slowdown trims the clock to hold it."""
    p_dem = min(g.demand_w, LIMIT_W)

    def r_x(t: float) -> float:
        return 1.0 + (k - 1.0) * _clamp((t - t_f) / ramp_s)

    def ratio(t: float) -> float:
        r = g.r_th * r_x(t)
        if inlet + r * p_dem <= HOLD_C:
            return 1.0
        return min(1.0, ((HOLD_C - inlet) / r / p_dem) ** 0.4)

    def sample(t: float):
        if t < t_f:
            return None
        q = ratio(t)
        if q >= 1.0:
            return {"r_th_x": r_x(t)}
        return {"r_th_x": r_x(t), "ratio": q, "bits": 0x20, "hold": True,
                "cap": (HOLD_C - inlet) / (g.r_th * r_x(t))}

    def factor(t: float) -> float:
        return compute_factor(ratio(t)) if t >= t_f else 1.0
    return (fid, sample), (fid, factor)


def _spans(log: Log, scope_of: Callable, name: str, spans) -> None:
    for key, a, b in spans:
        log.effect(name, scope_of(key), a, b)


def pretrain(seed: int, minutes: float) -> tuple[str, Log]:
    rng = random.Random(f"blind26-pretrain-{seed}")
    t0 = T_BASE + seed * 100_000.0
    t1 = t0 + minutes * 60.0
    span = t1 - t0
    names = [f"gpu-{i:04d}" for i in range(544)]
    nics = [f"mlx5_{k}" for k in range(8)]
    nodes = make_nodes(rng, names, nics, roce=False)
    topo = ["Topology=pretrain-4k Version=1",
            "NodeSet=gpu-[0000-0543] Gpus=8 Nics=mlx5_[0-7]",
            "Rack=rack-[000-135] Nodes=gpu-[0000-0543]"]
    topo += [f"SwitchName=rail{k}-leaf[00-16] Nodes=gpu-[0000-0543] Nics=mlx5_{k}"
             for k in range(8)]
    topo.append("SwitchName=spine[00-15] Switches=rail[0-7]-leaf[00-16]")
    log, act, hooks = Log(), Activity(), Hooks()
    job_nodes = names[:512]
    picks = rng.sample(range(512), 4)
    hot_n, dbe_n, sdc_n = (job_nodes[i] for i in picks[:3])
    hot_g, dbe_g, sdc_g = rng.randrange(8), rng.randrange(8), rng.randrange(8)
    t_crash = t0 + span * rng.uniform(0.62, 0.70)
    spare = names[512 + rng.randrange(32)]
    t_restart = t_crash + rng.uniform(150, 220)
    job = Job("llm-4k", "frontier", job_nodes, tp=8, pp=4,
              compute_ms=[8300.0, 8000.0, 8000.0, 8600.0], comm_ms=1100.0, other_ms=40.0,
              t0=t0 + rng.uniform(5, 15), t1=t1, save_every=30, save_s=(18.0, 34.0),
              checksum_every=10, gc_rate=0.0006, stall_rate=0.25, loss0=2.1,
              crash=(t_crash, rng.uniform(35, 70), t_restart, {dbe_n: spare}))
    # -- fault: a GPU's thermal interface degrading (slow_node / thermal at the GPU)
    fid = f"hot-{hot_n}-g{hot_g}"
    th, sl = _hot_gpu(fid, nodes[hot_n].gpus[hot_g], nodes[hot_n].inlet_c,
                      t0 + span * rng.uniform(0.16, 0.28), rng.uniform(150, 240),
                      rng.uniform(2.0, 2.4))
    hooks.thermal[(hot_n, hot_g)] = th
    job.slow[(hot_n, hot_g)] = sl
    faults = [(fid, "slow_node", "thermal", {"level": "gpu", "node": hot_n, "gpu": hot_g})]
    # -- fault: a rail leaf switch failing (network / switch)
    rail, leaf = rng.randrange(8), rng.randrange(16)
    sw = f"rail{rail}-leaf{leaf:02d}"
    fid = f"leaf-{sw}"
    a = t0 + span * rng.uniform(0.38, 0.50)
    b = a + rng.uniform(240, 330)
    grow = rng.uniform(0.55, 0.85)
    job.comm_extra.append(lambda t, a=a, b=b, g=grow: g if a <= t < b else 0.0)
    for nd in names[leaf * 32:(leaf + 1) * 32]:
        sym, own = rng.random() < 0.7, random.Random(f"{seed}{nd}")

        def bad_leaf(t, c, dt, a=a, b=b, sym=sym, r=own):
            if not a <= t < b + dt:
                return False
            share = (min(t, b) - max(t - dt, a)) / dt
            c["rcv_errors"] += int(share * r.uniform(3, 40))
            c["xmit_wait"] += int(share * r.uniform(1.5e7, 3e7))
            if sym:
                c["symbol_errors"] += int(share * r.uniform(2, 20))
            return share > 0
        hooks.nic.setdefault((nd, f"mlx5_{rail}"), []).append((fid, bad_leaf))
    faults.append((fid, "network", "switch", {"level": "switch", "switch": sw}))
    # -- fault: an uncorrectable ECC error (XID 48, then XID 63) crashes the job
    fid = f"dbe-{dbe_n}-g{dbe_g}"
    t_x = t_crash - rng.uniform(0.2, 0.8)
    for ts, xid in ((t_x, 48), (t_x + rng.uniform(0.5, 1.5), 63)):
        if ts < t1:
            log.add("telemetry.ecc", xid_row(dbe_n, dbe_g, ts, xid), [fid])
    hooks.ecc.setdefault((dbe_n, dbe_g), []).append(
        (fid, lambda t, g, t_x=t_x: {"dbe_volatile": 1, "row_remap_pending": True,
                                     "recovery_action": "gpu_reset"} if t >= t_x else None))
    faults.append((fid, "hardware", "gpu_memory", {"level": "gpu", "node": dbe_n,
                                                    "gpu": dbe_g}))
    # -- fault: one rank's parameters silently diverge (sdc at the GPU)
    fid = f"sdc-{sdc_n}-g{sdc_g}"
    job.sdc = (sdc_n, sdc_g, t0 + span * rng.uniform(0.08, 0.2), fid)
    faults.append((fid, "sdc", "gpu_hardware", {"level": "gpu", "node": sdc_n, "gpu": sdc_g}))
    # -- routine: rolling dcgm-exporter upgrade, 64 nodes a wave every 45 s
    order = names[:]
    rng.shuffle(order)
    w0 = t0 + span * rng.uniform(0.08, 0.14)
    for i, nd in enumerate(order):
        a = w0 + 45.0 * (i // 64) + rng.uniform(0, 20)
        b = a + rng.uniform(35, 70)
        hooks.dcgm_down[nd] = [(a, b)]
        log.effect("dcgm-exporter upgrade (rolling, 1-2 scrapes missing)",
                   {"level": "node", "node": nd}, a, b)
    # -- routine: a row's inlet air warming (a CRAH cycling), racks 34-67
    ra = t0 + span * rng.uniform(0.48, 0.62)
    rise, hold = rng.uniform(3.5, 5.5), rng.uniform(240, 360)
    rb = ra + 90 + hold + 120

    def warm(node: str, t: float, ra=ra, rise=rise, hold=hold) -> float:
        if not 136 <= int(node[4:]) < 272 or t < ra:
            return 0.0
        x = t - ra
        return rise * (_clamp(x / 90.0) if x < 90 + hold else 1.0 - _clamp((x - 90 - hold)
                                                                             / 120.0))
    hooks.inlet.append(warm)
    _spans(log, lambda nd: {"level": "node", "node": nd}, "row inlet +3.5-5.5 C (CRAH cycling)",
           [(nd, ra, rb) for nd in names[136:272]])
    _lone_errors(rng, log, hooks, names, t0, span)
    # -- steps, then what the collectors saw
    saves = []
    run(job, rng, log, act, on_step=lambda j, s, a, b: saves.append((s, a, b))
        if s and s % j.save_every == 0 and b - a > 20 else None)
    for s, a, b in saves:
        log.effect(f"synchronous checkpoint at step {s}", {"level": "job", "job": "llm-4k"},
                   a, b)
    log.effect("GC pauses (0.3-1.2 s, ~2 ranks a step) and one-step host stalls",
               {"level": "job", "job": "llm-4k"}, job.t0, t1)
    if t_crash < t1:
        log.effect("job crash, restart from the last checkpoint on a spare (steps repeat)",
                   {"level": "job", "job": "llm-4k"}, t_crash, t_restart + 60)
    if t_restart < t1:
        log.effect("spare node joins the job", {"level": "node", "node": spare}, t_restart, t1)
    act.finish()
    collect(log, rng, nodes, act, hooks, t0, t1, roce=False)
    for fid, kind, cause, scope in faults:
        log.label(fid, kind, cause, scope)
    return "\n".join(topo) + "\n", log


def _lone_errors(rng: random.Random, log: Log, hooks: Hooks, names: list[str], t0: float,
                 span: float) -> None:
    """Background at scale: a lone corrected ECC error on a few GPUs, 1-4 symbol errors on a
    few ports -- somewhere in 4,000 GPUs this happens every hour."""
    for _ in range(rng.randint(5, 9)):
        nd, g, ts = rng.choice(names), rng.randrange(8), t0 + span * rng.uniform(0.05, 0.95)
        done = []

        def sbe(t, gpu, ts=ts, done=done):
            if t >= ts and not done:
                gpu.sbe += 1
                done.append(1)
            return None
        hooks.ecc.setdefault((nd, g), []).append((None, sbe))
        log.effect("a lone corrected ECC error", {"level": "node", "node": nd}, ts, ts + 60)
    for _ in range(rng.randint(6, 10)):
        nd, k, ts = rng.choice(names), rng.randrange(8), t0 + span * rng.uniform(0.05, 0.95)
        n_err, done = rng.randint(1, 4), []

        def blip(t, c, dt, ts=ts, n_err=n_err, done=done):
            if t >= ts and not done:
                c["symbol_errors"] += n_err
                done.append(1)
            return False
        hooks.nic.setdefault((nd, f"mlx5_{k}"), []).append((None, blip))
        log.effect("1-4 symbol errors on a healthy link", {"level": "node", "node": nd}, ts,
                   ts + 60)


def tenants(seed: int, minutes: float) -> tuple[str, Log]:
    rng = random.Random(f"blind26-tenants-{seed}")
    t0 = T_BASE + seed * 100_000.0 + 50_000.0
    t1 = t0 + minutes * 60.0
    span = t1 - t0
    names = [f"hgx-{i:03d}" for i in range(448)]
    nics = [f"mlx5_{k}" for k in range(8)]
    nodes = make_nodes(rng, names, nics, roce=True)
    topo = [f"SwitchName=leaf{L:02d} Nodes=hgx-[{32 * L:03d}-{32 * L + 31:03d}]"
            for L in range(14)]
    topo += [f"SwitchName=spine{s} Switches=leaf[00-13]" for s in range(4)]
    log, act, hooks = Log(), Activity(), Hooks()
    jobs: list[Job] = []
    lm = Job("lm-2k", "lab-a", names[:256], tp=8, pp=1, compute_ms=[6800.0], comm_ms=800.0,
             other_ms=30.0, t0=t0 + rng.uniform(3, 12), t1=t1, save_every=40,
             async_save=(3, 0.25), gc_rate=0.0005, stall_rate=0.2, loss0=1.9)
    jobs.append(lm)
    fts = []
    for i in range(16):
        j = Job(f"ft-{i:02d}", f"t{i + 1:02d}", names[256 + 8 * i:264 + 8 * i], tp=0, pp=0,
                compute_ms=[rng.uniform(2800, 4200)], comm_ms=rng.uniform(500, 900),
                other_ms=rng.uniform(60, 140), t0=t0 + rng.uniform(0, 20), t1=t1,
                save_every=rng.randint(50, 80), async_save=(rng.randint(2, 4),
                                                            rng.uniform(0.1, 0.2)),
                gc_rate=0.001, stall_rate=0.05, rank_sigma=0.008)
        fts.append(j)
        jobs.append(j)
    # churn: 8 slots of 4 nodes on leaf 12, short jobs one after another
    slots: list[list[Job]] = []
    for s in range(8):
        sn = names[384 + 4 * s:388 + 4 * s]
        t, n, row = t0 + min(rng.uniform(0, 120), 0.3 * span), 0, []
        while not row or t < t1 - 60:
            dur = rng.uniform(180, 420)
            j = Job(f"sw-{s}{n}", rng.choice(["t20", "t21", "t22", "t23", "t24"]), sn, tp=0,
                    pp=0, compute_ms=[rng.uniform(1500, 3000)], comm_ms=rng.uniform(250, 500),
                    other_ms=rng.uniform(40, 90), t0=t, t1=min(t + dur, t1), cold=True,
                    gc_rate=0.001)
            row.append(j)
            jobs.append(j)
            log.effect("short job: cold start (compile, warm-up) and its end",
                       {"level": "job", "job": j.name}, j.t0, j.t1)
            t += dur + rng.uniform(20, 90)
            n += 1
        slots.append(row)
    faults = []
    # -- fault: a RoCE port's optic failing on an lm-2k node (network / nic)
    nic_n, port = names[rng.randrange(256)], f"mlx5_{rng.randrange(8)}"
    fid = f"nic-{nic_n}-{port}"
    t_f, ramp = t0 + span * rng.uniform(0.16, 0.28), rng.uniform(240, 360)
    own = random.Random(f"optic{seed}")

    def optic(t, c, dt, t_f=t_f, ramp=ramp, r=own):
        if t < t_f:
            return False
        x = _clamp((t - t_f) / ramp)
        sym = 20 * 10 ** (2.3 * x) * r.uniform(0.7, 1.3)
        c["symbol_errors"] += int(sym)
        c["rcv_errors"] += int(sym / 60)
        c["packet_seq_err"] += int(x * r.uniform(50, 400))
        c["out_of_sequence"] += int(x * r.uniform(80, 600))
        return True
    hooks.nic.setdefault((nic_n, port), []).append((fid, optic))
    grow = rng.uniform(0.7, 1.1)
    lm.comm_extra.append(lambda t, t_f=t_f, ramp=ramp, g=grow: g * _clamp((t - t_f) / ramp))
    faults.append((fid, "network", "nic", {"level": "nic", "node": nic_n, "nic": port,
                                            "port": 1}))
    # -- fault: a power supply lost on an ft node: the BMC brakes all 8 GPUs (0x80)
    ft = fts[rng.randrange(16)]
    psu_n = ft.nodes[rng.randrange(8)]
    fid = f"psu-{psu_n}"
    t_p = t0 + span * rng.uniform(0.38, 0.52)
    q, cap = rng.uniform(0.60, 0.68), rng.uniform(330, 380)
    for g in range(8):
        hooks.thermal[(psu_n, g)] = (fid, lambda t, t_p=t_p, q=q, cap=cap: {
            "ratio": q, "bits": 0x80, "cap": cap} if t >= t_p else None)
        ft.slow[(psu_n, g)] = (fid, lambda t, t_p=t_p, q=q: compute_factor(q)
                               if t >= t_p else 1.0)
    faults.append((fid, "slow_node", "power", {"level": "node", "node": psu_n}))
    # -- fault: a GPU's HBM throwing corrected errors ever faster, XID 92, a row remap pending
    sbe_n, sbe_g = names[rng.randrange(256)], rng.randrange(8)
    while sbe_n == nic_n:
        sbe_n = names[rng.randrange(256)]
    fid = f"sbe-{sbe_n}-g{sbe_g}"
    t_s = t0 + span * rng.uniform(0.55, 0.66)
    t_92 = t_s + rng.uniform(150, 240)
    for ts, xid in ((t_92, 92), (t_92 + rng.uniform(0.5, 2.0), 63)):
        if ts < t1:
            log.add("telemetry.ecc", xid_row(sbe_n, sbe_g, ts, xid), [fid])

    own = random.Random(f"sbe{seed}")

    def storm(t, g, t_s=t_s, t_92=t_92, r=own):
        if t < t_s:
            return None
        g.sbe += int(r.uniform(15, 40) * (1 + 4 * _clamp((t - t_s) / 300)))
        return {"row_remap_pending": t >= t_92}
    hooks.ecc.setdefault((sbe_n, sbe_g), []).append((fid, storm))
    faults.append((fid, "hardware", "gpu_memory", {"level": "gpu", "node": sbe_n,
                                                    "gpu": sbe_g}))
    # -- fault: a GPU asserting HW slowdown (0x8) under load, from a short job's first step
    order = [slots[i] for i in rng.sample(range(8), 8)]
    row = next((r for r in order if len(r) >= 3), order[0])
    if len(row) >= 2:
        row = row[1:]                 # the GPU went bad between two tenants' jobs
    hw_n, hw_g = row[0].nodes[rng.randrange(4)], rng.randrange(8)
    fid = f"hwslow-{hw_n}-g{hw_g}"
    qh = rng.uniform(0.78, 0.84)
    t_h = row[0].t0
    hooks.thermal[(hw_n, hw_g)] = (fid, lambda t, t_h=t_h, qh=qh: {
        "ratio": qh, "bits": 0x8} if t >= t_h else None)
    for j in row:
        j.slow[(hw_n, hw_g)] = (fid, lambda t, t_h=t_h, qh=qh: compute_factor(qh)
                                if t >= t_h else 1.0)
    faults.append((fid, "slow_node", "gpu_hardware", {"level": "gpu", "node": hw_n,
                                                       "gpu": hw_g}))
    # -- routine: another tenant's storage burst congests leaves 08-09 (DCQCN at work)
    ia = t0 + span * rng.uniform(0.24, 0.36)
    ib = ia + rng.uniform(180, 300)
    for nd in names[256:320]:
        for nic in nics:
            own = random.Random(f"{seed}{nd}{nic}")

            def incast(t, c, dt, r=own):
                if not ia <= t < ib + dt:
                    return False
                c["np_cnp_sent"] += int(r.uniform(2e4, 8e4))
                c["rp_cnp_handled"] += int(r.uniform(2e4, 8e4))
                c["xmit_wait"] += int(r.uniform(5e6, 1.5e7))
                return False
            hooks.nic.setdefault((nd, nic), []).append((None, incast))
        log.effect("incast from another tenant's storage burst (CNPs, xmit_wait)",
                   {"level": "node", "node": nd}, ia, ib)
    for j in fts[:8]:
        grow = rng.uniform(0.3, 0.6)
        j.comm_extra.append(lambda t, g=grow: g if ia <= t < ib else 0.0)
        log.effect("comm slower under the incast", {"level": "job", "job": j.name}, ia, ib)
    _lone_errors(rng, log, hooks, names, t0, span)
    for j in jobs:
        run(j, rng, log, act)
        if j.save_every:
            log.effect("asynchronous checkpoints", {"level": "job", "job": j.name}, j.t0, t1)
        log.effect("GC pauses and one-step host stalls", {"level": "job", "job": j.name},
                   j.t0, j.t1)
    act.finish()
    collect(log, rng, nodes, act, hooks, t0, t1, roce=True)
    for fid, kind, cause, scope in faults:
        log.label(fid, kind, cause, scope)
    return "\n".join(topo) + "\n", log


STORIES = {"pretrain": pretrain, "tenants": tenants}
