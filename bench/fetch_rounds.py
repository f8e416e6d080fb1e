"""Counts of the worker's fetch loop in kept stage traces (bench/kafka_throughput.py --stages
--keep-traces DIR --json F): how often each telemetry partition sat out of the fetch requests
because its fetched records were still in the consumer's buffer.

aiokafka asks for a partition again only once all its fetched records are handed over; the
figure that does not depend on the box's speed is a count -- of the fetch requests that went
out between a fetch response bringing a partition's records and the next request asking
for that partition again ("rounds sat out": 0 when it was asked in the very next one) --
with the time that took beside it, and the share of (request, partition) pairs a partition
was left out of.  Per run, with the run's label (baseline or not), so an A/B reads per pair.

    python bench/fetch_rounds.py /tmp/lat27/ab1/lat.json /tmp/lat27/ab1/traces
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path
from typing import Any

import orjson


def percentile(xs: list[float], q: float) -> float:
    if not xs:
        return float("nan")
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(q / 100 * (len(xs) - 1))))]


def rounds_sat_out(requests: list[tuple[float, float, dict[Any, bool]]],
                   partitions: set[Any] | None = None) -> tuple[list[int], list[float]]:
    """For each fetch response that brought records of a partition (of ``partitions``; None:
    any): the fetch requests sent after it came and before the next one asking for that
    partition again, and the seconds to that one.  ``requests``: (sent, response handled,
    {partition: records came}) of each request."""
    requests = sorted(requests, key=lambda r: r[0])
    sat_out: list[int] = []
    spans: list[float] = []
    for k, (_, done, asked) in enumerate(requests):
        for tp, came in asked.items():
            if not came or (partitions is not None and tp not in partitions):
                continue
            n = 0
            for sent2, _, asked2 in requests[k + 1:]:
                if sent2 < done:
                    continue  # in flight already when this response came
                if tp in asked2:
                    sat_out.append(n)
                    spans.append(sent2 - done)
                    break
                n += 1
    return sat_out, spans


def fetch_counts(path: Path) -> dict[str, Any] | None:
    """The fetch log of one worker's trace file: rounds sat out and their spans."""
    requests: list[tuple[float, float, dict[tuple[str, int], bool]]] = []
    pieces: list[int] = []
    try:
        lines = path.read_bytes().splitlines()
    except OSError:
        return None
    for line in lines:
        x = orjson.loads(line)
        if "fetch" in x:
            sent, done, parts = x["fetch"]
            requests.append((sent, done, {(t, p): came for t, p, _, _, came in parts}))
        elif "batch" in x:
            pieces.append(x["batch"][3])
    if not requests:
        return None
    telemetry = {tp for _, _, asked in requests for tp in asked if "findings" not in tp[0]}
    sat_out, spans = rounds_sat_out(requests, telemetry)
    pairs = len(requests) * len(telemetry)
    asked_pairs = sum(1 for _, _, a in requests for tp in a if tp in telemetry)
    return {"requests": len(requests), "partitions": len(telemetry),
            "left_out_share": 1 - asked_pairs / pairs if pairs else float("nan"),
            "sat_out": sat_out, "spans": spans, "pieces": pieces}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("json", help="kafka_throughput.py --json of a --stages run")
    ap.add_argument("traces", help="its --keep-traces folder")
    args = ap.parse_args()
    res = json.loads(Path(args.json).read_text())
    rows = []
    for lat in res.get("latency", []):
        for k, run in enumerate(lat["runs"], 1):
            c = fetch_counts(Path(args.traces) / f"{run['prefix']}trace.jsonl")
            if c is None:
                continue
            rows.append((lat["label"] or "(this tree)", k, run, c))
    print("| arm | run | slowest alert ms | p50 ms | worker CPU µs an event | fetch requests | "
          "left out | rounds sat out p50 / p90 / p99 | sat-out span p50 / p99 ms | "
          "records a hand-over p50 / max |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for label, k, run, c in sorted(rows, key=lambda r: (r[0], r[1])):
        so, sp = c["sat_out"], c["spans"]
        print(f"| {label} | {k} | {1e3 * max(run['alerts'], default=float('nan')):.0f} | "
              f"{1e3 * percentile(run['alerts'], 50):.0f} | "
              f"{1e6 * run['worker_cpu_s'] / run['events']:.2f} | {c['requests']} | "
              f"{c['left_out_share']:.2f} | {percentile(so, 50):.0f} / {percentile(so, 90):.0f}"
              f" / {percentile(so, 99):.0f} | {1e3 * percentile(sp, 50):.0f} / "
              f"{1e3 * percentile(sp, 99):.0f} | "
              f"{statistics.median(c['pieces']) if c['pieces'] else 0:.0f} / "
              f"{max(c['pieces'], default=0)} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
