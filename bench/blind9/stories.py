"""The two stories: a mixed HGX fleet under maintenance (`ops-hgx`) and GB200 NVL72 racks
(`nvl72`). Every time is a share of the log's length drawn from the seed, so a shortened log
keeps the same order of events."""

from __future__ import annotations

from bench.blind9.training import Attempt, run
from bench.blind9.world import A100, B200, H100, T0, Fault, World


def _span(w: World, t: float) -> tuple[float, float]:
    return (round(T0 + t, 3), round(T0 + w.dur, 3))


def _slow(node: str, gpu: int, t0: float, factor: float):
    return lambda n, g, t: factor if (n == node and g == gpu and t >= t0) else 1.0


def _rolling(w: World, nodes: list[str], t: float) -> None:
    """dcgm-exporter upgraded node by node: 30-120 s without thermal / ECC rows each."""
    for name in nodes:
        n = w.nodes[name]
        if n.alive(t):
            n.dcgm_gaps.append((t, t + w.rng.uniform(30, 120)))
        t += w.rng.uniform(50, 80)


def ops_hgx(w: World) -> str:
    r, d = w.rng, w.dur
    h = [f"h100-{i:02d}" for i in range(1, 19)]
    a = [f"a100-{i:02d}" for i in range(1, 9)]
    h100_nics = [f"mlx5_{k}" for k in range(8)]
    a100_nics = [f"mlx5_{k}" for k in range(4)]
    t_drain, t_ret = r.uniform(0.05, 0.10) * d, r.uniform(0.35, 0.45) * d
    t_join = [r.uniform(0.15, 0.22) * d, r.uniform(0.22, 0.28) * d]
    for name in h:
        up = [(0.0, d + 1)]
        if name == "h100-15":
            up = [(0.0, t_drain), (t_ret, d + 1)]
        elif name in ("h100-17", "h100-18"):
            up = [(t_join[int(name[-1]) - 7], d + 1)]
        w.node(name, H100, 8, h100_nics, 400.0, up=up)
    for name in a:   # an older driver and exporter: slower cadence, no recovery action
        w.node(name, A100, 8, a100_nics, 200.0, thermal_s=15.0, ecc_s=60.0,
               recovery_action=False)
    # h100-15 comes back re-imaged with its clock 1.5-2.5 s behind; chrony steps it later
    n15 = w.nodes["h100-15"]
    n15.clock_steps = [(t_ret, -r.uniform(1.5, 2.5)), (t_ret + r.uniform(40, 90),
                                                        r.uniform(-0.2, 0.2))]
    w.nodes["a100-08"].up = [(0.0, r.uniform(0.45, 0.55) * d)]      # drained, taken out

    # new nodes: dcgmi diag -r 3 burn-in; h100-17 fails it with a DBE (XID 48, then 63)
    burn = [t_join[0] + r.uniform(20, 40), t_join[1] + r.uniform(20, 40)]
    g_dbe, t_dbe = r.randrange(8), burn[0] + r.uniform(0.12, 0.20) * d
    w.xids += [(t_dbe, "h100-17", g_dbe, 48, "dbe-burnin"),
               (t_dbe + r.uniform(0.3, 2.0), "h100-17", g_dbe, 63, "dbe-burnin")]
    w.nodes["h100-17"].busy(range(8), burn[0], t_dbe + r.uniform(2, 8), "burn")
    w.nodes["h100-18"].busy(range(8), burn[1], burn[1] + r.uniform(0.45, 0.55) * d, "burn")
    dbe_done = []

    def dbe_ecc(n, g, t):
        if n != "h100-17" or g != g_dbe or t < t_dbe:
            return None
        first = not dbe_done
        dbe_done.append(t)
        return ({"dbe_volatile": 1} if first else {},
                {"row_remap_pending": True, "recovery_action": "gpu_reset"})
    w.faults.append(Fault("dbe-burnin", "hardware", "gpu_memory",
                          {"level": "gpu", "node": "h100-17", "gpu": g_dbe}, ecc=dbe_ecc))

    # A100: a GPU's PCIe link retrains at x8 (AER replays), the job's DP all-reduce slows
    pcie_node, g_pcie = r.choice(a[:4]), r.randrange(8)
    t_pcie, comm_x = r.uniform(0.12, 0.25) * d, r.uniform(1.30, 1.45)
    burst, trickle, pcie_seen = r.randint(80, 250), r.uniform(0.2, 1.0), []

    def pcie_ecc(n, g, t):
        if n != pcie_node or g != g_pcie or t < t_pcie:
            return None
        first = not pcie_seen
        pcie_seen.append(t)
        return ({"pcie_replay": burst if first else int(trickle * 60 * r.uniform(0.5, 1.5))},
                {})
    w.faults.append(Fault("pcie-x8", "hardware", "gpu_hardware",
                          {"level": "gpu", "node": pcie_node, "gpu": g_pcie}, ecc=pcie_ecc,
                          comm=lambda job, t: comm_x if job == "pt-a100" and t >= t_pcie
                          else 1.0))

    # A100: a kernel panic under pt-a100; the job re-forms on the spare a100-07
    panic = r.choice([x for x in a[:4] if x != pcie_node])
    t_panic = r.uniform(0.58, 0.68) * d
    w.nodes[panic].up = [(0.0, t_panic)]
    w.faults.append(Fault("kernel-panic", "unattributed", "unknown",
                          {"level": "node", "node": panic}, attributable=False,
                          span=_span(w, t_panic)))

    # H100: one rack's PDU trips (the rack's leaf with it): four nodes dark at once
    rack = r.choice([1, 2])
    dark = h[(rack - 1) * 4: rack * 4]
    t_pdu = r.uniform(0.70, 0.80) * d
    for name in dark:
        w.nodes[name].up = [(0.0, t_pdu)]
    w.faults.append(Fault("pdu-trip", "unattributed", "unknown",
                          {"level": "switch", "switch": f"leaf-r{rack}"}, attributable=False,
                          span=_span(w, t_pdu)))

    # h100-15 back from maintenance: dcgmi diag -r 2 (passes), then a job; one GPU computes
    # 15-22 % slower from then on, nothing says why
    t_diag = t_ret + r.uniform(10, 30)
    n15.busy(range(8), t_diag, t_diag + r.uniform(100, 130), "burn")
    t_ft = t_diag + r.uniform(150, 200)
    g_slow = r.randrange(8)
    w.faults.append(Fault("maint-slow", "slow_node", "unknown",
                          {"level": "gpu", "node": "h100-15", "gpu": g_slow},
                          attributable=False,
                          compute=_slow("h100-15", g_slow, t_ft, r.uniform(1.15, 1.22))))

    # ---- jobs ----
    pt = run(w, Attempt("pt-h100", "pretrain", h[:8], 8, 8, 1, 8, -r.uniform(0, 3), t_pdu,
                        41200 + r.randrange(900), 2600, 420, ckpt_every=100, cold=False,
                        dead_nodes=tuple(dark)))
    live = [x for x in h[:8] if x not in dark]
    run(w, Attempt("pt-h100", "pretrain", live, 8, 8, 1, 4,
                   t_pdu + pt.nccl_timeout_s + r.uniform(60, 120), d, pt.last_ckpt + 1,
                   2600, 380, ckpt_every=100))
    t_pre = r.uniform(0.28, 0.38) * d
    sft = run(w, Attempt("sft-h100", "finetune", h[8:12], 8, 8, 2, 2, -r.uniform(0, 2), t_pre,
                         7300 + r.randrange(500), 1500, 260, stage_w=[1.0, 1.08],
                         ckpt_every=200, checksum_every=20, sigterm_save=True, cold=False))
    t_rl = sft.stop + r.uniform(15, 40)
    rl = run(w, Attempt("rlhf-h100", "alignment", h[8:12], 8, 8, 1, 4, t_rl,
                        t_rl + r.uniform(0.13, 0.18) * d, 1, 900, 200, ckpt_every=50))
    run(w, Attempt("sft-h100", "finetune", h[8:12], 8, 8, 2, 2, rl.end + r.uniform(20, 40), d,
                   sft.last_ckpt + 1, 1500, 260, stage_w=[1.0, 1.08], ckpt_every=200,
                   checksum_every=20))
    run(w, Attempt("ft-ret", "finetune", h[12:16], 8, 8, 1, 4, t_ft, d, 1, 1100, 240,
                   ckpt_every=200))
    pa = run(w, Attempt("pt-a100", "research", a[:4], 8, 8, 1, 4, -r.uniform(0, 4), t_panic,
                        18800 + r.randrange(400), 3900, 700, ckpt_every=80, cold=False,
                        dead_nodes=(panic,)))
    run(w, Attempt("pt-a100", "research", [x for x in a[:4] if x != panic] + ["a100-07"], 8, 8,
                   1, 4, t_panic + pa.nccl_timeout_s + r.uniform(60, 120), d, pa.last_ckpt + 1,
                   3900, 700, ckpt_every=80))
    run(w, Attempt("ft-a100", "finetune", a[4:6], 8, 4, 1, 4, -r.uniform(0, 2), d,
                   2100 + r.randrange(300), 1700, 300, ckpt_every=150, cold=False))
    _rolling(w, a[:7], r.uniform(0.80, 0.85) * d)
    return "\n".join([
        "Topology=ops-hgx Version=1",
        "NodeSet=h100-[01-18] Gpus=8 Nics=mlx5_[0-7]",
        "NodeSet=a100-[01-08] Gpus=8 Nics=mlx5_[0-3]",
        "Rack=rack-r[1-4] Nodes=h100-[01-16]",
        "Rack=rack-r5 Nodes=h100-[17-18]",
        "Rack=rack-r[6-7] Nodes=a100-[01-08]",
        "SwitchName=leaf-r[1-4] Nodes=h100-[01-16]",
        "SwitchName=leaf-r5 Nodes=h100-[17-18]",
        "SwitchName=leaf-r[6-7] Nodes=a100-[01-08]",
        "SwitchName=spine-ndr[1-2] Switches=leaf-r[1-5]",
        "SwitchName=spine-hdr1 Switches=leaf-r[6-7]", ""])


def nvl72(w: World) -> str:
    r, d = w.rng, w.dur
    trays = {k: [f"nvl-r{k}-c{i:02d}" for i in range(1, 19)] for k in (1, 2, 3)}
    for k in (1, 2, 3):
        for name in trays[k]:
            w.node(name, B200, 4, [f"mlx5_{j}" for j in range(4)], 400.0)
    l_nodes = trays[1][:16] + trays[2][:16]
    w.nodes["nvl-r2-c18"].up = [(0.0, r.uniform(0.20, 0.30) * d)]    # spare drained, pulled

    # NVLink errors on one GPU of L: CRC climbing, XID 74 twice, its rank a little slower
    nv_node = r.choice(l_nodes[16:])
    g_nv, t_nv = r.randrange(4), r.uniform(0.15, 0.30) * d
    crc = r.uniform(5, 30)
    w.xids += [(t_nv, nv_node, g_nv, 74, "nvlink-gpu"),
               (t_nv + r.uniform(60, 200), nv_node, g_nv, 74, "nvlink-gpu")]

    def nv_ecc(n, g, t):
        if n != nv_node or g != g_nv or t < t_nv:
            return None
        c = int(crc * 30 * r.uniform(0.6, 1.4))
        return ({"nvlink_crc_errors": c, "nvlink_replay_errors": c // 10,
                 "nvlink_recovery_errors": int(r.random() < 0.3)}, {})
    w.faults.append(Fault("nvlink-gpu", "hardware", "nvlink",
                          {"level": "gpu", "node": nv_node, "gpu": g_nv}, ecc=nv_ecc,
                          compute=_slow(nv_node, g_nv, t_nv, r.uniform(1.07, 1.12))))

    # a kernel panic on an L tray of rack 1: L re-forms with the rack's spare tray c17
    panic = r.choice(trays[1][:16])
    t_panic = r.uniform(0.35, 0.50) * d
    w.nodes[panic].up = [(0.0, t_panic)]
    w.faults.append(Fault("kernel-panic", "unattributed", "unknown",
                          {"level": "node", "node": panic}, attributable=False,
                          span=_span(w, t_panic)))

    # rack 3 loses power (its power shelves' feed): 18 trays dark at once, S dies
    t_rack = r.uniform(0.72, 0.85) * d
    for name in trays[3]:
        w.nodes[name].up = [(0.0, t_rack)]
    w.faults.append(Fault("rack-power", "unattributed", "unknown",
                          {"level": "domain", "domain": "nvl72-r3"}, attributable=False,
                          span=_span(w, t_rack)))

    lt = run(w, Attempt("pt-gb200", "pretrain", l_nodes, 4, 8, 2, 8, -r.uniform(0, 3),
                        t_panic, 90400 + r.randrange(900), 3100, 520, stage_w=[1.0, 1.06],
                        ckpt_every=100, cold=False, dead_nodes=(panic,)))
    re_nodes = [trays[1][16] if x == panic else x for x in l_nodes]
    run(w, Attempt("pt-gb200", "pretrain", re_nodes, 4, 8, 2, 8,
                   t_panic + lt.nccl_timeout_s + r.uniform(60, 120), d, lt.last_ckpt + 1,
                   3100, 520, stage_w=[1.0, 1.06], ckpt_every=100))
    run(w, Attempt("sft-gb200", "finetune", trays[3][:16], 4, 4, 1, 16, -r.uniform(0, 2),
                   t_rack, 15200 + r.randrange(400), 1400, 310, ckpt_every=150, cold=False,
                   dead_nodes=tuple(trays[3])))
    _rolling(w, trays[2][:10], r.uniform(0.50, 0.58) * d)
    return "\n".join([
        "Topology=gb200-ops Version=1",
        "NodeSet=nvl-r[1-3]-c[01-18] Gpus=4 Nics=mlx5_[0-3]",
        "Rack=rack-r[1-3] Nodes=nvl-r[1-3]-c[01-18]",
        "Domain=nvl72-r[1-3] Nodes=nvl-r[1-3]-c[01-18]",
        *[f"SwitchName=rail{j}-leaf[1-3] Nodes=nvl-r[1-3]-c[01-18] Nics=mlx5_{j}"
          for j in range(4)],
        "SwitchName=spine[1-2] Switches=rail[0-3]-leaf[1-3]", ""])


STORIES = {"ops-hgx": ops_hgx, "nvl72": nvl72}
