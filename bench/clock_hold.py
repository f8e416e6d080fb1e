"""How long the correlator's clock holds a finding, the worker's pipeline in process, no Kafka.

The bundled incident split into 8 partitions per telemetry topic by key (as the feed's
producer does), fed as a paced replay is: record k is stamped (its Kafka CreateTime) at its
event time's offset over ``--speed`` (the latency bench at half load: ~250x) plus its
topic's ``--late`` delivery (seconds of wall time, e.g. ``thermal=0.02``), and can be
fetched ``--visible-ms`` after that (the producer's linger and the broker's append); a fetch
every ``--fetch-ms`` hands the worker the records fetchable by then, a partition with none
left found at its end by that fetch (FETCH_ENDS), with a heartbeat every 100 ms.

Falling behind, simulated (each ``AT:SECONDS`` in wall seconds from the feed's start,
repeatable):

- ``--stall``: the worker runs nothing for that long (CPU contention, a GC pause, a
  snapshot), then catches up -- at most ``--max-rate`` records a second (the worker's
  maximum; unbounded by default), the oldest first, a partition with records fetched and
  not yet handed over not at its end;
- ``--feed-stall``: the collector's producer sends nothing for that long, then everything
  due meanwhile at once (stamped when sent, ``--feed-rate`` records a second).

After each fetch, how long ago the first input to reach the correlator's clock arrived: how
long a finding at that clock had been held (``clock held``); per alert answering a finding,
how long after its input arrived it was decided (``alerts held``) and after its input was
handed over (``clock stage``: what bench/kafka_throughput.py --stages calls "correlator
clock", plus up to a fetch interval); with stalls, the clock held before the first, and in
each ``--window-s`` (5 s) after the last one's end (does a moment behind hold the clock
for long?); and the findings the correlator took after its clock had passed them
(``late``).  Deterministic: a count of simulated milliseconds, not a timing -- so it A/Bs
the clock logic of two trees on a loaded box:

    PYTHONPATH=TREE python bench/clock_hold.py [--speed 250] [--late thermal=0.02] \\
        [--stall 2:1 --max-rate 300000] [--feed-stall 2:1] [--visible-ms 50] [--hold-back-s 0.1]
"""

from __future__ import annotations

import argparse
import math
import sys
import zlib
from bisect import bisect_left
from itertools import accumulate
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import orjson  # noqa: E402

from detector.events import STEP, TELEMETRY_TOPICS  # noqa: E402
from detector.pipeline.worker import PipelineWorker  # noqa: E402
from replay.log import Record, read_records  # noqa: E402

LOG = ROOT / "replay" / "incidents" / "h100-128-all-faults.jsonl.gz"
PARTS = 8
EPOCH = 1_796_000_000.0  # wall time of the feed's start: event time is the log's, far behind


def spans(specs: list[str]) -> list[tuple[float, float]]:
    """``AT:SECONDS`` -> (start, end) in wall time, sorted."""
    return sorted((EPOCH + float(a), EPOCH + float(a) + float(d))
                  for a, d in (s.split(":") for s in specs))


def stamped(recs: list[tuple[float, tuple[str, int], bytes]], stalls: list[tuple[float, float]],
            rate: float) -> list[tuple[float, tuple[str, int], bytes]]:
    """The feed's CreateTimes when its producer stalls: a record due during a stall is sent at
    its end, and the burst after it at ``rate`` records a second (0: all at once)."""
    out, last = [], -math.inf
    for due, tp, value in recs:
        for s, e in stalls:
            if s <= due < e:
                due = e
        if rate and due < last + 1.0 / rate and due > EPOCH and any(
                s <= last <= e + 5.0 for s, e in stalls):
            due = last + 1.0 / rate
        last = max(last, due)
        out.append((due, tp, value))
    return out


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--speed", type=float, default=160.0)
    ap.add_argument("--fetch-ms", type=float, default=10.0)
    ap.add_argument("--late", action="append", default=[], help="TOPIC=SECONDS (wall)")
    ap.add_argument("--visible-ms", type=float, default=0.0,
                    help="a record can be fetched this long after its CreateTime")
    ap.add_argument("--stall", action="append", default=[], help="AT:SECONDS, the worker")
    ap.add_argument("--max-rate", type=float, default=0.0,
                    help="records a second the worker takes (0: unbounded)")
    ap.add_argument("--feed-stall", action="append", default=[], help="AT:SECONDS, the feed")
    ap.add_argument("--feed-rate", type=float, default=0.0,
                    help="records a second the feed sends after a stall (0: at once)")
    ap.add_argument("--hold-back-s", type=float, default=0.25,
                    help="the worker's hold_back_s (the service's default 0.25)")
    ap.add_argument("--window-s", type=float, default=5.0,
                    help="after the last stall, the clock held per window of this length")
    args = ap.parse_args()
    late = {f"telemetry.{k}": float(v) for k, v in (x.split("=") for x in args.late)}
    stalls, feed_stalls = spans(args.stall), spans(args.feed_stall)
    recs = []
    ts0 = None
    for rec in read_records(LOG):
        if isinstance(rec, Record) and rec.topic in TELEMETRY_TOPICS:
            ts = float(rec.value["ts"])
            ts0 = ts if ts0 is None else ts0
            key = str(rec.value["job" if rec.topic == STEP else "node"]).encode()
            arrival = EPOCH + max(0.0, ts - ts0) / args.speed + late.get(rec.topic, 0.0)
            recs.append((arrival, (rec.topic, zlib.crc32(key) % PARTS), orjson.dumps(rec.value)))
    recs.sort(key=lambda r: r[0])
    if feed_stalls:
        recs = stamped(recs, feed_stalls, args.feed_rate)
    visible_s = args.visible_ms / 1000.0
    # event time reached by the inputs arrived by each record's arrival (running maximum)
    reached = list(accumulate((orjson.loads(r[2])["ts"] for r in recs), max))
    tps = [(t, p) for t in TELEMETRY_TOPICS for p in range(PARTS)]
    w = PipelineWorker(telemetry_topics={t: t for t in TELEMETRY_TOPICS}, findings_topic="f",
                       findings_partitions=1, expected_sources=[f"{t}:{p}" for t, p in tps],
                       local_findings=True, wall_clock=None, hold_back_s=args.hold_back_s)
    w.sources = {tp: w.new_partition(tp, EPOCH) for tp in tps}  # type: ignore[misc]
    w.correlators = {("f", 0): w.new_partition(("f", 0), EPOCH)}  # type: ignore[misc]
    offsets = dict.fromkeys(tps, 0)
    held: list[float] = []
    stage: list[float] = []
    clock_held: list[tuple[float, float]] = []  # (fetch time, held)
    handed_at: dict[int, float] = {}  # an input's arrival (ms) -> when it was handed over
    corr = w.correlators[("f", 0)]
    i, n, now, beat = 0, len(recs), EPOCH, EPOCH
    step = args.fetch_ms / 1000.0
    cap = int(args.max_rate * step) if args.max_rate else n
    end = recs[-1][0] + visible_s + 10.0
    while now < end:
        now += step
        if any(s <= now < e for s, e in stalls):
            continue  # the worker runs nothing: no fetch, no heartbeat
        batch: dict[tuple[str, int], list] = {}
        taken = 0
        while i < n and recs[i][0] + visible_s <= now and taken < cap:
            arrived, tp, value = recs[i]
            ms = int(arrived * 1000)
            batch.setdefault(tp, []).append((offsets[tp], b"k", value, ms))
            handed_at[ms] = now
            offsets[tp] += 1
            i += 1
            taken += 1
        # a partition with records fetchable and not handed over is not at its end
        behind = {recs[j][1] for j in range(i, min(n, i + 4 * cap))
                  if recs[j][0] + visible_s <= now} if taken >= cap else set()

        def at_end(tp: object, off: int, sent: float = now, pending: set = behind) -> float | None:
            return None if tp in pending else sent

        outs = [w.process(batch, now, lambda tp, off: True, arrivals_per_s=1000.0,
                          at_end=at_end)]
        if now - beat >= 0.1:
            beat = now
            outs.append(w.heartbeat(now, lambda tp, off: True, at_end))
        for out in outs:
            for _, a in out.alerts:
                if a is not None:
                    held.append(now - a)
                    stage.append(now - handed_at.get(int(round(a * 1000)), now))
        if i < n and corr.released > -math.inf:  # the feed still running
            k = bisect_left(reached, corr.released)
            if k < i:
                clock_held.append((now, now - recs[k][0]))
    print(f"fetch every {args.fetch_ms:g} ms, speed {args.speed:g}x, late {late or 'none'}"
          + (f", visible after {args.visible_ms:g} ms" if visible_s else "")
          + (f", worker stalls {args.stall} (max {args.max_rate:,.0f}/s)" if stalls else "")
          + (f", feed stalls {args.feed_stall}" if feed_stalls else "")
          + (f", hold_back_s {args.hold_back_s:g}" if args.hold_back_s != 0.25 else "")
          + f": clock held {quantiles([h for _, h in clock_held])} ({len(clock_held)} fetches); "
          f"alerts held {quantiles(held)}; clock stage {quantiles(stage)} ({len(held)}); "
          f"findings late {corr.late}")
    both = sorted(stalls + feed_stalls)
    if both:
        first, last = both[0][0], both[-1][1]
        before = [h for t, h in clock_held if t < first]
        print(f"  clock held before the first stall: {quantiles(before)}")
        step_s = args.window_s
        for k in range(12):
            lo, hi = last + step_s * k, last + step_s * (k + 1)
            win = [h for t, h in clock_held if lo <= t < hi]
            if win:
                print(f"  {step_s * k:g}-{step_s * (k + 1):g} s after the last stall: "
                      f"{quantiles(win)}")
    return 0


def quantiles(xs: list[float]) -> str:
    if not xs:
        return "none"
    xs = sorted(xs)

    def q(p: float) -> float:
        return 1000.0 * xs[min(len(xs) - 1, math.ceil(p * len(xs)) - 1)]

    return f"p50 {q(0.5):.0f} / p90 {q(0.9):.0f} / p99 {q(0.99):.0f} / max {q(1.0):.0f} ms"


if __name__ == "__main__":
    sys.exit(main())
