"""What a simulated incident log holds: the job's layout, faults, benign events; a seeded planner.

The planner places each requested fault kind at a random target inside the
job and a random time, never two faults at once and never closer than
``GAP_S`` apart, after a warm-up in which detectors can learn the healthy
baseline and before a tail long enough for the scoring window (DESIGN.md:
``end_ts + 60 s``). Benign events are sprinkled over the whole log, some
inside fault windows, on other targets than the fault's.

>>> from detector.topology import Topology
>>> topo = Topology.from_text("Topology=t\\nNodeSet=n[0-1] Gpus=4 Nics=mlx5_[0-1]")
>>> place_job(topo, JobLayout(tp=4, pp=1, dp=2)).rank_slot(5)
('n1', 1)
>>> plan_scenario(topo, job=JobLayout(tp=4, pp=1, dp=2),
...               duration_s=100, seed=1)  # doctest: +ELLIPSIS
Traceback (most recent call last):
...
ValueError: duration_s=100 is too short for 10 faults: the plan needs at least 1020 s (...)
"""

from __future__ import annotations

import zlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from detector.topology import Topology
from replay.sim.axes import Axes

WARMUP_S = 60.0  # healthy lead-in before the first fault, for detectors' baselines
TAIL_S = 60.0  # after the last fault: the scoring window is [start_ts, end_ts + 60 s]
GAP_S = 60.0  # between one fault's end and the next one's start
BENIGN_EDGE_S = 30.0  # benign events start after this and end before the log does

FAULT_KINDS = ("thermal", "power", "hbm_dbe", "row_remap_failure", "nvlink", "nic", "switch",
               "silent_slow", "sdc_checksum", "sdc_gradnorm")
BENIGN_KINDS = ("checkpoint", "spike", "app_xid", "counter_reset", "telemetry_pause",
                "power_cap", "sbe")
SHAPES = ("step", "ramp", "intermittent")


@dataclass(frozen=True, slots=True)
class FaultKind:
    """How one fault kind is labelled and planned."""

    label_kind: str
    cause: str
    attributable: bool
    level: str  # target level: "gpu", "nic", "switch" or "domain"
    min_s: float
    max_s: float
    shapes: tuple[str, ...]


FAULT_TABLE: dict[str, FaultKind] = {
    "thermal": FaultKind("slow_node", "thermal", True, "gpu", 60, 180, SHAPES),
    "power": FaultKind("slow_node", "power", True, "gpu", 30, 120, ("step", "intermittent")),
    "hbm_dbe": FaultKind("hardware", "gpu_memory", True, "gpu", 20, 90, ("step",)),
    "row_remap_failure": FaultKind("hardware", "gpu_memory", True, "gpu", 20, 90, ("step",)),
    "nvlink": FaultKind("hardware", "nvlink", True, "gpu", 30, 120, ("step", "intermittent")),
    "nic": FaultKind("network", "nic", True, "nic", 30, 120, ("step", "intermittent")),
    "switch": FaultKind("network", "switch", True, "switch", 30, 90, ("step",)),
    "silent_slow": FaultKind("slow_node", "unknown", False, "gpu", 60, 240, SHAPES),
    "sdc_checksum": FaultKind("sdc", "gpu_hardware", True, "gpu", 20, 90, ("step",)),
    "sdc_gradnorm": FaultKind("sdc", "unknown", False, "gpu", 60, 180, ("step", "intermittent")),
    # An NVSwitch tray failing in an NVL72 rack: NVLink errors on every GPU of the domain.
    "nvswitch": FaultKind("hardware", "nvlink", True, "domain", 30, 90, ("step",)),
}
# Kinds that need an NVLink domain (GB200 NVL72 racks) in the topology: not in the default
# "all" of a topology without domains.
DOMAIN_FAULT_KINDS = ("nvswitch",)


def kinds_for(topology: Topology) -> tuple[str, ...]:
    """Every fault kind this topology can host ("all" on the command line)."""
    return FAULT_KINDS + (DOMAIN_FAULT_KINDS if topology.domains() else ())
_SHAPE_WEIGHT = {"step": 0.6, "ramp": 0.2, "intermittent": 0.2}

# Llama 3 405B, Table 5 (arXiv 2407.21783; REFERENCE.md section 5): interruption counts
# of the root-cause categories that map onto our fault kinds. The split of one category
# over several kinds is a judgement call:
#   Faulty GPU (148)            -> nvlink 74, silent_slow 74 (link errors and fail-slow
#                                  are the faulty-GPU symptoms we model)
#   GPU HBM3 memory (72)        -> hbm_dbe 48, row_remap_failure 24
#   GPU SRAM memory (19)        -> hbm_dbe 19 (on-chip ECC errors also raise XID 48/94/95)
#   Network switch/cable (35)   -> switch 35
#   NIC (7)                     -> nic 7
#   Silent data corruption (6)  -> sdc_checksum 3, sdc_gradnorm 3
#   GPU thermal interface (6)   -> thermal 6
#   Power supply (3)            -> power 3
# Unmapped (no telemetry signature we simulate): software bug, host maintenance, GPU
# system processor, NCCL watchdog, SSD, chassis, IO board, dependency, CPU, system memory.
LLAMA3_WEIGHTS: dict[str, float] = {
    "nvlink": 74, "silent_slow": 74, "hbm_dbe": 67, "row_remap_failure": 24, "switch": 35,
    "nic": 7, "sdc_checksum": 3, "sdc_gradnorm": 3, "thermal": 6, "power": 3,
}


@dataclass(frozen=True)
class JobLayout:
    """A synchronous training job: parallelism degrees, step period, where it runs."""

    job: str = "job-1"
    tp: int = 8
    pp: int = 2
    dp: int = 8
    step_s: float = 1.0
    tenant: str = "tenant-a"
    nodes: tuple[str, ...] | None = None  # None: the first nodes of the topology, in order


@dataclass(frozen=True)
class FaultSpec:
    """One injected fault; ``start_s`` counts from the start of the log."""

    kind: str
    target: dict[str, Any]  # {"node", "gpu"} / {"node", "nic"} / {"switch"}
    start_s: float
    duration_s: float
    magnitude: float = 0.1
    shape: str = "step"


@dataclass(frozen=True)
class BenignSpec:
    """One benign event: looks like trouble, must not cause an isolation."""

    kind: str
    target: dict[str, Any]
    start_s: float
    duration_s: float = 0.0


@dataclass(frozen=True)
class Scenario:
    """Everything :func:`replay.sim.simulate.simulate` needs; same scenario, same bytes."""

    topology: Topology
    job: JobLayout
    duration_s: float
    faults: tuple[FaultSpec, ...]
    benign: tuple[BenignSpec, ...]
    seed: int
    start_ts: float = 1767225600.0  # 2026-01-01T00:00:00Z
    transport_noise: bool = True
    cluster: str | None = None
    axes: Axes = Axes()  # how the cluster reports itself; the defaults change nothing
    label_prefix: str = ""  # before each fault_id, when logs of one seed must not share ids


def rng_for(seed: int, *keys: str | int) -> np.random.Generator:
    """An independent generator per concern, so one concern's draws never shift another's."""
    if type(seed) is not int or seed < 0:
        raise ValueError(f"seed must be an integer >= 0, got {seed!r}")
    entropy = [seed] + [zlib.crc32(k.encode()) if isinstance(k, str) else int(k) for k in keys]
    return np.random.default_rng(entropy)


class Placement:
    """Where the job's ranks, GPUs and NIC ports are: integer indices for the generators.

    GPUs (every GPU of the job's nodes, index ``g``) and ports (every NIC of
    those nodes, index ``p``) are numbered in node order; rank r sits in GPU
    slot r (rank = pp*DP*TP + dp*TP + tp, so a TP group fills a node).
    """

    def __init__(self, topology: Topology, job: JobLayout) -> None:
        for name in ("tp", "pp", "dp"):
            v = getattr(job, name)
            if type(v) is not int or v < 1:
                raise ValueError(f"job {name} must be an integer >= 1, got {v!r}")
        if not 0.05 <= job.step_s <= 600:
            raise ValueError(f"job step_s must be within 0.05..600 s, got {job.step_s!r}")
        n_ranks = job.tp * job.pp * job.dp
        listed = job.nodes is not None
        candidates = tuple(job.nodes) if job.nodes is not None else topology.nodes()
        if listed:
            if len(set(candidates)) != len(candidates):
                raise ValueError("job nodes list a node twice")
            unknown = [n for n in candidates if topology.gpus_of(n) == 0]
            if unknown:
                raise ValueError(f"job nodes not in topology {topology.name!r} (or without GPUs): "
                                 f"{', '.join(unknown[:5])}")
        nodes: list[str] = []
        slots: list[tuple[str, int]] = []
        for node in candidates:
            if len(slots) >= n_ranks:
                break
            gpus = topology.gpus_of(node)
            if gpus:
                nodes.append(node)
                slots.extend((node, i) for i in range(gpus))
        if len(slots) < n_ranks:
            where = "the listed nodes have" if listed else f"topology {topology.name!r} has"
            hint = "" if slots else " (Slurm topology.conf lists no GPUs: use a faultline topology)"
            raise ValueError(f"job {job.job} needs {n_ranks} GPUs (tp*pp*dp = {job.tp}*{job.pp}*"
                             f"{job.dp}) but {where} {len(slots)}{hint}")
        self.job, self.n_ranks = job, n_ranks
        self.nodes = tuple(nodes)
        self.node_index = {n: i for i, n in enumerate(nodes)}
        self.gpus = tuple(slots)
        self.gpu_index = {s: g for g, s in enumerate(slots)}
        self.gpu_node = np.array([self.node_index[n] for n, _ in slots], dtype=np.int64)
        self.gpu_rank = np.full(len(slots), -1, dtype=np.int64)
        self.gpu_rank[:n_ranks] = np.arange(n_ranks)
        r = np.arange(n_ranks)
        self.tp_of, self.dp_of = r % job.tp, (r // job.tp) % job.dp
        self.pp_of = r // (job.tp * job.dp)
        self.ports = tuple((n, nic) for n in nodes for nic in topology.nics_of(n))
        self.port_index = {s: p for p, s in enumerate(self.ports)}
        self.port_node = np.array([self.node_index[n] for n, _ in self.ports], dtype=np.int64)

    def rank_slot(self, rank: int) -> tuple[str, int]:
        return self.gpus[rank]


def ecc_baseline(seed: int, n_gpus: int) -> dict[str, np.ndarray]:
    """Healthy cumulative ECC/PCIe counters at the start of the log, per GPU.

    Most GPUs read zero; a few carry old correctable errors and PCIe replays
    (the planner needs these to give a GPU counter reset something to reset).
    """
    rng = rng_for(seed, "ecc-static")
    sbe = np.where(rng.random(n_gpus) < 0.1, rng.integers(1, 21, n_gpus), 0)
    retired = np.where(rng.random(n_gpus) < 0.02, rng.integers(1, 3, n_gpus), 0)
    pcie = np.where(rng.random(n_gpus) < 0.3, rng.integers(1, 51, n_gpus), 0)
    return {"sbe_volatile": sbe.astype(np.int64), "retired_pages_sbe": retired.astype(np.int64),
            "pcie_replay": pcie.astype(np.int64)}


def place_job(topology: Topology, job: JobLayout) -> Placement:
    """Lay the job out on the topology; ValueError when it does not fit."""
    return Placement(topology, job)


def check_kinds(kinds: Sequence[str], known: Sequence[str], what: str) -> tuple[str, ...]:
    """The kinds as a tuple; ValueError naming the unknown ones and the known ones."""
    bad = [k for k in kinds if k not in known]
    if bad:
        raise ValueError(f"unknown {what} kind(s) {', '.join(map(repr, bad))}; "
                         f"known: {', '.join(known)}")
    return tuple(kinds)


def llama3_mix(n: int, seed: int) -> tuple[str, ...]:
    """N fault kinds drawn with the Llama 3 root-cause frequencies (see LLAMA3_WEIGHTS)."""
    if type(n) is not int or n < 0:
        raise ValueError(f"the Llama 3 mix needs a fault count >= 0, got {n!r}")
    kinds = list(LLAMA3_WEIGHTS)
    w = np.array([LLAMA3_WEIGHTS[k] for k in kinds], dtype=float)
    picks = rng_for(seed, "llama3-mix").choice(len(kinds), size=n, p=w / w.sum())
    return tuple(kinds[i] for i in picks)


def _windows_needed(kinds: Sequence[str]) -> float:
    if not kinds:
        return 0.0
    return WARMUP_S + sum(FAULT_TABLE[k].min_s for k in kinds) + GAP_S * (len(kinds) - 1) + TAIL_S


def _fault_targets(kind: str, pl: Placement, topology: Topology, rng: np.random.Generator,
                   used: set[Any]) -> dict[str, Any]:
    level = FAULT_TABLE[kind].level
    pool: list[Any]
    if level == "gpu":
        pool = [pl.gpus[g] for g in range(pl.n_ranks)]
    elif level == "nic":
        pool = list(pl.ports)
        if not pool:
            raise ValueError(f"a {kind} fault needs NICs, and topology {topology.name!r} lists "
                             "none on the job's nodes")
    elif level == "domain":
        job_nodes = {node for node, _ in pl.gpus}
        pool = [d for d in topology.domains()
                if len(job_nodes & set(topology.nodes_in_domain(d))) >= 2]
        if not pool:
            raise ValueError(f"a {kind} fault needs an NVLink domain holding >= 2 of the job's "
                             f"nodes; topology {topology.name!r} has none")
    else:
        job_ports = set(pl.ports)
        full = [s for s in topology.switches() if topology.nics_under(s)
                and set(topology.nics_under(s)) <= job_ports]
        pool = full or [s for s in topology.switches() if job_ports & set(topology.nics_under(s))]
        if not pool:
            raise ValueError(f"a switch fault needs a switch facing the job's NICs; topology "
                             f"{topology.name!r} names none")
    fresh = [t for t in pool if t not in used] or pool
    pick = fresh[int(rng.integers(len(fresh)))]
    used.add(pick)
    if level == "gpu":
        return {"node": pick[0], "gpu": pick[1]}
    if level == "nic":
        return {"node": pick[0], "nic": pick[1]}
    if level == "domain":
        return {"domain": pick}
    return {"switch": pick}


def fault_nodes(spec: FaultSpec, topology: Topology) -> set[str]:
    """Nodes whose telemetry a fault changes (benign events keep off them meanwhile)."""
    if "switch" in spec.target:
        return {n for n, _ in topology.nics_under(spec.target["switch"])}
    if "domain" in spec.target:
        return set(topology.nodes_in_domain(spec.target["domain"]))
    return {spec.target["node"]}


def plan_scenario(topology: Topology, *, job: JobLayout, duration_s: float, seed: int,
                  faults: Sequence[str] = FAULT_KINDS, benign: Sequence[str] = BENIGN_KINDS,
                  magnitude_range: tuple[float, float] = (0.05, 0.3),
                  start_ts: float = 1767225600.0, axes: Axes | None = None) -> Scenario:
    """A seeded scenario: each listed fault kind once (list it twice for two), benign sprinkled.

    ``axes`` (:mod:`replay.sim.axes`) say how the cluster reports itself; their
    ``scenario`` axis reshapes the plan (:mod:`replay.sim.scenarios`).
    """
    faults = check_kinds(faults, FAULT_KINDS + DOMAIN_FAULT_KINDS, "fault")
    benign = check_kinds(benign, BENIGN_KINDS, "benign")
    lo, hi = magnitude_range
    if not 0 < lo <= hi < 1:
        raise ValueError(f"magnitude_range needs 0 < low <= high < 1, got {magnitude_range!r}")
    if not duration_s > 0:
        raise ValueError(f"duration_s must be > 0, got {duration_s!r}")
    need = _windows_needed(faults)
    if duration_s < need:
        least = sum(FAULT_TABLE[k].min_s for k in faults)
        raise ValueError(
            f"duration_s={duration_s:g} is too short for {len(faults)} faults: the plan needs at "
            f"least {need:g} s ({WARMUP_S:g} s warm-up, {least:g} s of fault minimums, "
            f"{len(faults) - 1} gap{'' if len(faults) == 2 else 's'} of {GAP_S:g} s, "
            f"{TAIL_S:g} s tail)")
    pl = place_job(topology, job)
    rng = rng_for(seed, "plan-faults")
    n = len(faults)
    specs: list[FaultSpec] = []
    if n:
        mins = np.array([FAULT_TABLE[k].min_s for k in faults])
        maxs = np.array([FAULT_TABLE[k].max_s for k in faults])
        durs: np.ndarray = rng.uniform(mins, maxs)
        avail = duration_s - WARMUP_S - TAIL_S - GAP_S * (n - 1)
        room = 0.7 * avail  # keep some slack to spread the faults over the log
        if durs.sum() > room:
            extra = durs - mins
            scale = max(0.0, (room - mins.sum()) / extra.sum()) if extra.sum() > 0 else 0.0
            durs = mins + extra * min(1.0, scale)
        slack = rng.dirichlet(np.ones(n + 1)) * max(0.0, avail - durs.sum())
        order = rng.permutation(n)
        t = WARMUP_S + slack[0]
        used: set[Any] = set()
        placed: dict[int, FaultSpec] = {}
        for j, i in enumerate(order):
            kind = faults[i]
            info = FAULT_TABLE[kind]
            w = np.array([_SHAPE_WEIGHT[s] for s in info.shapes])
            shape = info.shapes[int(rng.choice(len(w), p=w / w.sum()))]
            placed[int(i)] = FaultSpec(
                kind=kind, target=_fault_targets(kind, pl, topology, rng, used),
                start_s=round(float(t), 3), duration_s=round(float(durs[i]), 3),
                magnitude=round(float(rng.uniform(lo, hi)), 4), shape=shape)
            t += durs[i] + GAP_S + slack[j + 1]
        specs = [placed[i] for i in range(n)]
    sc = Scenario(topology=topology, job=job, duration_s=float(duration_s), faults=tuple(specs),
                  benign=tuple(plan_benign(topology, pl, specs, benign, duration_s, seed)),
                  seed=seed, start_ts=float(start_ts))
    if axes is None or axes == Axes():
        return sc
    from replay.sim.scenarios import apply_scenario
    return apply_scenario(sc, axes)


# Benign events per kind: (one per this many seconds, at least, duration range in s).
_BENIGN_RATE: dict[str, tuple[float, int, tuple[float, float]]] = {
    "checkpoint": (600, 1, (5, 20)),
    "spike": (60, 2, (0, 0)),
    "app_xid": (900, 1, (0, 0)),
    "counter_reset": (1200, 1, (0, 0)),
    "telemetry_pause": (1800, 1, (20, 90)),
    "power_cap": (300, 1, (2, 8)),
    "sbe": (300, 1, (0, 0)),
}
_INSIDE_FAULT = ("checkpoint", "spike", "app_xid", "power_cap", "sbe")


def plan_benign(topology: Topology, pl: Placement, faults: list[FaultSpec],
                 kinds: tuple[str, ...], duration_s: float, seed: int) -> list[BenignSpec]:
    rng = rng_for(seed, "plan-benign")
    base = ecc_baseline(seed, len(pl.gpus))
    resettable = {pl.gpus[g] for g in np.flatnonzero(base["sbe_volatile"] + base["pcie_replay"])}
    # a memory fault ends in a GPU reset, after which another reset would show nothing
    resettable -= {(f.target["node"], f.target["gpu"]) for f in faults
                   if f.kind in ("hbm_dbe", "row_remap_failure")}
    windows = [(f.start_s - 5, f.start_s + f.duration_s + 5, f) for f in faults]
    wanted: list[tuple[str, float | None]] = []
    for kind in dict.fromkeys(kinds):
        every, least, _ = _BENIGN_RATE[kind]
        wanted += [(kind, None)] * (kinds.count(kind) * max(least, round(duration_s / every)))
    inside = [k for k in _INSIDE_FAULT if k in kinds]
    if inside:  # about half the faults get company, so benign and faulty overlap
        for i, f in enumerate(sorted(faults, key=lambda f: f.start_s)):
            if rng.random() < 0.5:
                wanted.append((inside[i % len(inside)],
                               float(rng.uniform(f.start_s, f.start_s + 0.8 * f.duration_s))))
    out: list[BenignSpec] = []
    for kind, at in wanted:
        lo_d, hi_d = _BENIGN_RATE[kind][2]
        dur = round(float(rng.uniform(lo_d, hi_d)), 3) if hi_d else 0.0
        latest = duration_s - BENIGN_EDGE_S - dur
        if latest <= BENIGN_EDGE_S:
            continue  # the log is too short for this event
        for _ in range(20):
            start = (at if at is not None and at <= latest
                     else float(rng.uniform(BENIGN_EDGE_S, latest)))
            busy = [f for a, b, f in windows if a < start + dur + 1 and start - 1 < b]
            target = _benign_target(kind, topology, pl, busy, rng, resettable)
            if target is not None:
                out.append(BenignSpec(kind, target, round(start, 3), dur))
                break
            at = None
    return sorted(out, key=lambda b: (b.start_s, b.kind))


def _benign_target(kind: str, topology: Topology, pl: Placement, busy: list[FaultSpec],
                   rng: np.random.Generator, resettable: set[tuple[str, int]]
                   ) -> dict[str, Any] | None:
    """A target for a benign event that stays off every fault active at the time."""
    if kind == "checkpoint":
        return {"job": pl.job.job}
    hot_nodes: set[str] = set()
    hot: set[tuple[str, Any]] = set()
    for f in busy:
        hot_nodes |= fault_nodes(f, topology)
        if "gpu" in f.target:
            hot.add((f.target["node"], f.target["gpu"]))
        elif "nic" in f.target:
            hot.add((f.target["node"], f.target["nic"]))
        elif "switch" in f.target:
            hot |= set(topology.nics_under(f.target["switch"]))
        else:  # an NVLink domain's switch trays: every GPU of the domain's nodes
            nodes = fault_nodes(f, topology)
            hot |= {s for s in pl.gpus if s[0] in nodes}
    if kind == "telemetry_pause":
        nodes = [n for n in pl.nodes if n not in hot_nodes]
        return {"node": nodes[int(rng.integers(len(nodes)))]} if nodes else None
    gpus = [pl.gpus[g] for g in range(pl.n_ranks) if pl.gpus[g] not in hot]
    if kind == "counter_reset":  # a GPU reset shows only on counters that were nonzero
        gpus = [s for s in gpus if s in resettable]
        ports = [p for p in pl.ports if p not in hot]
        if ports and (not gpus or rng.random() < 0.5):
            node, nic = ports[int(rng.integers(len(ports)))]
            return {"node": node, "nic": nic}
    if not gpus:
        return None
    node, gpu = gpus[int(rng.integers(len(gpus)))]
    return {"node": node, "gpu": gpu}
