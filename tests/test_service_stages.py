"""The service's two stages, run without a broker: same problems as the in-process engine.

A small in-memory "cluster" stands in for Kafka: telemetry records are split
into partitions by key as producers do, stage-1 partitions are consumed in a
seeded random interleaving with random batch sizes, their findings go through
an in-memory findings topic to one correlator, and a fake wall clock drives
heartbeats and idle advance.  This pins the ordering logic (tags, watermarks,
idle sources, duplicate findings after a restore) that the broker tests only
sample.
"""

from __future__ import annotations

import random
import zlib
from pathlib import Path

import orjson
import pytest

from detector.alerts import Alert
from detector.events import ECC, STEP, TELEMETRY_TOPICS
from detector.pipeline.correlator import CorrelatorPartition
from detector.pipeline.source import DeadLetter, Emit, SourcePartition
from detector.pipeline.worker import PipelineWorker, WorkerOutput
from detector.settings import Settings
from detector.topology import Topology
from replay.log import Record, read_records
from replay.runner import replay_log

PARTITIONS = 4
IDLE_S = 5.0
HOLD_BACK_S = Settings().hold_back_s  # the service's default
TICK_S = 0.05


def problems(alerts: list[Alert]) -> set[tuple[str, str, str, str]]:
    return {(a.dedup_key, a.kind, a.scope.key, a.cause) for a in alerts if a.status == "firing"}


FINDINGS = "findings"


class InMemoryCluster:
    """In-memory partitions and a fake wall clock around the real :class:`PipelineWorker`.

    Telemetry is split into partitions by key as producers do; the worker is
    handed batches of random sizes from a seeded random choice of partitions,
    its findings go through an in-memory findings partition back into it, and
    heartbeats come every second of fake time: the Faust adapter's job.  ``topology``: the
    service's (``topology_file``), as ``replay_log`` takes it -- e.g. the log's own
    (:func:`replay.log.log_topology`).
    """

    def __init__(self, log: Path, seed: int, *,
                 late_partitions: dict[str, float] | None = None,
                 all_partitions: bool = False, local: bool = False,
                 topology: Topology | None = None) -> None:
        self.rng = random.Random(seed)
        self.queues: dict[tuple[str, int], list[tuple[int, bytes, bytes, float]]] = {}
        if all_partitions:  # also those no key goes to: empty for good
            self.queues = {(t, p): [] for t in TELEMETRY_TOPICS for p in range(PARTITIONS)}
        for rec in read_records(log):
            assert isinstance(rec, Record)
            if rec.topic not in TELEMETRY_TOPICS:
                continue
            key = str(rec.value["job" if rec.topic == STEP else "node"]).encode()
            q = self.queues.setdefault((rec.topic, zlib.crc32(key) % PARTITIONS), [])
            q.append((len(q), key, orjson.dumps(rec.value), 0.0))
        self.pos = {tp: 0 for tp in self.queues}
        # Partitions of these topics get their first record this many (fake) seconds late.
        self.visible_from = {tp: 1000.0 + (late_partitions or {}).get(tp[0], 0.0)
                             for tp in self.queues}
        self.findings: list[tuple[bytes, bytes]] = []  # (key, value)
        self.findings_pos = 0
        self.now = 1000.0
        self.next_beat = self.now
        self.worker = PipelineWorker(
            telemetry_topics={t: t for t in TELEMETRY_TOPICS}, findings_topic=FINDINGS,
            findings_partitions=1, expected_sources=[f"{t}:{p}" for t, p in self.queues],
            hold_back_s=HOLD_BACK_S, idle_advance_s=IDLE_S, local_findings=local,
            topology=topology)
        self.worker.sources = {tp: self.worker.new_partition(tp, self.now)  # type: ignore[misc]
                               for tp in self.queues}
        self.worker.correlators = {(FINDINGS, 0): self.worker.new_partition(  # type: ignore[misc]
            (FINDINGS, 0), self.now)}
        self.alerts: list[Alert] = []
        self.arrivals: list[float | None] = []
        self.dead: list[DeadLetter] = []

    @property
    def sources(self) -> dict[tuple[str, int], SourcePartition]:
        return self.worker.sources  # type: ignore[return-value]

    @property
    def corr(self) -> CorrelatorPartition:
        return self.worker.correlators[(FINDINGS, 0)]

    def _visible(self, tp: tuple[str, int]) -> list[tuple[int, bytes, bytes, float]]:
        return self.queues[tp] if self.now >= self.visible_from[tp] else []

    def _caught_up(self, tp: tuple[str, int], offset: int) -> bool:
        return self.pos[tp] >= len(self._visible(tp))

    def _take(self, out: WorkerOutput) -> None:
        tag = out.local.get(0, b"")  # the adapter's keys (see DetectorService._send)
        self.findings.extend((tag + e.key, e.value) for e in out.findings)
        self.dead.extend(d for _, d in out.dead)
        for a, arrived in out.alerts:
            self.alerts.append(a)
            self.arrivals.append(arrived)

    def step(self) -> None:
        tps = list(self.sources)
        self.rng.shuffle(tps)
        batch = {}
        for tp in tps[: self.rng.randint(1, len(tps))]:
            n = self.rng.randint(1, 120)
            records = self._visible(tp)[self.pos[tp]: self.pos[tp] + n]
            self.pos[tp] += len(records)
            if records:
                batch[tp] = records
            else:
                self.sources[tp].caught_up = self._caught_up(tp, -1)
        self._take(self.worker.process(batch, self.now, self._caught_up))
        if self.now >= self.next_beat:
            self.next_beat += 1.0
            self._take(self.worker.heartbeat(self.now, self._caught_up))
        self.consume()
        self.now += TICK_S

    def consume(self) -> None:
        new = [(i, *self.findings[i], None)
               for i in range(self.findings_pos, len(self.findings))]
        self.findings_pos = len(self.findings)
        if new:
            self._take(self.worker.process({(FINDINGS, 0): new}, self.now, self._caught_up))
        else:
            self._take(self.worker.release_all(self.now))

    def run(self, seconds_after_input: float = 20.0, until: int | None = None) -> None:
        """Run until the input is consumed (or ``until`` records) and then some idle time."""
        while sum(self.pos.values()) < (until if until is not None else self.total):
            self.step()
        if until is None:
            stop = self.now + seconds_after_input
            while self.now < stop:
                self.step()

    @property
    def total(self) -> int:
        return sum(len(q) for q in self.queues.values())

    def crash_and_restore(self, stale_sources: set[tuple[str, int]]) -> None:
        """Lose all memory; come back from snapshots (some taken a while before the crash)."""
        snaps = {tp: self._old[tp] if tp in stale_sources else src.snapshot()
                 for tp, src in self.sources.items()}
        corr_offset, corr_blob = self._old_corr
        w = self.worker
        w.sources = {tp: w.restore_partition(tp, off, blob, self.now)  # type: ignore[misc]
                     for tp, (off, blob) in snaps.items()}
        for tp, (off, _) in snaps.items():
            self.pos[tp] = off + 1
        w.correlators = {(FINDINGS, 0): w.restore_partition(  # type: ignore[misc]
            (FINDINGS, 0), corr_offset, corr_blob, self.now)}
        self.findings_pos = corr_offset + 1

    def take_old_snapshots(self) -> None:
        self._old = {tp: src.snapshot() for tp, src in self.sources.items()}
        self._old_corr = self.corr.snapshot()


@pytest.fixture(scope="module")
def expected(service_incident_log: Path) -> set[tuple[str, str, str, str]]:
    found = problems(replay_log(service_incident_log).alerts)
    assert {p[1] for p in found} == {"hardware", "slow_node", "network"}, found
    return found


@pytest.mark.parametrize("local", [False, True], ids=["through-topic", "local"])
@pytest.mark.parametrize("seed", range(6))
def test_split_stages_raise_the_same_problems_as_the_engine(
        service_incident_log: Path, expected: set, seed: int, local: bool) -> None:
    """Also with the findings taken in memory (local_findings): the same problems, none
    late, and every copy read back from the topic passed over, none taken twice."""
    svc = InMemoryCluster(service_incident_log, seed, local=local)
    svc.run()
    if local:
        assert svc.corr.duplicates == 0 and svc.corr.invalid == 0
    assert problems(svc.alerts) == expected
    assert svc.dead == []
    assert svc.corr.stats(svc.now)["late"] == 0
    # An alert a finding caused carries its input's arrival; one a timer decided does not.
    arrival = {a.dedup_key: t for a, t in zip(svc.alerts, svc.arrivals, strict=True)
               if a.status == "firing"}
    assert arrival["fl:iso:hardware:gpu:node-001/6"] == 0.0
    assert arrival["fl:esc:slow_node:gpu:node-001/4"] is None


@pytest.mark.parametrize("local", [False, True], ids=["through-topic", "local"])
@pytest.mark.parametrize("seed", range(3))
def test_restored_stages_raise_each_problem_once_under_one_key(
        service_incident_log: Path, expected: set, seed: int, local: bool) -> None:
    """With local_findings the restored correlator (a new object, a new tag) reads the
    messages its predecessor took in memory from the topic, its state already past some."""
    svc = InMemoryCluster(service_incident_log, seed, local=local)
    svc.run(until=svc.total // 3)
    svc.take_old_snapshots()
    svc.run(until=2 * svc.total // 3)
    # Half the sources come back from the old snapshot, always the job's (which made
    # slow-rank findings in between): they repeat findings the correlator has seen.
    stale = set(random.Random(seed).sample(sorted(svc.sources), len(svc.sources) // 2))
    stale |= {tp for tp in svc.sources if tp[0] == STEP}
    svc.crash_and_restore(stale)
    svc.run()
    assert problems(svc.alerts) == expected
    firing = [a for a in svc.alerts if a.status == "firing"]
    assert len({a.dedup_key for a in firing}) == len({(a.kind, a.scope.key) for a in firing})
    assert svc.corr.duplicates > 0  # the stale sources did repeat findings, and were ignored


@pytest.mark.parametrize("seed", range(3))
def test_a_partition_whose_first_records_come_late_is_waited_for(
        service_incident_log: Path, expected: set, seed: int) -> None:
    """Replaying into running workers: one partition's data shows up a moment after the rest.

    Until then it looks empty and caught up, yet it must hold the correlator's
    clock, or its findings arrive after timers that should have seen them.
    """
    svc = InMemoryCluster(service_incident_log, seed, late_partitions={STEP: 2.0})
    svc.run()
    assert problems(svc.alerts) == expected
    assert svc.corr.stats(svc.now)["late"] == 0


@pytest.mark.parametrize("seed", range(3))
def test_partitions_no_key_goes_to_do_not_hold_a_fresh_workers_first_alert(
        service_incident_log: Path, expected: set, seed: int) -> None:
    """Every partition of every topic, most of the step topic's empty for good (one job).

    Fetched to their end while their topic is fed, they let the correlator's clock go
    after hold_back_s, not after the start-up grace (IDLE_S): the first alert comes
    as soon as without them, and the same problems come out, none late.
    """
    svc = InMemoryCluster(service_incident_log, seed, all_partitions=True)
    assert sum(not q for q in svc.queues.values()) >= PARTITIONS - 1
    start = svc.now
    while not svc.alerts and svc.now - start < 4 * IDLE_S:  # bounded: a regression fails, not hangs
        svc.step()
    assert svc.alerts, "no alert within 4 start-up graces"
    assert svc.now - start < IDLE_S / 2
    svc.run()
    assert problems(svc.alerts) == expected
    assert svc.corr.stats(svc.now)["late"] == 0


def test_bad_records_are_dead_lettered_with_reason_and_bytes() -> None:
    src = SourcePartition("telemetry.ecc", 0, 1)
    good = b'{"ts": 1.0, "node": "n0", "gpu": 0, "xid": 79}'
    records = [(0, b"n0", b"{oops", None), (1, b"n0", good, None), (2, b"n0", None, None),
               (3, b"n0", b'{"ts": 2.0, "node": "n0", "gpu": "0"}', None)]
    emits: list[Emit] = []
    dead: list[DeadLetter] = []
    src.process(records, 0.0, emits, dead)
    assert [(d.offset, d.value) for d in dead] == [(0, b"{oops"), (2, None), (3, records[3][2])]
    assert "not valid JSON" in dead[0].reason and "'gpu'" in dead[2].reason
    kinds = [orjson.loads(e.value)["type"] for e in emits]
    assert kinds.count("finding") >= 1 and "seen" in kinds
    assert src.offset == 3 and src.events == 1 and src.invalid == 3


def test_nan_loss_is_dead_lettered_and_still_reaches_the_engine() -> None:
    src = SourcePartition("telemetry.step", 0, 1)
    raw = (b'{"ts": 1.0, "job": "j", "step": 1, "rank": 2, "node": "n0", "gpu": 2,'
           b' "step_ms": 1000, "loss": NaN}')
    emits: list[Emit] = []
    dead: list[DeadLetter] = []
    src.process([(0, b"j", raw, 12.5)], 0.0, emits, dead)
    assert len(dead) == 1 and dead[0].value == raw
    msg = orjson.loads(emits[0].value)
    assert (msg["finding"]["signal"], msg["finding"]["kind"]) == ("nonfinite", "sdc")
    assert msg["arrived"] == 12.5


def test_poison_messages_are_dead_lettered_and_the_partition_goes_on() -> None:
    from detector.metrics import invalid_reason
    from detector.testing import T0, poison_messages

    by_topic: dict[str, list[bytes]] = {}
    for topic, raw in poison_messages(T0 + 1.0):
        by_topic.setdefault(topic, []).append(raw)
    good = b'{"ts": %r, "node": "n0", "gpu": 0, "xid": 79}' % (T0 + 2.0)
    by_topic["telemetry.ecc"].append(good)
    labels = []
    for topic, raws in by_topic.items():
        src = SourcePartition(topic, 0, 1, wall_clock=lambda: T0)
        emits: list[Emit] = []
        dead: list[DeadLetter] = []
        src.process([(i, b"k", raw, None) for i, raw in enumerate(raws)], 0.0, emits, dead)
        assert src.offset == len(raws) - 1
        labels += [invalid_reason(d.reason) for d in dead]
        if topic == "telemetry.ecc":  # the year-2100 record did not move the clock
            assert src.clock == T0 + 2.0 and len(dead) == 1
    assert sorted(labels) == ["bad_name", "missing_field", "non_finite", "out_of_range",
                              "too_deep", "ts_out_of_range", "ts_out_of_range"]


def test_one_event_time_guard_holds_a_gap_in_a_log_and_refuses_it_in_the_service() -> None:
    """SourcePartition.admit: the same jump count; held in process, dead-lettered by a worker."""
    from detector.engine import Engine
    from detector.testing import T0, thermal

    gap = [T0, T0 + 7200.0, T0 + 7201.0, T0 + 7202.0]  # a log with a two-hour hole
    eng = Engine()
    for ts in gap[:2]:
        eng.process(thermal(ts, "node-000", 0))
    eng = Engine.restore(eng.snapshot())  # the record held waits in the snapshot too
    for ts in gap[2:]:
        eng.process(thermal(ts, "node-000", 0))
    assert eng.rejected == [] and eng.clock == gap[-1]
    assert eng.monitors.counts["thermal"] == 4  # nothing lost across the hole
    stray = Engine()
    for ts in (T0, T0 + 7200.0, T0 + 1.0):  # back on the old clock: it was a stray
        stray.process(thermal(ts, "node-000", 0))
    assert [e.field for e in stray.rejected] == ["ts"] and stray.clock == T0 + 1.0
    assert stray.monitors.counts["thermal"] == 2

    src = SourcePartition("telemetry.thermal", 0, 1)
    dead: list[DeadLetter] = []
    src.process([(i, b"node-000", b'{"ts": %r, "node": "node-000", "gpu": 0}' % ts, None)
                 for i, ts in enumerate(gap)], 0.0, [], dead)
    assert [d.offset for d in dead] == [1, 2] and "ts_out_of_range" in dead[0].reason
    assert src.clock == gap[-1]  # the third agreeing record made the jump real


@pytest.mark.parametrize("bad", ["mistyped", "chokes"])
def test_a_finding_the_correlator_fails_on_is_counted_and_the_partition_goes_on(
        bad: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """A foreign producer's finding, then a good one: a mistyped one is refused as it is
    read (counted invalid), a well-typed one the correlator still fails on is counted as
    its error; either way the good one is alerted."""
    from detector.correlate import Correlator

    w = PipelineWorker(telemetry_topics={ECC: ECC}, findings_topic=FINDINGS,
                       findings_partitions=1, expected_sources=[f"{ECC}:0"])
    w.correlators = {(FINDINGS, 0): w.new_partition((FINDINGS, 0), 0.0)}  # type: ignore[misc]
    finding = {"ts": 100.0, "onset_ts": 100.0, "signal": "xid", "kind": "hardware",
               "cause": "gpu_memory", "scope": {"level": "gpu", "node": "node-007", "gpu": 3},
               "active": True, "verdict": True, "severity": 0.95,
               "evidence": {"xid": 48, "meaning": "double-bit ECC error"}, "job": None,
               "tenant": None, "cluster": None, "rank": None, "dp_rank": None,
               "escalate": False}
    if bad == "mistyped":
        first = {**finding, "severity": "high"}
    else:
        first = finding
        on_finding = Correlator.on_finding

        def choke(self: Correlator, f: object, *args: object, **kwargs: object) -> object:
            if getattr(f, "scope", None) is not None and f.scope.gpu == 3:  # type: ignore[attr-defined]
                raise RuntimeError("a correlator bug")
            return on_finding(self, f, *args, **kwargs)  # type: ignore[arg-type]

        monkeypatch.setattr(Correlator, "on_finding", choke)
    msgs = [{"type": "finding", "source": f"{ECC}:0", "id": [0, 0], "tag": 100.0,
             "finding": first},
            {"type": "finding", "source": f"{ECC}:0", "id": [1, 0], "tag": 101.0,
             "finding": {**finding, "ts": 101.0, "onset_ts": 101.0,
                         "scope": {"level": "gpu", "node": "node-007", "gpu": 4}}},
            {"type": "watermarks", "clocks": [[f"{ECC}:0", 101.0, False]]}]
    out = w.process({(FINDINGS, 0): [(i, None, orjson.dumps(m), None)
                                     for i, m in enumerate(msgs)]}, 1.0, lambda tp, o: True)
    part = w.correlators[(FINDINGS, 0)]
    assert (part.invalid, out.correlator_errors, out.errors) == (
        (1, 0, 0) if bad == "mistyped" else (0, 1, 0))
    assert [(a.status, a.scope.key) for a, _ in out.alerts] == [("firing", "gpu:node-007/4")]
