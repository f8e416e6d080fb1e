"""Room fixes2 (round 8): the figures of BENCHMARKS.md "fixes2, round 8" for harden's state rows.

    PYTHONPATH=$PWD python bench/fixes2_state.py
"""

from __future__ import annotations

from typing import Any

from detector.engine import Engine
from detector.steps import JobMonitor
from detector.testing import T0, feed, healthy_job, nic, step


def main() -> None:
    eng = Engine()
    for m in range(180):  # a new NIC name a minute on a live node, for 3 h
        ts = T0 + 60.0 * m
        for k in range(2):
            eng.process(nic(ts, "node-000", f"mlx5_{k}"))
        eng.process(nic(ts + 1.0, "node-000", f"renamed{m}"))
    print("ports after 3 h:", len(eng.monitors._nics["node-000"]._ports))

    calls = [0]
    expire = JobMonitor.expire

    def counted(self: JobMonitor, *args: Any, **kwargs: Any) -> None:
        calls[0] += 1
        expire(self, *args, **kwargs)

    JobMonitor.expire = counted  # type: ignore[method-assign]
    eng = Engine()
    per = []
    for part in range(3):  # 100 one-message jobs a second of event time
        before = calls[0]
        for i in range(2000 * part, 2000 * (part + 1)):
            eng.process(step(T0 + 0.01 * i, 0, 0, job=f"stray-{i}"))
        per.append((calls[0] - before) / 2000)
    JobMonitor.expire = expire  # type: ignore[method-assign]
    print("expire calls a record, 3 x 2,000 one-message jobs:", per)

    events = list(healthy_job(ranks=2, steps=120, seed=3))
    eng = Engine()
    feed(eng, [*events[:100], step(events[100].ts, 0, 1 << 62), *events[100:]])
    print("restarts after one far step in a 2-rank job:", eng.stats()["job_restarts"])


if __name__ == "__main__":
    main()
