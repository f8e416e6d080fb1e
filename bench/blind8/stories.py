"""blind8's two stories; every choice from the seed.

`rail-moe`: 16 HGX H100 on a rail-optimised fabric (8 rails x 2 leaves), one MoE job with
expert-parallel all-to-all. `scale-1k`: a 1,024-rank job on 128 nodes beside a pool of
small TP2 x DP2 jobs sharing nodes, a Slurm topology.conf.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

from bench.blind8 import faults as F
from bench.blind8.fleet import (
    Label,
    advance_counters,
    ecc_row,
    make_node,
    nic_row,
    sample_times,
    thermal_row,
    util_at,
)
from bench.blind8.jobs import Attempt, Job, placement, simulate

STORIES = ("rail-moe", "scale-1k")


@dataclass
class World:
    nodes: dict
    gpus: dict
    t_end: float
    jobs: list = field(default_factory=list)
    labels: list = field(default_factory=list)
    rank_hooks: list = field(default_factory=list)
    job_hooks: dict = field(default_factory=dict)       # job name -> hooks
    thermal_hooks: list = field(default_factory=list)
    ecc_hooks: list = field(default_factory=list)
    nic_hooks: list = field(default_factory=list)
    xids: list = field(default_factory=list)            # (t, node, gpu, code, label|None)
    nic_gbs: dict = field(default_factory=dict)         # node -> GB/s a port while busy
    records: list = field(default_factory=list)         # (t_true, topic, value, node)
    manifest: dict = field(default_factory=dict)

    def node_ts(self, node: str, t: float) -> float:
        return self.nodes[node].ts(t)

    def label(self, *a, **k) -> Label:
        lab = Label(*a, **k)
        self.labels.append(lab)
        return lab


def _fleet(rng, names, inlet, thermal_s, ecc_s, nic_s) -> tuple[dict, dict]:
    nodes, gpus = {}, {}
    for i, n in enumerate(names):
        node = make_node(rng, n, 8, inlet(i), thermal_s, ecc_s, nic_s)
        off = rng.gauss(0.0, 0.03)
        node.clock = (lambda o: (lambda t: o))(off)
        nodes[n] = node
        for g in node.gpus:
            gpus[(n, g.idx)] = g
    return nodes, gpus


def rail_moe(seed: int, minutes: float) -> tuple[World, dict]:
    rng = random.Random(f"blind8/rail-moe/{seed}")
    t_end = minutes * 60.0
    names = [f"hgx-{i:02d}" for i in range(1, 17)]
    nodes, gpus = _fleet(rng, names, lambda i: 22.0 + 1.2 * (i // 4) + rng.uniform(-0.5, 0.5),
                         10.0, 30.0, 10.0)
    w = World(nodes, gpus, t_end)
    m = Job("moe-pt", tp=2, pp=2, dp=32, stage_ms=[1500.0, 1560.0], comm_ms=450.0,
            neither_ms=40.0, ckpt_every=200, ckpt_s=(15.0, 21.0), checksum_every=10,
            tenant="research")
    m.moe = F.MoeRouting(random.Random(f"moe/{seed}"), stages=2)
    m.attempts = [Attempt(-20.0, 1e9, placement(names, 8), first_step=30_001, warm=False)]
    m.bad_step = 30_001 + int(rng.uniform(0.45, 0.7) * t_end / 2.0)
    m.spike_loss, m.spike_grad = rng.uniform(2.0, 3.5), rng.uniform(3.0, 6.0)
    w.jobs.append(m)
    for n in names:
        w.nic_gbs[n] = rng.uniform(13.0, 17.0)
    # faults on distinct nodes: the slow GPU, the NVSwitch node, the NTP-stepped node
    picks = rng.sample(range(16), 3)
    slow_node, nvs_node, ntp_node = (names[i] for i in picks)
    slow_gpu = rng.randrange(8)
    t_slow = rng.uniform(0.15, 0.28) * t_end
    lab = w.label("slow-gpu", "slow_node", "unknown",
                  {"level": "gpu", "node": slow_node, "gpu": slow_gpu}, attributable=False)
    w.rank_hooks.append(F.SlowGpu(lab, slow_node, slow_gpu, t_slow, rng.uniform(1.15, 1.22)))
    rail, leaf = rng.randrange(8), rng.randrange(2)
    sw = f"rail{rail}-leaf{leaf}"
    ports = [(names[i], f"mlx5_{rail}") for i in range(8 * leaf, 8 * leaf + 8)]
    lab = w.label("rail-half", "network", "switch", {"level": "switch", "switch": sw})
    rh = F.RailLeafHalf(lab, rng, ports, rng.uniform(0.38, 0.5) * t_end, rng.uniform(1.35, 1.6))
    w.nic_hooks.append(rh.nic)
    w.job_hooks["moe-pt"] = [rh]
    lab = w.label("nvswitch", "hardware", "nvlink", {"level": "node", "node": nvs_node})
    nv = F.NvSwitchFault(lab, rng, nvs_node, rng.uniform(0.62, 0.75) * t_end, t_end,
                         rng.uniform(1.12, 1.2))
    w.rank_hooks.append(nv)
    w.ecc_hooks.append(nv.ecc)
    w.xids += [(t, nvs_node, g, c, lab) for t, g, c in nv.xids]
    # healthy: ntpd steps one node's clock back by ~4 s (it had drifted ahead)
    d, t_step = rng.uniform(3.0, 3.8), rng.uniform(0.3, 0.5) * t_end
    nodes[ntp_node].clock = lambda t: d if t < t_step else 0.01
    nodes[ntp_node].no_late = True    # its step plus a retry would pass DESIGN's 5 s
    w.manifest = {"story": "rail-moe", "seed": seed, "ntp_step": [ntp_node, t_step, d],
                  "bad_batch_step": m.bad_step, "rail_leaf": sw}
    topo = "\n".join(["Topology=blind8-rail Version=1",
                      "NodeSet=hgx-[01-16] Gpus=8 Nics=mlx5_[0-7]",
                      "Rack=rack-[1-4] Nodes=hgx-[01-16]"]
                     + [f"SwitchName=rail{k}-leaf[0-1] Nodes=hgx-[01-16] Nics=mlx5_{k}"
                        for k in range(8)]
                     + ["SwitchName=spine[0-3] Switches=rail[0-7]-leaf[0-1]"]) + "\n"
    return w, {"format": "faultline", "text": topo}


def scale_1k(seed: int, minutes: float) -> tuple[World, dict]:
    rng = random.Random(f"blind8/scale-1k/{seed}")
    t_end = minutes * 60.0
    names = [f"gpu{i:04d}" for i in range(1, 139)]
    nodes, gpus = _fleet(rng, names, lambda i: rng.uniform(20.0, 26.0), 10.0, 30.0, 15.0)
    w = World(nodes, gpus, t_end)
    job_nodes, spares, pool = names[:128], names[128:130], names[130:]
    for n in pool[-2:]:
        nodes[n].dup = True           # two Prometheus replicas remote-write every sample
    for n in names:
        w.nic_gbs[n] = rng.uniform(9.0, 12.0) if n not in pool else rng.uniform(0.2, 0.6)
    big = Job("llm-1k", tp=8, pp=4, dp=32, stage_ms=[4300.0, 4100.0, 4100.0, 4500.0],
              comm_ms=800.0, neither_ms=100.0, ckpt_every=50, ckpt_s=(20.0, 28.0),
              checksum_every=25, tenant="pretrain")
    big.bad_step = 12_001 + int(rng.uniform(0.1, 0.3) * t_end / 5.6)
    big.spike_loss, big.spike_grad = rng.uniform(2.0, 3.0), rng.uniform(3.0, 5.0)
    # the XID 95 GPU and the flaky sensor on different nodes of the big job
    xi, si = rng.sample(range(128), 2)
    x_node, x_gpu = job_nodes[xi], rng.randrange(8)
    s_node, s_gpu = job_nodes[si], rng.randrange(8)
    t_x = rng.uniform(0.4, 0.55) * t_end
    place1 = placement(job_nodes, 8)
    place2 = placement([spares[0] if n == x_node else n for n in job_nodes], 8)
    a1 = Attempt(-30.0, t_x, place1, first_step=12_001, warm=False)
    big.attempts = [a1]
    w.jobs.append(big)
    lab = w.label("xid95", "hardware", "gpu_memory",
                  {"level": "gpu", "node": x_node, "gpu": x_gpu})
    t154 = t_x + rng.uniform(1.0, 2.0)
    xs = F.XidState(lab, x_node, x_gpu, [(t_x, x_gpu, 95), (t154, x_gpu, 154)], "gpu_reset")
    w.ecc_hooks.append(xs.ecc)
    w.xids += [(t, x_node, g, c, lab) for t, g, c in xs.xids]
    lab = w.label("hbm-sensor", "slow_node", "thermal",
                  {"level": "gpu", "node": s_node, "gpu": s_gpu})
    fs = F.FlakySensor(lab, rng, s_node, s_gpu, rng.uniform(0.1, 0.2) * t_end, t_end)
    w.thermal_hooks.append(fs.thermal)
    w.rank_hooks.append(fs)
    # the pool: 8 nodes x 2 slots of 4 GPUs, TP2 x DP2 jobs one after another
    slots = [(n, b) for n in pool for b in (0, 4)]
    li, pi = rng.sample(range(12), 2)       # not on the two duplicating nodes
    lemon_slot, slow_slot = slots[li], slots[pi]
    if slow_slot[0] == lemon_slot[0]:
        slow_slot = slots[(pi + 2) % 12]
    lemon_gpu = lemon_slot[1] + rng.randrange(4)
    lemon_t = []
    t = rng.uniform(0.15, 0.25) * t_end
    while len(lemon_t) < 3:
        lemon_t.append(t)
        t += rng.uniform(240, 330)
    lab_lemon = w.label("lemon-xid31", "hardware", "gpu_hardware",
                        {"level": "gpu", "node": lemon_slot[0], "gpu": lemon_gpu},
                        attributable=False)
    slow_gpu = slow_slot[1] + rng.randrange(4)
    lab = w.label("pool-slow", "slow_node", "unknown",
                  {"level": "gpu", "node": slow_slot[0], "gpu": slow_gpu}, attributable=False)
    w.rank_hooks.append(F.SlowGpu(lab, slow_slot[0], slow_gpu, rng.uniform(0.25, 0.35) * t_end,
                                  rng.uniform(1.2, 1.3)))
    for n, b in slots:
        kills = lemon_t if (n, b) == lemon_slot else []
        t = rng.uniform(0.0, 40.0)
        k = 0
        while t < t_end - 60:
            if k < len(kills):      # the lemon's slot: each job runs until the GPU kills it
                end, killed = kills[k], True
                k += 1
            else:
                end, killed = t + rng.uniform(180, 480), False
            j = Job(f"ft-{rng.randrange(16**6):06x}", tp=2, pp=1, dp=2,
                    stage_ms=[rng.uniform(500, 1100)], comm_ms=rng.uniform(60, 120),
                    neither_ms=30.0, checksum_every=20, tenant="finetune")
            j.attempts = [Attempt(t, end, placement([n], 4, b), first_step=1)]
            w.jobs.append(j)
            if killed and end < t_end:
                w.xids.append((end, n, lemon_gpu, 31, lab_lemon))
                for g in rng.sample([b + i for i in range(4) if b + i != lemon_gpu],
                                    rng.randint(1, 3)):
                    w.xids.append((end + rng.uniform(1, 3), n, g, 45, None))
            t = end + rng.uniform(20, 90)
    w.manifest = {"story": "scale-1k", "seed": seed, "bad_batch_step": big.bad_step,
                  "dup_nodes": pool[-2:], "lemon_times": lemon_t, "xid95": [x_node, t_x]}
    w._restart = (big, place2, t_x + rng.uniform(150, 240))
    topo = "\n".join([f"SwitchName=leaf{k + 1:02d} Nodes=gpu[{16 * k + 1:04d}-{16 * k + 16:04d}]"
                      for k in range(8)]
                     + ["SwitchName=leaf09 Nodes=gpu[0129-0138]",
                        "SwitchName=spine1 Switches=leaf[01-09]",
                        "SwitchName=spine2 Switches=leaf[01-09]"]) + "\n"
    return w, {"format": "slurm", "text": topo}


def _steps(w: World, rng: random.Random) -> None:
    for job in list(w.jobs):
        recs = simulate(job, rng, w.gpus, w.rank_hooks, w.job_hooks.get(job.name, []),
                        w.t_end, w.node_ts)
        restart = getattr(w, "_restart", None)
        if restart and restart[0] is job:
            big, place2, t_r = restart
            a1 = job.attempts[0]
            first = (a1.last_step // job.ckpt_every) * job.ckpt_every + 1
            job.attempts = [Attempt(t_r, 1e9, place2, first_step=first)]
            recs += simulate(job, rng, w.gpus, w.rank_hooks, [], w.t_end, w.node_ts)
            job.attempts = [a1] + job.attempts
        for r in recs:
            w.records.append((r.pop("_t"), "telemetry.step", r, r["node"]))


def _dcgm(w: World, rng: random.Random) -> None:
    xids: dict = {}
    for t, n, g, code, lab in w.xids:
        xids.setdefault((n, g), []).append((t, code, lab))
    for node in w.nodes.values():
        for gpu in node.gpus:
            for t in sample_times(node, node.thermal_s, w.t_end, rng):
                row = thermal_row(rng, node, gpu, t, w.thermal_hooks)
                w.records.append((t, "telemetry.thermal", row, node.name))
            # the ECC poll and the kernel log's XID events, in time order
            ev = [(t, None, None) for t in sample_times(node, node.ecc_s, w.t_end, rng)]
            ev += [(t, c, lab) for t, c, lab in xids.get((node.name, gpu.idx), [])]
            ev.sort(key=lambda e: e[0])
            t_prev = 0.0
            for t, code, lab in ev:
                advance_counters(rng, gpu, t - t_prev)
                row = ecc_row(node, gpu, t, code)
                for h in w.ecc_hooks:
                    h(node, gpu, t_prev, t, row)
                row.update(ecc_row(node, gpu, t, code))
                if lab is not None:
                    lab.touch(row["ts"])
                t_prev = t
                w.records.append((t, "telemetry.ecc", row, node.name))


def _nics(w: World, rng: random.Random) -> None:
    for node in w.nodes.values():
        for t in sample_times(node, node.nic_s, w.t_end, rng):
            busy = any(util_at(g, t) > 0 for g in node.gpus)
            for port in node.ports:
                row = nic_row(rng, node, port, t, w.nic_gbs[node.name] if busy else 0.0,
                              w.nic_hooks)
                w.records.append((t, "telemetry.nic", row, node.name))


def build(story: str, seed: int, minutes: float = 20.0) -> tuple[World, dict]:
    w, topo = {"rail-moe": rail_moe, "scale-1k": scale_1k}[story](seed, minutes)
    rng = random.Random(f"blind8/records/{story}/{seed}")
    _steps(w, rng)
    _dcgm(w, rng)
    _nics(w, rng)
    return w, topo
