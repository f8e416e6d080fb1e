"""The two stories of bench/blind4, every choice drawn from the seed.

`quiet-hours`: 100 minutes of a 16-node pod where little goes wrong -- the benign
shapes of a long, realistic run (warm-up, gradient accumulation, evaluation passes,
checkpoints, MoE imbalance, pipeline stages, job churn, a day's inlet drift, slow
corrected-ECC accrual, a collector re-sending its last minute, a clock 170 s ahead,
a counter reset, optional fields absent) and five faults in it.

`fabric-3tier`: 40 minutes of a 32-node cluster on a 3-tier fat tree (cores over pod
spines over leaves, a Slurm topology.conf): a partial spine fault, a leaf line-card
fault, a PFC pause storm from one NIC, a host CPU throttle, an SDC with a majority.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from bench.blind4 import faults as F
from bench.blind4.emit import NodeOptions
from bench.blind4.fleet import Fleet, build_nodes, hostlist, slurm_three_tier
from bench.blind4.jobs import Attempt

NICS = tuple(f"mlx5_{i}" for i in range(8))


@dataclass
class Story:
    fleet: Fleet
    attempts: list[Attempt]
    faults: list[F.Fault]
    options: dict[str, NodeOptions]
    duration_s: float
    resend: list[tuple[str, float, float, float]] = field(
        default_factory=list
    )  # node, t, silent_s, back_s


def _jobid(rng, prefix: str) -> str:
    return f"{prefix}-{rng.randrange(16**5):05x}"


def _churn(
    rng,
    nodes: list[str],
    t0: float,
    t1: float,
    attempts: list,
    prefix: str,
    one_node_only: bool = False,
) -> None:
    """Short jobs one after another on `nodes` (1 or 2 nodes each), idle gaps between."""
    t = t0 + rng.uniform(0, 90)
    while t < t1 - 240:
        two = len(nodes) >= 2 and not one_node_only and rng.random() < 0.5
        use = nodes[:2] if two else [rng.choice(nodes)]
        shape = rng.choice(("dp", "tp8", "tp4"))
        world = 8 * len(use)
        tp = {"dp": 1, "tp8": 8, "tp4": 4}[shape]
        dur = rng.uniform(240, 720)
        att = Attempt(
            job=_jobid(rng, prefix),
            attempt=0,
            nodes=use,
            tp=tp,
            pp=1,
            dp=world // tp,
            start_t=t,
            step0=0,
            base_ms=rng.uniform(380, 1600),
            stop_t=min(t1, t + dur),
            rank_fields=shape != "dp" or rng.random() < 0.5,
            timing_fields=rng.random() < 0.75,
            loss_fields=rng.random() < 0.7,
            checksum=shape != "dp" and rng.random() < 0.6,
            accum=rng.choice((1, 1, 2, 4)),
            warmup=rng.randrange(5, 51),
            moe=rng.random() < 0.3,
        )
        attempts.append(att)
        t = att.stop_t + rng.uniform(30, 180)


def quiet_hours(rng, seed: int) -> Story:
    T = 6000.0
    names = [f"gpu-sjc4-{i:03d}" for i in range(1, 17)]
    leaves = [f"leaf{i}" for i in range(4)]
    nodes = build_nodes(rng, names, 4, leaves, 4, NICS, 10.0)
    topo = (
        "\n".join(
            [
                "# blind4 quiet-hours: 16 x 8 H100, 4 leaves, a pod spine per 2 leaves, 2 cores",
                "Topology=sjc4-pod Version=1",
                f"NodeSet={hostlist(names)} Gpus=8 Nics=mlx5_[0-7]",
                f"Rack=rack-[0-3] Nodes={hostlist(names)}",
                f"SwitchName=leaf[0-3] Nodes={hostlist(names)}",
                "SwitchName=pspine0 Switches=leaf[0-1]",
                "SwitchName=pspine1 Switches=leaf[2-3]",
                "SwitchName=core[0-1] Switches=pspine[0-1]",
            ]
        )
        + "\n"
    )
    fleet = Fleet(
        "quiet-hours",
        nodes,
        "faultline",
        topo,
        inlet_base_c=rng.uniform(20, 24),
        diurnal_c=rng.uniform(2.0, 4.0),
        diurnal_period_s=T * 1.1,
        diurnal_phase=rng.uniform(0, 6.28),
    )
    nd = {n.name: n for n in nodes}
    opts = {n: NodeOptions() for n in names}
    faults: list[F.Fault] = []
    attempts: list[Attempt] = []

    # J1: MoE pre-training, TP8 x PP2 x DP4 on nodes 1-8, micro-steps logged, accumulation 4.
    j1 = _jobid(rng, "moe-pt")
    base = rng.uniform(1800, 2600)
    t_x = rng.uniform(2200, 2700)  # XID 95 on a GPU of node 3
    a1 = Attempt(
        job=j1,
        attempt=0,
        nodes=names[0:8],
        tp=8,
        pp=2,
        dp=4,
        start_t=60.0,
        step0=0,
        base_ms=base,
        stop_t=t_x + 1.5,
        checksum=True,
        accum=4,
        eval_every=150,
        eval_len=40,
        ckpt_every=100,
        ckpt_s=rng.uniform(14, 24),
        moe=True,
        warmup=rng.randrange(20, 45),
        stage_work=[1.05, 1.0],
    )
    attempts.append(a1)
    x_gpu = rng.randrange(8)
    back_t = t_x + rng.uniform(100, 160)
    faults.append(F.GpuResetReturn("Q-reset", names[2], x_gpu, t_x, back_t))
    # Restart from the last checkpoint on the spare (node 9) in place of node 3; the spare
    # has a GPU ~18 % slow that nothing in telemetry explains.
    spare_gpu = rng.randrange(8)
    faults.append(F.SlowGpu("Q-spare", names[8], spare_gpu, rng.uniform(1.15, 1.22)))
    restart_nodes = names[0:2] + [names[8]] + names[3:8]
    a2 = Attempt(
        job=j1,
        attempt=1,
        nodes=restart_nodes,
        tp=8,
        pp=2,
        dp=4,
        start_t=t_x + rng.uniform(200, 300),
        step0=0,
        base_ms=base,
        stop_t=T - 5,
        checksum=True,
        accum=4,
        eval_every=150,
        eval_len=40,
        ckpt_every=100,
        ckpt_s=a1.ckpt_s,
        moe=True,
        warmup=rng.randrange(20, 45),
        stage_work=[1.05, 1.0],
        resume=a1,
    )
    attempts.append(a2)
    # Intermittent straggler on a node-2 GPU during the first attempt.
    bursts, t = [], rng.uniform(500, 700)
    while t < t_x - 200:
        bursts.append((t, t + rng.uniform(20, 40)))
        t += rng.uniform(170, 320)
    faults.append(
        F.IntermittentStraggler(
            "Q-intermittent", names[1], rng.randrange(8), bursts, rng.uniform(1.25, 1.4)
        )
    )
    # NVLink on a node-6 GPU in the second attempt: XID 74 twice, its TP group ~10 % slower.
    nv_t0 = rng.uniform(4300, 5000)
    nv_t1 = nv_t0 + rng.uniform(180, 300)
    faults.append(
        F.NvlinkTpGroup(
            "Q-nvlink",
            names[5],
            rng.randrange(8),
            nv_t0,
            nv_t1,
            rng.uniform(1.08, 1.13),
            [nv_t0 + 2.0, nv_t0 + rng.uniform(90, 150)],
        )
    )

    # Churn on nodes 10-16 (node 9 is the idle spare until the restart); node 3 returns.
    _churn(rng, names[9:11], 0, T, attempts, "ft")
    _churn(rng, names[11:13], 0, T, attempts, "eval")
    _churn(rng, [names[13]], 0, T, attempts, "nb")
    _churn(rng, [names[14]], 0, T, attempts, "dbg", one_node_only=True)
    _churn(rng, [names[15]], 0, T, attempts, "sweep")
    _churn(rng, [names[2]], back_t + 300, T, attempts, "after-reset")
    # A DP-2 job on nodes 10-11 that goes silently wrong: no majority to name the GPU.
    tie = Attempt(
        job=_jobid(rng, "ft-dp2"),
        attempt=0,
        nodes=names[9:11],
        tp=8,
        pp=1,
        dp=2,
        start_t=0.0,
        step0=0,
        base_ms=rng.uniform(700, 1200),
        stop_t=0.0,
        checksum=True,
    )
    free = [a for a in attempts if a.nodes == names[9:11] and a.stop_t - a.start_t > 400]
    if free:
        host = free[len(free) // 2]
        attempts.remove(host)
        tie.start_t, tie.stop_t = host.start_t, host.stop_t
        attempts.append(tie)
        bad = rng.randrange(16)
        faults.append(
            F.SdcChecksum(
                "Q-sdc-tie",
                tie.job,
                bad,
                *tie.place(bad)[:2],
                tie.start_t + (tie.stop_t - tie.start_t) * 0.45,
                tie=True,
            )
        )

    # Healthy oddities of the collectors.
    nd[names[14]].skew_s = 170.0  # chrony lost its source: +170 s
    nd[names[13]].drop_fields = True  # dcgm-exporter default counter set
    opts[names[13]].mem_temp_null = True
    opts[names[11]].nic_reset_t = [rng.uniform(2800, 3400)]
    for _ in range(3):
        opts[rng.choice(names)].sbe_per_s[rng.randrange(8)] = rng.uniform(0.003, 0.03)
    resend = [(names[4], rng.uniform(3300, 3900), 20.0, 60.0)]
    return Story(fleet, attempts, faults, opts, T, resend)


def fabric_three_tier(rng, seed: int) -> Story:
    T = 2400.0
    names = [f"fab-{i:03d}" for i in range(1, 33)]
    leaves = [f"leaf{i}" for i in range(8)]
    nodes = build_nodes(rng, names, 4, leaves, 4, NICS, 10.0)
    leaf_nodes = {lf: names[4 * i : 4 * i + 4] for i, lf in enumerate(leaves)}
    spines = {"spine0": leaves[0:4], "spine1": leaves[4:8]}
    topo = slurm_three_tier(leaf_nodes, spines, ["core0", "core1"], hostlist)
    fleet = Fleet(
        "fabric-3tier",
        nodes,
        "slurm",
        topo,
        inlet_base_c=rng.uniform(21, 25),
        diurnal_c=rng.uniform(0.5, 1.5),
        diurnal_period_s=T * 3,
        diurnal_phase=rng.uniform(0, 6.28),
    )
    nd = {n.name: n for n in nodes}
    opts = {n: NodeOptions(pause_counters=True) for n in names}
    faults: list[F.Fault] = []
    attempts: list[Attempt] = []

    ja = Attempt(
        job=_jobid(rng, "llama70b"),
        attempt=0,
        nodes=names[0:16],
        tp=8,
        pp=4,
        dp=4,
        start_t=30.0,
        step0=rng.randrange(0, 40000),
        base_ms=rng.uniform(4500, 6000),
        stop_t=T - 5,
        checksum=True,
        ckpt_every=120,
        ckpt_s=rng.uniform(20, 30),
        warmup=rng.randrange(15, 30),
        stage_work=[1.04, 1.0, 1.0, 1.06],
    )
    jb = Attempt(
        job=_jobid(rng, "sft"),
        attempt=0,
        nodes=names[16:24],
        tp=8,
        pp=1,
        dp=8,
        start_t=45.0,
        step0=0,
        base_ms=rng.uniform(900, 1300),
        stop_t=T - 5,
        checksum=True,
        accum=2,
        eval_every=300,
        eval_len=20,
        warmup=rng.randrange(30, 51),
        moe=True,
    )
    attempts += [ja, jb]
    _churn(rng, names[24:26], 0, T, attempts, "c1")
    _churn(rng, names[26:28], 0, T, attempts, "c2")
    _churn(rng, [names[28]], 0, T, attempts, "c3")
    _churn(rng, [names[29]], 0, T, attempts, "c4", one_node_only=True)
    _churn(rng, names[30:32], 0, T, attempts, "c5")

    spine = "spine0" if seed % 2 == 0 else "spine1"
    under = [n for lf in spines[spine] for n in leaf_nodes[lf]]
    s0 = rng.uniform(500, 800)
    faults.append(
        F.SpinePartial(
            "X-spine", spine, under, s0, s0 + rng.uniform(240, 400), rng.uniform(1.2, 1.4), seed
        )
    )
    ps_leaf = rng.choice(leaves[4:6])
    ps_node = rng.choice(leaf_nodes[ps_leaf])
    p0 = rng.uniform(1250, 1600)
    faults.append(
        F.PauseStorm(
            "X-pause",
            ps_node,
            rng.choice(NICS),
            p0,
            p0 + rng.uniform(80, 150),
            leaf_nodes[ps_leaf],
            rng.uniform(1.8, 2.6),
        )
    )
    cpu_node = rng.choice([n for n in names[16:24] if n != ps_node])
    c0 = rng.uniform(250, 450)
    faults.append(
        F.HostCpuThrottle(
            "X-hostcpu", cpu_node, c0, c0 + rng.uniform(300, 420), rng.uniform(1.10, 1.16)
        )
    )
    bad = rng.randrange(ja.world)
    faults.append(
        F.SdcChecksum("X-sdc", ja.job, bad, *ja.place(bad)[:2], rng.uniform(1500, 1900), tie=False)
    )
    flap_leaf = "leaf6"
    f0 = rng.uniform(1900, 2150)
    flaps = [(f0, f0 + rng.uniform(4, 7))]
    f1 = f0 + rng.uniform(40, 90)
    flaps.append((f1, f1 + rng.uniform(4, 7)))
    faults.append(
        F.LeafFlaps("X-leaf", flap_leaf, rng.sample(leaf_nodes[flap_leaf], 3), flaps, 6000.0)
    )

    nd[names[29]].skew_s = -140.0  # a node 140 s behind
    reset_node = rng.choice([n for n in names[16:24] if n not in (ps_node, cpu_node)])
    opts[reset_node].nic_reset_t = [rng.uniform(1000, 1200)]
    for _ in range(4):
        opts[rng.choice(names)].sbe_per_s[rng.randrange(8)] = rng.uniform(0.003, 0.03)
    resend = [(names[19], rng.uniform(800, 1100), 15.0, 60.0)]
    return Story(fleet, attempts, faults, opts, T, resend)


STORIES = {"quiet-hours": quiet_hours, "fabric-3tier": fabric_three_tier}
