"""Evaluation corpora: many simulated incident logs and a manifest that says what is in them.

A corpus is a folder with ``corpus.json`` (the manifest) and ``logs/*.jsonl.gz``.
It is built from a *scale* — a list of :class:`LogRecipe` (topology, job
slice, fault mix, duration) — and a seed range, one seed per log, so a tuning
corpus and a reporting corpus differ only in their seeds. The manifest names
each log's topology file, seed, job and every injected fault with its shape
and magnitude, which the scorer's labels do not carry.

On top of the planner (:func:`replay.sim.plan.plan_scenario`) a recipe
rotates fault shapes so step, ramp and intermittent all occur, and puts a
benign event (a checkpoint, a power cap on a neighbouring GPU, another
node's telemetry pause) over the start of some faults.

>>> import tempfile
>>> r = LogRecipe("demo", "topologies/h100-128.topo", "node-[000-001]", 8, 1, 2, 240.0,
...               faults=("sdc_checksum",), benign=())
>>> sc, notes = scenario_for(r, seed=5, index=0)
>>> [(f.kind, f.shape) for f in sc.faults], sc.job.nodes
([('sdc_checksum', 'step')], ('node-000', 'node-001'))
>>> parse_seeds("10..12")
[10, 11, 12]
"""

from __future__ import annotations

import bisect
import dataclasses
import json
import os
import time
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from detector.hostlist import expand_hostlist
from detector.topology import Topology
from replay.sim.axes import Axes, slurm_view
from replay.sim.plan import (
    BENIGN_KINDS,
    FAULT_KINDS,
    FAULT_TABLE,
    BenignSpec,
    FaultSpec,
    JobLayout,
    Scenario,
    llama3_mix,
    plan_scenario,
    rng_for,
)

MANIFEST = "corpus.json"
STEP_ENDS_KEPT = 60  # a fault caught later than this many steps counts as "> 60 steps"
STEP_SLACK_S = 0.05  # ranks report a step up to 20 ms apart
FORMAT = "faultline-corpus/1"
ROOT = Path(__file__).resolve().parent.parent


@dataclass(frozen=True)
class LogRecipe:
    """How to make one log of a corpus (its seed comes from the corpus' seed range)."""

    name: str
    topology: str  # topology file, relative to the repository root or absolute
    nodes: str | None  # Slurm hostlist the job runs on; None: the topology's first nodes
    tp: int
    pp: int
    dp: int
    duration_s: float
    faults: tuple[str, ...] = ()  # fault kinds (each listed once per fault)
    llama3: int = 0  # instead of ``faults``: this many drawn with Llama 3's frequencies
    benign: tuple[str, ...] = BENIGN_KINDS
    magnitude_range: tuple[float, float] = (0.03, 0.30)
    onset_benign_share: float = 0.4  # faults that start during an added benign event
    step_s: float = 1.0
    axes: Axes = Axes()  # how the cluster reports itself (replay/sim/axes.py)
    axis: str | None = None  # the matrix cell this log belongs to: axis name ...
    value: str | None = None  # ... and its value

    @property
    def gpus(self) -> int:
        return self.tp * self.pp * self.dp

    @property
    def healthy(self) -> bool:
        return not self.faults and not self.llama3


_H1K = "topologies/h100-1k.topo"
_GB = "topologies/gb200-nvl72.topo"
_ALL2 = FAULT_KINDS * 2


def _scales() -> dict[str, tuple[LogRecipe, ...]]:
    small = (
        LogRecipe("h1k-a", _H1K, "node-[000-015]", 8, 2, 8, 1300, FAULT_KINDS),
        LogRecipe("gb-a", _GB, "nvl-r0-n[00-17],nvl-r1-n[00-13]", 4, 2, 16, 1300, FAULT_KINDS),
        LogRecipe("h1k-b", _H1K, "node-[064-079]", 8, 2, 8, 1300, FAULT_KINDS),
        LogRecipe("gb-llama", _GB, "nvl-r4-n[00-17],nvl-r5-n[00-13]", 4, 2, 16, 1100,
                  llama3=8),
        LogRecipe("h1k-healthy", _H1K, "node-[032-047]", 8, 2, 8, 900),
    )
    full = (
        LogRecipe("h1k-000", _H1K, "node-[000-015]", 8, 2, 8, 2700, _ALL2),
        LogRecipe("h1k-016", _H1K, "node-[016-031]", 8, 2, 8, 2700, _ALL2),
        LogRecipe("h1k-048", _H1K, "node-[048-063]", 8, 2, 8, 2700, _ALL2),
        LogRecipe("h1k-080", _H1K, "node-[080-095]", 8, 2, 8, 2700, _ALL2),
        LogRecipe("h1k-112", _H1K, "node-[112-127]", 8, 2, 8, 2700, _ALL2),
        # 32 nodes: exactly the nodes behind one leaf of each rail
        LogRecipe("h1k-256-032", _H1K, "node-[032-063]", 8, 4, 8, 2700, _ALL2),
        LogRecipe("h1k-256-096", _H1K, "node-[096-127]", 8, 4, 8, 2700, _ALL2),
        LogRecipe("gb-r01", _GB, "nvl-r0-n[00-17],nvl-r1-n[00-13]", 4, 2, 16, 2700, _ALL2),
        LogRecipe("gb-r45", _GB, "nvl-r4-n[04-17],nvl-r5-n[00-17]", 4, 2, 16, 2700, _ALL2),
        # two NVL72 racks: the nodes behind one leaf of each rail
        LogRecipe("gb-r23", _GB, "nvl-r[2-3]-n[00-17]", 4, 4, 9, 2700, _ALL2),
        LogRecipe("gb-r67", _GB, "nvl-r[6-7]-n[00-17]", 4, 4, 9, 2700, _ALL2),
        LogRecipe("h1k-llama", _H1K, "node-[064-079]", 8, 2, 8, 2400, llama3=16),
        LogRecipe("gb-llama", _GB, "nvl-r[6-7]-n[00-17]", 4, 4, 9, 2400, llama3=16),
        LogRecipe("h1k-healthy-512", _H1K, "node-[000-063]", 8, 4, 16, 3600),
        LogRecipe("h1k-healthy-256", _H1K, "node-[064-095]", 8, 4, 8, 3600),
        LogRecipe("gb-healthy-288", _GB, "nvl-r[0-3]-n[00-17]", 4, 4, 18, 3600),
        LogRecipe("gb-healthy-144", _GB, "nvl-r[4-5]-n[00-17]", 4, 4, 9, 3600),
    )
    return {"small": small, "full": full}


SCALES = _scales()


def parse_seeds(text: str) -> list[int]:
    """``A..B`` (inclusive) or ``A,B,C`` as a list of seeds."""
    text = text.strip()
    try:
        if ".." in text:
            a, _, b = text.partition("..")
            lo, hi = int(a), int(b)
            if hi < lo:
                raise ValueError
            return list(range(lo, hi + 1))
        return [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise ValueError(f"--seeds: expected A..B or A,B,C with integers, got {text!r}") from None


def resolve_topology(path: str, corpus_dir: Path | None = None,
                     topology_map: dict[str, str] | None = None, name: str | None = None) -> Path:
    """Find a log's topology file: the map first (by name or path), then as given, then the repo."""
    if topology_map:
        for key in (name, path, Path(path).name, Path(path).stem):
            if key and key in topology_map:
                return Path(topology_map[key])
    p = Path(path)
    for cand in (p, ROOT / p, *(() if corpus_dir is None else (corpus_dir / p,))):
        if cand.is_file():
            return cand
    raise FileNotFoundError(f"topology {path!r} not found (give --topology-map NAME=FILE)")


def scenario_for(r: LogRecipe, seed: int, index: int) -> tuple[Scenario, dict[str, Any]]:
    """The scenario of one corpus log, and notes on its faults for the manifest."""
    topology = Topology.load(resolve_topology(r.topology))
    nodes = tuple(expand_hostlist(r.nodes)) if r.nodes else None
    job = JobLayout(tp=r.tp, pp=r.pp, dp=r.dp, nodes=nodes, step_s=r.step_s)
    kinds = llama3_mix(r.llama3, seed) if r.llama3 else r.faults
    sc = plan_scenario(topology, job=job, duration_s=r.duration_s, seed=seed, faults=kinds,
                       benign=r.benign, magnitude_range=r.magnitude_range)
    faults = tuple(_rotate_shape(f, index + j) for j, f in enumerate(sc.faults))
    extra = _onset_benign(faults, sc, r, seed)
    sc = dataclasses.replace(sc, faults=faults,
                             benign=tuple(sorted(sc.benign + tuple(extra),
                                                 key=lambda b: (b.start_s, b.kind))))
    if r.axes != Axes():  # the scenario axis reshapes the plan last: its faults keep their shape
        from replay.sim.scenarios import apply_scenario
        sc = apply_scenario(sc, r.axes)
    if r.axis is not None:  # matrix cells share seeds: fault ids name the cell too
        sc = dataclasses.replace(sc, label_prefix=f"{r.name}-")
        # ... and their plans; magnitudes are drawn per cell, so that the corpus spans the
        # whole range (a shared seed would give every cell the same two slowdown sizes)
        mags = rng_for(seed, "matrix-magnitude", r.name).uniform(*r.magnitude_range,
                                                                  len(sc.faults))
        sc = dataclasses.replace(sc, faults=tuple(
            f if f.start_s == 0.0 else dataclasses.replace(f, magnitude=round(float(m), 4))
            for f, m in zip(sc.faults, mags, strict=True)))
    return sc, {"during_benign": _during_benign(sc)}


def _rotate_shape(f: FaultSpec, i: int) -> FaultSpec:
    shapes = FAULT_TABLE[f.kind].shapes
    return dataclasses.replace(f, shape=shapes[i % len(shapes)])


def _onset_benign(faults: Sequence[FaultSpec], sc: Scenario, r: LogRecipe,
                  seed: int) -> list[BenignSpec]:
    """Benign events that are already under way when some faults start."""
    rng = rng_for(seed, "corpus-onset-benign")
    nodes = list(sc.job.nodes or ())
    out: list[BenignSpec] = []
    for f in faults:
        if r.onset_benign_share <= 0 or rng.random() >= r.onset_benign_share:
            continue
        before = float(rng.uniform(1.0, 4.0))
        start = round(f.start_s - before, 3)
        pick = int(rng.integers(3))
        if pick == 1 and "gpu" in f.target:  # power management on a neighbouring GPU
            gpu = (f.target["gpu"] + 1 + int(rng.integers(3))) % sc.topology.gpus_of(
                f.target["node"])
            spec = BenignSpec("power_cap", {"node": f.target["node"], "gpu": gpu}, start,
                              round(float(rng.uniform(5, 10)), 3))
        elif pick == 2 and "node" in f.target and len(nodes) > 1:  # another node goes quiet
            other = [n for n in nodes if n != f.target["node"]]
            spec = BenignSpec("telemetry_pause", {"node": other[int(rng.integers(len(other)))]},
                              start, round(float(rng.uniform(20, 60)), 3))
        else:  # the whole job slows down for a checkpoint
            spec = BenignSpec("checkpoint", {"job": sc.job.job}, start,
                              round(float(rng.uniform(8, 20)), 3))
        if spec.start_s >= 0 and spec.start_s + spec.duration_s <= sc.duration_s:
            out.append(spec)
    return out


def _during_benign(sc: Scenario) -> list[str | None]:
    """For each fault, the benign event under way when it starts (None: none)."""
    out: list[str | None] = []
    for f in sc.faults:
        hit = [b.kind for b in sc.benign
               if b.duration_s > 0 and b.start_s <= f.start_s < b.start_s + b.duration_s]
        out.append(hit[0] if hit else None)
    return out


# -- building ------------------------------------------------------------------------------


def _build_one(task: tuple[LogRecipe, int, int, str]) -> dict[str, Any]:
    from replay.sim.simulate import label_for, simulate, write_log

    r, seed, index, out_dir = task
    t0 = time.perf_counter()
    sc, notes = scenario_for(r, seed, index)
    rel = f"logs/{r.name}-s{seed}.jsonl.gz"
    steps: list[float] = []  # when each step ended (rank 0), for latencies counted in steps
    labels: dict[str, dict[str, Any]] = {}

    def watch(records: Iterator[dict[str, Any]]) -> Iterator[dict[str, Any]]:
        for rec in records:
            topic = rec["topic"]
            if topic == "telemetry.step" and rec["value"]["rank"] == 0:
                steps.append(rec["value"]["ts"])
            elif topic == "labels":
                labels[rec["value"]["fault_id"]] = rec["value"]
            yield rec

    n = write_log(watch(simulate(sc)), Path(out_dir) / rel)
    ends = sorted(set(steps))
    faults = []
    for i, (f, during) in enumerate(zip(sc.faults, notes["during_benign"], strict=True)):
        fid = label_for(i, f, sc, 0.0, 0.0).fault_id
        lab = labels.get(fid, {})
        start = lab.get("start_ts", sc.start_ts + f.start_s)
        at = bisect.bisect_left(ends, start - STEP_SLACK_S)
        faults.append({"fault_id": fid, "kind": f.kind,
                       "shape": f.shape, "magnitude": f.magnitude, "target": f.target,
                       "start_s": f.start_s, "duration_s": f.duration_s,
                       "during_benign": during, "from_job_start": f.start_s == 0.0,
                       # ends of the steps from the fault's start on: latency in steps
                       "step_ends": ends[at:at + STEP_ENDS_KEPT]})
    topo_path: str | None = r.topology
    if r.axes.topology == "none":
        topo_path = None
    elif r.axes.topology == "slurm":  # what a site hands faultline: its Slurm topology.conf
        topo_path = f"topologies/{sc.topology.name}.slurm.topology.conf"
        dest = Path(out_dir) / topo_path
        dest.parent.mkdir(parents=True, exist_ok=True)
        dest.write_text(slurm_view(sc.topology))
    return {"file": rel, "name": r.name, "seed": seed, "topology": topo_path,
            "topology_name": sc.topology.name, "healthy": r.healthy,
            "job": {"tp": r.tp, "pp": r.pp, "dp": r.dp, "nodes": r.nodes, "gpus": r.gpus,
                    "step_s": r.step_s},
            "axis": r.axis, "value": r.value, "axes": r.axes.changed(),
            "duration_s": sc.duration_s, "records": n, "faults": faults,
            "benign": dict(Counter(b.kind for b in sc.benign)),
            "build_s": round(time.perf_counter() - t0, 2)}


def build_corpus(out_dir: str | os.PathLike[str], recipes: Sequence[LogRecipe],
                 seeds: Sequence[int], *, scale: str = "custom", workers: int = 2,
                 progress: Callable[[str], None] | None = None,
                 purpose: str = "tuning") -> dict[str, Any]:
    """Simulate every recipe's log (one seed each, in order) and write the manifest."""
    if len(seeds) < len(recipes):
        raise ValueError(f"the {scale} corpus has {len(recipes)} logs and needs as many seeds; "
                         f"got {len(seeds)}")
    if len(set(seeds)) != len(seeds):
        raise ValueError("seeds repeat")
    return build_pairs(out_dir, list(zip(recipes, seeds, strict=False)), scale=scale,
                       workers=workers, progress=progress, purpose=purpose)


def build_pairs(out_dir: str | os.PathLike[str], pairs: Sequence[tuple[LogRecipe, int]], *,
                scale: str = "custom", workers: int = 2,
                progress: Callable[[str], None] | None = None,
                purpose: str = "tuning") -> dict[str, Any]:
    """Simulate one log per (recipe, seed) and write the manifest.

    ``purpose`` is ``tuning`` or ``reporting``: a reporting corpus is meant to be
    evaluated once, after tuning (``faultline evaluate`` refuses a second run).
    """
    if purpose not in ("tuning", "reporting"):
        raise ValueError(f"purpose must be tuning or reporting, got {purpose!r}")
    keys = [(r.name, s) for r, s in pairs]
    if len(set(keys)) != len(keys):
        raise ValueError("a (recipe, seed) pair repeats")
    out = Path(out_dir)
    (out / "logs").mkdir(parents=True, exist_ok=True)
    tasks = [(r, s, i, str(out)) for i, (r, s) in enumerate(pairs)]
    # biggest first, so two workers finish together
    order = sorted(range(len(tasks)), key=lambda i: -tasks[i][0].gpus * tasks[i][0].duration_s
                   / tasks[i][0].axes.interval_s ** 0.5)
    t0 = time.perf_counter()
    entries: dict[int, dict[str, Any]] = {}
    if workers > 1 and len(tasks) > 1:
        with ProcessPoolExecutor(max_workers=workers) as pool:
            futures = {i: pool.submit(_build_one, tasks[i]) for i in order}
            for i in order:
                entries[i] = futures[i].result()
                if progress:
                    progress(_built_line(entries[i]))
    else:
        for i in order:
            entries[i] = _build_one(tasks[i])
            if progress:
                progress(_built_line(entries[i]))
    manifest = {"format": FORMAT, "scale": scale, "purpose": purpose,
                "seeds": sorted({s for _, s in pairs}),
                "build_s": round(time.perf_counter() - t0, 1),
                "logs": [entries[i] for i in range(len(tasks))]}
    write_manifest(out, manifest)
    return manifest


def _built_line(e: dict[str, Any]) -> str:
    kinds = Counter(f["kind"] for f in e["faults"])
    what = ", ".join(f"{k} x{n}" for k, n in sorted(kinds.items())) or "healthy"
    return (f"  built {e['file']}: {e['job']['gpus']} GPUs on {e['topology_name']}, "
            f"{e['duration_s']:g} s, {e['records']:,} records, {what} ({e['build_s']:.0f} s)")


def write_manifest(corpus_dir: str | os.PathLike[str], manifest: dict[str, Any]) -> Path:
    path = Path(corpus_dir) / MANIFEST
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(manifest, indent=1, sort_keys=False) + "\n")
    os.replace(tmp, path)
    return path


def read_manifest(corpus_dir: str | os.PathLike[str]) -> dict[str, Any]:
    """The corpus manifest; ValueError when it is missing or not one."""
    path = Path(corpus_dir) / MANIFEST
    if not path.is_file():
        raise FileNotFoundError(f"{corpus_dir}: no {MANIFEST} (build a corpus with "
                                f"`faultline evaluate --build DIR --seeds A..B`)")
    try:
        manifest = json.loads(path.read_text())
    except json.JSONDecodeError as exc:
        raise ValueError(f"{path}: not JSON: {exc}") from None
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
        raise ValueError(f"{path}: not a {FORMAT} manifest")
    for e in manifest.get("logs", []):
        for key in ("file", "topology", "seed", "job", "faults"):
            if key not in e:
                raise ValueError(f"{path}: a log entry lacks {key!r}")
    return manifest
