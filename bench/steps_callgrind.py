"""Instructions per step record of the step path and of each part of it, counted by callgrind
(rooms steps, rounds 5-8: the yardstick of BENCHMARKS.md "Speed, round 8: a step's evaluation").

Step records 0..10,000 of the bundled incident (decoded, in log order) warm one JobMonitor
per job; records 10,000..25,000 are counted, PYTHONHASHSEED=0.  Each part is counted alone,
in a run of its own, inside a ``functools.reduce`` (``valgrind --toggle-collect``):

    whole         JobMonitor.add over the counted records (everything the step path does)
    noop          the harness's own cost a record (the job's monitor looked up)
    _evaluate, _check_slow, ...   that JobMonitor method (or peer_stats / steps function,
                  CusumBank.step, _StepBuffer.columns), each call wrapped

    python bench/steps_callgrind.py [PART ...]     # default: the parts of the round-8 table

Run it in two trees for an A/B (each part ~30 s of CPU under valgrind).  ``--inner PART`` is
the mode it runs under valgrind.
"""

from __future__ import annotations

import argparse
import functools
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

PARTS = ["noop", "whole", "_evaluate", "columns", "_check_slow", "_check_grad",
         "_check_checksums", "_replica_common", "step", "_track_hardware", "learn_layout",
         "derive_layout", "_busy", "group_stats"]
WARM, END = 10_000, 25_000
_FUNCS = ("group_stats", "group_median", "median", "learn_layout", "derive_layout",
          "sorted_rows", "_floats", "_ints")


def _reduced(fn: Any) -> Any:
    def w(*a: Any, **k: Any) -> Any:
        return functools.reduce(lambda _, __: fn(*a, **k), (0,), None)
    return w


def inner(part: str) -> tuple[int, int]:
    """The run under valgrind: (records counted, findings)."""
    import orjson

    from detector import steps as st
    from detector.decoding import decode
    from detector.events import STEP, InvalidMessage, StepSample
    from detector.thresholds import Thresholds
    from models import cusum_bank, peer_stats
    from replay.log import open_log

    events: list[StepSample] = []
    with open_log(ROOT / "replay" / "incidents" / "h100-128-all-faults.jsonl.gz") as f:
        for line in f:
            rec = orjson.loads(line)
            if rec["topic"] != STEP:
                continue
            try:
                e = decode(STEP, orjson.dumps(rec["value"]))
            except InvalidMessage:
                e = None
            if isinstance(e, StepSample):
                events.append(e)
            if len(events) >= END:
                break
    cfg = Thresholds()
    mons: dict[str, st.JobMonitor] = {}
    out: list[Any] = []

    def monitor(_: Any, e: StepSample) -> st.JobMonitor:
        m = mons.get(e.job)
        if m is None:
            m = mons[e.job] = st.JobMonitor(e.job, cfg)
        return m

    def feed(_: Any, e: StepSample) -> None:
        monitor(None, e).add(e, out)

    for e in events[:WARM]:
        feed(None, e)
    rest = events[WARM:]
    if part in ("whole", "noop"):
        functools.reduce(feed if part == "whole" else monitor, rest, None)
        return len(rest), len(out)
    if part == "columns":
        st._StepBuffer.columns = _reduced(st._StepBuffer.columns)  # type: ignore[method-assign]
    elif part in ("update", "step"):
        setattr(cusum_bank.CusumBank, part, _reduced(getattr(cusum_bank.CusumBank, part)))
    elif part == "_busy":
        st.JobMonitor._busy = staticmethod(_reduced(st.JobMonitor._busy))  # type: ignore[method-assign]
    elif part in _FUNCS:
        fn = _reduced(getattr(peer_stats, part, None) or getattr(st, part))
        for mod in (peer_stats, *[m for n, m in sys.modules.items()
                                  if n.startswith("detector.steps")]):
            if hasattr(mod, part):
                setattr(mod, part, fn)
    else:
        setattr(st.JobMonitor, part, _reduced(getattr(st.JobMonitor, part)))
    for e in rest:
        feed(None, e)
    return len(rest), len(out)


def count(part: str) -> tuple[int, int, int]:
    """(instructions, records, findings) of one part under callgrind."""
    with tempfile.TemporaryDirectory(prefix="steps-callgrind-") as tmp:
        out = Path(tmp) / "cg.out"
        env = {**os.environ, "PYTHONHASHSEED": "0", "PYTHONPATH": str(ROOT)}
        run = subprocess.run(
            ["valgrind", "--tool=callgrind", "--toggle-collect=functools_reduce",
             f"--callgrind-out-file={out}", sys.executable, __file__, "--inner", part],
            env=env, cwd=ROOT, capture_output=True, text=True, check=True)
        records, findings = map(int, run.stdout.split()[-2:])
        total = re.search(r"^summary: (\d+)", out.read_text(errors="replace"), re.M)
        assert total is not None, "no summary line in the callgrind output"
        return int(total.group(1)), records, findings


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("parts", nargs="*", default=PARTS)
    ap.add_argument("--inner", default=None, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.inner is not None:
        print(*inner(args.inner))
        return 0
    for part in args.parts:
        total, records, findings = count(part)
        print(f"{part:18s} {total / records:9,.0f} instructions a step record "
              f"({records:,} records, {findings} findings, {total:,})", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
