"""The story of one 30-minute log per shape: jobs, faults, healthy operation.

Times are seconds from the log's start, jittered by the seed; which node, GPU,
port or leaf is hit, and several fault variants, come from the seed too.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from . import faults as F
from .model import Attempt, Fault, Healthy, Job, Label
from .shapes import Shape

DURATION_S = 1800.0
NCCL_ABORT_S = 30.0        # a dead peer or port: NCCL's IB retries run out, the job aborts


@dataclass
class Story:
    shape: Shape
    start: float
    end: float
    jobs: list[Job]
    faults: list[Fault]
    healthy: Healthy


def _gpu_scope(node: str, gpu: int) -> dict:
    return {"level": "gpu", "node": node, "gpu": gpu}


def _half_rate_port(node: str, nic: str, job: str, comm: float, t0: float, busy) -> Fault:
    """A port trained at half its rate before the log began; `job`'s collectives wait on it."""
    return F.DegradedLink(
        Label("degraded-link", "network", "nic",
              {"level": "nic", "node": node, "nic": nic, "port": 1}),
        onset=t0, nodes=frozenset([node]), jobs=frozenset([job]),
        params={"nic": nic, "rate_gbps": 200.0, "comm": comm, "busy": busy})


def _bad_gpu(hot: bool, node: str, gpu: int, job: str, t_start: float, base_c: float,
             rise_c: float, busy) -> Fault:
    """A GPU already bad when `job` starts on it: a failed thermal interface (it heats
    once loaded, then slows) or 35 % slower with nothing in telemetry."""
    if hot:
        return F.ThermalRamp(
            Label("bad-gpu-thermal", "slow_node", "thermal", _gpu_scope(node, gpu)),
            onset=t_start + 45.0, nodes=frozenset([node]), jobs=frozenset([job]),
            params={"node": node, "gpu": gpu, "ramp_s": 40.0, "max_loss": 0.3,
                    "base_c": base_c, "rise_c": rise_c, "busy": busy})
    return F.SlowGpu(
        Label("bad-gpu-silent", "slow_node", "unknown", _gpu_scope(node, gpu), False),
        onset=t_start, nodes=frozenset([node]), jobs=frozenset([job]),
        params={"node": node, "gpu": gpu, "factor": 1.35})


def _sdc(rng: random.Random, checksum: bool, node: str, gpu: int, job: str, onset: float,
         until: float, grad_from: float, first_step: int, gap_max: int) -> Fault:
    """SDC on one GPU: its parameters go wrong and stay wrong (checksum), or it corrupts
    its own gradient on five steps from about `first_step` (grad norm, unattributable)."""
    if checksum:
        return F.ChecksumSdc(
            Label("sdc", "sdc", "gpu_hardware", _gpu_scope(node, gpu)),
            onset=onset, until=until, jobs=frozenset([job]),
            params={"node": node, "gpu": gpu})
    steps, s = {}, first_step + rng.randrange(8)
    for _ in range(5):
        steps[s] = rng.uniform(6.0, 40.0)
        s += rng.randrange(4, gap_max)
    return F.GradNormSdc(
        Label("sdc-gradnorm", "sdc", "unknown", _gpu_scope(node, gpu), False),
        onset=grad_from, until=until, jobs=frozenset([job]),
        params={"node": node, "gpu": gpu, "steps": steps})


def _busy_fn(holder: list):
    """A late-bound `busy(node, t)`: the Activity is built after the story."""
    return lambda node, t: holder[0].busy(node, t)


def superpod_story(shape: Shape, seed: int, t0: float, busy_holder: list) -> Story:
    rng = random.Random(seed * 7919 + 1)
    j = lambda s=25.0: rng.uniform(-s, s)          # noqa: E731
    busy = _busy_fn(busy_holder)
    su1 = [f"su1-dgx{i:02d}" for i in range(1, 17)]
    su2 = [f"su2-dgx{i:02d}" for i in range(1, 17)]
    a_nodes = su1[:12] + su2[:4]
    b_nodes = su2[4:12]
    c_nodes = su1[12:16]
    d_nodes = su1[12:15] + [su2[12]]
    spares = [su2[13], su2[14], su2[15]]
    faults: list[Fault] = []
    T = lambda s: t0 + s                            # noqa: E731

    # --- a rail leaf down for 150 s: A and B lose a rail, abort, restart on the same nodes
    rail = seed % 8
    leaf = f"su2-rail{rail}"
    nic_k = shape.nodes[0].nics[rail]
    t_leaf = T(240 + j())
    faults.append(F.SwitchDown(
        Label("leaf-down", "network", "switch", {"level": "switch", "switch": leaf}),
        onset=t_leaf, until=t_leaf + 150.0, nodes=frozenset(su2),
        params={"ports": {(n, nic_k) for n in su2}, "fabric": "ib"}))

    # --- every compute port of one A node down (NIC power), for good
    t_nic = T(900 + j())
    nic_node = rng.choice(su1[2:10])
    faults.append(F.NodeNicsDown(
        Label("node-nics-down", "network", "nic", {"level": "node", "node": nic_node}),
        onset=t_nic, nodes=frozenset([nic_node]),
        params={"nics": set(shape.nodes[0].nics), "fabric": "ib"}))

    # A: leaf down -> abort -> restart; NIC-down -> abort -> restart on a spare
    a_nodes2 = [spares[0] if n == nic_node else n for n in a_nodes]
    a_start = T(0.0)
    a_att = [Attempt(a_start, t_leaf + NCCL_ABORT_S, list(a_nodes), 1, hang_from=t_leaf),
             Attempt(t_leaf + 240.0, t_nic + NCCL_ABORT_S, list(a_nodes), 0, hang_from=t_nic),
             Attempt(t_nic + 270.0, T(DURATION_S), a_nodes2, 0)]
    job_a = Job("pt-llama-70b", "research", 8, tp=8, pp=2, fields=True, step_s=6.2,
                compute_frac=0.78, data_frac=0.01, noise_sd=0.004, util=0.95, attempts=a_att,
                checksum_every=1, checkpoint_every=50, checkpoint_s=14.0, eval_every=80,
                eval_extra=0.5, stage_skew=(1.0, 1.05))

    # --- two at once: a DBE in B and (even seed) a thermal ramp in A / (odd) a GSP error in B
    deg_node = rng.choice(b_nodes[:4])
    deg_nic = rng.choice([n for n in shape.nodes[0].nics if n != nic_k])
    t_two = T(1320 + j())
    dbe_node = rng.choice([n for n in b_nodes if n != deg_node])
    dbe_gpu = rng.randrange(8)
    faults.append(F.GpuXidFault(
        Label("dbe", "hardware", "gpu_memory", _gpu_scope(dbe_node, dbe_gpu)),
        onset=t_two, nodes=frozenset([dbe_node]),
        params={"node": dbe_node, "gpu": dbe_gpu, "code": 48, "dbe": True, "remap": True,
                "recovery": "gpu_reset", "then": [(0.35, 63)]}))
    b_out = {dbe_node: spares[1]}
    th_node = None
    if seed % 2 == 0:
        th_node = rng.choice([n for n in a_nodes2 if n != nic_node])
        th_gpu = rng.randrange(8)
        faults.append(F.ThermalRamp(
            Label("thermal", "slow_node", "thermal", _gpu_scope(th_node, th_gpu)),
            onset=t_two + 0.8, nodes=frozenset([th_node]), jobs=frozenset([job_a.name]),
            params={"node": th_node, "gpu": th_gpu, "ramp_s": 150.0, "max_loss": 0.26,
                    "base_c": 66.0, "rise_c": 27.0,
                    "busy": busy}))
    else:
        gsp_node = rng.choice([n for n in b_nodes if n not in (dbe_node, deg_node)])
        gsp_gpu = rng.randrange(8)
        faults.append(F.GpuXidFault(
            Label("gsp", "hardware", "gpu_hardware", _gpu_scope(gsp_node, gsp_gpu)),
            onset=t_two + 0.6, nodes=frozenset([gsp_node]),
            params={"node": gsp_node, "gpu": gsp_gpu, "code": 119, "recovery": "gpu_reset",
                    "gone": True}))
        b_out[gsp_node] = spares[2]
    b_nodes2 = [b_out.get(n, n) for n in b_nodes]
    b_att = [Attempt(T(0.0), t_leaf + NCCL_ABORT_S, list(b_nodes), 1, hang_from=t_leaf),
             Attempt(t_leaf + 240.0, t_two + 2.0, list(b_nodes), 0),
             Attempt(t_two + 200.0, T(DURATION_S), b_nodes2, 0)]
    job_b = Job("sft-8b", "product", 8, tp=4, pp=1, fields=True, step_s=1.45,
                compute_frac=0.62, data_frac=0.04, noise_sd=0.012, util=0.85, attempts=b_att,
                checksum_every=20, checkpoint_every=200, checkpoint_s=3.0, seqlen_sd=0.05,
                loader_stall_p=0.0015)

    # --- a port of B trained at half width before the log began (after a reboot)
    faults.append(_half_rate_port(deg_node, deg_nic, job_b.name, 1.18, T(0.0), busy))

    # --- SDC in A's second attempt (even seed//2: checksum; odd: grad-norm, unattributable)
    t_sdc = T(640 + j())
    sdc_node = rng.choice([n for n in su1[:12] if n != nic_node])
    sdc_gpu = rng.randrange(8)
    faults.append(_sdc(rng, (seed // 2) % 2 == 0, sdc_node, sdc_gpu, job_a.name, t_sdc,
                       t_nic, t_leaf + 240.0, 14, 9))

    # --- an intermittent port on A's third attempt: three flaps with symbol-error bursts
    flap_node = rng.choice([n for n in a_nodes2 if n not in (nic_node,)])
    flap_nic = rng.choice(shape.nodes[0].nics)
    first_flap = t_nic + 270.0 + 90.0 + j(10)
    flaps = [(first_flap, rng.uniform(3.0, 6.0)), (first_flap + 150.0 + j(10), 4.0),
             (first_flap + 330.0 + j(10), rng.uniform(3.0, 6.0))]
    faults.append(F.FlappingPort(
        Label("flapping-port", "network", "nic",
              {"level": "nic", "node": flap_node, "nic": flap_nic, "port": 1}),
        onset=flaps[0][0] - 25.0, nodes=frozenset([flap_node]), jobs=frozenset([job_a.name]),
        params={"nic": flap_nic, "flaps": flaps, "fabric": "ib"}))

    # --- one A GPU 12 % slower, nothing in telemetry says why (until the end)
    silent_node = rng.choice([n for n in a_nodes2 if n not in (flap_node, th_node, nic_node)])
    silent_gpu = rng.randrange(8)
    faults.append(F.SlowGpu(
        Label("silent-slow", "slow_node", "unknown", _gpu_scope(silent_node, silent_gpu), False),
        onset=T(1500 + j()), nodes=frozenset([silent_node]), jobs=frozenset([job_a.name]),
        params={"node": silent_node, "gpu": silent_gpu, "factor": 1.12}))

    # C: an application error (XID 13 on one GPU), NCCL watchdog after 120 s, XID 45s
    t_app = T(540 + j(10))
    c_att = [Attempt(T(0.0), t_app + 120.0, list(c_nodes), 1, hang_from=t_app)]
    job_c = Job("eval-sweep", "research", 8, tp=1, pp=1, fields=False, step_s=0.95,
                compute_frac=0.7, data_frac=0.05, noise_sd=0.015, util=0.7, attempts=c_att,
                checksum_every=10)
    err_rank = rng.randrange(32)
    app_xids = [(t_app, c_nodes[err_rank // 8], err_rank % 8, 13)]
    for r in range(32):
        if r != err_rank:
            app_xids.append((t_app + 120.0 + rng.uniform(0.0, 2.0), c_nodes[r // 8], r % 8, 45))

    # D starts on three of C's nodes and a spare with a GPU already bad
    t_d = T(780 + j(10))
    d_att = [Attempt(t_d, T(DURATION_S), list(d_nodes), 1)]
    job_d = Job("rl-ppo", "product", 8, tp=8, pp=1, fields=True, step_s=2.6,
                compute_frac=0.55, data_frac=0.15, noise_sd=0.01, util=0.8, attempts=d_att,
                checksum_every=5)
    bad_gpu = rng.randrange(8)
    faults.append(_bad_gpu(seed % 2 == 1, su2[12], bad_gpu, job_d.name, t_d, 66.0, 27.0, busy))

    healthy = Healthy(
        power_cap=(T(660 + j(10)), T(840 + j(10)), 560.0),
        congestion=[(T(960), T(1140), job_b.name, frozenset(b_nodes), 1.1)],
        loader_slow=[(T(1020), T(1200), job_b.name, rng.choice(b_nodes[4:]), 0.25)],
        telemetry_pause=[(T(700), T(800), rng.choice(su1[:12]))],
        counter_clear=T(1100 + j(10)),
        app_xids=app_xids,
        global_grad_spike=[(job_a.name, 77)],
    )
    return Story(shape, t0, T(DURATION_S), [job_a, job_b, job_c, job_d], faults, healthy)


def nvl72_story(shape: Shape, seed: int, t0: float, busy_holder: list) -> Story:
    rng = random.Random(seed * 104729 + 3)
    j = lambda s=25.0: rng.uniform(-s, s)          # noqa: E731
    busy = _busy_fn(busy_holder)
    T = lambda s: t0 + s                            # noqa: E731
    r1 = [f"nvl1-c{i:02d}" for i in range(1, 19)]
    r2 = [f"nvl2-c{i:02d}" for i in range(1, 19)]
    r3 = [f"nvl3-c{i:02d}" for i in range(1, 19)]
    a_nodes = r1[:16] + r2[:16]
    faults: list[Fault] = []

    # --- leaf1-2 (trays 10-18 of rack 1) down for 120 s: A aborts, restarts on the same nodes
    t_leaf = T(840 + j())
    leaf_nodes = r1[9:18]
    faults.append(F.SwitchDown(
        Label("leaf-down", "network", "switch", {"level": "switch", "switch": "leaf1-2"}),
        onset=t_leaf, until=t_leaf + 120.0, nodes=frozenset(leaf_nodes),
        params={"ports": {(n, nic) for n in leaf_nodes for nic in shape.nodes[0].nics},
                "fabric": "roce"}))
    # --- every port of one A tray down (NIC power) near the end: A aborts, no restart in the log
    t_nic = T(1560 + j(15))
    nic_node = rng.choice(r1[:9] + r2[:16])
    faults.append(F.NodeNicsDown(
        Label("node-nics-down", "network", "nic", {"level": "node", "node": nic_node}),
        onset=t_nic, nodes=frozenset([nic_node]),
        params={"nics": set(shape.nodes[0].nics), "fabric": "roce"}))
    a_att = [Attempt(T(0.0), t_leaf + NCCL_ABORT_S, list(a_nodes), 1, hang_from=t_leaf),
             Attempt(t_leaf + 240.0, t_nic + NCCL_ABORT_S, list(a_nodes), 0, hang_from=t_nic)]
    job_a = Job("pt-moe-400b", "research", 4, tp=8, pp=2, fields=True, step_s=4.8,
                compute_frac=0.74, data_frac=0.01, noise_sd=0.005, util=0.93, attempts=a_att,
                checksum_every=5, checkpoint_every=60, checkpoint_s=10.0, eval_every=100,
                eval_extra=0.4, stage_skew=(1.0, 1.04))

    # --- a port of A at half rate since before the log
    deg_node = rng.choice([n for n in r2[:16] if n != nic_node])
    deg_nic = rng.choice(shape.nodes[0].nics)
    faults.append(_half_rate_port(deg_node, deg_nic, job_a.name, 1.12, T(0.0), busy))

    # --- NVLink: (even seed) an NVSwitch tray of rack 2 fails; (odd) one GPU's links
    t_nv = T(300 + j())
    if seed % 2 == 0:
        gpus = {(n, g) for n in r2[:16] for g in range(4)}
        xg = rng.sample(sorted(gpus), 9)
        faults.append(F.NvlinkErrors(
            Label("nvswitch", "hardware", "nvlink", {"level": "domain", "domain": "nvl2"}),
            onset=t_nv, nodes=frozenset(r2[:16]), jobs=frozenset([job_a.name]),
            params={"gpus": gpus, "err_until": t_nv + 90.0, "rate": 40.0,
                    "xid_gpus": [(rng.uniform(0.0, 8.0), n, g) for n, g in xg],
                    "burst_comm": 1.6, "comm": 1.08}))
    else:
        n, g = rng.choice(r1[:16]), rng.randrange(4)
        faults.append(F.NvlinkErrors(
            Label("nvlink-gpu", "hardware", "nvlink", _gpu_scope(n, g)),
            onset=t_nv, nodes=frozenset([n]), jobs=frozenset([job_a.name]),
            params={"gpus": {(n, g)}, "err_until": t_nv + 120.0, "rate": 25.0,
                    "xid_gpus": [(0.0, n, g), (47.0, n, g)], "burst_comm": 1.0, "comm": 1.0,
                    "slow_gpu_factor": 1.25}))

    # --- SDC in A ((seed // 2) even: checksum mismatch; odd: grad-norm, unattributable)
    t_sdc = T(480 + j())
    sdc_node, sdc_gpu = rng.choice(r1[:9]), rng.randrange(4)
    faults.append(_sdc(rng, (seed // 2) % 2 == 0, sdc_node, sdc_gpu, job_a.name, t_sdc,
                       t_leaf, T(0.0), 100, 10))

    # --- intermittent power brake on an A tray (PSU shelf), three bursts
    brk_node = rng.choice([n for n in r2[:16] if n not in (nic_node, deg_node)])
    b0 = t_leaf + 240.0 + 90.0 + j(10)
    bursts = [(b0, 20.0), (b0 + 140.0 + j(10), 12.0), (b0 + 290.0 + j(10), 30.0)]
    faults.append(F.PowerBrakeBursts(
        Label("power-brake", "slow_node", "power", {"level": "node", "node": brk_node}),
        onset=b0, nodes=frozenset([brk_node]), jobs=frozenset([job_a.name]),
        params={"node": brk_node, "bursts": bursts}))

    # B: rack 3 SFT, ends cleanly; C starts later on 8 trays including a spare with a bad GPU
    b_nodes = r3[:4] + r3[5:12]
    t_b_end = T(660 + j(10))
    job_b = Job("sft-rack3", "product", 4, tp=4, pp=1, fields=True, step_s=1.2,
                compute_frac=0.6, data_frac=0.05, noise_sd=0.012, util=0.85,
                attempts=[Attempt(T(0.0), t_b_end, list(b_nodes), 1)], checksum_every=25,
                seqlen_sd=0.06, loader_stall_p=0.002)
    t_c = T(760 + j(10))
    c_nodes = r3[:8]
    t_two = T(1380 + j())
    x79_node = rng.choice([n for n in c_nodes if n != r3[4]])
    x79_gpu = rng.randrange(4)
    c_nodes2 = [r3[16] if n == x79_node else n for n in c_nodes]
    job_c = Job("dpo-eval", "research", 4, tp=1, pp=1, fields=False, step_s=0.8,
                compute_frac=0.68, data_frac=0.06, noise_sd=0.015, util=0.75,
                attempts=[Attempt(t_c, t_two + NCCL_ABORT_S, list(c_nodes), 1,
                                  hang_from=t_two),
                          Attempt(t_two + 200.0, T(DURATION_S), c_nodes2, 1)],
                checksum_every=10)
    bad_gpu = rng.randrange(4)
    faults.append(_bad_gpu(seed % 2 == 0, r3[4], bad_gpu, job_c.name, t_c, 58.0, 36.0, busy))

    # E: a user's debug job; an application error (XID 31), watchdog, XID 45s; the user
    # starts it again on the same trays
    e_nodes = r3[12:16]
    t_app = T(420 + j(10))
    t_e2 = t_app + 180.0
    # --- two at once: XID 79 in C and a contained ECC error (XID 94) in E's second run
    x94_node, x94_gpu = rng.choice(e_nodes), rng.randrange(4)
    job_e = Job("debug-tp", "product", 4, tp=4, pp=1, fields=True, step_s=2.0,
                compute_frac=0.6, data_frac=0.05, noise_sd=0.012, util=0.8,
                attempts=[Attempt(T(0.0), t_app + 120.0, list(e_nodes), 1, hang_from=t_app),
                          Attempt(t_e2, t_two + 2.0, list(e_nodes), 1),
                          Attempt(t_two + 150.0, T(DURATION_S), list(e_nodes), 1)],
                checksum_every=10)
    faults.append(F.GpuXidFault(
        Label("xid79", "hardware", "gpu_hardware", _gpu_scope(x79_node, x79_gpu)),
        onset=t_two, nodes=frozenset([x79_node]),
        params={"node": x79_node, "gpu": x79_gpu, "code": 79, "gone": True}))
    faults.append(F.GpuXidFault(
        Label("xid94", "hardware", "gpu_memory", _gpu_scope(x94_node, x94_gpu)),
        onset=t_two + 0.7, until=t_two + 150.0, nodes=frozenset([x94_node]),
        params={"node": x94_node, "gpu": x94_gpu, "code": 94, "remap": True}))
    # --- a C tray 12 % slower on all four GPUs, nothing says why
    sl_node = rng.choice([n for n in c_nodes2 if n not in (r3[4], x79_node)])
    faults.append(F.SlowGpu(
        Label("silent-slow-node", "slow_node", "unknown", {"level": "node", "node": sl_node},
              False),
        onset=T(1620 + j(15)), nodes=frozenset([sl_node]), jobs=frozenset([job_c.name]),
        params={"node": sl_node, "gpu": None, "factor": 1.12}))

    e_ranks = 16
    err_rank = rng.randrange(e_ranks)
    app_xids = [(t_app, e_nodes[err_rank // 4], err_rank % 4, 31)]
    for r in range(e_ranks):
        if r != err_rank:
            app_xids.append((t_app + 120.0 + rng.uniform(0.0, 2.0), e_nodes[r // 4], r % 4, 45))

    healthy = Healthy(
        power_cap=(T(1000 + j(10)), T(1200 + j(10)), 1000.0),
        congestion=[(T(600), T(780), job_a.name, frozenset(r1[:16]), 1.08)],
        loader_slow=[(T(300), T(480), job_b.name, rng.choice(b_nodes), 0.3)],
        telemetry_pause=[(T(1000), T(1090), rng.choice(r2[:16]))],
        app_xids=app_xids,
        global_grad_spike=[(job_a.name, 64)],
    )
    return Story(shape, t0, T(DURATION_S), [job_a, job_b, job_c, job_e], faults, healthy)


STORIES = {"superpod": superpod_story, "nvl72": nvl72_story}
