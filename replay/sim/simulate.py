"""Labelled incident logs from a simulated synchronous training job: ``faultline simulate``.

A :class:`Scenario` (topology, job layout, faults, benign events, seed) goes
in; records ``{"topic": ..., "value": ...}`` come out in event-time order
(up to the transport noise a real Kafka feed has: a few duplicates, a few
messages up to 3 s late), with one ``labels`` record per fault at the end.
The same scenario always gives the same bytes. Generation is streamed in
1 s slices, so memory does not grow with the log's duration.

A label's ``start_ts``/``end_ts`` are the event times of the first and last
record the fault changed (DESIGN.md, "Incident logs"): records of the faulty
GPU or port while a symptom shows (a ramp's first sample counts), its XID
messages, and step records of every rank when the fault sets the job's
pace. Memory faults end with a GPU reset (counters drop to zero, flags
clear); a cumulative counter that stays higher afterwards is no symptom.

>>> from detector.topology import Topology
>>> topo = Topology.from_text("Topology=demo\\nNodeSet=n[0-1] Gpus=4 Nics=mlx5_[0-1]")
>>> sc = plan_scenario(topo, job=JobLayout(tp=4, pp=1, dp=2), duration_s=160, seed=3,
...                    faults=["sdc_checksum"], benign=[])
>>> sc.faults[0].kind, sc.faults[0].target
('sdc_checksum', {'node': 'n1', 'gpu': 1})
>>> records = list(simulate(sc))
>>> label = records[-1]["value"]
>>> records[-1]["topic"], label["kind"], label["cause"], label["scope"], label["attributable"]
('labels', 'sdc', 'unknown', {'level': 'job', 'job': 'job-1'}, False)

With two replicas (DP 2) nobody can tell which of the two disagreeing GPUs is wrong: the
label is the job, unattributable (with three or more, the minority GPU, ``gpu_hardware``).

Ranks 1 and 5 are peers (same tp_rank and pp_rank); from the fault's start
their checksums disagree, and the label starts at rank 5's first bad one:

>>> steps = [r["value"] for r in records if r["topic"] == "telemetry.step"]
>>> checksum = {(v["step"], v["rank"]): v["param_checksum"] for v in steps}
>>> odd = [v for v in steps if v["param_checksum"] != checksum[v["step"], v["rank"] ^ 4]]
>>> first_bad = min(v["ts"] for v in odd if v["rank"] == 5)
>>> sorted({v["rank"] for v in odd}), first_bad == label["start_ts"]
([1, 5], True)
"""

from __future__ import annotations

import argparse
import bisect
import dataclasses
import gzip
import heapq
import math
import os
from collections.abc import Callable, Iterable, Iterator
from operator import itemgetter
from pathlib import Path
from typing import Any

import orjson

from detector.alerts import Label, Scope
from detector.events import STEP
from replay.sim.axes import AXES, parse_axes, topology_record
from replay.sim.counters import EccGen, NicGen
from replay.sim.model import Record, StepGen, ThermalGen
from replay.sim.plan import (
    BENIGN_KINDS,
    DOMAIN_FAULT_KINDS,
    FAULT_KINDS,
    FAULT_TABLE,
    LLAMA3_WEIGHTS,
    BenignSpec,
    FaultSpec,
    JobLayout,
    Placement,
    Scenario,
    check_kinds,
    kinds_for,
    llama3_mix,
    place_job,
    plan_scenario,
    rng_for,
)
from replay.sim.schedule import Schedule

__all__ = [
    "BENIGN_KINDS", "DOMAIN_FAULT_KINDS", "FAULT_KINDS", "LLAMA3_WEIGHTS", "BenignSpec",
    "FaultSpec", "JobLayout",
    "Scenario", "configure_parser", "label_for", "llama3_mix", "plan_scenario", "run", "simulate",
    "write_log",
]

LABELS = "labels"
DUPLICATE_P = 0.003  # share of messages delivered twice
LATE_P = 0.01  # share of messages delivered late
LATE_MAX_S = 3.0  # DESIGN.md allows 5 s of disorder; stay inside it
DUPLICATE_MAX_S = 2.0
_TS = itemgetter(0)


def label_for(i: int, spec: FaultSpec, sc: Scenario, start_ts: float, end_ts: float) -> Label:
    """The ground-truth label of the scenario's fault ``i``."""
    info = FAULT_TABLE[spec.kind]
    t = spec.target
    if spec.kind == "sdc_checksum" and sc.job.dp == 2:
        # A checksum group is a (tp, pp) slot's replicas: with two, the corrupted one and its
        # one peer disagree and nothing tells which is wrong (DESIGN: attributable false means
        # no telemetry names the cause; the location is what can be localised, the job).
        # faultline raises one sdc/unknown job escalation for such a tie (sdc13).
        return Label(f"{sc.label_prefix}s{sc.seed}-f{i:02d}-{spec.kind}", info.label_kind,
                     "unknown", Scope.of_job(sc.job.job), start_ts, end_ts, False)
    if info.level == "gpu":
        scope = Scope.of_gpu(t["node"], t["gpu"])
    elif info.level == "nic":
        scope = Scope.of_nic(t["node"], t["nic"], 1)
    elif info.level == "domain":
        scope = Scope.of_domain(t["domain"])
    else:
        scope = Scope.of_switch(t["switch"])
    return Label(f"{sc.label_prefix}s{sc.seed}-f{i:02d}-{spec.kind}", info.label_kind,
                 info.cause, scope, start_ts, end_ts, info.attributable)


class _Transport:
    """Duplicates and late deliveries, as a Kafka feed has them; event times stay untouched."""

    def __init__(self, seed: int) -> None:
        self.seed = seed
        self.heap: list[tuple[float, int, tuple[str, dict[str, Any]]]] = []
        self.seq = 0

    def pass_on(self, ready: list[Record], sl: int) -> Iterator[tuple[str, dict[str, Any]]]:
        r = rng_for(self.seed, "transport", sl)
        u, d = r.random(len(ready)).tolist(), r.random(len(ready)).tolist()
        heap = self.heap
        for (ts, topic, value, _), ui, di in zip(ready, u, d, strict=True):
            while heap and heap[0][0] <= ts:
                yield heapq.heappop(heap)[2]
            if ui < LATE_P:
                self.seq += 1
                late = ts + 0.05 + (LATE_MAX_S - 0.05) * di
                heapq.heappush(heap, (late, self.seq, (topic, value)))
                continue
            yield topic, value
            if ui > 1 - DUPLICATE_P:
                self.seq += 1
                heapq.heappush(heap, (ts + 0.01 + (DUPLICATE_MAX_S - 0.01) * di, self.seq,
                                      (topic, dict(value))))

    def flush(self) -> Iterator[tuple[str, dict[str, Any]]]:
        while self.heap:
            yield heapq.heappop(self.heap)[2]


def simulate(scenario: Scenario) -> Iterator[dict[str, Any]]:
    """Records of the scenario's incident log, in (near) event-time order, labels last."""
    sc = scenario
    if not sc.duration_s > 0:
        raise ValueError(f"duration_s must be > 0, got {sc.duration_s!r}")
    pl = place_job(sc.topology, sc.job)
    sched = Schedule(sc, pl)  # raises ValueError on a bad fault or benign spec
    return _records(sc, pl, sched)


def _records(sc: Scenario, pl: Placement, sched: Schedule) -> Iterator[dict[str, Any]]:
    cluster = sc.cluster or sc.topology.name
    steps = StepGen(sc, pl, sched, cluster)
    slicers: list[ThermalGen | NicGen | EccGen] = [
        ThermalGen(sc, pl, sched, cluster), NicGen(sc, pl, sched, cluster),
        EccGen(sc, pl, sched, cluster)]
    pauses = [(pl.nodes[n], a, b) for n, a, b in sched.pauses]
    first: list[float | None] = [None] * len(sc.faults)
    last: list[float | None] = [None] * len(sc.faults)
    transport = _Transport(sc.seed) if sc.transport_noise else None
    pending: list[Record] = []
    n_slices = math.ceil(sc.duration_s)
    head = topology_record(sc.topology, sc.axes)
    if head is not None:
        yield head  # the log describes its own cluster (DESIGN.md), as the topology axis says
    for sl in range(n_slices):
        t0 = sc.start_ts + sl
        t1 = t0 + 1
        batch: list[Record] = []
        steps.until(t1, batch)
        for gen in slicers:
            gen.slice(sl, t0, batch)
        for node, a, b in pauses:
            if a < t1 + 1 and t0 - 1 < b:  # the node's collector is down; steps go on
                batch = [r for r in batch if r[1] == STEP or r[2]["node"] != node
                         or not a <= r[0] < b]
        pending += batch
        pending.sort(key=_TS)
        cut = bisect.bisect_left(pending, t1, key=_TS) if sl < n_slices - 1 else len(pending)
        ready, pending = pending[:cut], pending[cut:]
        for ts, _, _, tags in ready:
            for tag in tags:
                if first[tag] is None:
                    first[tag] = ts
                last[tag] = ts
        out = transport.pass_on(ready, sl) if transport else ((r[1], r[2]) for r in ready)
        for topic, value in out:
            yield {"topic": topic, "value": value}
    if transport:
        for topic, value in transport.flush():
            yield {"topic": topic, "value": value}
    for i, spec in enumerate(sc.faults):
        a = sc.start_ts + spec.start_s
        # a fault that changed nothing visible (e.g. hidden by the log's end) keeps its window
        start, end = first[i], last[i]
        if start is None or end is None:
            start, end = a, a + spec.duration_s
        yield {"topic": LABELS, "value": label_for(i, spec, sc, start, end).to_dict()}


def write_log(records: Iterable[dict[str, Any]], path: str | os.PathLike[str]) -> int:
    """Write records as JSON Lines (gzip if the path ends in .gz); return how many."""
    path = os.fspath(path)
    tmp = path + ".tmp"
    dumps = orjson.dumps
    n = 0
    try:
        with open(tmp, "wb") as raw:
            # no file name and mtime 0 in the gzip header: same records, same bytes
            sink: Any = (gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0,
                                       compresslevel=6) if path.endswith(".gz") else raw)
            buf: list[bytes] = []
            for rec in records:
                buf.append(dumps(rec))
                if len(buf) >= 8192:
                    sink.write(b"\n".join(buf) + b"\n")
                    n += len(buf)
                    buf.clear()
            if buf:
                sink.write(b"\n".join(buf) + b"\n")
                n += len(buf)
            if sink is not raw:
                sink.close()
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.remove(tmp)
        raise
    return n


def _kinds(text: str, known: tuple[str, ...], flag: str, what: str) -> tuple[str, ...]:
    text = text.strip()
    if text == "all":
        return known
    if text in ("none", ""):
        return ()
    kinds = tuple(k.strip() for k in text.split(",") if k.strip())
    try:
        return check_kinds(kinds, known, what)
    except ValueError as exc:
        raise ValueError(f"{flag}: {exc}") from None


def configure_parser(p: argparse.ArgumentParser) -> None:
    """Flags of ``faultline simulate``."""
    p.add_argument("--topology", required=True, metavar="FILE",
                   help="faultline topology file (nodes, GPUs, NICs, switches)")
    p.add_argument("--out", required=True, metavar="PATH",
                   help="incident log to write (.jsonl, or .jsonl.gz for gzip)")
    p.add_argument("--duration", type=float, default=1800.0, metavar="S",
                   help="seconds of event time (default 1800; all ten faults need >= 1020)")
    p.add_argument("--seed", type=int, default=0, metavar="N", help="same seed, same bytes")
    p.add_argument("--tp", type=int, default=8, help="tensor-parallel degree (default 8)")
    p.add_argument("--pp", type=int, default=2, help="pipeline-parallel degree (default 2)")
    p.add_argument("--dp", type=int, default=8, help="data-parallel degree (default 8)")
    p.add_argument("--step-s", type=float, default=1.0, metavar="S",
                   help="nominal training step period (default 1.0)")
    p.add_argument("--job", default="job-1", help="job id (default job-1)")
    p.add_argument("--tenant", default="tenant-a", help="tenant (default tenant-a)")
    p.add_argument("--faults", default=None, metavar="KINDS",
                   help=f"comma list (repeat a kind for two), 'all' (default) or 'none'; "
                        f"kinds: {', '.join(FAULT_KINDS + DOMAIN_FAULT_KINDS)} (nvswitch: "
                        "topologies with NVLink domains)")
    p.add_argument("--benign", default="all", metavar="KINDS",
                   help=f"comma list, 'all' (default) or 'none'; kinds: {', '.join(BENIGN_KINDS)}")
    p.add_argument("--nodes", default=None, metavar="HOSTLIST",
                   help="run the job on these nodes (Slurm hostlist), default the first ones")
    p.add_argument("--start-ts", type=float, default=1767225600.0, metavar="TS",
                   help="event time of the log's start, Unix seconds (default 2026-01-01T00:00Z)")
    p.add_argument("--no-transport-noise", action="store_true",
                   help="no duplicated or late messages")
    p.add_argument("--llama3-mix", type=int, default=None, metavar="N",
                   help="instead of --faults: N faults drawn with Llama 3's root-cause frequencies")
    p.add_argument("--axis", action="append", default=[], metavar="NAME=VALUE",
                   help="a variation the detectors must not depend on (repeatable; default "
                   "first): " + "; ".join(f"{n}: {'|'.join(v)}" for n, v in AXES.items()))


def run(args: argparse.Namespace) -> int:
    """``faultline simulate``: plan, generate and write one log; ValueError on bad input."""
    from detector.hostlist import expand_hostlist
    from detector.topology import Topology

    if args.llama3_mix is not None and args.faults is not None:
        raise ValueError("give --faults or --llama3-mix, not both")
    topology = Topology.load(args.topology)
    nodes = tuple(expand_hostlist(args.nodes)) if args.nodes else None
    job = JobLayout(job=args.job, tp=args.tp, pp=args.pp, dp=args.dp, step_s=args.step_s,
                    tenant=args.tenant, nodes=nodes)
    if args.llama3_mix is not None:
        faults = llama3_mix(args.llama3_mix, args.seed)
    else:
        faults = _kinds(args.faults or "all", kinds_for(topology), "--faults", "fault")
    benign = _kinds(args.benign, BENIGN_KINDS, "--benign", "benign")
    scenario = plan_scenario(topology, job=job, duration_s=args.duration, seed=args.seed,
                             faults=faults, benign=benign, start_ts=args.start_ts,
                             axes=parse_axes(args.axis))
    if args.no_transport_noise:
        scenario = dataclasses.replace(scenario, transport_noise=False)
    from detector.cli.progress import progress

    with progress(f"simulate {Path(args.out).name}", total=scenario.duration_s,
                  unit="s") as on_progress:
        n = write_log(_with_progress(simulate(scenario), scenario.start_ts, on_progress),
                      args.out)
    kinds = ",".join(f.kind for f in scenario.faults) or "none"
    changed = ", ".join(f"{k}={v}" for k, v in scenario.axes.changed().items())
    print(f"wrote {n} records ({len(scenario.faults)} faults: {kinds}; "
          f"{len(scenario.benign)} benign events{'; axes ' + changed if changed else ''}) "
          f"to {args.out}")
    return 0


def _with_progress(records: Iterator[dict[str, Any]], start_ts: float,
                   on_progress: Callable[[float], None]) -> Iterator[dict[str, Any]]:
    """Pass records on, reporting the event seconds simulated so far every 20,000 records."""
    for i, rec in enumerate(records):
        if i % 20_000 == 0:
            ts = rec["value"].get("ts") if isinstance(rec.get("value"), dict) else None
            if isinstance(ts, int | float):
                on_progress(ts - start_ts)
        yield rec
