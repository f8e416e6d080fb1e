"""Through Kafka, in one run: raw consumption, no-op Faust, the faultline worker, the engine.

Produces an incident log once into fresh uuid-prefixed telemetry topics
(``--partitions`` per topic) on a broker it starts itself (or ``--bootstrap``
/ ``FAULTLINE_KAFKA_BOOTSTRAP``), then measures one consumer at a time
reading the whole backlog, each in its own process, so the ratios hold on a
noisy machine:

  raw          confluent-kafka + orjson.loads of each value: the physical limit
  faust agent  a Faust agent that does nothing (Faust's default path)
  faust batch  the service's batch delivery into a stage that only counts
  faultline    ``faultline serve``, one worker: decode, Monitors, findings, correlator
  engine       the in-process engine on the same log (bench/engine_throughput.py)

Events/s is messages / wall time from the first message to the last; CPU is
the consumer process's own (all its threads, from /proc or
``time.process_time``) over the same span, and events per CPU-second is what
one core would do with the machine to itself.  Then:

- scale-out: 1 and 2 workers in one group, each run on fresh topics: the
  workers start, take their partitions, and the log is produced into them
  as fast as possible;
- latency at ``--rates`` of the one worker's measured maximum: a fresh
  worker, the log produced paced by event time to that average rate, and for
  every alert whose input is known (its ``faultline-arrived`` header), and
  every finding, the time from its input's Kafka timestamp to its own.

    python bench/kafka_throughput.py [--log LOG] [--topology FILE] [--json OUT]

Issue 14's ratio (worker / raw, best of N each in one sitting, by wall and by CPU):

    python bench/kafka_throughput.py --ratio 3 --skip faust-agent,engine,scale,latency
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import orjson

sys.path.insert(0, str(Path(__file__).resolve().parent))

import kafka_bench  # noqa: E402
from kafka_bench import (  # noqa: E402
    ARRIVED_HEADER,
    DEFAULT_LOG,
    DEFAULT_TOPOLOGY,
    FEED_CLIENT_ID,
    FEED_SHAPES,
    ROOT,
    STAGES_HEADER,
    WARM_HEADER,
    BoxSampler,
    Broker,
    FeedProcess,
    FeedShape,
    Msg,
    Worker,
    create_topics,
    feed_shape,
    load,
    loadavg,
    nice_of,
    percentile,
    proc_cpu_s,
    processed,
    produce,
    producer,
    read_topic,
    renice,
    repeat_log,
    rss_kib,
    sched_s,
    wait_for,
    warm_alert_topics,
    worker_env,
)

from detector.events import TELEMETRY_TOPICS  # noqa: E402
from detector.settings import Settings  # noqa: E402
from detector.thresholds import Thresholds  # noqa: E402


def reference_consumer(mode: str, bootstrap: str, topics: list[str], n: int) -> dict[str, Any]:
    out = subprocess.run([sys.executable, str(ROOT / "bench" / "kafka_consumers.py"), mode,
                          "--bootstrap", bootstrap, "--topics", ",".join(topics),
                          "--expect", str(n)], cwd=ROOT, capture_output=True, timeout=900)
    # Faust's terminal codes may precede the result on its line.
    lines = [ln[ln.index('{"mode"'):] for ln in out.stdout.decode().splitlines()
             if '{"mode"' in ln]
    if not lines:
        raise RuntimeError(f"{mode}: no result\n{out.stderr.decode()[-3000:]}")
    res = json.loads(lines[-1])
    if res["messages"] != n:  # timed out: its rate would be of a part of the log
        raise RuntimeError(f"{mode}: read {res['messages']:,} of {n:,} messages")
    return res


def serve(broker: Broker, prefix: str, n: int, workers: int, topology: str | None,
          partitions: int, tmp: Path, feed: list[Msg] | None = None,
          code: Path | None = None) -> dict[str, Any]:
    """``workers`` faultline workers in one group consume ``n`` messages of ``prefix``.

    Without ``feed`` the backlog is already there; with it, the workers first
    take their partitions and then ``feed`` is produced as fast as possible.
    """
    run = f"w{workers}-{uuid.uuid4().hex[:6]}"
    env = worker_env(broker.bootstrap, prefix, run, topology, partitions)  # type: ignore[arg-type]
    procs = [Worker(env, tmp / f"{run}-{k}", code=code) for k in range(workers)]
    try:
        if feed is not None:
            def assigned() -> bool:
                held = [len(w.status().get("sources") or {}) for w in procs]
                return all(held) and sum(held) == 4 * partitions

            wait_for("the workers' assignment", assigned, 180, procs)
        broker_cpu0 = broker.cpu_s()
        if feed is not None:
            produce(producer(broker.bootstrap, 20.0), prefix, feed)  # type: ignore[arg-type]
        wait_for(f"{n:,} messages processed", lambda: processed(procs) >= n, 900, procs)
        broker_cpu = broker.cpu_s() - broker_cpu0
        # Status files are written each heartbeat: wait for the one after the last input.
        wait_for("the final status", lambda: all(
            (w.status().get("input") or {}).get("last_wall") for w in procs), 30, procs)
        time.sleep(1.5)
        statuses = [w.status() for w in procs]
        inputs = [s["input"] for s in statuses]
        first = min(i["first_wall"] for i in inputs)
        last = max(i["last_wall"] for i in inputs)
        cpu = sum(i["last_cpu_s"] - i["first_cpu_s"] for i in inputs)
        rss = [rss_kib(w.proc.pid) for w in procs]
        return {"mode": f"faultline x{workers}", "messages": n, "wall_s": last - first,
                "cpu_s": cpu, "rss_kib": max(r[0] for r in rss),
                "hwm_kib": max(r[1] for r in rss), "broker_cpu_s": broker_cpu,
                "per_worker": [{"events": s["counts"]["events"], "partitions": len(s["sources"]),
                                "wall_s": i["last_wall"] - i["first_wall"],
                                "cpu_s": i["last_cpu_s"] - i["first_cpu_s"]}
                               for s, i in zip(statuses, inputs, strict=True)]}
    finally:
        for w in procs:
            w.stop()


# (name, from stamp, to stamp) of an alert's stages (the worker's faultline-stages header,
# FAULTLINE_TRACE_STAGES): "arrived" is the input's Kafka timestamp, "alert" the alert's.
STAGES = (("input fetch", "arrived", "fetched"),
          ("input hand-over", "fetched", "handed"),
          ("stage 1 (batch, produce)", "handed", "found"),
          ("findings fetch", "found", "findings_fetched"),
          ("findings hand-over", "findings_fetched", "findings_handed"),
          ("correlator clock", "findings_handed", "decided"),
          ("alert produce", "decided", "alert"))


def stage_times(arrived: float, alert: float, header: bytes | None) -> dict[str, float] | None:
    """An alert's seconds in each stage (None without a complete trace)."""
    if header is None:
        return None
    t = {**json.loads(header), "arrived": arrived, "alert": alert}
    if any(t.get(k) is None for _, a, b in STAGES for k in (a, b)):
        return None
    return {name: t[b] - t[a] for name, a, b in STAGES}


SLOW_S = 0.25  # the target: alerts slower than this are explained one by one (--stages)


def read_trace(path: Path) -> tuple[list[list[Any]], dict[tuple[str, int], list[list[Any]]]]:
    """The worker's trace file (detector.service.app.TRACE_FILE): its hand-overs, and its
    fetch responses by partition as [sent, done, fetch offset, high watermark, came]."""
    batches: list[list[Any]] = []
    fetches: dict[tuple[str, int], list[list[Any]]] = {}
    try:
        lines = path.read_bytes().splitlines()
    except OSError:
        return batches, fetches
    for line in lines:
        x = orjson.loads(line)
        if "batch" in x:
            batches.append(x["batch"])
        elif "fetch" in x:
            sent, done, parts = x["fetch"]
            for topic, partition, offset, high, came in parts:
                fetches.setdefault((topic, partition), []).append(
                    [sent, done, offset, high, came])
    batches.sort()
    for v in fetches.values():
        v.sort()
    return batches, fetches


SLOW_SNAPSHOT_S = 0.1  # snapshots delivered slower than this are reported (--stages)


def slow_snapshots(path: Path, slow_s: float = SLOW_SNAPSHOT_S) -> list[list[float]]:
    """Class (d), alert produce: each snapshot of the worker's trace (TRACE_FILE) whose
    produce -> delivery took ``slow_s`` or more, as [delivery s, and over it what the
    output producer (findings, alerts) saw in librdkafka's 100 ms statistics: the longest
    request round trip s, the most requests in flight, the longest wait to be sent s].
    Round 9's worker sent snapshots through that producer: 5 requests in flight (the
    idempotent maximum) and alerts waiting to be sent meant they queued behind them."""
    snaps: list[list[float]] = []
    stats: list[list[Any]] = []
    try:
        lines = path.read_bytes().splitlines()
    except OSError:
        return []
    for line in lines:
        x = orjson.loads(line)
        if "snap" in x:
            snaps.append(x["snap"])
        elif "stats" in x:
            stats.append(x["stats"])
    out = []
    for s in snaps:
        if s[4] - s[3] < slow_s:
            continue
        bs = [b for st in stats if s[3] <= st[0] <= s[4] + 0.1 for b in st[3].values()]
        out.append([s[4] - s[3], max(((b.get("rtt_max") or 0) / 1e6 for b in bs), default=0.0),
                    max((b.get("waitresp_cnt") or 0 for b in bs), default=0),
                    max(((b.get("outbuf_latency_max") or 0) / 1e6 for b in bs), default=0.0)])
    return out


def broker_pauses(path: Path | None) -> list[tuple[float, float]]:
    """(start, seconds) of every safepoint pause in the broker JVM's log (-Xlog:safepoint
    with the time decorator): garbage collection and the rest, stopping every thread."""
    import datetime as dt
    import re

    if path is None:
        return []
    out = []
    pat = re.compile(r"^\[([^\]]+)\].*Safepoint .*Total: (\d+) ns")
    try:
        text = path.read_text(errors="replace")
    except OSError:
        return []
    for line in text.splitlines():
        m = pat.match(line)
        if m:
            end = dt.datetime.strptime(m.group(1), "%Y-%m-%dT%H:%M:%S.%f%z").timestamp()
            secs = int(m.group(2)) / 1e9
            out.append((end - secs, secs))
    return out


def explain(arrived: float, alert: float, trace: dict[str, Any], prefix: str,
            fetches: dict[tuple[str, int], list[list[Any]]], batches: list[list[Any]],
            acked: list[Any], pauses: list[tuple[float, float]]) -> dict[str, Any]:
    """Where one slow alert's time went, split by who held it (seconds):

    (a) ``feed``: its input not yet in Kafka -- from its CreateTime to its append, taken
        as the librdkafka ack time of the feed's nearest sampled message (produced within
        a few ms, so in the same produce request or the next), bounded below by the last
        fetch response that still saw the partition end at or before the input's offset
        and above by the fetch that brought it;
    (b) the worker: ``fetch`` (appended, not yet fetched: ``asked_gap`` of it no request
        for its partition was out; a partition is asked for again only when its fetched
        records are all handed over), ``hand_over`` (fetched, waiting in the consumer's
        buffer for the batches before it), ``stage1``, ``findings`` (the findings
        message's fetch and hand-over);
    (c) ``clock``: the correlator clock, ``held_by`` the sources it waited for;
    (d) ``produce``: the alert's produce to its append.

    ``cpu_wait``: the worker's threads' time runnable without a CPU in the alert's span,
    ``max_batch`` the longest hand-over then (wall, records), ``broker_paused`` the
    broker JVM's safepoint pauses then."""
    st = stage_times(arrived, alert, json.dumps(trace).encode()) or {}
    src = trace.get("source") or ""
    off = trace.get("offset")
    topic, _, part = src.rpartition(":")
    resp = fetches.get((prefix + topic, int(part)), []) if part.isdigit() else []
    fetched = trace.get("fetched") or arrived
    bring = None
    last_miss = None
    if off is not None:
        for x in resp:
            if x[4] and x[2] <= off < x[3]:
                bring = x
                break
            if x[2] <= off and x[3] <= off:
                last_miss = x
    # the feed's sampled acks produced nearest in time (any partition: one broker, one
    # produce connection, so they share the produce requests)
    near = sorted(acked, key=lambda a: abs(a[0] - arrived))[:3] if acked else []
    ack_at = (arrived + min(a[2] if a[2] >= 0 else a[1] for a in near)
              if near and abs(near[0][0] - arrived) < 0.02 else None)
    lo = last_miss[0] if last_miss else arrived
    hi = fetched
    appended = min(max(ack_at if ack_at is not None else lo, lo), hi)
    feed = max(0.0, appended - arrived)
    asked_gap = (bring[0] - max(appended, last_miss[1] if last_miss else arrived)
                 if bring else float("nan"))
    before = [b for b in batches if b[1] <= arrived]
    after = [b for b in batches if b[1] >= alert]
    span = [b for b in batches if b[1] > arrived and b[0] < alert]
    cpu_wait = (after[0][7] - before[-1][7]) if before and after else float("nan")
    longest = max(span, key=lambda b: b[1] - b[0], default=None)
    paused = sum(d for t, d in pauses if arrived <= t + d and t <= alert)
    return {"total": alert - arrived, "source": src, "offset": off,
            "feed": feed, "fetch": max(0.0, st.get("input fetch", 0.0) - feed),
            "asked_gap": asked_gap, "ack_known": ack_at is not None,
            "hand_over": st.get("input hand-over", 0.0),
            "stage1": st.get("stage 1 (batch, produce)", 0.0),
            "findings": st.get("findings fetch", 0.0) + st.get("findings hand-over", 0.0),
            "clock": st.get("correlator clock", 0.0), "held_by": trace.get("held_by"),
            "produce": st.get("alert produce", 0.0), "cpu_wait": cpu_wait,
            "span": alert - arrived,
            "max_batch": None if longest is None else (longest[1] - longest[0], longest[3]),
            "batches": len(span), "broker_paused": paused}


def latency_run(broker: Broker, msgs: list[Msg], rate: float, topology: str | None,
                partitions: int, tmp: Path, code: Path | None = None,
                stages: bool = False, shape: FeedShape = FEED_SHAPES["deployed"],
                feeder: FeedProcess | None = None, feed_name: str = "", nice: int = 0,
                broker_nice: int | None = None, keep: Path | None = None,
                pin: bool = False, arrival: str = "create") -> dict[str, Any]:
    """A fresh worker; the log produced paced to ``rate`` events/s; arrival -> output times.

    The feed is ``shape`` (FeedShape): in ``feeder``'s process (``feed_name``: its list
    of messages, the same as ``msgs``) or, for a shape not in a process of its own, by a
    new producer in this one.

    ``nice`` > 0: from the worker's assignment until the run has settled, the paced
    feed (its process and this one, all their threads) and the broker run at that nice value and
    the worker at its own (0), so the worker gets a CPU first -- what this 2-core
    machine can do for "the worker on a core of its own".  ``broker_nice``: the
    broker's own value instead (it is on the way of every record; the producer is not).
    ``arrival``: what an input's Kafka timestamp, the start of its alert's latency, is:
    ``create`` when the feed's producer was handed it (CreateTime: its queueing in the
    paced producer counts), ``append`` when the broker appended it (LogAppendTime, as
    for the alerts: arrival at Kafka to the alert's arrival there)."""
    load0 = loadavg()
    prefix = f"bench-lat-{uuid.uuid4().hex[:8]}."
    run = "lat"
    env = worker_env(broker.bootstrap, prefix, run, topology, partitions)  # type: ignore[arg-type]
    if stages:
        env["FAULTLINE_TRACE_STAGES"] = "true"  # a baseline checkout without it ignores it
    # The alert topics stamp a message when the broker appends it (LogAppendTime), not
    # when the worker hands it to its producer: the output producer's linger and the
    # send count too, as the feed's do for the input (its CreateTime, before lingering).
    alert_topics = [f"{prefix}{run}.alerts.{t}" for t in ("isolation", "escalation")]
    create_topics(broker.bootstrap, alert_topics,  # type: ignore[arg-type]
                  Settings().partitions_alerts, {"message.timestamp.type": "LogAppendTime"})
    if arrival == "append" or shape.warm:  # before the worker, which creates what is missing
        create_topics(broker.bootstrap, [prefix + t for t in TELEMETRY_TOPICS],  # type: ignore[arg-type]
                      partitions, {"message.timestamp.type": "LogAppendTime"}
                      if arrival == "append" else None)
    own = shape.process
    if own and feeder is None:
        raise ValueError(f"feed shape {shape.name!r} needs the feed process")
    if shape.warm:
        warm_topics(broker, prefix, shape, feeder, msgs)
        warm_alert_topics(broker.bootstrap, alert_topics,  # type: ignore[arg-type]
                          Settings().partitions_alerts)
        env["FAULTLINE_AUTO_OFFSET_RESET"] = "latest"  # the worker starts at their end
    w = Worker(env, tmp / f"lat-{prefix}", code=code)
    feed_pid = feeder.pid if own and feeder is not None else os.getpid()
    placed = Placement()
    try:
        wait_for("the worker's assignment", lambda: len(w.status().get("sources") or {})
                 == 4 * partitions and w.status().get("correlators"), 180, [w])
        if broker_nice is None:
            broker_nice = nice
        # After the worker started: a child inherits its parent's nice value.
        harness = [os.getpid(), feed_pid] if own else [os.getpid()]
        placed.place(harness, broker.pid, nice, broker_nice,
                     w.proc.pid if pin else None)  # pinned: the worker on a CPU of its own
        nices = {"worker": nice_of(w.proc.pid), "producer": nice_of(feed_pid),
                 "broker": nice_of(broker.pid) if broker.pid else None}
        end_ts = max(m.ts for m in msgs)
        speed = rate * (end_ts - msgs[0].ts) / len(msgs)
        cpu0 = proc_cpu_s(w.proc.pid)
        sched0 = sched_s(w.proc.pid)
        others0 = [sched_s(pid)[1] if pid else 0.0 for pid in (feed_pid, broker.pid)]
        mine0, broker0, jit0 = feed_cpu_s(own, feed_pid), broker.cpu_s(), broker.jit_s()
        t0 = time.time()
        acked: list[float] = []  # with stages: the feed's produce() -> delivery report, sampled
        stats: list[dict[str, Any]] = []  # the feed producer's own view, every 100 ms
        new_producer = True
        pids = {"worker": w.proc.pid, "broker": broker.pid or 0, "feed": feed_pid}
        if own:
            pids["bench"] = os.getpid()
        with BoxSampler(pids=pids) as box:
            if own:
                got = feeder.run(shape, broker.bootstrap, prefix, feed_name,  # type: ignore[union-attr, arg-type]
                                 speed, stages)
                t0, secs, new_producer = got["t0"], got["secs"], got["new_producer"]
                acked, stats = got["acked"], got["stats"]
            else:
                secs = produce(producer(broker.bootstrap, shape.linger_ms,  # type: ignore[arg-type]
                                        stats if shape.stats else None, shape.compression),
                               prefix, msgs, speed, acked=acked if stages else None)
        cpu = proc_cpu_s(w.proc.pid) - cpu0
        sched1 = sched_s(w.proc.pid)
        mine, broker_cpu = feed_cpu_s(own, feed_pid) - mine0, broker.cpu_s() - broker0
        broker_jit = broker.jit_s() - jit0
        waited = sched1[1] - sched0[1]
        # How long the producer (this process) and the broker were runnable but waiting
        # for a CPU: what the worker's priority cost them.
        mine_wait, broker_wait = (sched_s(pid)[1] - w0 if pid else float("nan")
                                  for pid, w0 in zip((feed_pid, broker.pid), others0,
                                                     strict=True))
        cfg = Thresholds()
        settle = end_ts + cfg.lateness_s + max(cfg.escalate_after_s, cfg.switch_window_s) + 1.0

        def settled() -> bool:
            cs = (w.status().get("correlators") or {}).values()
            return any((c.get("released") or -1e300) >= settle for c in cs)

        wait_for("the correlator to settle", settled, 180, [w])
        placed.restore()
        alerts: list[float] = []
        traced: list[tuple[float, dict[str, float]]] = []  # (seconds from the feed's start, stages)
        # (the same seconds, the correlator clock stage, the sources it waited for: held_by,
        # the input's partition)
        held: list[tuple[float, float, list[str] | None, str | None]] = []
        # (latency, seconds from the start of the feed to its input, status, kind, cause, level)
        which: list[tuple[Any, ...]] = []
        n_alerts = 0
        slow_in: list[tuple[float, float, dict[str, Any]]] = []
        for name in ("alerts.isolation", "alerts.escalation"):
            for m in read_topic(broker.bootstrap, f"{prefix}{run}.{name}"):  # type: ignore[arg-type]
                headers = dict(m.headers() or [])
                if WARM_HEADER in headers:
                    continue  # written before the worker started (warm_alert_topics)
                n_alerts += 1
                arrived = headers.get(ARRIVED_HEADER)
                if arrived is not None:
                    alerts.append(m.timestamp()[1] / 1000.0 - float(arrived))
                    st = stage_times(float(arrived), m.timestamp()[1] / 1000.0,
                                     headers.get(STAGES_HEADER))
                    if st is not None and alerts[-1] > SLOW_S:
                        slow_in.append((float(arrived), m.timestamp()[1] / 1000.0,
                                        json.loads(headers[STAGES_HEADER])))
                    if st is not None:
                        traced.append((float(arrived) - t0, st))
                        trace = json.loads(headers[STAGES_HEADER])
                        held.append((float(arrived) - t0, st["correlator clock"],
                                     trace.get("held_by"), trace.get("source")))
                    v = orjson.loads(m.value())
                    which.append((alerts[-1], float(arrived) - t0, v.get("status"),
                                  v.get("kind"), v.get("cause"),
                                  (v.get("scope") or {}).get("level")))
        if keep is not None and stages:
            import shutil

            keep.mkdir(parents=True, exist_ok=True)
            with contextlib.suppress(OSError):
                shutil.copy(w.workdir / "trace.jsonl", keep / f"{prefix}trace.jsonl")
        requests = broker.requests(t0 - 1.0)
        waits = broker.waits(t0 - 1.0)
        slow = []
        if slow_in:
            batches, fetches = read_trace(w.workdir / "trace.jsonl")
            pauses = broker_pauses(broker.gc_log)
            slow = [{**explain(a, b, tr, prefix, fetches, batches, acked, pauses),
                     **in_span(a, b, box, requests, waits), "at": a - t0}
                    for a, b, tr in slow_in]
        first_fetch = None
        snapshots = slow_snapshots(w.workdir / "trace.jsonl") if stages else []
        if stages:
            _, fetches = read_trace(w.workdir / "trace.jsonl")
            sent = [x[0] for v in fetches.values() for x in v]
            first_fetch = min(sent) - t0 if sent else None
        findings = []
        for m in read_topic(broker.bootstrap, f"{prefix}{run}.faultline.findings"):  # type: ignore[arg-type]
            v = orjson.loads(m.value())
            if v.get("type") == "finding" and v.get("arrived") is not None:
                findings.append(m.timestamp()[1] / 1000.0 - float(v["arrived"]))
        return {"rate": rate, "achieved_rate": len(msgs) / secs, "speed": speed,
                "worker_cpu_share": cpu / secs, "worker_runqueue_share": waited / secs,
                "producer_cpu_share": mine / secs, "broker_cpu_share": broker_cpu / secs,
                "worker_cpu_s": cpu, "worker_wait_s": waited, "broker_cpu_s": broker_cpu,
                "broker_jit_s": broker_jit,
                "producer_wait_share": mine_wait / secs, "broker_wait_share": broker_wait / secs,
                "producer_cpu_s": mine, "feed_s": secs, "events": len(msgs),
                "feed_shape": shape._asdict(), "new_producer": new_producer,
                "loadavg_start": load0, "loadavg_end": loadavg(), "nice": nices,
                "t0": t0,  # epoch seconds the feed started ("which" and "stages" count from it)
                "prefix": prefix,
                "alert_messages": n_alerts,
                "alerts": alerts, "which": which, "stages": traced, "held": held,
                "acked": acked, "slow": slow, "slow_snapshots": snapshots,
                "findings": findings, "arrival": arrival, "first_fetch": first_fetch,
                "box": box.between(t0, t0 + secs),
                "box_first_s": box.between(t0, t0 + FIRST_S),
                "box_rest": box.between(t0 + FIRST_S, t0 + secs),
                "feed_stats": stats,
                "broker": broker_summary(requests, waits, t0, t0 + secs)}
    finally:
        placed.restore()
        w.stop()


# Paced runs before the measured ones (bench/kafka_throughput.py --warmup-runs): our broker's
# JIT compilers settle after 3 (BENCHMARKS.md, "Latency, round 8") -- of runs feeding the log
# once.  The measured runs feed it FEED_REPEAT times with stage tracing, and in the lead's
# round-16 set (/tmp/lead16/latA-main.log) the first two measured runs after 3 such warm-ups
# still had the broker's JIT compilers take 2.7 and 1.5 CPU-seconds (then 0.3, 0.1, 0.2, ...),
# the broker 5 and 4 CPU-ms per 1,000 events (then 3, 3, ... 2): the worker, at ~85 % of a
# core on the other CPU, fell seconds behind in exactly those two runs (slowest alert 3,547
# and 2,340 ms; then 2,047, 577, 635, ...).  So the warm-up runs feed what the measured runs
# do, and go on past WARMUP_RUNS, up to WARMUP_MAX_RUNS, while the JIT compilers took more
# than WARMUP_JIT_S in the last one: a long-running broker has long compiled its paths.
WARMUP_RUNS = 3
WARMUP_MAX_RUNS = 8
WARMUP_JIT_S = 0.25
FIRST_S = 3.0  # the feed's first seconds (a fresh producer, broker partitions and worker)
# The measured runs feed the log this many times over (--feed-repeat): at half load the
# worker of round 8 took the whole log in 3.7 s, all of it "the first seconds".
FEED_REPEAT = 3


def warm_up(run: Callable[[int], float], least: int, most: int,
            quiet_s: float = WARMUP_JIT_S) -> int:
    """Warm-up runs ``run(k)`` (it returns the broker's JIT CPU-seconds in run ``k``, NaN when
    not known: an existing broker): ``least`` of them, then more while the last one's JIT
    took over ``quiet_s``, ``most`` at most (``least`` 0: none); how many ran."""
    k, jit = 0, math.inf
    while k < least or (0 < k < most and jit > quiet_s):
        jit = run(k)
        if jit != jit:
            jit = 0.0  # not our broker: nothing to wait for
        k += 1
    return k


def in_span(arrived: float, alert: float, box: BoxSampler, requests: list[dict[str, Any]],
            waits: list[dict[str, Any]]) -> dict[str, Any]:
    """The machine and the broker over one slow alert's span: I/O stall (PSI io full,
    ms), steal share, the broker's file syncs (count, seconds) and the slowest feed
    produce request completed in it (ms, its broker-local part)."""
    b = box.between(arrived, alert)
    syncs = [w for w in waits if w["type"] == "jdk.FileForce"
             and w["end"] >= arrived and w["start"] <= alert]
    feed = [r for r in requests if _api(r) == (0, FEED_CLIENT_ID)
            and arrived <= r["done_ms"] / 1e3 <= alert + 1.0]
    worst = max(feed, key=lambda r: r.get("totalTimeMs", 0.0), default=None)
    return {"io_full_ms": b.get("psi_io_full_ms_per_s", float("nan")) * b.get("seconds", 0.0),
            "steal": b.get("steal", float("nan")), "syncs": len(syncs),
            "sync_s": sum(w["seconds"] for w in syncs),
            "feed_produce_ms": None if worst is None else (worst.get("totalTimeMs"),
                                                           worst.get("localTimeMs"))}


def _api(r: dict[str, Any]) -> tuple[int, str]:
    """(API key, client id) of a request-log entry (0 Produce, 1 Fetch)."""
    h = r.get("requestHeader") or {}
    return h.get("requestApiKey", -1), h.get("clientId", "")


def broker_summary(requests: list[dict[str, Any]], waits: list[dict[str, Any]],
                   t0: float, t1: float) -> dict[str, Any]:
    """The broker over one feed (with --broker-diagnose): the feed's produce requests and
    the worker's fetches (count, p50/p99/max total ms, max local ms; the first FIRST_S
    apart), its file syncs (count, seconds, by file name and by thread) and lock waits."""
    def times(rs: list[dict[str, Any]]) -> dict[str, Any]:
        tot = [r.get("totalTimeMs", 0.0) for r in rs]
        return {"n": len(rs), "p50": percentile(tot, 50), "p99": percentile(tot, 99),
                "max": max(tot, default=float("nan")),
                "local_max": max((r.get("localTimeMs", 0.0) for r in rs), default=float("nan")),
                "queue_max": max((r.get("requestQueueTimeMs", 0.0) for r in rs),
                                 default=float("nan"))}

    out: dict[str, Any] = {}
    inside = [r for r in requests if t0 <= r["done_ms"] / 1e3 <= t1 + 1.0]
    for name, pick in (("feed_produce", lambda r: _api(r) == (0, FEED_CLIENT_ID)),
                       ("worker_produce", lambda r: _api(r)[0] == 0
                        and _api(r)[1] != FEED_CLIENT_ID),
                       ("fetch", lambda r: _api(r)[0] == 1)):
        rs = [r for r in inside if pick(r)]
        if rs:
            first = [r for r in rs if r["done_ms"] / 1e3 <= t0 + FIRST_S]
            out[name] = {"all": times(rs), "first": times(first)}
    syncs = [w for w in waits if w["type"] == "jdk.FileForce" and t0 <= w["start"] <= t1]
    if waits:
        by_file: dict[str, list[float]] = {}
        by_thread: dict[str, list[float]] = {}
        for w in syncs:
            name = Path(w["path"] or "?").name
            name = "(a topic folder)" if "-" in name and name.rpartition("-")[2].isdigit() else name
            by_file.setdefault(name, []).append(w["seconds"])
            thread = (w["thread"] or "?").rstrip("0123456789-")
            by_thread.setdefault(thread, []).append(w["seconds"])
        first = [w for w in syncs if w["start"] <= t0 + FIRST_S]
        locks = [w for w in waits if w["type"] != "jdk.FileForce" and t0 <= w["start"] <= t1
                 and "request-handler" in (w["thread"] or "")]
        out["syncs"] = {"n": len(syncs), "s": sum(w["seconds"] for w in syncs),
                        "max": max((w["seconds"] for w in syncs), default=0.0),
                        "first_n": len(first), "first_s": sum(w["seconds"] for w in first),
                        "by_file": {k: (len(v), sum(v)) for k, v in by_file.items()},
                        "by_thread": {k: (len(v), sum(v)) for k, v in by_thread.items()},
                        "handler_lock_waits": (len(locks), sum(w["seconds"] for w in locks))}
    return out


def warm_topics(broker: Broker, prefix: str, shape: FeedShape, feeder: FeedProcess | None,
                msgs: list[Msg]) -> None:
    """The first WARM_RECORDS records of ``msgs`` into ``prefix``'s telemetry topics at once,
    by the feed's own producer when it keeps one (FeedProcess, its feed "warm": the same
    records): the run's partitions then take the timed feed as a collector's long-used
    ones do."""
    if shape.process and feeder is not None:
        feeder.run(shape, broker.bootstrap, prefix,  # type: ignore[arg-type]
                   "warm", None, False)
    else:
        produce(producer(broker.bootstrap, shape.linger_ms,  # type: ignore[arg-type]
                         None, shape.compression), prefix, msgs[:kafka_bench.WARM_RECORDS])


def feed_alone_run(broker: Broker, msgs: list[Msg], rate: float, partitions: int,
                   shape: FeedShape, feeder: FeedProcess | None, feed_name: str,
                   nice: int = 0, broker_nice: int | None = None,
                   pin: bool = False) -> dict[str, Any]:
    """The paced feed of a latency run with no worker: the same messages, rate and shape
    into fresh topics.  Its produce() -> delivery report times are the floor under any
    worker's arrival -> alert figure on this box (an input cannot be fetched before it
    is appended), and its and the broker's CPU what the bench itself takes of the cores."""
    prefix = f"bench-alone-{uuid.uuid4().hex[:8]}."
    create_topics(broker.bootstrap, [prefix + t for t in TELEMETRY_TOPICS],  # type: ignore[arg-type]
                  partitions)
    own = shape.process
    if own and feeder is None:
        raise ValueError(f"feed shape {shape.name!r} needs the feed process")
    if shape.warm:
        warm_topics(broker, prefix, shape, feeder, msgs)
    feed_pid = feeder.pid if own and feeder is not None else os.getpid()
    load0 = loadavg()
    placed = Placement()
    try:
        harness = [os.getpid(), feed_pid] if own else [os.getpid()]
        # Pinned: where a pinned latency run puts them, off the (absent) worker's CPU.
        placed.place(harness, broker.pid, nice, nice if broker_nice is None else broker_nice,
                     0 if pin else None)
        speed = rate * (max(m.ts for m in msgs) - msgs[0].ts) / len(msgs)
        waits0 = [sched_s(pid)[1] if pid else 0.0 for pid in (feed_pid, broker.pid)]
        mine0, broker0 = feed_cpu_s(own, feed_pid), broker.cpu_s()
        t0 = time.time()
        acked: list[Any] = []
        stats: list[dict[str, Any]] = []
        if own:
            got = feeder.run(shape, broker.bootstrap, prefix, feed_name,  # type: ignore[union-attr, arg-type]
                             speed, True)
            t0, secs, acked, stats = got["t0"], got["secs"], got["acked"], got["stats"]
        else:
            secs = produce(producer(broker.bootstrap, shape.linger_ms,  # type: ignore[arg-type]
                                    stats if shape.stats else None, shape.compression),
                           prefix, msgs, speed, acked=acked)
        mine, broker_cpu = feed_cpu_s(own, feed_pid) - mine0, broker.cpu_s() - broker0
        waits = [sched_s(pid)[1] - w0 if pid else float("nan")
                 for pid, w0 in zip((feed_pid, broker.pid), waits0, strict=True)]
    finally:
        placed.restore()
    return {"rate": rate, "achieved_rate": len(msgs) / secs, "events": len(msgs),
            "feed_s": secs, "t0": t0, "loadavg_start": load0, "producer_cpu_s": mine,
            "broker_cpu_s": broker_cpu, "producer_wait_s": waits[0],
            "broker_wait_s": waits[1], "acked": acked, "feed_stats": stats,
            "feed_shape": shape._asdict(), "pinned": pin}


def feed_alone_report(rows: list[dict[str, Any]]) -> None:
    """One line per feed-alone run (feed_alone_run): the feed's produce() -> delivery
    report in the first STARTUP_S seconds and after, and who used the CPU."""
    if not rows:
        return
    print("\nThe feed alone (no worker: the same feed, rate and shape into fresh topics, "
          "alternating with the runs above): produce() to its delivery report (librdkafka's "
          "own time, every 50th message, ms) -- the floor under any worker's arrival -> "
          "alert figure on this box; CPU as shares of one core and µs per event:\n")
    print(f"| load | run | load average at its start | events/s fed | ack p50 / p99 / max, "
          f"input in the first {STARTUP_S:.0f} s | after | feed CPU (µs per event) / waiting | "
          "broker CPU (µs per event) / waiting |")
    print("|---|---|---|---|---|---|---|---|")
    for row in rows:
        for k, r in enumerate(row["runs"], 1):
            secs, n = r["feed_s"], r["events"]
            first = [1e3 * a[2] for a in r["acked"] if a[2] >= 0 and a[0] - r["t0"] < STARTUP_S]
            after = [1e3 * a[2] for a in r["acked"] if a[2] >= 0 and a[0] - r["t0"] >= STARTUP_S]

            def pmm(xs: list[float]) -> str:
                return (f"{percentile(xs, 50):.0f} / {percentile(xs, 99):.0f} / "
                        f"{max(xs, default=float('nan')):.0f}")

            print(f"| {row['share']:.0%}{row['label']} | {k} | {r['loadavg_start']} | "
                  f"{r['achieved_rate']:,.0f} | {pmm(first)} | {pmm(after)} | "
                  f"{r['producer_cpu_s'] / secs:.0%} ({1e6 * r['producer_cpu_s'] / n:.2f}) / "
                  f"{r['producer_wait_s'] / secs:.0%} | "
                  f"{r['broker_cpu_s'] / secs:.0%} ({1e6 * r['broker_cpu_s'] / n:.2f}) / "
                  f"{r['broker_wait_s'] / secs:.0%} |")


def feed_cpu_s(own: bool, pid: int) -> float:
    """CPU seconds of the feed so far: its own process's, or this process's (with its
    sampler thread) when it feeds from here."""
    return proc_cpu_s(pid) if own else time.process_time()


class Placement:
    """The nice values and CPUs a run gives the bench's processes, and putting them back:
    one mechanism for the latency runs and the feed-alone runs."""

    def __init__(self) -> None:
        self._niced: list[tuple[int, int]] = []  # (pid, nice value to restore)
        self._pinned: list[tuple[int, set[int]]] = []  # (pid, CPUs to restore)

    def place(self, harness: list[int], broker_pid: int | None, nice: int,
              broker_nice: int | None, worker_pid: int | None) -> None:
        """``harness`` (the bench and its feed) at ``nice``, the broker at ``broker_nice``;
        ``worker_pid`` not None: pinned -- the worker (if any, 0 for none) alone on the last
        CPU, the harness and the broker on the others."""
        for pid, value in (*((x, nice) for x in harness), (broker_pid, broker_nice)):
            if pid and value:
                self._niced.append((pid, nice_of(pid)))
                renice(pid, value)
        if worker_pid is None:
            return
        cpus = sorted(os.sched_getaffinity(0))
        for pid, mask in ((worker_pid, cpus[-1:]), *((x, cpus[:-1]) for x in harness),
                          (broker_pid, cpus[:-1])):
            if pid:
                self._pinned.append((pid, set(cpus)))
                set_affinity(pid, set(mask))

    def restore(self) -> None:
        for pid, before in self._niced:
            renice(pid, before)
        self._niced.clear()
        for pid, cpus in self._pinned:
            with contextlib.suppress(OSError):
                set_affinity(pid, cpus)
        self._pinned.clear()


def set_affinity(pid: int, cpus: set[int]) -> None:
    """Every thread of ``pid`` onto ``cpus`` (threads started later inherit their creator's)."""
    for task in Path(f"/proc/{pid}/task").iterdir():
        with contextlib.suppress(ProcessLookupError, FileNotFoundError):
            os.sched_setaffinity(int(task.name), cpus)


def engine_in_process(log: Path, topology: str | None, repeat: int) -> dict[str, Any]:
    import engine_throughput as et

    from detector.topology import Topology

    msgs = et.load(log)
    res = et.measure(msgs, Topology.load(topology) if topology else None, repeat)
    return {"messages": len(msgs), **res}


# -- report ------------------------------------------------------------------------------

NAMES = {"raw": "raw confluent-kafka + orjson.loads (the physical limit)",
         "faust-agent": "Faust, an agent that does nothing (Faust's default path)",
         "faust-batch": "Faust, the service's batch delivery, a stage that does nothing",
         "faultline": "`faultline serve`, one worker",
         "faultline-base": "`faultline serve`, one worker, the --baseline checkout"}
STARTUP_S = 5.0
ENGINE = (("parse", "in process: orjson.loads only"),
          ("decode", "in process: decode (parse + validate)"),
          ("engine", "in process: engine on decoded records"),
          ("engine_many", "in process: engine on decoded records, batches of 500 "
           "(`process_many`: the worker's path)"),
          ("decode+engine", "in process: decode + engine (`faultline replay`)"))


def report(res: dict[str, Any]) -> None:
    n = res["messages"]
    print(f"\nlog {res['log']}: {n:,} telemetry messages, {res['partitions']} partitions per "
          f"topic; load average {res['loadavg_start']} at the start, {res['loadavg_end']} "
          "at the end (2 cores)")
    print(f"broker: {res.get('broker')}")
    if res.get("latency"):
        nice = res.get("harness_nice")
        bnice = nice if res.get("broker_nice") is None else res["broker_nice"]
        print(f"latency runs: the paced feed at nice {nice}, the broker at "
              f"{bnice}, the worker at 0" + (" (and alternating runs all at nice 0, labelled)"
                                             if res.get("nice_ab") else ""), end="")
        shapes = res.get("feed_shapes") or [f"linger.ms {res.get('linger_ms')}"]
        print(f"; {res.get('warmup_runs', 0)} warm-up run(s) not counted"
              f"; the feed: {' / '.join(shapes)}, the log {res.get('feed_repeat', 1)} time(s) "
              "over in each measured run; latency = the alert's Kafka timestamp "
              "(LogAppendTime: when the broker appended it) minus its input's (CreateTime: "
              "when the input was handed to the feed's producer, before lingering; in runs "
              "labelled (append), LogAppendTime too: when the broker appended the input)")
    print()
    ref = n / res["raw"]["wall_s"] if "raw" in res else float("nan")
    if any(k in res for k in NAMES) or "engine" in res:
        print("| consumer (one process) | events/s (wall) | events per CPU-second | "
              "CPU µs/event | wall ÷ raw | peak RSS MiB |")
        print("|---|---|---|---|---|---|")
        for key, name in NAMES.items():
            if key in res:
                r = res[key]
                rate, cpu_us = n / r["wall_s"], 1e6 * r["cpu_s"] / n
                print(f"| {name} | {rate:,.0f} | {1e6 / cpu_us:,.0f} | {cpu_us:.2f} | "
                      f"{rate / ref:.3f} | {r['hwm_kib'] / 1024:,.0f} |")
        if "engine" in res:
            e = res["engine"]
            for stage, label in ENGINE:
                rate = n / e[stage]
                print(f"| {label} | {rate:,.0f} | {rate:,.0f} | {1e6 * e[stage] / n:.2f} | "
                      f"{rate / ref:.3f} | - |")
            print(f"\nengine state on this log: {int(e['gpus'])} GPUs, {int(e['state_bytes']):,} "
                  f"bytes uncompressed = {e['state_bytes'] / max(e['gpus'], 1):,.0f} B/GPU")
    busy = [(k, res[k]["broker_cpu_s"]) for k in (*NAMES, "scale-1", "scale-2")
            if k in res and res[k].get("broker_cpu_s") is not None]
    if busy and busy[0][1] == busy[0][1]:  # not NaN: we know the broker's pid
        print("broker CPU (s): " + ", ".join(f"{k} {v:.1f}" for k, v in busy))
    if "scale-1" in res:
        print("\n| workers in one group (log produced into fresh topics while they run) | "
              "events/s (wall) | CPU µs/event (all workers) | events per worker |")
        print("|---|---|---|---|")
        for k in ("scale-1", "scale-2"):
            if k in res:
                r = res[k]
                each = " / ".join(f"{w['events']:,}" for w in r["per_worker"])
                print(f"| {len(r['per_worker'])} | {n / r['wall_s']:,.0f} | "
                      f"{1e6 * r['cpu_s'] / n:.2f} | {each} |")
    if res.get("latency"):
        print("\n| load | events/s produced | worker CPU | worker waiting for a CPU | "
              "alerts p50 ms | alerts p99 ms | "
              "alerts max ms | alerts timed | findings p50 ms | findings p99 ms | findings |")
        print("|---|---|---|---|---|---|---|---|---|---|---|")
        for lat in res["latency"]:
            a = [1e3 * x for x in lat["alerts"]]
            f = [1e3 * x for x in lat["findings"]]
            print(f"| {lat['share']:.0%} of max{lat.get('label', '')} | "
                  f"{lat['achieved_rate']:,.0f} | "
                  f"{lat['worker_cpu_share']:.0%} | {lat.get('worker_runqueue_share', 0):.0%} | "
                  f"{percentile(a, 50):.0f} | "
                  f"{percentile(a, 99):.0f} | {max(a, default=float('nan')):.0f} | "
                  f"{len(a)} of {lat['alert_messages']} | {percentile(f, 50):.0f} | "
                  f"{percentile(f, 99):.0f} | {len(f)} |")
        print("\nCPU of the others on the same 2 cores while the log was fed: "
              + "; ".join(f"{lat['share']:.0%}{lat.get('label', '')}: the paced producer "
                          f"(the feed) {lat['producer_cpu_share']:.0%}, the broker "
                          f"{lat['broker_cpu_share']:.0%}" for lat in res["latency"]))
        print("\nAll alerts, run by run:")
        for lat in res["latency"]:
            if lat.get("per_run_max"):
                print(f"- {lat['share']:.0%} of max{lat.get('label', '')}: each run's slowest "
                      "alert " + ", ".join(f"{1e3 * x:.0f}" for x in lat["per_run_max"])
                      + " ms; each run's median alert "
                      + ", ".join(f"{1e3 * x:.0f}" for x in lat["per_run_p50"]) + " ms"
                      + first_alerts(lat))
        print(f"\nThe first {STARTUP_S:.0f} s of each feed (a fresh worker: cold caches; "
              "a topic none of whose partitions has data yet holds the correlator's clock for "
              "the start-up grace) and after them:")
        for lat in res["latency"]:
            first, steady = split_first(lat)
            slow = ", ".join(f"{1e3 * x[0]:.0f} ms {x[3]}/{x[4]} ({x[5]}, input at +{x[1]:.1f} s)"
                             for x in sorted(lat["which"], reverse=True)[:3])
            print(f"- {lat['share']:.0%} of max{lat.get('label', '')}: input in the first "
                  f"{STARTUP_S:.0f} s: alerts p50 {percentile(first, 50):.0f} ms, p99 "
                  f"{percentile(first, 99):.0f} ms ({len(first)} alerts); after: alerts p50 "
                  f"{percentile(steady, 50):.0f} ms, "
                  f"p99 {percentile(steady, 99):.0f} ms ({len(steady)} alerts); slowest of all: "
                  f"{slow}")
        runs_report(res["latency"])
        feed_alone_report(res.get("feed_alone") or [])
        box_report(res["latency"])
        for lat in res["latency"]:
            if lat.get("stages"):
                stage_report(lat)


def first_alerts(lat: dict[str, Any]) -> str:
    """Each run's first timed alert (the earliest input): what a fresh worker's start costs."""
    firsts = [min(r["which"], key=lambda x: x[1]) for r in lat.get("runs") or () if r["which"]]
    if not firsts:
        return ""
    return ("; each run's first alert " + ", ".join(
        f"{1e3 * x[0]:.0f} (input at +{x[1]:.1f} s)" for x in firsts) + " ms")


def _share(r: dict[str, Any], key: str) -> str:
    x = r.get(key)
    return "?" if x is None or x != x else f"{x:.0%}"


def each_run(lats: list[dict[str, Any]]) -> Iterator[tuple[str, int, dict[str, Any]]]:
    """(its row's label, its number, the run) of every paced run, in the report's order."""
    for lat in lats:
        for k, r in enumerate(lat.get("runs") or (), 1):
            yield f"{lat['share']:.0%}{lat.get('label', '')}", k, r


def runs_report(lats: list[dict[str, Any]]) -> None:
    """One line per paced run: the spread, the machine's load and who had the CPU."""
    print("\nEach paced run (ms; CPU as shares of one core over the feed; broker also as CPU "
          "ms per 1,000 events; \"after 5 s\": alerts whose input came after the first "
          f"{STARTUP_S:.0f} s):\n")
    print("| load | run | load average at its start | events/s | alerts timed | p50 | p99 | "
          "slowest | after 5 s: p50 / p99 / slowest | worker CPU / waiting for a CPU | "
          "broker CPU (ms per 1,000 events; its JIT compilers' CPU) / waiting | "
          "feed CPU (µs per event) / waiting | "
          "nice worker/producer/broker |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for row, k, r in each_run(lats):
        a = [1e3 * x for x in r["alerts"]]
        steady = [1e3 * x[0] for x in r["which"] if x[1] >= STARTUP_S]
        nv = r.get("nice") or {}
        per_k = 1e6 * r["broker_cpu_s"] / r["events"] if "broker_cpu_s" in r else float("nan")
        nan = float("nan")
        print(f"| {row} | {k} | "
              f"{r.get('loadavg_start', '?')} | {r['achieved_rate']:,.0f} | {len(a)} | "
              f"{percentile(a, 50):.0f} | {percentile(a, 99):.0f} | "
              f"{max(a, default=float('nan')):.0f} | {percentile(steady, 50):.0f} / "
              f"{percentile(steady, 99):.0f} / {max(steady, default=float('nan')):.0f} | "
              f"{r['worker_cpu_share']:.0%} / {r.get('worker_runqueue_share', 0):.0%} | "
              f"{r['broker_cpu_share']:.0%} ({per_k:.0f}; JIT "
              f"{r.get('broker_jit_s', nan):.1f} s) / {_share(r, 'broker_wait_share')} | "
              f"{r['producer_cpu_share']:.0%} "
              f"({1e6 * r.get('producer_cpu_s', nan) / r['events']:.2f}) / "
              f"{_share(r, 'producer_wait_share')} | "
              f"{nv.get('worker', '?')}/{nv.get('producer', '?')}/{nv.get('broker', '?')} |")
    short = [(lat, k) for lat in lats for k, r in enumerate(lat.get("runs") or (), 1)
             if r["achieved_rate"] < 0.95 * lat["rate"]]
    if short:
        print("\nBelow 95 % of the asked rate (the producer did not get the CPU to keep pace: "
              "a lighter load than the row says): " + ", ".join(
                  f"{lat['share']:.0%}{lat.get('label', '')} run {k} (asked {lat['rate']:,.0f})"
                  for lat, k in short))


def box_report(lats: list[dict[str, Any]]) -> None:
    """One line per paced run: the machine (steal, iowait, pressure stalls, dirty pages)
    and, with --broker-diagnose, the broker's request times and file syncs."""
    print("\nThe machine and the broker in each paced run (whole feed; in brackets its first "
          f"{FIRST_S:.0f} s). steal/iowait: shares of all CPU time; PSI: ms per second that "
          "some task waited for a CPU / some or all for I/O; requests as the broker timed "
          "them, ms:\n")
    print("| load | run | arrival | worker's first fetch, s from the feed's start | "
          "steal | iowait | PSI cpu some | PSI io some / full | dirty / writeback MiB max | "
          "feed produce p50 / p99 / max (first s: max, local max) | worker fetch p50 / p99 / "
          "max | broker file syncs: n, s (first s: n, s) |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for row, k, r in each_run(lats):
        b, bf = r.get("box") or {}, r.get("box_first_s") or {}
        br = r.get("broker") or {}
        fp, fe, sy = br.get("feed_produce"), br.get("fetch"), br.get("syncs")
        ff = r.get("first_fetch")
        print(f"| {row} | {k} | {r.get('arrival', '?')} | "
              + ("-" if ff is None else f"{ff:+.2f}") + " | "
              f"{b.get('steal', float('nan')):.1%} ({bf.get('steal', float('nan')):.1%}) | "
              f"{b.get('iowait', float('nan')):.1%} ({bf.get('iowait', float('nan')):.1%}) | "
              f"{b.get('psi_cpu_some_ms_per_s', float('nan')):.0f} | "
              f"{b.get('psi_io_some_ms_per_s', float('nan')):.0f} / "
              f"{b.get('psi_io_full_ms_per_s', float('nan')):.0f} "
              f"({bf.get('psi_io_some_ms_per_s', float('nan')):.0f} / "
              f"{bf.get('psi_io_full_ms_per_s', float('nan')):.0f}) | "
              f"{b.get('dirty_mib', float('nan')):.0f} / "
              f"{b.get('writeback_mib', float('nan')):.0f} | "
              + ("-" if not fp else
                 f"{fp['all']['p50']:.0f} / {fp['all']['p99']:.0f} / {fp['all']['max']:.0f} "
                 f"({fp['first']['max']:.0f}, {fp['first']['local_max']:.0f})") + " | "
              + ("-" if not fe else
                 f"{fe['all']['p50']:.0f} / {fe['all']['p99']:.0f} / {fe['all']['max']:.0f}")
              + " | " + ("-" if not sy else
                         f"{sy['n']}, {sy['s']:.2f} ({sy['first_n']}, {sy['first_s']:.2f})")
              + " |")
    print(f"\nWho had a CPU, the feed's first {FIRST_S:.0f} s against the rest (shares of one "
          "core: on a CPU / runnable without one, all threads; schedstat), and the feed "
          "producer's own view (librdkafka statistics, 100 ms windows, ms: produce() to "
          "the message in a request, p99 and max of the windows; messages queued, max):\n")
    print("| load | run | worker first / rest | broker first / rest | feed "
          "first / rest | feed queueing p99, max: first / rest | feed queue max: first / "
          "rest | request round trip max: first / rest |")
    print("|---|---|---|---|---|---|---|---|")
    for row, k, r in each_run(lats):
        bf, br = r.get("box_first_s") or {}, r.get("box_rest") or {}
        t0 = r.get("t0", 0.0)
        st = r.get("feed_stats") or []
        first = [x for x in st if x["at"] <= t0 + FIRST_S and "int_latency" in x]
        rest = [x for x in st if x["at"] > t0 + FIRST_S and "int_latency" in x]

        def ms(xs: list[dict[str, Any]], key: str, i: int) -> str:
            return f"{max((x[key][i] for x in xs), default=float('nan')) / 1e3:.0f}"

        def q(xs: list[dict[str, Any]]) -> str:
            return f"{max((x['msg_cnt'] for x in xs), default=0):,}"

        nan = float("nan")
        cells = " | ".join(
            f"{bf.get(n + '_cpu', nan):.0%} / {bf.get(n + '_wait', nan):.0%}"
            f" ; {br.get(n + '_cpu', nan):.0%} / {br.get(n + '_wait', nan):.0%}"
            for n in ("worker", "broker", "feed"))
        print(f"| {row} | {k} | {cells} | "
              f"{ms(first, 'int_latency', 1)}, {ms(first, 'int_latency', 2)} / "
              f"{ms(rest, 'int_latency', 1)}, {ms(rest, 'int_latency', 2)} | "
              f"{q(first)} / {q(rest)} | {ms(first, 'rtt', 2)} / {ms(rest, 'rtt', 2)} |")
    for row, k, r in each_run(lats):
        sy = (r.get("broker") or {}).get("syncs")
        if sy and sy["n"]:
            print(f"- {row} run {k}: broker file syncs "
                  "by file " + ", ".join(f"{f} {n} ({s:.2f} s)" for f, (n, s) in sorted(
                      sy["by_file"].items(), key=lambda kv: -kv[1][1]))
                  + "; by thread " + ", ".join(f"{t} {n} ({s:.2f} s)" for t, (n, s) in
                                              sorted(sy["by_thread"].items(),
                                                     key=lambda kv: -kv[1][1]))
                  + f"; request handlers waiting for a lock: {sy['handler_lock_waits'][0]} "
                  f"({sy['handler_lock_waits'][1]:.2f} s)")


def held_report(lat: dict[str, Any], label: str, slow_s: float = 0.02) -> None:
    """Which sources the correlator's clock waited for, for the alerts whose clock stage
    took more than ``slow_s`` (the worker's ``held_by``: the lowest clocks behind the
    finding just before its release; none when time let it go)."""
    slow = sorted((x for x in lat.get("held") or () if x[1] > slow_s and x[2] is not None),
                  key=lambda x: -x[1])
    if not slow:
        return
    by_topic: dict[str, int] = {}
    for _, _, names, _ in slow:
        topic = names[0].rpartition(":")[0] if names else "(time: a grace or a timeout)"
        by_topic[topic] = by_topic.get(topic, 0) + 1
    print(f"\nCorrelator clock over {1e3 * slow_s:.0f} ms, {label} ({len(slow)} alerts): the "
          "lowest clock it waited for, by topic: " + ", ".join(
              f"{t} {n}" for t, n in sorted(by_topic.items(), key=lambda kv: -kv[1]))
          + "; slowest: " + "; ".join(f"{1e3 * c:.0f} ms (input at +{t:.1f} s) held by "
                                      f"{', '.join(names) or 'time'}"
                                      for t, c, names, _ in slow[:5]))


def stage_report(lat: dict[str, Any]) -> None:
    """Where the timed alerts' milliseconds went, stage by stage (``--stages``)."""
    label = f"{lat['share']:.0%} of max{lat.get('label', '')}"
    for title, rows in (("all", lat["stages"]),
                        (f"input after the first {STARTUP_S:.0f} s",
                         [r for r in lat["stages"] if r[0] >= STARTUP_S])):
        if not rows:
            continue
        print(f"\nStages of the timed alerts, {label}, {title} ({len(rows)} alerts; ms):\n")
        print("| stage | p50 | p90 | p99 | max | mean | share of the mean total |")
        print("|---|---|---|---|---|---|---|")
        total = sum(sum(st.values()) for _, st in rows) / len(rows)
        for name, _, _ in (*STAGES, ("total", "", "")):
            xs = [1e3 * (sum(st.values()) if name == "total" else st[name]) for _, st in rows]
            mean = sum(xs) / len(xs)
            print(f"| {name} | {percentile(xs, 50):.0f} | {percentile(xs, 90):.0f} | "
                  f"{percentile(xs, 99):.0f} | {max(xs):.0f} | {mean:.0f} | "
                  f"{mean / 1e3 / total if total else float('nan'):.0%} |")
        # What the tail is made of: a p99 over a few dozen alerts is its slowest one or two.
        slowest = sorted(rows, key=lambda r: sum(r[1].values()), reverse=True)[:3]
        print("\nslowest: " + "; ".join(
            f"{1e3 * sum(st.values()):.0f} ms (input at +{t:.1f} s: " + ", ".join(
                f"{name} {1e3 * st[name]:.0f}" for name, _, _ in STAGES) + ")"
            for t, st in slowest))
    held_report(lat, label)
    acked = [1e3 * (x[2] if isinstance(x, list | tuple) and x[2] >= 0 else
                    x[1] if isinstance(x, list | tuple) else x) for x in lat.get("acked") or ()]
    if acked:
        print(f"\nThe feed's own part of input fetch, {label}: produce() to its delivery report "
              f"(linger, send, the broker's append and ack; every 50th message, {len(acked):,}): "
              f"p50 {percentile(acked, 50):.0f}, p90 {percentile(acked, 90):.0f}, "
              f"p99 {percentile(acked, 99):.0f}, max {max(acked):.0f} ms")
    slow_report(lat, label)
    snaps = sorted(x for r in lat["runs"] for x in r.get("slow_snapshots", ()))
    if snaps:
        print(f"\nSnapshots delivered in {1e3 * SLOW_SNAPSHOT_S:.0f} ms or more, {label} "
              f"({len(snaps)}): delivery, and meanwhile the output producer's (findings, "
              "alerts) longest request round trip, most requests in flight (5: the "
              "idempotent maximum, a new request waits), longest wait to be sent, ms: "
              + "; ".join(f"{1e3 * d:.0f}, {1e3 * rtt:.0f}, {n}, {1e3 * wait:.0f}"
                          for d, rtt, n, wait in snaps))


CLASSES = (("a", "input late into Kafka (feed, broker)", ("feed",)),
           ("b", "the worker: fetch, hand-over, stage 1, findings", ("fetch", "hand_over",
                                                                    "stage1", "findings")),
           ("c", "the correlator clock", ("clock",)),
           ("d", "alert produce", ("produce",)))


def classify(x: dict[str, Any]) -> str:
    """The class (a-d) that holds most of a slow alert's time."""
    return max(CLASSES, key=lambda c: sum(x[k] for k in c[2]))[0]


def slow_report(lat: dict[str, Any], label: str) -> None:
    """Every alert over SLOW_S, split by who held it (see explain)."""
    slow = sorted(lat.get("slow") or (), key=lambda x: (x["run"], x["at"]))
    if not slow:
        return
    by: dict[str, int] = {}
    for x in slow:
        by[classify(x)] = by.get(classify(x), 0) + 1
    print(f"\nAlerts over {1e3 * SLOW_S:.0f} ms, {label} ({len(slow)}; by class: "
          + ", ".join(f"({c}) {name} {by.get(c, 0)}" for c, name, _ in CLASSES) + "), ms:\n")
    print("| run | input at | total | class | (a) feed | (b) fetch (not asked) | hand-over | "
          "stage 1 | findings | (c) clock (held by) | (d) produce | worker CPU wait in span | "
          "longest hand-over (records) / hand-overs | broker paused | box: I/O stall (PSI io "
          "full ms), steal | broker file syncs (s) | slowest feed produce, total (local) | "
          "input |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for x in slow:
        mb = x["max_batch"]
        held = ", ".join(x["held_by"] or ()) or "-"
        print(f"| {x['run']} | +{x['at']:.1f} s | {1e3 * x['total']:.0f} | {classify(x)} | "
              f"{1e3 * x['feed']:.0f}{'' if x['ack_known'] else '?'} | "
              f"{1e3 * x['fetch']:.0f} ({1e3 * x['asked_gap']:.0f}) | "
              f"{1e3 * x['hand_over']:.0f} | {1e3 * x['stage1']:.0f} | "
              f"{1e3 * x['findings']:.0f} | {1e3 * x['clock']:.0f} ({held}) | "
              f"{1e3 * x['produce']:.0f} | {1e3 * x['cpu_wait']:.0f} of {1e3 * x['span']:.0f} | "
              + (f"{1e3 * mb[0]:.0f} ({mb[1]:,}) / {x['batches']}" if mb else "-") + " | "
              f"{1e3 * x['broker_paused']:.0f} | "
              f"{x.get('io_full_ms', float('nan')):.0f}, {x.get('steal', float('nan')):.0%} | "
              f"{x.get('syncs', 0)} ({x.get('sync_s', 0.0):.2f}) | "
              + ("-" if not x.get("feed_produce_ms") else
                 f"{x['feed_produce_ms'][0]:.0f} ({x['feed_produce_ms'][1]:.0f})")
              + f" | {x['source']}@{x['offset']} |")


def ratio_sitting(broker: Broker, prefix: str, topics: list[str], n: int,
                  topology: str | None, partitions: int, tmp: Path, runs: int,
                  say: Callable[[str], None], base: Path | None = None) -> dict[str, Any]:
    """Issue 14's ratio in one sitting: raw, Faust's batch transport and one worker, taking
    turns ``runs`` times on the same backlog after one untimed serve.  With ``base`` (another
    checkout, ``--baseline``) its worker takes a turn before this one's each time: an A/B in
    the same sitting, "faultline-base" beside "faultline".

    raw's speed moves 293k-372k events/s between runs on this box (rounds 34-37) and one pair
    moved the ratio 0.34-0.53, so each consumer's best run of the sitting is kept (the run the
    box disturbed least) and the worker's share is best worker / best raw, by wall time and by
    CPU time (the process's own, every thread); each turn's own ratio is kept beside it.
    """
    serve(broker, prefix, n, 1, topology, partitions, tmp)  # untimed: a fresh broker's first
    rows: dict[str, list[dict[str, Any]]] = {"raw": [], "faust-batch": [], "faultline": []}
    if base is not None:
        rows["faultline-base"] = []
    for k in range(runs):
        for mode in ("raw", "faust-batch"):
            rows[mode].append(reference_consumer(mode, broker.bootstrap, topics, n))  # type: ignore[arg-type]
        if base is not None:
            rows["faultline-base"].append(serve(broker, prefix, n, 1, topology, partitions,
                                                tmp, code=base))
        rows["faultline"].append(serve(broker, prefix, n, 1, topology, partitions, tmp))
        say(f"  turn {k + 1}: " + ", ".join(f"{m} {n / r[-1]['wall_s']:,.0f} events/s"
                                         for m, r in rows.items())
            + f"; load {loadavg()}")
    best = {m: min(r, key=lambda x: x["wall_s"]) for m, r in rows.items()}
    cpu = {m: min(x["cpu_s"] for x in r) for m, r in rows.items()}
    out = {"runs": rows, "best": best,
           "wall_ratio": best["raw"]["wall_s"] / best["faultline"]["wall_s"],
           "cpu_ratio": cpu["raw"] / cpu["faultline"],
           "transport_wall_ratio": best["raw"]["wall_s"] / best["faust-batch"]["wall_s"],
           "turn_wall_ratios": [r["wall_s"] / w["wall_s"] for r, w in
                                zip(rows["raw"], rows["faultline"], strict=True)]}
    say(f"  best of {runs}: raw {n / best['raw']['wall_s']:,.0f}, faust-batch "
        f"{n / best['faust-batch']['wall_s']:,.0f}, faultline "
        f"{n / best['faultline']['wall_s']:,.0f} events/s; worker/raw {out['wall_ratio']:.3f} "
        f"by wall, {out['cpu_ratio']:.3f} by CPU (CPU µs an event: raw "
        f"{1e6 * cpu['raw'] / n:.2f}, faust-batch {1e6 * cpu['faust-batch'] / n:.2f}, "
        f"faultline {1e6 * cpu['faultline'] / n:.2f}); turns "
        + ", ".join(f"{x:.3f}" for x in out["turn_wall_ratios"]))
    if base is not None:
        out["base_wall_ratio"] = best["raw"]["wall_s"] / best["faultline-base"]["wall_s"]
        out["base_cpu_ratio"] = cpu["raw"] / cpu["faultline-base"]
        say(f"  baseline: best {n / best['faultline-base']['wall_s']:,.0f} events/s, "
            f"worker/raw {out['base_wall_ratio']:.3f} by wall, {out['base_cpu_ratio']:.3f} by "
            f"CPU (CPU µs an event {1e6 * cpu['faultline-base'] / n:.2f}); turns (base, this) "
            + ", ".join(f"{n / b['wall_s']:,.0f} / {n / t['wall_s']:,.0f} "
                        f"({1e6 * b['cpu_s'] / n:.2f} / {1e6 * t['cpu_s'] / n:.2f} µs)"
                        for b, t in zip(rows["faultline-base"], rows["faultline"], strict=True)))
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--log", default=str(DEFAULT_LOG))
    ap.add_argument("--topology", default=str(DEFAULT_TOPOLOGY))
    ap.add_argument("--bootstrap", default=None, help="an existing Kafka (default: "
                    "FAULTLINE_KAFKA_BOOTSTRAP, else start one)")
    ap.add_argument("--partitions", type=int, default=8, help="per telemetry topic")
    ap.add_argument("--rates", default="0.5,0.9", help="latency runs, shares of the max rate")
    ap.add_argument("--latency-runs", type=int, default=3, help="runs at each rate")
    ap.add_argument("--skip", default="", help="comma-separated: raw, faust-agent, "
                    "faust-batch, faultline, scale, engine, latency")
    ap.add_argument("--max-rate", type=float, default=None, help="the worker's maximum "
                    "events/s for the latency runs (default: measured in this run)")
    ap.add_argument("--repeat", type=int, default=1, help="best of N for the engine")
    ap.add_argument("--ratio", type=int, default=0, metavar="N", help="issue 14's ratio: raw, "
                    "faust-batch and the worker taking turns N times after an untimed serve; "
                    "best of each, the worker's share of raw by wall and CPU (replaces the "
                    "single raw, faust-batch and faultline rows)")
    ap.add_argument("--json", default=None, help="also write the results here")
    ap.add_argument("--feed", action="append", default=None, metavar="SHAPE",
                    help="the paced feed of the latency runs, NAME[:KEY=VALUE,...] "
                    "(kafka_bench.FEED_SHAPES, FeedShape's fields): 'deployed' (default) is a "
                    "collectors' shape -- two long-lived producers in a process of its own, "
                    "a node's records through one (producer k writes the partitions k mod 2 "
                    "of each topic; 'deployed:producers=8' is round 25's, one a partition, "
                    "'deployed:producers=1' rounds 9-24's), "
                    "linger.ms 50, lz4 as detector/collect/sinks.py; 'bench' is round 8's "
                    "(a new producer each run in this process, linger.ms 5, no compression). "
                    "Repeat the option to alternate shapes run by run, labelled (feed NAME). "
                    "The arrival is the input's CreateTime, taken when a record is handed to "
                    "the producer, so lingering counts as latency")
    ap.add_argument("--feed-alone", action=argparse.BooleanOptionalAction, default=True,
                    help="before each round of latency runs, the same paced feed with no "
                    "worker (fresh topics, same rate and shape): its produce() -> delivery "
                    "times, the floor under the worker's figure on this box (default on)")
    ap.add_argument("--feed-repeat", type=int, default=FEED_REPEAT, help="the measured "
                    "latency runs feed the log this many times over, each copy after the last "
                    "in event time (kafka_bench.repeat_log), so the feed lasts long enough for "
                    "a steady state; alerts with input in the first 5 s are reported apart "
                    "(the warm-up runs too; default %(default)s)")
    ap.add_argument("--warmup-runs", type=int, default=WARMUP_RUNS, help="paced runs before "
                    "the measured ones, not counted: our fresh broker's JIT compilers take "
                    "1.4-2.2 CPU-seconds of a paced run's 4-5 for its first 3 paced runs, "
                    "0.02-0.13 after (the backlog runs do not warm the paced produce path), "
                    "as a long-running broker has long done (default %(default)s; with an "
                    "existing broker, --bootstrap, 0 may do); each feeds what a measured run "
                    "does")
    ap.add_argument("--warmup-max-runs", type=int, default=WARMUP_MAX_RUNS, help="more "
                    "warm-up runs, up to this many, while the broker's JIT compilers took more "
                    f"than {WARMUP_JIT_S} CPU-s in the last one (default %(default)s)")
    ap.add_argument("--stages", action="store_true", help="latency runs with the worker's "
                    "stage tracing (FAULTLINE_TRACE_STAGES): where each timed alert's time "
                    "went, fetch to decision, p50/p99 per stage")
    ap.add_argument("--harness-nice", type=int, default=10, help="during the latency runs, "
                    "the paced producer (this process) and the broker run at this nice value, "
                    "the worker at 0, so that the worker gets a CPU first on a small machine "
                    "(0: off; needs root, to restore the priority afterwards)")
    ap.add_argument("--broker-nice", type=int, default=None, help="the broker's nice value "
                    "during the latency runs (default: --harness-nice; the broker is on the "
                    "way of every record, the paced producer is not)")
    ap.add_argument("--keep-traces", default=None, help="with --stages: copy each latency "
                    "run's worker trace (hand-overs, fetch responses) into this folder as "
                    "PREFIX.trace.jsonl (PREFIX: the run's topic prefix, in --json's runs)")
    ap.add_argument("--arrival", choices=("create", "append", "ab"), default="create",
                    help="an input's arrival, where its alert's latency starts: create = its "
                    "CreateTime, when the paced producer was handed it (its queueing in the "
                    "producer, on the same cores, counts); append = when the broker appended "
                    "it (the telemetry topics with LogAppendTime, as the alerts'); ab: both, "
                    "alternating, labelled (append)")
    ap.add_argument("--broker-diagnose", default=None, help="a folder for our own broker's "
                    "request log and flight recording (file syncs, lock waits): each latency "
                    "run then reports the feed's produce and the worker's fetch requests as the "
                    "broker timed them, and the broker's file syncs (heavy: the log holds "
                    "every request and response, ~130 MB a run, and costs the broker CPU)")
    ap.add_argument("--pin-ab", action=argparse.BooleanOptionalAction, default=True,
                    help="each latency run also with the worker pinned to the last CPU and the "
                    "feed, this process and the broker to the others, alternating, labelled "
                    "(pinned): the worker with a core of its own, its feed and broker off it, "
                    "as deployed (default on; round 9: with the collector's feed the feed and "
                    "broker fit on one core)")
    ap.add_argument("--pin", action="store_true", help="every latency run pinned as in "
                    "--pin-ab, the feed-alone runs' feed and broker on the same CPUs")
    ap.add_argument("--nice-ab", action="store_true", help="each latency run also with "
                    "--harness-nice 0, alternating: both modes in one run")
    ap.add_argument("--broker-settings", choices=("lean", "tests"), default="lean",
                    help="a broker of our own: lean (serial GC, 1 network thread, "
                    "2 request handlers; deploy/kafka/broker.py LEAN_*) or the tests' settings")
    ap.add_argument("--warm-serve", action="store_true", help="one untimed `faultline serve` "
                    "of the backlog before the measured ones: the broker's first serve ran "
                    "6-30 %% longer wall whichever code it was (BENCHMARKS fast33, round 33)")
    ap.add_argument("--baseline", default=None, help="another checkout of faultline (e.g. "
                    "`git archive main | tar -x -C DIR`): its worker is measured too, before "
                    "this one's (with --ratio: a turn each, before this one's), and the "
                    "latency runs alternate the two (same rate)")
    ap.add_argument("--worker-env", action="append", default=[], metavar="KEY=VALUE",
                    help="a setting for every measured worker, baseline's too (repeatable), "
                    "e.g. FAULTLINE_SNAPSHOT_INTERVAL_S=1: snapshots every second, so more "
                    "alerts are decided while one is delivered")
    args = ap.parse_args()
    for kv in args.worker_env:
        key, sep, value = kv.partition("=")
        if not sep or not key.startswith("FAULTLINE_"):
            ap.error(f"--worker-env wants FAULTLINE_NAME=VALUE, got {kv!r}")
        kafka_bench.EXTRA_WORKER_ENV[key] = value
    base = Path(args.baseline).resolve() if args.baseline else None
    skip = set(filter(None, args.skip.split(",")))
    if (args.harness_nice or args.broker_nice) and os.geteuid() != 0:
        print("--harness-nice needs root (to give the producer and the broker their priority "
              "back after each run): off", file=sys.stderr)
        args.harness_nice, args.broker_nice, args.nice_ab = 0, 0, False
    topology = args.topology or None
    msgs = load(Path(args.log))
    n = len(msgs)
    shapes = [feed_shape(x) for x in (args.feed or ["deployed"])]
    res: dict[str, Any] = {"log": args.log, "messages": n, "partitions": args.partitions,
                           "loadavg_start": loadavg(), "harness_nice": args.harness_nice,
                           "nice_ab": args.nice_ab, "feed_shapes": [x.label() for x in shapes],
                           "feed_repeat": max(1, args.feed_repeat),
                           "broker_nice": args.broker_nice}
    say = lambda text: print(text, file=sys.stderr, flush=True)  # noqa: E731
    say(f"log {args.log}: {n:,} telemetry messages; load average {loadavg()}")
    measured = msgs
    feeder = None
    if "latency" not in skip:
        measured = repeat_log(msgs, args.feed_repeat)
        if any(x.process for x in shapes):
            # Forked before the broker and any producer thread: the logs shared, not copied.
            feeder = FeedProcess({"once": msgs, "measured": measured})
    with contextlib.ExitStack() as stack, \
            Broker(args.bootstrap, lean=args.broker_settings == "lean",
                   diagnose=Path(args.broker_diagnose).resolve() if args.broker_diagnose
                   else None) as broker, \
            tempfile.TemporaryDirectory(prefix="faultline-bench-") as tmp_name:
        if feeder is not None:
            stack.enter_context(feeder)
        tmp = Path(tmp_name)
        res["broker"] = broker.describe()
        say(f"broker: {res['broker']}")
        bootstrap: str = broker.bootstrap  # type: ignore[assignment]
        prefix = f"bench-{uuid.uuid4().hex[:8]}."
        topics = [prefix + t for t in TELEMETRY_TOPICS]
        create_topics(bootstrap, topics, args.partitions)
        secs = produce(producer(bootstrap, 20.0), prefix, msgs)
        say(f"produced the backlog ({prefix}*) in {secs:.1f}s")
        if args.ratio:
            res["ratio"] = ratio_sitting(broker, prefix, topics, n, topology, args.partitions,
                                         tmp, args.ratio, say, base)
            res.update(res["ratio"]["best"])  # the latency runs' maximum: the best worker run
            skip |= {"raw", "faust-batch", "faultline"}
        for mode in ("raw", "faust-agent", "faust-batch"):
            if mode not in skip:
                cpu0 = broker.cpu_s()
                res[mode] = reference_consumer(mode, bootstrap, topics, n)
                res[mode]["broker_cpu_s"] = broker.cpu_s() - cpu0
                say(f"  {mode}: {n / res[mode]['wall_s']:,.0f} events/s")
        if "faultline" not in skip and args.warm_serve:
            # Untimed: the first `faultline serve` on a fresh broker ran 6-30 % longer wall
            # than the same code right after (its own CPU per event within 3 %; the broker's
            # CPU 3.5-4.8 vs 1.5-2.1 s: its first produce/create/group paths) -- BENCHMARKS fast33.
            warm = serve(broker, prefix, n, 1, topology, args.partitions, tmp)
            res["warm-serve"] = {"wall_s": warm["wall_s"], "broker_cpu_s": warm["broker_cpu_s"]}
            say(f"  faultline (warm-up, not counted): {n / warm['wall_s']:,.0f} events/s")
        if "faultline" not in skip:
            if base is not None:
                res["faultline-base"] = serve(broker, prefix, n, 1, topology, args.partitions,
                                              tmp, code=base)
                say(f"  faultline (baseline): "
                    f"{n / res['faultline-base']['wall_s']:,.0f} events/s")
            res["faultline"] = serve(broker, prefix, n, 1, topology, args.partitions, tmp)
            say(f"  faultline: {n / res['faultline']['wall_s']:,.0f} events/s")
        if "engine" not in skip:
            res["engine"] = engine_in_process(Path(args.log), topology, args.repeat)
            say(f"  engine: {n / res['engine']['decode+engine']:,.0f} events/s")
        if "scale" not in skip:
            for k in (1, 2):
                fresh = f"bench-scale{k}-{uuid.uuid4().hex[:8]}."
                create_topics(bootstrap, [fresh + t for t in TELEMETRY_TOPICS], args.partitions)
                res[f"scale-{k}"] = serve(broker, fresh, n, k, topology, args.partitions, tmp,
                                          feed=msgs)
                say(f"  {k} worker(s), fed while running: "
                    f"{n / res[f'scale-{k}']['wall_s']:,.0f} events/s")
        if "latency" not in skip and not ("faultline" in res or args.max_rate):
            say("  latency: skipped (it needs the worker's maximum: run 'faultline' or "
                "pass --max-rate)")
        elif "latency" not in skip:
            top = args.max_rate or n / res["faultline"]["wall_s"]
            res["latency"] = []
            codes: list[tuple[str, Path | None]] = [("", None)]
            if base is not None:
                codes = [(" (baseline)", base), ("", None)]
            nices = [("", args.harness_nice)]
            if args.nice_ab and args.harness_nice:
                nices = [(" (nice 0)", 0), ("", args.harness_nice)]
            pins = [("", False)]
            if args.pin:
                pins = [(" (pinned)", True)]
            elif args.pin_ab:
                pins = [("", False), (" (pinned)", True)]
            arrivals = {"create": [("", "create")], "append": [(" (append)", "append")],
                        "ab": [("", "create"), (" (append)", "append")]}[args.arrival]
            feeds = [("" if len(shapes) == 1 else f" (feed {x.name})", x) for x in shapes]
            variants = [(cl + nl + pl + al + fl, code, nv, pv, av, fv) for fl, fv in feeds
                        for al, av in arrivals for pl, pv in pins for nl, nv in nices
                        for cl, code in codes]

            def warm(k: int) -> float:
                share = float(args.rates.split(",")[0])
                shape = shapes[k % len(shapes)]
                r = latency_run(broker, measured, share * top, topology, args.partitions, tmp,
                                stages=args.stages, shape=shape, feeder=feeder,
                                feed_name="measured", nice=args.harness_nice,
                                broker_nice=args.broker_nice)
                say(f"  warm-up run {k + 1} at {share:.0%} (not counted; feed {shape.name}): "
                    f"alerts max {1e3 * max(r['alerts'], default=0):.0f} ms; broker CPU "
                    f"{r['broker_cpu_s']:.1f} s, its JIT compilers {r['broker_jit_s']:.1f} s")
                return r["broker_jit_s"]

            warmups = warm_up(warm, args.warmup_runs, args.warmup_max_runs)
            res["warmup_runs"] = warmups
            res["feed_alone"] = []
            for share in map(float, args.rates.split(",")):
                by_code: dict[str, list[dict[str, Any]]] = {v[0]: [] for v in variants}
                alone: dict[str, list[dict[str, Any]]] = {fl: [] for fl, _ in feeds}
                for _ in range(args.latency_runs):
                    for fl, fv in feeds if args.feed_alone else ():
                        alone[fl].append(feed_alone_run(broker, measured, share * top,
                                                        args.partitions, fv, feeder,
                                                        "measured", nice=args.harness_nice,
                                                        broker_nice=args.broker_nice,
                                                        pin=args.pin))
                        r = alone[fl][-1]
                        say(f"    feed alone{fl}: {r['achieved_rate']:,.0f} events/s fed, load "
                            f"{r['loadavg_start']}")
                    for label, code, nv, pv, av, fv in variants:  # alternating: the load hits all
                        by_code[label].append(latency_run(broker, measured, share * top,
                                                          topology, args.partitions, tmp,
                                                          code=code, stages=args.stages,
                                                          shape=fv, feeder=feeder,
                                                          feed_name="measured",
                                                          nice=nv, broker_nice=None if not nv
                                                          else args.broker_nice,
                                                          keep=Path(args.keep_traces)
                                                          if args.keep_traces else None,
                                                          pin=pv, arrival=av))
                        r = by_code[label][-1]
                        say(f"    run{label}: alerts max {1e3 * max(r['alerts'], default=0):.0f}"
                            f" ms, load {r['loadavg_start']}")
                for fl, runs in alone.items():
                    if runs:
                        res["feed_alone"].append({"share": share, "runs": runs, "label": fl + (
                            " (pinned: the feed and broker off the last CPU)" if args.pin
                            else "")})
                for label, runs in by_code.items():
                    lat = latency_summary(share, top, runs, label)
                    res["latency"].append(lat)
                    first, after = split_first(lat)
                    say(f"  latency at {share:.0%} ({share * top:,.0f}/s){label}: alerts p99 "
                        f"{1e3 * percentile(lat['alerts'], 99):.0f} ms (input in the first "
                        f"{STARTUP_S:.0f} s: {percentile(first, 99):.0f} ms of {len(first)}; "
                        f"after: {percentile(after, 99):.0f} ms of {len(after)}), findings p99 "
                        f"{1e3 * percentile(lat['findings'], 99):.0f} ms")
    res["loadavg_end"] = loadavg()
    report(res)
    if args.json:
        Path(args.json).write_text(json.dumps(res, indent=1))
    return 0


def split_first(lat: dict[str, Any]) -> tuple[list[float], list[float]]:
    """A row's alert latencies (ms) with input in the feed's first STARTUP_S seconds, and
    after."""
    return ([1e3 * x[0] for x in lat["which"] if x[1] < STARTUP_S],
            [1e3 * x[0] for x in lat["which"] if x[1] >= STARTUP_S])


def latency_summary(share: float, top: float, runs: list[dict[str, Any]], label: str
                    ) -> dict[str, Any]:
    """Several paced runs at one rate as one row, with each run's slowest alert (the spread)."""
    return {"share": share, "rate": share * top, "label": label,
            "per_run_max": [max(r["alerts"], default=float("nan")) for r in runs],
            "per_run_p50": [percentile(r["alerts"], 50) for r in runs],
            "achieved_rate": sum(r["achieved_rate"] for r in runs) / len(runs),
            "worker_cpu_share": sum(r["worker_cpu_share"] for r in runs) / len(runs),
            "worker_runqueue_share": sum(r.get("worker_runqueue_share", 0.0) for r in runs)
            / len(runs),
            "producer_cpu_share": sum(r["producer_cpu_share"] for r in runs) / len(runs),
            "broker_cpu_share": sum(r["broker_cpu_share"] for r in runs) / len(runs),
            "alert_messages": sum(r["alert_messages"] for r in runs),
            "alerts": [x for r in runs for x in r["alerts"]],
            "which": [x for r in runs for x in r["which"]],
            "stages": [x for r in runs for x in r.get("stages", ())],
            "held": [x for r in runs for x in r.get("held", ())],
            "acked": [x for r in runs for x in r.get("acked", ())],
            "slow": [{**x, "run": k} for k, r in enumerate(runs, 1) for x in r.get("slow", ())],
            "findings": [x for r in runs for x in r["findings"]],
            "runs": runs}


if __name__ == "__main__":
    sys.exit(main())
