"""The feed alone, no worker: is the first half second's produce() -> delivery the topics'
(brand-new partitions) or the producer's?  Prints produce() -> delivery report (librdkafka's
own time, every 50th message, ms) in the feed's first 0.5 s and after 2 s, per variant:

- ``fresh``: topics created just before (what every latency run of round 10 fed);
- ``prewarmed``: fresh topics given one record per partition 1 s before the feed;
- ``bulk``: fresh topics given the log's first 64,000 records 1 s before (FeedShape.warm's
  way, bench/kafka_bench.py);
- ``reused``: the ``fresh`` variant's topics fed a second time, 1 s after.

One kept producer for all (the collector's shape: linger.ms 50, lz4, idempotent), the
run's topics' metadata fetched before each feed, 3 warm-up feeds first (the broker's
JIT), the variants alternating round by round:

    python bench/feed_cold.py [RATE] [ROUNDS]      # default 100000 events/s, 3 rounds
"""

from __future__ import annotations

import sys
import time
import uuid
from pathlib import Path
from typing import Any

from confluent_kafka import Producer

sys.path.insert(0, str(Path(__file__).resolve().parent))

from kafka_bench import (  # noqa: E402
    DEFAULT_LOG,
    TELEMETRY_TOPICS,
    Broker,
    _producer_conf,
    create_topics,
    feed_stats,
    load,
    loadavg,
    percentile,
    produce,
)

BULK = 64_000


def main() -> int:
    rate = float(sys.argv[1]) if len(sys.argv) > 1 else 100_000.0
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 3
    msgs = load(DEFAULT_LOG)
    speed = rate * (msgs[-1].ts - msgs[0].ts) / len(msgs)
    sink: list[list[Any] | None] = [None]

    def on_stats(text: str) -> None:
        if sink[0] is not None:
            sink[0].append(feed_stats(text))

    out: dict[str, list[dict[str, Any]]] = {}
    with Broker(None, lean=True) as b:
        assert b.bootstrap is not None
        p = Producer({**_producer_conf(b.bootstrap, 50.0, "lz4", on_stats),
                      "queue.buffering.max.messages": 2_000_000})
        p.produce("feed-cold.ready", b"x")
        p.flush(30)

        def topics(tag: str) -> str:
            prefix = f"{tag}-{uuid.uuid4().hex[:6]}."
            create_topics(b.bootstrap, [prefix + t for t in TELEMETRY_TOPICS], 8)  # type: ignore[arg-type]
            return prefix

        def run(prefix: str, one_each: bool = False, bulk: int = 0) -> dict[str, Any]:
            if one_each:
                for t in TELEMETRY_TOPICS:
                    for part in range(8):
                        p.produce(prefix + t, b"{}", b"warm", partition=part)
                p.flush(30)
                time.sleep(1.0)
            if bulk:
                produce(p, prefix, msgs[:bulk])
                time.sleep(1.0)
            for t in TELEMETRY_TOPICS:
                p.list_topics(prefix + t, timeout=30)
            p.poll(0)
            stats: list[Any] = []
            sink[0] = stats
            acked: list[Any] = []
            load0 = loadavg()
            t0 = time.time()
            secs = produce(p, prefix, msgs, speed, acked=acked)
            sink[0] = None
            return {"t0": t0, "secs": secs, "acked": acked, "stats": stats, "load": load0}

        for _ in range(3):
            run(topics("warmup"))
        for r in range(rounds):
            fresh = topics("fresh")
            out.setdefault("fresh", []).append(run(fresh))
            out.setdefault("prewarmed", []).append(run(topics("prewarmed"), one_each=True))
            out.setdefault("bulk", []).append(run(topics("bulk"), bulk=BULK))
            time.sleep(1.0)
            out.setdefault("reused", []).append(run(fresh))
            print(f"round {r + 1} done, load {loadavg()}", file=sys.stderr, flush=True)
    print("| variant | load at the start | events/s | first 0.5 s: p50 / p99 (each run) | "
          "after 2 s: p50 / p99 | request round trip p99, the worst 100 ms window of "
          "the first 0.6 s, each run |")
    print("|---|---|---|---|---|---|")
    for name, runs in out.items():
        first: list[float] = []
        after: list[float] = []
        each = []
        for r in runs:
            xs = [(a[0] - r["t0"], 1e3 * (a[2] if a[2] >= 0 else a[1])) for a in r["acked"]]
            f1 = [v for t, v in xs if t < 0.5]
            first += f1
            after += [v for t, v in xs if t >= 2.0]
            each.append(f"{percentile(f1, 50):.0f}/{percentile(f1, 99):.0f}")
        rtt = [max((s.get("rtt", (0, 0, 0))[1] for s in r["stats"] if s["at"] - r["t0"] < 0.6),
                   default=0) / 1e3 for r in runs]
        print(f"| {name} | {', '.join(r['load'].split()[0] for r in runs)} | "
              f"{sum(len(msgs) / r['secs'] for r in runs) / len(runs):,.0f} | "
              f"{percentile(first, 50):.0f} / {percentile(first, 99):.0f} ({', '.join(each)}) | "
              f"{percentile(after, 50):.0f} / {percentile(after, 99):.0f} | "
              f"{', '.join(f'{x:.0f}' for x in rtt)} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
