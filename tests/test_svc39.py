"""svc39: the worker's announcement at a (re)assignment says its sources as every heartbeat does.

svc38 closed svc37's starved-fetcher escalation on the heartbeat's path: an empty source's "at
its end" carries when the fetch that found it so was sent (the watermarks' ``ended``), and the
correlator takes the word as of then.  DetectorService.on_assigned built its own message
(``watermarks(sources.values(), ...)``): a kept empty source said idle on its caught-up flag
from before the rebalance, with no ``ended``, so the correlator took the word as of when it
heard it -- after the feed began -- let the source go while its worker's lagging fetches had not
seen its records yet, and escalated a slow rank unknown before its throttle sample came.  The
service now announces through PipelineWorker.assigned: the flag and the fetch end asked
afresh, the clocks reported as a heartbeat reports them (one path).
"""

from __future__ import annotations

import asyncio
import types
from pathlib import Path
from typing import Any

import orjson
import pytest
from faust.types import TP

from bench import metamorphic as mm
from detector.events import THERMAL
from detector.pipeline.worker import PipelineWorker
from detector.service import faust_io
from detector.service.app import DetectorService
from detector.settings import Settings
from tests.conftest import write_service_incident


def _problems(alerts: list[Any]) -> set[tuple[str, str, str]]:
    return {(a.topic, a.dedup_key, a.cause) for a in alerts if a.status == "firing"}


@pytest.mark.parametrize("at_s", [3.25, 3.75, 4.25])
def test_a_rebalance_after_the_feed_began_holds_a_lagging_worker_s_empty_partitions(
        at_s: float, tmp_path: Path) -> None:
    """Two workers, the second's fetches answered 6 s late (its fetcher starved, its
    heartbeats not), the log produced as a backlog; their partitions revoked and assigned back
    ``at_s`` after the feed's start.  The announcement must not let the lagging worker's empty
    partitions go: node-000's thermal partition among them, its throttle sample not fetched
    yet.  (Fails before, seed 2 at each time: the extra fl:esc:slow_node:gpu:node-000/3
    unknown; 3 of 40 with lags 3 and 6 s, rebalances at 2.25-4.25 s, seeds 0-3.)"""
    case = mm.load_case(write_service_incident(tmp_path / "small.jsonl"))
    want = _problems(mm.run(case))
    starved = mm.Starved(rate=5000.0, fetch_lag_s=6.0, rebalance_s=(at_s,))
    for seed in (1, 2):
        assert _problems(mm.run_partitioned(case, seed, starved=starved)) == want, seed


class _Out:
    """The output producer: what was produced, nothing sent."""

    def __init__(self) -> None:
        self.sent: list[tuple[str, bytes, bytes, int | None]] = []

    def produce(self, topic: str, value: bytes, key: bytes, partition: int | None = None,
                **_: Any) -> None:
        self.sent.append((topic, value, key, partition))

    def poll(self) -> None:
        pass


def _service(tp: TP, highwater: int | None) -> tuple[DetectorService, _Out]:
    """A DetectorService holding ``tp``'s empty source across a rebalance (revoked, kept),
    its consumer's high watermark ``highwater`` (None: not fetched yet) -- no broker."""
    settings = Settings()
    svc = DetectorService.__new__(DetectorService)
    svc.settings = settings
    svc.metrics = None
    svc.telemetry_topics = {THERMAL: THERMAL}
    svc.findings_topic = "faultline.findings"
    svc.findings_partitions = 1
    svc.counts = dict.fromkeys(("events", "deadletters", "findings_messages", "alerts",
                                "stale_skipped", "batch_errors"), 0)
    svc.clock = lambda: 1000.0
    svc.wall = lambda: 1.7e9
    svc._frozen = 1
    svc._snapped, svc._state_bytes = {}, {}
    svc.pipeline = PipelineWorker(
        telemetry_topics={THERMAL: THERMAL}, findings_topic=svc.findings_topic,
        findings_partitions=1, expected_sources=[f"{THERMAL}:0"], thresholds=None,
        topology=None, hold_back_s=settings.hold_back_s, idle_advance_s=settings.idle_advance_s,
        source_timeout_s=settings.source_timeout_s, wall_clock=svc.wall)
    part = svc.pipeline.new_partition(tp, 900.0)
    part.caught_up = True  # (its flag from before the rebalance: a fetch found it at its end)
    svc._held = {tp: part}
    consumer = types.SimpleNamespace(assignment=lambda: {tp}, highwater=lambda _: highwater)
    svc.app = types.SimpleNamespace(consumer=consumer)
    svc.out = out = _Out()

    async def commit(_: Any) -> None:
        pass

    svc._commit = commit  # type: ignore[method-assign]
    svc._read_positions = lambda keys, need: ({}, {})  # type: ignore[method-assign]
    return svc, out


def _announced(out: _Out) -> dict[str, Any]:
    (msg,) = [orjson.loads(v) for _, v, _, _ in out.sent]
    assert msg["type"] == "watermarks"
    return msg


def test_the_announcement_carries_when_a_kept_empty_source_was_found_at_its_end(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # (Fails before: no "ended" -- the correlator took the word as of when it heard it.)
    tp = TP(THERMAL, 0)
    svc, out = _service(tp, highwater=0)
    monkeypatch.setitem(faust_io.FETCH_ENDS, tp, (1.7e9 - 7.0, 0))
    asyncio.run(svc.on_assigned(None))
    msg = _announced(out)
    assert msg["clocks"] == [[f"{THERMAL}:0", None, True]]
    assert msg["ended"] == [[f"{THERMAL}:0", 1.7e9 - 7.0]]


def test_a_kept_source_not_fetched_since_the_rebalance_is_announced_not_idle() -> None:
    # (Fails before: idle on its flag from before the rebalance.)
    tp = TP(THERMAL, 0)
    svc, out = _service(tp, highwater=None)
    asyncio.run(svc.on_assigned(None))
    assert _announced(out)["clocks"] == [[f"{THERMAL}:0", None, False]]
