"""The ``scenario`` axis: a planned scenario reshaped into a harder one, seeded.

- ``slow_from_start``: a rank 30-90 % slower than its peers from the job's
  first step (a job landing on a bad GPU); the planned faults move later.
- ``overlap``: faults in pairs, the second starting while the first is on,
  on units that share no node.
- ``checkpoint``: every fault starts 1-4 s into a checkpoint.
- ``reboot``: a node reboots between two faults; the job stops, restarts
  from its last checkpoint once the node is back, and everything planned
  after the reboot moves later.

>>> from detector.topology import Topology
>>> from replay.sim.axes import Axes
>>> from replay.sim.plan import JobLayout, plan_scenario
>>> topo = Topology.from_text("Topology=t\\nNodeSet=n[0-3] Gpus=4 Nics=mlx5_[0-1]")
>>> sc = plan_scenario(topo, job=JobLayout(tp=4, pp=1, dp=4), duration_s=400, seed=2,
...                    faults=["sdc_checksum", "nvlink"], benign=[])
>>> first = apply_scenario(sc, Axes(scenario="slow_from_start"))
>>> f = first.faults[0]
>>> f.kind, f.start_s, f.magnitude >= 0.3, first.duration_s > sc.duration_s
('silent_slow', 0.0, True, True)
>>> pair = apply_scenario(sc, Axes(scenario="overlap")).faults
>>> a, b = sorted(pair, key=lambda f: f.start_s)
>>> a.start_s < b.start_s < a.start_s + a.duration_s
True
"""

from __future__ import annotations

import dataclasses

from replay.sim.axes import Axes
from replay.sim.plan import (
    GAP_S,
    BenignSpec,
    FaultSpec,
    Placement,
    Scenario,
    fault_nodes,
    place_job,
    rng_for,
)


def apply_scenario(sc: Scenario, axes: Axes | None = None) -> Scenario:
    """The scenario with ``axes`` (default: its own) set, reshaped by the ``scenario`` axis."""
    axes = axes or sc.axes
    sc = dataclasses.replace(sc, axes=axes)
    pl = place_job(sc.topology, sc.job)
    kind = axes.scenario
    if kind == "slow_from_start":
        return _slow_from_start(sc, pl)
    if kind == "overlap":
        return _overlap(sc)
    if kind == "checkpoint":
        return _checkpoints(sc)
    if kind == "reboot":
        return _reboot(sc, pl)
    return sc


def _shift(sc: Scenario, after_s: float, by_s: float) -> Scenario:
    """Everything that starts at or after ``after_s`` moves ``by_s`` later; the log grows."""
    def move(x: float) -> float:
        return round(x + by_s, 3) if x >= after_s else x
    return dataclasses.replace(
        sc, duration_s=round(sc.duration_s + by_s, 3),
        faults=tuple(dataclasses.replace(f, start_s=move(f.start_s)) for f in sc.faults),
        benign=tuple(dataclasses.replace(b, start_s=move(b.start_s)) for b in sc.benign))


def _slow_from_start(sc: Scenario, pl: Placement) -> Scenario:
    rng = rng_for(sc.seed, "scenario", "slow_from_start")
    dur = round(float(rng.uniform(90, 150)), 3)
    sc = _shift(sc, 0.0, dur + GAP_S)
    node, gpu = pl.gpus[int(rng.integers(pl.n_ranks))]
    first = FaultSpec("silent_slow", {"node": node, "gpu": gpu}, 0.0, dur,
                      round(float(rng.uniform(0.3, 0.9)), 4), "step")
    return dataclasses.replace(sc, faults=(first, *sc.faults))


def _overlap(sc: Scenario) -> Scenario:
    rng = rng_for(sc.seed, "scenario", "overlap")
    faults = list(sc.faults)
    order = sorted(range(len(faults)), key=lambda i: faults[i].start_s)
    benign = list(sc.benign)
    j = 0
    while j + 1 < len(order):
        f, g = faults[order[j]], faults[order[j + 1]]
        if fault_nodes(f, sc.topology) & fault_nodes(g, sc.topology):
            j += 1  # same node: not two faults on different units
            continue
        start = round(f.start_s + float(rng.uniform(0.2, 0.6)) * f.duration_s, 3)
        moved = dataclasses.replace(g, start_s=start)
        faults[order[j + 1]] = moved
        # benign events on the moved fault's nodes while it is on would blur its symptoms
        busy = fault_nodes(moved, sc.topology)
        benign = [b for b in benign if not (
            b.target.get("node") in busy and b.start_s < start + moved.duration_s + 5
            and start - 5 < b.start_s + b.duration_s)]
        j += 2
    return dataclasses.replace(sc, faults=tuple(faults), benign=tuple(benign))


def _checkpoints(sc: Scenario) -> Scenario:
    rng = rng_for(sc.seed, "scenario", "checkpoint")
    extra = [BenignSpec("checkpoint", {"job": sc.job.job},
                        round(max(0.0, f.start_s - float(rng.uniform(1, 4))), 3),
                        round(float(rng.uniform(5, 20)), 3)) for f in sc.faults]
    return dataclasses.replace(sc, benign=tuple(sorted(sc.benign + tuple(extra),
                                                       key=lambda b: (b.start_s, b.kind))))


def _reboot(sc: Scenario, pl: Placement) -> Scenario:
    rng = rng_for(sc.seed, "scenario", "reboot")
    faults = sorted(sc.faults, key=lambda f: f.start_s)
    if faults:
        k = len(faults) // 2
        before = faults[k - 1] if k else None
        at = (before.start_s + before.duration_s if before else faults[0].start_s / 2) + float(
            rng.uniform(15, 30))
    else:
        before, at = None, sc.duration_s / 2
    down = round(float(rng.uniform(60, 120)), 3)
    restart = round(float(rng.uniform(30, 60)), 3)
    busy = fault_nodes(before, sc.topology) if before else set()
    nodes = [n for n in pl.nodes if n not in busy] or list(pl.nodes)
    node = nodes[int(rng.integers(len(nodes)))]
    at = round(at, 3)
    sc = _shift(sc, at, down + restart + GAP_S)
    spec = BenignSpec("reboot", {"node": node, "restart_s": restart,
                                 "rewind_steps": int(rng.integers(10, 60))}, at, down)
    return dataclasses.replace(sc, benign=tuple(sorted((*sc.benign, spec),
                                                       key=lambda b: (b.start_s, b.kind))))
