"""The detectors faultline is measured against, run over the same decoded event stream.

Each baseline takes the events ``faultline replay`` decodes and emits alert
envelopes (:class:`~detector.alerts.Alert`) that the same scorer judges:

- :class:`PrometheusRules` — what most clusters run: dcgm-exporter and
  node_exporter scraped by Prometheus every 15 s, four alerting rules
  evaluated every 15 s with ``for:`` durations, one alert per label set;
- :class:`StragglerScore` — NVIDIA nvidia-resiliency-ext style straggler
  detection: per-rank median compute time over a 60 s report window, scored
  against the best peer, flagged below 0.75.

Both are event-time simulations: a scrape, an evaluation or a report happens
when the stream's clock (the newest ``ts`` seen) passes its time, and sees
only what arrived before.

>>> from detector import testing as t
>>> prom = PrometheusRules()
>>> out = prom.feed(t.ecc(t.T0 + 1.0, "node-007", 3, xid=79))
>>> for s in range(1, 40):
...     out += prom.feed(t.thermal(t.T0 + s, "node-007", 3))
>>> [(a.dedup_key, a.status, a.scope.key) for a in out]
[('prom/GpuXidError/gpu:node-007/3', 'firing', 'gpu:node-007/3')]
>>> 0 < out[0].detected_ts - (t.T0 + 1.0) <= 30.0   # a scrape, then an evaluation
True
"""

from __future__ import annotations

import heapq
import math
import zlib
from collections import deque
from dataclasses import dataclass

import numpy as np

from detector.alerts import ESCALATION, ISOLATION, Action, Alert, Scope
from detector.events import EccSample, Event, NicSample, StepSample, ThermalSample


@dataclass(frozen=True)
class Rule:
    """One alerting rule: what it says and what an alert from it claims."""

    name: str
    expr: str  # PromQL it stands for, shown in the evidence
    for_s: float
    kind: str
    cause: str
    action: str


RULES = (
    # DCGM_FI_DEV_XID_ERRORS only holds the last code, so rules in the wild read
    # dcgm-exporter's DCGM_EXP_XID_ERRORS_COUNT (XIDs in the last 5 min) instead.
    Rule("GpuXidError", "DCGM_EXP_XID_ERRORS_COUNT > 0  (any XID code)", 0.0,
         "hardware", "gpu_hardware", "drain_gpu"),
    Rule("GpuTemperatureHigh", "DCGM_FI_DEV_GPU_TEMP > 85", 60.0,
         "slow_node", "thermal", "drain_gpu"),
    Rule("GpuDoubleBitError", "increase(DCGM_FI_DEV_ECC_DBE_VOL_TOTAL[1h]) > 0", 0.0,
         "hardware", "gpu_memory", "drain_gpu"),
    Rule("InfinibandLinkDown", "node_infiniband_state_id != 4 or "
         "increase(node_infiniband_link_downed_total[5m]) > 0", 0.0,
         "network", "nic", "check_link"),
)
_RULE = {r.name: r for r in RULES}


def _phase(name: str, period_s: float) -> float:
    """Prometheus spreads scrapes of different targets over the interval (by a hash)."""
    return (zlib.crc32(name.encode()) % 10_000) / 10_000 * period_s


class _Series:
    """The last scraped value of one series, and increments of a counter within a range."""

    __slots__ = ("value", "at", "last_counter", "bumps")

    def __init__(self) -> None:
        self.value = 0.0
        self.at = -math.inf
        self.last_counter: float | None = None
        self.bumps: deque[float] = deque()  # scrape times at which the counter went up

    def scrape_counter(self, v: float, at: float) -> None:
        prev = self.last_counter
        # Prometheus' increase(): a drop is a counter reset, the new value counts in full.
        if prev is not None and (v > prev or (v < prev and v > 0)):
            self.bumps.append(at)
        self.last_counter = v
        self.at = at

    def increased_within(self, now: float, range_s: float) -> bool:
        while self.bumps and self.bumps[0] <= now - range_s:
            self.bumps.popleft()
        return bool(self.bumps)


class PrometheusRules:
    """dcgm-exporter + node_exporter + Prometheus alerting rules, simulated in event time.

    The exporters hold the newest sample of each GPU and port; Prometheus
    scrapes each node every ``scrape_s`` (at its own phase), evaluates every
    rule every ``eval_s`` on the newest scraped value (5 min lookback; a node
    whose telemetry stopped for over a minute is a failed scrape), and keeps
    one alert per rule and label set: pending, firing once ``for_s`` has
    passed, resolved when the expression is false again. Alerts are
    isolations at the GPU or NIC port the series names; nothing aggregates
    them to a switch.
    """

    def __init__(self, scrape_s: float = 15.0, eval_s: float = 15.0, temp_c: float = 85.0,
                 xid_window_s: float = 300.0, lookback_s: float = 300.0,
                 stale_target_s: float = 60.0, end_extra_s: float = 30.0) -> None:
        self.scrape_s = scrape_s
        self.eval_s = eval_s
        self.temp_c = temp_c
        self.xid_window_s = xid_window_s
        self.lookback_s = lookback_s
        self.stale_target_s = stale_target_s
        self.end_extra_s = end_extra_s
        self.clock = -math.inf
        self._heap: list[tuple[float, int, str]] = []  # (time, 0 scrape / 1 eval, node)
        self._next_eval = math.inf
        # exporter side: newest sample per GPU / port
        self._node_seen: dict[str, float] = {}
        self._temp: dict[tuple[str, int], tuple[float, float]] = {}
        self._dbe: dict[tuple[str, int], tuple[float, float]] = {}
        self._xids: dict[tuple[str, int], deque[tuple[float, int]]] = {}
        self._link: dict[tuple[str, str, int], tuple[float, bool, float]] = {}
        self._gpus_of: dict[str, set[int]] = {}
        self._ports_of: dict[str, set[tuple[str, int]]] = {}
        # Prometheus side: scraped series and alert states
        self._scraped: dict[tuple[str, object], _Series] = {}
        self._alerts: dict[tuple[str, object], list[float]] = {}  # -> [active_at, firing(0/1)]

    # -- input ---------------------------------------------------------------------------

    def feed(self, ev: Event) -> list[Alert]:
        """Take one decoded telemetry record; returns alerts whose time came before it."""
        out: list[Alert] = []
        if isinstance(ev, StepSample):
            return out
        if ev.ts > self.clock:
            self._advance(ev.ts, out)
            self.clock = ev.ts
        node = ev.node
        if node not in self._node_seen:
            self._node_seen[node] = ev.ts
            first = self._after(ev.ts, _phase(node, self.scrape_s), self.scrape_s)
            heapq.heappush(self._heap, (first, 0, node))
            if self._next_eval == math.inf:
                self._next_eval = self._after(ev.ts, _phase("rules", self.eval_s), self.eval_s)
                heapq.heappush(self._heap, (self._next_eval, 1, ""))
        elif ev.ts > self._node_seen[node]:
            self._node_seen[node] = ev.ts
        if isinstance(ev, ThermalSample):
            key = (node, ev.gpu)
            self._gpus_of.setdefault(node, set()).add(ev.gpu)
            if ev.gpu_temp_c is not None and ev.ts >= self._temp.get(key, (-math.inf, 0.0))[0]:
                self._temp[key] = (ev.ts, ev.gpu_temp_c)
        elif isinstance(ev, EccSample):
            key = (node, ev.gpu)
            self._gpus_of.setdefault(node, set()).add(ev.gpu)
            if ev.xid:
                self._xids.setdefault(key, deque()).append((ev.ts, ev.xid))
            if ev.dbe_volatile is not None and ev.ts >= self._dbe.get(key, (-math.inf, 0.0))[0]:
                self._dbe[key] = (ev.ts, float(ev.dbe_volatile))
        elif isinstance(ev, NicSample):
            pkey = (node, ev.nic, ev.port)
            self._ports_of.setdefault(node, set()).add((ev.nic, ev.port))
            if ev.ts >= self._link.get(pkey, (-math.inf, True, 0.0))[0]:
                self._link[pkey] = (ev.ts, ev.link_state != "down", float(ev.link_downed or 0))
        return out

    def finish(self) -> list[Alert]:
        """End of input: let the last scrapes and evaluations happen."""
        out: list[Alert] = []
        if self.clock > -math.inf:
            self._advance(self.clock + self.end_extra_s, out)
        return out

    # -- Prometheus ------------------------------------------------------------------------

    @staticmethod
    def _after(ts: float, phase: float, period: float) -> float:
        return phase + math.ceil((ts - phase) / period) * period

    def _advance(self, now: float, out: list[Alert]) -> None:
        heap = self._heap
        while heap and heap[0][0] < now:
            at, what, node = heapq.heappop(heap)
            if what == 0:
                self._scrape(node, at)
                heapq.heappush(heap, (at + self.scrape_s, 0, node))
            else:
                self._evaluate(at, out)
                heapq.heappush(heap, (at + self.eval_s, 1, ""))

    def _scrape(self, node: str, at: float) -> None:
        if at - self._node_seen.get(node, -math.inf) > self.stale_target_s:
            return  # the exporter is not answering: no samples
        series = self._scraped
        for gpu in self._gpus_of.get(node, ()):
            key = (node, gpu)
            temp = self._temp.get(key)
            if temp is not None:
                s = series.setdefault(("temp", key), _Series())
                s.value, s.at = temp[1], at
            xids = self._xids.get(key)
            if xids is not None:
                while xids and xids[0][0] <= at - self.xid_window_s:
                    xids.popleft()
                s = series.setdefault(("xid", key), _Series())
                s.value, s.at = (float(xids[-1][1]) if xids else 0.0), at
            dbe = self._dbe.get(key)
            if dbe is not None:
                series.setdefault(("dbe", key), _Series()).scrape_counter(dbe[1], at)
        for nic, port in self._ports_of.get(node, ()):
            pkey = (node, nic, port)
            link = self._link.get(pkey)
            if link is None:
                continue
            s = series.setdefault(("link", pkey), _Series())
            s.value = 0.0 if link[1] else 1.0  # 1: down
            s.scrape_counter(link[2], at)

    def _evaluate(self, at: float, out: list[Alert]) -> None:
        fresh = at - self.lookback_s
        for (metric, key), s in self._scraped.items():
            if s.at < fresh:
                active = False
            elif metric == "temp":
                active = s.value > self.temp_c
            elif metric == "xid":
                active = s.value != 0.0
            elif metric == "dbe":
                active = s.increased_within(at, 3600.0)
            else:  # link
                active = s.value == 1.0 or s.increased_within(at, 300.0)
            rule = {"temp": "GpuTemperatureHigh", "xid": "GpuXidError",
                    "dbe": "GpuDoubleBitError", "link": "InfinibandLinkDown"}[metric]
            self._transition(_RULE[rule], key, active, at, s.value, out)

    def _transition(self, rule: Rule, key: object, active: bool, at: float, value: float,
                    out: list[Alert]) -> None:
        akey = (rule.name, key)
        state = self._alerts.get(akey)
        if active:
            if state is None:
                state = self._alerts[akey] = [at, 0.0]
            if not state[1] and at - state[0] >= rule.for_s:
                state[1] = 1.0
                out.append(self._alert(rule, key, "firing", state[0], at, value))
        elif state is not None:
            del self._alerts[akey]
            if state[1]:
                out.append(self._alert(rule, key, "resolved", state[0], at, value))

    @staticmethod
    def _alert(rule: Rule, key: object, status: str, active_at: float, at: float,
               value: float) -> Alert:
        if rule.name == "InfinibandLinkDown":
            node, nic, port = key  # type: ignore[misc]
            scope = Scope.of_nic(node, nic, port)
        else:
            node, gpu = key  # type: ignore[misc]
            scope = Scope.of_gpu(node, gpu)
        action = Action(rule.action, f"alert {rule.name} on {scope.key}",
                        "undo the drain once the unit passes diagnostics")
        return Alert(ISOLATION, f"prom/{rule.name}/{scope.key}", status, rule.kind, rule.cause,
                     scope, action, active_at, at, 1.0,
                     {"rule": rule.name, "expr": rule.expr, "for_s": rule.for_s,
                      "value": value})


class _JobWindow:
    """One job's compute times in the current report window, per rank."""

    __slots__ = ("start", "compute", "hw", "group", "flagged")

    def __init__(self, start: float) -> None:
        self.start = start
        self.compute: dict[int, list[float]] = {}
        self.hw: dict[int, tuple[str, int]] = {}
        self.group: dict[int, tuple[int, int]] = {}
        self.flagged: set[int] = set()


class StragglerScore:
    """NVIDIA-straggler-style relative scores over fixed report windows, in event time.

    Per rank, the median ``compute_ms`` over the report window; the rank's
    relative score is the best (lowest) median among its peers (same job,
    tp_rank and pp_rank, as a pipeline stage is never compared with another)
    divided by its own median: 1.0 for the fastest, lower for slower ranks, and
    NaN with no peer to compare with. A score below ``threshold`` at a report
    is a straggler: an escalation (``slow_node``, cause unknown — the score
    names no cause) on the rank's GPU, re-sent at every report that still
    flags it and resolved at the first that does not.

    >>> from detector import testing as t
    >>> det = StragglerScore()
    >>> out = []
    >>> for ev in t.healthy_job(ranks=8, steps=200, slow={5: 1.5}, slow_from=30):
    ...     out += det.feed(ev)
    >>> [(a.status, a.scope.key, round(a.detected_ts - t.T0)) for a in out]
    [('firing', 'gpu:node-000/5', 120), ('firing', 'gpu:node-000/5', 180)]

    Rank 5 turns 50 % slow half-way through the first window, whose median
    is still near its peers': the report at 60 s passes it, the next two flag
    it (the window cut short by the end of input is never reported).
    """

    def __init__(self, report_s: float = 60.0, threshold: float = 0.75,
                 min_steps: int = 3) -> None:
        self.report_s = report_s
        self.threshold = threshold
        self.min_steps = min_steps
        self._jobs: dict[str, _JobWindow] = {}

    def feed(self, ev: Event) -> list[Alert]:
        out: list[Alert] = []
        if not isinstance(ev, StepSample) or ev.compute_ms is None or ev.compute_ms <= 0:
            return out
        w = self._jobs.get(ev.job)
        if w is None:
            w = self._jobs[ev.job] = _JobWindow(ev.ts)
        if ev.ts < w.start:
            return out  # from a window already reported
        while ev.ts >= w.start + self.report_s:
            self._report(ev.job, w, w.start + self.report_s, out)
        w.compute.setdefault(ev.rank, []).append(ev.compute_ms)
        w.hw[ev.rank] = (ev.node, ev.gpu)
        w.group[ev.rank] = (ev.tp_rank, ev.pp_rank)
        return out

    def finish(self) -> list[Alert]:
        return []  # a window cut short by the end of input is never reported

    def scores(self, w: _JobWindow) -> dict[int, float]:
        """Relative score of each rank with enough steps in the window."""
        medians = {r: float(np.median(c)) for r, c in w.compute.items()
                   if len(c) >= self.min_steps}
        best: dict[tuple[int, int], list[float]] = {}
        for r, m in medians.items():
            best.setdefault(w.group[r], []).append(m)
        out = {}
        for r, m in medians.items():
            peers = best[w.group[r]]
            # alone in its group: nothing to compare with (NaN never flags)
            out[r] = min(peers) / m if len(peers) > 1 else math.nan
        return out

    def _report(self, job: str, w: _JobWindow, at: float, out: list[Alert]) -> None:
        scores = self.scores(w)
        flagged = {r for r, s in scores.items() if s < self.threshold}
        for r in sorted(flagged):
            out.append(self._alert(job, r, w, "firing", at, scores[r]))
        for r in sorted(w.flagged - flagged):
            if r in w.hw:
                out.append(self._alert(job, r, w, "resolved", at, scores.get(r, math.nan)))
        hw, groups = w.hw, w.group
        w.start = at
        w.compute = {}
        w.flagged = flagged
        w.hw, w.group = hw, groups  # ranks keep their place between windows

    def _alert(self, job: str, rank: int, w: _JobWindow, status: str, at: float,
               score: float) -> Alert:
        node, gpu = w.hw[rank]
        scope = Scope.of_gpu(node, gpu)
        action = Action("investigate", f"rank {rank} of {job} below {self.threshold} of its "
                        "best peer", "nothing was changed")
        return Alert(ESCALATION, f"straggler/{job}/{rank}", status, "slow_node", "unknown",
                     scope, action, at - self.report_s, at, 1.0,
                     {"relative_score": None if math.isnan(score) else round(score, 4),
                      "threshold": self.threshold, "report_window_s": self.report_s},
                     job)


BASELINES = {"prometheus-rules": PrometheusRules, "nvidia-straggler": StragglerScore}
"""Name -> factory of each baseline, in the order they are reported."""
