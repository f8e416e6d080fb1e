"""`make test`'s units of work (speed47): a test file runs on one worker, the heaviest first.

Round 46's `-n 2 --dist loadgroup` meant each test file to be one unit and every broker test
one unit ("broker"); under pytest 9.2 xdist's loadgroup never saw the marks, so every test was
a unit of its own: the workers split each file (each building its module fixtures) and both
started a broker (pytest-dev/pytest-xdist#1386). tests/conftest.py now decides the units
itself (FileScheduling: a file a unit, broker files too -- a worker starts a broker at its first
broker test, two at most). Which unit *starts* first is not read from the output here: reports
come as tests end, and a file's first test may end after a lighter file's on the other worker.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

pytest.importorskip("xdist")


def test_each_file_runs_on_one_worker_and_the_heaviest_two_on_two(tmp_path: Path) -> None:
    files = ["tests/test_events.py", "tests/test_audit.py", "tests/test_arrival_bounds.py"]
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("PYTEST_", "FAULTLINE_XDIST"))}
    out = subprocess.run(
        [sys.executable, "-m", "pytest", "-n", "2", "--dist", "loadgroup", "-v",
         "-p", "no:cacheprovider", "--basetemp", str(tmp_path / "base"), *files],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    workers: dict[str, set[str]] = defaultdict(set)
    for m in re.finditer(r"^\[(gw\d+)\] \[ *\d+%\] \w+ (tests/\S+?\.py)::", out.stdout, re.M):
        workers[m.group(2)].add(m.group(1))
    assert set(workers) == set(files), out.stdout[-3000:]
    assert all(len(w) == 1 for w in workers.values()), dict(workers)
    # the two heaviest (74 and 11 tests; the table names neither) go one to each worker
    table = json.loads((ROOT / "tests" / "durations.json").read_text())
    assert not set(files) & set(table), table
    assert workers[files[0]] != workers[files[1]], dict(workers)
