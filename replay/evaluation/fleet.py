"""Healthy fleets at scale: false isolations per 1,000 GPU-days on thousands of GPU-days.

The target (DESIGN.md) is <= 1 false isolation per 1,000 GPU-days; showing it
takes thousands of fault-free GPU-days, more than a corpus of log files on
disk can hold on a small machine. Here each log is *streamed*: the simulator
(:func:`replay.sim.simulate.simulate`) yields records, each is decoded exactly
as ``faultline replay`` decodes it (:func:`detector.decoding.decode_value`)
and fed to a fresh :class:`detector.engine.Engine` with the topology the log
carries (none, a Slurm ``topology.conf`` view, or the project's format), as
the replay runner reads it. Nothing is written. The same variant and seed
always give the same records, so a figure is reproduced by its command.

Every firing problem on a healthy fleet is false: isolations are what the
target counts, escalations are pages. A fleet *variant* is a cluster shape
and a set of axes (:mod:`replay.sim.axes`) switched on together, so the
corpus is not one shape: dcgm-exporter's default 30 s telemetry, 10 s and 1 s;
power-capped fleets, clock baselines spread 0-5 %, per-GPU speed offsets,
workload effects (sequence-length imbalance, a slow pipeline stage, loader
stalls), a Slurm topology and none, 4 and 8 GPUs per node, DP 4 to DP 256
peer groups, step records without ``compute_ms`` or without rank fields, a
node reboot; step periods of 2-10 s (a large job's step takes seconds). A
variant's hours are cut into logs of ``hours_per_log`` (each its own seed
and engine: a job run), which also spreads the work over processes.

    python bench/healthy_fleet.py [--variants a,b] [--scale 1.0] [--workers 2]

Logs run in the order a run stopped early can report best: each variant's first
log, then the others cheapest per GPU-day first.

>>> v = VARIANTS["powercap-30s"]
>>> v.recipe(1.0).gpus, v.gpu_days(1.0)
(256, 256.0)
>>> [r.duration_s for r in v.logs(1.0)][:2], len(v.logs(1.0))
([21600.0, 21600.0], 4)
"""

from __future__ import annotations

import dataclasses
import math
import time
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass, field
from typing import Any

from replay.evaluation.corpus import LogRecipe
from replay.sim.axes import Axes

_H256 = "topologies/h100-256.topo"


@dataclass(frozen=True)
class Variant:
    """One fleet shape: a whole-cluster job, its axes, how many hours of it."""

    name: str
    topology: str
    tp: int
    pp: int
    dp: int
    hours: float
    step_s: float
    axes: dict[str, str] = field(default_factory=dict)
    hours_per_log: float = 6.0
    what: str = ""

    def recipe(self, scale: float, hours: float | None = None) -> LogRecipe:
        return LogRecipe(self.name, self.topology, None, self.tp, self.pp, self.dp,
                         3600.0 * (self.hours * scale if hours is None else hours),
                         step_s=self.step_s, axes=dataclasses.replace(Axes(), **self.axes),
                         axis="fleet", value=self.name)

    def logs(self, scale: float) -> list[LogRecipe]:
        """The variant's logs: its hours (x scale) in pieces of at most ``hours_per_log``."""
        total = self.hours * scale
        n = max(1, math.ceil(total / self.hours_per_log - 1e-9))
        return [self.recipe(scale, total / n) for _ in range(n)]

    def gpu_days(self, scale: float) -> float:
        return self.tp * self.pp * self.dp * self.hours * scale / 24.0


def _variants() -> dict[str, Variant]:
    v = (
        Variant("powercap-30s", _H256, 8, 4, 8, 24, 6.0,
                {"interval": "30", "powercap": "fleet", "clocks": "varied", "speed": "offsets",
                 "workload": "seqlen"},
                what="h100-256, TP8 PP4 DP8, 30 s telemetry, power-capped fleet, clock "
                     "baselines spread, speed offsets, sequence-length imbalance"),
        Variant("slurm-30s", "topologies/h100-256-ens.topo", 8, 2, 16, 24, 8.0,
                {"interval": "30", "topology": "slurm", "workload": "loader_stall",
                 "numbers": "int"},
                what="h100-256 (RoCE ensNfM NICs), TP8 PP2 DP16, 30 s, Slurm topology.conf, "
                     "loader stalls, integer readings"),
        Variant("notopo-10s", "topologies/h100x4-256.topo", 4, 4, 16, 12, 5.0,
                {"interval": "10", "topology": "none", "workload": "slow_stage",
                 "powercap": "fleet"},
                what="h100x4-256 (4 GPUs/node), TP4 PP4 DP16, 10 s, no topology, one slow "
                     "pipeline stage, power-capped fleet"),
        Variant("h1k-30s", "topologies/h100-1k.topo", 8, 4, 32, 24, 10.0,
                {"interval": "30", "speed": "offsets", "clocks": "varied"}, hours_per_log=3.0,
                what="h100-1k, 1,024 GPUs, TP8 PP4 DP32, 30 s, speed offsets, clocks spread"),
        Variant("gb200-30s", "topologies/gb200-nvl72.topo", 4, 4, 36, 24, 8.0,
                {"interval": "30", "fields": "no_compute", "powercap": "fleet"},
                hours_per_log=3.0,
                what="GB200 NVL72 x 8 racks, 576 GPUs, TP4 PP4 DP36, 30 s, no compute_ms, "
                     "power-capped fleet"),
        Variant("dp4-10s", _H256, 8, 8, 4, 12, 4.0,
                {"interval": "10", "speed": "offsets", "numbers": "float",
                 "workload": "seqlen"},
                what="h100-256, TP8 PP8 DP4 (small peer groups), 10 s, speed offsets, "
                     "sequence-length imbalance"),
        Variant("puredp-30s", "topologies/h100x4-256.topo", 1, 1, 256, 12, 3.0,
                {"interval": "30", "fields": "no_rank_fields", "clocks": "varied"},
                what="h100x4-256, pure data parallelism (DP256, no rank fields), 30 s, clocks "
                     "spread"),
        Variant("reboot-1s", _H256, 8, 4, 8, 2, 2.0,
                {"interval": "1", "scenario": "reboot", "speed": "offsets"},
                hours_per_log=1.0,
                what="h100-256, TP8 PP4 DP8, 1 s telemetry, a node reboots in each hour"),
    )
    return {x.name: x for x in v}


VARIANTS = _variants()


def run_log(task: tuple[LogRecipe, int]) -> dict[str, Any]:
    """Stream one healthy log through a fresh engine; what fired, on how many GPU-days."""
    from detector.alerts import ISOLATION
    from detector.decoding import decode_value
    from detector.engine import Engine
    from detector.events import TELEMETRY_TOPICS, InvalidMessage
    from detector.topology import Topology
    from replay.evaluation.corpus import scenario_for
    from replay.sim.simulate import simulate

    r, seed = task
    t0 = time.process_time()
    sc, _ = scenario_for(r, seed, 0)
    if sc.faults:
        raise ValueError(f"{r.name}: a healthy fleet has no faults")
    records = simulate(sc)
    telemetry = frozenset(TELEMETRY_TOPICS)
    first = next(records)
    topology = None
    if first["topic"] == "topology":  # as replay reads a log's own topology (DESIGN.md)
        v = first["value"]
        topology = Topology.from_text(v["text"], source=f"{r.name} (topology record)",
                                      fmt=v["format"])
        head: Iterator[dict[str, Any]] = iter(())
    else:
        head = iter((first,))
    eng = Engine(None, topology)
    alerts: list[Any] = []
    invalid: Counter[str] = Counter()
    events = 0
    first_ts = last_ts = None

    def stream() -> Iterator[dict[str, Any]]:
        yield from head
        yield from records

    for rec in stream():
        topic = rec["topic"]
        if topic not in telemetry:
            continue
        try:
            ev = decode_value(topic, rec["value"])
        except InvalidMessage as exc:
            invalid[f"{topic} {exc.field or 'message'}"] += 1
            continue
        alerts += eng.process(ev)
        events += 1
        if first_ts is None:
            first_ts = ev.ts
        last_ts = ev.ts if last_ts is None else max(last_ts, ev.ts)
    alerts += eng.finish()
    firing: dict[tuple[str, str], Any] = {}
    for a in alerts:
        if a.status == "firing":
            firing.setdefault((a.topic, a.dedup_key), a)
    gpu_days = r.gpus * max(0.0, (last_ts or 0.0) - (first_ts or 0.0)) / 86400.0
    return {"variant": r.name, "seed": seed, "gpus": r.gpus, "hours": r.duration_s / 3600.0,
            "gpu_days": gpu_days, "events": events, "invalid": dict(invalid),
            "false_isolations": len([t for t, _ in firing if t == ISOLATION]),
            "escalations": len([t for t, _ in firing if t != ISOLATION]),
            "problems": [f"{a.topic.rsplit('.', 1)[-1]} {a.kind}/{a.cause} {a.scope.key} "
                         f"@{a.detected_ts - (first_ts or 0.0):.0f}s conf {a.confidence}"
                         for a in firing.values()],
            "cpu_s": round(time.process_time() - t0, 1)}


def fleet_tasks(names: Sequence[str], scale: float, seed: int) -> list[tuple[LogRecipe, int]]:
    """(log recipe, seed) for every log of the named variants; seeds seed, seed+1, ..."""
    rounds: list[list[tuple[LogRecipe, int]]] = []
    for i, name in enumerate(names):
        for j, r in enumerate(VARIANTS[name].logs(scale)):
            while len(rounds) <= j:
                rounds.append([])
            rounds[j].append((r, seed + 1000 * i + j))
    # every variant's first log, then the rest cheapest per GPU-day first (records a
    # GPU-day: steps and three telemetry topics): a run stopped early has covered every
    # variant and as many GPU-days as it could; within the first round the biggest first
    first = sorted(rounds[0], key=lambda t: -t[0].gpus * t[0].duration_s / t[0].step_s) \
        if rounds else []
    rest = sorted((t for rnd in rounds[1:] for t in rnd),
                  key=lambda t: (1 / t[0].step_s + 3 / t[0].axes.interval_s,
                                 t[0].name, t[1]))
    return first + rest


def run_fleets(names: Sequence[str], scale: float = 1.0, seed: int = 7000, workers: int = 2,
               progress: Callable[[dict[str, Any]], None] | None = None
               ) -> list[dict[str, Any]]:
    """Every log of the named variants, in ``workers`` processes; one result per log."""
    tasks = fleet_tasks(names, scale, seed)
    out: list[dict[str, Any]] = []
    if workers <= 1:
        for t in tasks:
            out.append(run_log(t))
            if progress:
                progress(out[-1])
        return out
    with ProcessPoolExecutor(max_workers=workers) as pool:
        for fut in as_completed([pool.submit(run_log, t) for t in tasks]):
            out.append(fut.result())
            if progress:
                progress(out[-1])
    return out


def per_variant(results: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Results summed per variant (in VARIANTS order), and a total row."""
    rows: list[dict[str, Any]] = []
    for name in [*VARIANTS, "all"]:
        rs = [r for r in results if name in ("all", r["variant"])]
        if not rs:
            continue
        days = sum(r["gpu_days"] for r in rs)
        iso = sum(r["false_isolations"] for r in rs)
        rows.append({"variant": name, "logs": len(rs), "gpu_days": days,
                     "events": sum(r["events"] for r in rs),
                     "false_isolations": iso, "escalations": sum(r["escalations"] for r in rs),
                     "per_1k_gpu_days": 1000.0 * iso / days if days else None,
                     "upper95_per_1k": 1000.0 * poisson_upper(iso) / days if days else None,
                     "cpu_s": round(sum(r["cpu_s"] for r in rs), 1)})
    return rows


def poisson_upper(k: int, conf: float = 0.95) -> float:
    """One-sided upper confidence bound on a Poisson mean having seen ``k`` events.

    >>> round(poisson_upper(0), 3), round(poisson_upper(1), 3)
    (2.996, 4.744)
    """
    def cdf(mu: float) -> float:  # P(X <= k) for X ~ Poisson(mu)
        term = total = math.exp(-mu)
        for i in range(1, k + 1):
            term *= mu / i
            total += term
        return total

    lo, hi = 0.0, 10.0 + 10.0 * k
    for _ in range(100):  # cdf falls as mu grows: bisect for cdf(mu) = 1 - conf
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if cdf(mid) > 1 - conf else (lo, mid)
    return (lo + hi) / 2
