"""The reliability row on the blind reproducers: the same pages under restart, duplicates,
disorder and partitions (DESIGN, targets: "no message, timestamp, broker restart, worker kill
or sink outage loses a fault or a page, or doubles a page"; input contract: "Messages may
arrive duplicated, and out of event-time order by up to 5 s; neither may raise or hide an
alert").

Each ``bench/blind*/cases/*.jsonl.gz`` is replayed once as ``faultline replay`` does (the
baseline: :func:`run`), then once per invariant with its input or its worker disturbed:

- ``kill``: the engine snapshotted at seeded records through a signed, versioned codec
  (bytes, as the service's state topic holds them) and restored into a fresh engine, which
  goes on -> the same alert messages (status, dedup_key, unit, cause, detected_ts);
- ``restart``: a worker killed after the snapshot it committed and restarted from it,
  re-reading what came after (Kafka's at-least-once) -> the alert messages a pager sees,
  taking a message it already has by its ``id`` once, are the baseline's;
- ``duplicates``: a seeded 5 % of records delivered twice, back to back -> the same messages;
- ``disorder``: each stream (topic, node) delayed by up to :data:`DISORDER_S` (its own order
  kept, so no record comes more than that after one later than it) -> the same units and
  causes, each first caught at most :data:`DISORDER_S` from the baseline's detected_ts;
- ``partitions``: the telemetry keyed as producers key it (``job``, ``node``) onto two
  partitions a topic, reaching them live (at its event time on a fake wall clock -- a node's
  clock ahead at the fleet's time: :func:`arrivals` --, stamped then), fetched in seeded
  batches by one :class:`PipelineWorker` with the service's settings (findings taken in
  memory, heartbeats) -> the same pages (firing: dedup_key, unit,
  cause), each first decided within :data:`DISORDER_S` of the replay's, counting those
  decided by the log's end plus :data:`TAIL_S` (a service never finishes; the engine's
  ``finish`` runs time to infinity).

    python bench/metamorphic.py [--sample] [--only SUBSTR] [--invariant NAME ...] [--json F]

prints a table (case, invariant, pass/fail, the first differing alert) and the counts.
tests/test_meta34.py runs the same checks on a seeded sample covering every family.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import hashlib
import math
import random
import sys
import time
import zlib
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import orjson

from detector.alerts import Alert
from detector.engine import Engine
from detector.events import STEP, TELEMETRY_TOPICS, InvalidMessage
from detector.pipeline.worker import PipelineWorker, WorkerOutput
from detector.settings import Settings
from detector.statecodec import StateCodec
from detector.topology import Topology
from replay.log import Record, log_head, read_records

BENCH = Path(__file__).resolve().parent
DISORDER_S = 5.0      # DESIGN: "out of event-time order by up to 5 s"
DUPLICATE_SHARE = 0.05
SNAPSHOTS = 3         # kill: restores a run
TAIL_S = 60.0         # partitions: pages decided this long after the log's last record count
PARTITIONS = 2        # partitions: a telemetry topic's
CODEC = StateCodec(key=b"meta34-snapshot-key")  # signed, as a worker with snapshot_key writes
INVARIANTS = ("kill", "restart", "duplicates", "disorder", "partitions")

Msg = tuple[str, str, str, str, str, str, float]  # an alert message, as compared


@dataclasses.dataclass
class Case:
    """One reproducer: its telemetry records in file order and the topology it carries."""

    family: str
    name: str
    records: list[tuple[str, Any]]
    topology: Topology | None
    home: str | None
    others: dict[str, Topology]

    @property
    def id(self) -> str:
        return f"{self.family}/{self.name}"

    def seed(self, salt: str) -> int:
        """A seed of this case's own (stable across runs and Python's hash seed)."""
        return int.from_bytes(hashlib.blake2b(f"{self.id}|{salt}".encode(),
                                              digest_size=8).digest(), "big")


def case_paths() -> list[Path]:
    return sorted(BENCH.glob("blind*/cases/*.jsonl.gz"))


def load_case(path: Path) -> Case:
    telemetry = frozenset(TELEMETRY_TOPICS)
    records = [(r.topic, r.value) for r in read_records(path)
               if isinstance(r, Record) and r.topic in telemetry]
    topo, home, others = log_head(path)
    return Case(path.parent.parent.name, path.name.removesuffix(".jsonl.gz"), records, topo,
                home, others)


def msg(a: Alert) -> Msg:
    return (a.topic, a.status, a.dedup_key, a.kind, a.cause, a.scope.key,
            round(a.detected_ts, 6))


def show(m: Msg | None) -> str:
    if m is None:
        return "-"
    topic, status, key, kind, cause, scope, ts = m
    return f"{status} {topic.split('.')[-1]} {kind}/{cause} {scope} @{ts:.3f} [{key}]"


# -- the engine, as `faultline replay` drives it ----------------------------------------


class Replay:
    """``replay_log``'s loop over records in memory, with snapshot/restore between records."""

    def __init__(self, case: Case) -> None:
        self.case = case
        self.engine = Engine(None, case.topology, case.home, case.others)
        self.alerts: list[Alert] = []

    def feed(self, records: Iterable[tuple[str, Any]]) -> None:
        eng, alerts = self.engine, self.alerts
        for topic, value in records:
            with contextlib.suppress(InvalidMessage):  # dead-lettered; what it salvaged
                eng.ingest(topic, value, alerts)           # is in alerts
            eng.rejected.clear()

    def finish(self) -> list[Alert]:
        self.alerts += self.engine.finish()
        return self.alerts

    def snapshot(self) -> bytes:
        return self.engine.snapshot(CODEC)

    def restore(self, blob: bytes) -> None:
        """A fresh engine from ``blob`` (a new process: nothing else survives)."""
        c = self.case
        self.engine = Engine.restore(blob, c.topology, CODEC, c.home, c.others)


def run(case: Case, records: list[tuple[str, Any]] | None = None) -> list[Alert]:
    """The baseline: every alert message of a replay of ``records`` (the case's own)."""
    r = Replay(case)
    r.feed(case.records if records is None else records)
    return r.finish()


def cut_points(case: Case, salt: str, k: int) -> list[int]:
    """``k`` seeded record indices (sorted, distinct) to stop after."""
    n = len(case.records)
    if n < 2:
        return []
    rng = random.Random(case.seed(salt))
    return sorted(rng.sample(range(1, n), min(k, n - 1)))


def run_killed(case: Case) -> list[Alert]:
    """Snapshot to bytes and restore into a fresh engine at :data:`SNAPSHOTS` points."""
    r = Replay(case)
    at = 0
    for cut in cut_points(case, "kill", SNAPSHOTS):
        r.feed(case.records[at:cut])
        r.restore(r.snapshot())
        at = cut
    r.feed(case.records[at:])
    return r.finish()


def run_restarted(case: Case) -> list[Alert]:
    """Killed a while after its last committed snapshot: restarted from it, the records after
    it read again.  Every message sent goes out, the ones sent twice too."""
    cuts = cut_points(case, "restart", 2)
    if len(cuts) < 2:
        return run(case)
    committed, killed = cuts
    r = Replay(case)
    r.feed(case.records[:committed])
    blob = r.snapshot()
    r.feed(case.records[committed:killed])
    sent = list(r.alerts)
    r.restore(blob)
    r.alerts = sent
    r.feed(case.records[committed:])
    return r.finish()


def duplicated(case: Case) -> list[tuple[str, Any]]:
    rng = random.Random(case.seed("duplicates"))
    out: list[tuple[str, Any]] = []
    for rec in case.records:
        out.append(rec)
        if rng.random() < DUPLICATE_SHARE:
            out.append(rec)
    return out


def disordered(case: Case, bound_s: float = DISORDER_S) -> list[tuple[str, Any]]:
    """The records as streams (topic, node) each delayed by up to ``bound_s`` reach one
    reader: a record's arrival is its ts plus a seeded delay, never before its stream's
    previous one, so none arrives more than ``bound_s`` after a record later than it.
    A record without a numeric ts (invalid: dead-lettered either way) keeps its stream's."""
    rng = random.Random(case.seed("disorder"))
    last: dict[tuple[str, Any], float] = {}
    keyed = []
    for i, (topic, value) in enumerate(case.records):
        stream = (topic, value.get("node") if isinstance(value, dict) else None)
        ts = value.get("ts") if isinstance(value, dict) else None
        prev = last.get(stream, -math.inf)
        if type(ts) in (int, float) and math.isfinite(ts):
            arrival = max(prev, ts + rng.uniform(0.0, bound_s))
        else:
            arrival = prev
        last[stream] = arrival
        keyed.append((arrival if arrival > -math.inf else -math.inf, i))
    keyed.sort()
    return [case.records[i] for _, i in keyed]


# -- the service's worker, Kafka-free ---------------------------------------------------


FINDINGS = "faultline.findings"
FLUSH_S = 0.05  # Starved(skew_s=...): how often the producer sends what it holds


def run_partitioned(case: Case, seed: int | None = None, *, tail_s: float = TAIL_S,
                    tick_s: float = 0.25, speed: float = 1.0,
                    starved: Starved | None = None) -> list[Alert]:
    """The case through one :class:`PipelineWorker` holding every partition, as a live
    cluster feeds it (``replay --to-kafka --speed``): telemetry keyed as producers key it
    (``job``, ``node``) on :data:`PARTITIONS` partitions a topic, each record reaching its
    partition when the wall clock, run ``speed`` times its event time, gets to its arrival
    (:func:`arrivals`; stamped then: the topics' LogAppendTime); fetched every ``tick_s`` of
    that clock in seeded batches (a few partitions a fetch, up to 200 records each); findings
    taken in memory (the service's local_findings) and read back from the findings topic;
    heartbeats every second; until the log's event time has run ``tail_s`` past its last record.

    The wall clock is fake and reads as the log's event time (its start, then on at
    1 / ``speed``): the decoders' wall-clock bound (DESIGN "Bounds") sees a live log.
    Faster than real time it is an older log's replay, the wall clock ending at the log's
    last record: never behind the event time read (meta34's ``--speed 4`` lost blind5
    longctx's and blind11 L3's pages to it: every finding and watermark more than 300 s
    ahead of a wall clock at a quarter of the log's pace, refused ts_out_of_range).

    ``starved``: what a starved CPU varies instead (:class:`Starved`): several workers
    sharing the partitions, the log produced as a backlog, stalls, batch sizes."""
    with _fake_wall_clock() as wall:
        return _run_partitioned(case, seed, tail_s, tick_s, speed, wall, starved)


@dataclasses.dataclass(frozen=True)
class Starved:
    """A service on a starved CPU (svc37; tests/integration/test_service_scaleout.py paged an
    extra escalation at load ~5): what changes when processes wait for a core.

    - ``workers``: the telemetry partitions split, seeded, between this many workers (the
      first holds the findings partition; the others' findings reach it through the topic,
      read when it runs);
    - ``rate``: records a second of wall time the producer writes the log at, as
      ``faultline replay --to-kafka`` does with no ``--speed`` (a backlog: event time runs
      far ahead of the wall clock); 0: live, at the records' event time (:func:`arrivals`);
    - ``stall_s``: each worker, and the producer, stops for up to this long (wall), seeded,
      now and then (``stall_share`` of the ticks start one; a worker runs once between two)
      -- a process that got no core.  Longer than ``source_timeout_s`` it is a worker gone
      (the correlator lets its sources go: CorrelatorPartition.clocks), not a slow one;
    - ``batch``: the most records a fetch takes of one partition (1..``batch``, seeded);
    - ``skew_s``: the producer sends what it holds every :data:`FLUSH_S`, its partitions'
      batches in a seeded order over this long (librdkafka sends a request a partition, the
      broker answers them in turn; a starved producer spreads them);
    - ``warmup_s``: the workers run this long before the feed (the broker test waits for
      the split), so their empty sources have said they are at their ends;
    - ``late_start_s``: the workers but the first get no core from the feed's start for
      this long;
    - ``fetch_lag_s``: the workers but the first see what reached Kafka this late (their
      fetcher thread starved, their heartbeats not);
    - ``behind_s``: the stages' ``now`` is the wall clock less this (the service's is
      ``time.monotonic()``, seconds since boot; its fetch ends and wall clock epoch seconds);
    - ``rebalance_s``: wall seconds after the feed's start at which every worker's partitions
      are revoked and assigned back to it (DetectorService.on_revoked / on_assigned: kept,
      their ``last_input`` set to now, and the sources announced at once);
    - the service's settings of the broker tests (tests/integration/service_harness:
      idle advance 2 s, source timeout 10 s, heartbeat 0.5 s)."""

    workers: int = 2
    rate: float = 0.0
    stall_s: float = 0.0
    stall_share: float = 0.05
    batch: int = 200
    skew_s: float = 0.0
    idle_advance_s: float = 2.0
    source_timeout_s: float = 10.0
    heartbeat_s: float = 0.5
    warmup_s: float = 3.0
    late_start_s: float = 0.0
    fetch_lag_s: float = 0.0
    behind_s: float = 1.7e9
    rebalance_s: tuple[float, ...] = ()


class _Wall:
    now = 0.0

    def __call__(self) -> float:
        return self.now


@contextlib.contextmanager
def _fake_wall_clock() -> Iterator[_Wall]:
    """The wall clock of detector.findings.decode_message (the system's: it takes none from
    the worker), which refuses a watermark further ahead of it than DESIGN's bound."""
    import types

    import detector.findings as findings_mod
    wall = _Wall()
    real = findings_mod.time
    findings_mod.time = types.SimpleNamespace(time=wall)  # type: ignore[assignment]
    try:
        yield wall
    finally:
        findings_mod.time = real


ARRIVAL_WINDOW = 64  # records each side whose median ts is the fleet's time at a record


def arrivals(case: Case, window: int = ARRIVAL_WINDOW) -> list[float]:
    """When each record reached Kafka: at its ts (a live cluster), never before the record
    before it (the log is in arrival order) -- but a record more than :data:`DISORDER_S`
    ahead of the fleet's time on both sides of it (the median ``ts`` of the ``window``
    records before it, and of those after it) is its node's clock ahead (valid up to
    DESIGN's 300 s), not the time: it arrives at the fleet's time and moves no later
    record's arrival (blind4's node 170 s ahead made every record after its first arrive
    170 s late: a broker lag, not a clock).  A log's gap is no such record: the records
    after it agree with it.  -inf: no numeric ts yet (invalid records: visible at once)."""
    ts = [v.get("ts") if isinstance(v, dict) else None for _, v in case.records]
    good = [i for i, t in enumerate(ts)
            if type(t) in (int, float) and math.isfinite(t) and abs(t) < 1e12]
    out: list[float] = []
    at = -math.inf
    j = 0  # good[j]: the first good index >= i
    for i, t in enumerate(ts):
        while j < len(good) and good[j] < i:
            j += 1
        if j < len(good) and good[j] == i:
            before = sorted(ts[k] for k in good[max(0, j - window):j])  # type: ignore[misc]
            after = sorted(ts[k] for k in good[j + 1:j + 1 + window])  # type: ignore[misc]
            if before and after and t > max(before[len(before) // 2],  # type: ignore[operator]
                                            after[len(after) // 2]) + DISORDER_S:
                near = sorted(before + after)
                t = near[len(near) // 2]  # (arrives among them)
            at = max(at, t)  # type: ignore[type-var]
        out.append(at)
    return out


def _last_ts(case: Case) -> float:
    return max((v["ts"] for _, v in case.records if isinstance(v, dict)
                and type(v.get("ts")) in (int, float) and math.isfinite(v["ts"])),
               default=0.0)


def _run_partitioned(case: Case, seed: int | None, tail_s: float, tick_s: float,
                     speed: float, wall: _Wall, starved: Starved | None = None) -> list[Alert]:
    settings = Settings()
    rng = random.Random(case.seed("partitions") if seed is None else seed)
    # (stalls, batches and the split: their own generator, so the plain run's is as it was)
    srng = random.Random(rng.random()) if starved is not None else rng
    # (topic, partition) -> [(ts it becomes visible at, key, value)], in file order
    plan: dict[tuple[str, int], list[tuple[float, bytes, bytes]]] = {
        (t, p): [] for t in TELEMETRY_TOPICS for p in range(PARTITIONS)}
    first = last = None
    backlog = starved is not None and starved.rate > 0
    seen_at = arrivals(case)
    if backlog:  # produced as fast as the producer goes, stalls included: a wall time each
        assert starved is not None
        seen_at, t = [], 0.0
        for _ in case.records:
            if starved.stall_s and srng.random() < starved.stall_share / 100.0:
                t += srng.uniform(0.0, starved.stall_s)
            t += 1.0 / starved.rate
            seen_at.append(t)
    for (topic, value), at in zip(case.records, seen_at, strict=True):
        field = "job" if topic == STEP else "node"
        k = value.get(field) if isinstance(value, dict) else None
        key = b"" if k is None else str(k).encode()  # (unkeyed: the service dead-letters it)
        if at > -math.inf:
            first = at if first is None else min(first, at)
            last = at if last is None else max(last, at)
        plan[(topic, zlib.crc32(key) % PARTITIONS)].append((at, key, orjson.dumps(value)))
    if first is None or last is None:
        return []
    if backlog:  # wall time: a day after the log's last record, the backlog's arrival on
        end_ts = _last_ts(case)
        plan = {tp: [(end_ts + 86400.0 + at, k, v) for at, k, v in recs]
                for tp, recs in plan.items()}
        first, last, speed = end_ts + 86400.0 + first, end_ts + 86400.0 + last, 1.0
    if starved is not None and starved.skew_s:
        # The producer sends what it holds every FLUSH_S, a partition after another in a
        # seeded order, the last ``skew_s`` after the first (librdkafka: a request a
        # partition's batch, the broker answering them in turn; a starved producer spreads
        # them): each partition's records later, in their order.
        turns: dict[int, dict[tuple[str, int], int]] = {}
        for tp, recs in plan.items():
            out: list[tuple[float, bytes, bytes]] = []
            for at, k, v in recs:
                flush = math.ceil(at / FLUSH_S)
                if flush not in turns:
                    order = list(plan)
                    srng.shuffle(order)
                    turns[flush] = {o: i for i, o in enumerate(order)}
                sent = flush * FLUSH_S + turns[flush][tp] / len(plan) * starved.skew_s
                out.append((max(out[-1][0] if out else -math.inf, sent), k, v))
            plan[tp] = out
    # The wall clock's reading at the log's first record: the log's start, live (speed 1);
    # faster, an older log replayed, ending at its last record's time -- never behind the
    # event time it reaches (the decoders refuse a clock 300 s ahead of the wall's)
    start = first + max(0.0, (last - first) * (1.0 - 1.0 / speed))
    wall.now = now = start - (starved.warmup_s if starved is not None else 0.0)

    def wall_at(ts: float) -> float:
        if backlog:
            return ts
        return start + (ts - first) / speed if ts > -math.inf else start

    queues: dict[tuple[str, int], list[tuple[int, bytes, bytes, float]]] = {
        tp: [] for tp in plan}
    st = starved or Starved(workers=1, idle_advance_s=settings.idle_advance_s,
                            source_timeout_s=settings.source_timeout_s, heartbeat_s=1.0)
    workers = [PipelineWorker(
        telemetry_topics={t: t for t in TELEMETRY_TOPICS}, findings_topic=FINDINGS,
        findings_partitions=1, expected_sources=[f"{t}:{p}" for t, p in plan],
        thresholds=None, topology=case.topology, hold_back_s=settings.hold_back_s,
        idle_advance_s=st.idle_advance_s, source_timeout_s=st.source_timeout_s,
        wall_clock=wall, codec=CODEC, local_findings=True, home_cluster=case.home,
        topologies=case.others) for _ in range(st.workers)]
    tps = list(plan)
    holder = {tp: 0 for tp in tps}
    if st.workers > 1:
        order = list(tps)
        srng.shuffle(order)
        holder = {tp: i % st.workers for i, tp in enumerate(order)}
    behind = starved.behind_s if starved is not None else 0.0
    for k, w in enumerate(workers):
        w.sources = {tp: w.new_partition(tp, now - behind)  # type: ignore[misc]
                     for tp in plan if holder[tp] == k}
    w0 = workers[0]
    w0.correlators = {(FINDINGS, 0): w0.new_partition(  # type: ignore[misc]
        (FINDINGS, 0), now - behind)}
    produced = dict.fromkeys(plan, 0)
    pos = dict.fromkeys(plan, 0)
    findings: list[tuple[bytes, bytes]] = []
    read = 0
    alerts: list[Alert] = []

    def caught_up(tp: Any, offset: int) -> bool:
        if starved is not None and tp != (FINDINGS, 0):
            # DetectorService._caught_up: the high watermark its worker's last fetch found
            end = ends.get(tp)
            return end is not None and offset + 1 >= end[1]
        return tp == (FINDINGS, 0) or pos[tp] >= len(queues[tp])

    # Starved: as the service's fetcher notes them (detector.service.faust_io.FETCH_ENDS),
    # (when a fetch was sent, the end it found) by partition; at_end as DetectorService's
    ends: dict[Any, tuple[float, int]] = {}

    def at_end_of(tp: Any, offset: int) -> float | None:
        end = ends.get(tp)
        return end[0] if end is not None and offset + 1 >= end[1] else None

    at_end = at_end_of if starved is not None else None

    def take(out: WorkerOutput) -> None:
        tag = out.local.get(0, b"")
        findings.extend((tag + e.key, e.value) for e in out.findings)
        alerts.extend(a for a, _ in out.alerts)

    beats = [now] * len(workers)
    stalled = [-math.inf] * len(workers)  # wall time each worker gets a core again
    if starved is not None and starved.late_start_s:
        stalled[1:] = [start + starved.late_start_s] * (len(workers) - 1)
    end = wall_at(last) + tail_s / speed
    rebalances = sorted(start + r for r in (starved.rebalance_s if starved is not None else ()))
    while now <= end:
        if backlog and now + tick_s > end and any(
                pos[tp] < len(recs) for tp, recs in plan.items()):
            end = now + tail_s  # (a backlog: its tail counts from when it is read)
        for tp, recs in plan.items():  # what reached Kafka by now
            q, i = queues[tp], produced[tp]
            while i < len(recs) and wall_at(recs[i][0]) <= now:
                q.append((len(q), recs[i][1], recs[i][2], now))
                i += 1
            produced[tp] = i
        rng.shuffle(tps)
        if rebalances and now >= rebalances[0]:
            del rebalances[0]
            for w in workers:  # (DetectorService.on_assigned, partitions kept)
                take(w.assigned(now - behind, caught_up, at_end))
        for k, w in enumerate(workers):
            if starved is not None:
                if now < stalled[k]:
                    continue
                if st.stall_s and stalled[k] < now - tick_s and srng.random() < st.stall_share:
                    stalled[k] = now + srng.uniform(0.0, st.stall_s)
                    continue
            mine = [tp for tp in tps if holder[tp] == k]
            lag = st.fetch_lag_s if k else 0.0
            seen = {tp: len(queues[tp]) for tp in mine}
            if lag:  # its fetches answered lag late: what had reached Kafka by then
                seen = {tp: sum(1 for r in queues[tp] if r[3] <= now - lag) for tp in mine}
            if starved is not None:  # a fetch asks every partition held: each one's end
                for tp in mine:
                    ends[tp] = (now - lag, seen[tp])
            batch = {}
            for tp in mine[:rng.randint(1, len(mine))]:
                got = queues[tp][pos[tp]:min(seen[tp], pos[tp] + rng.randint(1, st.batch))]
                pos[tp] += len(got)
                if got:
                    batch[tp] = got
            if batch:
                take(w.process(batch, now - behind, caught_up, at_end=at_end))
            if now >= beats[k]:
                beats[k] += st.heartbeat_s
                take(w.heartbeat(now - behind, caught_up, at_end))
        if starved is None or now >= stalled[0]:
            new = [(i, *findings[i], None) for i in range(read, len(findings))]
            read = len(findings)
            take(w0.process({(FINDINGS, 0): new}, now - behind, caught_up) if new
                 else w0.release_all(now - behind))
        now = wall.now = now + tick_s
    return alerts


# -- comparing ---------------------------------------------------------------------------


@dataclasses.dataclass
class Verdict:
    case: str
    invariant: str
    ok: bool
    first: str = ""       # the first differing alert: baseline's | disturbed run's
    seconds: float = 0.0


def first_difference(want: list[Msg], got: list[Msg]) -> str:
    for i in range(max(len(want), len(got))):
        a = want[i] if i < len(want) else None
        b = got[i] if i < len(got) else None
        if a != b:
            return f"#{i}: {show(a)} | {show(b)}"
    return ""


def sent_once(alerts: list[Alert]) -> list[Msg]:
    """What a pager keeps: each message once, by its ``id`` (dedup_key, status, detected_ts)."""
    seen: set[str] = set()
    out = []
    for a in alerts:
        if a.id not in seen:
            seen.add(a.id)
            out.append(msg(a))
    return out


def pages(alerts: list[Alert], until: float = math.inf) -> list[Msg]:
    """Firing problems, once each: (topic, dedup_key, unit, cause), sorted, decided by
    ``until``; detected_ts is the first firing's."""
    first: dict[tuple, Msg] = {}
    for a in alerts:
        if a.status == "firing" and a.detected_ts <= until:
            first.setdefault((a.topic, a.dedup_key), msg(a))
    return sorted(first.values(), key=lambda m: (m[2], m[0]))


def units(alerts: list[Alert]) -> dict[tuple[str, str, str], float]:
    """(topic, unit, cause) of every firing problem -> when it was first decided."""
    out: dict[tuple[str, str, str], float] = {}
    for a in alerts:
        if a.status == "firing":
            k = (a.topic, a.scope.key, a.cause)
            out[k] = min(out.get(k, math.inf), a.detected_ts)
    return out


def check(case: Case, invariant: str, baseline: list[Alert] | None = None) -> Verdict:
    base = run(case) if baseline is None else baseline
    t0 = time.perf_counter()
    if invariant == "kill":
        first = first_difference([msg(a) for a in base], [msg(a) for a in run_killed(case)])
    elif invariant == "restart":
        first = first_difference(sent_once(base), sent_once(run_restarted(case)))
    elif invariant == "duplicates":
        first = first_difference([msg(a) for a in base],
                                 [msg(a) for a in run(case, duplicated(case))])
    elif invariant == "disorder":
        want, got = units(base), units(run(case, disordered(case)))
        first = ""
        for k in sorted(set(want) | set(got)):
            a, b = want.get(k), got.get(k)
            if a is None or b is None or abs(a - b) > DISORDER_S:
                first = (f"{k[0].split('.')[-1]} {k[1]} {k[2]}: "
                         f"{'-' if a is None else f'@{a:.3f}'} | "
                         f"{'-' if b is None else f'@{b:.3f}'}")
                break
    elif invariant == "partitions":
        end = _last_ts(case)
        want = pages(base, end + TAIL_S / 2)
        got = pages(run_partitioned(case), end + TAIL_S)
        first = first_difference([(*m[:6], 0.0) for m in want], [(*m[:6], 0.0) for m in got])
        if not first:  # the same pages: each first decided within the bound of the replay's
            first = next((f"{show(a)} | @{b[6]:.3f}" for a, b in zip(want, got, strict=True)
                          if abs(a[6] - b[6]) > DISORDER_S), "")
    else:
        raise ValueError(f"unknown invariant {invariant!r}")
    return Verdict(case.id, invariant, not first, first, time.perf_counter() - t0)


# -- the sample the tests run -------------------------------------------------------------


def sample(max_bytes: int = 150_000, salt: str = "meta34") -> list[Path]:
    """One case a family, seeded and stable: of each family's cases of at most ``max_bytes``
    (gzip; its smallest when none is that small), the one whose name hashes lowest with
    ``salt`` -- a case added later changes a family's pick only if it hashes lower still."""
    by_family: dict[str, list[tuple[int, Path]]] = {}
    for p in case_paths():
        by_family.setdefault(p.parent.parent.name, []).append((p.stat().st_size, p))
    out = []
    for fam in sorted(by_family):
        sized = by_family[fam]
        small = [p for n, p in sized if n <= max_bytes] or [min(sized)[1]]
        out.append(min(small, key=lambda p: hashlib.blake2b(
            f"{salt}|{p.name}".encode(), digest_size=8).digest()))
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--only", default=None, help="cases whose family/name holds this")
    ap.add_argument("--invariant", action="append", choices=INVARIANTS, default=None)
    ap.add_argument("--sample", action="store_true", help="only the tests' sample")
    ap.add_argument("--json", default=None, help="write the verdicts here")
    args = ap.parse_args(argv)
    invariants = args.invariant or list(INVARIANTS)
    paths = sample() if args.sample else case_paths()
    verdicts: list[Verdict] = []
    t0 = time.perf_counter()
    for p in paths:
        if args.only and args.only not in f"{p.parent.parent.name}/{p.name}":
            continue
        case = load_case(p)
        base = run(case)
        for inv in invariants:
            try:
                v = check(case, inv, base)
            except Exception as exc:  # noqa: BLE001 - a crash is a verdict too
                v = Verdict(case.id, inv, False, f"raised {type(exc).__name__}: {exc}"[:200])
            verdicts.append(v)
            print(f"{case.id:<72} {inv:<10} {'pass' if v.ok else 'FAIL'} {v.seconds:6.2f}s"
                  f"  {v.first}", flush=True)
    print()
    print(f"{'invariant':<12} {'cases':>5} {'pass':>5} {'fail':>5}")
    for inv in invariants:
        vs = [v for v in verdicts if v.invariant == inv]
        print(f"{inv:<12} {len(vs):>5} {sum(v.ok for v in vs):>5} "
              f"{sum(not v.ok for v in vs):>5}")
    print(f"({time.perf_counter() - t0:.0f} s)")
    if args.json:
        Path(args.json).write_bytes(orjson.dumps([dataclasses.asdict(v) for v in verdicts],
                                                 option=orjson.OPT_INDENT_2))
    return 0


if __name__ == "__main__":
    sys.exit(main())


__all__ = ["Case", "Verdict", "check", "load_case", "run", "sample"]
