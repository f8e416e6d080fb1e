"""blind16's two stories; every choice is drawn from the seed.

``overlap``: two jobs whose communication overlaps compute, so a straggler makes every rank's
``compute_ms`` longer alike; ``fleet``: causes that are nobody's GPU (a row's CDU losing capacity,
an InfiniBand subnet manager re-sweep, a rolling driver update) with a real fault inside each.
"""

from __future__ import annotations

import random

from bench.blind16.jobs import Job, run
from bench.blind16.world import IDLE_W, T0, TDP_W, World

NICS = [f"mlx5_{k}" for k in range(8)]


def _ramp(t: float, t0: float, rise_s: float, t1: float, fall_s: float) -> float:
    """0 before t0, rising to 1 over rise_s, 1 until t1, falling to 0 over fall_s."""
    if t < t0 or t >= t1 + fall_s:
        return 0.0
    if t < t0 + rise_s:
        return (t - t0) / rise_s
    return 1.0 if t < t1 else 1.0 - (t - t1) / fall_s


def _checkpoints(every_s: float, t_first: float, save_s: tuple[float, float], rng,
                 slower=lambda t: 1.0):
    """A loader-time function: 20-40 ms, and a synchronous save on the first step past each
    ``every_s`` (slower while storage is slow)."""
    due = [t_first]

    def loader_ms(t: float) -> float:
        if t >= due[0]:
            due[0] += every_s
            return 1000.0 * rng.uniform(*save_s) * min(3.0, slower(t))
        return rng.uniform(20.0, 40.0) * slower(t)
    return loader_ms


def _traffic(world: World, node: str, paused: bool, stop: float, restart: float):
    """A port's Gb/s: the job's traffic, a trickle while the node is dark or its job stopped."""
    def gbps(t: float) -> float:
        return 0.5 if world.is_dark(node, t) or (paused and stop <= t < restart) else 55.0
    return gbps


def overlap(seed: int, minutes: float = 15.0) -> tuple[World, str]:
    rng = random.Random(f"blind16/overlap/{seed}")
    nodes = [f"ov{i:02d}" for i in range(1, 13)]
    base_inlet = {n: rng.uniform(23.0, 27.0) for n in nodes}
    world = World(rng, nodes, NICS, lambda n, t: base_inlet[n])
    t_start, t_end = T0 + 3600.0 * seed, T0 + 3600.0 * seed + 60.0 * minutes
    span = t_end - t_start

    # storage slowdown (routine): every loader and save of both jobs, 80-150 s
    s0 = t_start + span * rng.uniform(0.38, 0.48)
    s1 = s0 + rng.uniform(80.0, 150.0)
    storage_x = rng.uniform(8.0, 25.0)

    def storage(t: float) -> float:
        return storage_x if s0 <= t < s1 else 1.0

    fsdp = Job("fsdp-a", "research", nodes[:8], tp=1, dp=64,
               compute_ms=rng.uniform(1550.0, 1750.0), exposed_ms=rng.uniform(35.0, 60.0),
               hidden=rng.uniform(0.93, 0.97), rank_fields=False, checksum_every=0,
               loader_ms=_checkpoints(rng.uniform(200.0, 280.0), t_start + rng.uniform(60, 150),
                                      (6.0, 9.0), rng, storage))
    tpov = Job("tp-ov", "product", nodes[8:], tp=8, dp=4,
               compute_ms=rng.uniform(1100.0, 1250.0), exposed_ms=rng.uniform(45.0, 70.0),
               hidden=rng.uniform(0.90, 0.95), noise=0.003,
               loader_ms=lambda t: rng.uniform(15.0, 30.0) * storage(t))
    for job in (fsdp, tpov):
        world.effect("storage-slow", {"level": "job", "job": job.name}, s0, s1,
                     f"shared filesystem {storage_x:.0f}x slower: every loader and save")
        world.effect("comm-overlap", {"level": "job", "job": job.name}, t_start, t_end,
                     f"{job.hidden:.2f} of any wait timed inside compute_ms")

    # fault 1: one FSDP GPU slow; every rank of the job computes longer alike
    node, idx = rng.choice(nodes[:8]), rng.randrange(8)
    gpu = world.gpus[(node, idx)]
    on = t_start + span * rng.uniform(0.20, 0.35)
    scope = {"level": "gpu", "node": node, "gpu": idx}
    if seed % 2 == 0:     # a power limit left at 430-470 W by a test script
        limit = rng.uniform(430.0, 470.0)
        f = ((limit - IDLE_W) / (TDP_W - IDLE_W)) ** (1 / 2.2)
        gpu.power_limit = lambda t: limit if t >= on else TDP_W
        gpu.speed = lambda t: f if t >= on else 1.0
        lab = world.label("fsdp-straggler", "slow_node", "power", scope, True)
    else:                 # the clock x0.74-0.80, no reason bit (a stuck P-state)
        f = rng.uniform(0.74, 0.80)
        gpu.clock = gpu.speed = lambda t: f if t >= on else 1.0
        lab = world.label("fsdp-straggler", "slow_node", "unknown", scope, False)
    gpu.labels.append((lab, on, t_end))
    fsdp.labels.append((lab, on, t_end))

    # fault 2: one tp-ov GPU's cold plate fails: +18-24 C over 60-90 s, then thermal slowdown
    node2, idx2 = rng.choice(nodes[8:]), rng.randrange(8)
    hot = world.gpus[(node2, idx2)]
    h0 = t_start + span * rng.uniform(0.55, 0.70)
    rise = rng.uniform(60.0, 90.0)
    heat = rng.uniform(18.0, 24.0)
    thr = h0 + rise
    s = rng.uniform(0.82, 0.86)
    hot.heat_c = lambda t: heat * min(1.0, max(0.0, (t - h0) / rise))
    hot.throttle = lambda t: 0x60 if t >= thr else 0
    hot.clock = hot.speed = lambda t: s if t >= thr else 1.0
    hot.hold_c = rng.choice([87.0, 88.0])
    lab2 = world.label("tp-hot-gpu", "slow_node", "thermal",
                       {"level": "gpu", "node": node2, "gpu": idx2}, True)
    hot.labels.append((lab2, h0, t_end))
    tpov.labels.append((lab2, thr, t_end))

    run(world, fsdp, t_start + rng.uniform(0.5, 3.0), t_end)
    run(world, tpov, t_start + rng.uniform(0.5, 3.0), t_end)
    world.thermal_rows(t_start, t_end, 10.0)
    world.ecc_rows(t_start, t_end, 30.0)
    for n in nodes:
        for nic in NICS:
            world.ports[(n, nic)].busy_gbps = lambda t: 60.0
    world.nic_rows(t_start, t_end, 10.0)
    topo = ("Topology=blind16-overlap Version=1\n"
            "NodeSet=ov[01-12] Gpus=8 Nics=mlx5_[0-7]\n"
            "Rack=rack-[1-3] Nodes=ov[01-12]\n"
            "SwitchName=leaf-[1-2] Nodes=ov[01-12]\n"
            "SwitchName=spine-1 Switches=leaf-[1-2]\n")
    return world, topo


def fleet(seed: int, minutes: float = 15.0) -> tuple[World, str]:
    rng = random.Random(f"blind16/fleet/{seed}")
    nodes = [f"fl{i:02d}" for i in range(1, 17)]
    t_start, t_end = T0 + 3600.0 * seed + 1800.0, T0 + 3600.0 * seed + 1800.0 + 60.0 * minutes
    span = t_end - t_start
    base_inlet = {n: rng.uniform(23.0, 27.0) for n in nodes}
    # a row's CDU loses capacity: racks 3-4 (fl09-16) warm by 9-13 C over 3-5 min, then recover
    c0 = t_start + span * rng.uniform(0.25, 0.35)
    c_rise = rng.uniform(180.0, 300.0)
    c1 = c0 + c_rise + rng.uniform(150.0, 240.0)
    c_amount = rng.uniform(9.0, 13.0)
    row = set(nodes[8:])

    def inlet(n: str, t: float) -> float:
        return base_inlet[n] + (c_amount * _ramp(t, c0, c_rise, c1, 150.0) if n in row else 0.0)
    world = World(rng, nodes, NICS, inlet)
    for n in sorted(row):
        world.effect("cdu-derate", {"level": "node", "node": n}, c0, c1 + 150.0,
                     f"row CDU capacity loss: inlet +{c_amount:.1f} C, every GPU warmer")

    pta = Job("pt-a", "research", nodes[:8], tp=8, dp=8, compute_ms=rng.uniform(1800.0, 2000.0),
              exposed_ms=rng.uniform(40.0, 70.0), hidden=rng.uniform(0.88, 0.94))
    ftb = Job("ft-b", "product", nodes[8:12], tp=8, dp=4, compute_ms=rng.uniform(900.0, 1000.0),
              exposed_ms=rng.uniform(150.0, 200.0), hidden=0.0)
    ptc = Job("pt-c", "research", nodes[12:], tp=8, dp=4, compute_ms=rng.uniform(1300.0, 1400.0),
              exposed_ms=rng.uniform(40.0, 60.0), hidden=rng.uniform(0.9, 0.95))

    # subnet manager re-sweep (routine): every port drops a few packets and waits for 4-8 s;
    # every job's collective in flight is held that long
    w0 = t_start + span * rng.uniform(0.55, 0.65)
    w1 = w0 + rng.uniform(4.0, 8.0)
    for port in world.ports.values():
        port.errors.append((w0, w1, {"xmit_discards": rng.uniform(0.5, 4.0),
                                     "xmit_wait": rng.uniform(1e6, 3e6)}, None))
    for job in (pta, ftb, ptc):
        job.stall_ms = (lambda j: lambda t: (w1 - max(t, w0)) * 1000.0 * j
                        if w0 - 2.0 <= t < w1 else 0.0)(rng.uniform(0.6, 1.0))
        world.effect("sm-resweep", {"level": "job", "job": job.name}, w0, w1 + 10.0,
                     "InfiniBand subnet manager heavy sweep: every port, every job held")

    # fault 1: one pt-a port comes back from the sweep erring; pt-a's reduce longer
    bad_node, bad_nic = rng.choice(nodes[:8]), rng.choice(NICS)
    b0 = w1 + rng.uniform(3.0, 8.0)
    lab1 = world.label("port-after-resweep", "network", "nic",
                       {"level": "nic", "node": bad_node, "nic": bad_nic, "port": 1}, True)
    world.ports[(bad_node, bad_nic)].errors.append(
        (b0, t_end, {"symbol_errors": rng.uniform(80.0, 250.0), "rcv_errors": rng.uniform(4, 20),
                     "packet_seq_err": rng.uniform(2.0, 8.0)}, lab1))
    reduce_ms, m = rng.uniform(280.0, 340.0), rng.uniform(1.3, 1.6)
    pta.comm_extra_ms = lambda t: reduce_ms * (m - 1.0) if t >= b0 else 0.0
    pta.labels.append((lab1, b0, t_end))

    # fault 2: a ft-b GPU with a tired cold plate crosses the slowdown point in the warm row
    hn, hi = rng.choice(nodes[8:12]), rng.randrange(8)
    hot = world.gpus[(hn, hi)]
    excess = rng.uniform(0.5, 0.8)
    hot.heat_c = lambda t: 3.0 + excess * c_amount * _ramp(t, c0, c_rise, c1, 150.0)
    thr0 = c0 + c_rise * rng.uniform(0.7, 0.9)
    thr1 = c1 + rng.uniform(30.0, 80.0)
    s = rng.uniform(0.85, 0.90)
    hot.throttle = lambda t: 0x20 if thr0 <= t < thr1 else 0
    hot.clock = hot.speed = lambda t: s if thr0 <= t < thr1 else 1.0
    hot.hold_c = 87.0
    lab2 = world.label("cdu-hot-gpu", "slow_node", "thermal",
                       {"level": "gpu", "node": hn, "gpu": hi}, True)
    hot.labels.append((lab2, thr0, thr1))
    ftb.labels.append((lab2, thr0, thr1))

    # rolling driver update (routine): pt-c stops, fl13 and fl14 are rebooted onto the new
    # driver one after the other (the maintenance window closes before fl15-16), pt-c restarts
    # cold on all four: the new driver's busy clock is 1890 MHz, so the two updated nodes'
    # replicas work 3.5-5 % slower -- with overlap their peers wait inside compute
    stop = t_start + span * rng.uniform(0.12, 0.18)
    t = stop + rng.uniform(20.0, 40.0)
    updated = nodes[12:14]
    for n in updated:
        dark = rng.uniform(45.0, 75.0)
        world.dark[n] = [(t, t + dark)]
        world.reset_at[n] = [t + dark]
        world.effect("driver-update", {"level": "node", "node": n}, t, t_end,
                     "rolling driver update: rebooted, counters at 0, busy clock 1890 MHz")
        t += dark + rng.uniform(10.0, 20.0)
    restart = t + rng.uniform(40.0, 80.0)
    new_clock = 1890.0 / 1980.0
    speed = 1.0 / rng.uniform(1.035, 1.05)
    for n in updated:
        for g in range(8):
            gpu = world.gpus[(n, g)]
            gpu.clock = lambda t: new_clock if t >= restart else 1.0
            gpu.speed = lambda t: speed if t >= restart else 1.0
    world.effect("driver-update", {"level": "job", "job": "pt-c"}, stop, t_end,
                 f"planned stop, cold restart on mixed drivers: fl13-14 {1 / speed:.3f}x")

    run(world, pta, t_start + rng.uniform(0.5, 3.0), t_end)
    run(world, ftb, t_start + rng.uniform(0.5, 3.0), t_end)
    nxt = run(world, ptc, t_start + rng.uniform(0.5, 3.0), stop)
    run(world, ptc, restart, t_end, first_step=nxt, cold=True)

    world.thermal_rows(t_start, t_end, 10.0)
    world.ecc_rows(t_start, t_end, 30.0)
    for (n, _nic), port in world.ports.items():
        port.busy_gbps = _traffic(world, n, n in nodes[12:], stop, restart)
    world.nic_rows(t_start, t_end, 10.0)
    topo = ("Topology=blind16-fleet Version=1\n"
            "NodeSet=fl[01-16] Gpus=8 Nics=mlx5_[0-7]\n"
            "Rack=rack-[1-4] Nodes=fl[01-16]\n"
            "SwitchName=leaf-[1-2] Nodes=fl[01-16]\n"
            "SwitchName=spine-1 Switches=leaf-[1-2]\n")
    return world, topo


STORIES = {"overlap": overlap, "fleet": fleet}
