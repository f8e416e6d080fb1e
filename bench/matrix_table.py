"""Per-cell Markdown table of one or two ``faultline evaluate --json`` runs of a matrix corpus.

    python bench/matrix_table.py EVAL.json                 # one run
    python bench/matrix_table.py BEFORE.json AFTER.json    # two runs, cell by cell

Cells are matched by axis and value; a cell missing from a run shows ``-``.
Figures are those ``faultline evaluate`` computed (replay/evaluation/matrix.py).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any


def _f(x: float | None, nd: int = 3) -> str:
    return "-" if x is None else f"{x:.{nd}f}"


def _cell(r: dict[str, Any] | None) -> list[str]:
    if r is None:
        return ["-"] * 8
    wp, wr = r["worst_precision"], r["worst_recall"]
    gross = r["gross_from_start_steps"]
    g = ",".join(">60" if s is None else str(s) for s in gross) or "-"
    if r["gross_from_start_missed"]:
        g += f" +{r['gross_from_start_missed']} missed"
    return [f"{_f(r['precision'])} / {_f(r['recall'])}",
            f"{wp[0]} {_f(wp[1], 2)} / {wr[0]} {_f(wr[1], 2)}" if wp and wr else "-",
            _f(r["attribution"], 2), _f(r["hardware_latency_max_s"], 2), g,
            _f(r["slow10_steps_median"], 1),
            f"{r['false_positives_isolation']}/{r['false_positives_escalation']}",
            ", ".join(r["misses_targets"]) or "none"]


def table(runs: list[dict[str, Any]]) -> str:
    rows = [{(c["axis"], c["value"]): c for c in run["matrix"]["faultline"]} for run in runs]
    order = list(dict.fromkeys(k for r in rows for k in r))
    head = ["cell", "P / R", "worst kind P / R", "attrib", "hw max s", "gross steps",
            "10% med steps", "FP iso/esc", "misses targets"]
    if len(runs) == 2:
        head = ["cell", "run"] + head[1:]
    out = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for key in order:
        name = f"{key[0]}={key[1]}"
        if len(runs) == 1:
            out.append("| " + " | ".join([name, *_cell(rows[0].get(key))]) + " |")
        else:
            for i, label in enumerate(("before", "after")):
                out.append("| " + " | ".join([name if i == 0 else "", label,
                                               *_cell(rows[i].get(key))]) + " |")
    return "\n".join(out)


def main(argv: list[str]) -> int:
    if not 1 <= len(argv) <= 2 or any(a.startswith("-") for a in argv):
        print(__doc__, file=sys.stderr)
        return 0 if argv and argv[0] in ("-h", "--help") else 2
    runs = [json.loads(Path(p).read_text()) for p in argv]
    print(table(runs))
    for p, run in zip(argv, runs, strict=True):
        days = sum(lg["gpu_days"] for lg in run["logs"])
        crashed = [lg["file"] for lg in run["logs"] if lg.get("error")]
        print(f"\n{p}: {len(run['logs'])} logs, {days:.1f} GPU-days, evaluated in "
              f"{run['seconds']:.0f} s" + (f"; replay crashed on {', '.join(crashed)}"
                                            if crashed else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
