"""Axes of variation the detectors must not depend on: ``faultline simulate --axis NAME=VALUE``.

Each axis changes how the simulated cluster *reports* itself, or what the
job does that is not a fault, never the faults themselves; the first value
of each axis is the default and generates exactly what the simulator wrote
before the axis existed. Issue 10 lists them:

========== ============================================================================
axis       values (default first)
========== ============================================================================
interval   ``1-per-gpu`` (thermal and NIC every 1 s at each GPU's own phase, ECC 5 s),
           ``1``, ``10``, ``30``: every collector of a node samples at one per-node
           phase with jitter; ECC at the same interval (5 s at ``1``)
numbers    ``mixed`` (half the nodes report integer temperatures), ``int`` (all
           temperatures and clocks integers, as DCGM has them), ``float`` (all floats)
powercap   ``none``, ``fleet``: 30-70 % of GPUs sit at their 700 W cap with ``0x4`` set and
           the SM clock 2-6 % down most of the time; their ranks are not slower
clocks     ``same`` (1980 MHz), ``varied``: each GPU's clock baseline 0-5 % lower
speed      ``tight`` (per-GPU speed N(1, 0.4 %)), ``offsets``: fixed per-GPU offsets
           uniform in +-3 %
fields     ``all``, ``no_compute`` (step records without ``compute_ms``),
           ``no_rank_fields`` (pure data parallelism: no tp/pp/dp rank fields; needs
           tp = pp = 1)
workload   ``none``, ``seqlen`` (each replica's compute x U(0.8, 1.2) every step),
           ``slow_stage`` (one pipeline stage 15-30 % slower all along),
           ``loader_stall`` (every 30-90 s one rank waits 1-5 s for data, for one step)
topology   ``faultline`` (the log carries the physical topology, NICs and all),
           ``slurm`` (a Slurm ``topology.conf`` view: switches and nodes only),
           ``none`` (no topology record)
scenario   ``plain``, ``slow_from_start`` (a rank 30-90 % slower from the job's first
           step), ``overlap`` (faults in pairs overlapping in time, on different units),
           ``checkpoint`` (every fault starts during a checkpoint), ``reboot`` (a node
           reboots mid-run: the job stops, the node comes back with zeroed counters, the
           job restarts from its last checkpoint)
========== ============================================================================

>>> a = parse_axes(["interval=10", "workload=seqlen"])
>>> a.interval, a.workload, a.changed()
('10', 'seqlen', {'interval': '10', 'workload': 'seqlen'})
>>> parse_axes(["interval=5"])
Traceback (most recent call last):
...
ValueError: --axis interval=5: unknown value; interval takes 1-per-gpu, 1, 10, 30
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from dataclasses import dataclass

from detector.hostlist import compress_hostlist
from detector.topology import Topology

AXES: dict[str, tuple[str, ...]] = {
    "interval": ("1-per-gpu", "1", "10", "30"),
    "numbers": ("mixed", "int", "float"),
    "powercap": ("none", "fleet"),
    "clocks": ("same", "varied"),
    "speed": ("tight", "offsets"),
    "fields": ("all", "no_compute", "no_rank_fields"),
    "workload": ("none", "seqlen", "slow_stage", "loader_stall"),
    "topology": ("faultline", "slurm", "none"),
    "scenario": ("plain", "slow_from_start", "overlap", "checkpoint", "reboot"),
}


@dataclass(frozen=True)
class Axes:
    """One value per axis; the defaults reproduce the simulator's original output."""

    interval: str = "1-per-gpu"
    numbers: str = "mixed"
    powercap: str = "none"
    clocks: str = "same"
    speed: str = "tight"
    fields: str = "all"
    workload: str = "none"
    topology: str = "faultline"
    scenario: str = "plain"

    def __post_init__(self) -> None:
        for name, values in AXES.items():
            v = getattr(self, name)
            if v not in values:
                raise ValueError(f"axis {name}: unknown value {v!r}; takes {', '.join(values)}")

    def changed(self) -> dict[str, str]:
        """The axes set away from their defaults."""
        return {n: getattr(self, n) for n, vs in AXES.items() if getattr(self, n) != vs[0]}

    @property
    def interval_s(self) -> int:
        """Seconds between two thermal/NIC samples of one GPU or port."""
        return 1 if self.interval == "1-per-gpu" else int(self.interval)

    @property
    def ecc_period_s(self) -> int:
        return max(5, self.interval_s)


def parse_axes(items: Iterable[str], base: Axes | None = None) -> Axes:
    """``NAME=VALUE`` items (repeatable, or comma-separated) as :class:`Axes`."""
    values: dict[str, str] = {}
    for item in items:
        for part in item.split(","):
            part = part.strip()
            if not part:
                continue
            name, sep, value = part.partition("=")
            name, value = name.strip(), value.strip()
            if not sep or name not in AXES:
                raise ValueError(f"--axis {part}: expected NAME=VALUE with NAME one of "
                                 f"{', '.join(AXES)}")
            if value not in AXES[name]:
                raise ValueError(f"--axis {part}: unknown value; {name} takes "
                                 f"{', '.join(AXES[name])}")
            values[name] = value
    return dataclasses.replace(base or Axes(), **values)


def slurm_view(topology: Topology) -> str:
    """The topology as a site's Slurm ``topology.conf`` has it: switches and nodes, no NICs.

    Leaves list their nodes, upper tiers their switches, NVLink domains become
    ``BlockName=`` blocks. For a cluster whose NICs all face the node's leaf
    this describes the same switch membership as the original.

    >>> topo = Topology.from_text("Topology=t\\nNodeSet=n[0-3] Gpus=4 Nics=mlx5_[0-1]\\n"
    ...                           "SwitchName=leaf[0-1] Nodes=n[0-3]\\n"
    ...                           "SwitchName=spine0 Switches=leaf[0-1]")
    >>> print(slurm_view(topo))
    # Slurm topology.conf view of t: switches and nodes only
    SwitchName=leaf0 Nodes=n[0-1]
    SwitchName=leaf1 Nodes=n[2-3]
    SwitchName=spine0 Switches=leaf[0-1]
    <BLANKLINE>
    >>> Topology.from_text(slurm_view(topo)).switch_of("n2", "mlx5_1")
    'leaf1'
    """
    lines = [f"# Slurm topology.conf view of {topology.name}: switches and nodes only"]
    switches = topology.switches()
    children: dict[str, list[str]] = {}
    for s in switches:
        for parent in topology.parent_of(s):
            children.setdefault(parent, []).append(s)
    for s in switches:
        nodes = topology.nodes_under(s)
        if nodes:
            lines.append(f"SwitchName={s} Nodes={compress_hostlist(nodes)}")
    for s in switches:
        if s in children:
            lines.append(f"SwitchName={s} Switches={compress_hostlist(sorted(children[s]))}")
    for d in topology.domains():
        lines.append(f"BlockName={d} Nodes={compress_hostlist(topology.nodes_in_domain(d))}")
    if len(lines) == 1:
        raise ValueError(f"topology {topology.name!r} names no switches or domains: a Slurm "
                         "topology.conf of it would be empty")
    return "\n".join(lines) + "\n"


def topology_record(topology: Topology, axes: Axes) -> dict[str, object] | None:
    """The topology record a log starts with under the ``topology`` axis (None: no record)."""
    if axes.topology == "none":
        return None
    if axes.topology == "slurm":
        return {"topic": "topology", "value": {"format": "slurm", "text": slurm_view(topology)}}
    return topology.record()
