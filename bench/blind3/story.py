"""The two stories: ``k8s-mixed`` (25 min) and ``extremes`` (30 min), choices from the seed."""

from __future__ import annotations

import random

from bench.blind3 import faults as fx
from bench.blind3.model import Fault, Fleet, Job, Node, Port

_K8S_CHARS = "bcdfghjklmnpqrstvwxz2456789"


def _pod_suffix(rng: random.Random, n: int = 5) -> str:
    return "".join(rng.choice(_K8S_CHARS) for _ in range(n))


def _hex(rng: random.Random, n: int = 5) -> str:
    return "".join(rng.choice("0123456789abcdef") for _ in range(n))


class Story:
    """A fleet, its labelled faults, its topology record and its transport quirks."""

    def __init__(
        self,
        name: str,
        fleet: Fleet,
        faults: list[Fault],
        topology: dict | None,
        blips: list,
        dup_rate: float,
    ):
        self.name = name
        self.fleet = fleet
        self.faults = faults
        self.topology = topology
        self.blips = blips  # (node, t0, t1): records of node made in [t0, t1) arrive after t1
        self.dup_rate = dup_rate


def _offsets(rng: random.Random, names: list[str], spread: float, far: tuple) -> dict:
    off = {n: max(-0.3, min(0.3, rng.gauss(0.0, spread))) for n in names}
    a, b = rng.sample(names, 2)
    off[a], off[b] = far
    return off


def k8s_mixed(seed: int) -> Story:
    rng = random.Random(f"blind3/k8s/{seed}")
    dur = 1500.0
    a100 = [f"gpu-a100-{_pod_suffix(rng)}" for _ in range(8)]
    h100 = [f"gpu-h100-{_pod_suffix(rng)}" for _ in range(8)]
    off = _offsets(rng, a100 + h100, 0.12, (1.5, -0.6))
    nodes = []
    for i, nm in enumerate(a100):
        ports = [Port(f"mlx5_{k}", 200.0, False, True) for k in range(4)] + [
            Port("mlx5_4", 25.0, True, False)
        ]
        nodes.append(
            Node(
                nm,
                "a100",
                f"rack-a{i // 4}",
                ports,
                off[nm],
                dcgm_every_s=15.0,
                nic_every_s=15.0,
                ecc_full=False,
                xid_from_kernel_log=False,
            )
        )
    for i, nm in enumerate(h100):
        ports = [Port(f"mlx5_{k}", 400.0, False, True) for k in range(8)]
        nodes.append(Node(nm, "h100", f"rack-h{i // 4}", ports, off[nm]))
    fl = Fleet(rng, nodes, dur)
    found: list[Fault] = []

    # J1: pre-training on four H100 nodes, TP8 x DP4, restarted (rolling update) mid-log
    j1 = Job(
        f"pg-llm-pretrain-{_hex(rng)}",
        tp=8,
        pp=1,
        rank_fields=True,
        compute_ms=1500.0,
        comm_ms=380.0,
        neither_ms=90.0,
        ckpt_every=100,
        ckpt_ms=3500.0,
        warmup_factor=3.0,
    )
    t_stop = rng.uniform(760.0, 820.0)
    est = int((t_stop - 5.0) / 1.99 * 0.8)
    j1.attempts = [
        (5.0, t_stop, 0, h100[:4]),
        (t_stop + rng.uniform(60, 90), dur, (est // 100) * 100 + 1, h100[:4]),
    ]
    fl.add_job(j1)

    # J2: elastic pure-DP job on four A100 nodes; a GPU falls off the bus, it goes on with 3
    j2 = Job(
        f"pg-elastic-ft-{_hex(rng)}",
        tp=1,
        pp=1,
        rank_fields=False,
        compute_ms=620.0,
        comm_ms=210.0,
        neither_ms=60.0,
        checksum_every=10,
        ckpt_every=200,
        ckpt_ms=2500.0,
        loss0=2.6,
    )
    t79 = rng.uniform(480.0, 600.0)
    bad_node = rng.choice(a100[:4])
    bad_gpu = rng.randrange(8)
    est2 = int((t79 - 12.0) / 0.9 * 0.9)
    left = [n for n in a100[:4] if n != bad_node]
    j2.attempts = [
        (12.0, t79, 0, a100[:4]),
        (t79 + rng.uniform(110, 160), dur, (est2 // 200) * 200 + 1, left),
    ]
    fl.add_job(j2)

    # short jobs on the other eight nodes; a100[7] drained for maintenance 780..1150 s
    drain = a100[7]
    for pool, model in ((a100[4:], "a100"), (h100[4:], "h100")):
        free_at = {n: rng.uniform(0.0, 40.0) for n in pool}
        while True:
            size = 2 if rng.random() < 0.4 else 1
            pick = sorted(pool, key=lambda n: free_at[n])[:size]
            start = max(free_at[n] for n in pick) + rng.uniform(15.0, 70.0)
            if drain in pick and start + 120 > 780.0 and start < 1150.0:
                free_at[drain] = 1150.0
                continue
            if start > dur - 150:
                break
            end = min(dur, start + rng.uniform(150.0, 400.0))
            if drain in pick and start < 780.0 < end:
                end = 780.0 + rng.uniform(0, 20)
            # TP8 only over two nodes: every job keeps at least two data-parallel peers
            tp = rng.choice((1, 2, 8) if (model == "h100" and size == 2) else (1, 2))
            comp = rng.uniform(300.0, 1100.0)
            job = Job(
                f"pg-{rng.choice(['alice', 'bkim', 'ml-ops', 'rl-team', 'vision'])}-"
                f"{rng.choice(['sft', 'eval', 'dpo', 'ablation', 'lora'])}-{_hex(rng)}",
                tp=tp,
                pp=1,
                rank_fields=(tp > 1 or rng.random() < 0.5),
                compute_ms=comp,
                comm_ms=comp * rng.uniform(0.12, 0.3),
                neither_ms=rng.uniform(15.0, 80.0),
                checksum_every=rng.choice((1, 10, 0)),
                loss0=rng.uniform(1.5, 3.5),
            )
            job.attempts = [(start, end, 0, pick)]
            fl.add_job(job)
            for n in pick:
                free_at[n] = end

    # K1: XID 79 on the elastic job
    f = Fault(
        f"xid79-{bad_node}-{bad_gpu}",
        "hardware",
        "gpu_hardware",
        {"level": "gpu", "node": bad_node, "gpu": bad_gpu},
    )
    fx.fell_off_bus(fl, f, bad_node, bad_gpu, t79, 15.0)
    found.append(f)
    # K2: the host path of one J1 node slows (CPU / input pipeline), nothing in GPU telemetry
    slow_host = rng.choice(h100[1:4])
    t2 = rng.uniform(250.0, 380.0)
    f = Fault(
        f"host-slow-{slow_host}",
        "slow_node",
        "unknown",
        {"level": "node", "node": slow_host},
        attributable=False,
    )
    fx.host_slow(fl, f, slow_host, t2, t2 + 240.0, 1.06, 0.16)
    found.append(f)
    # K3: a row-remap storm on a short-job A100 GPU (no SBE fields on this fleet's exporter)
    rn, rg = rng.choice(a100[4:7]), rng.randrange(8)
    t3 = rng.uniform(650.0, 900.0)
    f = Fault(f"remap-{rn}-{rg}", "hardware", "gpu_memory", {"level": "gpu", "node": rn, "gpu": rg})
    fx.remap_storm(
        fl, f, rn, rg, t3, rng.randint(5, 9), 60.0, (t3 + 75.0) if seed % 2 else None, 6.0
    )
    found.append(f)
    # K4: a PCIe-downtrained GPU in the H100 pool, from before the log
    pn, pg = rng.choice(h100[4:]), rng.randrange(8)
    f = Fault(
        f"pcie-{pn}-{pg}", "slow_node", "gpu_hardware", {"level": "gpu", "node": pn, "gpu": pg}
    )
    fx.pcie_downtrained(fl, f, pn, pg, 0.0, dur, 0.10, 1.12, 0.6)
    found.append(f)
    # K5: an intermittent straggler (one step in five, +35 %) in the H100 pool
    sn = rng.choice([n for n in h100[4:] if n != pn])
    sg = rng.randrange(8)
    f = Fault(
        f"intermittent-{sn}-{sg}",
        "slow_node",
        "unknown",
        {"level": "gpu", "node": sn, "gpu": sg},
        attributable=False,
    )
    fx.intermittent(fl, f, sn, sg, 350.0, 1150.0, 5, 2, 1.35)
    found.append(f)
    # K6: an NVLink flap on a J1 GPU after the restart
    vn, vg = rng.choice(h100[:4]), rng.randrange(8)
    t6 = rng.uniform(1000.0, 1200.0)
    f = Fault(f"nvlink-{vn}-{vg}", "hardware", "nvlink", {"level": "gpu", "node": vn, "gpu": vg})
    fx.nvlink_flap(fl, f, vn, vg, t6, 30.0, [3.0, 25.0], None, 1.0)
    found.append(f)

    # healthy: the drained node's driver reload, an exporter restart, network blips
    fx.driver_reload(fl, drain, rng.uniform(950.0, 1050.0), 45.0)
    fx.exporter_restart(fl, rng.choice(h100), rng.uniform(600.0, 900.0), 25.0)
    blip_node = rng.choice([n for n in h100[:4] if n != slow_host])
    blips = []
    for _ in range(3):
        b0 = rng.uniform(100.0, dur - 100.0)
        blips.append((blip_node, b0, b0 + rng.uniform(1.5, 2.4)))

    topo = None
    variant = seed % 3
    if variant in (0, 1):
        lines = ["Topology=k8s-mixed Version=1"]
        if variant == 0:
            lines.append(f"NodeSet={','.join(a100)} Gpus=8 Nics=mlx5_[0-4]")
            lines.append(f"Rack=rack-a[0-1] Nodes={','.join(a100)}")
            lines.append(f"SwitchName=ib-a-leaf0 Nodes={','.join(a100)} Nics=mlx5_[0-3]")
        lines.append(f"NodeSet={','.join(h100)} Gpus=8 Nics=mlx5_[0-7]")
        lines.append(f"Rack=rack-h[0-1] Nodes={','.join(h100)}")
        lines.append(f"SwitchName=ib-h-leaf[0-1] Nodes={','.join(h100)}")
        lines.append(
            "SwitchName=ib-spine0 Switches="
            + ("ib-a-leaf0,ib-h-leaf[0-1]" if variant == 0 else "ib-h-leaf[0-1]")
        )
        topo = {"format": "faultline", "text": "\n".join(lines) + "\n"}
    return Story("k8s-mixed", fl, found, topo, blips, 0.003)


def extremes(seed: int) -> Story:
    rng = random.Random(f"blind3/extremes/{seed}")
    dur = 1800.0
    names = [f"gn{i:03d}" for i in range(1, 17)]
    off = _offsets(rng, names, 0.03, (0.4, -0.2))
    nodes = [
        Node(
            nm,
            "h100",
            f"rack-{i // 4}",
            [Port(f"mlx5_{k}", 400.0, False, True) for k in range(8)],
            off[nm],
        )
        for i, nm in enumerate(names)
    ]
    fl = Fleet(rng, nodes, dur)
    found: list[Fault] = []
    # F: very fast steps (~0.3 s), pure DP with rank fields, 16 ranks
    jf = Job(
        f"fast-{_hex(rng)}",
        tp=1,
        pp=1,
        rank_fields=True,
        compute_ms=215.0,
        comm_ms=55.0,
        neither_ms=22.0,
        checksum_every=50,
        ckpt_every=2000,
        ckpt_ms=2000.0,
        warmup_steps=3,
        warmup_factor=6.0,
        loss0=3.0,
    )
    jf.attempts = [(8.0, dur, 0, names[0:2])]
    fl.add_job(jf)
    # S: very slow steps (45 or ~75 s): TP8 x PP2 x DP4, accumulation 8, eval every 10,
    # checkpoint every 15
    micro = 5300.0 if seed % 2 == 0 else 8900.0
    js = Job(
        f"slow-{_hex(rng)}",
        tp=8,
        pp=2,
        rank_fields=True,
        compute_ms=micro,
        accum=8,
        comm_ms=1800.0,
        neither_ms=400.0,
        stage_factor=(1.0, 1.06),
        eval_every=10,
        eval_factor=1.3,
        ckpt_every=15,
        ckpt_ms=9000.0,
        warmup_steps=1,
        warmup_factor=1.5,
        loss0=2.2,
    )
    js.attempts = [(20.0, dur, 0, names[4:12])]
    fl.add_job(js)
    # M: medium steps, TP4 x DP8 on rack 3
    jm = Job(
        f"mid-{_hex(rng)}",
        tp=4,
        pp=1,
        rank_fields=True,
        compute_ms=1150.0,
        comm_ms=260.0,
        neither_ms=40.0,
        ckpt_every=200,
        ckpt_ms=2500.0,
    )
    jm.attempts = [(15.0, dur, 0, names[12:16])]
    fl.add_job(jm)

    # E1: NVLink flap on a GPU of F; the job's collectives +15 % while it lasts
    vn, vg = rng.choice(names[0:2]), rng.randrange(8)
    t1 = rng.uniform(300.0, 500.0)
    f = Fault(f"nvlink-{vn}-{vg}", "hardware", "nvlink", {"level": "gpu", "node": vn, "gpu": vg})
    fx.nvlink_flap(fl, f, vn, vg, t1, 240.0, [2.0, 100.0], jf.job, 1.15)
    found.append(f)
    # E4: an intermittent straggler on F (one step in five, +40 %)
    sn = rng.choice(names[0:2])
    sg = rng.choice([g for g in range(8) if (sn, g) != (vn, vg)])
    f = Fault(
        f"intermittent-{sn}-{sg}",
        "slow_node",
        "unknown",
        {"level": "gpu", "node": sn, "gpu": sg},
        attributable=False,
    )
    fx.intermittent(fl, f, sn, sg, 1000.0, 1500.0, 5, 3, 1.4)
    found.append(f)
    # E2: thermal-interface failure on an S GPU (rack 1): hot, throttling, ~10 % slower
    hn, hg = rng.choice(names[4:8]), rng.randrange(8)
    t2 = rng.uniform(500.0, 700.0)
    f = Fault(f"hot-{hn}-{hg}", "slow_node", "thermal", {"level": "gpu", "node": hn, "gpu": hg})
    steady = fl.gpu_point(hn, hg, t2)[1]  # before the fault's hook: its healthy busy temperature
    fx.hot_gpu(fl, f, hn, hg, t2, 240.0, 87.0 - steady + rng.uniform(6.0, 12.0))
    found.append(f)
    # E3: rack 2's cooling fails (S nodes); top of the rack worst
    rack_nodes = names[8:12]
    share = dict(zip(rack_nodes, rng.sample([0.5, 0.8, 1.0, 0.65], 4), strict=True))
    t3 = rng.uniform(1000.0, 1150.0)
    cool_faults: dict = {}
    fx.rack_cooling(fl, "rack-2", share, t3, 180.0, t3 + 480.0, 180.0, 28.0, cool_faults)
    for nd in rack_nodes:
        hot = sorted(
            {
                g
                for g in range(8)
                for t in range(int(t3), int(t3) + 900, 5)
                if fl.gpu_point(nd, g, float(t))[3] & 0x20
            }
        )
        if not hot:
            continue  # warmer, never throttled: not a fault of this node (README)
        scope = (
            {"level": "gpu", "node": nd, "gpu": hot[0]}
            if len(hot) == 1
            else {"level": "node", "node": nd}
        )
        cool_faults[nd] = Fault(f"cooling-rack-2-{nd}", "slow_node", "thermal", scope)
        found.append(cool_faults[nd])
    # E5: a host-path slowdown on an M node
    mn = rng.choice(names[12:16])
    t5 = rng.uniform(300.0, 600.0)
    f = Fault(
        f"host-slow-{mn}", "slow_node", "unknown", {"level": "node", "node": mn}, attributable=False
    )
    fx.host_slow(fl, f, mn, t5, t5 + 300.0, 1.05, 0.20)
    found.append(f)
    # E6: a row-remap storm on an M GPU (full ECC fields: SBEs climb)
    rn, rg = rng.choice(names[12:16]), rng.randrange(8)
    t6 = rng.uniform(1100.0, 1400.0)
    f = Fault(f"remap-{rn}-{rg}", "hardware", "gpu_memory", {"level": "gpu", "node": rn, "gpu": rg})
    fx.remap_storm(
        fl, f, rn, rg, t6, rng.randint(4, 7), 60.0, (t6 + 75.0) if seed % 2 else None, 8.0
    )
    found.append(f)

    # healthy: rack 0 power-capped 700 -> 500 W for 3 min (F and two idle nodes), a driver
    # reload on an idle node, network blips
    tc = rng.uniform(1520.0, 1600.0)
    fx.power_cap(fl, set(names[0:4]), tc, tc + 180.0, 500.0)
    fx.driver_reload(fl, names[2], rng.uniform(700.0, 900.0), 40.0)
    blips = [
        (names[1], b, b + rng.uniform(1.2, 2.2)) for b in (rng.uniform(200, 1700) for _ in range(3))
    ]
    text = (
        "SwitchName=leaf0 Nodes=gn[001-008]\nSwitchName=leaf1 Nodes=gn[009-016]\n"
        "SwitchName=spine0 Switches=leaf[0-1]\n"
    )
    return Story("extremes", fl, found, {"format": "slurm", "text": text}, blips, 0.002)


STORIES = {"k8s-mixed": k8s_mixed, "extremes": extremes}
