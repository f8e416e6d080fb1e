"""What each simulated fault and benign event changes, and when: the schedules the generators consult.

Every effect has an absolute window ``[a, b)`` in event time and a ``tag``
(the fault's index in the scenario, or None for benign events) that the
generators attach to each record the effect changes, so labels can say
exactly when a fault first and last showed. Randomness of an effect comes
from its own generator: adding a fault never moves another one's draws.

>>> p = Profile("ramp", 10.0, 40.0, None)
>>> p.at(9.0), p.at(15.0), p.at(25.0), p.on_time(18.0, 22.0)
(0.0, 0.5, 1.0, 3.6)
"""

from __future__ import annotations

import bisect
import math
from typing import Any, NamedTuple

import numpy as np

from replay.sim_plan import FAULT_TABLE, BenignSpec, FaultSpec, Placement, Scenario, rng_for


class Profile:
    """Intensity 0..1 of an effect over ``[a, b)``: step, ramp (linear over the first third), bursts."""

    def __init__(self, shape: str, a: float, b: float, rng: np.random.Generator | None) -> None:
        self.shape, self.a, self.b = shape, a, b
        self.ramp_s = max((b - a) / 3, 1e-9)
        self.bursts: list[tuple[float, float]] = [(a, b)]
        if shape == "intermittent":
            assert rng is not None
            self.bursts, t, on = [], a, True
            while t < b:
                d = float(rng.uniform(3, 15))
                if on:
                    self.bursts.append((t, min(b, t + d)))
                t, on = t + d, not on
        self._starts = [x for x, _ in self.bursts]

    def at(self, t: float) -> float:
        if not self.a <= t < self.b:
            return 0.0
        if self.shape == "ramp":
            return min(1.0, (t - self.a) / self.ramp_s)
        i = bisect.bisect_right(self._starts, t) - 1
        return 1.0 if i >= 0 and t < self.bursts[i][1] else 0.0

    def on_time(self, x: float, y: float) -> float:
        """Integral of the intensity over ``[x, y)`` (seconds of full effect)."""
        x, y = max(x, self.a), min(y, self.b)
        if y <= x:
            return 0.0
        if self.shape == "ramp":
            knee = self.a + self.ramp_s
            lo, hi = x, min(y, knee)
            ramp = ((hi - self.a) ** 2 - (lo - self.a) ** 2) / (2 * self.ramp_s) if hi > lo else 0.0
            return round(ramp + max(0.0, y - max(x, knee)), 9)
        return sum(max(0.0, min(y, q) - max(x, p)) for p, q in self.bursts)

    def onsets(self) -> list[float]:
        return list(self._starts)


class EccEvent(NamedTuple):
    """A moment a GPU's ECC state changes; with ``xid`` set it is also an XID event message."""

    ts: float
    g: int
    xid: int | None
    ops: tuple[str, ...]  # "dbe", "pending", "remap_failure", "sbe", "reset", "repair", "action:X"
    tag: int | None
    begin: bool = False  # samples from here on carry the fault until its "repair"


class StepMods:
    """Changes to one training step, collected from the effects active when it starts."""

    __slots__ = ("n", "fault_compute", "compute", "comm", "extra_other_ms", "checksum", "grad",
                 "rank_tags", "all_tags", "compute_tags")

    def __init__(self, n: int) -> None:
        self.n = n
        self.fault_compute: np.ndarray | None = None
        self.compute: np.ndarray | None = None
        self.comm = 1.0
        self.extra_other_ms = 0.0
        self.checksum: dict[int, str] = {}
        self.grad: dict[int, float] = {}
        self.rank_tags: dict[int, list[int]] = {}
        self.all_tags: list[int] = []
        self.compute_tags: list[int] = []

    def scale(self, rank: int | None, factor: float, tag: int | None) -> None:
        """Multiply one rank's compute (all ranks' when ``rank`` is None)."""
        if tag is None:
            if self.compute is None:
                self.compute = np.ones(self.n)
            arr = self.compute
        else:
            if self.fault_compute is None:
                self.fault_compute = np.ones(self.n)
            arr = self.fault_compute
            self.compute_tags.append(tag)
            if rank is None:
                self.all_tags.append(tag)
            else:
                self.rank_tags.setdefault(rank, []).append(tag)
        if rank is None:
            arr *= factor
        else:
            arr[rank] *= factor

    def mark(self, rank: int, tag: int) -> None:
        self.rank_tags.setdefault(rank, []).append(tag)


ThermalMod = tuple[int, float, float, float, bool, int, "int | None"]  # g, dtemp, clock_f, power_f, pinned, bits, tag
NicMod = tuple[int, float, dict[str, int], bool, "int | None"]  # p, throughput_f, increments, down, tag


class Effect:
    """Base: an effect changes nothing; subclasses override the hooks they need."""

    tag: int | None = None
    a = b = 0.0

    def step(self, s: float, m: StepMods) -> None: ...
    def thermal(self, ts: np.ndarray, out: list[ThermalMod]) -> None: ...
    def nic(self, ts: np.ndarray, out: list[NicMod]) -> None: ...
    def ecc_rate(self, t: float) -> dict[str, int] | None: return None
    def ecc_events(self) -> list[EccEvent]: return []
    def nic_resets(self) -> list[tuple[float, int]]: return []
    def pauses(self) -> list[tuple[int, float, float]]: return []


def _log_uniform(rng: np.random.Generator, lo: float, hi: float) -> float:
    return float(math.exp(rng.uniform(math.log(lo), math.log(hi))))


class Throttle(Effect):
    """thermal: temperature ramps 10-20 s, then HW/SW thermal throttle; power: brake or cap."""

    def __init__(self, tag: int, spec: FaultSpec, g: int, rank: int, a: float, b: float,
                 rng: np.random.Generator) -> None:
        self.tag, self.g, self.rank, self.a, self.b, self.m = tag, g, rank, a, b, spec.magnitude
        self.thermal_kind = spec.kind == "thermal"
        self.ramp_s = min(float(rng.uniform(10, 20)), (b - a) / 3) if self.thermal_kind else 0.0
        self.rise = float(rng.uniform(20, 26))  # to ~85-93 C: where H100s throttle
        self.bits = int(rng.choice([0x40, 0x20] if self.thermal_kind else [0x80, 0x4]))
        self.prof = Profile(spec.shape, a + self.ramp_s, b, rng)

    def step(self, s: float, m: StepMods) -> None:
        i = self.prof.at(s)
        if i > 0:
            m.scale(self.rank, 1 / (1 - self.m * i), self.tag)

    def thermal(self, ts: np.ndarray, out: list[ThermalMod]) -> None:
        t = float(ts[self.g])
        if not self.a <= t < self.b:
            return
        dtemp = self.rise * min(1.0, (t - self.a) / self.ramp_s) if self.ramp_s else 0.0
        i = self.prof.at(t)
        if dtemp <= 0 and i <= 0:
            return
        drop = self.m * i
        if self.bits == 0x4:  # SW power cap: power pinned at a cap below the GPU's usual draw
            pf, pinned = 1 - 0.5 * self.m, True
        elif self.bits == 0x80:  # HW power brake: clocks and power fall together
            pf, pinned = max(0.3, 1 - 1.2 * drop), False
        else:
            pf, pinned = 1 - 0.6 * drop, False
        out.append((self.g, dtemp, 1 - drop, pf, pinned, self.bits if i > 0 else 0, self.tag))


class SilentSlow(Effect):
    def __init__(self, tag: int, spec: FaultSpec, rank: int, a: float, b: float,
                 rng: np.random.Generator) -> None:
        self.tag, self.rank, self.a, self.b, self.m = tag, rank, a, b, spec.magnitude
        self.prof = Profile(spec.shape, a, b, rng)

    def step(self, s: float, m: StepMods) -> None:
        i = self.prof.at(s)
        if i > 0:
            m.scale(self.rank, 1 + self.m * i, self.tag)


class SdcChecksum(Effect):
    def __init__(self, tag: int, rank: int, a: float, b: float) -> None:
        self.tag, self.rank, self.a, self.b = tag, rank, a, b

    def step(self, s: float, m: StepMods) -> None:
        if self.a <= s < self.b:  # corrupted parameters persist: every step differs
            m.checksum[self.rank] = f"sdc{self.tag}"
            m.mark(self.rank, self.tag)  # type: ignore[arg-type]


class SdcGradnorm(Effect):
    """Local grad_norm spikes x5-x50 on a fraction (magnitude, clipped to 10-30%) of steps."""

    def __init__(self, tag: int, spec: FaultSpec, rank: int, a: float, b: float,
                 rng: np.random.Generator) -> None:
        self.tag, self.rank, self.a, self.b, self.rng = tag, rank, a, b, rng
        self.frac = min(0.3, max(0.1, spec.magnitude))
        self.prof = Profile(spec.shape, a, b, rng)
        self.first = True

    def step(self, s: float, m: StepMods) -> None:
        if self.prof.at(s) > 0 and (self.first or self.rng.random() < self.frac):
            self.first = False  # the first step of the fault always shows, so onset is the start
            m.grad[self.rank] = _log_uniform(self.rng, 5, 50)
            m.mark(self.rank, self.tag)  # type: ignore[arg-type]


class MemoryFault(Effect):
    """hbm_dbe (XID 48 then 94/95) or row_remap_failure (XID 64); repaired (GPU reset) at the end."""

    def __init__(self, tag: int, spec: FaultSpec, g: int, a: float, b: float,
                 rng: np.random.Generator) -> None:
        self.tag, self.a, self.b = tag, a, b
        ev: list[EccEvent] = []
        if spec.kind == "hbm_dbe":
            ev.append(EccEvent(a, g, 48, ("dbe",), tag, True))
            t = a + float(rng.uniform(0.2, 2.0))
            xid = int(rng.choice([94, 95]))
            ev.append(EccEvent(t, g, xid, ("pending",), tag))
            if xid == 95:  # uncontained: the driver asks for a GPU reset (XID 154)
                ev.append(EccEvent(t + float(rng.uniform(0.05, 0.5)), g, 154,
                                   ("action:gpu_reset",), tag))
        else:
            ev.append(EccEvent(a, g, 64, ("remap_failure",), tag, True))
            ev.append(EccEvent(a + float(rng.uniform(0.05, 0.5)), g, 154,
                               ("action:drain_and_reset",), tag))
        ev.append(EccEvent(b, g, None, ("repair",), tag))
        self.events = [e._replace(ts=round(e.ts, 6)) for e in ev]

    def ecc_events(self) -> list[EccEvent]:
        return self.events


class Nvlink(Effect):
    """NVLink CRC/replay/recovery errors climbing, XID 74 at each burst, job-wide comm +2-5%."""

    def __init__(self, tag: int, spec: FaultSpec, g: int, a: float, b: float,
                 rng: np.random.Generator) -> None:
        self.tag, self.g, self.a, self.b, self.rng = tag, g, a, b, rng
        self.prof = Profile(spec.shape, a, b, rng)
        self.rate = _log_uniform(rng, 5, 500)  # CRC errors per second while active
        self.gain = min(0.05, max(0.02, spec.magnitude / 5))

    def ecc_events(self) -> list[EccEvent]:
        return [EccEvent(round(t, 6), self.g, 74, (), self.tag) for t in self.prof.onsets()]

    def ecc_rate(self, t: float) -> dict[str, int] | None:
        on = self.prof.on_time(t - 5.0, t)  # errors accrued since the previous 5 s sample
        if on <= 0:
            return None
        lam = self.rate * on
        return {"nvlink_crc_errors": int(self.rng.poisson(lam)) + 1,
                "nvlink_replay_errors": int(self.rng.poisson(0.3 * lam)),
                "nvlink_recovery_errors": int(self.rng.poisson(0.02 * lam))}

    def step(self, s: float, m: StepMods) -> None:
        i = self.prof.at(s)
        if i > 0:
            m.comm *= 1 + self.gain * i
            m.all_tags.append(self.tag)  # type: ignore[arg-type]


class Network(Effect):
    """nic (one port) or switch (every port facing it, onsets within 1 s): errors, flaps, less throughput."""

    def __init__(self, tag: int, spec: FaultSpec, ports: list[int], a: float, b: float,
                 rng: np.random.Generator) -> None:
        self.tag, self.ports, self.a, self.b, self.rng, self.m = tag, ports, a, b, rng, spec.magnitude
        switch = spec.kind == "switch"
        self.prof = Profile(spec.shape, a, b, rng)
        n = len(ports)
        self.offset = rng.uniform(0, 1, n).tolist() if switch else [0.0]
        self.rate = (_log_uniform(rng, 5, 300) * rng.uniform(0.5, 1.5, n)).tolist()
        self.oos_rate = _log_uniform(rng, 1, 50)
        self.gain = self.m / 2 if switch else self.m / 4
        flappers = (rng.permutation(n)[:max(1, n // 3)] if switch else [0])
        self.flaps: list[list[tuple[float, float]]] = [[] for _ in ports]
        for j in sorted(int(x) for x in flappers):
            count = 1 if switch else int(rng.integers(1, 4))
            lo, hi = a + self.offset[j] + 2, b - 4
            if hi <= lo:
                continue
            for x in sorted(rng.uniform(lo, hi, count).tolist()):
                if not self.flaps[j] or x >= self.flaps[j][-1][1] + 2:
                    self.flaps[j].append((x, x + int(rng.integers(1, 4))))

    def nic(self, ts: np.ndarray, out: list[NicMod]) -> None:
        for j, p in enumerate(self.ports):
            t = float(ts[p])
            off = self.offset[j]
            on = self.prof.on_time(t - 1 - off, t - off)  # share of the last second affected
            down = any(x <= t < y for x, y in self.flaps[j])
            if on <= 0 and not down:
                continue
            lam, oos, rng = self.rate[j] * on, self.oos_rate * on, self.rng
            incs = {"symbol_errors": int(rng.poisson(lam)) + (on > 0),
                    "rcv_errors": int(rng.poisson(0.5 * lam)),
                    "xmit_discards": int(rng.poisson(0.1 * lam)),
                    "out_of_sequence": int(rng.poisson(oos)),
                    "packet_seq_err": int(rng.poisson(0.5 * oos))}
            out.append((p, 0.0 if down else 1 - self.m * on, incs, down, self.tag))

    def step(self, s: float, m: StepMods) -> None:
        i = self.prof.at(s)
        if i > 0:
            m.comm *= 1 + self.gain * i
            m.all_tags.append(self.tag)  # type: ignore[arg-type]


# --- benign events (tag None: never labelled) ---------------------------------------------

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
            raise ValueError(f"{what}: switch {spec.target.get('switch')!r} faces no NIC of the job")
        return Network(i, spec, ports, a, b, rng)
    if info.level == "nic":
        return Network(i, spec, [_port(pl, spec.target, what)], a, b, rng)
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
    if not (0 <= spec.start_s and spec.duration_s >= 0
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
