"""What one step's evaluation does, counted: Python lines and calls, the job's per-slot arrays
read or written through a fancy index, and numpy's Python wrappers called (perf44, issue 14).

The incident's step messages (the first ``--prefix`` records of the log, the step topic
alone) go through the service's worker as bench/pipeline_throughput.py hands them over; inside
each ``JobMonitor._evaluate`` a tracer counts the line events and calls by function, and the
job's ``_SLOT_ARRAYS`` (detector.steps.common) are handed out as a counting view, so each
``X[slots]`` gather and ``X[slots] = v`` scatter is counted by array.  Counts a step, not time:
a yardstick of what a structural change to the step path could remove (instructions an
operation: callgrind, BENCHMARKS "perf44, round 44").

    python bench/step_census.py [--prefix 120000] [--top 30]

Slow (the tracer): ~1 minute for the default prefix on a quiet box.
"""

from __future__ import annotations

import argparse
import collections
import sys
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from engine_throughput import DEFAULT_LOG, DEFAULT_TOPOLOGY, load  # noqa: E402
from pipeline_throughput import partitioned, run_pipeline  # noqa: E402

from detector.events import STEP  # noqa: E402
from detector.steps import common  # noqa: E402
from detector.steps.job import JobMonitor  # noqa: E402
from detector.topology import Topology  # noqa: E402


class _Counted(np.ndarray):
    """A slot array's view that counts fancy-index reads and writes into ``census``."""

    census: collections.Counter[tuple[str, str]]
    name: str

    def __getitem__(self, key: Any) -> Any:
        if isinstance(key, (np.ndarray, list)):
            self.census["gather", self.name] += 1
        got = super().__getitem__(key)
        return got.view(np.ndarray) if isinstance(got, np.ndarray) else got

    def __setitem__(self, key: Any, value: Any) -> None:
        if isinstance(key, (np.ndarray, list)):
            self.census["scatter", self.name] += 1
        super().__setitem__(key, value)


def census(prefix: int) -> dict[str, Any]:
    """Counts a step of the first ``prefix`` records' step messages (see the module)."""
    topo = Topology.load(str(DEFAULT_TOPOLOGY))
    msgs = [m for m in load(DEFAULT_LOG)[:prefix] if m[0] == STEP]
    slots: collections.Counter[tuple[str, str]] = collections.Counter()
    lines: collections.Counter[str] = collections.Counter()
    calls: collections.Counter[str] = collections.Counter()
    names = {name for name, _ in common._SLOT_ARRAYS}
    steps = 0
    own = __file__

    def where(code: Any) -> str:
        return f"{Path(code.co_filename).name}:{code.co_name}"

    def on_line(frame: Any, event: str, arg: Any) -> Any:
        if event == "line":
            lines[where(frame.f_code)] += 1
        return on_line

    def on_call(frame: Any, event: str, arg: Any) -> Any:
        if event == "call" and frame.f_code.co_filename != own:  # (not the census' own frames)
            calls[where(frame.f_code)] += 1
            return on_line
        return None

    plain_get = JobMonitor.__getattribute__
    plain_evaluate = JobMonitor._evaluate

    def counted_get(self: JobMonitor, name: str) -> Any:
        value = plain_get(self, name)
        if name in names and type(value) is np.ndarray:
            view = value.view(_Counted)
            view.census, view.name = slots, name
            return view
        return value

    def evaluate(self: JobMonitor, *args: Any, **kwargs: Any) -> Any:
        nonlocal steps
        steps += 1
        sys.settrace(on_call)
        try:
            return plain_evaluate(self, *args, **kwargs)
        finally:
            sys.settrace(None)

    JobMonitor.__getattribute__ = counted_get  # type: ignore[method-assign]
    JobMonitor._evaluate = evaluate  # type: ignore[method-assign]
    try:
        run_pipeline(partitioned(msgs, 8), topo, 40, 20)
    finally:
        JobMonitor.__getattribute__ = plain_get  # type: ignore[method-assign]
        JobMonitor._evaluate = plain_evaluate  # type: ignore[method-assign]
    # (numpy's Python frames: a wrapper and its __array_function__ dispatcher are two)
    wrappers = {k: v for k, v in calls.items()
                if k.split(":")[0] in ("numeric.py", "fromnumeric.py", "_methods.py",
                                       "multiarray.py", "function_base.py", "shape_base.py")}
    return {"steps": steps, "messages": len(msgs), "lines": lines, "calls": calls,
            "slots": slots, "wrappers": wrappers}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--prefix", type=int, default=120000, help="records of the incident")
    ap.add_argument("--top", type=int, default=30, help="functions listed")
    args = ap.parse_args()
    c = census(args.prefix)
    n = max(c["steps"], 1)
    kinds = collections.Counter()
    for (kind, _), v in c["slots"].items():
        kinds[kind] += v
    print(f"{c['steps']:,} steps evaluated ({c['messages']:,} step messages of the first "
          f"{args.prefix:,} records); a step:")
    print(f"  Python lines {sum(c['lines'].values()) / n:,.0f}, Python calls "
          f"{sum(c['calls'].values()) / n:,.0f}, of them numpy's Python frames (wrappers "
          f"and dispatchers) {sum(c['wrappers'].values()) / n:,.1f}")
    print(f"  slot arrays: {kinds['gather'] / n:.1f} gathers, {kinds['scatter'] / n:.1f} "
          f"scatters (X[slots]) over {len({a for _, a in c['slots']})} arrays")
    print("lines a step, calls a step, function:")
    for k, v in c["lines"].most_common(args.top):
        print(f"  {v / n:7.1f} {c['calls'][k] / n:6.1f}  {k}")
    print("numpy's Python frames, calls a step:")
    for k, v in sorted(c["wrappers"].items(), key=lambda kv: -kv[1]):
        print(f"  {v / n:7.1f}  {k}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
