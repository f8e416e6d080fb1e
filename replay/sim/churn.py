"""A fleet that churns: nodes replaced every few minutes, jobs coming and going, some faults.

For the state-bound test and ``bench/state_churn.py``: healthy telemetry from
``nodes`` nodes of ``gpus`` GPUs and ``nics`` NIC ports, one sample per unit
every ``sample_s``; every ``replace_every_s`` the oldest node leaves for good
and a node with a new name joins (a fleet being drained, repaired, renamed).
Every ``fault_every`` replacements, the leaving node raises an XID 79 (a
latched hardware problem) five minutes before it goes.  A job of one rank per GPU
runs on the current nodes and is replaced by a new job every ``job_s``.

>>> evs = list(churn_events(hours=0.5, nodes=2, gpus=1, nics=1, sample_s=60.0))
>>> len(evs), len({e.node for e in evs})
(240, 4)
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterator

from detector.events import Event
from detector.testing import T0, ecc, nic, step, thermal


def churn_events(*, hours: float = 24.0, nodes: int = 8, gpus: int = 8, nics: int = 4,
                 sample_s: float = 30.0, replace_every_s: float = 600.0,
                 fault_every: int = 12, job_s: float = 7200.0, t0: float = T0
                 ) -> Iterator[Event]:
    """Telemetry of a churning fleet, in time order."""
    fleet = deque(f"node-{i:05d}" for i in range(nodes))
    born = {n: t0 for n in fleet}
    next_id = nodes
    replaced = 0
    end = t0 + hours * 3600.0
    next_replace = t0 + replace_every_s
    n_ticks = int(hours * 3600.0 / sample_s)
    for k in range(n_ticks):
        ts = t0 + k * sample_s
        while ts >= next_replace and next_replace < end:
            gone = fleet.popleft()
            born.pop(gone)
            fleet.append(name := f"node-{next_id:05d}")
            born[name] = next_replace
            next_id += 1
            replaced += 1
            next_replace += replace_every_s
        # The next node to leave raises an XID now and then (a latched problem).
        doomed = fleet[0] if (replaced + 1) % fault_every == 0 else None
        fault_due = next_replace - 300.0
        job = f"job-{int((ts - t0) // job_s)}"
        step_no = int(((ts - t0) % job_s) // sample_s)
        for n, node in enumerate(fleet):
            age = ts - born[node]
            traffic = int(age * 1e9)
            for g in range(gpus):
                off = 0.001 * (n * gpus + g)
                xid = 79 if (node == doomed and g == 0
                             and fault_due <= ts < fault_due + sample_s) else None
                yield thermal(ts + off, node, g)
                yield ecc(ts + off + 0.2, node, g, xid=xid)
                yield step(ts + off + 0.4, n * gpus + g, step_no, job=job, node=node, gpu=g)
            for p in range(nics):
                yield nic(ts + 0.3 + 0.001 * p, node, f"mlx5_{p}", tx=traffic, rx=traffic)
