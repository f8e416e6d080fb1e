"""Two of the three figures of every fault report: isolation granularity and recovery time.

Detection latency is ``detected_ts - onset_ts``.  The other two say what acting on an
alert costs: how much of the work isolating its scope takes out (GPUs, ranks,
data-parallel replicas, share of the job), and how long until the job runs again
(estimated at firing from the action and the job's checkpoint settings; measured, from
onset to resolution, on the resolved message).

Where ranks run is learned from ``job_layout`` findings (the step monitor sends one
when a rank first appears or moves), so the correlator knows it on its own partition.

>>> lay = Placement()
>>> lay.learn("job-1", [[r, f"node-{r // 8}", r % 8, r] for r in range(32)])
>>> from detector.alerts import Scope
>>> g = lay.granularity(Scope.of_node("node-1"), None, "job-1")
>>> (g.gpus, g.ranks, g.dp_replicas, g.share_of_job)
(8, 8, 8, 0.25)
>>> estimate("drain_node", "slow_node", 0.0, 2.0, 1800.0, 300.0).estimate_s
1200.0
"""

from __future__ import annotations

import math
from typing import Any

from detector.alerts import Granularity, Recovery, Scope
from detector.statecodec import is_map_of, is_time
from detector.topology import Topology

_RESTART_ACTIONS = {
    "drain_gpu": "drain the GPU", "drain_node": "drain the node",
    "isolate_replica": "restart without the replica", "drain_switch": "drain the switch",
    "reset_gpu": "reset the GPU", "check_link": "exclude the port (or drain the node)",
}


def estimate(action: str, kind: str, onset_ts: float, detected_ts: float,
             checkpoint_interval_s: float, restart_s: float, *, at_jobs_end: bool = False
             ) -> Recovery:
    """Time until the job trains again if the action is taken now.

    Every recommendation ends in a restart from a checkpoint without the unit: the
    restart itself plus, on average, half a checkpoint interval of work redone.  Silent
    data corruption must go back to the last checkpoint *before* its onset, so the time
    since the onset is redone as well.  An escalation adds the time a human takes to
    decide, which is not known here.  ``at_jobs_end``: the action waits for the running
    job to end (a row remap pending: the GPU reset that activates it, detector.playbook),
    so the job loses nothing -- no restart, no work redone.
    """
    half = checkpoint_interval_s / 2
    settings = (f"checkpoint interval {checkpoint_interval_s:.0f} s, restart "
                f"{restart_s:.0f} s")
    if action == "reset_clocks":  # (a clock setting reset under the running job)
        return Recovery(0.0, "reset the clock settings: the running job is not stopped, "
                        "nothing is redone (its steps back at its peers' pace)")
    if at_jobs_end and kind != "sdc":
        what = _RESTART_ACTIONS.get(action, "act")
        return Recovery(0.0, f"{what} at the job's end: the running job is not stopped, "
                        "nothing is redone (the next job on the unit waits for it)")
    if kind == "sdc":
        since = max(0.0, detected_ts - onset_ts)
        what = _RESTART_ACTIONS.get(action, "once a human confirms the GPU, drain it")
        return Recovery(round(restart_s + half + since, 1),
                        f"{what} + restart from the last checkpoint before the onset: restart, "
                        f"half an interval on average and the {since:.0f} s since the onset "
                        f"redone ({settings})")
    typical = round(restart_s + half, 1)
    if action in _RESTART_ACTIONS:
        return Recovery(typical, f"{_RESTART_ACTIONS[action]} + restart from the last "
                        f"checkpoint: restart + half an interval of work redone on average "
                        f"({settings})")
    return Recovery(typical, "needs a human first (not counted); then drain the unit + restart "
                    f"from the last checkpoint ({settings})")


def _fits(x: tuple[Any, ...], types: tuple[type, ...]) -> bool:
    return len(x) == len(types) and all(type(v) is t for v, t in zip(x, types, strict=True))


class Placement:
    """Where each rank of each job runs, and which replica it belongs to (plain data)."""

    __slots__ = ("ranks", "on_node", "since")

    def __init__(self) -> None:
        self.ranks: dict[str, dict[int, tuple[str, int, int]]] = {}   # job -> rank -> hw, dp
        self.on_node: dict[str, dict[tuple[str, int], tuple[int, int]]] = {}  # node ->
        #                                                   (job, rank) -> (gpu, dp)
        # (job, rank) -> the event time of the layout that put the rank on its GPU (a rank
        # told again where it was keeps its first): which job a GPU was laid out for last
        self.since: dict[tuple[str, int], float] = {}

    def learn(self, job: str, placement: Any, ts: float = -math.inf) -> None:
        """Take ``[[rank, node, gpu, dp], ...]`` (a job_layout finding's evidence, of event
        time ``ts``)."""
        ranks = self.ranks.setdefault(job, {})
        when = ts if type(ts) in (float, int) and not math.isnan(ts) else -math.inf
        for item in placement if isinstance(placement, list) else ():
            try:
                rank, node, gpu, dp = int(item[0]), str(item[1]), int(item[2]), int(item[3])
            except (TypeError, ValueError, IndexError):
                continue
            old = ranks.get(rank)
            key = (job, rank)
            if old is not None:
                self.on_node.get(old[0], {}).pop(key, None)
            first = self.since.get(key, when) if old is not None and old[:2] == (node, gpu) \
                else when
            ranks[rank] = (node, gpu, dp)
            self.on_node.setdefault(node, {})[key] = (gpu, dp)
            self.since[key] = min(first, when)

    def restored_ok(self) -> bool:
        """Whether a restored placement has the shapes :meth:`learn` gives it (a snapshot is
        rebuilt from fields of any type: a ``since`` time that is a string failed every
        application XID's "which job is on this GPU", :meth:`last_on`)."""
        ranks, on_node, since = (getattr(self, n, None) for n in self.__slots__)
        return is_map_of(ranks, str, dict) and all(
            is_map_of(r, int, tuple) and all(_fits(v, (str, int, int)) for v in r.values())
            for r in ranks.values()) and is_map_of(on_node, str, dict) and all(
            is_map_of(o, tuple, tuple) and all(
                _fits(k, (str, int)) and _fits(v, (int, int)) for k, v in o.items())
            for o in on_node.values()) and is_map_of(since, tuple, (float, int)) and all(
            _fits(k, (str, int)) and is_time(t) for k, t in since.items())

    def forget(self, job: str) -> None:
        for rank, (node, _, _) in self.ranks.pop(job, {}).items():
            self.on_node.get(node, {}).pop((job, rank), None)
            self.since.pop((job, rank), None)

    def last_on(self, node: str, gpu: int) -> str | None:
        """The job laid out on ``gpu`` of ``node`` last: by its layout's event time, not the
        order layouts reached us (a lagging partition, a source that tells a layout late or
        again); equal times (or none told) by the order learned.  A job that ended is
        remembered ``job_idle_s`` beside the one that took its GPU."""
        found, when = None, -math.inf
        since = self.since
        for key, (g, _) in self.on_node.get(node, {}).items():
            if g == gpu:
                t = since.get(key, -math.inf)
                if t >= when:
                    found, when = key[0], t
        return found

    def granularity(self, scope: Scope, topology: Topology | None,
                    job: str | None) -> Granularity:
        """What isolating ``scope`` takes out; counts the layout or the topology cannot give
        are None."""
        lv = scope.level
        hit: list[tuple[str, int, str, int, int]] = []   # (node, gpu, job, rank, dp)
        gpus: int | None = None
        if lv in ("replica", "job"):
            for rank, (node, gpu, dp) in self.ranks.get(scope.job or "", {}).items():
                if lv == "job" or dp == scope.dp_rank:
                    hit.append((node, gpu, scope.job or "", rank, dp))
            gpus = len({(n, g) for n, g, *_ in hit}) if hit else None
        else:
            nodes = self._nodes(scope, topology)
            if not nodes:
                return Granularity()
            for node in nodes:
                for (j, rank), (gpu, dp) in self.on_node.get(node, {}).items():
                    if lv != "gpu" or gpu == scope.gpu:
                        hit.append((node, gpu, j, rank, dp))
            if lv == "gpu":
                gpus = 1
            elif topology is not None and all(topology.gpus_of(n) > 0 for n in nodes):
                gpus = sum(topology.gpus_of(n) for n in nodes)
            elif hit:
                gpus = len({(n, g) for n, g, *_ in hit})
        if not self.ranks:
            return Granularity(gpus)  # no job's layout heard of: nothing known about ranks
        jobs = {j for _, _, j, _, _ in hit}
        replicas = {(j, dp) for _, _, j, _, dp in hit}
        target = job if job in self.ranks else (next(iter(jobs)) if len(jobs) == 1 else None)
        share = None
        if target is not None:
            total = {dp for _, _, dp in self.ranks[target].values()}
            if total:
                share = round(len({dp for j, dp in replicas if j == target}) / len(total), 4)
        return Granularity(gpus, len(hit), len(replicas), share, len(jobs))

    @staticmethod
    def _nodes(scope: Scope, topology: Topology | None) -> list[str] | None:
        if scope.node is not None:
            return [scope.node]
        if topology is None:
            return None
        if scope.level == "switch" and scope.switch:
            return list(topology.nodes_below(scope.switch))
        if scope.level == "domain" and scope.domain:
            return list(topology.nodes_in_domain(scope.domain))
        return None
