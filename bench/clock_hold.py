"""How long the correlator's clock holds a finding, the worker's pipeline in process, no Kafka.

The bundled incident split into 8 partitions per telemetry topic by key (as the feed's
producer does), fed as a paced replay is: record k reaches Kafka at its event time's offset
over ``--speed`` (the latency bench at half load: ~160x) plus its topic's ``--late``
delivery (seconds of wall time, e.g. ``thermal=0.02``); a fetch every ``--fetch-ms`` hands
the worker every record arrived by then, each partition found at its end by that fetch
(FETCH_ENDS), with a heartbeat every 100 ms.  After each fetch, how long ago the first
input to reach the correlator's clock arrived: how long a finding at that clock had been
held (the stage bench/kafka_throughput.py --stages calls "correlator clock", plus the
fetch interval); per alert answering a finding, the same for it; and the findings the
correlator took after its clock had passed them (``late``).  Deterministic: a count of
simulated milliseconds, not a timing -- so it A/Bs the clock logic of two trees on a
loaded box:

    PYTHONPATH=TREE python bench/clock_hold.py [--speed 160] [--late thermal=0.02]
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


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--speed", type=float, default=160.0)
    ap.add_argument("--fetch-ms", type=float, default=10.0)
    ap.add_argument("--late", action="append", default=[], help="TOPIC=SECONDS (wall)")
    args = ap.parse_args()
    late = {f"telemetry.{k}": float(v) for k, v in (x.split("=") for x in args.late)}
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
    # event time reached by the inputs arrived by each record's arrival (running maximum)
    reached = list(accumulate((orjson.loads(r[2])["ts"] for r in recs), max))
    tps = [(t, p) for t in TELEMETRY_TOPICS for p in range(PARTS)]
    w = PipelineWorker(telemetry_topics={t: t for t in TELEMETRY_TOPICS}, findings_topic="f",
                       findings_partitions=1, expected_sources=[f"{t}:{p}" for t, p in tps],
                       local_findings=True, wall_clock=None)
    w.sources = {tp: w.new_partition(tp, EPOCH) for tp in tps}  # type: ignore[misc]
    w.correlators = {("f", 0): w.new_partition(("f", 0), EPOCH)}  # type: ignore[misc]
    offsets = dict.fromkeys(tps, 0)
    held: list[float] = []
    clock_held: list[float] = []
    corr = w.correlators[("f", 0)]
    i, n, now, beat = 0, len(recs), EPOCH, EPOCH
    step = args.fetch_ms / 1000.0
    end = recs[-1][0] + 10.0
    while now < end:
        now += step
        batch: dict[tuple[str, int], list] = {}
        while i < n and recs[i][0] <= now:
            arrived, tp, value = recs[i]
            batch.setdefault(tp, []).append((offsets[tp], b"k", value, int(arrived * 1000)))
            offsets[tp] += 1
            i += 1
        outs = [w.process(batch, now, lambda tp, off: True, arrivals_per_s=1000.0,
                          at_end=lambda tp, off, sent=now: sent)]
        if now - beat >= 0.1:
            beat = now
            outs.append(w.heartbeat(now, lambda tp, off: True, lambda tp, off, sent=now: sent))
        for out in outs:
            held += [now - a for _, a in out.alerts if a is not None]
        if i < n and corr.released > -math.inf:  # the feed still running
            k = bisect_left(reached, corr.released)
            if k < i:
                clock_held.append(now - recs[k][0])
    print(f"fetch every {args.fetch_ms:g} ms, speed {args.speed:g}x, late {late or 'none'}: "
          f"clock held {quantiles(clock_held)} ({len(clock_held)} fetches); alerts held "
          f"{quantiles(held)} ({len(held)}); findings late {corr.late}")
    return 0


def quantiles(xs: list[float]) -> str:
    xs = sorted(xs)

    def q(p: float) -> float:
        return 1000.0 * xs[min(len(xs) - 1, math.ceil(p * len(xs)) - 1)]

    return f"p50 {q(0.5):.0f} / p90 {q(0.9):.0f} / p99 {q(0.99):.0f} / max {q(1.0):.0f} ms"


if __name__ == "__main__":
    sys.exit(main())
