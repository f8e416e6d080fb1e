"""blind27's two stories: `spot` (a job living on reclaimable capacity) and `serve` (an
inference fleet autoscaling beside a training job). Every choice is drawn from the seed."""

from __future__ import annotations

import math
import random

from bench.blind27.train import Job
from bench.blind27.world import ECC_S, Hook, Log, Node, collect

T0 = 1_801_000_000.0


def _ramp(start: float, secs: float, top: float):
    """1.0 before ``start``, rising linearly to ``top`` over ``secs``."""
    return lambda t: 1.0 if t < start else 1.0 + (top - 1.0) * min(1.0, (t - start) / secs)


def _xid(log: Log, node: Node, gpu: int, t: float, code: int, fid: str) -> None:
    log.add("telemetry.ecc", {"ts": round(t, 3), "node": node.name, "gpu": gpu, "xid": code},
            {fid})


# -- spot ---------------------------------------------------------------------------------


def spot(seed: int, minutes: float) -> Log:
    """sp-train (tenant `spotlab`), TP8 x DP16 on spot VMs spot-00..15: three reclaims with a
    120 s notice (an emergency save, the job re-forms without the VM, the VM idles, then every
    topic from it stops), a new VM for each (fresh counters, idle, then the job grows onto it);
    a GPU off the bus crashes the job (restart from the last checkpoint on the survivors).
    Faults: an NVLink going bad, a GPU's cooling degrading, a GPU off the bus (XID 79), a new VM
    whose port came up at half rate."""
    rng = random.Random(27_000 + seed)
    T = minutes * 60.0
    t0 = T0 + seed * 100_000.0
    topo = ("Topology=spot-pool Version=1\n"
            "NodeSet=spot-[00-31] Gpus=8 Nics=mlx5_[0-7]\n"
            "SwitchName=leaf[0-3] Nodes=spot-[00-31]\n"
            "SwitchName=spine[0-1] Switches=leaf[0-3]\n")
    log = Log(rng, {"format": "faultline", "text": topo})
    nodes = [Node(f"spot-{i:02d}", random.Random(rng.random())) for i in range(16)]
    members = list(nodes)
    rng.shuffle(members)
    job = Job("sp-train", "spotlab", log, rng, compute_ms=rng.uniform(2300.0, 2700.0),
              comm_ms=rng.uniform(320.0, 420.0), ref_dp=16, ckpt_every=40)
    picks = rng.sample(range(16), 7)
    nv, th, xn = (nodes[i] for i in picks[:3])
    safe = [nodes[i] for i in picks[3:]]          # reclaimed VMs: never a faulty one

    # an NVLink going bad on one GPU: CRC / replay errors climbing, the node's TP all-reduce
    # (inside every rank's compute) slower on all 8 GPUs
    g_nv = rng.randrange(8)
    t_nv = t0 + rng.uniform(0.15, 0.3) * T
    fid_nv = log.fault(f"nvl-{nv.name}-g{g_nv}", "hardware", "nvlink",
                       {"level": "gpu", "node": nv.name, "gpu": g_nv})
    top = rng.uniform(1.10, 1.17)
    for g in range(8):
        nv.hooks(g).append(Hook(fid_nv, t_nv + 20.0, slow=_ramp(t_nv + 20.0, 90.0, top)))
    crc = {"crc": 0, "rep": 0, "rec": 0}

    def nvl_row(topic: str, t: float, row: dict) -> bool:
        if topic != "ecc":
            return False
        k = min(1.0, (t - t_nv) / 240.0)
        crc["crc"] += int(rng.uniform(20, 60) * (1 + 9 * k))
        crc["rep"] += int(rng.uniform(2, 8) * (1 + 6 * k))
        crc["rec"] += 1 if rng.random() < 0.1 * k else 0
        row.update(nvlink_crc_errors=crc["crc"], nvlink_replay_errors=crc["rep"],
                   nvlink_recovery_errors=crc["rec"])
        return True
    nv.hooks(g_nv).append(Hook(fid_nv, t_nv, row=nvl_row))

    # a GPU's cooling degrading (a failing fan module in the VM's host): resistance x1.9-2.3
    g_th = rng.randrange(8)
    t_th = t0 + rng.uniform(0.25, 0.35) * T
    fid_th = log.fault(f"hot-{th.name}-g{g_th}", "slow_node", "thermal",
                       {"level": "gpu", "node": th.name, "gpu": g_th})
    th.hooks(g_th).append(Hook(fid_th, t_th, r_mult=_ramp(t_th, rng.uniform(150, 240),
                                                          rng.uniform(1.9, 2.3))))

    # a GPU off the bus: XID 79, nothing from it again; the job dies mid-step
    g_x = rng.randrange(8)
    t_x = t0 + rng.uniform(0.58, 0.68) * T
    fid_x = log.fault(f"xid79-{xn.name}-g{g_x}", "hardware", "gpu_hardware",
                      {"level": "gpu", "node": xn.name, "gpu": g_x})

    events = [(t0 + rng.uniform(0.12, 0.2) * T, "reclaim", safe[0]),
              (t0 + rng.uniform(0.42, 0.5) * T, "reclaim", safe[1]),
              (t0 + rng.uniform(0.78, 0.85) * T, "reclaim", safe[2]),
              (t_x, "crash", xn)]
    spare = iter(range(16, 32))
    bad_port: dict = {}
    everyone = list(nodes)
    t, step, cold = t0, 1, True
    base_comm = job.comm_factor
    while t < t0 + T:
        events.sort(key=lambda e: e[0])
        ev = events.pop(0) if events and events[0][0] < t0 + T else None
        if bad_port.get("node") in members:
            cf = bad_port["factor"]
            job.comm_factor = lambda _t, cf=cf: (cf, set())
        else:
            job.comm_factor = base_comm
        if ev is None:
            job.segment(members, t, step, t0 + T, cold=cold, final_save=False)
            break
        t_ev, what, node = ev
        if what == "crash" and t_ev < t + 20.0:   # not in a rendezvous: a few steps in
            t_x = t_ev = t + rng.uniform(20.0, 40.0)
        if what == "crash":
            end, _ = job.segment(members, t, step, math.inf, crash=t_ev, cold=cold)
            _xid(log, node, g_x, t_ev, 79, fid_x)
            node.gone[g_x] = t_ev + 0.001
            hang = rng.uniform(35.0, 60.0)
            for m in members:
                m.busy(t_ev, t_ev + hang, "hang")
            restart = t_ev + rng.uniform(70.0, 100.0)
            log.effect("job-crash-and-restart-from-checkpoint", {"job": job.name}, t_ev,
                       restart + 30.0)
            members = [m for m in members if m is not node]
            rng.shuffle(members)
            t, step, cold = restart, job.last_ckpt + 1, True
            events.append(_new_vm(log, rng, everyone, spare, restart, bad_port, t0, T))
            continue
        end, step = job.segment(members, t, step, t_ev, cold=cold)
        rdzv = rng.uniform(20.0, 35.0)
        if what == "reclaim":
            node.down = t_ev + 120.0
            members = [m for m in members if m is not node]
            log.effect("spot-reclaim-notice-save-and-gone", {"node": node.name}, t_ev,
                       node.down)
            log.effect("elastic-shrink", {"job": job.name}, t_ev, end + rdzv + 30.0)
            events.append(_new_vm(log, rng, everyone, spare, t_ev, bad_port, t0, T))
        else:   # "join": the new VM enters at a random place of the rendezvous order
            members.append(node)
            log.effect("elastic-grow-onto-a-new-vm", {"job": job.name}, t_ev,
                       end + rdzv + 30.0)
        rng.shuffle(members)
        t, cold = end + rdzv, True
    for n in everyone:
        collect(log, n, t0, t0 + T)
    log.effect("checkpoints-every-40-steps", {"job": job.name}, t0, t0 + T)
    log.effect("gc-pauses-and-host-stalls", {"job": job.name}, t0, t0 + T)
    return log


def _new_vm(log: Log, rng: random.Random, everyone: list[Node], spare, after: float,
            bad_port: dict, t0: float, T: float) -> tuple[float, str, Node]:
    """A replacement VM: up 100-160 s after ``after`` (idle, fresh port counters, its own
    health check), joining the job 30-50 s later. The first one's port came up at 200 Gb/s."""
    up = after + rng.uniform(100.0, 160.0)
    node = Node(f"spot-{next(spare):02d}", random.Random(rng.random()), up=up)
    everyone.append(node)
    log.effect("new-vm-idle-then-cold-start", {"node": node.name}, up, up + 120.0)
    if not bad_port:
        nic = rng.choice(node.nics)
        fid = log.fault(f"rate-{node.name}-{nic}", "network", "nic",
                        {"level": "nic", "node": node.name, "nic": nic, "port": 1})

        def half(topic: str, t: float, row: dict) -> bool:
            row["rate_gbps"] = 200.0
            row["tx_bytes"] = row["tx_bytes"] // 2 + 1
            row["rx_bytes"] = row["rx_bytes"] // 2 + 1
            return True
        node.nic_hooks[nic] = [Hook(fid, up, row=half)]
        bad_port.update(node=node, factor=rng.uniform(1.5, 1.8))
    return up + rng.uniform(30.0, 50.0), "join", node


# -- serve --------------------------------------------------------------------------------


def serve(seed: int, minutes: float) -> Log:
    """An inference fleet inf-00..15 (one model replica a GPU, no step telemetry) whose load
    follows traffic -- a morning ramp, bursts, one hot replica at the cap, an autoscaler
    parking inf-12..15 when traffic is low, a rolling model reload -- beside trn-llm (tenant
    `research`), TP8 x DP8 on trn-00..07. Faults: a serving GPU's cooling (0x20 only in
    bursts), a contained ECC error (XID 94) on a serving GPU, a serving port flapping, a
    training GPU's PCIe link replaying."""
    rng = random.Random(27_500 + seed)
    T = minutes * 60.0
    t0 = T0 + seed * 100_000.0 + 50_000.0
    topo = ("SwitchName=leaf0 Nodes=inf-[00-11]\n"
            "SwitchName=leaf1 Nodes=inf-[12-15],trn-[00-07]\n"
            "SwitchName=spine0 Switches=leaf[0-1]\n")
    log = Log(rng, {"format": "slurm", "text": topo})
    inf = [Node(f"inf-{i:02d}", random.Random(rng.random())) for i in range(16)]
    trn = [Node(f"trn-{i:02d}", random.Random(rng.random())) for i in range(8)]

    bursts = [(t0 + rng.uniform(0.6, 0.8) * T, rng.uniform(80.0, 120.0), rng.uniform(0.35, 0.45))]
    for _ in range(rng.randint(3, 5)):
        a = t0 + rng.uniform(0.05, 0.9) * T
        bursts.append((a, rng.uniform(40.0, 120.0), rng.uniform(0.25, 0.45)))
    ph = rng.uniform(0, 2 * math.pi)

    def traffic(t: float) -> float:
        x = (t - t0) / T
        v = 0.33 + 0.3 * x + 0.04 * math.sin(ph + (t - t0) / 97.0)
        for a, d, h in bursts:
            if a <= t < a + d + 60.0:
                rise = min(1.0, (t - a) / 10.0)
                fall = 1.0 if t < a + d else math.exp(-(t - a - d) / 20.0)
                v += h * rise * fall
        return v

    # autoscaler: inf-12..15 parked while traffic (1 min mean) < 0.45, back when > 0.55
    parked_spans, parked, since = [], False, t0
    t = t0
    while t < t0 + T:
        m = sum(traffic(t - k * 10.0) for k in range(6)) / 6
        if not parked and m < 0.45 and t - since > 120.0:
            parked, since = True, t
        elif parked and m > 0.55:
            parked_spans.append((since, t))
            parked, since = False, t
        t += 10.0
    if parked:
        parked_spans.append((since, t0 + T))

    def active(t: float) -> int:
        return 12 if any(a <= t < b for a, b in parked_spans) else 16

    shares = {(n.name, g): rng.uniform(0.85, 1.15) for n in inf for g in range(8)}
    hot = (rng.choice(inf[:12]).name, rng.randrange(8))
    shares[hot] = rng.uniform(1.45, 1.6)
    for n in inf:
        n.busy(t0, t0 + T)
        n.load_of = (lambda g, t, name=n.name:
                     min(1.0, traffic(t) * shares[(name, g)] * 16.0 / active(t)))
        log.effect("traffic-ramp-and-bursts", {"node": n.name}, t0, t0 + T)
    log.effect("hot-replica-at-the-power-cap", {"node": hot[0]}, t0, t0 + T)
    for n in inf[12:]:
        for a, b in parked_spans:
            n.busy(a, b, "idle")
            n.busy(b, b + rng.uniform(20.0, 35.0), "save")   # loading the model again
            log.effect("autoscaler-park-and-cold-load", {"node": n.name}, a, b + 40.0)
    t_roll = t0 + rng.uniform(0.4, 0.5) * T
    for i, n in enumerate(inf[:12]):
        a = t_roll + 20.0 * i
        n.busy(a, a + rng.uniform(25.0, 40.0), "save")
        log.effect("rolling-model-reload", {"node": n.name}, a, a + 40.0)

    cand = inf[:12]
    rng.shuffle(cand)
    cool, ecc, flap = cand[0], cand[1], cand[2]
    if cool.name == hot[0]:
        cool, ecc = ecc, cool
    # a serving GPU's cooling gone weak (a fan module): x1.45-1.6 resistance from a step;
    # it throttles (0x20) only when traffic bursts
    g_c = rng.randrange(8)
    t_c = t0 + rng.uniform(0.15, 0.3) * T
    fid = log.fault(f"cool-{cool.name}-g{g_c}", "slow_node", "thermal",
                    {"level": "gpu", "node": cool.name, "gpu": g_c})
    mult = max(rng.uniform(1.45, 1.6),   # past 88 C whenever traffic pushes it near its draw
               (rng.uniform(92.0, 96.0) - cool.inlet_c) / (cool.r_cw[g_c] * 0.88
                                                          * cool.draw_w[g_c]))
    cool.hooks(g_c).append(Hook(fid, t_c, r_mult=lambda t: mult))

    # a contained ECC error (XID 94) on a serving GPU: the replica dies, the GPU waits for a
    # reset with no work
    g_e = rng.randrange(8)
    t_e = t0 + rng.uniform(0.45, 0.6) * T
    fid_e = log.fault(f"xid94-{ecc.name}-g{g_e}", "hardware", "gpu_memory",
                      {"level": "gpu", "node": ecc.name, "gpu": g_e})
    _xid(log, ecc, g_e, t_e, 94, fid_e)

    def dbe(topic: str, t: float, row: dict) -> bool:
        if topic != "ecc":
            return False
        row.update(dbe_volatile=1, retired_pages_dbe=1, recovery_action="gpu_reset")
        return True
    ecc.hooks(g_e).append(Hook(fid_e, t_e, row=dbe))
    old = ecc.load_of
    ecc.load_of = lambda g, t: 0.0 if (g == g_e and t >= t_e) else old(g, t)

    # a serving port flapping: symbol errors climbing, receive errors, the link down 3-4 times
    nic = rng.choice(flap.nics)
    t_f = t0 + rng.uniform(0.6, 0.72) * T
    fid_f = log.fault(f"flap-{flap.name}-{nic}", "network", "nic",
                      {"level": "nic", "node": flap.name, "nic": nic, "port": 1})
    downs = sorted(t_f + rng.uniform(40.0, 220.0) for _ in range(rng.randint(3, 4)))
    st = {"sym": 0, "rcv": 0, "dn": 0}

    def flapping(topic: str, t: float, row: dict) -> bool:
        k = (t - t_f) / 60.0
        st["sym"] += int(rng.uniform(5, 15) * 10 ** min(2.3, k))
        st["rcv"] += int(st["sym"] > 50 and rng.random() < 0.5)
        down = any(d <= t < d + 10.0 for d in downs)
        st["dn"] = sum(1 for d in downs if d <= t)
        row.update(symbol_errors=row["symbol_errors"] + st["sym"], rcv_errors=st["rcv"],
                   link_downed=st["dn"])
        if down:
            row.update(link_state="down", rate_gbps=0.0)
        return True
    flap.nic_hooks[nic] = [Hook(fid_f, t_f, row=flapping)]

    # a training GPU's PCIe link replaying (a riser): its host-to-device copies stall the rank
    d = rng.choice(trn)
    g_p = rng.randrange(8)
    t_p = t0 + rng.uniform(0.25, 0.45) * T
    fid_p = log.fault(f"pcie-{d.name}-g{g_p}", "slow_node", "gpu_hardware",
                      {"level": "gpu", "node": d.name, "gpu": g_p})
    rep = {"n": 0}

    def replays(topic: str, t: float, row: dict) -> bool:
        if topic != "ecc":
            return False
        rep["n"] += int(rng.uniform(80, 400))
        row["pcie_replay"] = rep["n"]
        return True
    d.hooks(g_p).append(Hook(fid_p, t_p, row=replays,
                             slow=_ramp(t_p + ECC_S, 60.0, rng.uniform(1.09, 1.14))))

    job = Job("trn-llm", "research", log, rng, compute_ms=rng.uniform(3400.0, 3900.0),
              comm_ms=rng.uniform(400.0, 550.0), ref_dp=8, ckpt_every=50,
              save_s=(5.0, 8.0))
    members = list(trn)
    rng.shuffle(members)
    job.segment(members, t0 + rng.uniform(0.0, 5.0), 1200, t0 + T, cold=False,
                final_save=False)
    log.effect("checkpoints-every-50-steps", {"job": job.name}, t0, t0 + T)
    log.effect("gc-pauses-and-host-stalls", {"job": job.name}, t0, t0 + T)
    for n in inf + trn:
        collect(log, n, t0, t0 + T)
    return log


# -- churn (freeze 2) ---------------------------------------------------------------------


def churn(seed: int, minutes: float) -> Log:
    """sp-churn (tenant `spotlab`), TP8 x DP12 on spot VMs sp-00..11 under heavy churn: a
    reclaim every 90-140 s with a 30 s notice (a quick save, a re-form without the VM and with
    the new VMs that are ready, ranks renumbered, cold steps), a new VM 60-110 s later -- half
    of them under a reclaimed VM's host name again (the cloud reuses it; counters start over).
    Faults: a GPU ~11 % slow with nothing in telemetry on a VM that stays through every
    re-form, a new VM handed over with a GPU waiting for a reset (row remap pending, no XID in
    the log), a new VM with a GPU ~40 % slow from its first step."""
    rng = random.Random(27_700 + seed)
    T = minutes * 60.0
    t0 = T0 + seed * 100_000.0 + 25_000.0
    topo = ("Topology=spot-churn Version=1\n"
            "NodeSet=sp-[00-31] Gpus=8 Nics=mlx5_[0-7]\n"
            "SwitchName=leaf[0-3] Nodes=sp-[00-31]\n"
            "SwitchName=spine[0-1] Switches=leaf[0-3]\n")
    log = Log(rng, {"format": "faultline", "text": topo})
    nodes = [Node(f"sp-{i:02d}", random.Random(rng.random())) for i in range(12)]
    members = list(nodes)
    rng.shuffle(members)
    job = Job("sp-churn", "spotlab", log, rng, compute_ms=rng.uniform(2000.0, 2400.0),
              comm_ms=rng.uniform(300.0, 400.0), ref_dp=12, ckpt_every=40)
    slow_node = nodes[rng.randrange(12)]
    g_s = rng.randrange(8)
    t_s = t0 + rng.uniform(0.15, 0.25) * T
    fid_s = log.fault(f"slow-{slow_node.name}-g{g_s}", "slow_node", "unknown",
                      {"level": "gpu", "node": slow_node.name, "gpu": g_s}, attributable=False)
    f_s = rng.uniform(1.10, 1.13)
    slow_node.hooks(g_s).append(Hook(fid_s, t_s, slow=lambda t: f_s))

    everyone = list(nodes)
    faulty: list[Node] = []
    free = iter(range(12, 32))
    ready: list[Node] = []      # new VMs up and checked, joining at the next re-form
    arrivals = 0
    t, step = t0, 1
    t_r = t0 + rng.uniform(60.0, 100.0)
    while t < t0 + T:
        if t_r >= t0 + T - 30.0:
            job.segment(members, t, step, t0 + T, final_save=False)
            break
        end, step = job.segment(members, t, step, t_r)
        rdzv = rng.uniform(20.0, 35.0)
        pool = [m for m in members if m is not slow_node and m not in faulty]
        node = rng.choice(pool)
        node.down = t_r + 30.0
        joining = [m for m in ready if m.up + 20.0 <= end]
        ready = [m for m in ready if m not in joining]
        members = [m for m in members if m is not node] + joining
        log.effect("spot-reclaim-30s-notice", {"node": node.name}, t_r, node.down)
        log.effect("elastic-re-form" + ("-and-grow" if joining else ""), {"job": job.name},
                   t_r, end + rdzv + 30.0)
        up = t_r + rng.uniform(60.0, 110.0)
        reuse = rng.random() < 0.5
        name = node.name if reuse else f"sp-{next(free):02d}"
        new = Node(name, random.Random(rng.random()), up=up)
        everyone.append(new)
        ready.append(new)
        log.effect("new-vm-reused-name-counters-restart" if reuse else "new-vm",
                   {"node": name}, up, up + 150.0)
        arrivals += 1
        if arrivals == 1:
            _straggler_vm(log, rng, new)
            faulty.append(new)
        elif arrivals == 2:
            _reset_pending_vm(log, rng, new)
            faulty.append(new)
        rng.shuffle(members)
        t = end + rdzv
        t_r += rng.uniform(90.0, 140.0)
    for n in everyone:
        collect(log, n, t0, t0 + T)
    log.effect("checkpoints-every-40-steps", {"job": job.name}, t0, t0 + T)
    log.effect("gc-pauses-and-host-stalls", {"job": job.name}, t0, t0 + T)
    return log


def _straggler_vm(log: Log, rng: random.Random, node: Node) -> None:
    """A new VM whose GPU computes 1.35-1.45x from its first step; its rows look healthy."""
    g = rng.randrange(8)
    fid = log.fault(f"straggler-{node.name}-g{g}", "slow_node", "unknown",
                    {"level": "gpu", "node": node.name, "gpu": g}, attributable=False)
    f = rng.uniform(1.35, 1.45)
    node.hooks(g).append(Hook(fid, node.up, slow=lambda t: f))


def _reset_pending_vm(log: Log, rng: random.Random, node: Node) -> None:
    """A new VM handed over with a GPU that needs a reset: an uncorrectable error retired a
    row before the VM was ours (no XID in this log), `row_remap_pending` and `recovery_action`
    `gpu_reset` on every ECC row from the first."""
    g = rng.randrange(8)
    fid = log.fault(f"remap-{node.name}-g{g}", "hardware", "gpu_memory",
                    {"level": "gpu", "node": node.name, "gpu": g})

    def pending(topic: str, t: float, row: dict) -> bool:
        if topic != "ecc":
            return False
        row.update(retired_pages_dbe=1, row_remap_pending=True, recovery_action="gpu_reset")
        return True
    node.hooks(g).append(Hook(fid, node.up, row=pending))


STORIES = {"spot": spot, "serve": serve, "churn": churn}
