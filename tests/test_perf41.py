"""perf41: every evidence key the correlator side reads is declared with its type (issue 14's
hardening item), and the declared types hold for the findings the detectors write.

A findings message is untrusted input (DESIGN.md "Bounds"; detector.findings): its
evidence is free-form, but a key the correlator reads must have the type it reads it as,
else a forged or broken message (a string where a number is compared) raises inside the
correlator -- the finding lost, a timer half done (revB31 3).  detector.findings'
EVIDENCE_TYPES held 30 keys; nic40's ``demand`` / ``mates_gbps`` and ~40 more read by
correlate/, liveness, part_window, thermal's and the ports' rules were not declared.
"""

from __future__ import annotations

import ast
import math
import uuid
from pathlib import Path
from typing import Any

import orjson
import pytest

from detector.engine import Engine
from detector.findings import EVIDENCE_TYPES, decode_message
from detector.pipeline.source import dumps
from replay.log import log_topology
from replay.runner import replay_log

ROOT = Path(__file__).resolve().parent.parent
DETECTOR = ROOT / "detector"
# Where ``f.evidence`` is read of a finding that never crossed the findings topic: the
# JobMonitor's and its numerics' own findings (detector/steps/, step_numerics), and the
# pager, which reads alerts' evidence (the envelope's, not a finding's).
OWN_FINDINGS = ("steps", "step_numerics.py", "pager")


def evidence_reads(path: Path) -> list[tuple[str, int]]:
    """(key, line) of each ``X.evidence.get("key")``, ``.pop("key")`` or ``X.evidence["key"]``
    read in ``path`` (a problem's ``evidence[0]`` -- a list of findings -- is not one)."""
    out = []
    for node in ast.walk(ast.parse(path.read_text())):
        target = key = None
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
                and node.func.attr in ("get", "pop") and node.args \
                and isinstance(node.args[0], ast.Constant) and type(node.args[0].value) is str:
            target, key = node.func.value, node.args[0].value
        elif isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Load) \
                and isinstance(node.slice, ast.Constant) and type(node.slice.value) is str:
            target, key = node.value, node.slice.value
        if isinstance(target, ast.Attribute) and target.attr == "evidence":
            out.append((key, node.lineno))
    return out


def correlator_side() -> list[Path]:
    return [p for p in sorted(DETECTOR.rglob("*.py"))
            if not any(part in OWN_FINDINGS for part in p.relative_to(DETECTOR).parts)]


def test_every_evidence_key_the_correlator_side_reads_is_declared() -> None:
    undeclared = sorted({f"{key} ({p.relative_to(ROOT)}:{line})"
                         for p in correlator_side() for key, line in evidence_reads(p)
                         if key not in EVIDENCE_TYPES})
    assert not undeclared, "declare in detector.findings.EVIDENCE_TYPES: " + ", ".join(
        undeclared)


def test_the_scan_sees_the_reads_it_is_for() -> None:
    # nic40's keys, read by correlate/ports.py: the scan must find them (a scan that found
    # nothing would pass the test above on any code)
    ports = evidence_reads(DETECTOR / "correlate" / "ports.py")
    assert {"demand", "mates_gbps", "own_gbps"} <= {k for k, _ in ports}
    assert len({k for p in correlator_side() for k, _ in evidence_reads(p)}) >= 60


def test_a_forged_demand_or_mates_list_is_refused_at_the_door() -> None:
    from tests.test_harden_findings import _forge, _xid_stream
    _, emits = _xid_stream()
    good = {"demand": "own_pace", "mates_gbps": [["mlx5_1", 100.0]], "gpus": 8,
            "node_wide": 3, "dropped": True}
    assert decode_message(_forge(emits, evidence=good), 1e12) is not None
    for key, bad in (("demand", 1), ("mates_gbps", "mlx5_1"), ("node_wide", "all"),
                     ("dropped", 1), ("gpus", "0,1"), ("still_dark", "yes")):
        with pytest.raises(ValueError, match=key):
            decode_message(_forge(emits, evidence={**good, key: bad}), 1e12)


# Cut logs whose findings carry 67 of the 68 declared keys the 242 blind cases' findings carry
# (a greedy cover, /tmp/perf41: every case's findings through decode_message, none refused): a
# node flow fault with warm mates and slow ranks' node counts, link retrains, nic40's NIC
# verdict with demand and mates, a node lost from a job, host stalls, an SBE storm, a crash
# with an elastic restart, a half-rate RoCE port, a downtrained PCIe link.
CASES = [ROOT / "bench" / f"{c}.jsonl.gz" for c in (
    "blind23/cases/D1-node-flow-fault-paged-at-a-gpu-too",
    "blind8/cases/H4-rail-leaf-port-pages",
    "blind29/cases/F3-dead-workers-idle-port-isolated",
    "blind7/cases/G4-node-lost",
    "blind10/cases/K1-nvme-stalls-unseen",
    "blind26/cases/G7-sbe-storm-then-xid92",
    "blind27/cases/G3-xid79-crash-and-elastic-restart",
    "blind2/cases/half-rate-port-roce",
    "blind3/cases/pcie-downtrained-gpu",
)]


@pytest.mark.parametrize("case", CASES,
                         ids=lambda p: f"{p.parent.parent.name}/{p.name.split('-')[0]}")
def test_the_declared_types_hold_for_the_findings_the_detectors_write(
        case: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every finding of a replay, as the worker writes it to the findings topic
    (detector.pipeline.source.dumps), is taken back by decode_message: no declaration
    refuses what a detector writes."""
    refused: list[str] = []
    seen: set[str] = set()
    correlate = Engine._correlate

    def checked(self: Engine, found: list, alerts: list) -> None:
        for f in found:
            if not math.isfinite(f.ts):
                continue  # (the end of a log's flush; a worker's sources have a clock)
            raw = dumps({"type": "finding", "source": "telemetry.x:0", "id": [0, 0],
                         "tag": f.ts, "arrived": None, "finding": f.to_dict()})
            seen.update(k for k in orjson.loads(raw)["finding"]["evidence"]
                        if k in EVIDENCE_TYPES)
            try:
                decode_message(raw, 1e12)
            except ValueError as exc:
                refused.append(f"{f.signal}: {exc}")
        correlate(self, found, alerts)

    monkeypatch.setattr(Engine, "_correlate", checked)
    replay_log(case, topology=log_topology(case))
    assert not refused, refused[:5]
    assert seen  # (the case made findings with declared keys)


# -- a backlog is handed over in larger batches (faust_io.CATCH_UP_BATCHES) ------------------

def _thread_and_consumer(live: bool, backlog_s: float) -> tuple[Any, Any, list[int | None]]:
    """The service's consumer thread (faust_io's FetchingThread, not started) and a fetcher
    whose one buffered partition's records are ``backlog_s`` old; the ``max_records`` of each
    fetch it is asked for."""
    import contextlib
    import time
    from collections import OrderedDict
    from types import SimpleNamespace

    import faust
    from faust.types import TP

    from detector.service.faust_io import batch_transport

    app = faust.App(f"perf41-{uuid.uuid4().hex[:6]}", broker="kafka://127.0.0.1:1")
    cls = batch_transport(app, lambda *_: None, frozenset({"t.step"})).Consumer.fetching_thread
    thread = cls.__new__(cls)
    thread.live = live
    thread.consumer = SimpleNamespace(flow_active=True)
    asked: list[int | None] = []
    tp = TP("t.step", 0)
    ts_ms = int((time.time() - backlog_s) * 1000)

    async def fetched_records(parts: Any, timeout: Any = None, max_records: Any = None) -> Any:
        asked.append(max_records)
        return {tp: [(0, None, b"{}", ts_ms)]}

    fetcher = SimpleNamespace(
        _records=OrderedDict(), _prefetch_backoff=0.1, _closed=False,
        fetched_records=fetched_records,
        _subscriptions=SimpleNamespace(fetch_context=contextlib.nullcontext,
                                       reassignment_in_progress=False))
    return thread, SimpleNamespace(_fetcher=fetcher, _closed=False), asked


def test_a_backlog_is_handed_over_catch_up_batches_at_a_time_a_live_feed_batch_size() -> None:
    import asyncio

    from detector.service.faust_io import CATCH_UP_BATCHES, CATCH_UP_S, hand_over_size

    assert CATCH_UP_BATCHES > 1
    assert hand_over_size(2_000, live=True) == 2_000
    assert hand_over_size(2_000, live=False) == 2_000 * CATCH_UP_BATCHES
    assert hand_over_size(None, live=False) is None
    # catching up: the fetch asks for CATCH_UP_BATCHES x batch_size; the records it handed
    # over were seconds old, so the next one does too
    thread, consumer, asked = _thread_and_consumer(False, 10 * CATCH_UP_S)
    asyncio.run(thread._fetch_records(consumer, None, 0.0, 2_000))
    assert asked == [2_000 * CATCH_UP_BATCHES] and not thread.live
    # the backlog caught up (records a moment old): live, and the next fetch asks batch_size
    thread, consumer, asked = _thread_and_consumer(False, 0.0)
    for _ in range(2):
        asyncio.run(thread._fetch_records(consumer, None, 0.0, 2_000))
    assert asked == [2_000 * CATCH_UP_BATCHES, 2_000] and thread.live
