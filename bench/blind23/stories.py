"""blind23's two stories, every choice drawn from the seed.

`fleet` -- a mixed fleet (8 air-cooled H100, 8 A100 40 GB, 4 four-GPU L40S nodes) in the
faultline topology format, thermal and ports every 10 s, ECC every 30 s. Routine: each type's
own "normal" (an L40S at 75-85 C and its power cap, an A100 at 1410 MHz and often capped, an
H100 at 1980 MHz); a rolling driver upgrade (idle nodes drained one at a time, back minutes
later on the new driver: 15 MHz lower clocks, step times +-1.2 %, counters from 0); llm-a
crashing (an application error, XID 13), requeued 100-150 s later from its last checkpoint onto
a different set of nodes in a new order with a new container 5 % slower on every rank; rec-b's
cold start; Python GC pauses (one rank, one step); rank 0's logging; synchronous saves.
Faults: **a GPU stuck at a low clock** after its node's upgrade, seen once llm-a lands on it
(gpu, slow_node/gpu_hardware: no reason bit, the clock alone); **a NUMA mis-binding** -- rec-b's
launcher pins GPUs 4-7's data loaders to the far socket of one A100 node from the job's first
step: those four ranks late in neither part (node, slow_node/unknown, unattributable); **a
chassis fan failing on an L40S node** -- its four GPUs, already at ~80 C, climb to throttling
(node, slow_node/thermal).

`loop` -- 16 liquid-cooled H100 nodes, a plain Slurm topology.conf (no racks: the CDUs are
invisible to it), every collector at 30 s. Racks of 4 nodes share a coolant distribution unit.
Routine: one warm rack (+3 C supply), a CDU pump switchover on another (+3-5 C for 2-3 min, no
throttle), lm-d's slower pipeline stage, GC pauses, logging, saves. Faults: **a rack's CDU
losing flow** -- supply +24-30 C over 5-8 min and the cold plates' resistance x1.25: all 32 GPUs
warm and throttle together (4 labels, one per node, slow_node/thermal: DESIGN has no rack or
coolant-loop unit, and a node is the smallest unit that contains each part; the fault id names
the rack); **one node's coolant flow restricted** (a half-seated quick disconnect; its 8 GPUs
only; node, slow_node/thermal); **a host CPU thermal-throttling** -- every rank of the node
computes 8-14 % slower while its GPUs look healthy (cooler, a little less power; node,
slow_node/unknown, unattributable).
"""

from __future__ import annotations

import numpy as np

from bench.blind23.sim import Epoch, Job, Sim
from bench.blind23.world import A100, FLEET_TOPOLOGY, H100_AIR, H100_LIQUID, L40S, LOOP_TOPOLOGY

T0 = 1_796_515_200.0    # 2026-12-05 00:00 UTC


def _ramp(T: int, start: float, over: float, top: float) -> np.ndarray:
    """0 before ``start``, rising linearly to ``top`` over ``over`` seconds, then flat."""
    s = np.arange(T, dtype=float)
    return np.clip((s - start) / max(over, 1.0), 0.0, 1.0) * top


def fleet(seed: int, minutes: float) -> tuple[Sim, dict, str, str]:
    rng = np.random.default_rng([23, 1, seed])
    T = int(minutes * 60)
    sim = Sim(rng, T0 + seed * 86_400 + 3_600, T)
    h = [f"h100-{i:02d}" for i in range(8)]
    a = [f"a100-{i:02d}" for i in range(8)]
    lx = [f"l40s-{i:02d}" for i in range(4)]
    for n in h:
        sim.add_node(n, H100_AIR, [f"mlx5_{i}" for i in range(8)], 400.0, False,
                     float(rng.uniform(22.5, 25.0)))
    for n in a:
        sim.add_node(n, A100, [f"mlx5_{i}" for i in range(4)], 200.0, False,
                     float(rng.uniform(22.0, 24.5)))
    for n in lx:
        sim.add_node(n, L40S, ["mlx5_0", "mlx5_1"], 100.0, True, float(rng.uniform(25.0, 27.5)))
    faults: dict[str, dict] = {}

    # the rolling upgrade of the idle spares (one at a time), before llm-a's crash
    f = T / 1080.0
    plan = [("h100-06", 0.05), ("h100-07", 0.27), ("a100-06", 0.12), ("a100-07", 0.35)]
    for node, at in plan:
        down = at * T + float(rng.uniform(0, 10)) * f
        back = down + float(rng.uniform(190, 225)) * f
        sim.reboot(node, down, back)
        sim.nodes[node].driver_mult = 1 + float(rng.uniform(-0.012, 0.012))
        sim.effect("driver_upgrade_reboot", {"level": "node", "node": node}, down - 30 * f,
                   min(back + 60 * f, T))

    # llm-a: crashes, requeued onto the upgraded spares, new container
    crash = float(rng.uniform(0.5, 0.54)) * T
    restart = crash + float(rng.uniform(100, 150)) * f
    new_nodes = list(rng.permutation(h[2:8]))
    llm = Job("llm-a", "research", 8, 48, 4, 1, 1050.0, 25.0, 180.0, 0.009,
              [Epoch(0.0, crash, int(rng.integers(20_000, 40_000)), h[:6], cold=False,
                     init_s=0.0),
               Epoch(restart, float(T), -1, [str(x) for x in new_nodes], mult=1.05,
                     init_s=float(rng.uniform(35, 55)) * f)],
              ckpt_every=200, ckpt_s=(6.0, 9.0), checksum=True)
    xid_node, xid_gpu = h[int(rng.integers(6))], int(rng.integers(8))
    sim.xid(xid_node, xid_gpu, crash - 0.4, 13)
    sim.effect("app_crash_xid13", {"level": "gpu", "node": xid_node, "gpu": xid_gpu},
               crash - 1, crash + 1, job="llm-a")
    sim.effect("crash_requeue_from_checkpoint", {"level": "job", "job": "llm-a"}, crash - 5,
               min(restart + 120 * f, T))
    sim.effect("new_container_5pct_slower", {"level": "job", "job": "llm-a"}, restart, T)
    # then the two nodes llm-a left behind get their upgrade
    down0 = restart + 30 * f
    for node in ("h100-00", "h100-01"):
        back = down0 + float(rng.uniform(190, 225)) * f
        sim.reboot(node, down0, min(back, T))
        sim.effect("driver_upgrade_reboot", {"level": "node", "node": node}, down0 - 30 * f,
                   min(back + 60 * f, T))
        down0 = back + 20 * f
        if down0 >= T:
            break
    # a GPU of one upgraded spare is stuck low: nothing to see until llm-a loads it
    stuck_node = sim.nodes[str(rng.choice(["h100-06", "h100-07"]))]
    g = int(rng.integers(8))
    stuck_node.stuck_mhz = np.full(8, np.nan)
    stuck_node.stuck_mhz[g] = float(np.round(rng.uniform(1500, 1740) / 15) * 15)
    stuck_node.stuck_from = float(stuck_node.boots[0])
    stuck_node.fault = f"clock-{stuck_node.name}-g{g}"
    faults[stuck_node.fault] = {"kind": "slow_node", "cause": "gpu_hardware",
                                "scope": {"level": "gpu", "node": stuck_node.name, "gpu": g},
                                "attributable": True}

    # rec-b: launched a minute or two in; one node's loaders of GPUs 4-7 on the far socket
    launch = float(rng.uniform(0.04, 0.1)) * T
    rec = Job("rec-b", "ads", 8, 48, None, None, 1500.0, 40.0, 260.0, 0.011,
              [Epoch(launch, float(T), 0, a[:6], init_s=45.0 * f)], ckpt_every=300,
              ckpt_s=(1.0, 2.0))
    sim.effect("cold_start", {"level": "job", "job": "rec-b"}, launch, launch + 120 * f)
    numa = sim.nodes[a[int(rng.integers(6))]]
    numa.fault = f"numa-{numa.name}"
    numa.stall_frac = np.zeros((T, 8))
    numa.stall_frac[int(launch):, 4:] = float(rng.uniform(0.08, 0.15))
    faults[numa.fault] = {"kind": "slow_node", "cause": "unknown",
                          "scope": {"level": "node", "node": numa.name}, "attributable": False}

    # ft-c on the L40S nodes; one node's chassis fan fails
    ft = Job("ft-c", "search", 4, 16, None, None, 700.0, 30.0, 140.0, 0.013,
             [Epoch(0.0, float(T), int(rng.integers(3_000, 9_000)), lx, cold=False,
                    init_s=0.0)], ckpt_every=500, ckpt_s=(2.0, 4.0))
    fan = sim.nodes[lx[int(rng.integers(4))]]
    fan.fault = f"fan-{fan.name}"
    at, over = float(rng.uniform(0.35, 0.6)) * T, 90.0 * f
    top = float(rng.uniform(1.28, 1.4)) - 1
    spread = rng.uniform(0.7, 1.2, 4)
    fan.fault_rmult = 1 + _ramp(T, at, over, top)[:, None] * spread[None, :]
    faults[fan.fault] = {"kind": "slow_node", "cause": "thermal",
                         "scope": {"level": "node", "node": fan.name}, "attributable": True}

    sim.jobs = [llm, rec, ft]
    for n in a + lx:
        sim.effect("power_cap_0x4_normal_for_the_type", {"level": "node", "node": n}, 0, T)
    for job in sim.jobs:
        sim.effect("rank0_logging_every_50_steps", {"level": "job", "job": job.name}, 0, T)
    sim.load()
    sim.thermal()
    sim.run_jobs()
    sim.collect(thermal_s=10.0, nic_s=10.0, ecc_s=30.0)
    return sim, faults, "faultline", FLEET_TOPOLOGY


def loop(seed: int, minutes: float) -> tuple[Sim, dict, str, str]:
    rng = np.random.default_rng([23, 2, seed])
    T = int(minutes * 60)
    f = T / 1080.0
    sim = Sim(rng, T0 + seed * 86_400 + 7_200, T)
    names = [f"gpu{i:02d}" for i in range(1, 17)]
    racks = [names[i:i + 4] for i in range(0, 16, 4)]
    supply = rng.uniform(29.0, 31.0, 4)
    warm = int(rng.integers(4))
    supply[warm] += 3.0
    for r, rack in enumerate(racks):
        for n in rack:
            sim.add_node(n, H100_LIQUID, [f"mlx5_{i}" for i in range(8)], 400.0, False,
                         float(supply[r] + rng.uniform(-0.3, 0.3)))
    for n in racks[warm]:
        sim.effect("warm_rack_supply_plus_3c", {"level": "node", "node": n}, 0, T)
    faults: dict[str, dict] = {}

    cdu = int(rng.integers(4))
    others = [r for r in range(4) if r != cdu]
    at, over = float(rng.uniform(0.22, 0.4)) * T, float(rng.uniform(300, 480)) * f
    rise, rmult = float(rng.uniform(24, 30)), 0.25
    for n in racks[cdu]:
        node = sim.nodes[n]
        node.fault = f"cdu-rack{cdu}-{n}"
        node.fault_inlet = _ramp(T, at, over, rise) * float(rng.uniform(0.95, 1.05))
        node.fault_rmult = 1 + np.repeat(_ramp(T, at, over, rmult)[:, None], 8, axis=1)
        faults[node.fault] = {"kind": "slow_node", "cause": "thermal",
                              "scope": {"level": "node", "node": n}, "attributable": True}
    # a pump switchover on another rack: a short bump, no throttle
    sw_rack = others[int(rng.integers(3))]
    sw_at = float(rng.uniform(0.1, 0.8)) * T
    sw_len, sw_up = float(rng.uniform(120, 180)) * f, float(rng.uniform(3, 5))
    bump = _ramp(T, sw_at, 30 * f, sw_up) - _ramp(T, sw_at + sw_len, 30 * f, sw_up)
    for n in racks[sw_rack]:
        sim.nodes[n].inlet = sim.nodes[n].inlet + bump
        sim.effect("cdu_pump_switchover", {"level": "node", "node": n}, sw_at,
                   min(sw_at + sw_len + 60 * f, T))
    # one node's coolant flow restricted, another's CPU throttling
    flow_n, cpu_n = rng.choice([n for r in others for n in racks[r]], 2, replace=False)
    node = sim.nodes[str(flow_n)]
    node.fault = f"flow-{flow_n}"
    at = float(rng.uniform(0.3, 0.6)) * T
    node.fault_rmult = 1 + np.repeat(_ramp(T, at, 120 * f, float(rng.uniform(1.1, 1.35)))[:, None],
                                     8, axis=1) * rng.uniform(0.9, 1.1, 8)[None, :]
    faults[node.fault] = {"kind": "slow_node", "cause": "thermal",
                          "scope": {"level": "node", "node": str(flow_n)}, "attributable": True}
    node = sim.nodes[str(cpu_n)]
    node.fault = f"cpu-{cpu_n}"
    at = float(rng.uniform(0.2, 0.55)) * T
    ramp = _ramp(T, at, 90 * f, 1.0)
    node.host_mult = 1 + np.repeat((ramp * float(rng.uniform(0.08, 0.14)))[:, None], 8, axis=1)
    node.fault_power = 1 - np.repeat((ramp * 0.04)[:, None], 8, axis=1)
    faults[node.fault] = {"kind": "slow_node", "cause": "unknown",
                          "scope": {"level": "node", "node": str(cpu_n)}, "attributable": False}

    lm = Job("lm-d", "core", 8, 96, 8, 2, 1800.0, 30.0, 320.0, 0.008,
             [Epoch(0.0, float(T), int(rng.integers(50_000, 90_000)), names[:12], cold=False,
                    init_s=0.0)], stage_mult=(1.0, 1.04), ckpt_every=150, ckpt_s=(8.0, 12.0),
             checksum=True)
    mm = Job("mm-e", "vision", 8, 32, None, None, 760.0, 35.0, 120.0, 0.010,
             [Epoch(0.0, float(T), int(rng.integers(5_000, 20_000)), names[12:], cold=False,
                    init_s=0.0)], ckpt_every=250, ckpt_s=(1.5, 3.0))
    sim.jobs = [lm, mm]
    sim.effect("pipeline_stage_imbalance", {"level": "job", "job": "lm-d"}, 0, T)
    for job in sim.jobs:
        sim.effect("rank0_logging_every_50_steps", {"level": "job", "job": job.name}, 0, T)
    sim.load()
    sim.thermal()
    sim.run_jobs()
    sim.collect(thermal_s=30.0, nic_s=30.0, ecc_s=30.0)
    return sim, faults, "slurm", LOOP_TOPOLOGY


STORIES = {"fleet": fleet, "loop": loop}
