"""blind19's two stories, every choice from the seed.

`ops`: a maintenance day -- operators drain, upgrade, reset and diagnose nodes under a scheduler
that requeues jobs around them -- and three faults that happen during it.
`replicas`: data-parallel replicas that are not alike -- a slow node that is a third of its
job's peers, a replica's loss spikes that are SDC beside one-replica bad samples that are not,
a checksum disagreement between only two replicas.
"""

from __future__ import annotations

from bench.blind19.jobs import Attempt, busy_share, run
from bench.blind19.world import Span, World


def _topology(name: str, prefix: str, n: int) -> str:
    half = n // 2
    return (f"Topology=blind19-{name} Version=1\n"
            f"NodeSet={prefix}[01-{n:02d}] Gpus=8 Nics=mlx5_[0-7]\n"
            f"Rack=rack-[1-2] Nodes={prefix}[01-{n:02d}]\n"
            f"SwitchName=leaf-[1-2] Nodes={prefix}[01-{n:02d}]\n"
            f"SwitchName=spine-1 Switches=leaf-[1-2]\n"
            f"# leaf-1 {prefix}01-{half:02d}, leaf-2 {prefix}{half + 1:02d}-{n:02d}\n")


def _diag(world: World, node: str, t0: float, t1: float, level: int) -> None:
    """`dcgmi diag -r LEVEL` on an idle node: every GPU at the limit (targeted power)."""
    t1 = min(t1, world.duration - 5.0)
    if t1 <= t0:
        return
    for g in range(8):
        world.gpus[(node, g)].modes.append(Span(t0, t1, "diag"))
    world.effect(f"dcgmi-diag-r{level}", t0, t1, node=node)


def _fleet(story: str, seed: int, minutes: float, prefix: str, n: int):
    w = World(seed, story, minutes)
    nodes = [f"{prefix}{i:02d}" for i in range(1, n + 1)]
    for node in nodes:
        w.add_node(node)
    return w, w.rng, w.duration, nodes


def ops(seed: int, minutes: float = 15.0):
    w, r, D, nodes = _fleet("ops", seed, minutes, "op", 12)

    # op09, an idle spare, goes first in the rolling driver upgrade; it comes back with one
    # port trained at HDR (200 Gb/s): a cable / transceiver that the reboot renegotiated down
    up0 = D * r.uniform(0.01, 0.03)
    back9 = up0 + r.uniform(100.0, 150.0)
    w.reboot("op09", up0, back9)
    w.effect("rolling-driver-upgrade", up0, back9, node="op09")
    nic = f"mlx5_{r.randrange(8)}"
    port_lab = w.label("port-hdr-after-upgrade", "network", "nic",
                       {"level": "nic", "node": "op09", "nic": nic, "port": 1})
    w.ports[("op09", nic)].rate.append((back9, 200.0, port_lab))
    d9 = back9 + r.uniform(20.0, 40.0)
    _diag(w, "op09", d9, d9 + r.uniform(100.0, 130.0), 2)

    # pt-o: a DBE kills it; requeued on the survivors + op10 from its last save; the
    # operator resets the GPU (nvidia-smi -r) and runs dcgmi diag -r 2 on the node
    bad_node, bad_gpu = r.choice(nodes[:4]), r.randrange(8)
    t_dbe = D * r.uniform(0.15, 0.28)
    dbe = w.label("dbe-then-reset", "hardware", "gpu_memory",
                  {"level": "gpu", "node": bad_node, "gpu": bad_gpu})
    gpu = w.gpus[(bad_node, bad_gpu)]
    t63 = t_dbe + r.uniform(0.3, 1.5)
    w.xid(bad_node, bad_gpu, t_dbe, 48, dbe)
    w.xid(bad_node, bad_gpu, t63, 63, dbe)
    gpu.events += [(t_dbe, "dbe_volatile", 1, dbe), (t63, "retired_pages_dbe", 1, dbe)]
    gpu.states += [(t_dbe, "recovery_action", "gpu_reset", dbe),
                   (t63, "row_remap_pending", True, dbe)]
    pt1 = run(w, Attempt("pt-o", "research", nodes[:4], 8, 4, 0.0, r.randrange(4000, 9000),
                         r.uniform(1.6, 1.8), r.uniform(0.25, 0.32), 10, save_every=150,
                         cold=False, die_at=t_dbe), D)
    t_re = t_dbe + r.uniform(60.0, 100.0)
    survivors = sorted([n for n in nodes[:4] if n != bad_node] + ["op10"])
    pt2 = run(w, Attempt("pt-o", "research", survivors, 8, 4, t_re, pt1.last_save,
                         pt1.compute_s, pt1.reduce_s, 10, save_every=150, attempt=1), D)
    w.effect("job-death-requeue", t_dbe, t_re + 60.0, job="pt-o")
    t_reset = t_dbe + r.uniform(120.0, 200.0)
    t_reset_end = t_reset + r.uniform(10.0, 20.0)
    gpu.modes.append(Span(t_reset, t_reset_end, "dark"))
    gpu.resets.append(t_reset_end)
    gpu.states += [(t_reset_end, "row_remap_pending", False, None),
                   (t_reset_end, "recovery_action", "none", None)]
    w.effect("gpu-reset", t_reset, t_reset_end, node=bad_node, gpu=bad_gpu)
    dr = t_reset_end + r.uniform(20.0, 60.0)
    _diag(w, bad_node, dr, dr + r.uniform(100.0, 130.0), 2)

    # ft-o: the maintenance reservation reaches op08; SIGTERM, a save, exit; requeued on
    # op05-07 + op09 (whose port now runs at 200) from that save
    t_stop = D * r.uniform(0.35, 0.42)
    ft1 = run(w, Attempt("ft-o", "product", nodes[4:8], 8, 4, 0.0, r.randrange(2000, 6000),
                         r.uniform(1.15, 1.3), r.uniform(0.16, 0.2), 20, save_every=200,
                         save_s=(8.0, 12.0), cold=False, stop_at=t_stop), D)
    t_req = ft1.end_t + r.uniform(40.0, 70.0)
    slow_ring = r.uniform(1.3, 1.5)
    ft2 = run(w, Attempt("ft-o", "product", ["op05", "op06", "op07", "op09"], 8, 4, t_req,
                         ft1.last_step, ft1.compute_s, ft1.reduce_s, 20, save_every=200,
                         save_s=(8.0, 12.0), attempt=1,
                         reduce_x=lambda ns, t: slow_ring,
                         step_labels=lambda a, t0, t1: (port_lab,)), D)
    w.effect("drain-requeue", t_stop, t_req + 60.0, job="ft-o")

    # op08 drained: upgraded, then dcgmi diag -r 3, in which one GPU trips HW slowdown
    u8 = ft1.end_t + r.uniform(5.0, 15.0)
    back8 = u8 + r.uniform(100.0, 150.0)
    w.reboot("op08", u8, back8)
    w.effect("rolling-driver-upgrade", u8, back8, node="op08")
    d8 = back8 + r.uniform(20.0, 40.0)
    d8_end = min(d8 + r.uniform(240.0, 330.0), D - 5.0)
    _diag(w, "op08", d8, d8_end, 3)
    hw_gpu = r.randrange(8)
    hw = w.label("diag-hw-slowdown", "hardware", "power",
                 {"level": "gpu", "node": "op08", "gpu": hw_gpu})
    hw0 = d8 + r.uniform(20.0, 60.0)
    if hw0 < d8_end:
        w.gpus[("op08", hw_gpu)].mods.append(Span(hw0, d8_end, "hw", {
            "clock_x": r.uniform(0.55, 0.7), "power_x": r.uniform(0.6, 0.72)}, hw))

    for a in (pt2, ft2):
        w.effect("cold-start", a.t0, a.t0 + 40.0, job=a.job)
    _finish(w, [pt1, pt2, ft1, ft2])
    return w, _topology("ops", "op", 12)


def _step_at(a_step0: int, step_s: float, t: float) -> int:
    return a_step0 + int(t / step_s)


def replicas(seed: int, minutes: float = 15.0):
    w, r, D, nodes = _fleet("replicas", seed, minutes, "rp", 10)

    # dp-r: TP1 x DP24 on rp01-03, each replica one GPU; one node (a third of the peers) slows
    dp_nodes = nodes[:3]
    slow_node = r.choice(dp_nodes)
    t_slow = D * r.uniform(0.2, 0.35)
    capped = seed % 2 == 0
    if capped:   # a PSU lost: the BMC lowers every GPU's power limit (SW power cap 0x4)
        slow = w.label("third-node-slow", "slow_node", "power",
                       {"level": "node", "node": slow_node})
        limit = r.uniform(480.0, 540.0)
        for g in range(8):
            gp = w.gpus[(slow_node, g)]
            gp.mods.append(Span(t_slow, D + 1, "cap", {
                "limit_w": limit, "compute_x": max(1.0, gp.demand_w / limit) ** 0.4}, slow))
        extra = 0.0
    else:        # a failed fan module: the host CPUs hit PROCHOT; no GPU field names it
        slow = w.label("third-node-slow", "slow_node", "unknown",
                       {"level": "node", "node": slow_node}, attributable=False)
        cx, extra = r.uniform(1.06, 1.09), r.uniform(0.10, 0.20)
        for g in range(8):
            w.gpus[(slow_node, g)].mods.append(Span(t_slow, D + 1, "host", {"compute_x": cx}))

    comp = r.uniform(0.55, 0.65)
    red = r.uniform(0.08, 0.12)
    step0 = r.randrange(10_000, 30_000)
    est = comp + red + 0.035
    sdc_node = r.choice([n for n in dp_nodes if n != slow_node])
    sdc_gpu = r.randrange(8)
    sdc_dp = dp_nodes.index(sdc_node) * 8 + sdc_gpu
    sdc = w.label("replica-sdc", "sdc", "unknown",
                  {"level": "gpu", "node": sdc_node, "gpu": sdc_gpu}, attributable=False)
    spikes: dict = {}
    s = _step_at(step0, est, D * r.uniform(0.3, 0.5))
    last = _step_at(step0, est, D)
    while s < last:
        spikes[(sdc_dp, s)] = (r.uniform(2.5, 8.0), r.uniform(4.0, 20.0), sdc)
        s += r.randrange(15, 41)
    hit: set = set()
    for _ in range(r.randrange(6, 13)):   # bad samples: one step each, each on its own replica
        d, s = r.choice([k for k in range(24) if k != sdc_dp]), r.randrange(step0 + 30, last)
        while d in hit or d == sdc_dp:    # (the same draws as the freeze: only a repeat moves)
            d = (d + 1) % 24
        hit.add(d)
        if (d, s) not in spikes:
            spikes[(d, s)] = (r.uniform(1.8, 4.0), r.uniform(2.5, 8.0), None)
            t = (s - step0) * est
            w.effect("bad-sample", t - 2.0, t + 2.0, job="dp-r", dp_rank=d)
    dp = run(w, Attempt("dp-r", "product", dp_nodes, 1, 24, 0.0, step0, comp, red, 5,
                        cold=False, loss0=2.05, spikes=spikes,
                        neither_extra=lambda n, t: extra if (n == slow_node and t >= t_slow)
                        else 0.0,
                        step_labels=lambda a, t0, t1: (slow,) if t0 >= t_slow else ()), D)

    # tp-r: TP4 x DP2 on rp04 (both replicas on one node): one GPU's copy of the weights is
    # corrupted; its checksum differs from its one peer's, its local grad norm rises
    tcomp = r.uniform(1.1, 1.2)
    tred = r.uniform(0.05, 0.08)
    tstep0 = r.randrange(3000, 8000)
    c_rank = r.randrange(8)
    cs = w.label("dp2-checksum", "sdc", "gpu_hardware",
                 {"level": "gpu", "node": "rp04", "gpu": c_rank})
    c_step = _step_at(tstep0, tcomp + tred + 0.035, D * r.uniform(0.45, 0.6))
    c_step += (-c_step) % 10 or 0
    lx = r.uniform(1.02, 1.06)
    tspikes = {(c_rank // 4, s): (lx, 1.0, cs)
               for s in range(c_step, _step_at(tstep0, tcomp, D) + 1)}
    tp = run(w, Attempt("tp-r", "research", ["rp04"], 4, 2, 0.0, tstep0, tcomp, tred, 10,
                        cold=False, loss0=2.6, spikes=tspikes,
                        corrupt={c_rank: (c_step, r.uniform(1.2, 1.5), cs)}), D)

    # pt-r: TP8 x DP4 on rp05-08; one bad batch spikes every replica at once (routine)
    pcomp, pred = r.uniform(1.7, 1.9), r.uniform(0.25, 0.3)
    pstep0 = r.randrange(5000, 12000)
    pest = pcomp + pred + 0.035
    bad = _step_at(pstep0, pest, D * r.uniform(0.45, 0.75))
    bx = (r.uniform(2.0, 3.5), r.uniform(3.0, 6.0))
    pt = run(w, Attempt("pt-r", "research", nodes[4:8], 8, 4, 0.0, pstep0, pcomp, pred, 10,
                        save_every=150, cold=False, loss0=2.2,
                        spikes={(d, bad): (*bx, None) for d in range(4)}), D)
    tb = (bad - pstep0) * pest
    w.effect("bad-batch", tb - 5.0, tb + 5.0, job="pt-r")
    _finish(w, [dp, tp, pt])
    return w, _topology("replicas", "rp", 10)


def _finish(w: World, attempts: list[Attempt]) -> None:
    w.write_thermal()
    w.write_ecc()
    w.write_ports(busy_share(attempts))


STORIES = {"ops": ops, "replicas": replicas}
