"""The feed alone, no worker: how far apart do records stamped together reach Kafka?

The correlator releases a finding tagged T once every partition's records have passed T
(DESIGN's event-time order), so when records produced in the same moment reach Kafka
hundreds of milliseconds apart, partition by partition, a finding waits for the last --
correctly: their records are older than it.  The latency bench's feed is one process
standing for a fleet's collectors; librdkafka puts one partition in a produce request and
the broker answers a connection's requests one at a time, so one producer for all 32
partitions sends them in turn.  This feeds the log at RATE events/s (the latency bench's
feed-alone run: warm topics, the collector's linger and codec, a kept producer in its own
process), feed shapes alternating run by run, and prints for each, from every 50th
record's delivery report (librdkafka's produce() -> ack time):

- produce() -> delivery p50 / p99 by topic, after the feed's first second;
- the spread: records produced in the same 20 ms window, the slowest partition's delivery
  less the fastest's (p50 / p99 / max over the windows) -- what a finding waits for the
  other partitions beyond its own input's delivery.

    python bench/feed_skew.py [--rate 103534] [--runs 3] [--repeat 2] \\
        [--feed deployed:producers=1 --feed deployed]
"""

from __future__ import annotations

import argparse
import contextlib
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import kafka_throughput as kt  # noqa: E402
from kafka_bench import (  # noqa: E402
    DEFAULT_LOG,
    Broker,
    FeedProcess,
    feed_shape,
    load,
    loadavg,
    percentile,
    repeat_log,
)

WINDOW_S = 0.02
SKIP_S = 1.0


def spread(acked: list[Any], t0: float) -> tuple[dict[str, list[float]], list[float]]:
    """Delivery times (ms) by topic, and per WINDOW_S window of produce() times the spread
    of the partitions' slowest deliveries, from a run's ``acked`` (after its first SKIP_S)."""
    by_topic: dict[str, list[float]] = defaultdict(list)
    windows: dict[int, dict[tuple[str, int], float]] = defaultdict(dict)
    for produced, waited, lat, topic, part, _ in acked:
        if produced - t0 < SKIP_S:
            continue
        ms = 1e3 * (lat if lat >= 0 else waited)
        name = topic.split(".", 1)[1]
        by_topic[name].append(ms)
        w = windows[int((produced - t0) / WINDOW_S)]
        w[(name, part)] = max(w.get((name, part), 0.0), ms)
    spreads = [max(w.values()) - min(w.values()) for w in windows.values() if len(w) > 1]
    return by_topic, spreads


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rate", type=float, default=103_534.0)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--repeat", type=int, default=2, help="the log this many times over")
    ap.add_argument("--partitions", type=int, default=8)
    ap.add_argument("--feed", action="append", help="feed shapes, alternating run by run")
    args = ap.parse_args()
    shapes = [feed_shape(x) for x in (args.feed or ["deployed:producers=1", "deployed"])]
    msgs = load(DEFAULT_LOG)
    measured = repeat_log(msgs, args.repeat)
    out: dict[str, list[dict[str, Any]]] = defaultdict(list)
    feeder = FeedProcess({"measured": measured})  # forked before the broker
    with feeder, Broker(None, lean=True) as broker, contextlib.closing(feeder):
        for shape in shapes:  # a warm-up each: the broker's JIT, the producers' connections
            kt.feed_alone_run(broker, msgs, args.rate, args.partitions, shape, feeder,
                              "measured")
        for k in range(args.runs):
            for shape in shapes:
                r = kt.feed_alone_run(broker, measured, args.rate, args.partitions, shape,
                                      feeder, "measured")
                out[shape.name].append(r)
                print(f"run {k + 1} {shape.name}: {r['achieved_rate']:,.0f} events/s, "
                      f"load {r['loadavg_start'].split()[0]}", file=sys.stderr, flush=True)
    print(f"\nThe feed alone at {args.rate:,.0f} events/s, the log {args.repeat} times over, "
          f"{args.runs} runs a shape alternating (load at the end {loadavg()}); every 50th "
          f"record's produce() -> delivery after the first {SKIP_S:g} s, ms:\n")
    topics = sorted({t.split(".", 1)[1] for rs in out.values() for r in rs
                     for _, _, _, t, _, _ in r["acked"]})
    print("| feed | events/s (each run) | feed CPU µs an event | broker CPU µs an event | "
          + " | ".join(f"{t} p50 / p99" for t in topics)
          + f" | spread in a {WINDOW_S * 1e3:.0f} ms window p50 / p99 / max (each run's max) |")
    print("|---" * (5 + len(topics)) + "|")
    for name, runs in out.items():
        by_topic: dict[str, list[float]] = defaultdict(list)
        spreads: list[float] = []
        each = []
        for r in runs:
            bt, sp = spread(r["acked"], r["t0"])
            for t, xs in bt.items():
                by_topic[t] += xs
            spreads += sp
            each.append(f"{max(sp, default=0):.0f}")
        ev = sum(r["events"] for r in runs)
        rates = ", ".join(f"{r['achieved_rate']:,.0f}" for r in runs)
        print(f"| {name} | {rates} | "
              f"{1e6 * sum(r['producer_cpu_s'] for r in runs) / ev:.2f} | "
              f"{1e6 * sum(r['broker_cpu_s'] for r in runs) / ev:.2f} | "
              + " | ".join(f"{percentile(by_topic[t], 50):.0f} / "
                           f"{percentile(by_topic[t], 99):.0f}" for t in topics)
              + f" | {percentile(spreads, 50):.0f} / {percentile(spreads, 99):.0f} / "
                f"{max(spreads, default=0):.0f} ({', '.join(each)}) |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
