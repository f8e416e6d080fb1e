"""Per-NIC-port health from ``telemetry.nic``: link state, flaps, error rates, throughput.

Error counters (symbol, receive, packet-sequence, out-of-sequence) become
decaying rates so one stray symbol error is not a fault; ``link_downed``
increments are flaps.  Throughput is judged against the node's *other* ports:
in a rail-optimised fabric every port of a node carries about the same
traffic, so one port far below its siblings is a bad port, while all ports
dropping together is just the job pausing.

Besides verdicts, the first error on a port is reported as evidence: the
correlator counts such evidence across the nodes behind one switch to tell a
switch failure from a cable.
"""

from __future__ import annotations

from typing import Any

from detector.alerts import Scope
from detector.events import NIC_COUNTERS, NicSample
from detector.findings import Finding
from detector.thresholds import Thresholds
from models.counters import CounterDeltas, delta_reader
from models.decay import DecayingCount

_IDX = {name: i for i, name in enumerate(NIC_COUNTERS)}
# A sample's counters (NIC_COUNTERS order) to their deltas, compiled for these fields.
_read_deltas = delta_reader(NIC_COUNTERS)
_TX, _RX, _LINK_DOWNED = _IDX["tx_bytes"], _IDX["rx_bytes"], _IDX["link_downed"]
_ERRORS = tuple(_IDX[n] for n in ("symbol_errors", "rcv_errors", "packet_seq_err",
                                  "out_of_sequence"))
_E0, _E1, _E2, _E3 = _ERRORS
_NEVER = float("-inf")  # a port's last_ts before its first sample


class _Port:
    __slots__ = ("scope", "counters", "errors", "flaps", "gbps", "last_ts", "down", "low",
                 "low_onset", "ok", "active", "last_error_ts", "err_onset", "last_flap_ts",
                 "interval_s")

    def __init__(self, node: str, nic: str, port: int, cfg: Thresholds) -> None:
        self.scope = Scope.of_nic(node, nic, port)
        self.counters = CounterDeltas(len(NIC_COUNTERS))
        self.errors = DecayingCount(cfg.nic_error_half_life_s)
        self.flaps = DecayingCount(cfg.nic_flap_half_life_s)
        self.gbps: float | None = None
        self.last_ts = float("-inf")
        self.down = False
        self.low = 0
        self.low_onset = 0.0
        self.ok = 0
        self.active: set[str] = set()
        self.last_error_ts = float("-inf")
        self.err_onset = 0.0
        self.last_flap_ts = float("-inf")
        self.interval_s = 0.0  # gap between this port's last two samples (0: unknown)


class NodeNics:
    """All NIC ports of one node, so each port can be compared with its siblings."""

    __slots__ = ("node", "_ports", "_ref_gbps", "_ref_ts")

    def __init__(self, node: str) -> None:
        self.node = node
        self._ports: dict[tuple[str, int], _Port] = {}
        self._ref_gbps = 0.0          # median throughput of the node's ports, refreshed ~1/s
        self._ref_ts = float("-inf")

    @property
    def last_ts(self) -> float:
        """Time of the newest sample of any port of this node."""
        return max((p.last_ts for p in self._ports.values()), default=float("-inf"))

    def has_open_fault(self) -> bool:
        """A port down, or with a signal raised and not cleared."""
        return any(p.active or p.down for p in self._ports.values())

    def update(self, s: NicSample, cfg: Thresholds, out: list[Finding]) -> None:
        try:  # (a KeyError only on a port's first sample: cheaper than dict.get's call)
            p = self._ports[(s.nic, s.port)]
        except KeyError:
            p = self._ports[(s.nic, s.port)] = _Port(s.node, s.nic, s.port, cfg)
        ts = s.ts
        counters = p.counters
        prev_ts = p.last_ts
        resets = counters.resets
        d = _read_deltas(counters, ts, s)
        if d is None:
            return  # late or duplicate
        first = prev_ts == _NEVER
        dt = 0.0
        if not first:
            dt = p.interval_s = ts - prev_ts
        p.last_ts = ts
        # The healthy common case (link up, no flap, no error, nothing raised) decides nothing
        # in _link and _errors: skip the calls (this runs for every sample of every port).
        active = p.active
        if active or p.down or d[_LINK_DOWNED] or s.link_state == "down":
            self._link(p, s, d, cfg, out)
        if active or d[_E0] or d[_E1] or d[_E2] or d[_E3]:
            self._errors(p, s, d, cfg, out)
        if counters.resets == resets and not first:
            if dt > 0:
                p.gbps = (d[_TX] + d[_RX]) * 8e-9 / dt
            if ts - self._ref_ts >= 1.0:
                self._refresh_ref(ts)
            if p.low or "nic_throughput" in active or (
                    self._ref_gbps >= cfg.nic_busy_gbps
                    and p.gbps < cfg.nic_throughput_ratio * self._ref_gbps):  # type: ignore[operator]
                self._throughput(p, s, cfg, out)

    def _emit(self, out: list[Finding], s: NicSample, p: _Port, signal: str, active: bool,
              severity: float, evidence: dict[str, Any], *, verdict: bool = True,
              onset: float | None = None) -> None:
        if active:
            p.active.add(signal)
            if p.interval_s > 0.0:
                # How often this port is sampled: the switch window waits one such interval
                # for the other nodes behind the switch to report.
                evidence = {**evidence, "sample_interval_s": round(p.interval_s, 2)}
        else:
            p.active.discard(signal)
        out.append(Finding(s.ts, s.ts if onset is None else onset, signal, "network", "nic",
                           p.scope, active, verdict, severity, evidence, None, s.tenant,
                           s.cluster))

    def _link(self, p: _Port, s: NicSample, d: tuple[int, ...], cfg: Thresholds,
              out: list[Finding]) -> None:
        if s.link_state == "down" and not p.down:
            p.down = True
            self._emit(out, s, p, "link_down", True, 0.9, {"link_state": "down"})
        elif s.link_state == "up" and p.down:
            p.down = False
            self._emit(out, s, p, "link_down", False, 0.0, {})
        if d[_LINK_DOWNED]:
            p.last_flap_ts = s.ts
        elif "link_flap" not in p.active:
            return
        flaps = p.flaps.add(s.ts, d[_LINK_DOWNED])
        if "link_flap" not in p.active and flaps >= cfg.nic_flaps:
            self._emit(out, s, p, "link_flap", True, 0.85, {"recent_link_downed": round(flaps, 1)})
        elif "link_flap" in p.active and s.ts - p.last_flap_ts >= cfg.nic_quiet_s:
            p.flaps.reset()
            self._emit(out, s, p, "link_flap", False, 0.0, {})

    def _errors(self, p: _Port, s: NicSample, d: tuple[int, ...], cfg: Thresholds,
                out: list[Finding]) -> None:
        n = d[_ERRORS[0]] + d[_ERRORS[1]] + d[_ERRORS[2]] + d[_ERRORS[3]]
        if not n and not p.active:
            return  # the healthy common case
        level = p.errors.add(s.ts, n)
        if n:
            if "errors_seen" not in p.active:
                p.err_onset = s.ts
                self._emit(out, s, p, "errors_seen", True, 0.3, {"errors": n}, verdict=False)
            p.last_error_ts = s.ts
        elif "errors_seen" in p.active and s.ts - p.last_error_ts >= cfg.nic_quiet_s:
            self._emit(out, s, p, "errors_seen", False, 0.0, {}, verdict=False)
        if "nic_errors" not in p.active and level >= cfg.nic_errors:
            self._emit(out, s, p, "nic_errors", True, 0.85, {
                "recent_errors": round(level, 1), "limit": cfg.nic_errors,
                **{NIC_COUNTERS[i]: d[i] for i in _ERRORS if d[i]}}, onset=p.err_onset)
        elif "nic_errors" in p.active and s.ts - p.last_error_ts >= cfg.nic_quiet_s:
            p.errors.reset()
            self._emit(out, s, p, "nic_errors", False, 0.0, {})

    def _refresh_ref(self, ts: float) -> None:
        # The node's median port: with a port or two bad out of many, still the healthy rate.
        rates = [o.gbps for o in self._ports.values() if o.gbps is not None]
        rates.sort()
        self._ref_gbps = rates[len(rates) // 2] if len(rates) > 1 else 0.0
        self._ref_ts = ts

    def _throughput(self, p: _Port, s: NicSample, cfg: Thresholds, out: list[Finding]) -> None:
        """A port low against the node's median (refreshed by the caller), or one recovering."""
        ref = self._ref_gbps
        low = ref >= cfg.nic_busy_gbps and p.gbps < cfg.nic_throughput_ratio * ref  # type: ignore[operator]
        if low:
            if p.low == 0:
                p.low_onset = s.ts
            p.low += 1
            p.ok = 0
        elif not p.low and "nic_throughput" not in p.active:
            return
        else:
            p.low = 0
            p.ok += 1
        if "nic_throughput" not in p.active and p.low >= cfg.nic_throughput_samples:
            self._emit(out, s, p, "nic_throughput", True, 0.75, {
                "gbps": round(p.gbps, 2), "node_median_gbps": round(ref, 2)},  # type: ignore[arg-type]
                onset=p.low_onset)
        elif "nic_throughput" in p.active and p.ok >= cfg.nic_throughput_samples:
            self._emit(out, s, p, "nic_throughput", False, 0.0, {})
