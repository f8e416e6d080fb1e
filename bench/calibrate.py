"""Calibrate alert confidence per alert family and deployment condition; say how well.

An alert's ``confidence`` should be the chance that the problem it reports is
real.  The detectors give a raw score (``evidence.raw_confidence``: the
strongest finding's severity) and say under which deployment conditions they
gave it (``evidence.conditions``: topology full / nodes / none, the node's
telemetry interval; detector/calibration.py).  ``fit`` maps the raw score, per
family (topic, kind, cause), to the share of problems that caught a labelled
fault on a tuning corpus:

- a family is split by the one condition whose values differ most in
  precision, when that difference is significant (Fisher's exact test of one
  value against the rest, Bonferroni over the values and conditions,
  ``--alpha``); each value then gets its own curve, and the family's pooled
  curve stays as the fallback for values the corpus never showed;
- a curve with at least ``--min-false`` false positives and ``--min-caught``
  catches is scikit-learn's ``IsotonicRegression`` of "caught a fault" on the
  raw score (monotone: a stronger signal is never *less* likely real), its
  ends kept inside Laplace's (1/(n+2), (n+1)/(n+2)) so nothing claims
  certainty from a finite corpus; any other curve is the Laplace-smoothed
  precision (caught + 1) / (n + 2): with no false positive to learn from, a
  curve would be a guess.

``fit --write`` writes ``detector/calibration_table.py``, which the correlator
evaluates with a few comparisons (no scikit-learn at run time).
``reliability`` replays a held-out corpus and prints predicted confidence
against observed precision per family and condition, in bins, with the Brier
score and the expected calibration error, for the confidences the alerts
carried and for a table (``--table``: a fitted table, applied to each alert's
raw score and conditions, as the engine would).

    python bench/calibrate.py fit TUNING_CORPUS [--write] [--workers 2] [--problems P.json]
    python bench/calibrate.py reliability HELD_OUT [--table fitted.json] [--problems P.json]

A corpus is a folder of labelled incident logs (``faultline evaluate --build``);
each log carries its topology.  ``--problems FILE`` saves (or, if it exists,
reuses) the replayed problems, so a second run needs no replay.  ``fit --json
FILE`` saves the fitted table for ``reliability --table``.

What counts as real: the problem caught a fault by DESIGN.md's scoring rule, or
(one exception, stated with the figures) it is the no-topology fabric escalation
``switch:unknown`` whose listed nodes all sit behind a switch a labelled fault had
failed: the rule cannot match its scope to ``switch:leafN``, but the page is no
false alarm.
Caveat printed with the tables: a corpus holds a fault every few minutes, a
real fleet one every few hours per 16k GPUs, so the precision an operator sees
also depends on the false-alarm *rate* at fleet scale (bench/healthy_fleet.py).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import defaultdict
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

TARGET = ROOT / "detector" / "calibration_table.py"
from replay.evaluation.reliability import format_summary, summary  # noqa: E402

Family = tuple[str, str, str]
Key = tuple[str, str, str, str]  # family + "condition=value" ("" for the family alone)
CONDITIONS = ("topology", "interval")


def problems_of_log(path: str) -> list[dict]:
    """Every firing problem of one replayed log: family, raw and given confidence, real?"""
    from replay.evaluation.reliability import problem_rows
    from replay.log import log_topology
    from replay.runner import replay_log
    res = replay_log(path, topology=log_topology(path))
    card = res.scorecard()
    rows = problem_rows(res.fired(), card.false_positives, Path(path).name)
    physical = _physical_topology(Path(path))
    located = {(a.topic.rsplit(".", 1)[-1], a.dedup_key) for a in card.false_positives
               if _located(a, res.labels, physical)}
    for r in rows:
        if (r["family"][0], r["dedup_key"]) in located:
            r["real"] = True
    return rows


def _physical_topology(path: Path) -> Any:
    """The cluster a corpus log was simulated on (also when the log carries no topology)."""
    from detector.topology import Topology
    try:
        manifest = json.loads((path.parent.parent / "corpus.json").read_text())
        name = next(e["topology_name"] for e in manifest["logs"] if Path(e["file"]).name
                    == path.name)
        return Topology.load(ROOT / "topologies" / f"{name}.topo")
    except (OSError, ValueError, StopIteration, KeyError):
        return None


def _located(a: Any, labels: list[Any], topology: Any) -> bool:
    """A page that cannot name the part but lists exactly nodes behind a failing one.

    Without a topology, a leaf failing is one escalation scoped ``switch:unknown``
    listing the affected nodes (detector/correlate.py): the scoring rule counts it a
    false positive (its scope cannot equal ``switch:leafN``), yet the problem it
    reports is real.  For calibration it counts as real when its nodes all sit behind
    a switch a labelled fault had failed at the time.
    """
    nodes = a.raw.get("evidence", {}).get("affected_nodes")
    if a.scope.level != "switch" or not nodes or topology is None:
        return False
    for lab in labels:
        if (lab.scope.level == "switch" and lab.start_ts <= a.detected_ts <= lab.end_ts + 60
                and set(nodes) <= set(topology.nodes_under(lab.scope.switch))):
            return True
    return False


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


def _curve(rs: list[dict], min_false: int, min_caught: int
           ) -> tuple[tuple[float, ...], tuple[float, ...], str]:
    """(raw-score knots, confidence at each knot, how it was fitted) of one set of problems."""
    import numpy as np
    from sklearn.isotonic import IsotonicRegression
    n, real = len(rs), sum(r["real"] for r in rs)
    lo, hi = 1 / (n + 2), (n + 1) / (n + 2)
    x = np.array([r["raw"] for r in rs])
    if n - real >= min_false and real >= min_caught and np.ptp(x) > 0:
        iso = IsotonicRegression(y_min=lo, y_max=hi, out_of_bounds="clip")
        iso.fit(x, np.array([float(r["real"]) for r in rs]))
        xs = tuple(round(float(v), 4) for v in iso.X_thresholds_)
        ys = tuple(round(float(v), 3) for v in iso.y_thresholds_)
        return xs, ys, f"isotonic on {n} problems ({real} real, {n - real} false)"
    return (0.0,), (round((real + 1) / (n + 2), 3),), f"smoothed precision: {real} real, " \
        f"{n - real} false"


def best_split(rs: list[dict], alpha: float) -> tuple[str, float] | None:
    """The condition whose values differ most in precision, if significantly: (name, p)."""
    from scipy.stats import fisher_exact
    tests = []
    for name in CONDITIONS:
        by: dict[str, list[bool]] = defaultdict(list)
        for r in rs:
            by[r.get("conditions", {}).get(name, "unknown")].append(bool(r["real"]))
        if len(by) < 2:
            continue
        for value, reals in by.items():
            rest = [x for v, xs in by.items() if v != value for x in xs]
            table = [[sum(reals), len(reals) - sum(reals)], [sum(rest), len(rest) - sum(rest)]]
            p = float(fisher_exact(table)[1])
            tests.append((p, name))
    if not tests:
        return None
    p, name = min(tests)
    p_adj = min(1.0, p * len(tests))  # Bonferroni over every value of every condition
    return (name, p_adj) if p_adj < alpha else None


def fit(rows: list[dict], min_false: int, min_caught: int, alpha: float = 0.01
        ) -> dict[Key, tuple[tuple[float, ...], tuple[float, ...], str]]:
    """(family, condition) -> (raw-score knots, confidence at each knot, how it was fitted)."""
    by: dict[Family, list[dict]] = defaultdict(list)
    for r in rows:
        by[(r["family"][0], r["family"][1], r["family"][2])].append(r)
    curves = {}
    for fam in sorted(by):
        rs = by[fam]
        curves[(*fam, "")] = _curve(rs, min_false, min_caught)
        split = best_split(rs, alpha)
        if split is None:
            continue
        name, p = split
        values: dict[str, list[dict]] = defaultdict(list)
        for r in rs:
            values[r.get("conditions", {}).get(name, "unknown")].append(r)
        for value in sorted(values):
            xs, ys, how = _curve(values[value], min_false, min_caught)
            curves[(*fam, f"{name}={value}")] = (xs, ys, f"{how}; split by {name}, p={p:.1e}")
    return curves


def render(curves: dict[Key, tuple[tuple[float, ...], tuple[float, ...], str]],
           source: str) -> str:
    lines = [
        '"""The shipped confidence calibration (read by detector/calibration.py).',
        "",
        "Generated by ``python bench/calibrate.py fit CORPUS --write``; do not edit by hand.",
        f"CORPUS: ``{source}``.",
        "Keys: (topic, kind, cause, condition): condition ``name=value`` where the tuning",
        "corpus showed that the condition changes the family's precision, else ``''``.",
        "Values: (raw-score knots, confidence at each knot), interpolated linearly.",
        '"""',
        "",
        "CURVES: dict[tuple[str, str, str, str], tuple[tuple[float, ...], tuple[float, ...]]] = {",
    ]
    for key, (xs, ys, how) in curves.items():
        lines.append(f"    # {how}")
        lines.append(f"    {key!r}: ({xs!r}, {ys!r}),")
    lines += ["}", ""]
    return "\n".join(lines)


def with_table(rows: list[dict], table: dict[Key, tuple]) -> list[dict]:
    """The rows with the confidence this table gives each raw score under its conditions."""
    from detector.calibration import confidence
    tab = {k: (v[0], v[1]) for k, v in table.items()}
    return [{**r, "confidence": round(confidence("alerts." + r["family"][0], r["family"][1],
                                                 r["family"][2], r["raw"],
                                                 r.get("conditions"), tab), 3)} for r in rows]


def reliability(rows: list[dict], title: str = "") -> None:
    """Predicted confidence against observed precision: bins, then family x condition."""
    print(f"\n== {title} ==")
    print("\n".join(format_summary(summary(rows, CONDITIONS), CONDITIONS)))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("what", choices=("fit", "reliability"))
    ap.add_argument("corpus", type=Path, help="folder of labelled incident logs")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--problems", type=Path, help="save / reuse the replayed problems (JSON)")
    ap.add_argument("--min-false", type=int, default=3)
    ap.add_argument("--min-caught", type=int, default=3)
    ap.add_argument("--alpha", type=float, default=0.01,
                    help="significance a condition split needs (after Bonferroni)")
    ap.add_argument("--write", action="store_true", help=f"write {TARGET.relative_to(ROOT)}")
    ap.add_argument("--json", type=Path, help="fit: save the fitted table (for --table)")
    ap.add_argument("--table", type=Path, action="append", default=[],
                    help="reliability: also score this fitted table (repeatable)")
    args = ap.parse_args()
    rows = corpus_problems(args.corpus, args.workers, args.problems)
    if args.what == "reliability":
        reliability(rows, "confidence as the alerts carried it")
        for path in args.table:
            table = {tuple(e["key"]): (tuple(e["xs"]), tuple(e["ys"]))
                     for e in json.loads(path.read_text())}
            reliability(with_table(rows, table), f"table {path.name}, applied to raw scores")
        reliability([{**r, "confidence": r["raw"]} for r in rows], "raw scores, uncalibrated")
    else:
        curves = fit(rows, args.min_false, args.min_caught, args.alpha)
        print(f"{'family':<34} {'condition':<18} {'knots':>5}  fitted")
        for key, (xs, _, how) in curves.items():
            print(f"{'/'.join(key[:3]):<34} {key[3] or '-':<18} {len(xs):>5}  {how}")
        if args.json:
            args.json.write_text(json.dumps([{"key": list(k), "xs": list(v[0]), "ys": list(v[1]),
                                              "how": v[2]} for k, v in curves.items()],
                                            indent=1) + "\n")
        if args.write:
            source = str(args.corpus)
            man = args.corpus / "corpus.json"
            if man.is_file():  # say how to rebuild the corpus, not where it lay
                m = json.loads(man.read_text())
                seeds = ",".join(str(x) for x in m.get("seeds", []))
                source = (f"faultline evaluate --build {args.corpus.name} --scale "
                          f"{m.get('scale')} --seeds {seeds}")
            TARGET.write_text(render(curves, source))
            print(f"wrote {TARGET.relative_to(ROOT)}")
    print("caveat: corpus fault density >> a fleet's; see bench/healthy_fleet.py for rates")
    return 0


if __name__ == "__main__":
    sys.exit(main())
