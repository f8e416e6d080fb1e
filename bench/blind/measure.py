"""The round-9 blind measurement in one command: build the corpus, replay it, score it.

    python -m bench.blind.measure [--dir /tmp/blind] [--seeds 0..5] [--no-frontend]

Writes the 24 logs (both shapes x 10 s, 30 s x seeds) under DIR/corpus unless they
are there, runs ``faultline replay LOG --alerts-out`` on each (a fresh engine per
log, topology from the log), and prints DESIGN's scorecard over all of them, per
cluster shape and interval, per fault variant, and every false positive and miss
(``bench.blind.score``). ``--no-frontend`` replays copies without the frontend NIC's
records (hgx4-128's mlx5_2): the counterfactual in BENCHMARKS "blind, round 9".
"""

from __future__ import annotations

import argparse
import re
import statistics
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

from bench.blind.cluster import shape_for_gpus
from bench.blind.cut import cut
from bench.blind.diagnose import diagnose
from bench.blind.generate import generate, log_name, write_log
from bench.blind.score import score_pair, table


def faultline_bin() -> str:
    return str(Path(sys.executable).with_name("faultline"))


def variant_table(results: list[dict]) -> str:
    by: dict[str, list[dict]] = defaultdict(list)
    for r in results:
        for f in r["faults"]:
            what = re.search(r"-f\d+-(.*)$", f["label"]["fault_id"]).group(1)
            iv = re.search(r"-(i\d+)-", f["log"]).group(1)
            by[f"{what} {iv}"].append(f)
    lines = ["variant interval  faults caught  lat_med_s  lat_max_s  attrib  caught by"]
    for k in sorted(by):
        fs = by[k]
        c = [f for f in fs if f["caught"]]
        lat = sorted(f["latency_s"] for f in c)
        how = sorted({f"{f['by'][0].split('.')[1]} {f['by'][1]}/{f['by'][2]} {f['by'][3]['level']}"
                      for f in c})
        lines.append(
            f"{k:28s} {len(fs):3d} {len(c):3d}  "
            f"{statistics.median(lat) if lat else float('nan'):8.1f}  "
            f"{lat[-1] if lat else float('nan'):8.1f}  "
            f"{sum(f['cause_ok'] for f in c)}/{len(c)}  {'; '.join(how)}"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--dir", type=Path, default=Path("/tmp/blind"))
    ap.add_argument("--seeds", default="0..5")
    ap.add_argument("--minutes", type=float, default=30.0)
    ap.add_argument("--no-frontend", action="store_true")
    a = ap.parse_args(argv)
    lo, hi = (int(x) for x in a.seeds.split(".."))
    pairs = []
    for gpus in (256, 128):
        for interval in (10.0, 30.0):
            for seed in range(lo, hi + 1):
                log = a.dir / "corpus" / log_name(gpus, seed, interval, a.minutes)
                if not log.exists():
                    write_log(log, generate(gpus, seed, a.minutes, interval)[0])
                drop = set(shape_for_gpus(gpus).other_nics) if a.no_frontend else set()
                if drop:
                    recs = cut(log, 0.0, 1e9, None, None, drop, _label_ids(log))
                    log = a.dir / "no-frontend" / log.name
                    write_log(log, recs)
                alerts = a.dir / "alerts" / (log.parent.name + "-" + log.name + ".alerts.jsonl")
                alerts.parent.mkdir(parents=True, exist_ok=True)
                subprocess.run(
                    [faultline_bin(), "replay", str(log), "--quiet", "--alerts-out", str(alerts)],
                    check=True, stdout=subprocess.DEVNULL,
                )
                pairs.append((log, alerts))
    results = [score_pair(log, alerts) for log, alerts in pairs]
    print("all logs\n" + table(results))
    for cell in ("dgx-h100-256-i10", "dgx-h100-256-i30", "hgx4-128-i10", "hgx4-128-i30"):
        sub = [r for r, (log, _a) in zip(results, pairs, strict=True) if cell in log.name]
        print(f"\n{cell}\n" + table(sub))
    print("\n" + variant_table(results))
    print("\n| log | false positives and misses (diagnosis) |\n|---|---|")
    for r, (log, _a) in zip(results, pairs, strict=True):
        print(diagnose(log.name, r))
    return 0


def _label_ids(log: Path) -> set[str]:
    from bench.blind.score import read_jsonl

    return {r["value"]["fault_id"] for r in read_jsonl(log) if r["topic"] == "labels"}


if __name__ == "__main__":
    raise SystemExit(main())
