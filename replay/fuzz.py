"""Fuzzing harness: mutated records through the service's stages and through replay, as data.

:func:`fuzz_stages` feeds valid telemetry interleaved with mutated records
(:mod:`replay.mutate`) to one stage-1 partition per telemetry topic, their
findings to a stage-2 correlator, with heartbeats between, one record per
call so any exception that escapes is pinned to the record and mutation that
caused it.  :func:`fuzz_replay` writes the same mix as an incident log and
replays it.  Both report what escaped (nothing, when the workers are sound),
the dead letters by reason, and the resident memory's growth.

>>> r = fuzz_stages(200, seed=3)
>>> r.mutated, r.valid, r.dead > 100
(200, 100, True)
"""

from __future__ import annotations

import os
import time
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from detector.alerts import Alert
from detector.events import TELEMETRY_TOPICS
from detector.pipeline.correlator import CorrelatorPartition
from detector.pipeline.source import DeadLetter, Emit, SourcePartition, watermarks
from detector.testing import T0
from replay.mutate import Mutator, valid_records

_PAGE_KIB = os.sysconf("SC_PAGE_SIZE") // 1024


def rss_kib() -> int:
    """Resident memory of this process now (not its peak)."""
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * _PAGE_KIB


@dataclass
class FuzzResult:
    """What a fuzz run saw: ``escaped`` lists (mutation names, exception) and must stay empty."""

    mutated: int = 0
    valid: int = 0
    dead: int = 0
    reasons: Counter[str] = field(default_factory=Counter)
    unexplained: int = 0            # dead letters (or invalid log lines) without a reason
    internal: int = 0               # rejected because the engine raised: guarded, still a bug
    escaped: list[tuple[list[str], str]] = field(default_factory=list)
    alerts: int = 0
    state_bytes: int = 0            # the stages' snapshots at the end
    seconds: float = 0.0
    cpu_seconds: float = 0.0
    rss_start_kib: int = 0
    rss_peak_kib: int = 0

    @property
    def rss_growth_kib(self) -> int:
        return self.rss_peak_kib - self.rss_start_kib


def mixed_stream(mutated: int, seed: int, valid_per_mutated: float = 0.5
                 ) -> Iterator[tuple[str, bytes, list[str]]]:
    """(topic, message bytes, mutations; [] for a valid one) in the order they are fed.

    Made as it is consumed: a few of the messages are a megabyte.
    """
    mut = Mutator(seed)
    rng = mut.rng
    n_valid = int(mutated * valid_per_mutated)
    steps = max(10, n_valid // 70 + 1)  # valid_records gives ~78 records a step
    base = list(valid_records(seed, steps=steps))
    v = 0
    for m in range(mutated):
        while v < len(base) and v < (m + 1) * valid_per_mutated:
            topic, rec = base[v]
            yield topic, orjson.dumps(rec), []
            v += 1
        # a recent record broken (its ts near the stream's clock; far_ts moves it away)
        topic, rec = base[max(0, min(v, len(base)) - 1 - rng.randrange(100))]
        if rng.random() < 0.02:
            topic = rng.choice(TELEMETRY_TOPICS)  # a record on another topic's stream
        data, ops = mut.mutate(rec)
        yield topic, data, ops


def fuzz_stages(mutated: int, seed: int = 0) -> FuzzResult:
    """Mutated records, interleaved with valid ones, through stage 1 and stage 2."""
    res = FuzzResult(rss_start_kib=rss_kib())
    res.rss_peak_kib = res.rss_start_kib
    # The service's wall clock: an hour after the telemetry's epoch (ts far ahead of it
    # are refused, as a live worker refuses them).
    sources = {t: SourcePartition(t, 0, 1, wall_clock=lambda: T0 + 3600.0)
               for t in TELEMETRY_TOPICS}
    corr = CorrelatorPartition(0, expected=[s.source for s in sources.values()])
    offsets = dict.fromkeys(TELEMETRY_TOPICS, 0)
    corr_offset = 0
    now = 1000.0
    alerts: list[Alert] = []
    t0, c0 = time.perf_counter(), time.process_time()
    for i, (topic, data, ops) in enumerate(mixed_stream(mutated, seed)):
        if ops:
            res.mutated += 1
        else:
            res.valid += 1
        emits: list[Emit] = []
        dead: list[DeadLetter] = []
        try:
            sources[topic].process([(offsets[topic], b"k", data, None)], now, emits, dead)
        except Exception as exc:  # noqa: BLE001 - the point: count what escapes
            res.escaped.append((ops, f"stage 1: {type(exc).__name__}: {exc}"[:300]))
        offsets[topic] += 1
        res.dead += len(dead)
        for d in dead:
            reason = d.reason if isinstance(d.reason, str) else ""
            if reason.strip():
                res.reasons[":".join(reason.split(":")[:2])[:70]] += 1
                res.internal += "internal error" in reason
            else:
                res.unexplained += 1
        if i % 50 == 0:  # a heartbeat: watermarks, idle advance, release
            now += 0.5
            for s in sources.values():
                s.caught_up = True
                s.idle_advance(now, 5.0, emits)
            emits.append(watermarks(sources.values(), now, 5.0))
        try:
            for e in emits:
                corr.on_message(corr_offset, e.value, now)
                corr_offset += 1
            corr.release(now, alerts)
        except Exception as exc:  # noqa: BLE001
            res.escaped.append((ops, f"stage 2: {type(exc).__name__}: {exc}"[:300]))
        if i % 1000 == 0:
            res.rss_peak_kib = max(res.rss_peak_kib, rss_kib())
    res.rss_peak_kib = max(res.rss_peak_kib, rss_kib())
    res.alerts = len(alerts)
    res.seconds = time.perf_counter() - t0
    res.cpu_seconds = time.process_time() - c0
    res.state_bytes = sum(len(p.snapshot()[1]) for p in (*sources.values(), corr))
    return res


def write_log(path: Path, stream: Iterable[tuple[str, bytes, list[str]]]) -> tuple[int, int]:
    """The stream as an incident log, one ``{"topic", "value"}`` line each, value as sent;
    returns (mutated, valid) written."""
    counts = [0, 0]
    with open(path, "wb") as f:
        for topic, data, ops in stream:
            f.write(b'{"topic": ' + orjson.dumps(topic) + b', "value": ' + data + b"}\n")
            counts[not ops] += 1
    return counts[0], counts[1]


def fuzz_replay(mutated: int, seed: int, workdir: Path) -> FuzzResult:
    """The same mix as an incident log, replayed in process (``faultline replay``)."""
    from replay.runner import replay_log

    log = workdir / f"fuzz-{seed}.jsonl"
    n_mutated, n_valid = write_log(log, mixed_stream(mutated, seed))
    res = FuzzResult(mutated=n_mutated, valid=n_valid, rss_start_kib=rss_kib())
    t0, c0 = time.perf_counter(), time.process_time()
    try:
        out: Any = replay_log(log)
    except Exception as exc:  # noqa: BLE001
        res.escaped.append((["replay"], f"{type(exc).__name__}: {exc}"[:300]))
    else:
        res.alerts = len(out.alerts)
        for reason, n in out.invalid.items():
            res.dead += n
            if isinstance(reason, str) and reason.strip():
                res.reasons[reason[:60]] += n
                res.internal += n if "engine error" in reason else 0
            else:
                res.unexplained += n
    res.seconds = time.perf_counter() - t0
    res.cpu_seconds = time.process_time() - c0
    res.rss_peak_kib = rss_kib()
    return res
