"""The test suite's time per unit of work, for `make test`'s scheduler (tests/durations.json).

`make test` runs pytest on two workers; tests/conftest.py hands the broker group (every test
needing the Kafka broker or the servers) to the first worker and then the heaviest test file
left to the next free one, weighing each file by tests/durations.json. This script writes that
table from what pytest reports of a run: `--durations=N` lines in its output, or a `--junitxml`
file.

    python -m pytest -n 2 --dist loadgroup --durations=0 | tee run.log
    python bench/suite_time.py run.log --write tests/durations.json

Several inputs (runs of different file sets, e.g. landing gates' `--durations=80`): each
test phase's median over the inputs that timed it, summed per file. A file no input timed is
left out (the scheduler weighs it by its test count). The table orders work only: stale
figures cost minutes, never a test.
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import sys
import xml.etree.ElementTree as ET
from collections import defaultdict
from pathlib import Path

_LINE = re.compile(r"^(\d+(?:\.\d+)?)s (call|setup|teardown)\s+(\S.*?)\s*$")


def read_durations(path: Path) -> dict[tuple[str, str], float]:
    """{(node id, phase): seconds} of one run's `--durations` lines or junit xml."""
    if path.suffix == ".xml":
        out: dict[tuple[str, str], float] = {}
        for case in ET.parse(path).iter("testcase"):
            cls, name = case.get("classname", ""), case.get("name", "")
            if not cls:
                continue
            # junit's classname is the dotted module (and class): tests.test_x[.TestC]
            parts = cls.split(".")
            k = next((i for i in range(len(parts), 0, -1)
                      if Path("/".join(parts[:i]) + ".py").exists()), len(parts))
            nodeid = "::".join(["/".join(parts[:k]) + ".py", *parts[k:], name])
            out[(nodeid, "all")] = float(case.get("time", 0.0))
        return out
    out = {}
    for line in path.read_text(errors="replace").splitlines():
        m = _LINE.match(line)
        if m:
            out[(m.group(3), m.group(2))] = float(m.group(1))
    return out


def unit_seconds(runs: list[dict[tuple[str, str], float]]) -> dict[str, float]:
    """{test file: seconds}: each test phase's median over the runs that timed it, summed."""
    seen: dict[tuple[str, str], list[float]] = defaultdict(list)
    for run in runs:
        for key, s in run.items():
            seen[key].append(s)
    units: dict[str, float] = defaultdict(float)
    for (nodeid, _), s in seen.items():
        units[nodeid.split("::", 1)[0]] += statistics.median(s)
    return dict(units)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("inputs", nargs="+", type=Path, help="pytest output logs or junit xml files")
    ap.add_argument("--min-seconds", type=float, default=2.0,
                    help="leave out units lighter than this (default 2 s)")
    ap.add_argument("--write", type=Path, help="write the table here (default: print it)")
    args = ap.parse_args(argv)
    units = unit_seconds([read_durations(p) for p in args.inputs])
    table = {u: round(s, 1) for u, s in sorted(units.items(), key=lambda kv: -kv[1])
             if s >= args.min_seconds}
    text = json.dumps(table, indent=0) + "\n"
    if args.write:
        args.write.write_text(text)
        print(f"{args.write}: {len(table)} units, {sum(table.values()):.0f} s", file=sys.stderr)
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
