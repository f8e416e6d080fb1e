"""blind17's two stories; every choice comes from the seed.

``clocks``: a host whose clock runs 12-25 s ahead until chrony steps it back, a host 6-9 s
behind all log, and faults on both. ``names``: telemetry that names one host two ways (short
from the job, FQDN from dcgm-exporter), and an elastic restart after a GPU falls off the bus
(torchrun re-forms the job on a spare H200 node, ranks renumbered, the same job id, steps
resumed from the last save).
"""

from __future__ import annotations

from bench.blind17.jobs import Attempt, Job, run
from bench.blind17.world import HW_THERMAL, SW_POWER_CAP, SW_THERMAL, T0, GpuFault, World

CLOCKS_TOPO = """Topology=blind17-clocks Version=1
NodeSet=ck[01-10] Gpus=8 Nics=mlx5_[0-7]
Rack=rack-[1-2] Nodes=ck[01-10]
SwitchName=leaf-[1-2] Nodes=ck[01-10]
SwitchName=spine-1 Switches=leaf-[1-2]
"""

NAMES_TOPO = """Topology=blind17-names Version=1
NodeSet=gn[01-09] Gpus=8 Nics=mlx5_[0-7]
Rack=rack-1 Nodes=gn[01-05]
Rack=rack-2 Nodes=gn[06-09]
SwitchName=leaf-1 Nodes=gn[01-05]
SwitchName=leaf-2 Nodes=gn[06-09]
SwitchName=spine-1 Switches=leaf-[1-2]
"""
FQDN = ".pod2.corp.example"


def _thermal_fault(world: World, lab, t0: float, strong: bool) -> GpuFault:
    rng = world.rng
    return GpuFault(lab, t0, clock_x=rng.uniform(0.82, 0.86) if strong else rng.uniform(0.84, 0.88),
                    bits=SW_THERMAL | HW_THERMAL if strong else SW_THERMAL,
                    lag_s=rng.uniform(45, 90), temp_c=rng.uniform(87.0, 90.0))


def clocks(seed: int, minutes: float = 15.0) -> tuple[World, str]:
    w = World(seed, minutes, "clocks")
    rng, span = w.rng, 60.0 * minutes
    nodes = [f"ck{i:02d}" for i in range(1, 11)]
    for n in nodes:
        w.add_node(n)
    ahead, behind = rng.sample(nodes[1:7], 2)
    lead_s = rng.uniform(12.0, 25.0)
    t_step = T0 + span * rng.uniform(0.32, 0.45)
    w.set_clock(ahead, T0 - 3600.0, lead_s)
    w.set_clock(ahead, t_step, 0.0)
    lag_s = rng.uniform(6.0, 9.0)
    w.set_clock(behind, T0 - 3600.0, -lag_s)
    w.effect(f"clock-ahead-{lead_s:.1f}s", {"node": ahead}, T0 + lead_s, t_step + lead_s)
    w.effect("chrony-makestep-back", {"node": ahead}, t_step, t_step + lead_s)
    w.effect(f"clock-behind-{lag_s:.1f}s", {"node": behind}, T0 - lag_s, w.t_end - lag_s)

    # the ahead host: a GPU warms and throttles while its rows run ahead ...
    g_hot, g_xid = rng.sample(range(8), 2)
    hot = w.label("skewed-hot-gpu", "slow_node", "thermal", {"level": "gpu", "node": ahead,
                                                              "gpu": g_hot})
    w.gpus[(ahead, g_hot)].faults.append(
        _thermal_fault(w, hot, T0 + span * rng.uniform(0.12, 0.22), seed % 2 == 1))
    # ... and another GPU's XID 92 comes 1.5-5 s after the clock stepped back
    xid = w.label("late-xid92", "hardware", "gpu_memory", {"level": "gpu", "node": ahead,
                                                            "gpu": g_xid})
    t_x = t_step + rng.uniform(1.5, 5.0)
    gpu = w.gpus[(ahead, g_xid)]
    gpu.changes += [(t_x, "sbe_volatile", rng.randrange(200, 600), xid),
                    (t_x, "retired_pages_sbe", rng.randrange(1, 3), xid)]
    k = 1
    while t_x + 30 * k < w.t_end:
        gpu.changes.append((t_x + 30 * k, "sbe_volatile", rng.randrange(3, 13), xid))
        k += 1
    w.xid(ahead, g_xid, t_x, 92, xid)

    # the behind host: a port starts erring; pt-k's reduce slows
    nic = f"mlx5_{rng.randrange(8)}"
    port = w.label("behind-port", "network", "nic", {"level": "nic", "node": behind, "nic": nic,
                                                      "port": 1})
    t_p = T0 + span * rng.uniform(0.5, 0.65)
    w.ports[(behind, nic)].errors.append((t_p, rng.uniform(60, 200), rng.uniform(3, 12),
                                          rng.uniform(2, 6), port))

    pt = Job("pt-k", "research", tp=8, work_s=rng.uniform(1.35, 1.5),
             reduce_s=rng.uniform(0.12, 0.18), save_every=rng.randrange(150, 250),
             reduce_x=((t_p, rng.uniform(1.2, 1.4)),))
    run(w, pt, [Attempt(nodes[:8], T0, w.t_end, rng.randrange(40000, 90000))])
    ft = Job("ft-k", "product", tp=1, work_s=rng.uniform(0.75, 0.9),
             reduce_s=rng.uniform(0.06, 0.09), rank_fields=False, save_every=400)
    run(w, ft, [Attempt(nodes[8:], T0, w.t_end, rng.randrange(1000, 5000))])
    w.sample_gpus()
    w.sample_ports()
    return w, CLOCKS_TOPO


def names(seed: int, minutes: float = 15.0) -> tuple[World, str]:
    w = World(seed, minutes, "names")
    rng, span = w.rng, 60.0 * minutes
    nodes = [f"gn{i:02d}" for i in range(1, 10)]
    for n in nodes:
        w.add_node(n, sku="H200" if n == "gn09" else "H100")
    for n in nodes[4:]:
        for topic in ("telemetry.thermal", "telemetry.ecc"):
            w.rename(n, topic, n + FQDN)
        w.effect("dcgm-exporter-names-the-fqdn", {"node": n}, T0, w.t_end)

    # el-n: a power limit left low on one GPU, then a GPU off the bus and an elastic restart
    capped_node, g_cap = rng.choice(["gn01", "gn03", "gn04"]), rng.randrange(8)
    cap = w.label("capped-gpu", "slow_node", "power", {"level": "gpu", "node": capped_node,
                                                        "gpu": g_cap})
    w.gpus[(capped_node, g_cap)].faults.append(
        GpuFault(cap, T0 + span * rng.uniform(0.12, 0.25), clock_x=rng.uniform(0.84, 0.88),
                 bits=SW_POWER_CAP, power_w=rng.uniform(470.0, 520.0)))
    g_off = rng.randrange(8)
    off = w.label("xid79-off-bus", "hardware", "gpu_hardware", {"level": "gpu", "node": "gn02",
                                                                 "gpu": g_off})
    t_fail = T0 + span * rng.uniform(0.35, 0.45)
    w.xid("gn02", g_off, t_fail, 79, off)
    w.gpus[("gn02", g_off)].gone_at = t_fail
    hang = rng.uniform(60.0, 120.0)
    t_again = t_fail + hang + rng.uniform(60.0, 100.0)
    el = Job("el-n", "research", tp=8, work_s=rng.uniform(1.6, 1.8),
             reduce_s=rng.uniform(0.15, 0.2), save_every=rng.randrange(100, 160))
    order = ["gn01", "gn03", "gn04", "gn09"]
    rng.shuffle(order)
    first = rng.randrange(20000, 30000)
    saved = run(w, el, [Attempt(nodes[:4], T0, t_fail, first, hang)])
    run(w, el, [Attempt(order, t_again, w.t_end, saved[0] + 1, launch=1)])
    w.effect("nccl-hang-then-watchdog", {"job": "el-n"}, t_fail, t_fail + hang)
    w.effect(f"elastic-restart-from-step-{saved[0] + 1}-on-{','.join(order)}", {"job": "el-n"},
             t_again, t_again + 120.0)
    w.effect("h200-spare-computes-faster", {"node": "gn09"}, t_again, w.t_end)

    # ft-n on the FQDN-named hosts: a hot GPU, an NVLink XID
    g_hot = rng.randrange(8)
    hot = w.label("fqdn-hot-gpu", "slow_node", "thermal", {"level": "gpu", "node": "gn06",
                                                            "gpu": g_hot})
    w.gpus[("gn06", g_hot)].faults.append(
        _thermal_fault(w, hot, T0 + span * rng.uniform(0.45, 0.6), True))
    g_nv = rng.randrange(8)
    nv = w.label("fqdn-nvlink", "hardware", "nvlink", {"level": "gpu", "node": "gn07",
                                                       "gpu": g_nv})
    t_nv = T0 + span * rng.uniform(0.68, 0.8)
    w.xid("gn07", g_nv, t_nv, 74, nv)
    gpu, k = w.gpus[("gn07", g_nv)], 0
    while t_nv + 30 * k < w.t_end:
        crc = rng.randrange(150, 900)
        gpu.changes += [(t_nv + 30 * k, "nvlink_crc_errors", crc, nv),
                        (t_nv + 30 * k, "nvlink_replay_errors", crc // 10, nv)]
        k += 1
    ft = Job("ft-n", "product", tp=8, work_s=rng.uniform(1.2, 1.35),
             reduce_s=rng.uniform(0.1, 0.14), save_every=rng.randrange(150, 250))
    run(w, ft, [Attempt(nodes[4:8], T0, w.t_end, rng.randrange(5000, 9000))])
    w.sample_gpus()
    w.sample_ports()
    return w, NAMES_TOPO


STORIES = {"clocks": clocks, "names": names}
