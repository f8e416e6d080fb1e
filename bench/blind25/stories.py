"""blind25's two stories, every choice drawn from the seed.

``fabric`` -- 16 H100 nodes, a rail-optimized faultline topology, every collector at 10 s: a
tensor-parallel job whose node loses NVLink bandwidth, a loader-heavy job on a GPU whose PCIe
link trained down, and the collectors' own life (an exporter restart, a driver reload renaming
ports, a batch of rows delivered late).

``mixed`` -- 12 H100 + 8 B200 nodes, a plain Slurm topology.conf, every collector at 30 s: a
pure-DP job on H100s hit by an NVLink error (XID 74), a TP job on B200s whose GPU falls off the
bus (XID 79) and hangs until its watchdog, idle nodes' driver reloads.
"""

from __future__ import annotations

import random

from bench.blind25.fleet import B200, H100, make_node
from bench.blind25.sim import Counting, Job, Log, Slow, emit_xid, poll, run_job, trickle

T_BASE = 1_795_000_000.0
IB = [f"mlx5_{i}" for i in range(8)]
PCI_BUSES = [12, 18, 75, 84, 141, 150, 203, 211]


def fabric_topology() -> str:
    lines = ["Topology=fab-h100 Version=1",
             "NodeSet=fab-n[01-16] Gpus=8 Nics=mlx5_[0-7]",
             "Rack=rack-[1-4] Nodes=fab-n[01-16]"]
    lines += [f"SwitchName=rail{k}-leaf[0-1] Nodes=fab-n[01-16] Nics=mlx5_{k}" for k in range(8)]
    lines.append("SwitchName=spine[0-1] Switches=rail[0-7]-leaf[0-1]")
    return "\n".join(lines) + "\n"


def mixed_topology() -> str:
    return ("# site topology.conf (tree plugin): H100 and B200 rows, one spine\n"
            "SwitchName=leaf1 Nodes=h100-[01-06]\n"
            "SwitchName=leaf2 Nodes=h100-[07-12]\n"
            "SwitchName=leaf3 Nodes=b200-[01-04]\n"
            "SwitchName=leaf4 Nodes=b200-[05-08]\n"
            "SwitchName=spine1 Switches=leaf[1-4]\n")


def _at(log: Log, lo: float, hi: float, rng: random.Random) -> float:
    return log.t0 + (log.t1 - log.t0) * rng.uniform(lo, hi)


def fabric(seed: int, minutes: float) -> tuple[Log, dict]:
    rng = random.Random(f"blind25/fabric/{seed}")
    t0 = T_BASE + seed * 7200.0
    log = Log(random.Random(f"blind25/fabric/{seed}/arrival"), t0, t0 + minutes * 60.0)
    iv = 10.0
    nodes = [make_node(f"fab-n{i:02d}", H100, IB, rng, iv) for i in range(1, 17)]
    lm_nodes, dl_nodes, spare = nodes[:12], nodes[12:15], nodes[15]
    counting: list[Counting] = []
    lm = Job("tp-lm", "lm", lm_nodes, t0 + rng.uniform(-30, 5), log.t1,
             rng.uniform(1000, 1150), rng.uniform(200, 260), rng.uniform(50, 70),
             rng.uniform(12, 20), tp=8, ckpt_every_s=rng.uniform(300, 420),
             first_step=rng.randint(8000, 30000), nic_util=0.3)
    dl = Job("img-dl", "vision", dl_nodes, t0 + rng.uniform(-30, 5), log.t1,
             rng.uniform(240, 290), 0.0, rng.uniform(35, 50), rng.uniform(95, 130),
             rank_fields=False, ckpt_every_s=rng.uniform(380, 460), save_s=(2.0, 4.0),
             loss0=4.2, loss_inf=0.9, first_step=rng.randint(2000, 9000), nic_util=0.12)
    # fault 1: a degraded NVLink on one GPU: CRC / replay counters climbing, the node's TP
    # all-reduces slower (its ranks' comm grows, compute does not; the others wait for it)
    nv_node = rng.choice(lm_nodes)
    nv_gpu = rng.randrange(8)
    t_nv = _at(log, 0.25, 0.45, rng)
    fid = f"nvl-{nv_node.name}-g{nv_gpu}"
    log.label(fid, "slow_node", "nvlink", {"level": "gpu", "node": nv_node.name,
                                             "gpu": nv_gpu})
    lm.slows.append(Slow(fid, t_nv, "tp", rng.uniform(1.35, 1.7), node=nv_node.name))
    counting.append(Counting(fid, nv_node.name, nv_gpu, t_nv, log.t1 + 60, {
        "nvlink_crc_errors": rng.uniform(20, 90), "nvlink_replay_errors": rng.uniform(0.5, 3),
        "nvlink_recovery_errors": 1 / 180}))
    # fault 2: a GPU's PCIe link trained down (Gen5 x16 -> x8): its host-to-device copies take
    # longer, only the loader-heavy job feels it (time in neither compute nor comm); the
    # marginal link replays now and then
    pc_node = rng.choice(dl_nodes)
    pc_gpu = rng.randrange(8)
    t_pc = _at(log, 0.30, 0.55, rng)
    fid = f"pcie-{pc_node.name}-g{pc_gpu}"
    log.label(fid, "slow_node", "gpu_hardware", {"level": "gpu", "node": pc_node.name,
                                                  "gpu": pc_gpu})
    dl.slows.append(Slow(fid, t_pc, "loader", rng.uniform(1.5, 1.9), node=pc_node.name,
                         gpu=pc_gpu))
    counting.append(Counting(fid, pc_node.name, pc_gpu, t_pc, log.t1,
                             {"pcie_replay": rng.uniform(0.2, 1.0)}))
    # routine: dcgm-exporter restarted on a busy node (1-3 scrapes missing, the first one
    # after it partial); another node's collector buffering 30-60 s of rows while the broker
    # is unreachable, shipping them 30-90 s late (DESIGN promises 5 s: beyond the contract);
    # the spare's NIC driver reloaded (counters at 0, mlx5_2 and mlx5_3 named the other way)
    quiet = [n for n in lm_nodes if n is not nv_node]
    rs, lt = rng.sample(quiet, 2)
    a = _at(log, 0.5, 0.8, rng)
    b = a + iv * rng.randint(1, 3)
    rs.dcgm_gaps.append((a, b))
    log.effect("dcgm-exporter restart: scrapes missing, the first after it partial",
               {"node": rs.name}, a, b + iv)
    a = _at(log, 0.35, 0.7, rng)
    b = a + rng.uniform(30, 60)
    lt.late.append((a, b, b + 30.0))
    log.effect("collector batch delivered 30-90 s late, some rows twice (beyond DESIGN's 5 s)",
               {"node": lt.name}, a, b + 31.5)
    a = _at(log, 0.2, 0.7, rng)
    b = a + iv * rng.randint(1, 3)
    spare.nic_reload.append((a, b, {"mlx5_2": "mlx5_3", "mlx5_3": "mlx5_2"}))
    log.effect("NIC driver reload on an idle node: port counters back at 0, mlx5_2/mlx5_3 "
               "swapped names", {"node": spare.name}, a, b + iv)
    trickle(rng, [g for n in rng.sample(quiet, 2) for g in rng.sample(n.gpus, 1)], log,
            counting)
    for job in (lm, dl):
        run_job(log, job, rng)
    for n in nodes:
        poll(log, n, iv, rng, counting, [])
    return log, {"format": "faultline", "text": fabric_topology()}


def mixed(seed: int, minutes: float) -> tuple[Log, dict]:
    rng = random.Random(f"blind25/mixed/{seed}")
    t0 = T_BASE + seed * 7200.0 + 3600.0
    log = Log(random.Random(f"blind25/mixed/{seed}/arrival"), t0, t0 + minutes * 60.0)
    iv = 30.0
    h1 = [make_node(f"h100-{i:02d}", H100, IB, rng, iv) for i in range(1, 13)]
    b2 = [make_node(f"b200-{i:02d}", B200, IB, rng, iv) for i in range(1, 9)]
    counting: list[Counting] = []
    ft = Job("h1-ft", "ft", h1[:8], t0 + rng.uniform(-30, 5), log.t1,
             rng.uniform(560, 680), 0.0, rng.uniform(100, 140), rng.uniform(15, 25),
             rank_fields=False, ckpt_every_s=rng.uniform(360, 480), save_s=(4.0, 9.0),
             loss0=2.6, loss_inf=1.4, first_step=rng.randint(500, 4000), nic_util=0.2)
    lm = Job("b2-lm", "lm", b2, t0 + rng.uniform(-30, 5), log.t1,
             rng.uniform(820, 950), rng.uniform(150, 200), rng.uniform(55, 75),
             rng.uniform(12, 18), tp=4, ckpt_every_s=rng.uniform(300, 420),
             first_step=rng.randint(20000, 60000), nic_util=0.3)
    # fault 1: an NVLink error (XID 74) on an H100 of the pure-DP job: replays and recoveries
    # from then on, the node's share of the all-reduce slower, so every rank waits longer
    nv_node, nv_gpu = rng.choice(h1[:8]), rng.randrange(8)
    t_nv = _at(log, 0.15, 0.35, rng)
    fid = f"xid74-{nv_node.name}-g{nv_gpu}"
    log.label(fid, "hardware", "nvlink", {"level": "gpu", "node": nv_node.name, "gpu": nv_gpu})
    emit_xid(log, nv_node.name, nv_gpu, t_nv, 74, fid)
    ft.slows.append(Slow(fid, t_nv, "allreduce", rng.uniform(1.3, 1.6)))
    counting.append(Counting(fid, nv_node.name, nv_gpu, t_nv, log.t1 + 60, {
        "nvlink_crc_errors": rng.uniform(5, 40), "nvlink_replay_errors": rng.uniform(1, 5),
        "nvlink_recovery_errors": rng.uniform(0.01, 0.03)}))
    # fault 2: a B200 falls off the bus (XID 79) mid-step: DCGM reads nothing from it again,
    # the job's collective never completes (no steps from any rank, GPUs spinning in NCCL)
    # until the watchdog kills the job 4-7 minutes later
    bus_node, bus_gpu = rng.choice(b2), rng.randrange(8)
    t_bus = _at(log, 0.45, 0.62, rng)
    fid = f"bus-{bus_node.name}-g{bus_gpu}"
    log.label(fid, "hardware", "gpu_hardware", {"level": "gpu", "node": bus_node.name,
                                                 "gpu": bus_gpu})
    emit_xid(log, bus_node.name, bus_gpu, t_bus, 79, fid)
    bus_node.gpus[bus_gpu].gone_from = t_bus + 0.5
    lm.hang_at, lm.kill_at, lm.hang_fid = t_bus, t_bus + rng.uniform(240, 420), fid
    # routine: B200s at their 1000 W cap (0x4) under load beside H100s well under 700 W;
    # dcgm-exporter restarted on a busy B200 node; idle H100s' GPU driver reloaded (volatile
    # counters back at 0) and NIC driver reloaded (ports back as ibpBUSs0 names, counters at 0)
    log.effect("mixed generations: B200 at its 1000 W cap (0x4) under load, H100 under 700 W",
               {"job": "b2-lm"}, t0, log.t1)
    rs = rng.choice([n for n in b2 if n is not bus_node])
    a = _at(log, 0.15, 0.4, rng)
    b = a + iv * rng.randint(1, 3)
    rs.dcgm_gaps.append((a, b))
    log.effect("dcgm-exporter restart: scrapes missing, the first after it partial",
               {"node": rs.name}, a, b + iv)
    gr, nr = rng.sample(h1[8:], 2)
    a = _at(log, 0.2, 0.7, rng)
    b = a + iv * rng.randint(2, 4)
    gr.gpu_reload.append((a, b))
    log.effect("GPU driver reload on an idle node: volatile DCGM counters back at 0",
               {"node": gr.name}, a, b + iv)
    a = _at(log, 0.2, 0.7, rng)
    b = a + iv * rng.randint(1, 3)
    nr.nic_reload.append((a, b, {n: f"ibp{bus}s0" for n, bus in zip(IB, PCI_BUSES, strict=True)}))
    log.effect("NIC driver reload on an idle node: ports renamed mlx5_N -> ibpBUSs0 by udev, "
               "counters at 0", {"node": nr.name}, a, b + iv)
    trickle(rng, [g for n in rng.sample(h1[:8], 2) for g in rng.sample(n.gpus, 1)
                  if (n, g.gpu) != (nv_node, nv_gpu)], log, counting)
    for job in (ft, lm):
        run_job(log, job, rng)
    for n in h1 + b2:
        changed = [(fid, t_bus, log.t1)] if n in b2 else []
        poll(log, n, iv, rng, counting, changed)
    return log, {"format": "slurm", "text": mixed_topology()}


STORIES = {"fabric": fabric, "mixed": mixed}
