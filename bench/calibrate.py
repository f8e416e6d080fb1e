"""Calibrate alert confidence per alert family, and say how well it is calibrated.

An alert's ``confidence`` should be the chance that the problem it reports is
real.  The detectors give a raw score (``evidence.raw_confidence``: the
strongest finding's severity); this maps it, per family (topic, kind, cause),
to the share of problems that caught a labelled fault on a tuning corpus:

- a family with at least ``--min-false`` false positives and ``--min-caught``
  catches gets scikit-learn's ``IsotonicRegression`` of "caught a fault" on
  the raw score (monotone: a stronger signal is never *less* likely real),
  its ends kept inside Laplace's (1/(n+2), (n+1)/(n+2)) so no family ever
  claims certainty from a finite corpus;
- any other family gets its Laplace-smoothed precision (caught + 1) / (n + 2):
  with no false positive to learn from, a curve would be a guess.

``fit`` writes the curves to ``detector/calibration.py`` (``--write``), which
the correlator evaluates with a few comparisons (no scikit-learn at run time).
``reliability`` replays a held-out corpus and prints predicted confidence
against observed precision, in bins and per family, with the Brier score and
the expected calibration error.

    python bench/calibrate.py fit TUNING_CORPUS [--write] [--workers 2]
    python bench/calibrate.py reliability REPORTING_CORPUS [--workers 2]

A corpus is a folder of labelled incident logs (``faultline evaluate --build``);
each log carries its topology.  ``--problems FILE`` saves (or, if it exists,
reuses) the replayed problems, so a second run needs no replay.

Caveat printed with the tables: a corpus holds a fault every few minutes, a
real fleet one every few hours per 16k GPUs, so the precision an operator sees
also depends on the false-alarm *rate* at fleet scale (bench/false_alarms.py).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import defaultdict
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

TARGET = ROOT / "detector" / "calibration.py"
BINS = (0.0, 0.5, 0.7, 0.8, 0.9, 0.95, 0.98, 1.0001)

Family = tuple[str, str, str]


def problems_of_log(path: str) -> list[dict]:
    """Every firing problem of one replayed log: family, raw and given confidence, real?"""
    from replay.log import log_topology
    from replay.runner import replay_log
    res = replay_log(path, topology=log_topology(path))
    card = res.scorecard()
    false = {(a.topic, a.dedup_key) for a in card.false_positives}
    first: dict[tuple[str, str], object] = {}
    for a in res.fired():
        if a.status == "firing":
            first.setdefault((a.topic, a.dedup_key), a)
    out = []
    for key, a in first.items():
        raw = a.raw.get("evidence", {}).get("raw_confidence", a.confidence)
        out.append({"log": Path(path).name, "family": [a.topic.rsplit(".", 1)[-1], a.kind,
                                                       a.cause],
                    "raw": float(raw), "confidence": float(a.confidence),
                    "real": key not in false})
    return out


def corpus_problems(corpus: Path, workers: int, cache: Path | None) -> list[dict]:
    if cache is not None and cache.is_file():
        return json.loads(cache.read_text())
    from replay.log import log_files
    logs = [str(p) for p in log_files([corpus])]
    with ProcessPoolExecutor(max_workers=workers) as pool:
        rows = [r for log in pool.map(problems_of_log, logs) for r in log]
    if cache is not None:
        cache.write_text(json.dumps(rows))
    print(f"{len(rows)} firing problems from {len(logs)} logs in {corpus}")
    return rows


def fit(rows: list[dict], min_false: int, min_caught: int
        ) -> dict[Family, tuple[tuple[float, ...], tuple[float, ...], str]]:
    """Family -> (raw-score knots, confidence at each knot, how it was fitted)."""
    import numpy as np
    from sklearn.isotonic import IsotonicRegression
    by: dict[Family, list[dict]] = defaultdict(list)
    for r in rows:
        by[tuple(r["family"])].append(r)  # type: ignore[index]
    curves = {}
    for fam in sorted(by):
        rs = by[fam]
        n, real = len(rs), sum(r["real"] for r in rs)
        lo, hi = 1 / (n + 2), (n + 1) / (n + 2)
        x = np.array([r["raw"] for r in rs])
        if n - real >= min_false and real >= min_caught and np.ptp(x) > 0:
            iso = IsotonicRegression(y_min=lo, y_max=hi, out_of_bounds="clip")
            iso.fit(x, np.array([float(r["real"]) for r in rs]))
            xs = tuple(round(float(v), 4) for v in iso.X_thresholds_)
            ys = tuple(round(float(v), 3) for v in iso.y_thresholds_)
            how = f"isotonic on {n} problems ({real} real, {n - real} false)"
        else:
            xs, ys = (0.0,), (round((real + 1) / (n + 2), 3),)
            how = f"smoothed precision: {real} real, {n - real} false"
        curves[fam] = (xs, ys, how)
    return curves


def render(curves: dict[Family, tuple[tuple[float, ...], tuple[float, ...], str]],
           source: str) -> str:
    lines = [
        '"""Calibrated confidence per alert family, fitted on a tuning corpus.',
        "",
        f"Generated by ``python bench/calibrate.py fit {source} --write``; do not edit by hand.",
        "Each family maps the detectors' raw score to the share of its problems that were real:",
        "a piecewise-linear curve through (raw score, confidence) knots -- isotonic regression",
        "where the corpus had false positives to learn from, else one knot, the Laplace-",
        "smoothed precision.  A family never seen keeps its raw score.",
        "",
        ">>> confidence('alerts.isolation', 'no', 'such', 0.42)",
        "0.42",
        '"""',
        "",
        "from bisect import bisect_right",
        "",
        "CURVES: dict[tuple[str, str, str], tuple[tuple[float, ...], tuple[float, ...]]] = {",
    ]
    for (topic, kind, cause), (xs, ys, how) in curves.items():
        lines.append(f"    # {how}")
        lines.append(f"    ({topic!r}, {kind!r}, {cause!r}): ({xs!r}, {ys!r}),")
    lines += [
        "}",
        "",
        "",
        "def confidence(topic: str, kind: str, cause: str, raw: float) -> float:",
        '    """Calibrated confidence of an alert of this family with this raw score."""',
        "    curve = CURVES.get((topic.rsplit('.', 1)[-1], kind, cause))",
        "    if curve is None:",
        "        return raw",
        "    xs, ys = curve",
        "    i = bisect_right(xs, raw)",
        "    if i == 0:",
        "        return ys[0]",
        "    if i == len(xs):",
        "        return ys[-1]",
        "    x0, x1, y0, y1 = xs[i - 1], xs[i], ys[i - 1], ys[i]",
        "    return y0 + (y1 - y0) * (raw - x0) / (x1 - x0)",
        "",
    ]
    return "\n".join(lines)


def reliability(rows: list[dict]) -> None:
    """Predicted confidence (as the alerts carried it) against observed precision."""
    n = len(rows)
    if not n:
        print("no firing problems")
        return
    print(f"{'confidence bin':<16} {'problems':>8} {'predicted':>9} {'observed':>9}")
    ece = 0.0
    for lo, hi in zip(BINS, BINS[1:], strict=False):
        rs = [r for r in rows if lo <= r["confidence"] < hi]
        if not rs:
            continue
        pred = sum(r["confidence"] for r in rs) / len(rs)
        obs = sum(r["real"] for r in rs) / len(rs)
        ece += len(rs) / n * abs(pred - obs)
        print(f"[{lo:.2f}, {min(hi, 1.0):.2f}){'':<4} {len(rs):>8} {pred:>9.3f} {obs:>9.3f}")
    brier = sum((r["confidence"] - r["real"]) ** 2 for r in rows) / n
    print(f"all {n} problems: predicted {sum(r['confidence'] for r in rows) / n:.3f}, "
          f"observed precision {sum(r['real'] for r in rows) / n:.3f}; Brier {brier:.4f}, "
          f"expected calibration error {ece:.3f}")
    print(f"\n{'family':<40} {'problems':>8} {'false':>6} {'predicted':>9} {'observed':>9}")
    by: dict[str, list[dict]] = defaultdict(list)
    for r in rows:
        by["/".join(r["family"])].append(r)
    for fam in sorted(by):
        rs = by[fam]
        print(f"{fam:<40} {len(rs):>8} {sum(not r['real'] for r in rs):>6} "
              f"{sum(r['confidence'] for r in rs) / len(rs):>9.3f} "
              f"{sum(r['real'] for r in rs) / len(rs):>9.3f}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("what", choices=("fit", "reliability"))
    ap.add_argument("corpus", type=Path, help="folder of labelled incident logs")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--problems", type=Path, help="save / reuse the replayed problems (JSON)")
    ap.add_argument("--min-false", type=int, default=3)
    ap.add_argument("--min-caught", type=int, default=3)
    ap.add_argument("--write", action="store_true", help=f"write {TARGET.relative_to(ROOT)}")
    args = ap.parse_args()
    rows = corpus_problems(args.corpus, args.workers, args.problems)
    if args.what == "reliability":
        reliability(rows)
    else:
        curves = fit(rows, args.min_false, args.min_caught)
        print(f"{'family':<40} {'knots':>5}  fitted")
        for fam, (xs, _, how) in curves.items():
            print(f"{'/'.join(fam):<40} {len(xs):>5}  {how}")
        if args.write:
            TARGET.write_text(render(curves, args.corpus.name))
            print(f"wrote {TARGET.relative_to(ROOT)}")
    print("caveat: corpus fault density >> a fleet's; see bench/false_alarms.py for rates")
    return 0


if __name__ == "__main__":
    sys.exit(main())
