"""blind20's event-time simulation: jobs stepping on HGX nodes, the collectors sampling them.

One tick a second: every GPU's temperature and clock move, every job emits the steps that end
before the next tick (a step's pace read from its GPUs' clocks when it starts), every collector
whose phase falls in the tick emits its rows. A story plugs its shapes in through ``Shapes``
hooks; every record carries the fault ids that changed it, so each label spans exactly the
records its fault changed (DESIGN: first to last).
"""

from __future__ import annotations

import hashlib
import math
import random
from dataclasses import dataclass, field

from bench.blind20.world import Gpu, RankNoise, pai_job_pace

THERMAL_S, ECC_S, NIC_S = 10.0, 30.0, 10.0


@dataclass
class Job:
    name: str
    tenant: str
    nodes: list[str]
    tp: int
    pp: int
    dp: int
    compute_ms: list[float]          # per pipeline stage
    reduce_ms: float
    loader_ms: float
    start_ts: float
    port_gbps: float                 # each fabric port's average while the job trains
    save_every_s: float
    save_ms: float
    checksum_every: int = 10
    step: int = 0
    t: float = 0.0                   # end of the last step
    saving: tuple[float, float] = (0.0, 0.0)
    next_save: float = 0.0
    noise: dict = field(default_factory=dict)
    pace_at: int = 0
    last_step_s: float = 1.0

    def placement(self, rank: int) -> tuple[str, int]:
        return self.nodes[rank // 8], rank % 8

    def coords(self, rank: int) -> tuple[int, int, int]:
        """(tp, dp, pp) in Megatron's order: rank = tp + TP * dp + TP * DP * pp."""
        return rank % self.tp, (rank // self.tp) % self.dp, rank // (self.tp * self.dp)

    @property
    def ranks(self) -> int:
        return self.tp * self.pp * self.dp


class Shapes:
    """A story's hooks; the defaults are a healthy cluster."""

    def inlet_c(self, node: str, t: float) -> float:
        return 24.0

    def comm_factor(self, job: Job, t: float) -> tuple[float, set]:
        return 1.0, set()

    def stall_s(self, job: Job, t0: float, t1: float) -> tuple[float, set]:
        """Seconds a step in flight over [t0, t1] waits on the fabric (a flap's retries)."""
        return 0.0, set()

    def host_late(self, job: Job, node: str, t: float) -> tuple[float, tuple, set]:
        """Share of a step a node's GPUs lose to the host side, and which GPUs."""
        return 0.0, (), set()

    def save_factor(self, t: float) -> float:
        return 1.0

    def ecc_step(self, node: str, gpu: int, ecc: dict, t: float, rng) -> tuple[list, set]:
        """Move a GPU's ECC state over one ECC interval; XID events to send (ts, code)."""
        return [], set()

    def nic_tick(self, node: str, nic: str, port: dict, busy: bool, t: float, rng) -> set:
        return set()

    def link_down(self, node: str, nic: str, t: float) -> bool:
        return False

    def thermal_tags(self, node: str, t: float) -> set:
        return set()


class Sim:
    def __init__(self, rng: random.Random, nodes: list[str], jobs: list[Job], shapes: Shapes,
                 t0: float, seconds: float, roce: bool):
        self.rng, self.nodes, self.jobs, self.sh = rng, nodes, jobs, shapes
        self.t0, self.t_end, self.roce = t0, t0 + seconds, roce
        self.recs: list[tuple[float, int, str, dict]] = []
        self.spans: dict[str, list[float]] = {}
        self.gpus = {n: [Gpu(rng.uniform(660, 780), min(0.07, rng.gauss(0.062, 0.004)),
                             idle_w=rng.uniform(64, 76)) for _ in range(8)] for n in nodes}
        self.rows: dict[str, list[dict]] = {n: [{} for _ in range(8)] for n in nodes}
        self.ratio = {n: [1.0] * 8 for n in nodes}
        self.ph = {n: (rng.uniform(0, THERMAL_S), rng.uniform(0, ECC_S), rng.uniform(0, NIC_S))
                   for n in nodes}
        self.ecc = {n: [self._ecc0() for _ in range(8)] for n in nodes}
        self.ports = {n: {f"mlx5_{k}": self._port0() for k in range(8)} for n in nodes}
        self.seq = 0
        for j in jobs:
            j.t = j.start_ts
            j.next_save = j.start_ts + j.save_every_s * rng.uniform(0.4, 1.0)
            j.pace_at = rng.randrange(len(pai_job_pace()))
            j.noise = {r: RankNoise.draw(rng) for r in range(j.ranks)}

    # -- state ----------------------------------------------------------------------------
    def _ecc0(self) -> dict:
        r = self.rng
        return {"sbe_volatile": r.choice([0, 0, 0, 1, 2, 5]), "dbe_volatile": 0,
                "retired_pages_sbe": r.choice([0, 0, 0, 1]), "retired_pages_dbe": 0,
                "row_remap_pending": False, "row_remap_failure": False,
                "pcie_replay": r.choice([0, 0, 0, 1, 3]),
                "nvlink_crc_errors": r.choice([0, 0, 2, 7]), "nvlink_replay_errors": 0,
                "nvlink_recovery_errors": 0, "recovery_action": "none"}

    def _port0(self) -> dict:
        r = self.rng
        p = {"tx_bytes": r.randrange(10**12, 10**14), "rx_bytes": r.randrange(10**12, 10**14),
             "symbol_errors": r.choice([0, 0, 0, 3, 12]), "link_downed": r.choice([0, 0, 1]),
             "rcv_errors": r.choice([0, 0, 1]), "xmit_discards": r.choice([0, 0, 4]),
             "xmit_wait": r.randrange(10**8, 10**10)}
        if self.roce:
            p.update(out_of_sequence=r.randrange(0, 400), packet_seq_err=r.randrange(0, 60),
                     np_cnp_sent=r.randrange(10**4, 10**6),
                     rp_cnp_handled=r.randrange(10**4, 10**6))
        return p

    def emit(self, ts: float, topic: str, value: dict, tags: set = frozenset()) -> None:
        delay = self.rng.uniform(0.03, 0.6)
        self.seq += 1
        self.recs.append((ts + delay, self.seq, topic, value))
        if self.rng.random() < 0.001:          # at-least-once delivery: a second copy
            self.seq += 1
            self.recs.append((ts + delay + self.rng.uniform(0.4, 2.0), self.seq, topic, value))
        for f in tags:
            sp = self.spans.setdefault(f, [ts, ts])
            sp[0], sp[1] = min(sp[0], ts), max(sp[1], ts)

    def node_job(self, node: str, t: float) -> Job | None:
        for j in self.jobs:
            if node in j.nodes and j.start_ts <= t:
                return j
        return None

    def busy(self, node: str, t: float) -> bool:
        j = self.node_job(node, t)
        return j is not None and not (j.saving[0] <= t < j.saving[1])

    # -- the loop -------------------------------------------------------------------------
    def run(self) -> None:
        t = self.t0
        nxt = {n: list(self.ph[n]) for n in self.nodes}
        for n in nxt:
            nxt[n] = [self.t0 + x for x in nxt[n]]
        while t < self.t_end:
            for n in self.nodes:
                b = self.busy(n, t)
                inlet = self.sh.inlet_c(n, t)
                for g, gpu in enumerate(self.gpus[n]):
                    row, ratio = gpu.sample(1.0 if b else 0.0, inlet, 1.0)
                    self.rows[n][g], self.ratio[n][g] = row, ratio
                for name, port in self.ports[n].items():
                    self._nic_tick(n, name, port, b, t)
            for j in self.jobs:
                while j.start_ts <= t + 1.0 and j.t <= t + 1.0 and j.t < self.t_end:
                    self._step(j)
            for n in self.nodes:
                if nxt[n][0] <= t + 1.0:
                    self._thermal(n, nxt[n][0])
                    nxt[n][0] += THERMAL_S
                if nxt[n][1] <= t + 1.0:
                    self._ecc(n, nxt[n][1])
                    nxt[n][1] += ECC_S
                if nxt[n][2] <= t + 1.0:
                    self._nic(n, nxt[n][2])
                    nxt[n][2] += NIC_S
            t += 1.0

    def _nic_tick(self, n: str, name: str, p: dict, busy: bool, t: float) -> None:
        r = self.rng
        j = self.node_job(n, t)
        down = self.sh.link_down(n, name, t)
        if busy and j is not None and not down:
            gbps = j.port_gbps * min(1.0, 1.4 / max(j.last_step_s, 0.1)) * r.uniform(0.9, 1.1)
            p["tx_bytes"] += int(gbps * 1.25e8)
            p["rx_bytes"] += int(gbps * 1.25e8 * r.uniform(0.97, 1.03))
            p["xmit_wait"] += int(r.uniform(2e4, 3e5))
            if self.roce:
                p["np_cnp_sent"] += r.randrange(0, 30)
                p["rp_cnp_handled"] += r.randrange(0, 30)
        elif not down:
            p["tx_bytes"] += r.randrange(2000, 40000)
            p["rx_bytes"] += r.randrange(2000, 40000)
        p["_tags"] = p.get("_tags", set()) | self.sh.nic_tick(n, name, p, busy, t, r)

    def _step(self, j: Job) -> None:
        r = self.rng
        k = j.step
        t_start = j.t
        pace = math.exp(0.5 * pai_job_pace()[(j.pace_at + k // 10) % len(pai_job_pace())])
        cold = 4.0 if k == 0 else (1.25 if k < 5 else 1.0)
        tags: dict[int, set] = {rr: set() for rr in range(j.ranks)}
        raw = {}
        for rr in range(j.ranks):
            node, g = j.placement(rr)
            _, _, pp = j.coords(rr)
            clockf = (1.0 / max(self.ratio[node][g], 0.3)) ** 0.8
            raw[rr] = j.compute_ms[pp] * pace * cold * j.noise[rr].at(k) * clockf
        comp, neither = {}, {}
        groups: dict[tuple, list[int]] = {}
        for rr in range(j.ranks):
            _, dp, pp = j.coords(rr)
            groups.setdefault((dp, pp), []).append(rr)
        save = t_start >= j.next_save
        save_ms = 0.0
        if save:
            save_ms = j.save_ms * r.uniform(0.85, 1.15) * self.sh.save_factor(t_start)
            j.next_save = t_start + j.save_every_s
        for members in groups.values():
            g_ms = max(raw[m] for m in members)
            for m in members:
                comp[m] = g_ms * (1.0 + r.uniform(0.0, 0.003))
                neither[m] = j.loader_ms * r.uniform(0.8, 1.2) + save_ms + r.uniform(0, 3)
        for node in set(j.nodes):
            late, gpus, tg = self.sh.host_late(j, node, t_start)
            if late <= 0.0:
                continue
            for rr in range(j.ranks):
                nd, g = j.placement(rr)
                if nd != node:
                    continue
                extra = late * j.compute_ms[j.coords(rr)[2]] * r.uniform(0.8, 1.2)
                if g in gpus:
                    neither[rr] += extra       # its host-to-device copies replaying
                else:
                    comp[rr] += extra * 0.97   # its TP mates wait inside the layer's all-reduce
                tags[rr] |= tg
        slowest = max(comp[rr] + neither[rr] for rr in comp)
        cf, ctags = self.sh.comm_factor(j, t_start)
        reduce_ms = j.reduce_ms * cf * r.uniform(0.96, 1.04)
        t_guess = t_start + (slowest + reduce_ms) / 1000.0
        stall, stags = self.sh.stall_s(j, t_start, t_guess)
        reduce_ms += stall * 1000.0
        step_ms = slowest + reduce_ms + r.uniform(1.0, 5.0)
        t_end = t_start + step_ms / 1000.0
        if save:
            s0 = t_start + max(comp.values()) / 1000.0
            j.saving = (s0, s0 + save_ms / 1000.0)
        loss_base = 2.05 + 1.6 * math.exp(-(k + 40) / 420.0)
        losses = {dp: loss_base * math.exp(r.gauss(0, 0.012)) for dp in range(j.dp)}
        ck = (k % j.checksum_every) == 0
        for rr in range(j.ranks):
            node, g = j.placement(rr)
            tp, dp, pp = j.coords(rr)
            comm = step_ms - comp[rr] - neither[rr] - r.uniform(0.0, 0.5)
            v = {"ts": round(t_end + r.uniform(0.0, 0.004), 4), "job": j.name, "step": k,
                 "rank": rr, "node": node, "gpu": g, "step_ms": round(step_ms, 3),
                 "compute_ms": round(comp[rr], 3), "comm_ms": round(max(comm, 0.0), 3),
                 "tp_rank": tp, "pp_rank": pp, "dp_rank": dp,
                 "loss": round(losses[dp], 5),
                 "grad_norm": round(0.9 * math.exp(r.gauss(0, 0.04)), 5), "tenant": j.tenant}
            if ck:
                v["param_checksum"] = hashlib.blake2b(
                    f"{j.name}:{tp}:{pp}:{k}".encode(), digest_size=8).hexdigest()
            self.emit(v["ts"], "telemetry.step", v, tags[rr] | (ctags if cf != 1.0 else set())
                      | (stags if stall > 0 else set()))
        j.last_step_s = step_ms / 1000.0 / max(1.0, cold)
        j.t = t_end
        j.step += 1

    def _thermal(self, n: str, ts: float) -> None:
        for g in range(8):
            row = self.rows[n][g]
            if not row:
                continue
            self.emit(ts, "telemetry.thermal", {"ts": round(ts, 3), "node": n, "gpu": g, **row},
                      self.sh.thermal_tags(n, ts))

    def _ecc(self, n: str, ts: float) -> None:
        for g in range(8):
            e = self.ecc[n][g]
            xids, tags = self.sh.ecc_step(n, g, e, ts, self.rng)
            for xts, code in xids:
                self.emit(xts, "telemetry.ecc", {"ts": round(xts, 3), "node": n, "gpu": g,
                                                 "xid": code}, tags)
            self.emit(ts, "telemetry.ecc", {"ts": round(ts, 3), "node": n, "gpu": g, **e}, tags)

    def _nic(self, n: str, ts: float) -> None:
        for name, p in self.ports[n].items():
            down = self.sh.link_down(n, name, ts)
            tags = p.pop("_tags", set())
            v = {"ts": round(ts, 3), "node": n, "nic": name, "port": 1,
                 "link_state": "down" if down else "up", "rate_gbps": None if down else 400.0}
            v.update({k: x for k, x in p.items() if not k.startswith("_")})
            self.emit(ts, "telemetry.nic", v, tags)
