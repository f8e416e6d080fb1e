"""The simulator's cumulative-counter topics: NIC ports (1 s) and GPU ECC/XID health (5 s).

Counters only grow, as the hardware reports them, except when a reset
(driver reload, GPU reset) drops them to zero. XIDs are events: a separate
``telemetry.ecc`` message at the event's own time carrying the counters as
of that moment; periodic samples carry ``xid: null``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from detector.events import ECC, NIC
from replay.sim.effects import EccEvent
from replay.sim.model import NO_TAGS, Cadence, Record
from replay.sim.plan import Placement, Scenario, ecc_baseline, rng_for
from replay.sim.schedule import Schedule

_NIC_ERRORS = ("symbol_errors", "link_downed", "rcv_errors", "xmit_discards", "out_of_sequence",
               "packet_seq_err")
_NIC_FIELDS = ("tx_bytes", "rx_bytes", "symbol_errors", "link_downed", "rcv_errors",
               "xmit_discards", "xmit_wait", "out_of_sequence", "packet_seq_err", "np_cnp_sent",
               "rp_cnp_handled")
RATE_GBPS = 400.0


class NicGen:
    """telemetry.nic: one sample per port per second; bytes and congestion counters always grow."""

    def __init__(self, sc: Scenario, pl: Placement, sched: Schedule, cluster: str) -> None:
        n = len(pl.ports)
        rng = rng_for(sc.seed, "nic-static")
        self.seed, self.sched = sc.seed, sched
        self.n_nodes, self.port_node = len(pl.nodes), pl.port_node
        self.phase = rng.random(n)
        self.bytes_s = float(rng.uniform(18e9, 26e9)) * (1 + 0.02 * rng.standard_normal(n))
        self.lam_wait = rng.uniform(500, 5000, n)
        self.lam_cnp = rng.uniform(5, 80, n)
        c: dict[str, np.ndarray] = {f: np.zeros(n, dtype=np.int64) for f in _NIC_FIELDS}
        c["tx_bytes"] = rng.integers(10**12, 5 * 10**14, n)
        c["rx_bytes"] = c["tx_bytes"] + rng.integers(0, 10**11, n)
        c["symbol_errors"] = np.where(rng.random(n) < 0.05, rng.integers(1, 6, n), 0)
        c["link_downed"] = np.where(rng.random(n) < 0.1, rng.integers(1, 3, n), 0)
        c["rcv_errors"] = np.where(rng.random(n) < 0.02, rng.integers(1, 4, n), 0)
        c["xmit_wait"] = rng.integers(10**6, 10**9, n)
        c["np_cnp_sent"] = rng.integers(10**4, 10**7, n)
        c["rp_cnp_handled"] = rng.integers(10**4, 10**7, n)
        self.c = {f: v.astype(np.int64) for f, v in c.items()}
        self.was_down = np.zeros(n, dtype=bool)
        self.deferred: list[int] = []  # ports whose reset falls after this slice's sample
        self.ids = list(pl.ports)
        self.cluster, self.tenant = cluster, sc.job.tenant
        self._next_reset = 0
        self.cadence = (None if sc.axes.interval == "1-per-gpu" else
                        Cadence(sc.seed, "nic", sc.axes.interval_s, pl.port_node, len(pl.nodes)))
        self.held: dict[int, list[int]] = {}  # fault tags of counts not yet reported, per port

    def _zero(self, p: int) -> None:
        for v in self.c.values():
            v[p] = 0

    def slice(self, sl: int, t0: float, out: list[Record]) -> None:
        n = len(self.ids)
        if not n:
            return
        r = rng_for(self.seed, "nic", sl)
        ts = np.round(t0 + self.phase, 6) if self.cadence is None else self.cadence.ts(sl, t0)
        burst = np.exp(0.08 * r.standard_normal(self.n_nodes))[self.port_node]
        tx = self.bytes_s * burst * (1 + 0.02 * r.standard_normal(n))
        rx = tx * (1 + 0.01 * r.standard_normal(n))
        inc = {"xmit_wait": r.poisson(self.lam_wait), "np_cnp_sent": r.poisson(self.lam_cnp),
               "rp_cnp_handled": r.poisson(0.95 * self.lam_cnp),
               # rare lone errors happen on healthy links too
               "symbol_errors": (r.random(n) < 1e-5).astype(np.int64),
               "rcv_errors": (r.random(n) < 5e-6).astype(np.int64)}
        down = np.zeros(n, dtype=bool)
        tags: dict[int, list[int]] = {}
        mods: list[Any] = []
        for e in self.sched.nics:
            if e.a <= t0 + 2 and t0 - 2 < e.b:
                e.nic(ts, mods)
        for p, through_f, incs, is_down, tag in mods:
            tx[p] *= through_f
            rx[p] *= through_f
            down[p] |= is_down
            for f, v in incs.items():
                inc[f] = inc.get(f, np.zeros(n, dtype=np.int64))
                inc[f][p] += v
            if tag is not None:
                tags.setdefault(p, []).append(tag)
        for p in self.deferred:
            self._zero(p)
        self.deferred = []
        resets = self.sched.resets
        while self._next_reset < len(resets) and resets[self._next_reset][0] < t0 + 1:
            tr, p = resets[self._next_reset]
            self._next_reset += 1
            if tr <= ts[p]:
                self._zero(p)
            else:
                self.deferred.append(p)
        c = self.c
        c["tx_bytes"] += tx.astype(np.int64)
        c["rx_bytes"] += rx.astype(np.int64)
        for f, v in inc.items():
            c[f] += v
        c["link_downed"] += down & ~self.was_down  # one count per flap, at its first sample
        self.was_down = down
        state = np.where(down, "down", "up").tolist()
        emitted: list[int] | None = None
        if self.cadence is None:
            cols = [c[f].tolist() for f in _NIC_FIELDS]
            ts_l, ids = ts.tolist(), self.ids
        else:  # counters moved this second on every port; only the due ones are read
            emitted = self.cadence.due(sl).tolist()
            for p, tl in tags.items():
                self.held.setdefault(p, []).extend(tl)
            tags = {p: self.held.pop(p) for p in emitted if p in self.held}
            sel = np.array(emitted, dtype=np.int64)
            cols = [c[f][sel].tolist() for f in _NIC_FIELDS]
            ts_l, ids = ts[sel].tolist(), [self.ids[p] for p in emitted]
            state = [state[p] for p in emitted]
        cl, tn = self.cluster, self.tenant
        start = len(out)
        out.extend(
            (t, NIC, {"ts": t, "node": node, "nic": nic, "port": 1, "link_state": st,
                      "rate_gbps": RATE_GBPS, "tx_bytes": a, "rx_bytes": b, "symbol_errors": se,
                      "link_downed": ld, "rcv_errors": re, "xmit_discards": xd, "xmit_wait": xw,
                      "out_of_sequence": oo, "packet_seq_err": ps, "np_cnp_sent": nc,
                      "rp_cnp_handled": rc, "cluster": cl, "tenant": tn}, NO_TAGS)
            for t, (node, nic), st, a, b, se, ld, re, xd, xw, oo, ps, nc, rc
            in zip(ts_l, ids, state, *cols, strict=True))
        pos = (dict(enumerate(range(start, len(out)))) if emitted is None
               else {p: start + j for j, p in enumerate(emitted)})
        for p, tl in tags.items():
            rec = out[pos[p]]
            out[pos[p]] = (rec[0], rec[1], rec[2], tuple(dict.fromkeys(tl)))


_ECC_INTS = ("sbe_volatile", "dbe_volatile", "retired_pages_sbe", "retired_pages_dbe",
             "pcie_replay", "nvlink_crc_errors", "nvlink_replay_errors", "nvlink_recovery_errors")
_VOLATILE = ("sbe_volatile", "dbe_volatile", "pcie_replay", "nvlink_crc_errors",
             "nvlink_replay_errors", "nvlink_recovery_errors")  # zeroed by a GPU reset
ECC_PERIOD_S = 5


class EccGen:
    """telemetry.ecc: a sample per GPU every 5 s (own phase), plus one message per XID event."""

    def __init__(self, sc: Scenario, pl: Placement, sched: Schedule, cluster: str) -> None:
        g = len(pl.gpus)
        rng = rng_for(sc.seed, "ecc-phase")
        self.period = period = sc.axes.ecc_period_s
        if sc.axes.interval == "1-per-gpu":
            phase = rng.uniform(0, ECC_PERIOD_S, g)
        else:  # one scrape a node, at the node's phase
            node_phase = rng_for(sc.seed, "axis-ecc-phase").uniform(0, period, len(pl.nodes))
            phase = node_phase[pl.gpu_node]
        slot = np.floor(phase).astype(np.int64)
        self.frac = phase - slot
        self.by_slot = [np.flatnonzero(slot == j) for j in range(period)]
        for e in sched.rates:
            e.window_s = float(period)
        self.seed, self.sched = sc.seed, sched
        self.c = {f: np.zeros(g, dtype=np.int64) for f in _ECC_INTS}
        self.c.update(ecc_baseline(sc.seed, g))
        self.pending = [False] * g
        self.failure = [False] * g
        self.action = ["none"] * g
        self.active: list[int | None] = [None] * g  # fault whose symptoms every sample shows
        self.ids = list(pl.gpus)
        self.cluster, self.tenant = cluster, sc.job.tenant

    def _value(self, g: int, ts: float, xid: int | None) -> dict[str, Any]:
        node, gpu = self.ids[g]
        c = self.c
        return {"ts": ts, "node": node, "gpu": gpu, "sbe_volatile": int(c["sbe_volatile"][g]),
                "dbe_volatile": int(c["dbe_volatile"][g]),
                "retired_pages_sbe": int(c["retired_pages_sbe"][g]),
                "retired_pages_dbe": int(c["retired_pages_dbe"][g]),
                "row_remap_pending": self.pending[g], "row_remap_failure": self.failure[g],
                "xid": xid, "pcie_replay": int(c["pcie_replay"][g]),
                "nvlink_crc_errors": int(c["nvlink_crc_errors"][g]),
                "nvlink_replay_errors": int(c["nvlink_replay_errors"][g]),
                "nvlink_recovery_errors": int(c["nvlink_recovery_errors"][g]),
                "recovery_action": self.action[g], "cluster": self.cluster, "tenant": self.tenant}

    def _apply(self, ev: EccEvent) -> None:
        g, c = ev.g, self.c
        for op in ev.ops:
            if op == "dbe":
                c["dbe_volatile"][g] += 1
                c["retired_pages_dbe"][g] += 1
            elif op == "sbe":
                c["sbe_volatile"][g] += 1
            elif op == "pending":
                self.pending[g] = True
            elif op == "remap_failure":
                self.failure[g] = True
            elif op.startswith("action:"):
                self.action[g] = op.partition(":")[2]
            elif op in ("reset", "repair"):
                for f in _VOLATILE:
                    c[f][g] = 0
                if op == "repair":  # the GPU was reset and its memory remapped: healthy again
                    self.pending[g] = self.failure[g] = False
                    self.action[g] = "none"
                    self.active[g] = None
        if ev.begin:
            self.active[g] = ev.tag

    def _sample(self, g: int, ts: float, out: list[Record]) -> None:
        active = self.active[g]
        tags = [] if active is None else [active]
        for e in self.sched.rates:
            if e.g == g:
                incs = e.ecc_rate(ts)
                if incs:
                    for f, v in incs.items():
                        self.c[f][g] += v
                    if e.tag is not None:
                        tags.append(e.tag)
        out.append((ts, ECC, self._value(g, ts, None), tuple(dict.fromkeys(tags))))

    def slice(self, sl: int, t0: float, out: list[Record]) -> None:
        idx = self.by_slot[sl % self.period]
        r = rng_for(self.seed, "ecc", sl)
        self.c["pcie_replay"][idx] += r.random(len(idx)) < 2e-4  # a rare replay is normal
        events = self.sched.events_before(t0 + 1)
        special = {ev.g for ev in events}
        special |= {e.g for e in self.sched.rates
                    if e.a < t0 + 1 and t0 < e.b + self.period}
        special |= {g for g, tag in enumerate(self.active) if tag is not None}
        ts_all = np.round(t0 + self.frac, 6)
        plain = [int(g) for g in idx if int(g) not in special] if special else idx.tolist()
        if plain:
            c = self.c
            sel = np.array(plain, dtype=np.int64)
            cols = [c[f][sel].tolist() for f in _ECC_INTS]
            cl, tn = self.cluster, self.tenant
            out.extend(
                (t, ECC, {"ts": t, "node": self.ids[g][0], "gpu": self.ids[g][1],
                          "sbe_volatile": sb, "dbe_volatile": db, "retired_pages_sbe": rs,
                          "retired_pages_dbe": rd, "row_remap_pending": self.pending[g],
                          "row_remap_failure": self.failure[g], "xid": None, "pcie_replay": pr,
                          "nvlink_crc_errors": nc, "nvlink_replay_errors": nr,
                          "nvlink_recovery_errors": nv, "recovery_action": self.action[g],
                          "cluster": cl, "tenant": tn}, NO_TAGS)
                for g, t, sb, db, rs, rd, pr, nc, nr, nv
                in zip(plain, ts_all[sel].tolist(), *cols, strict=True))
        sampled = set(idx.tolist())
        for g in sorted(special):
            items: list[tuple[float, int, EccEvent | None]] = [
                (ev.ts, 0, ev) for ev in events if ev.g == g]
            if g in sampled:
                items.append((float(ts_all[g]), 1, None))
            items.sort(key=lambda x: (x[0], x[1]))
            for ts, _, ev in items:
                if ev is None:
                    self._sample(g, ts, out)
                    continue
                self._apply(ev)
                if ev.xid is not None:
                    tags = NO_TAGS if ev.tag is None else (ev.tag,)
                    out.append((ev.ts, ECC, self._value(g, ev.ts, ev.xid), tags))
