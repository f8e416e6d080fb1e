"""A GPU that does not come back: one of a node's GPUs stops reporting while its siblings go on.

A card that does not enumerate after a reboot (a driver upgrade, a power cycle) sends no
thermal or ECC row again and no XID says why: its node's other GPUs report as before,
``nvidia-smi -L`` lists one fewer (Kubernetes' node-problem-detector calls it GPUMissing,
REFERENCE 6).  blind11 L3: faultline sent nothing (0/8).

Per node and telemetry topic (thermal, ecc) the newest :data:`KEEP` record times of each GPU
its collectors report on (:func:`note`: every such record, detector.sample_hooks).  Every
liveness scan (:func:`scan`, from :meth:`Monitors.sweep`) a GPU is **missing** when, on
*every* topic it was seen on, at least :data:`MIN_SIBLINGS` of its node's other GPUs sent
:data:`AFTER` records since its last one and :data:`INTERVALS` of their interval (at least
:data:`MIN_S`) passed -- and the node's missing GPUs are at most a quarter of those it had
(at least one): a node reinstalled with fewer cards, a MIG re-layout, are not one card gone.
Then one ``gpu_missing`` finding (``unattributed``/``unknown``, GPU scope); the correlator
pages it as one escalation (:meth:`Correlator._on_gpu_missing`), or adds it to an open
hardware isolation of that GPU (XID 79: the missing GPU is its evidence).  Silent by
construction for a node dark as a whole (no sibling reports: detector.liveness's job), a
reboot with every GPU back (the siblings' first records after it are not :data:`AFTER` yet),
a row dropped for one or two intervals, a node that never had more GPUs, an idle GPU (idle
GPUs report).  It clears when the GPU reports again, or when its node left the fleet (no
record for ``unit_idle_s``).

State (``Monitors._gone``): plain data, node -> [cluster, {topic: {gpu: [times]}},
{gpu: onset}]; at most :data:`MAX_NODES` nodes, :data:`MAX_GPUS` GPUs a node a topic,
:data:`KEEP` times each.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from detector.alerts import Scope
from detector.events import EccSample, ThermalSample
from detector.findings import Finding

if TYPE_CHECKING:
    from detector.monitors import Monitors

TOPICS = ("thermal", "ecc")
KEEP = 4              # record times kept per GPU and topic
AFTER = 3             # sibling records since a GPU's last that make it absent
INTERVALS = 3.5       # ... and this many of their interval (a row dropped twice is 3)
MIN_S = 30.0          # ... and at least this long
MIN_SIBLINGS = 2      # siblings that must report past a GPU's last record
MAX_GPUS = 16         # GPUs tracked a node and topic (the node cap the codebase uses)
MAX_NODES = 1 << 16   # nodes tracked per source
BACK_S = 300.0        # a GPU's record this far behind its newest: its node's clock went back
_CLUSTER, _TIMES, _MISSING = 0, 1, 2
_TOPIC = {ThermalSample: "thermal", EccSample: "ecc"}


def note(mon: Monitors, e: Any, ts: float, _findings: list[Finding]) -> None:
    """A thermal or ECC record of a GPU at ``ts``, its node's own time (a node's GPUs are
    compared in it): the per-sample hook (detector.sample_hooks; bounded: see the module)."""
    topic = _TOPIC[type(e)]
    try:
        times = mon._gone[e.node][_TIMES][topic][e.gpu]
    except KeyError:
        _first(mon._gone, e.node, e.gpu, topic, ts, e.cluster)
        return
    if ts > times[-1]:
        times.append(float(ts))
        if len(times) > KEEP:
            del times[0]
    elif ts < times[-1] - BACK_S:  # its clock went back (an RTC reset): start afresh
        times[:] = [float(ts)]


def _first(gone: dict[str, list[Any]], node: str, gpu: int, topic: str, ts: float,
           cluster: str | None) -> None:
    """The first record of a node, of its topic or of its GPU there."""
    entry = gone.get(node)
    if entry is None:
        if len(gone) >= MAX_NODES:
            return
        entry = gone[node] = [cluster, {}, {}]
    per = entry[_TIMES].get(topic)
    if per is None:
        per = entry[_TIMES][topic] = {}
    if len(per) < MAX_GPUS:
        per[gpu] = [float(ts)]


def _interval(times: list[float]) -> float:
    gaps = sorted(b - a for a, b in zip(times, times[1:], strict=False))
    return gaps[len(gaps) // 2] if gaps else math.inf


def _absent(per: dict[int, list[float]], gpu: int, now: float) -> bool:
    """``gpu`` absent on this topic: MIN_SIBLINGS siblings reported AFTER times past it, the
    newest (``now``, the node's own time) long enough after it."""
    last = per[gpu][-1]
    if now - last < MIN_S:
        return False  # (no sibling can count: each needs now - last >= MIN_S at least -- the
        #              usual GPU, heard within the scan; the loop was 1 % of the worker's CPU)
    n = 0
    for g, times in per.items():
        if g != gpu and len(times) >= AFTER and times[-AFTER] > last and now - last >= max(
                MIN_S, INTERVALS * _interval(times)):
            n += 1
    return n >= MIN_SIBLINGS


def scan(mon: Monitors, findings: list[Finding]) -> None:
    """Judge every node's GPUs (see the module); drop the nodes that left the fleet."""
    now = mon.clock
    left = now - mon.cfg.unit_idle_s
    gone = mon._gone
    for node in list(gone):
        cluster, per_topic, missing = gone[node]
        newest = max((t[-1] for per in per_topic.values() for t in per.values()),
                     default=-math.inf)
        if newest < left:  # no record for unit_idle_s: it left the fleet
            for gpu in sorted(missing):
                findings.append(_finding(node, gpu, cluster, per_topic, missing[gpu], now,
                                         False, dropped=True))
            del gone[node]
            continue
        for gpu in [g for g in missing if any(
                g in per and per[g][-1] > missing[g] for per in per_topic.values())]:
            findings.append(_finding(node, gpu, cluster, per_topic, missing.pop(gpu), now,
                                     False))
        gpus = {g for per in per_topic.values() for g in per}
        new = [g for g in sorted(gpus - set(missing)) if all(
            _absent(per, g, newest) for per in per_topic.values() if g in per)]
        if not new or len(missing) + len(new) > max(1, len(gpus) // 4):
            continue  # none, or more than one card in four gone at once: not one card
        for gpu in new:
            last = max(per[gpu][-1] for per in per_topic.values() if gpu in per)
            missing[gpu] = last
            findings.append(_finding(node, gpu, cluster, per_topic, last, now, True))


def _finding(node: str, gpu: int, cluster: str | None, per_topic: dict[str, Any],
             last: float, now: float, active: bool, dropped: bool = False) -> Finding:
    topics = sorted(t for t, per in per_topic.items() if gpu in per)
    gpus = {g for per in per_topic.values() for g in per}
    reporting = sorted(g for g in gpus if g != gpu and any(
        g in per and per[g][-1] > last for per in per_topic.values()))
    ev: dict[str, Any] = {"topics": topics, "last_ts": round(last, 3),
                          "siblings_reporting": reporting[:MAX_GPUS],
                          "gpus_before": len(gpus), "gpus_after": len(reporting) + (
                              0 if active else 1)}
    if dropped:
        ev["dropped"] = True
    return Finding(now, last, "gpu_missing", "unattributed", "unknown", Scope.of_gpu(node, gpu),
                   active, False, 0.9 if active else 0.0, ev, cluster=cluster)


def check_restored(gone: Any) -> bool:
    """A restored ``Monitors._gone`` has the shape :func:`note` gives it."""
    if type(gone) is not dict or len(gone) > MAX_NODES:
        return False
    for node, entry in gone.items():
        if type(node) is not str or type(entry) is not list or len(entry) != 3:
            return False
        cluster, per_topic, missing = entry
        if cluster is not None and type(cluster) is not str:
            return False
        if type(per_topic) is not dict or not set(per_topic) <= set(TOPICS):
            return False
        for per in per_topic.values():
            if type(per) is not dict or len(per) > MAX_GPUS or not all(
                    type(g) is int and type(t) is list and 0 < len(t) <= KEEP
                    and all(type(x) is float and math.isfinite(x) for x in t)
                    for g, t in per.items()):
                return False
        if type(missing) is not dict or len(missing) > MAX_GPUS or not all(
                type(g) is int and type(x) is float and math.isfinite(x)
                for g, x in missing.items()):
            return False
    return True


def page_extra(f: Finding) -> dict[str, Any]:
    """What the escalation of a ``gpu_missing`` finding says (its evidence read as
    untrusted: a findings message's evidence is only typed by its keys' kinds)."""
    ev = f.evidence
    where = f"GPU {f.scope.gpu} of {f.scope.node}"

    def num(k: str) -> Any:
        x = ev.get(k)
        return x if type(x) in (int, float) and math.isfinite(x) else None

    topics = [t for t in ev.get("topics") or () if t in TOPICS] if type(
        ev.get("topics")) is list else []
    sibs = [g for g in ev.get("siblings_reporting") or () if type(g) is int][:MAX_GPUS] if type(
        ev.get("siblings_reporting")) is list else []
    return {
        "missing_on": topics, "last_record_ts": num("last_ts"), "siblings_reporting": sibs,
        "gpus_before": num("gpus_before"), "gpus_after": num("gpus_after"),
        "ruled_out": ["the node going dark (its other GPUs report on)",
                      "a collector dropping a row or two (absent for 3+ of its siblings' "
                      "intervals on every topic it used)",
                      "an idle GPU (idle GPUs still report)"],
        "recommended_because": (
            f"{where} sent no {' or '.join(topics) or 'telemetry'} row since "
            f"{f.onset_ts:.1f} while {len(sibs)} of its siblings kept reporting, and no XID "
            "says why: a GPU that does not enumerate (fell off the bus, failed to come back "
            "after a reboot or a driver upgrade)"),
        "next_diagnostic": (
            f"on {f.scope.node}: `nvidia-smi -L` (does it list the GPU?), `lspci -d 10de:` "
            "(is the card on the bus?), `dmesg | grep -i nvrm` (why the driver left it); "
            "then reseat the card, or RMA it"),
    }
