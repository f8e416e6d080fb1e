"""Per slowdown fault of the matrix's interval-30 cell: start -> slow rank found -> the GPU's
samples -> first catch (int30, round 28; wait25's and interval16's /tmp tracers, kept).

    python bench/interval30_faults.py --build DIR --seeds 2880..2899   # 20 logs, ~5 s each
    python bench/interval30_faults.py DIR [--json OUT]                  # replay and trace

One row per thermal / power / silent_slow fault: seconds after the label's start at which its
rank was first found slow (``slow_rank``) and its first step clearly slow ended
(``clearly_slow_since``), the GPU's first sample taken after the start (its clock-event
reasons), the first sample showing a reason, the first catch (seconds, steps as the matrix
counts them, cause, right or not).  Then the 10 % median per kind -- the figure issue 10 asks
of the cell (<= 10 steps), and what a slow rank's wait for its GPU's next sample costs.
"""

from __future__ import annotations

import argparse
import gzip
import json
import statistics
from pathlib import Path
from typing import Any

from detector import correlate
from replay.evaluation.corpus import build_pairs
from replay.evaluation.matrix import steps_to_detect
from replay.runner import replay_log

SLOWDOWNS = ("silent_slow", "thermal", "power")


def build(out: str, seeds: str) -> None:
    from replay.evaluation.matrix import matrix_recipes
    a, _, b = seeds.partition("..")
    cell = next(r for r in matrix_recipes("matrix") if r.name == "interval-30")
    build_pairs(out, [(cell, s) for s in range(int(a), int(b or a) + 1)], workers=1,
                progress=print)


def _samples(path: Path, gpus: set[tuple[str, int]]) -> dict[tuple[str, int], list]:
    out: dict[tuple[str, int], list] = {g: [] for g in gpus}
    with gzip.open(path, "rt") if path.suffix == ".gz" else path.open() as fh:
        for line in fh:
            if '"telemetry.thermal"' not in line:
                continue
            v = json.loads(line)["value"]
            key = (v["node"], v["gpu"])
            if key in out:
                out[key].append((v["ts"], int(v.get("throttle") or 0)))
    return out


def trace(corpus: Path) -> list[dict[str, Any]]:
    man = json.loads((corpus / "corpus.json").read_text())
    found: list[tuple[float, str, dict[str, Any]]] = []
    orig = correlate.Correlator.on_finding

    def hook(self: correlate.Correlator, f: Any, out: list) -> None:
        if f.signal == "slow_rank" and f.active:
            found.append((f.ts, f.scope.key, dict(f.evidence)))
        orig(self, f, out)

    correlate.Correlator.on_finding = hook  # type: ignore[method-assign]
    rows: list[dict[str, Any]] = []
    try:
        for e in man["logs"]:
            found.clear()
            path = corpus / e["file"]
            card = replay_log(path).scorecard()
            slow = {f["fault_id"]: f for f in e["faults"] if f["kind"] in SLOWDOWNS}
            samples = _samples(path, {(f["target"]["node"], f["target"]["gpu"])
                                      for f in slow.values()})
            for fr in card.faults:
                i = slow.get(fr.label.fault_id)
                if i is None:
                    continue
                a, b = fr.label.start_ts, fr.label.end_ts
                node, gpu = i["target"]["node"], i["target"]["gpu"]
                mine = [x for x in found if x[1] == f"gpu:{node}/{gpu}" and a - 5 <= x[0] <= b + 60]
                after = [s for s in samples[(node, gpu)] if s[0] >= a]
                reason = next((s for s in after if s[1] and s[0] <= b), None)
                since = mine[0][2].get("clearly_slow_since") if mine else None
                by = fr.by
                rows.append({
                    "fault": fr.label.fault_id, "kind": i["kind"], "shape": i["shape"],
                    "magnitude": i["magnitude"],
                    "found_s": mine[0][0] - a if mine else None,
                    "clearly_slow_s": since - a if since else None,
                    "first_sample_s": after[0][0] - a if after else None,
                    "first_sample_bits": after[0][1] if after else None,
                    "first_reason_s": reason[0] - a if reason else None,
                    "first_reason_bits": reason[1] if reason else None,
                    "caught_s": by.detected_ts - a if by else None,
                    "steps": steps_to_detect(i, by.detected_ts) if by else None,
                    "cause": by.cause if by else None, "right": bool(fr.attributed)})
            print(f"  traced {e['file']}", flush=True)
    finally:
        correlate.Correlator.on_finding = orig  # type: ignore[method-assign]
    return rows


def _s(x: float | None) -> str:
    return "-" if x is None else f"{x:.1f}"


def report(rows: list[dict[str, Any]]) -> None:
    print("fault | shape | size | found | clearly slow | 1st sample after (bits) | 1st reason "
          "| caught s | steps | cause")
    for r in sorted(rows, key=lambda r: (r["kind"], r["fault"])):
        bits = r["first_sample_bits"]
        print(f"{r['fault']} | {r['shape']} | {r['magnitude']:.2f} | {_s(r['found_s'])} | "
              f"{_s(r['clearly_slow_s'])} | {_s(r['first_sample_s'])} "
              f"({'-' if bits is None else hex(bits)}) | "
              f"{_s(r['first_reason_s'])} {hex(r['first_reason_bits'] or 0)} | "
              f"{_s(r['caught_s'])} | {r['steps']} | {r['cause']}"
              f"{'' if r['right'] else ' (wrong)'}")
    big = float("inf")
    ten = [r for r in rows if r["magnitude"] >= 0.10]
    for kind in (*SLOWDOWNS, None):
        mine = [r for r in ten if kind is None or r["kind"] == kind]
        if mine:
            steps = [big if r["steps"] is None else r["steps"] for r in mine]
            print(f"{kind or 'all'}: {len(mine)} slowdowns >= 10 %, median "
                  f"{statistics.median(steps)} steps, {sum(s <= 10 for s in steps)} within 10, "
                  f"wrong cause or missed {sum(not r['right'] for r in mine)}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("corpus", nargs="?")
    ap.add_argument("--build", metavar="DIR")
    ap.add_argument("--seeds", default="2880..2899")
    ap.add_argument("--json", metavar="OUT")
    args = ap.parse_args()
    if args.build:
        build(args.build, args.seeds)
        return
    if not args.corpus:
        ap.error("a corpus folder, or --build DIR")
    rows = trace(Path(args.corpus))
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=0) + "\n")
    report(rows)


if __name__ == "__main__":
    main()
