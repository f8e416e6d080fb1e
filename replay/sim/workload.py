"""What a training job does that is not a fault, and a node reboot: effects that must page nobody.

Workload effects come from the ``workload`` axis (:mod:`replay.sim.axes`) and
span the whole log; a reboot is a benign event the ``reboot`` scenario plans.
None carries a tag, so no record they change is labelled.

>>> import numpy as np
>>> from replay.sim.effects import StepMods
>>> stall = LoaderStall(n_ranks=8, a=0.0, b=200.0, rng=np.random.default_rng(1))
>>> m = StepMods(8)
>>> stall.step(stall.stalls[0][0], m)
>>> [(rank, ms > 1000) for rank, ms in m.extra_rank_ms.items()]
[(6, True)]
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from replay.sim.effects import EccEvent, Effect, NicMod, StepMods, ThermalMod

IDLE_CLOCK_F = 345 / 1980  # an idle H100's SM clock, as a share of its boost clock
IDLE_POWER_F = 0.15
GPU_IDLE = 0x1  # clock-event reason: GPU idle
COOL_TAU_S = 90.0  # time constant of an idle GPU cooling down (and of warming up again)


class SeqLenImbalance(Effect):
    """Every step, each data-parallel replica's compute x U(0.8, 1.2): its batch's sequences."""

    def __init__(self, dp_of: np.ndarray, a: float, b: float, rng: np.random.Generator) -> None:
        self.dp_of, self.n_dp, self.a, self.b, self.rng = dp_of, int(dp_of.max()) + 1, a, b, rng

    def step(self, s: float, m: StepMods) -> None:
        m.scale_all(self.rng.uniform(0.8, 1.2, self.n_dp)[self.dp_of])


class SlowStage(Effect):
    """One pipeline stage persistently 15-30 % slower than it would be (heavier layers)."""

    def __init__(self, pp_of: np.ndarray, a: float, b: float, rng: np.random.Generator) -> None:
        stages = int(pp_of.max()) + 1
        if stages < 2:
            raise ValueError("workload slow_stage needs a pipeline: pp >= 2")
        self.a, self.b = a, b
        self.stage = int(rng.integers(stages))
        self.factor = np.where(pp_of == self.stage, float(rng.uniform(1.15, 1.3)), 1.0)

    def step(self, s: float, m: StepMods) -> None:
        m.scale_all(self.factor)


class LoaderStall(Effect):
    """Every 30-90 s one random rank waits 1-5 s for its data, for one step."""

    def __init__(self, n_ranks: int, a: float, b: float, rng: np.random.Generator) -> None:
        self.a, self.b = a, b
        self.stalls: list[tuple[float, int, float]] = []
        t = a + float(rng.uniform(30, 90))
        while t < b:
            self.stalls.append((t, int(rng.integers(n_ranks)), float(rng.uniform(1000, 5000))))
            t += float(rng.uniform(30, 90))
        self._next = 0

    def step(self, s: float, m: StepMods) -> None:
        while self._next < len(self.stalls) and self.stalls[self._next][0] <= s:
            _, rank, ms = self.stalls[self._next]
            self._next += 1
            m.extra_rank_ms[rank] = m.extra_rank_ms.get(rank, 0.0) + ms


class StepGap(NamedTuple):
    """The job is down over ``[a, resume)`` and restarts ``rewind`` steps back."""

    a: float
    resume: float
    rewind: int


class Reboot(Effect):
    """A node reboots over ``[a, b)``: the job stops, every GPU idles, the job restarts.

    The node's collectors are silent while it is down and come back with its
    volatile ECC and NIC counters at zero; the job relaunches ``restart_s``
    after the node is back, from a checkpoint ``rewind`` steps ago. Idle GPUs
    cool down, clock down to 345 MHz with the idle reason set, and draw little
    power; they warm up again once the job runs.
    """

    def __init__(self, node: int, gpus: list[int], node_gpus: list[int], ports: list[int],
                 node_ports: list[int], a: float, b: float, restart_s: float, rewind: int,
                 rng: np.random.Generator) -> None:
        self.node, self.down_a, self.down_b = node, a, b
        self.resume = b + restart_s
        self.rewind = rewind
        self.gpus, self.node_gpus, self.ports, self.node_ports = gpus, node_gpus, ports, node_ports
        self.cool_c = rng.uniform(22, 30, len(gpus))  # degrees an idle GPU sheds
        self.a, self.b = a, self.resume + 5 * COOL_TAU_S

    def gaps(self) -> list[StepGap]:
        return [StepGap(self.down_a, self.resume, self.rewind)]

    def _cooling(self, t: float) -> float:
        """Share of ``cool_c`` the GPUs are below their running temperature at ``t``."""
        if t < self.down_a:
            return 0.0
        if t < self.resume:
            return 1 - math.exp(-(t - self.down_a) / COOL_TAU_S)
        at_resume = 1 - math.exp(-(self.resume - self.down_a) / COOL_TAU_S)
        return at_resume * math.exp(-(t - self.resume) / COOL_TAU_S)

    def thermal(self, ts: np.ndarray, out: list[ThermalMod]) -> None:
        for j, g in enumerate(self.gpus):
            t = float(ts[g])
            cool = self._cooling(t)
            idle = self.down_a <= t < self.resume
            if cool <= 0 and not idle:
                continue
            out.append((g, -float(self.cool_c[j]) * cool, IDLE_CLOCK_F if idle else 1.0,
                        IDLE_POWER_F if idle else 1.0, False, GPU_IDLE if idle else 0, None))

    def nic(self, ts: np.ndarray, out: list[NicMod]) -> None:
        for p in self.ports:
            if self.down_a <= float(ts[p]) < self.resume:  # no job, no traffic
                out.append((p, 0.01, {}, False, None))

    def ecc_events(self) -> list[EccEvent]:
        return [EccEvent(round(self.down_b, 6), g, None, ("reset",), None)
                for g in self.node_gpus]

    def nic_resets(self) -> list[tuple[float, int]]:
        return [(round(self.down_b, 6), p) for p in self.node_ports]

    def pauses(self) -> list[tuple[int, float, float]]:
        return [(self.node, self.down_a, self.down_b)]
