"""blind7's world: nodes, collectors and fault hooks; emits DCGM, ECC/XID and NIC rows.

stories.py fills a World (jobs, servers, faults); the rows come out in event-time order per
source, and generate.py turns them into arrival order.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass, field

from bench.blind7.gen import Gpu, Hooks, Label, Model, thermal_changed, thermal_row

T0 = 1_781_000_000.0  # 2026-06-09, a summer afternoon (UTC)
NIC_KEYS = ("tx_bytes", "rx_bytes", "symbol_errors", "link_downed", "rcv_errors",
            "xmit_discards", "xmit_wait", "out_of_sequence", "packet_seq_err", "np_cnp_sent",
            "rp_cnp_handled")


@dataclass
class Node:
    name: str
    gpus: list
    nics: list
    leaf: str
    phase: float  # collector phase, s
    clock_off: float  # chrony-disciplined: tens of ms
    inlet_off: float
    thermal_s: float = 10.0
    ecc_s: float = 10.0
    nic_s: float = 10.0
    ints: bool = True  # DCGM integer temperatures
    full_ecc: bool = True  # SBE/DBE/NVLink counters enabled
    recovery: bool = False  # collector reads NVML's recovery action
    xid_at_event: bool = False  # kernel-log XIDs at their own time (else on the next poll)
    dead_from: float | None = None  # no record from this second on
    gaps: list = field(default_factory=list)  # (from, to) s without thermal/ECC rows
    reset_at: float | None = None  # GPU counters restart from 0 (driver reload)
    extra: dict = field(default_factory=dict)  # (gpu) -> extra thermal fields


class World:
    def __init__(self, story: str, seed: int, minutes: float):
        self.story, self.seed = story, seed
        self.rng = random.Random(f"blind7/{story}/{seed}")
        self.n_s = int(minutes * 60)
        self.t0 = T0 + seed * 86_400.0 + (1000 if story == "h200-summer" else 0)
        self.nodes: dict[str, Node] = {}
        self.gpus: dict[tuple, Gpu] = {}
        self.records: list[tuple[str, dict]] = []
        self.labels: list[Label] = []
        self.hooks = Hooks()
        self.nic_hooks: list = []  # (node, nic, t, d) -> label | None, mutating d
        self.ecc_hooks: list = []  # (node, gpu, t, v) -> label | None, mutating v
        self.xids: list = []  # (t, node, gpu, xid, label)
        self.busy_ports: dict = {}  # (node, nic) -> [util per s]
        self.inlet_base: list[float] = [0.0] * self.n_s
        self.manifest: dict = {"story": story, "seed": seed, "healthy": [], "faults": []}

    def emit(self, topic: str, v: dict) -> None:
        self.records.append((topic, v))

    def label(self, *a, **kw) -> Label:
        lab = Label(*a, **kw)
        self.labels.append(lab)
        return lab

    def add_node(self, name, model: Model, n_gpu, nics, leaf, **kw) -> Node:
        r = self.rng
        nd = Node(name, list(range(n_gpu)), nics, leaf, phase=r.uniform(0, 10),
                  clock_off=r.gauss(0, 0.02), inlet_off=r.uniform(0, 2.5), **kw)
        self.nodes[name] = nd
        for i in range(n_gpu):
            self.gpus[(name, i)] = Gpu(name, i, model, r.uniform(0.94, 1.07),
                                       r.uniform(0, 5.5) + 0.4 * i, self.n_s)
        for nic in nics:
            self.busy_ports[(name, nic)] = [0.0] * self.n_s
        return nd

    def set_load(self, node, gpu, a, b, value):
        g = self.gpus[(node, gpu)]
        for t in range(max(0, int(a)), min(self.n_s, int(b))):
            g.load[t] = value(t) if callable(value) else value

    def set_port(self, node, nic, a, b, util):
        u = self.busy_ports[(node, nic)]
        for t in range(max(0, int(a)), min(self.n_s, int(b))):
            u[t] = max(u[t], util(t) if callable(util) else util)

    # ------------------------------------------------------------ emission
    def run_physics(self):
        for key in sorted(self.gpus):
            g = self.gpus[key]
            nd = self.nodes[g.node]
            inlet = [self.inlet_base[t] + nd.inlet_off for t in range(self.n_s)]
            g.run(inlet, random.Random(f"{self.seed}/{key}"))

    def emit_dcgm(self):
        r = random.Random(f"dcgm/{self.story}/{self.seed}")
        for name, nd in sorted(self.nodes.items()):
            def alive(t, nd=nd):
                return (nd.dead_from is None or t < nd.dead_from) and not any(
                    a <= t < b for a, b in nd.gaps)
            # thermal rows
            t = nd.phase
            while t < self.n_s:
                ti = int(t)
                if alive(t):
                    ts = round(self.t0 + t + nd.clock_off, 3)
                    for i in nd.gpus:
                        g = self.gpus[(name, i)]
                        self.emit("telemetry.thermal", thermal_row(
                            g, ti, ts, nd.ints, True, nd.extra.get(i)))
                        lab = getattr(g, "label", None)
                        if lab and thermal_changed(g, ti, nd.ints):
                            lab.touch(ts)
                t += nd.thermal_s
            # ECC rows and XID events
            ctr = {}
            for i in nd.gpus:
                sbe_rate = r.uniform(0.005, 0.03) if r.random() < 0.05 else 0.0
                rep_rate = r.uniform(0.002, 0.02) if r.random() < 0.08 else 0.0
                ctr[i] = {"sbe": r.randint(0, 40) if sbe_rate else 0, "sbe_rate": sbe_rate,
                          "rep": r.randint(0, 300) if rep_rate else 0, "rep_rate": rep_rate,
                          "crc": 0, "dbe": 0}
            xids = sorted((x for x in self.xids if x[1] == name), key=lambda x: x[0])
            t = nd.phase + 0.35
            prev = 0.0
            while t < self.n_s:
                for i in nd.gpus:
                    c = ctr[i]
                    if nd.reset_at is not None and prev < nd.reset_at <= t:
                        c.update(sbe=0, rep=0, crc=0, dbe=0)
                    dt = t - prev
                    c["sbe"] += _poisson(r, c["sbe_rate"] * dt)
                    busy = self.gpus[(name, i)].load[min(int(t), self.n_s - 1)] > 0.08
                    c["rep"] += _poisson(r, c["rep_rate"] * dt * (1 if busy else 0.1))
                    c["crc"] += _poisson(r, 0.0004 * dt)
                if alive(t):
                    ts = round(self.t0 + t + nd.clock_off, 3)
                    for i in nd.gpus:
                        c = ctr[i]
                        v = {"ts": ts, "node": name, "gpu": i, "xid": None,
                             "pcie_replay": c["rep"]}
                        if nd.full_ecc:
                            v.update(sbe_volatile=c["sbe"], dbe_volatile=c["dbe"],
                                     retired_pages_sbe=0, retired_pages_dbe=0,
                                     row_remap_pending=False, row_remap_failure=False,
                                     nvlink_crc_errors=c["crc"], nvlink_replay_errors=0,
                                     nvlink_recovery_errors=0)
                        if nd.recovery:
                            v["recovery_action"] = "none"
                        for h in self.ecc_hooks:
                            lab = h(name, i, t, v)
                            if lab:
                                lab.touch(ts)
                        self.emit("telemetry.ecc", v)
                        if not nd.xid_at_event:
                            for x in xids:
                                if x[2] == i and prev <= x[0] < t:
                                    xv = dict(v, xid=x[3])
                                    self.emit("telemetry.ecc", xv)
                                    x[4].touch(ts)
                if nd.xid_at_event:
                    for x in xids:
                        if prev <= x[0] < t and alive(x[0]):
                            xts = round(self.t0 + x[0] + nd.clock_off, 3)
                            self.emit("telemetry.ecc", {"ts": xts, "node": name, "gpu": x[2],
                                                        "xid": x[3]})
                            x[4].touch(xts)
                prev = t
                t += nd.ecc_s

    def emit_nic(self):
        r = random.Random(f"nic/{self.story}/{self.seed}")
        for name, nd in sorted(self.nodes.items()):
            for nic in nd.nics:
                acc = {k: r.randint(10**9, 10**12) if k.endswith("bytes") else
                       (r.randint(0, 5) if k in ("symbol_errors", "link_downed") else
                        r.randint(0, 10**6) if k in ("xmit_wait", "np_cnp_sent",
                                                       "rp_cnp_handled") else 0)
                       for k in NIC_KEYS}
                util = self.busy_ports[(name, nic)]
                t = nd.phase + 0.7
                sec = 0
                state = ("up", 400.0)
                while t < self.n_s:
                    changed = set()
                    while sec < int(t):
                        d = _port_rates(util[sec], r)
                        for h in self.nic_hooks:  # a hook returns its label when it changed d
                            lab = h(name, nic, sec, d)
                            if lab:
                                changed.add(lab)
                        for k in NIC_KEYS:
                            acc[k] += d.get(k, 0)
                        state = (d.get("state", "up"), d.get("rate", 400.0))
                        sec += 1
                    if nd.dead_from is None or t < nd.dead_from:
                        ts = round(self.t0 + t + nd.clock_off, 3)
                        v = {"ts": ts, "node": name, "nic": nic, "port": 1,
                             "link_state": state[0], "rate_gbps": state[1]}
                        v.update({k: int(acc[k]) for k in NIC_KEYS})
                        self.emit("telemetry.nic", v)
                        for lab in changed:
                            lab.touch(ts)
                    t += nd.nic_s


def _port_rates(util: float, r: random.Random) -> dict:
    """Per-second counter increments of a healthy NDR port at `util` of its line rate."""
    line = 400e9 / 8
    util = max(util, 0.0005)  # management and storage traffic on an idle port
    j = 1 + r.gauss(0, 0.05)
    tx = line * util * j
    d = {"tx_bytes": tx, "rx_bytes": tx * (1 + r.gauss(0, 0.03)),
         "xmit_wait": (2e4 + 3e5 * util) * j, "np_cnp_sent": 40 * util * j,
         "rp_cnp_handled": 40 * util * j}
    if r.random() < 1 / 20000:
        d["symbol_errors"] = 1
    return d


def _poisson(r: random.Random, lam: float) -> int:
    if lam <= 0:
        return 0
    if lam > 30:
        return max(0, int(r.gauss(lam, math.sqrt(lam))))
    k, p, L = 0, 1.0, math.exp(-lam)
    while True:
        p *= r.random()
        if p <= L:
            return k
        k += 1
