"""blind28's two stories: nodes shared by several tenants' jobs, every choice from the seed.

- ``packed``: a Slurm ``topology.conf`` with its switches' site names, 16 nodes
  ``gpu-r07-n01..08``, ``gpu-r08-n01..08``; on every node a recommender's rank (GPU 0), an LLM's
  TP pair (GPUs 1-2), a speech job's two ranks (GPUs 3-4), fine-tunes that come and go (GPUs
  5-6), a server or nothing (GPU 7).
- ``spread``: a faultline topology, 12 nodes ``hgx-a01..12``; a 7B pre-training TP pair (GPUs
  1-2), an SFT job (GPUs 3-4) that dies on an XID and restarts without its node, a DPO job and
  fine-tunes that come and go (GPUs 5-7), servers (GPU 0 of 01-06).
"""

from __future__ import annotations

import random
from collections.abc import Callable

from bench.blind28.world import Job, Serve, World

T0 = 1_796_515_200.0          # 2026-12-06 00:00 UTC


def _serve(w: World, node: str, gpu: int, rng: random.Random) -> None:
    bursts = []
    t = w.t0 + rng.uniform(20, 90)
    while t < w.t1:
        d = rng.uniform(30, 120)
        bursts.append((t, t + d, rng.uniform(0.25, 0.6)))
        t += d + rng.uniform(60, 200)
    w.serves.append(Serve(node, gpu, w.t0, w.t1 + 60, bursts))
    w.log.effect("serving-bursts", {"node": node}, w.t0, w.t1)


def _churn(w: World, rng: random.Random, nodes: list[str], gpus: tuple[int, ...], tag: str,
           tenant: str, until: float | None = None) -> list[Job]:
    """Small fine-tunes one after another on the same GPUs: 3-6 min each, 20-60 s idle between,
    each cold at its start (the neighbours of every node see them come and go)."""
    out, t, i = [], w.t0 + rng.uniform(0, 20), 0
    stop = until if until is not None else w.t1
    while t < stop - 60:
        d = rng.uniform(180, 360)
        j = Job(f"{tag}-{i:02d}", tenant, [(n, g) for n in nodes for g in gpus], 1,
                rng.uniform(800, 1000), rng.uniform(90, 140), t, min(t + d, stop),
                rng.uniform(450, 560), nic_gbs=3.0, save_every=10**6)
        w.jobs.append(j)
        out.append(j)
        for n in nodes:
            w.log.effect("neighbour-job-start", {"node": n}, t, t + 30)
        t += d + rng.uniform(20, 60)
        i += 1
    return out


def _stalls(w: World, rng: random.Random, nodes: list[str]) -> None:
    for n in rng.sample(nodes, 2):
        t = w.t0 + rng.uniform(0.15, 0.9) * (w.t1 - w.t0)
        w.stalls.append((n, t, rng.uniform(1.0, 2.0)))
        w.log.effect("host-stall-one-step", {"node": n}, t, t + 10)


def _uploads(w: World, j: Job, rng: random.Random, victim: str) -> None:
    """Checkpoint uploads to object storage over the compute NICs every 3-4 min, 30-60 s."""
    t = w.t0 + rng.uniform(60, 150)
    while t < w.t1:
        d = rng.uniform(30, 60)
        j.uploads.append((t, t + d))
        w.log.effect("neighbour-checkpoint-upload", {"job": victim}, t, t + d)
        w.log.effect("neighbour-checkpoint-upload", {"job": j.name}, t, t + d)
        t += d + rng.uniform(150, 210)


def _saves(w: World) -> None:
    for j in w.jobs:
        for a, b in j.saves:
            w.log.effect("synchronous-save", {"job": j.name}, a, b)


def packed(seed: int, minutes: float) -> tuple[World, dict]:
    rng = random.Random(28_000 + seed)
    nodes = [f"gpu-r{r:02d}-n{i:02d}" for r in (7, 8) for i in range(1, 9)]
    w = World(seed, T0 + seed * 86_400.0, minutes, nodes)
    span = w.t1 - w.t0

    def at(lo: float, hi: float) -> float:
        return w.t0 + rng.uniform(lo, hi) * span

    rec = Job("rec-emb", "ads", [(n, 0) for n in nodes], 1, rng.uniform(1100, 1300),
              rng.uniform(250, 320), w.t0 - 3600, w.t1 + 600, rng.uniform(520, 600),
              nic_gbs=8.0, save_every=rng.randint(120, 160), first_step=rng.randint(4000, 9000))
    llm = Job("llm-a", "nlp", [(n, g) for n in nodes for g in (1, 2)], 2,
              rng.uniform(2000, 2400), rng.uniform(250, 320), w.t0 - 3600, w.t1 + 600,
              rng.uniform(690, 735), nic_gbs=6.0, save_every=rng.randint(45, 60),
              first_step=rng.randint(20_000, 40_000), checksum=True)
    asr = Job("asr-b", "speech", [(n, g) for n in nodes for g in (3, 4)], 1,
              rng.uniform(1400, 1700), rng.uniform(180, 240), w.t0 - 3600, w.t1 + 600,
              rng.uniform(600, 660), nic_gbs=5.0, save_every=rng.randint(70, 90),
              first_step=rng.randint(3000, 12_000))
    w.jobs += [rec, llm, asr]
    _uploads(w, rec, rng, "llm-a")
    _churn(w, rng, nodes[:4], (5, 6), "ft-p", "finetune")
    _churn(w, rng, nodes[4:8], (5, 6), "ft-q", "finetune")
    _churn(w, rng, nodes[8:12], (5, 6), "ft-r", "lab")
    _churn(w, rng, nodes[12:], (5, 6), "ft-s", "lab")
    for n in nodes[:8]:
        _serve(w, n, 7, rng)
    for n in nodes[8:]:
        w.log.effect("idle-gpu-beside-busy-mates", {"node": n}, w.t0, w.t1)
    picks = rng.sample(nodes, 4)
    # a port shared by llm-a (GPU 2) and asr-b (GPU 3) losing symbols: both jobs' rings slow
    n = picks[0]
    a = at(0.20, 0.35)
    f = w.log.fault(f"ber-{n}-mlx5_1", "network", "nic",
                    {"level": "nic", "node": n, "nic": "mlx5_1", "port": 1}, True)
    w.nic_bad[(n, "mlx5_1")].append((a, w.t1 + 60, "ber", rng.uniform(1.5, 1.8), f))
    # a power supply failing: HW power brake episodes on all 8 GPUs, every tenant's ranks slow
    n = picks[1]
    f = w.log.fault(f"brake-{n}", "slow_node", "power", {"level": "node", "node": n}, True)
    t = at(0.45, 0.60)
    while t < w.t1:
        d = rng.uniform(15, 40)
        w.brakes[n].append((t, t + d, f))
        t += d + rng.uniform(50, 110)
    # a GPU of asr-b 12-18 % slow, nothing in telemetry
    n, g = picks[2], rng.choice((3, 4))
    f = w.log.fault(f"slow-{n}-g{g}", "slow_node", "unknown",
                    {"level": "gpu", "node": n, "gpu": g}, False)
    w.slow[(n, g)].append((at(0.10, 0.25), w.t1 + 600, rng.uniform(1.12, 1.18), f))
    # a GPU of llm-a whose parameters go wrong: its checksum leaves its TP rank's from a step on
    n, g = picks[3], rng.choice((1, 2))
    f = w.log.fault(f"sdc-{n}-g{g}", "sdc", "gpu_hardware",
                    {"level": "gpu", "node": n, "gpu": g}, True)
    w.sdc[(n, g)] = (at(0.60, 0.75), f)
    _stalls(w, rng, [x for x in nodes if x not in picks])
    text = ("# site fabric: one leaf a rack row, its rack-unit in the name\n"
            "SwitchName=ib-leaf-r07-u41 Nodes=gpu-r07-n[01-08]\n"
            "SwitchName=ib-leaf-r08-u41 Nodes=gpu-r08-n[01-08]\n"
            "SwitchName=ib-spine-c1 Switches=ib-leaf-r07-u41,ib-leaf-r08-u41\n")
    return w, {"format": "slurm", "text": text}


def spread(seed: int, minutes: float) -> tuple[World, dict]:
    rng = random.Random(28_500 + seed)
    nodes = [f"hgx-a{i:02d}" for i in range(1, 13)]
    w = World(seed + 1000, T0 + seed * 86_400.0 + 43_200.0, minutes, nodes)
    span = w.t1 - w.t0

    def at(lo: float, hi: float) -> float:
        return w.t0 + rng.uniform(lo, hi) * span

    pt = Job("pt-7b", "research", [(n, g) for n in nodes for g in (1, 2)], 2,
             rng.uniform(2600, 3000), rng.uniform(280, 340), w.t0 - 3600, w.t1 + 600,
             rng.uniform(680, 720), nic_gbs=6.0, save_every=rng.randint(40, 55),
             first_step=rng.randint(8000, 30_000), checksum=True)
    sft = Job("sft-c", "product", [(n, g) for n in nodes for g in (3, 4)], 1,
              rng.uniform(1200, 1500), rng.uniform(160, 220), w.t0 - 3600, w.t1 + 600,
              rng.uniform(560, 640), nic_gbs=5.0, save_every=rng.randint(35, 45),
              first_step=rng.randint(500, 3000))
    dpo = Job("dpo-s", "product", [(n, g) for n in nodes[:4] for g in (5, 6, 7)], 1,
              rng.uniform(1700, 2000), rng.uniform(200, 260), w.t0 - 3600, w.t1 + 600,
              rng.uniform(600, 680), nic_gbs=4.0, save_every=rng.randint(60, 80),
              first_step=rng.randint(100, 900))
    w.jobs += [pt, sft, dpo]
    _uploads(w, pt, rng, "sft-c")
    picks = rng.sample(nodes[4:8], 1) + rng.sample([x for x in nodes if x not in nodes[4:8]], 3)
    # fine-tunes on 05-08 until a new one starts at 30-45 % on a GPU 35-45 % slow from its
    # first step; on 09-12 they come and go all along
    t_new = at(0.30, 0.45)
    _churn(w, rng, nodes[4:8], (5, 6), "ft-m", "lab", until=t_new - rng.uniform(20, 50))
    new = Job("ft-new", "lab", [(n, g) for n in nodes[4:8] for g in (5, 6)], 1,
              rng.uniform(800, 1000), rng.uniform(90, 140), t_new, w.t1 + 600,
              rng.uniform(450, 560), nic_gbs=3.0, save_every=10**6)
    w.jobs.append(new)
    for n in nodes[4:8]:
        w.log.effect("neighbour-job-start", {"node": n}, t_new, t_new + 30)
    _churn(w, rng, nodes[8:], (5, 6), "ft-n", "lab")
    for n in nodes[:6]:
        _serve(w, n, 0, rng)
    for n in nodes[6:]:
        w.log.effect("idle-gpu-beside-busy-mates", {"node": n}, w.t0, w.t1)
    n, g = picks[0], rng.choice((5, 6))
    f = w.log.fault(f"straggler-{n}-g{g}", "slow_node", "unknown",
                    {"level": "gpu", "node": n, "gpu": g}, False)
    w.slow[(n, g)].append((t_new, w.t1 + 600, rng.uniform(1.35, 1.45), f))
    # a node's fans failing: every GPU of it hotter; the busiest hold 88 C at 0x20
    n = picks[1]
    f = w.log.fault(f"fan-{n}", "slow_node", "thermal", {"level": "node", "node": n}, True)
    w.fans[n] = (at(0.20, 0.35), rng.uniform(150, 240), rng.uniform(1.5, 1.7), f)
    # a contained ECC error on an SFT GPU: the job dies, restarts without that node
    n, g = picks[2], rng.choice((3, 4))
    f = w.log.fault(f"xid94-{n}-g{g}", "hardware", "gpu_memory",
                    {"level": "gpu", "node": n, "gpu": g}, True)
    tx = at(0.50, 0.65)
    w.xids[(n, g)] = (tx, 94, f)
    back = tx + rng.uniform(60, 100)
    again = Job("sft-c", "product", [(m, h) for m in nodes if m != n for h in (3, 4)], 1,
                sft.compute_ms, sft.comm_ms, back, w.t1 + 600, sft.demand_w, nic_gbs=5.0,
                save_every=sft.save_every, resume_of=sft)
    w.jobs.append(again)
    w.log.effect("job-crash-and-restart", {"job": "sft-c"}, tx, back + 60)
    # a port shared by pt-7b (GPU 2) and sft-c (GPU 3) flapping: link down 8-25 s, 3-4 times
    n = picks[3]
    f = w.log.fault(f"flap-{n}-mlx5_1", "network", "nic",
                    {"level": "nic", "node": n, "nic": "mlx5_1", "port": 1}, True)
    a = at(0.55, 0.75)
    t = a + rng.uniform(5, 20)
    for _ in range(rng.randint(3, 4)):
        if t >= w.t1:
            break
        w._flaps[(n, "mlx5_1")].append((t, rng.uniform(8, 25)))
        t += rng.uniform(40, 90)
    w.nic_bad[(n, "mlx5_1")].append((a, t, "flap", 3.0, f))
    _stalls(w, rng, [x for x in nodes if x not in picks])
    text = ("Topology=shared-hgx Version=1\n"
            "NodeSet=hgx-a[01-12] Gpus=8 Nics=mlx5_[0-3]\n"
            "Rack=rack-a1,rack-a2 Nodes=hgx-a[01-12]\n"
            "SwitchName=leaf-a1,leaf-a2 Nodes=hgx-a[01-12]\n"
            "SwitchName=spine-a Switches=leaf-a1,leaf-a2\n")
    return w, {"format": "faultline", "text": text}


def _story(build: Callable) -> Callable:
    def make(seed: int, minutes: float):
        w, topo = build(seed, minutes)
        log = w.render()
        _saves(w)
        return _Written(log, topo)
    return make


class _Written:
    def __init__(self, log, topo) -> None:
        self.log, self.topo = log, topo

    def write(self, path):
        return self.log.write(path, self.topo)


STORIES: dict[str, Callable] = {"packed": _story(packed), "spread": _story(spread)}
