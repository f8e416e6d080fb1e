"""blind20's world: HGX H100 nodes sampled by dcgm-exporter and node_exporter, and the noise of
real training steps (Alibaba PAI mini-batch times, /work/shared/data).

Everything random takes an explicit ``random.Random``; no module state is mutated.
"""

from __future__ import annotations

import csv
import functools
import math
import random
from dataclasses import dataclass, field
from pathlib import Path

DATA = Path("/work/shared/data/alibaba-pai-minibatch")
if not DATA.exists():       # a checkout elsewhere: the copy beside the repository
    DATA = Path(__file__).resolve().parents[2] / "bench" / "data" / "alibaba-pai-minibatch"

T0 = 1_781_000_000.0        # 2026-06-09 UTC; each seed a day later
CLOCK_MAX_MHZ = 1980.0
POWER_LIMIT_W = 700.0
THROTTLE_SW_CAP, THROTTLE_SW_THERMAL, IDLE = 0x4, 0x20, 0x1


@functools.cache
def pai_residuals() -> tuple[tuple[float, ...], ...]:
    """Per-worker log residuals (value over the worker's median) of PAI job 2, in time order:
    a dedicated-looking job (spread ~1.5 %), every ~10th iteration of a real run."""
    rows: dict[int, list[tuple[int, float]]] = {}
    with open(DATA / "job_2_norm.csv", newline="") as fh:
        for r in csv.DictReader(fh):
            rows.setdefault(int(r["worker"]), []).append((int(r["time"]),
                                                          float(r["batch_time_norm"])))
    out = []
    for w in sorted(rows):
        xs = [x for _, x in sorted(rows[w])]
        med = sorted(xs)[len(xs) // 2]
        out.append(tuple(max(-0.12, min(0.12, math.log(max(x, 1.0) / med))) for x in xs))
    return tuple(out)


@functools.cache
def pai_job_pace() -> tuple[float, ...]:
    """PAI job 1's median across workers per sampled iteration, over its overall median: how a
    whole job's pace wanders (input pipeline, shared storage, GC), as a log ratio."""
    by_t: dict[int, list[float]] = {}
    with open(DATA / "job_1_norm.csv", newline="") as fh:
        for r in csv.DictReader(fh):
            by_t.setdefault(int(r["time"]), []).append(float(r["batch_time_norm"]))
    meds = [sorted(v)[len(v) // 2] for _, v in sorted(by_t.items())]
    m = sorted(meds)[len(meds) // 2]
    return tuple(max(-0.1, min(0.1, math.log(x / m))) for x in meds)


@dataclass
class RankNoise:
    """One rank's step-to-step jitter: a PAI worker's residual series from a random offset, and
    a small persistent offset (chip-to-chip spread of identical parts, ~1 %)."""
    series: tuple[float, ...]
    start: int
    offset: float

    @classmethod
    def draw(cls, rng: random.Random) -> RankNoise:
        res = pai_residuals()
        s = res[rng.randrange(len(res))]
        return cls(s, rng.randrange(len(s)), rng.gauss(0.0, 0.008))

    def at(self, step: int) -> float:
        return math.exp(self.offset + self.series[(self.start + step) % len(self.series)])


@dataclass
class Gpu:
    """One H100 SXM: a power demand under load, its own thermal resistance, lagging temperature."""
    demand_w: float
    rth_c_per_w: float
    temp_c: float = 32.0
    ecc: dict = field(default_factory=dict)

    idle_w: float = 70.0

    def sample(self, busy: float, inlet_c: float, dt_s: float) -> tuple[dict, float]:
        """A thermal row's fields at load share ``busy`` (0 idle .. 1 training) and the GPU's
        clock ratio (1.0 = full boost clock; its rank's compute scales with it)."""
        if busy <= 0.0:
            power, clock, thr = self.idle_w, 345.0, IDLE
            ratio = 1.0
        else:
            want = 90.0 + (self.demand_w - 90.0) * busy
            power, thr = min(want, POWER_LIMIT_W), 0
            clock = CLOCK_MAX_MHZ
            if want > POWER_LIMIT_W:
                thr |= THROTTLE_SW_CAP
                clock = CLOCK_MAX_MHZ * math.sqrt(POWER_LIMIT_W / want)
            ratio = clock / CLOCK_MAX_MHZ
            steady = inlet_c + self.rth_c_per_w * power
            if steady > 87.0 and self.temp_c >= 86.5:   # SW thermal slowdown once the GPU
                #                                         is at its limit: held there
                allowed = max(150.0, (87.0 - inlet_c) / self.rth_c_per_w)
                if allowed < power:
                    thr |= THROTTLE_SW_THERMAL
                    cut = (allowed / power) ** 0.4
                    clock *= cut
                    ratio *= cut
                    power = allowed
        target = inlet_c + self.rth_c_per_w * power
        self.temp_c += (target - self.temp_c) * (1.0 - math.exp(-dt_s / 40.0))
        return ({"gpu_temp_c": int(round(self.temp_c)), "mem_temp_c": int(round(self.temp_c + 6)),
                 "power_w": round(power, 1), "sm_clock_mhz": float(round(clock)),
                 "throttle": thr}, ratio)


def phase(rng: random.Random, period_s: float) -> float:
    return rng.uniform(0.0, period_s)
