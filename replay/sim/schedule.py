"""Benign events, and the schedule that turns a scenario's specs into effects for the generators.

Benign events carry no tag: the records they change are never labelled, and
a detector must not isolate anything for them.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from replay.sim.effects import (
    EccEvent,
    Effect,
    MemoryFault,
    Network,
    Nvlink,
    NvlinkDomain,
    SdcChecksum,
    SdcGradnorm,
    SilentSlow,
    StepMods,
    ThermalMod,
    Throttle,
)
from replay.sim.plan import FAULT_TABLE, BenignSpec, FaultSpec, Placement, Scenario, rng_for
from replay.sim.workload import LoaderStall, Reboot, SeqLenImbalance, SlowStage, StepGap


class Checkpoint(Effect):
    def __init__(self, a: float, b: float, rng: np.random.Generator) -> None:
        self.a, self.b, self.rng = a, b, rng
        self.io = bool(rng.random() < 0.6)  # I/O stall, else slower compute everywhere
        self.factor = float(rng.uniform(1.2, 1.5))

    def step(self, s: float, m: StepMods) -> None:
        if self.a <= s < self.b:
            if self.io:
                m.extra_other_ms += float(self.rng.uniform(2000, 10000))
            else:
                m.scale(None, self.factor, None)


class Spike(Effect):
    def __init__(self, rank: int, a: float, rng: np.random.Generator) -> None:
        self.rank, self.a, self.b = rank, a, a + 60.0
        self.factor = float(rng.uniform(1.5, 3.0))
        self.done = False

    def step(self, s: float, m: StepMods) -> None:
        if not self.done and s >= self.a:
            self.done = True
            m.scale(self.rank, self.factor, None)


class PowerCap(Effect):
    def __init__(self, g: int, rank: int, a: float, b: float, rng: np.random.Generator) -> None:
        self.g, self.rank, self.a, self.b = g, rank, a, b
        self.dip = float(rng.uniform(0.005, 0.03))

    def thermal(self, ts: np.ndarray, out: list[ThermalMod]) -> None:
        if self.a <= ts[self.g] < self.b:
            out.append((self.g, 0.0, 1 - self.dip, 0.97, True, 0x4, None))

    def step(self, s: float, m: StepMods) -> None:
        if self.a <= s < self.b and self.rank >= 0:
            m.scale(self.rank, 1 / (1 - self.dip), None)


class Instant(Effect):
    """app_xid, sbe, counter_reset and telemetry_pause: fixed schedules."""

    def __init__(self, a: float, b: float, events: list[EccEvent] = [],  # noqa: B006 (read only)
                 resets: list[tuple[float, int]] = [],  # noqa: B006
                 pauses: list[tuple[int, float, float]] = []) -> None:  # noqa: B006
        self.a, self.b = a, b
        self._events, self._resets, self._pauses = events, resets, pauses

    def ecc_events(self) -> list[EccEvent]:
        return self._events

    def nic_resets(self) -> list[tuple[float, int]]:
        return self._resets

    def pauses(self) -> list[tuple[int, float, float]]:
        return self._pauses


def _gpu(pl: Placement, target: dict[str, Any], what: str, need_rank: bool) -> tuple[int, int]:
    key = (target.get("node"), target.get("gpu"))
    g = pl.gpu_index.get(key)  # type: ignore[arg-type]
    if g is None:
        raise ValueError(f"{what}: target {target!r} is not a GPU of the job's nodes")
    rank = int(pl.gpu_rank[g])
    if need_rank and rank < 0:
        raise ValueError(f"{what}: GPU {key[0]}/{key[1]} runs no rank of the job")
    return g, rank


def _port(pl: Placement, target: dict[str, Any], what: str) -> int:
    p = pl.port_index.get((target.get("node"), target.get("nic")))  # type: ignore[arg-type]
    if p is None or target.get("port", 1) != 1:
        raise ValueError(f"{what}: target {target!r} is not a NIC port of the job's nodes")
    return p


def build_fault(i: int, spec: FaultSpec, sc: Scenario, pl: Placement) -> Effect:
    what = f"fault {i} ({spec.kind})"
    info = FAULT_TABLE.get(spec.kind)
    if info is None:
        raise ValueError(f"{what}: unknown kind; known: {', '.join(FAULT_TABLE)}")
    if spec.shape not in info.shapes:
        raise ValueError(f"{what}: shape {spec.shape!r} not one of {', '.join(info.shapes)}")
    if not 0 < spec.magnitude < 1:
        raise ValueError(f"{what}: magnitude must be within (0, 1), got {spec.magnitude!r}")
    if not (spec.start_s >= 0 and spec.duration_s > 0
            and spec.start_s + spec.duration_s <= sc.duration_s):
        raise ValueError(f"{what}: window {spec.start_s:g}+{spec.duration_s:g} s must lie inside "
                         f"the {sc.duration_s:g} s log")
    a = sc.start_ts + spec.start_s
    b = a + spec.duration_s
    rng = rng_for(sc.seed, "fault", i)
    if info.level == "switch":
        under = sc.topology.nics_under(str(spec.target.get("switch")))
        ports = [pl.port_index[s] for s in under if s in pl.port_index]
        if not ports:
            raise ValueError(f"{what}: switch {spec.target.get('switch')!r} faces no job NIC")
        return Network(i, spec, ports, a, b, rng)
    if info.level == "nic":
        return Network(i, spec, [_port(pl, spec.target, what)], a, b, rng)
    if info.level == "domain":
        members = set(sc.topology.nodes_in_domain(str(spec.target.get("domain"))))
        gpus = [g for g, (node, _) in enumerate(pl.gpus) if node in members]
        if not gpus:
            raise ValueError(f"{what}: domain {spec.target.get('domain')!r} holds no job GPU")
        return NvlinkDomain(i, spec, gpus, a, b, rng)
    g, rank = _gpu(pl, spec.target, what, need_rank=True)
    k = spec.kind
    if k in ("thermal", "power"):
        return Throttle(i, spec, g, rank, a, b, rng)
    if k == "silent_slow":
        return SilentSlow(i, spec, rank, a, b, rng)
    if k == "sdc_checksum":
        return SdcChecksum(i, rank, a, b)
    if k == "sdc_gradnorm":
        return SdcGradnorm(i, spec, rank, a, b, rng)
    if k == "nvlink":
        return Nvlink(i, spec, g, a, b, rng)
    return MemoryFault(i, spec, g, a, b, rng)


def build_benign(i: int, spec: BenignSpec, sc: Scenario, pl: Placement) -> Effect:
    what = f"benign event {i} ({spec.kind})"
    if not (spec.start_s >= 0 and spec.duration_s >= 0
            and spec.start_s + spec.duration_s <= sc.duration_s):
        raise ValueError(f"{what}: window must lie inside the {sc.duration_s:g} s log")
    a = sc.start_ts + spec.start_s
    b = a + spec.duration_s
    rng = rng_for(sc.seed, "benign", i)
    k = spec.kind
    if k == "checkpoint":
        return Checkpoint(a, b, rng)
    if k == "telemetry_pause":
        node = pl.node_index.get(spec.target.get("node"))  # type: ignore[arg-type]
        if node is None:
            raise ValueError(f"{what}: target {spec.target!r} is not one of the job's nodes")
        return Instant(a, b, pauses=[(node, a, b)])
    if k == "reboot":
        node = pl.node_index.get(spec.target.get("node"))  # type: ignore[arg-type]
        if node is None:
            raise ValueError(f"{what}: target {spec.target!r} is not one of the job's nodes")
        name = pl.nodes[node]
        return Reboot(node, list(range(len(pl.gpus))),
                      [g for g, (n, _) in enumerate(pl.gpus) if n == name],
                      list(range(len(pl.ports))),
                      [p for p, (n, _) in enumerate(pl.ports) if n == name], a, b,
                      float(spec.target.get("restart_s", 45.0)),
                      int(spec.target.get("rewind_steps", 20)), rng)
    if k == "counter_reset" and "nic" in spec.target:
        return Instant(a, b, resets=[(a, _port(pl, spec.target, what))])
    need_rank = k in ("spike", "power_cap")
    g, rank = _gpu(pl, spec.target, what, need_rank)
    if k == "spike":
        return Spike(rank, a, rng)
    if k == "power_cap":
        return PowerCap(g, rank, a, b, rng)
    if k == "app_xid":
        return Instant(a, b, events=[EccEvent(a, g, int(rng.choice([13, 31, 43])), (), None)])
    if k == "sbe":
        return Instant(a, b, events=[EccEvent(a, g, None, ("sbe",), None)])
    if k == "counter_reset":
        return Instant(a, b, events=[EccEvent(a, g, None, ("reset",), None)])
    raise ValueError(f"{what}: unknown kind")


def build_workload(sc: Scenario, pl: Placement) -> list[Effect]:
    """The ``workload`` axis' effect over the whole log (none by default)."""
    a, b = sc.start_ts, sc.start_ts + sc.duration_s
    rng = rng_for(sc.seed, "workload", sc.axes.workload)
    w = sc.axes.workload
    if w == "seqlen":
        return [SeqLenImbalance(pl.dp_of, a, b, rng)]
    if w == "slow_stage":
        return [SlowStage(pl.pp_of, a, b, rng)]
    if w == "loader_stall":
        return [LoaderStall(pl.n_ranks, a, b, rng)]
    return []


def _overrides(e: Effect, name: str) -> bool:
    return getattr(type(e), name) is not getattr(Effect, name)


class Schedule:
    """All effects of a scenario, sorted by what they touch; validates the specs."""

    def __init__(self, sc: Scenario, pl: Placement) -> None:
        self.faults = [build_fault(i, f, sc, pl) for i, f in enumerate(sc.faults)]
        effects = [part for e in self.faults for part in getattr(e, "parts", [e])]
        effects += [build_benign(i, b, sc, pl) for i, b in enumerate(sc.benign)]
        effects += build_workload(sc, pl)
        self.steppers = [e for e in effects if _overrides(e, "step")]
        self.thermals = [e for e in effects if _overrides(e, "thermal")]
        self.nics = [e for e in effects if _overrides(e, "nic")]
        self.rates = [e for e in effects if isinstance(e, Nvlink)]
        self.events = sorted((ev for e in effects for ev in e.ecc_events()), key=lambda v: v.ts)
        self.resets = sorted((r for e in effects for r in e.nic_resets()), key=lambda v: v[0])
        self.pauses = [p for e in effects for p in e.pauses()]
        self.gaps: list[StepGap] = sorted(g for e in effects if isinstance(e, Reboot)
                                          for g in e.gaps())
        self._next_event = 0

    def step_mods(self, s: float, n: int) -> StepMods | None:
        active = [e for e in self.steppers if e.a <= s and s < e.b + 1]
        if not active:
            return None
        m = StepMods(n)
        for e in active:
            e.step(s, m)
        return m

    def events_before(self, t1: float) -> list[EccEvent]:
        i = self._next_event
        j = i
        while j < len(self.events) and self.events[j].ts < t1:
            j += 1
        self._next_event = j
        return self.events[i:j]
