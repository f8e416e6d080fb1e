"""What each simulated fault and benign event changes, and when: schedules the generators consult.

Every effect has an absolute window ``[a, b)`` in event time and a ``tag``
(the fault's index in the scenario, or None for benign events) that the
generators attach to each record the effect changes, so labels can say
exactly when a fault first and last showed. Randomness of an effect comes
from its own generator: adding a fault never moves another one's draws.

>>> p = Profile("ramp", 10.0, 40.0, None)
>>> p.at(9.0), p.at(15.0), p.at(25.0), p.on_time(18.0, 22.0)
(0.0, 0.5, 1.0, 3.8)
"""

from __future__ import annotations

import bisect
import math
from typing import NamedTuple

import numpy as np

from replay.sim.plan import FaultSpec


class Profile:
    """Intensity 0..1 of an effect over ``[a, b)``: step, ramp (linear over a third), bursts."""

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
                 "rank_tags", "all_tags", "compute_tags", "extra_rank_ms")

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
        self.extra_rank_ms: dict[int, float] = {}  # one rank's wait for data, this step

    def scale_all(self, factors: np.ndarray) -> None:
        """Multiply every rank's compute by its own factor (a workload effect, not a fault)."""
        self.compute = factors.copy() if self.compute is None else self.compute * factors

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


# (g, dtemp, clock_f, power_f, pinned, bits, tag) and (p, throughput_f, increments, down, tag)
ThermalMod = tuple[int, float, float, float, bool, int, "int | None"]
NicMod = tuple[int, float, dict[str, int], bool, "int | None"]


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
    """hbm_dbe (XID 48 then 94/95) or row_remap_failure (XID 64); a GPU reset ends it."""

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
        self.with_xid = True
        self.window_s = 5.0  # the ECC sampling period: errors accrue over it between samples

    def ecc_events(self) -> list[EccEvent]:
        if not self.with_xid:
            return []
        return [EccEvent(round(t, 6), self.g, 74, (), self.tag) for t in self.prof.onsets()]

    def ecc_rate(self, t: float) -> dict[str, int] | None:
        on = self.prof.on_time(t - self.window_s, t)  # errors accrued since the last sample
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


class NvlinkDomain(Effect):
    """nvswitch: NVLink errors on every GPU of one NVLink domain, onsets within 1 s.

    One Nvlink effect per GPU, all with the fault's tag; the schedule unpacks ``parts``.
    """

    def __init__(self, tag: int, spec: FaultSpec, gpus: list[int], a: float, b: float,
                 rng: np.random.Generator) -> None:
        self.tag, self.a, self.b = tag, a, b
        self.parts = []
        for g in gpus:
            start = a + float(rng.uniform(0.0, 1.0))
            self.parts.append(Nvlink(tag, spec, g, start, b, rng))
        # Only some GPUs log an XID 74; all of them count errors.
        for i, part in enumerate(self.parts):
            part.with_xid = i % 3 == 0


class Network(Effect):
    """nic (one port) or switch (its ports, onsets within 1 s): errors, flaps, slow links."""

    def __init__(self, tag: int, spec: FaultSpec, ports: list[int], a: float, b: float,
                 rng: np.random.Generator) -> None:
        self.tag, self.ports, self.a, self.b, self.rng = tag, ports, a, b, rng
        self.m = spec.magnitude
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
