"""What happens in one blind log: which jobs run where, which faults strike when.

The plan is pure data, drawn from the seed. Fault variants rotate with the seed
so that a handful of seeds covers every variant; times are fractions of the
log's duration so that short logs (tests) keep the same story, compressed.
Numbers are my own choices from operators' practice (DESIGN, REFERENCE), not
from faultline's simulator or thresholds, which I have not read.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from bench.blind.cluster import Shape

# label (kind, cause, attributable) of each fault variant the generator knows
FAULT_LABELS = {
    "thermal": ("slow_node", "thermal", True),
    "power_brake": ("slow_node", "power", True),
    "silent_slow": ("slow_node", "unknown", False),
    "slow_from_start": ("slow_node", "unknown", False),
    "slow_from_start_hot": ("slow_node", "thermal", True),
    "dbe": ("hardware", "gpu_memory", True),
    "xid95": ("hardware", "gpu_memory", True),
    "xid79": ("hardware", "gpu_hardware", True),
    "row_remap": ("hardware", "gpu_memory", True),
    "nvlink": ("hardware", "nvlink", True),
    "nic_ber": ("network", "nic", True),
    "nic_flap": ("network", "nic", True),
    "leaf_down": ("network", "switch", True),
    "sdc_checksum": ("sdc", "gpu_hardware", True),
    "sdc_gradnorm": ("sdc", "unknown", False),
}

# what each slot of the story rotates through, one step per seed
SLOT_A1 = ("thermal", "power_brake", "silent_slow")
SLOT_A2 = ("sdc_checksum", "sdc_gradnorm")
SLOT_A3 = ("dbe", "xid95", "xid79", "row_remap")
SLOT_B1 = ("nic_ber", "nic_flap", "leaf_down")
SLOT_B2 = ("nvlink", "nvlink", "silent_slow")
SLOT_B3 = ("sdc_gradnorm", "thermal", "power_brake", "silent_slow")
SLOT_D1 = ("slow_from_start", "slow_from_start_hot")
APP_XIDS = (13, 31, 43)


@dataclass(eq=False)
class Fault:
    """One labelled fault; ``lo``/``hi`` collect the event times of the records it changes."""

    fid: str
    what: str
    t0: float  # physical start
    t1: float  # physical end (faults that persist: the log's end)
    node: str
    gpu: int | None = None
    nic: str | None = None
    job: str | None = None
    rank: int | None = None
    switch: str | None = None
    params: dict = field(default_factory=dict)
    lo: float = math.inf
    hi: float = -math.inf

    def touch(self, ts: float) -> None:
        if ts < self.lo:
            self.lo = ts
        if ts > self.hi:
            self.hi = ts

    def active(self, t: float) -> bool:
        return self.t0 <= t < self.t1

    def label(self) -> dict:
        kind, cause, attributable = FAULT_LABELS[self.what]
        if self.what == "leaf_down":
            scope = {"level": "switch", "switch": self.switch}
        elif self.what in ("nic_ber", "nic_flap"):
            scope = {"level": "nic", "node": self.node, "nic": self.nic, "port": 1}
        elif self.what == "power_brake":
            scope = {"level": "node", "node": self.node}
        else:
            scope = {"level": "gpu", "node": self.node, "gpu": self.gpu}
        if self.lo > self.hi:
            raise ValueError(f"fault {self.fid} ({self.what}) changed no record")
        return {
            "fault_id": self.fid,
            "kind": kind,
            "cause": cause,
            "scope": scope,
            "start_ts": round(self.lo, 6),
            "end_ts": round(self.hi, 6),
            "attributable": attributable,
        }


@dataclass
class Crash:
    """A job attempt ends at ``ts``: killed (``hang`` False) or hung in NCCL until the log ends."""

    ts: float
    hang: bool
    restart_ts: float | None  # when the next attempt starts (model load begins)
    replace: dict[str, str] = field(default_factory=dict)  # bad node -> spare


@dataclass
class Job:
    name: str
    tenant: str
    nodes: list[str]
    tp: int
    pp: int
    dp: int
    step_s: float
    comm_frac: float
    intensity: float  # power demand relative to TDP
    parallel_fields: bool
    split_fields: bool
    checksum_every: int
    grad: bool
    ckpt_every: int
    ckpt_s: float
    stage_extra: tuple[float, ...]
    seqlen_sigma: float
    first_step: int
    start: float
    end: float
    bytes_per_step: float  # per fabric NIC
    end_xid: int | None = None  # the application crash that ends it, if any
    loader_stalls: list[float] = field(default_factory=list)
    crashes: list[Crash] = field(default_factory=list)
    data_spikes: list[float] = field(default_factory=list)  # one-rank grad_norm blips (data)

    @property
    def ranks(self) -> int:
        return self.tp * self.pp * self.dp


@dataclass
class Plan:
    shape: Shape
    seed: int
    t0: float
    duration_s: float
    interval_s: float
    jobs: list[Job]
    faults: list[Fault]
    maintenance: list[tuple[str, float, float]]  # node, reboot start, back up
    spares: list[str]


def build_plan(shape: Shape, seed: int, duration_s: float, interval_s: float) -> Plan:
    rng = np.random.default_rng([seed, 0xB11D])
    t0 = 1_795_000_000.0 + 86_400.0 * seed + float(rng.uniform(0, 3600))
    D = duration_s
    k = seed + (0 if shape.gpus_per_node == 8 else 1)
    b1 = SLOT_B1[k % len(SLOT_B1)]
    nodes = list(shape.nodes)
    n = len(nodes)
    gpn = shape.gpus_per_node
    if gpn == 8:
        off = 8 * int(rng.integers(0, 4)) if b1 == "leaf_down" else int(rng.integers(0, n))
        rot = nodes[off:] + nodes[:off]
        a_nodes, b_nodes, c_nodes, spares = rot[:16], rot[16:24], rot[24:28], rot[28:32]
    else:  # job B on the 8-node ToR, the rest rotated over the two 12-node ones
        b_nodes = nodes[24:32]
        rest = nodes[:24]
        off = int(rng.integers(0, 24))
        rest = rest[off:] + rest[:off]
        a_nodes, c_nodes, spares = rest[:16], rest[16:20], rest[20:24]

    def u(a: float, b: float) -> float:
        return float(rng.uniform(a, b))

    job_a = Job(
        name=f"llm-pretrain-{seed:02d}", tenant="foundation", nodes=a_nodes, tp=gpn, pp=2,
        dp=len(a_nodes) * gpn // (gpn * 2), step_s=u(3.6, 4.8), comm_frac=0.18, intensity=1.03,
        parallel_fields=True, split_fields=True, checksum_every=1, grad=True, ckpt_every=100,
        ckpt_s=u(10, 18), stage_extra=(0.0, 0.07), seqlen_sigma=0.03,
        first_step=int(rng.integers(20_000, 60_000)), start=t0 - 7200, end=t0 + D + 3600,
        bytes_per_step=u(20e9, 40e9),
    )
    job_b = Job(
        name=f"sft-moe-{seed:02d}", tenant="applied", nodes=b_nodes, tp=gpn, pp=1,
        dp=len(b_nodes), step_s=u(2.2, 3.0), comm_frac=0.25, intensity=0.86,
        parallel_fields=True, split_fields=True, checksum_every=10, grad=True, ckpt_every=250,
        ckpt_s=u(5, 9), stage_extra=(0.0,), seqlen_sigma=0.07,
        first_step=int(rng.integers(1_000, 9_000)), start=t0 - 3000, end=t0 + D + 3600,
        bytes_per_step=u(8e9, 16e9),
    )
    job_c = Job(
        name=f"vit-ft-{seed:02d}", tenant="vision", nodes=c_nodes, tp=1, pp=1,
        dp=len(c_nodes) * gpn, step_s=u(0.8, 1.1), comm_frac=0.3, intensity=0.78,
        parallel_fields=False, split_fields=True, checksum_every=0, grad=True, ckpt_every=0,
        ckpt_s=0.0, stage_extra=(0.0,), seqlen_sigma=0.0,
        first_step=int(rng.integers(100, 5_000)), start=t0 - 1500, end=t0 + 0.4 * D,
        bytes_per_step=u(0.4e9, 0.8e9), end_xid=APP_XIDS[seed % len(APP_XIDS)],
    )
    # job D enters service on a spare that has sat idle (the "job starting on a bad GPU")
    d_nodes = [c_nodes[0], spares[3], c_nodes[1], c_nodes[2]]
    job_d = Job(
        name=f"llm-ft-{seed:02d}", tenant="applied", nodes=d_nodes, tp=gpn, pp=1,
        dp=len(c_nodes), step_s=u(1.6, 2.2), comm_frac=0.2, intensity=0.95,
        parallel_fields=True, split_fields=True, checksum_every=1, grad=True, ckpt_every=200,
        ckpt_s=u(4, 7), stage_extra=(0.0,), seqlen_sigma=0.04, first_step=0,
        start=t0 + 0.5 * D, end=t0 + D + 3600, bytes_per_step=u(3e9, 6e9),
    )
    # a one-node notebook-style job on a spare: step_ms only, no split, no parallel fields
    job_e = Job(
        name=f"dev-{seed:02d}", tenant="research", nodes=[spares[0]], tp=1, pp=1, dp=gpn,
        step_s=u(0.5, 0.7), comm_frac=0.1, intensity=0.6, parallel_fields=False,
        split_fields=False, checksum_every=0, grad=False, ckpt_every=0, ckpt_s=0.0,
        stage_extra=(0.0,), seqlen_sigma=0.0, first_step=0, start=t0 + 0.1 * D,
        end=t0 + 0.35 * D, bytes_per_step=1e6,
    )
    job_a.loader_stalls = [t0 + u(0.05, 0.95) * D]
    job_c.loader_stalls = [t0 + u(0.05, 0.35) * D]
    job_b.data_spikes = [t0 + u(0.05, 0.95) * D]
    jobs = [job_a, job_b, job_c, job_d, job_e]

    faults: list[Fault] = []

    def add(what: str, t_a: float, t_b: float, node: str, **kw) -> Fault:
        f = Fault(f"blind-{shape.name}-s{seed}-f{len(faults)}-{what}", what, t_a, t_b, node, **kw)
        faults.append(f)
        return f

    def pick_rank(job: Job, avoid_dp0: bool = False) -> tuple[int, str, int]:
        while True:
            r = int(rng.integers(0, job.ranks))
            dp = (r // job.tp) % job.dp
            if not (avoid_dp0 and dp == 0):
                return r, job.nodes[r // gpn], r % gpn

    end = t0 + D
    # --- job A: a slowdown, an SDC, then a hardware fault that ends the attempt
    a1 = SLOT_A1[k % len(SLOT_A1)]
    ta = t0 + u(0.14, 0.18) * D
    r, nd, g = pick_rank(job_a)
    a1f = add(a1, ta, ta + u(0.15, 0.21) * D, nd, gpu=g, job=job_a.name, rank=r)
    a1f.params = _slow_params(a1, rng)
    a2 = SLOT_A2[k % len(SLOT_A2)]
    ta = t0 + u(0.42, 0.46) * D
    r, nd, g = pick_rank(job_a, avoid_dp0=True)
    a2_end = end if a2 == "sdc_checksum" else ta + u(0.1, 0.14) * D
    add(a2, ta, a2_end, nd, gpu=g, job=job_a.name, rank=r, params={"every": 3})
    a3 = SLOT_A3[k % len(SLOT_A3)]
    ta = t0 + u(0.68, 0.72) * D
    while True:
        r, nd, g = pick_rank(job_a)
        if nd != faults[-1].node:
            break
    faults[-1].t1 = min(faults[-1].t1, ta + 1.0)  # the SDC ends with the attempt
    add(a3, ta, end, nd, gpu=g, job=job_a.name, rank=r)
    hang = a3 == "xid79"
    job_a.crashes.append(
        Crash(ta + (0.0 if hang else u(0.5, 3.0)), hang,
              None if hang else ta + min(240.0, 0.13 * D), {nd: spares[2]})
    )
    # --- job B: the network, NVLink or a slowdown, then a late fault
    tb = t0 + u(0.16, 0.2) * D
    r, nd, g = pick_rank(job_b)
    if b1 == "leaf_down":
        leaf = shape.leaf_of(b_nodes[0])
        down = u(90, 150)
        add(b1, tb, tb + down, b_nodes[0], switch=leaf, params={"nodes": shape.leaves[leaf]})
        job_b.crashes.append(Crash(tb + u(8, 20), False, tb + down + min(150.0, 0.08 * D)))
    else:
        nic = shape.fabric_nics[shape.gpu_nic[g]]
        f = add(b1, tb, tb + u(0.14, 0.2) * D, nd, nic=nic, job=job_b.name)
        f.params = {"slow": u(0.15, 0.4), "ber_rate": u(5, 60)}
        if b1 == "nic_flap":
            starts = [tb] + sorted(u(tb + 20, f.t1 - 10) for _ in range(int(rng.integers(2, 6))))
            f.params["downs"] = [(s, s + u(2, 8)) for s in starts]
    b2 = SLOT_B2[k % len(SLOT_B2)]
    tb = t0 + u(0.43, 0.47) * D
    r, nd, g = pick_rank(job_b)
    f = add(b2, tb, tb + u(0.14, 0.18) * D, nd, gpu=g, job=job_b.name, rank=r)
    f.params = _slow_params(b2, rng) | {"tp_delay": u(0.12, 0.3), "crc_rate": u(50, 500)}
    b3 = SLOT_B3[k % len(SLOT_B3)]
    tb = t0 + u(0.7, 0.74) * D
    r, nd, g = pick_rank(job_b)
    f = add(b3, tb, tb + u(0.14, 0.2) * D, nd, gpu=g, job=job_b.name, rank=r)
    f.params = _slow_params(b3, rng) | {"every": 3}
    # --- job D starts with one bad GPU
    d1 = SLOT_D1[k % len(SLOT_D1)]
    g = int(rng.integers(0, gpn))
    f = add(d1, job_d.start, end, spares[3], gpu=g, job=job_d.name, rank=gpn + g)
    f.params = {"slow": u(0.3, 0.5), "excess_c": u(38, 46)}
    maintenance = [(spares[1], t0 + 0.25 * D, t0 + 0.25 * D + u(240, 330))]
    faults = [f for f in faults if f.t0 < end]
    return Plan(shape, seed, t0, D, interval_s, jobs, faults, maintenance, spares)


def _slow_params(what: str, rng: np.random.Generator) -> dict:
    if what == "thermal":
        return {"excess_c": float(rng.uniform(30, 40))}
    if what == "power_brake":
        return {"clock": float(rng.uniform(0.45, 0.7))}
    if what == "silent_slow":
        return {"slow": float(rng.uniform(0.1, 0.25))}
    return {}
