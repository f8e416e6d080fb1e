"""blind23's simulator: per-second GPU physics, synchronous jobs, collectors, tagged records.

A `Sim` holds each node's per-second arrays (inlet or coolant temperature, the GPUs' load, the
board's thermal resistance multiplier, the host's slowdown, a stuck clock). `thermal()` turns
them into die and memory temperature, power, SM clock and clock-event bits -- twice, with the
faults and without, so every GPU-second a fault changed is known. Jobs then step synchronously:
a rank's `compute_ms` is its own (its GPU's clock, the host, the container), time in neither
part is its loader, its GC pause, its checkpoint I/O, and `comm_ms` is the wait for the slowest
rank plus the exposed all-reduce. Collectors sample each node at its own phase. Every record
carries the faults that changed it; a label's span is its first and last such record.
"""

from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass, field

import numpy as np

from bench.blind23.world import Board, pai_noise


@dataclass
class Node:
    name: str
    board: Board
    nics: list[str]
    nic_gbps: float
    roce: bool
    inlet: np.ndarray                 # (T,) inlet air or coolant supply, routine shapes included
    fault: str | None = None          # the one fault this node carries, if any
    fault_inlet: np.ndarray | None = None     # (T,) added by the fault (a CDU losing flow)
    fault_rmult: np.ndarray | None = None     # (T, G) thermal resistance x (a fan, a hose)
    fault_power: np.ndarray | None = None     # (T, G) power x (the GPUs wait on a slow host)
    host_mult: np.ndarray | None = None       # (T, G) compute x from the host (CPU throttle)
    stall_frac: np.ndarray | None = None      # (T, G) loader stall, share of a step (NUMA)
    stuck_mhz: np.ndarray | None = None       # (G,) a GPU's clock ceiling, NaN: none
    stuck_from: float = math.inf
    up: np.ndarray | None = None      # (T,) the node reports (False: rebooting)
    boots: list[int] = field(default_factory=list)   # seconds its counters restart from 0
    new_driver_from: float = math.inf
    driver_mult: float = 1.0          # compute x on the new driver
    util: np.ndarray | None = None    # (T, G)
    phase: float = 0.0
    out: dict = field(default_factory=dict)


@dataclass
class Epoch:
    start: float            # seconds after t0 the processes start (checkpoint load, NCCL init)
    end: float              # seconds after t0 it stops (crash, end of log)
    first_step: int
    nodes: list[str]
    mult: float = 1.0       # compute x on every rank (a container)
    init_s: float = 40.0
    cold: bool = True       # False: already running when the log starts (no warm-up steps)


@dataclass
class Job:
    name: str
    tenant: str
    gpn: int                # ranks a node
    ranks: int
    tp: int | None          # None: pure data parallelism (no rank fields)
    pp: int | None
    compute_ms: float
    other_ms: float
    comm_ms: float
    sigma: float            # a rank's noise (share)
    epochs: list[Epoch]
    stage_mult: tuple = (1.0,)
    ckpt_every: int = 0
    ckpt_s: tuple = (0.0, 0.0)
    checksum: bool = False
    gc_per_s: float = 0.008       # a GC pause per node-second (one rank, one step)
    log_every: int = 50

    def place(self, rank: int, ep: Epoch) -> tuple[str, int]:
        return ep.nodes[rank // self.gpn], rank % self.gpn

    def coords(self, rank: int) -> tuple[int, int, int]:
        tp, pp = self.tp or 1, self.pp or 1
        dp = self.ranks // (tp * pp)
        return rank % tp, rank // (tp * dp), (rank // tp) % dp


class Sim:
    def __init__(self, rng: np.random.Generator, t0: float, seconds: int):
        self.rng, self.t0, self.T = rng, t0, seconds
        self.nodes: dict[str, Node] = {}
        self.jobs: list[Job] = []
        self.records: list[tuple[float, str, dict, frozenset]] = []
        self.effects: list[dict] = []

    # -- building ---------------------------------------------------------------------------

    def add_node(self, name: str, board: Board, nics: list[str], nic_gbps: float, roce: bool,
                 inlet: float) -> Node:
        T, G = self.T, board.gpus
        wander = np.cumsum(self.rng.normal(0, 0.04, T))
        wander -= np.linspace(0, wander[-1], T)
        node = Node(name, board, nics, nic_gbps, roce, inlet + wander,
                    up=np.ones(T, bool), util=np.zeros((T, G)),
                    phase=float(self.rng.uniform(0, 10)))
        self.nodes[name] = node
        return node

    def effect(self, what: str, scope: dict, start: float, end: float, **extra) -> None:
        self.effects.append({"effect": what, "scope": scope, "start_ts": round(self.t0 + start, 3),
                             "end_ts": round(self.t0 + end, 3), "expect": "pages nobody",
                             **extra})

    def reboot(self, node: str, down: float, back: float, new_driver: bool = True) -> None:
        """The node stops reporting at ``down`` and comes back at ``back`` (counters from 0)."""
        n = self.nodes[node]
        n.up[int(down):int(back)] = False
        n.boots.append(int(back))
        if new_driver:
            n.new_driver_from = min(n.new_driver_from, back)

    def load(self) -> None:
        """GPU load from the jobs' epochs (init at a quarter, then busy)."""
        for job in self.jobs:
            for ep in job.epochs:
                for name in set(ep.nodes):
                    u = self.nodes[name].util
                    a, b, c = int(ep.start), int(ep.start + ep.init_s), int(min(ep.end, self.T))
                    u[a:b] = np.maximum(u[a:b], 0.25)
                    u[b:c] = 1.0

    # -- physics ----------------------------------------------------------------------------

    def thermal(self) -> None:
        for node in self.nodes.values():
            noise = {k: self.rng.normal(0, 1, (self.T, node.board.gpus))
                     for k in ("p", "d", "m", "c")}
            for s in range(1, self.T):     # a board's draw wanders (AR(1), 0.85), not white
                noise["p"][s] = 0.85 * noise["p"][s - 1] + 0.527 * noise["p"][s]
            gw = self.rng.uniform(0.95, 1.05, node.board.gpus)
            gr = self.rng.uniform(0.92, 1.08, node.board.gpus)
            node.out = self._thermal(node, noise, gw, gr, faults=True)
            if node.fault is not None:
                base = self._thermal(node, noise, gw, gr, faults=False)
                node.out["changed"] = ((np.abs(node.out["die"] - base["die"]) > 0.25)
                                       | (node.out["clock"] != base["clock"])
                                       | (node.out["bits"] != base["bits"])
                                       | (np.abs(node.out["power"] - base["power"]) > 0.5))
                node.out["slow_base"] = base["slow"]

    def _thermal(self, node: Node, nz: dict, gw: np.ndarray, gr: np.ndarray,
                 faults: bool) -> dict:
        b, T, G = node.board, self.T, node.board.gpus
        p0 = np.minimum(b.idle_w + (b.busy_w * gw - b.idle_w) * node.util[0], b.limit_w)
        die_raw = node.inlet[0] + b.r_c_per_w * gr * p0     # steady at the log's start
        alpha = 1 - math.exp(-1 / 35.0)
        out = {k: np.zeros((T, G)) for k in ("die", "mem", "power", "clock", "slow")}
        out["bits"] = np.zeros((T, G), int)
        for s in range(T):
            u = node.util[s]
            p = b.idle_w + (b.busy_w * gw - b.idle_w) * u + nz["p"][s] * 0.012 * b.busy_w * u
            capped = p > b.limit_w
            capf = np.where(capped, np.clip(1 - 1.1 * (p - b.limit_w) / b.limit_w, 0.9, 1), 1.0)
            p = np.where(capped, b.limit_w - 3 - 3 * np.abs(nz["p"][s]), p)
            inlet = node.inlet[s]
            rm = np.ones(G)
            if faults:
                if node.fault_power is not None:
                    p = p * node.fault_power[s]
                if node.fault_inlet is not None:
                    inlet = inlet + node.fault_inlet[s]
                if node.fault_rmult is not None:
                    rm = node.fault_rmult[s]
            die_raw = die_raw + (inlet + b.r_c_per_w * gr * rm * p - die_raw) * alpha
            excess = die_raw - b.sw_thermal_c
            hot = excess > 0
            thf = np.where(hot, np.clip(1 - 0.03 * excess, 0.55, 1), 1.0)
            bits = np.where(capped, 0x4, 0) | np.where(hot, 0x20, 0) | np.where(
                die_raw > b.hw_thermal_c + 2, 0x40, 0)
            nominal = b.clock_mhz - (15.0 if s >= node.new_driver_from else 0.0)
            clk = nominal * capf * thf
            if faults and node.stuck_mhz is not None and s >= node.stuck_from:
                clk = np.where(np.isnan(node.stuck_mhz), clk, np.minimum(clk, node.stuck_mhz))
            clk = np.round((clk + nz["c"][s] * 4) / 15) * 15
            busy = u > 0.05
            out["clock"][s] = np.where(busy, np.minimum(clk, nominal), b.idle_mhz)
            out["bits"][s] = np.where(busy, bits, 0x1)
            out["slow"][s] = np.where(busy, (nominal / out["clock"][s]) ** 0.85, 1.0)
            shown = np.where(hot, b.sw_thermal_c + 0.3 * excess, die_raw) + nz["d"][s] * 0.3
            out["die"][s] = shown
            out["mem"][s] = shown + b.mem_over_die_c + nz["m"][s] * 0.4
            out["power"][s] = p * np.where(busy, thf ** 1.3, 1.0)
        return out

    # -- jobs -------------------------------------------------------------------------------

    def run_jobs(self) -> None:
        for job in self.jobs:
            self._run(job)

    def _run(self, job: Job) -> None:
        rng, t0 = self.rng, self.t0
        n_max = int(self.T / (job.compute_ms / 1000)) + 10
        noise = np.stack([pai_noise(rng, n_max) for _ in range(job.ranks)])
        common = pai_noise(rng, n_max)
        offset = rng.normal(0, 0.004, job.ranks)
        k = 0
        first = job.epochs[0].first_step
        last_ckpt = first - first % job.ckpt_every if job.ckpt_every else first
        for e, ep in enumerate(job.epochs):
            t = ep.start + ep.init_s + float(rng.uniform(0, 2))
            step = start_step = ep.first_step if ep.first_step >= 0 else last_ckpt + 1
            ep.first_step = start_step
            places = [job.place(r, ep) for r in range(job.ranks)]
            nodes = [self.nodes[n] for n, _ in places]
            gpus = np.array([g for _, g in places])
            stage = np.array([job.stage_mult[job.coords(r)[1] % len(job.stage_mult)]
                              for r in range(job.ranks)])
            warm = 0 if ep.cold else 3
            while True:
                s = int(t)
                if s >= self.T or t >= ep.end:
                    break
                comp = (job.compute_ms * ep.mult * stage * (1 + offset)
                        * (1 + job.sigma * noise[:, k % n_max])
                        * (1 + 0.3 * job.sigma * common[k % n_max]))
                other = job.other_ms * (1 + 0.15 * np.abs(rng.normal(0, 1, job.ranks)))
                tags: list[set] = [set() for _ in range(job.ranks)]
                for r, (node, g) in enumerate(zip(nodes, gpus, strict=True)):
                    comp[r] *= node.out["slow"][s, g]
                    if s >= node.new_driver_from:
                        comp[r] *= node.driver_mult
                    if node.fault is not None:
                        changed = abs(node.out["slow"][s, g] - node.out["slow_base"][s, g]) > 2e-3
                        if node.host_mult is not None and node.host_mult[s, g] > 1.001:
                            comp[r] *= node.host_mult[s, g]
                            changed = True
                        if node.stall_frac is not None and node.stall_frac[s, g] > 0:
                            other[r] += job.compute_ms * max(
                                0.0, rng.normal(node.stall_frac[s, g], 0.5 * node.stall_frac[s, g]))
                            comp[r] *= 1.03
                            changed = True
                        if changed:
                            tags[r].add(node.fault)
                if warm < 3:
                    comp *= (3.5, 1.5, 1.15)[warm]
                    warm += 1
                if rng.random() < job.gc_per_s * job.compute_ms / 1000 * job.ranks / 8:
                    r = int(rng.integers(job.ranks))
                    pause = float(rng.uniform(250, 1200))
                    if rng.random() < 0.5:
                        comp[r] += pause
                    else:
                        other[r] += pause
                    self.effect("gc_pause", {"level": "gpu", "node": nodes[r].name,
                                             "gpu": int(gpus[r])}, t, t + 3, job=job.name,
                                step=step, pause_ms=round(pause))
                if job.log_every and step % job.log_every == 0:
                    other[0] += float(rng.uniform(40, 120))
                if job.ckpt_every and step % job.ckpt_every == 0 and step > start_step:
                    last_ckpt = step
                    save = float(rng.uniform(*job.ckpt_s)) * 1000
                    other += save * (1 + 0.02 * rng.random(job.ranks))
                    self.effect("checkpoint_save", {"level": "job", "job": job.name}, t,
                                t + save / 1000 + 5, step=step)
                ready = comp + other
                step_ms = float(ready.max() + job.comm_ms * (1 + 0.2 * job.sigma * abs(
                    common[(k + 7) % n_max])) + rng.uniform(0, 3))
                loss = 2.1 + 3.0 * math.exp(-step / 4000) + 0.02 * float(rng.normal())
                for r in range(job.ranks):
                    v = {"ts": round(t0 + t + step_ms / 1000 + float(rng.uniform(0, 0.004)), 4),
                         "job": job.name, "step": step, "rank": r, "node": nodes[r].name,
                         "gpu": int(gpus[r]), "step_ms": round(step_ms, 2),
                         "compute_ms": round(float(comp[r]), 2),
                         "comm_ms": round(max(0.0, step_ms - float(ready[r]) - 0.01), 2)}
                    if job.tp is not None:
                        tp, pp, dp = job.coords(r)
                        v.update(tp_rank=tp, pp_rank=pp, dp_rank=dp)
                        if job.checksum:
                            v["param_checksum"] = hashlib.blake2b(
                                f"{job.name}/{e}/{tp}/{pp}/{step}".encode(),
                                digest_size=8).hexdigest()
                    v["loss"] = round(loss + 0.01 * float(rng.normal()), 4)
                    v["grad_norm"] = round(0.9 + 0.1 * float(rng.normal()), 4)
                    self.records.append((v["ts"], "telemetry.step", v, frozenset(tags[r])))
                t += step_ms / 1000 + 0.001
                step += 1
                k += 1

    # -- collectors -------------------------------------------------------------------------

    def collect(self, thermal_s: float, nic_s: float, ecc_s: float) -> None:
        for node in self.nodes.values():
            self._collect_thermal(node, thermal_s)
            self._collect_ecc(node, ecc_s)
            self._collect_nic(node, nic_s)

    def _times(self, node: Node, every: float):
        t = node.phase % every
        while t < self.T:
            s = int(t)
            if node.up[s]:
                yield t, s
            t += every

    def _tag(self, node: Node, s: int, g: int) -> frozenset:
        ch = node.out.get("changed")
        return frozenset({node.fault}) if ch is not None and ch[s, g] else frozenset()

    def _collect_thermal(self, node: Node, every: float) -> None:
        o, b = node.out, node.board
        for t, s in self._times(node, every):
            for g in range(b.gpus):
                v = {"ts": round(self.t0 + t, 3), "node": node.name, "gpu": g,
                     "gpu_temp_c": round(float(o["die"][s, g]), 1),
                     "power_w": round(float(o["power"][s, g]), 1),
                     "sm_clock_mhz": float(o["clock"][s, g]), "throttle": int(o["bits"][s, g])}
                if b.mem_over_die_c:
                    v["mem_temp_c"] = round(float(o["mem"][s, g]), 1)
                self.records.append((v["ts"], "telemetry.thermal", v, self._tag(node, s, g)))

    def _since_boot(self, node: Node, s: int) -> int:
        return max([0] + [x for x in node.boots if x <= s])

    def _collect_ecc(self, node: Node, every: float) -> None:
        b = node.board
        replay = self.rng.integers(0, 3, b.gpus)
        for t, s in self._times(node, every + 0.0):
            for g in range(b.gpus):
                v = {"ts": round(self.t0 + t + 0.05, 3), "node": node.name, "gpu": g,
                     "sbe_volatile": 0, "dbe_volatile": 0, "retired_pages_sbe": 0,
                     "retired_pages_dbe": 0, "row_remap_pending": False,
                     "row_remap_failure": False, "xid": None,
                     "pcie_replay": 0 if self._since_boot(node, s) else int(replay[g]),
                     "recovery_action": "none"}
                if b.nvlink:
                    v.update(nvlink_crc_errors=0, nvlink_replay_errors=0,
                             nvlink_recovery_errors=0)
                self.records.append((v["ts"], "telemetry.ecc", v, frozenset()))

    def xid(self, node: str, gpu: int, at: float, code: int) -> None:
        v = {"ts": round(self.t0 + at, 3), "node": node, "gpu": gpu, "xid": code}
        self.records.append((v["ts"], "telemetry.ecc", v, frozenset()))

    def _collect_nic(self, node: Node, every: float) -> None:
        T = self.T
        busy = node.util.mean(axis=1)
        per_nic = []
        for _ in node.nics:
            share = self.rng.uniform(0.22, 0.34) * busy * (1 + 0.05 * self.rng.normal(0, 1, T))
            rate = node.nic_gbps * 1e9 / 8 * np.clip(share, 0, 1)
            c = {"tx": rate * self.rng.uniform(0.98, 1.02), "rx": rate,
                 "wait": rate / 4096 * 0.02 * self.rng.uniform(0.5, 1.5, T),
                 "cnp": self.rng.poisson(3.0 * busy), "cnph": self.rng.poisson(3.0 * busy)}
            per_nic.append({k: np.cumsum(x) for k, x in c.items()})
        for t, s in self._times(node, every):
            lo = self._since_boot(node, s)
            for i, nic in enumerate(node.nics):
                c = {k: x[s] - (x[lo - 1] if lo else 0) for k, x in per_nic[i].items()}
                v = {"ts": round(self.t0 + t + 0.1, 3), "node": node.name, "nic": nic, "port": 1,
                     "link_state": "up", "rate_gbps": node.nic_gbps,
                     "tx_bytes": int(c["tx"]),
                     "rx_bytes": int(c["rx"]),
                     "symbol_errors": 0, "link_downed": 0, "rcv_errors": 0, "xmit_discards": 0,
                     "xmit_wait": int(c["wait"])}
                if node.roce:
                    v.update(out_of_sequence=0, packet_seq_err=0,
                             np_cnp_sent=int(c["cnp"]),
                             rp_cnp_handled=int(c["cnph"]))
                self.records.append((v["ts"], "telemetry.nic", v, frozenset()))

    # -- labels -----------------------------------------------------------------------------

    def labels(self, faults: dict[str, dict]) -> list[dict]:
        """Each fault's label: its span is its first and last tagged record."""
        span: dict[str, list[float]] = {}
        for ts, _, _, tags in self.records:
            for f in tags:
                lo_hi = span.setdefault(f, [ts, ts])
                lo_hi[0], lo_hi[1] = min(lo_hi[0], ts), max(lo_hi[1], ts)
        out = []
        for fid, lab in faults.items():
            if fid in span:
                out.append({"fault_id": fid, **lab, "start_ts": span[fid][0],
                            "end_ts": span[fid][1]})
        return out
