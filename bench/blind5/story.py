"""The two blind5 stories; every choice comes from the seed.

`ops` (25 min, 20 DGX B200, faultline topology): operators at work -- a rolling driver
upgrade, an ECC mode toggle, a job-wide power limit, a planned leaf firmware upgrade --
beside an elastic job, a dying fan, and a NIC fault and a DBE under one leaf at once.
`workloads` (25 min, 16 HGX H100 on RoCE, Slurm topology.conf): long-context, RL and
2-node jobs, a flaky transceiver, a power limit set on the wrong node, a loss-only SDC,
two NICs of one leaf failing at once.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

from bench.blind5.emit import NicEvent, Xid
from bench.blind5.fleet import B200, H100, Node, faultline_topology, make_node, slurm_topology
from bench.blind5.jobs import Attempt, Job

MINUTES = 25


@dataclass
class Fault:
    """A labelled fault: DESIGN's label fields; the span comes from the records it changed."""

    fid: str
    kind: str
    cause: str
    scope: dict
    attributable: bool = True
    what: str = ""


@dataclass
class Story:
    name: str
    t0: float
    seconds: int
    nodes: dict[str, Node]
    jobs: list[Job]
    xids: list[Xid] = field(default_factory=list)
    nic_events: list[NicEvent] = field(default_factory=list)
    faults: list[Fault] = field(default_factory=list)
    topology: dict = field(default_factory=dict)
    roce: bool = False
    # (node names, t0, t1): their node-keyed partition held back and delivered at t1
    late: list[tuple[tuple[str, ...], float, float]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def epoch(seed: int) -> float:
    return 1_798_000_000.0 + seed * 86_400.0 + 3_600.0 * (seed % 7)


def _nics(k: int = 8) -> list[str]:
    return [f"mlx5_{i}" for i in range(k)]


def ops(seed: int, minutes: int = MINUTES) -> Story:
    rng = random.Random(f"blind5-ops-{seed}")
    t0 = epoch(seed)
    seconds = minutes * 60
    leaves = [f"tor{i}" for i in range(1, 6)]
    nodes: dict[str, Node] = {}
    for i in range(1, 21):
        name = f"dgx-b200-{i:02d}"
        leaf = leaves[(i - 1) // 4]
        inlet = rng.uniform(20.0, 24.0) + 0.6 * ((i - 1) % 4)
        fast = (i + seed) % 3 == 0
        nodes[name] = make_node(rng, name, B200, leaf, _nics(), inlet,
                                1.0 if fast else 30.0, 5.0 if fast else 30.0,
                                10.0 if fast else 30.0, "nvml-1s" if fast else "dcgm-exporter")
    n = [None] + list(nodes.values())  # 1-based
    s = Story("ops", t0, seconds, nodes, [])
    s.topology = {"format": "faultline",
                  "text": faultline_topology(f"b200-ops-{seed}", list(nodes.values()), leaves,
                                             ["spine1", "spine2"], 4)}
    # --- job A: TP8 x PP2 x DP4 on nodes 1-8; a DBE kills it; it restarts on the spare 13.
    t_pair = t0 + rng.uniform(0.52, 0.56) * seconds
    dbe_gpu = rng.randrange(8)
    restart = t_pair + rng.uniform(170, 240)
    a_nodes = [n[i].name for i in range(1, 9)]
    a2_nodes = [x for x in a_nodes if x != n[7].name] + [n[13].name]
    a2_nodes = a2_nodes[:6] + [n[13].name, n[8].name]
    job_a = Job("pretrain-b200-70b", tp=8, pp=2, base_ms=2100, comm_ms=250, other_ms=40,
                attempts=[Attempt(t0 - 600, t_pair + 0.5, a_nodes, 4801 + 37 * seed),
                          Attempt(restart, t0 + seconds + 60, a2_nodes, -1)],
                stage_mult=(1.0, 1.06), checksum_every=1, ckpt_every=100, ckpt_ms=15000)
    s.xids += [Xid(n[7].name, dbe_gpu, t_pair, 48, "dbe", dbe=1, recovery="gpu_reset"),
               Xid(n[7].name, dbe_gpu, t_pair + rng.uniform(0.5, 2.0), 63, "dbe",
                   remap_pending=True)]
    s.faults.append(Fault("dbe", "hardware", "gpu_memory",
                          {"level": "gpu", "node": n[7].name, "gpu": dbe_gpu},
                          what="XID 48 + 63 (DBE, row remap pending) kills job A"))
    # ... and, under the same leaf at the same moment, a dirty connector on node 5, 6 or 8.
    nic_node = n[rng.choice([5, 6, 8])]
    nic = rng.choice(nic_node.nics)
    t_nic = t_pair + rng.uniform(-6, 6)
    s.nic_events.append(NicEvent(nic_node.name, nic, t_nic, t_nic + rng.uniform(200, 300),
                                 "pair-nic", rates=(("symbol_errors", rng.uniform(2, 8)),
                                                    ("rcv_errors", rng.uniform(0.5, 2)))))
    s.faults.append(Fault("pair-nic", "network", "nic",
                          {"level": "nic", "node": nic_node.name, "nic": nic, "port": 1},
                          what="port errors, same leaf and seconds as the DBE"))
    # A fan module of a node of A fails: two GPUs in its airflow warm, one past 88 C.
    fan_node = n[rng.choice([1, 2, 3, 4])]
    g = rng.choice([0, 2, 4, 6])
    hot = g + 1
    base_c = fan_node.inlet_c + 8 + B200.c_per_w * B200.tdp_w
    dmax = (B200.slow_c - base_c) + rng.uniform(5, 9)
    t_fan = t0 + rng.uniform(100, 220)
    ramp = rng.uniform(420, 600)
    fan_node.temp_add[hot] = [(t_fan, t_fan + ramp, dmax, "fan")]
    fan_node.temp_add[g] = [(t_fan, t_fan + ramp, 0.4 * dmax, "")]
    s.faults.append(Fault("fan", "slow_node", "thermal",
                          {"level": "gpu", "node": fan_node.name, "gpu": hot},
                          what=f"fan: +{dmax:.0f} C over {ramp:.0f} s, SW thermal past 88 C"))
    # --- job B: elastic, TP8 on 2 nodes, grows to 4; later a job-wide power limit (benign).
    t_grow = t0 + rng.uniform(380, 480)
    b_small = [n[9].name, n[10].name]
    b_big = [n[i].name for i in range(9, 13)]
    job_b = Job("sft-elastic-b", tp=8, pp=1, base_ms=1500, comm_ms=300, other_ms=30,
                attempts=[Attempt(t0 - 300, t_grow, b_small, 1201 + seed),
                          Attempt(t_grow + rng.uniform(40, 70), t0 + seconds + 60, b_big, -1)],
                checksum_every=10, ckpt_every=50, ckpt_ms=8000)
    t_pl = t0 + rng.uniform(900, 1000)
    t_pl_end = t_pl + rng.uniform(300, 400)
    for x in b_big:
        nodes[x].power_limits.append((t_pl, t_pl_end, 800.0, None))
    s.notes.append("job B: `nvidia-smi -pl 800` on all its GPUs (facility power budget)")
    # One B node's clock is behind (its chrony lost its source).
    n[11].clock_off_s = -rng.uniform(60, 200)
    # --- job C: a 2-node eval job on nodes 14-15, healthy.
    job_c = Job("eval-c", tp=8, pp=1, base_ms=900, comm_ms=150, other_ms=60,
                attempts=[Attempt(t0 - 100, t0 + seconds + 60, [n[14].name, n[15].name], 1)],
                rank_fields=True, checksum_every=0)
    s.jobs = [job_a, job_b, job_c]
    # --- rolling driver upgrade of tor5's nodes (17-20, drained), one at a time.
    t = t0 + rng.uniform(100, 200)
    ecc_off = n[rng.choice([17, 18, 19, 20])]
    for i in (17, 18, 19, 20):
        d = rng.uniform(120, 200)
        n[i].down.append((t, t + d))
        if n[i] is ecc_off:
            n[i].ecc_off_from = t + d
        t += d + rng.uniform(15, 40)
    s.notes.append(f"rolling driver upgrade of nodes 17-20; {ecc_off.name} back with ECC off")
    # --- then tor5's firmware upgrade: every port of its nodes down, twice (planned; the
    # contract has no maintenance window, so it is labelled as the switch's fault).
    m0 = t + rng.uniform(40, 90)
    m1 = m0 + rng.uniform(40, 80)
    m2 = m1 + rng.uniform(60, 120)
    m3 = m2 + rng.uniform(5, 15)
    for i in (17, 18, 19, 20):
        for x in n[i].nics:
            s.nic_events.append(NicEvent(n[i].name, x, m0, m1, "maint", down=True))
            s.nic_events.append(NicEvent(n[i].name, x, m2, m3, "maint", down=True))
    s.faults.append(Fault("maint", "network", "switch", {"level": "switch", "switch": "tor5"},
                          what="planned leaf firmware upgrade: all its links down twice"))
    # --- a node-keyed partition (nodes 2 and 10) delivered 2 minutes late in a burst.
    tl = t0 + rng.uniform(1000, 1100)
    s.late.append(((n[2].name, n[10].name), tl, tl + 120))
    return s


def workloads(seed: int, minutes: int = MINUTES) -> Story:
    rng = random.Random(f"blind5-workloads-{seed}")
    t0 = epoch(seed) + 7200
    seconds = minutes * 60
    leaves = [f"sw-leaf{i}" for i in range(1, 5)]
    nodes: dict[str, Node] = {}
    for i in range(1, 17):
        name = f"h100n{i:03d}"
        inlet = rng.uniform(19.0, 25.0)
        nodes[name] = make_node(rng, name, H100, leaves[(i - 1) // 4], _nics(), inlet,
                                10.0, 10.0, 10.0, "dcgm-exporter")
    n = [None] + list(nodes.values())
    s = Story("workloads", t0, seconds, nodes, [], roce=True)
    s.topology = {"format": "slurm",
                  "text": slurm_topology(list(nodes.values()), leaves, "sw-spine1")}
    end = t0 + seconds + 60
    # --- L: long-context, TP8 x DP4 on 1-4; one GPU silently 25-35 % slower from mid-log.
    job_l = Job("longctx-128k", tp=8, pp=1, base_ms=6000, comm_ms=600, other_ms=100,
                attempts=[Attempt(t0 - 900, end, [n[i].name for i in range(1, 5)], 300 + seed)],
                workload="longctx", checksum_every=5, ckpt_every=40, ckpt_ms=20000)
    slow_node = n[rng.choice([1, 2, 3, 4])]
    slow_gpu = rng.randrange(8)
    ts = t0 + rng.uniform(360, 540)
    slow_node.slow[slow_gpu] = [(ts, end, rng.uniform(1.25, 1.35), "lc-slow")]
    s.faults.append(Fault("lc-slow", "slow_node", "unknown",
                          {"level": "gpu", "node": slow_node.name, "gpu": slow_gpu},
                          attributable=False,
                          what="a GPU 25-35 % slower, nothing in telemetry, 2-5x step spread"))
    # --- R: RL, TP4 x DP4 on 5-6, bimodal steps; a flaky transceiver on node 5.
    job_r = Job("rl-ppo-r", tp=4, pp=1, base_ms=2500, comm_ms=400, other_ms=60,
                attempts=[Attempt(t0 - 400, end, [n[5].name, n[6].name], 7000 + seed)],
                workload="rl", checksum_every=0)
    xcvr = rng.choice(n[5].nics)
    t = t0 + rng.uniform(60, 360)
    first = True
    while t < t0 + seconds:
        d = rng.uniform(10, 40)
        rates = (("symbol_errors", rng.uniform(20, 80)), ("rcv_errors", rng.uniform(2, 10)),
                 ("packet_seq_err", rng.uniform(0.5, 3)))
        s.nic_events.append(NicEvent(n[5].name, xcvr, t, t + d, "xcvr", rates=rates))
        if first or rng.random() < 0.3:
            s.nic_events.append(NicEvent(n[5].name, xcvr, t + d / 2, t + d / 2 + rng.uniform(2, 4),
                                         "xcvr", down=True))
            first = False
        job_r.comm_windows.append((t, t + d, 1.3, "xcvr"))
        t += rng.uniform(480, 720)
    s.faults.append(Fault("xcvr", "network", "nic",
                          {"level": "nic", "node": n[5].name, "nic": xcvr, "port": 1},
                          what="flaky optics: error bursts every 8-12 min, a flap in some"))
    # --- P: a 2-node job (TP8 x DP2); `nvidia-smi -pl` run on the wrong node.
    job_p = Job("ft-2node-p", tp=8, pp=1, base_ms=1400, comm_ms=200, other_ms=20,
                attempts=[Attempt(t0 - 200, end, [n[7].name, n[8].name], 2500 + seed)],
                checksum_every=1, ckpt_every=200, ckpt_ms=3000)
    pl_node = n[rng.choice([7, 8])]
    tp0 = t0 + rng.uniform(350, 500)
    tp1 = tp0 + rng.uniform(420, 600)
    lim = rng.uniform(450, 550)
    pl_node.power_limits.append((tp0, tp1, lim, "pl-wrong"))
    s.faults.append(Fault("pl-wrong", "slow_node", "power", {"level": "node", "node": pl_node.name},
                          what=f"power limit {lim:.0f} W set on one node of a 2-node job"))
    # --- S: SFT TP8 x DP4 on 9-12; one replica's loss spikes again and again (SDC).
    job_s = Job("sft-s", tp=8, pp=1, base_ms=1250, comm_ms=220, other_ms=30,
                attempts=[Attempt(t0 - 500, end, [n[i].name for i in range(9, 13)], 900 + seed)],
                checksum_every=10, ckpt_every=200, ckpt_ms=6000, loss_every_rank=True)
    step_rate = 1 / 1.55
    s_first = 900 + seed + int((500 + rng.uniform(400, 700)) * step_rate)
    bad_dp = rng.randrange(4)
    st = s_first
    for _ in range(rng.randint(6, 9)):
        job_s.loss_spikes.append((st, bad_dp, rng.uniform(1.6, 4.0), "loss-sdc"))
        st += rng.randint(15, 40)
    s.faults.append(Fault("loss-sdc", "sdc", "unknown",
                          {"level": "replica", "job": "sft-s", "dp_rank": bad_dp},
                          attributable=False,
                          what="one replica's loss 1.6-4x on 6-9 steps, checksums agree"))
    # Healthy twins: two one-step data outliers, any replica, far from the SDC's steps.
    # (steps of ~1.55 s from the attempt's start 500 s before the log: log times ~120 s and
    # ~1300 s, the SDC's spikes being at 400-1150 s).
    for log_s in (120, 1300):
        step = 900 + seed + int((500 + log_s) / 1.55)
        job_s.loss_spikes.append((step, rng.randrange(4), rng.uniform(1.5, 2.5), None))
    n[12].clock_off_s = -rng.uniform(60, 200)
    # --- T: pure DP (no rank fields) on 13-16; two NICs of leaf4's nodes fail together.
    job_t = Job("dp-vision-t", tp=1, pp=1, base_ms=650, comm_ms=120, other_ms=15,
                attempts=[Attempt(t0 - 300, end, [n[i].name for i in range(13, 17)], 40000 + seed)],
                rank_fields=False, checksum_every=20)
    pair = rng.sample([13, 14, 15, 16], 2)
    tw = t0 + rng.uniform(600, 900)
    for k, i in enumerate(pair):
        x = n[i].nics[(rng.randrange(4) + 4 * k) % 8]
        a = tw + rng.uniform(0, 6)
        b = a + rng.uniform(180, 300)
        fid = f"twin{k}"
        s.nic_events.append(NicEvent(n[i].name, x, a, b, fid,
                                     rates=(("symbol_errors", rng.uniform(3, 15)),
                                            ("rcv_errors", rng.uniform(1, 4)),
                                            ("packet_seq_err", rng.uniform(0.5, 2)))))
        job_t.comm_windows.append((a, b, 1.15, fid))
        s.faults.append(Fault(fid, "network", "nic",
                              {"level": "nic", "node": n[i].name, "nic": x, "port": 1},
                              what="two cables of one leaf (2 of its 4 nodes) erring at once"))
    s.jobs = [job_l, job_r, job_p, job_s, job_t]
    return s


STORIES = {"ops": ops, "workloads": workloads}
