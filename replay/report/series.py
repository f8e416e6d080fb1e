"""The telemetry behind each alert's plot, read from the incident log in one pass.

Only what the alerts point at is kept: the step timings of the jobs with step-level
alerts (every rank, for peer medians and checksum votes), the thermal and ECC samples
of the GPUs alerted on and of their node's other GPUs (the baseline), and the NIC
counters of the nodes alerted on.  Per-step totals of every job are kept for the cost.
"""

from __future__ import annotations

import contextlib
import os
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from detector.alerts import Alert, Label
from detector.topology import Topology
from replay.log import Record, read_records


@dataclass
class JobSteps:
    """One job's step records as columns (only for jobs an alert needs in detail)."""

    ts: list[float] = field(default_factory=list)
    step: list[int] = field(default_factory=list)
    rank: list[int] = field(default_factory=list)
    node: list[str] = field(default_factory=list)
    gpu: list[int] = field(default_factory=list)
    group: list[tuple[int, int]] = field(default_factory=list)   # (tp, pp): the peer group
    compute_ms: list[float] = field(default_factory=list)
    grad_norm: list[float] = field(default_factory=list)
    checksum: list[str | None] = field(default_factory=list)


@dataclass
class StepTotals:
    """Per step of one job: when it ended, its ranks, and its (slowest rank's) step time."""

    end_ts: dict[int, float] = field(default_factory=dict)
    ranks: dict[int, int] = field(default_factory=dict)
    step_ms: dict[int, float] = field(default_factory=dict)
    gpus: set[tuple[str, int]] = field(default_factory=set)


@dataclass
class Series:
    """Everything read for the report."""

    first_ts: float | None = None
    last_ts: float | None = None
    events: int = 0
    labels: list[Label] = field(default_factory=list)
    totals: dict[str, StepTotals] = field(default_factory=lambda: defaultdict(StepTotals))
    steps: dict[str, JobSteps] = field(default_factory=dict)
    # (node, gpu) -> list of (ts, temp_c, power_w, sm_clock_mhz, throttle)
    thermal: dict[tuple[str, int], list[tuple[float, float, float, float, int]]] = field(
        default_factory=lambda: defaultdict(list))
    # (node, gpu) -> list of (ts, sbe, dbe, xid, nvlink errors)
    ecc: dict[tuple[str, int], list[tuple[float, int, int, int | None, int]]] = field(
        default_factory=lambda: defaultdict(list))
    # (node, nic, port) -> list of (ts, errors, tx_bytes, link up)
    nic: dict[tuple[str, str, int], list[tuple[float, int, int, bool]]] = field(
        default_factory=lambda: defaultdict(list))


_NIC_ERRORS = ("symbol_errors", "rcv_errors", "link_downed", "xmit_discards",
               "out_of_sequence", "packet_seq_err")


def _num(v: Any, default: float = 0.0) -> float:
    return float(v) if isinstance(v, int | float) and not isinstance(v, bool) else default


def wanted(alerts: list[Alert], topology: Topology | None) -> tuple[set[str], set[str]]:
    """(jobs whose steps are kept rank by rank, nodes whose GPUs and NICs are kept)."""
    jobs: set[str] = set()
    nodes: set[str] = set()
    for a in alerts:
        s = a.scope
        if a.job:
            jobs.add(a.job)
        if s.job:
            jobs.add(s.job)
        if s.node:
            nodes.add(s.node)
        if topology is not None and s.switch:
            nodes.update(topology.nodes_under(s.switch))
        if topology is not None and s.domain:
            nodes.update(topology.nodes_in_domain(s.domain))
        affected = a.evidence.get("affected_nodes")
        if isinstance(affected, list):
            nodes.update(str(n) for n in affected)
    return jobs, nodes


def read_series(path: str | os.PathLike[str], alerts: list[Alert],
                topology: Topology | None = None) -> Series:
    """One pass over the log; every job's step totals, the detail the alerts need."""
    jobs, nodes = wanted(alerts, topology)
    # A GPU-level alert without a job (from ECC or thermal telemetry) still needs its
    # job's steps: found below once a step record names the GPU.
    gpu_units = {(a.scope.node, a.scope.gpu) for a in alerts if a.scope.level == "gpu"}
    out = Series()
    for rec in read_records(path):
        if not isinstance(rec, Record) or not isinstance(rec.value, dict):
            continue
        v, topic = rec.value, rec.topic
        if topic == "labels":
            with contextlib.suppress(ValueError):
                out.labels.append(Label.from_dict(v))
            continue
        if not topic.startswith("telemetry."):
            continue
        ts = v.get("ts")
        if not isinstance(ts, int | float):
            continue
        out.events += 1
        if out.first_ts is None or ts < out.first_ts:
            out.first_ts = float(ts)
        if out.last_ts is None or ts > out.last_ts:
            out.last_ts = float(ts)
        node = v.get("node")
        if topic == "telemetry.step":
            _step(out, v, float(ts), jobs, gpu_units)
        elif node not in nodes:
            continue
        elif topic == "telemetry.thermal":
            out.thermal[node, int(v.get("gpu", 0))].append(
                (float(ts), _num(v.get("gpu_temp_c"), float("nan")),
                 _num(v.get("power_w"), float("nan")), _num(v.get("sm_clock_mhz"), float("nan")),
                 int(_num(v.get("throttle")))))
        elif topic == "telemetry.ecc":
            nvl = sum(int(_num(v.get(k))) for k in ("nvlink_crc_errors", "nvlink_replay_errors",
                                                    "nvlink_recovery_errors"))
            xid = v.get("xid")
            out.ecc[node, int(v.get("gpu", 0))].append(
                (float(ts), int(_num(v.get("sbe_volatile"))), int(_num(v.get("dbe_volatile"))),
                 xid if isinstance(xid, int) else None, nvl))
        elif topic == "telemetry.nic":
            errors = sum(int(_num(v.get(k))) for k in _NIC_ERRORS)
            out.nic[node, str(v.get("nic")), int(_num(v.get("port"), 1))].append(
                (float(ts), errors, int(_num(v.get("tx_bytes"))), v.get("link_state") != "down"))
    return out


def _step(out: Series, v: dict[str, Any], ts: float, jobs: set[str],
          gpu_units: set[tuple[Any, Any]]) -> None:
    job, step, rank = v.get("job"), v.get("step"), v.get("rank")
    if not isinstance(job, str) or not isinstance(step, int) or not isinstance(rank, int):
        return
    tot = out.totals[job]
    tot.end_ts[step] = max(tot.end_ts.get(step, ts), ts)
    tot.ranks[step] = tot.ranks.get(step, 0) + 1
    step_ms = _num(v.get("step_ms"), float("nan"))
    if not step_ms <= tot.step_ms.get(step, -1.0):
        tot.step_ms[step] = step_ms
    hw = (v.get("node"), v.get("gpu"))
    if len(tot.gpus) < 1_000_000:
        tot.gpus.add(hw)  # type: ignore[arg-type]
    if job not in jobs:
        if hw not in gpu_units:
            return
        jobs.add(job)
    js = out.steps.get(job)
    if js is None:
        js = out.steps[job] = JobSteps()
    js.ts.append(ts)
    js.step.append(step)
    js.rank.append(rank)
    js.node.append(str(hw[0]))
    js.gpu.append(int(_num(hw[1])))
    js.group.append((int(_num(v.get("tp_rank"))), int(_num(v.get("pp_rank")))))
    js.compute_ms.append(_num(v.get("compute_ms"), float("nan")))
    js.grad_norm.append(_num(v.get("grad_norm"), float("nan")))
    c = v.get("param_checksum")
    js.checksum.append(c if isinstance(c, str) else None)
