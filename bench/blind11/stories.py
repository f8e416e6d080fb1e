"""blind11's two stories: `rl` (RL post-training, learner and rollout fleet) and `mixed` (H200,
H100 SXM and H100 NVL in one fleet, a long-context job across two SKUs). Every choice is drawn
from the seed; times are shares of the log's length so a shorter log keeps its shape.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass, field

from bench.blind11.jobs import Job, SlowHook
from bench.blind11.world import H100, H100NVL, H200, Label, Node


@dataclass
class World:
    t0: float
    dur_s: int
    nodes: list
    jobs: list
    labels: list
    fleet_caps: list
    topology: dict
    notes: dict = field(default_factory=dict)


def _nodes(names, model, ngpu, nics, rng, **kw):
    return [Node(n, model, ngpu, list(nics), random.Random(f"{rng.random()}"),
                 rng.uniform(21, 27), **kw) for n in names]


def _modes(nodes, dur_s):
    for node in nodes:
        for g in node.gpus:
            g.mode = ["idle"] * (dur_s + 1)
            g.decode_share = [0.5] * (dur_s + 1)
        node.busy_nic = [0.0] * (dur_s + 1)


def _apply_job(job: Job, dur_s: int, nic_rate: float):
    """Marks its GPUs busy while a step computes, waiting otherwise, and its ports' traffic."""
    busy = job.busy_seconds(dur_s)
    first = int(job.timeline[0][0]) if job.timeline else dur_s
    last = int(job.timeline[-1][2]) if job.timeline else 0
    for g in job.gpus:
        for s in range(max(0, first), min(last + 1, dur_s + 1)):
            g.mode[s] = "train" if busy[s] else "wait"
    for node in {g.node.name: g.node for g in job.gpus}.values():
        for s in range(max(0, first), min(last + 1, dur_s + 1)):
            node.busy_nic[s] = nic_rate * (0.35 if busy[s] else 1.0)


def _dark(node: Node, a: float, b: float, dur_s: int):
    node.dark.append((a, b))
    for g in node.gpus:
        for s in range(int(a), min(int(b) + 1, dur_s + 1)):
            g.mode[s] = None


def _power_event(rng, dur_s, lo, hi):
    """Utility demand response: the facility caps every board at once for 3-4 min."""
    a = dur_s * rng.uniform(lo, hi)
    return [(a, a + rng.uniform(180, 240), rng.uniform(0.62, 0.70))]


def rl(seed: int, minutes: float = 20.0) -> World:
    """GRPO post-training: a learner (TP8 x DP6) and a rollout fleet of TP2 vLLM engines."""
    rng = random.Random(f"blind11-rl-{seed}")
    dur = int(minutes * 60)
    t0 = 1_830_000_000.0 + seed * 86_400
    nodes = _nodes([f"rl-{i:02d}" for i in range(1, 13)], H100, 8,
                   [f"mlx5_{k}" for k in range(8)], rng)
    _modes(nodes, dur)
    caps = _power_event(rng, dur, 0.55, 0.62)
    learners, actors = nodes[:6], nodes[6:]
    lnodes = learners[:]
    rng.shuffle(lnodes)
    n_lane, n_sdc, n_slow = lnodes[0], lnodes[1], lnodes[2]
    labels = []

    # the learner's rollout batches: every 4 optimizer steps a weight sync to the actors
    gen_s = {}

    def tokens(step, r):        # a GRPO batch's response lengths: every rank alike
        return r.lognormvariate(0, 0.20)

    def packing(step, d, r):   # each replica's share of the packed sequences
        f = r.lognormvariate(0, 0.07)
        return f * r.uniform(1.15, 1.35) if r.random() < 0.04 else f

    def sync(step, r):         # NCCL broadcast of the new weights to the engines
        return r.uniform(1.3, 2.2) if step % 4 == 0 else 0.0

    def wait(step, r):         # the next rollout batch is not ready yet (one-step off-policy)
        if step % 4 != 1:
            return 0.0
        g = r.lognormvariate(math.log(15.0), 0.35)
        gen_s[step] = g
        return max(0.0, g - 13.5)

    lane = Label("nvlink-lane", "hardware", "nvlink",
                 {"level": "gpu", "node": n_lane.name, "gpu": rng.randrange(8)})
    sdc = Label("sdc-blip", "sdc", "gpu_hardware",
                {"level": "gpu", "node": n_sdc.name, "gpu": rng.randrange(8)})
    slow = Label("learner-slow", "slow_node", "unknown",
                 {"level": "gpu", "node": n_slow.name, "gpu": rng.randrange(8)},
                 attributable=False)
    learner = Job("grpo-learner", [g for n in learners for g in n.gpus], 8, 2900.0, 480.0,
                  rng.uniform(0.5, 3.0), dur, 4000 + rng.randrange(0, 800, 4),
                  random.Random(f"{seed}-learner"), tenant="post-train",
                  step_scale=tokens, replica_scale=packing, extra_comm_s=sync, wait_s=wait)
    # nvlink-lane: a burst of CRC errors for 6-15 s, one XID 74, then one link of 18 gone:
    # the node's TP all-reduce 5-9 % slower for the rest of the log
    t_lane = dur * rng.uniform(0.20, 0.35)
    burst = rng.uniform(6, 15)
    g_lane = n_lane.gpus[lane.scope["gpu"]]
    g_lane.extra_nvlink.append((t_lane, t_lane + burst, rng.uniform(80, 400),
                                rng.uniform(5, 20), rng.randint(1, 3)))
    g_lane.xids.append((t_lane + burst, 74))
    g_lane.labels.append(lane)
    learner.slow.append(SlowHook(g_lane, rng.uniform(1.05, 1.09), t_lane + burst, lane))
    # learner-slow: a GPU 10-15 % slower from 30-50 % of the log, nothing in telemetry
    learner.slow.append(SlowHook(n_slow.gpus[slow.scope["gpu"]], rng.uniform(1.10, 1.15),
                                 dur * rng.uniform(0.30, 0.50), slow))
    learner.run(caps, t0)
    # sdc-blip: a wrong checksum on one step every 25-60 steps (from 15-30 % of the log); the
    # distributed optimizer's next all-gather overwrites the bad copy, so it lasts one step
    steps = [s for _, _, te, s in learner.timeline if te > dur * rng.uniform(0.15, 0.30)]
    rank = learners.index(n_sdc) * 8 + sdc.scope["gpu"]
    i = rng.randint(3, 12)
    while i < len(steps) - 2:
        learner.blips[steps[i]] = (rank, sdc)
        i += rng.randint(25, 60)
    learner.records.clear()
    learner.timeline.clear()
    learner.rng = random.Random(f"{seed}-learner")
    gen_s.clear()
    learner.run(caps, t0)
    _apply_job(learner, dur, 2.2e10)
    labels += [lane, sdc, slow]

    # the rollout fleet: after each sync, load weights, prefill, decode until the batch is done
    syncs = [(te, s) for _, _, te, s in learner.timeline if s % 4 == 0]
    for node in actors:
        nr = random.Random(f"{seed}-{node.name}-engines")
        for e in range(4):
            g2 = node.gpus[2 * e: 2 * e + 2]
            for te, s in syncs:
                load = nr.uniform(6, 10)
                gen = gen_s.get(s + 1, 15.0) * nr.uniform(0.85, 1.0)
                pre = nr.uniform(3, 5)
                for sec in range(int(te), min(int(te + load + gen) + 1, dur + 1)):
                    x = sec - te
                    mode = "load" if x < load else "prefill" if x < load + pre else "decode"
                    share = 0.60 - 0.30 * max(0.0, (x - load - pre) / max(gen - pre, 1.0))
                    for g in g2:
                        g.mode[sec] = mode
                        g.decode_share[sec] = share
                for sec in range(int(te), min(int(te + load) + 1, dur + 1)):
                    node.busy_nic[sec] = 6e9
    # sbe-remap: an engine GPU's SBEs climb for 90-180 s, XID 92 at their height, then XID 63
    # and a remap pending until the GPU is reset (nobody resets it in the log)
    a_node = rng.choice(actors)
    sbe = Label("sbe-remap", "hardware", "gpu_memory",
                {"level": "gpu", "node": a_node.name, "gpu": rng.randrange(8)})
    g_sbe = a_node.gpus[sbe.scope["gpu"]]
    t_sbe = dur * rng.uniform(0.40, 0.60)
    span = rng.uniform(90, 180)
    g_sbe.extra_sbe.append((t_sbe, t_sbe + span, rng.uniform(0.5, 3.0)))
    g_sbe.xids += [(t_sbe + span * 0.6, 92), (t_sbe + span, 63)]
    g_sbe.remap_pending_from = t_sbe + span
    g_sbe.labels.append(sbe)
    labels.append(sbe)
    topo = ("Topology=blind11-rl\nNodeSet=rl-[01-12] Gpus=8 Nics=mlx5_[0-7]\n"
            "Rack=rack-[1-3] Nodes=rl-[01-12]\nSwitchName=leaf-[1-3] Nodes=rl-[01-12]\n"
            "SwitchName=spine-1 Switches=leaf-[1-3]\n")
    return World(t0, dur, nodes, [learner], labels, caps,
                 {"format": "faultline", "text": topo},
                 {"power_event": caps, "learner": [n.name for n in learners]})


def mixed(seed: int, minutes: float = 20.0) -> World:
    """A fleet of three SKUs: lc-pack (long context, packed) on 5 H200 + 3 H100 nodes."""
    rng = random.Random(f"blind11-mixed-{seed}")
    dur = int(minutes * 60)
    t0 = 1_830_040_000.0 + seed * 86_400
    h200 = _nodes([f"h200-{i:02d}" for i in range(1, 7)], H200, 8,
                  [f"mlx5_{k}" for k in range(8)], rng)
    h100 = _nodes([f"h100-{i:02d}" for i in range(1, 5)], H100, 8,
                  [f"mlx5_{k}" for k in range(8)], rng)
    nvl = _nodes([f"nvl-{i:02d}" for i in range(1, 5)], H100NVL, 4, ["mlx5_0", "mlx5_1"], rng,
                 thermal_s=15.0, ecc_s=60.0, int_temps=False)
    nodes = h200 + h100 + nvl
    _modes(nodes, dur)
    caps = _power_event(rng, dur, 0.62, 0.70)
    lc_nodes = h200[:5] + h100[:3]
    skewed = rng.choice(h100[:3])
    skewed.skew_s = rng.uniform(2.0, 3.5)          # chrony lost its source: ahead, inside 5 s
    labels = []

    def packing(step, d, r):   # packed long documents: attention cost differs per replica
        f = r.lognormvariate(0, 0.10)
        return f * r.uniform(1.2, 1.5) if r.random() < 0.05 else f

    n_slow = rng.choice(h200[:5])
    slow = Label("h200-slow", "slow_node", "unknown",
                 {"level": "gpu", "node": n_slow.name, "gpu": rng.randrange(8)},
                 attributable=False)
    n_flap = rng.choice([n for n in lc_nodes if n is not n_slow])
    port = rng.choice(n_flap.ports)
    flap = Label("flap-retry", "network", "nic",
                 {"level": "nic", "node": n_flap.name, "nic": port.nic, "port": 1})
    port.label = flap
    t_f = dur * rng.uniform(0.35, 0.50)
    for _ in range(rng.randint(3, 5)):
        port.flaps.append((t_f, rng.uniform(1.5, 4.0), rng.randint(40, 400)))
        t_f += rng.uniform(25, 55)
    lc = Job("lc-pack", [g for n in lc_nodes for g in n.gpus], 8, 3000.0, 450.0,
             rng.uniform(0.5, 3.0), dur, 12000 + rng.randrange(0, 900, 100) + 37,
             random.Random(f"{seed}-lc"), tenant="research", ckpt_every=100,
             replica_scale=packing)
    lc.slow.append(SlowHook(n_slow.gpus[slow.scope["gpu"]], rng.uniform(1.09, 1.12),
                            dur * rng.uniform(0.20, 0.35), slow))
    lc.stalls = [(td, ds + rng.uniform(1.0, 2.5), flap) for td, ds, _ in port.flaps]
    lc.run(caps, t0)
    _apply_job(lc, dur, 2.4e10)
    labels += [slow, flap]

    # nvl-ft (TP2 x DP8 on the four H100 NVL nodes) ends at 40-48 %; then a rolling driver
    # upgrade, node by node (dark 60-90 s, counters from 0); one node's GPU does not come back
    ft_end = dur * rng.uniform(0.40, 0.48)
    ft = Job("nvl-ft", [g for n in nvl for g in n.gpus], 2, 880.0, 150.0, rng.uniform(0.5, 2),
             ft_end, 300 + rng.randrange(200), random.Random(f"{seed}-ft"), tenant="finetune")
    ft.run(caps, t0)
    _apply_job(ft, dur, 9e9)
    t = ft_end + rng.uniform(30, 60)
    order = nvl[:]
    rng.shuffle(order)
    lost_node = rng.choice(nvl)
    lost_gpu = lost_node.gpus[rng.randrange(4)]
    missing = Label("gpu-missing", "unattributed", "unknown",
                    {"level": "gpu", "node": lost_node.name, "gpu": lost_gpu.idx},
                    attributable=False)
    for node in order:
        back = t + rng.uniform(60, 90)
        _dark(node, t, back, dur)
        if node is lost_node:
            lost_gpu.missing_from = back
            lost_gpu.labels.append(missing)
            for s in range(int(back), dur + 1):
                lost_gpu.mode[s] = None
        t = back + rng.uniform(10, 25)
    labels.append(missing)
    jobs = [lc, ft]
    ev_start = max(t + 20, dur * rng.uniform(0.80, 0.84))
    ev_nodes = [n for n in nvl if n is not lost_node]
    if ev_start < dur - 60:
        ev = Job("nvl-eval", [g for n in ev_nodes for g in n.gpus], 2, 700.0, 120.0,
                 ev_start, dur, 0, random.Random(f"{seed}-ev"), tenant="finetune",
                 cold_steps=25)
        ev.run(caps, t0)
        _apply_job(ev, dur, 9e9)
        jobs.append(ev)
    topo = ("SwitchName=leaf-a Nodes=h200-[01-06]\n"
            "SwitchName=leaf-b Nodes=h100-[01-04],nvl-[01-04]\n"
            "SwitchName=spine Switches=leaf-a,leaf-b\n")
    return World(t0, dur, nodes, jobs, labels, caps, {"format": "slurm", "text": topo},
                 {"power_event": caps, "skewed": [skewed.name, skewed.skew_s],
                  "lc_nodes": [n.name for n in lc_nodes]})


STORIES = {"rl": rl, "mixed": mixed}
