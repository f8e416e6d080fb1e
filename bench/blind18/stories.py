"""blind18's two stories, every choice from the seed.

``delivery``: at-least-once Kafka delivery -- a node partition with no leader for 100-200 s
while a DBE happens on a node in it, a job's step partition stalled 130-210 s while one of its
GPUs overheats, a producer that re-sends 20-40 s of a partition's rows 30 s late while a port
errs.  ``clusters``: two clusters' telemetry in one stream (every record carries ``cluster``),
built from the same host-name template (`gpu-001..008` in both), on odd seeds with one job
name in both.
"""

from __future__ import annotations

import random
from types import SimpleNamespace

from bench.blind18.jobs import Attempt, occupy, run
from bench.blind18.world import Heat, World, ecc_counters

T0 = 1_796_000_000.0   # 2026-11-30 UTC, a round start for the logs


def _gbps(world: World):
    def busy(node: str, t: float) -> float:
        return 30.0 if any(world.gpus[(node, g)].load(t) > 0 for g in range(8)) else 0.3
    return busy


def _ecc(world: World, rng: random.Random, events: list):
    """ECC rows: each GPU's small trickle counters; ``events`` are (node, gpu, t, fields,
    label): from ``t`` the row carries ``fields`` and touches ``label``."""
    base = {key: ecc_counters(rng) for key in world.gpus}

    def state(node: str, g: int, t: float):
        st, lab = dict(base[(node, g)]), None
        for n, gg, te, fields, elab in events:
            if (n, gg) == (node, g) and t >= te:
                st.update(fields)
                lab = elab
        return st, lab
    return state


def delivery(seed: int, minutes: float = 15.0):
    rng = random.Random(f"blind18-delivery-{seed}")
    L = minutes * 60.0
    t0 = T0 + seed * 86_400.0
    w = World(rng, t0, minutes)
    nodes = [f"dl{i:02d}" for i in range(1, 11)]
    for n in nodes:
        w.add_node(n, old_errors=0.1)
    npart = {n: (i % 4) for i, n in enumerate(nodes)}          # dl01 -> 0, dl02 -> 1, ...
    spart = {"pt-d": 2, "ft-d": 3}
    w.partition_of = lambda group, key: npart.get(key, 0) if group == "node" else spart.get(key, 0)

    # -- pt-d on dl01-04: a DBE while its node's partition has no leader ----------------------
    pt = nodes[:4]
    n_dbe, g_dbe = rng.choice(pt), rng.randrange(8)
    t_dbe = t0 + L * rng.uniform(0.25, 0.38)
    h0 = t_dbe - rng.uniform(20.0, 60.0)
    h1 = h0 + rng.uniform(100.0, 200.0)
    w.holds.append(("node", npart[n_dbe], h0, h1))
    for n in nodes:
        if npart[n] == npart[n_dbe]:
            w.effect("partition-leaderless", {"node": n}, h0, h1,
                     f"node partition {npart[n_dbe]} without a leader {h1 - h0:.0f} s: this "
                     "node's thermal / ECC / port rows land late, in order, at once")
    dbe = w.label("dbe-in-stalled-partition", "hardware", "gpu_memory",
                  {"level": "gpu", "node": n_dbe, "gpu": g_dbe}, True)
    a0 = Attempt("pt-d", "research", pt, t0, t0 + L, rng.randrange(20_000, 40_000),
                 rng.uniform(1900.0, 2100.0), rng.uniform(300.0, 360.0), ckpt_every=60,
                 ckpt_s=rng.uniform(6.0, 9.0), dies_at=t_dbe + 0.4, cold=False)
    relaunch = t_dbe + rng.uniform(100.0, 160.0)
    spare = sorted([n for n in pt if n != n_dbe] + ["dl09"])

    # -- ft-d on dl05-08: its step partition stalls while a GPU overheats ------------------------
    ft = nodes[4:8]
    n_hot, g_hot = rng.choice(ft), rng.randrange(8)
    s0 = t0 + L * rng.uniform(0.50, 0.60)
    s1 = s0 + rng.uniform(130.0, 210.0)
    w.holds.append(("step", spart["ft-d"], s0, s1))
    w.effect("step-partition-stalled", {"job": "ft-d"}, s0, s1,
             f"ft-d's step partition without a leader {s1 - s0:.0f} s: its step rows land late "
             "at once; the job never stopped")
    hot = w.label("hot-gpu-in-stalled-steps", "slow_node", "thermal",
                  {"level": "gpu", "node": n_hot, "gpu": g_hot}, True)
    gpu = w.gpus[(n_hot, g_hot)]
    gpu.heat = Heat(s0 + rng.uniform(0.0, 20.0), rng.uniform(22.0, 27.0),
                    rng.uniform(45.0, 70.0), rng.uniform(87.0, 89.0),
                    0x20 if seed % 2 == 0 else 0x60, rng.uniform(0.84, 0.88), hot)

    # -- a port errs on an ft-d node; its partition's producer re-sends 20-40 s -----------------
    n_nic = rng.choice([n for n in ft if npart[n] != npart[n_dbe]])
    nic = f"mlx5_{rng.randrange(8)}"
    t_nic = t0 + L * rng.uniform(0.70, 0.78)
    nic_lab = w.label("port-errors-resent", "network", "nic",
                      {"level": "nic", "node": n_nic, "nic": nic, "port": 1}, True)
    w.ports[(n_nic, nic)].errs.append((t_nic, t0 + L + 60.0, rng.uniform(40.0, 200.0),
                                       rng.uniform(2.0, 8.0), nic_lab))
    r0 = t_nic + rng.uniform(20.0, 60.0)
    r1 = r0 + rng.uniform(20.0, 40.0)
    w.resends.append(("node", npart[n_nic], r0, r1, 30.0))
    for n in nodes:
        if npart[n] == npart[n_nic]:
            w.effect("producer-resend", {"node": n}, r0, r1 + 32.0,
                     f"this node's rows of {r1 - r0:.0f} s land late, then again 30 s later "
                     "(a lost acknowledgement, request.timeout.ms 30000, no idempotence)")
    # healthy ports of the re-sending partition: old symbol errors since boot, a slow trickle
    for n in nodes:
        if npart[n] == npart[n_nic]:
            for k in rng.sample(range(8), 2):
                p = w.ports[(n, f"mlx5_{k}")]
                if (n, p.nic) != (n_nic, nic):
                    p.base["symbol_errors"] = rng.randrange(15_000, 45_000)
                    p.base["rcv_errors"] = p.base["symbol_errors"] // 50
                    p.trickle = rng.uniform(0.02, 0.05)
    ft_a = Attempt("ft-d", "product", ft, t0, t0 + L, rng.randrange(5_000, 9_000),
                   rng.uniform(1150.0, 1300.0), rng.uniform(160.0, 200.0), ckpt_every=150,
                   ckpt_s=rng.uniform(4.0, 6.0), slow_labels={(n_hot, g_hot): hot}, cold=False)
    slower = rng.uniform(1.2, 1.35)
    ft_a.comm = lambda t: (slower, nic_lab) if t >= t_nic else (1.0, None)

    occupy(w, a0)
    occupy(w, ft_a)
    a1 = Attempt("pt-d", "research", spare, relaunch, t0 + L, 0, a0.compute_ms, a0.reduce_ms,
                 ckpt_every=60, ckpt_s=a0.ckpt_s, attempt=1)
    occupy(w, a1)
    _, saved = run(w, a0, rng)
    a1.step0 = saved
    run(w, a1, rng)
    run(w, ft_a, rng)
    w.effect("relaunch", {"job": "pt-d"}, relaunch, relaunch + 120.0,
             f"pt-d relaunched on {','.join(spare)} from step {saved} (steps repeat, other "
             "checksums, a cold first step)")

    t_63 = t_dbe + rng.uniform(0.4, 1.5)
    w.xid(n_dbe, g_dbe, t_dbe, 48, dbe)
    w.xid(n_dbe, g_dbe, t_63, 63, dbe)
    state = _ecc(w, rng, [(n_dbe, g_dbe, t_dbe, {"dbe_volatile": 1, "retired_pages_dbe": 0,
                                                 "row_remap_pending": True,
                                                 "recovery_action": "gpu_reset"}, dbe)])
    w.collectors(nodes, t0, t0 + L, 10.0, 30.0, 10.0, _gbps(w), state)
    topo = "\n".join([
        "Topology=delivery Version=1",
        "NodeSet=dl[01-10] Gpus=8 Nics=mlx5_[0-7]",
        "Rack=rack-[1-2] Nodes=dl[01-10]",
        "SwitchName=leaf-[1-2] Nodes=dl[01-10]",
        "SwitchName=spine-1 Switches=leaf-[1-2]", ""])
    return w, topo


def clusters(seed: int, minutes: float = 15.0):
    rng = random.Random(f"blind18-clusters-{seed}")
    L = minutes * 60.0
    t0 = T0 + seed * 86_400.0 + 43_200.0
    east = World(random.Random(rng.random()), t0, minutes, cluster="east")
    west = World(random.Random(rng.random()), t0, minutes, cluster="west")
    west.extra_delay["west"] = (0.8, 2.5)       # MirrorMaker from west's own Kafka
    nodes = [f"gpu-{i:03d}" for i in range(1, 9)]
    for n in nodes:
        east.add_node(n, inlet_c=24.0, old_errors=0.15)
        west.add_node(n, inlet_c=27.0, old_errors=0.05)
    west_sft = "sft-7b" if seed % 2 else "sft-13b"
    for w in (east, west):
        w.effect("shared-host-names", {"cluster": w.cluster}, t0, t0 + L,
                 "both clusters name their hosts gpu-001..008; every record carries cluster")

    # -- east: llm-pt (gpu-001..004), sft-7b (gpu-005..008) -------------------------------------
    n_hot, g_hot = rng.choice(nodes[:4]), rng.randrange(8)
    hot = east.label("hot-gpu-east", "slow_node", "thermal",
                     {"level": "gpu", "node": n_hot, "gpu": g_hot}, True)
    east.gpus[(n_hot, g_hot)].heat = Heat(
        t0 + L * rng.uniform(0.15, 0.30), rng.uniform(22.0, 27.0), rng.uniform(60.0, 90.0),
        rng.uniform(87.0, 89.0), 0x20 if seed % 2 == 0 else 0x60, rng.uniform(0.84, 0.88), hot)
    llm = Attempt("llm-pt", "research", nodes[:4], t0, t0 + L, rng.randrange(40_000, 60_000),
                  rng.uniform(1800.0, 2000.0), rng.uniform(280.0, 330.0), ckpt_every=100,
                  ckpt_s=rng.uniform(7.0, 10.0), cluster="east",
                  slow_labels={(n_hot, g_hot): hot}, cold=False)
    n_79, g_79 = rng.choice(nodes[4:]), rng.randrange(8)
    t_79 = t0 + L * rng.uniform(0.55, 0.70)
    off = east.label("xid79-east", "hardware", "gpu_hardware",
                     {"level": "gpu", "node": n_79, "gpu": g_79}, True)
    east.gpus[(n_79, g_79)].gone_at = t_79 + 0.3
    sft_e = Attempt("sft-7b", "product", nodes[4:], t0, t0 + L,
                    rng.randrange(3_000, 6_000), rng.uniform(1100.0, 1250.0),
                    rng.uniform(160.0, 190.0), ckpt_every=200, ckpt_s=rng.uniform(4.0, 6.0),
                    cluster="east", dies_at=t_79 + 0.2, cold=False)
    east.effect("job-hangs", {"job": "sft-7b", "cluster": "east"}, t_79, t0 + L,
                "east's sft-7b hangs after the XID 79 (no step row again); nobody relaunches it")

    # -- west: its sft job (gpu-001..004), eval-w (gpu-005..006), diag on gpu-007 ---------------
    n_slow, g_slow = rng.choice(nodes[:4]), rng.randrange(8)
    slow = west.label("slow-gpu-west", "slow_node", "unknown",
                      {"level": "gpu", "node": n_slow, "gpu": g_slow}, False)
    west.gpus[(n_slow, g_slow)].slow.append((t0 + L * rng.uniform(0.20, 0.35),
                                             rng.uniform(1.15, 1.22)))
    n_nic = rng.choice([n for n in nodes[:4] if n != n_slow])
    nic = f"mlx5_{rng.randrange(8)}"
    t_nic = t0 + L * rng.uniform(0.35, 0.50)
    nic_lab = west.label("port-errors-west", "network", "nic",
                         {"level": "nic", "node": n_nic, "nic": nic, "port": 1}, True)
    pw = west.ports[(n_nic, nic)]
    pw.base.update(symbol_errors=0, rcv_errors=0, link_downed=0)
    pw.errs.append((t_nic, t0 + L + 60.0, rng.uniform(50.0, 250.0), rng.uniform(3.0, 10.0),
                    nic_lab))
    pe = east.ports[(n_nic, nic)]            # the east port of that name: old errors since boot
    pe.base["symbol_errors"] = rng.randrange(20_000, 40_000)
    pe.base["rcv_errors"] = pe.base["symbol_errors"] // 40
    pe.base["link_downed"] = 4
    sft_w = Attempt(west_sft, "product", nodes[:4], t0, t0 + L,
                    rng.randrange(1_000, 9_000), rng.uniform(1100.0, 1250.0)
                    if seed % 2 else rng.uniform(1500.0, 1650.0), rng.uniform(170.0, 210.0),
                    ckpt_every=200, ckpt_s=rng.uniform(4.0, 6.0), cluster="west",
                    slow_labels={(n_slow, g_slow): slow}, cold=False)
    slower = rng.uniform(1.2, 1.4)
    sft_w.comm = lambda t: (slower, nic_lab) if t >= t_nic else (1.0, None)
    t_eval = t0 + L * rng.uniform(0.40, 0.55)
    ev = Attempt("eval-w", "research", nodes[4:6], t0, t_eval, 0,
                 rng.uniform(600.0, 700.0), rng.uniform(60.0, 80.0), checksum_every=0,
                 cluster="west", cold=False)
    west.effect("job-ends", {"job": "eval-w", "cluster": "west"}, t_eval, t_eval + 30.0,
                "west's eval-w finishes; gpu-005/006 idle")
    d0 = t0 + L * rng.uniform(0.30, 0.45)
    d1 = d0 + rng.uniform(300.0, 480.0)
    for g in range(8):
        west.gpus[("gpu-007", g)].burn.append((d0, d1))
    west.effect("dcgmi-diag", {"node": "gpu-007", "cluster": "west"}, d0, d1,
                "dcgmi diag -r 3 on west's idle gpu-007: every GPU at its power limit (0x4), hot, "
                "no job (east's gpu-007 trains meanwhile)")

    for w, jobs in ((east, (llm, sft_e)), (west, (sft_w, ev))):
        for a in jobs:
            occupy(w, a)
        for a in jobs:
            run(w, a, w.rng)
    east.xid(n_79, g_79, t_79, 79, off)
    east.collectors(nodes, t0, t0 + L, 10.0, 30.0, 10.0, _gbps(east),
                    _ecc(east, east.rng, []))
    west.collectors(nodes, t0, t0 + L, 30.0, 30.0, 30.0, _gbps(west),
                    _ecc(west, west.rng, []))
    world = SimpleNamespace(records=east.records + west.records,
                            labels=east.labels + west.labels, effects=east.effects + west.effects)
    topo = "\n".join([
        "Topology=east Version=1",
        "NodeSet=gpu-[001-008] Gpus=8 Nics=mlx5_[0-7]",
        "Rack=rack-e[1-2] Nodes=gpu-[001-008]",
        "SwitchName=leaf-e[1-2] Nodes=gpu-[001-008]",
        "SwitchName=spine-e Switches=leaf-e[1-2]", ""])
    return world, topo


STORIES = {"delivery": delivery, "clusters": clusters}
