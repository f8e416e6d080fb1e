"""blind22's simulation: a cluster of per-second arrays (GPU load, port traffic, port waits,
link state and rate) that jobs fill in as they step, and collectors that sample them at each
node's own phase into DESIGN's records, every record tagged with the faults that changed it.

A job steps synchronously: a rank's `compute_ms` is its own (its GPU's pace, the job's
per-stage work, a cold start's factor), its loader time and the optimizer's and saves' time are
in neither part, and the wait for the slowest rank plus the exposed all-reduce is `comm_ms`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from bench.blind22 import world


@dataclass
class Spec:
    """What a job does each step (times in ms) and what changes it."""

    job: str
    tenant: str
    tp: int
    pp: int
    compute_ms: tuple[float, ...]          # per pipeline stage
    comm_ms: float                          # exposed all-reduce at full fabric speed
    other_ms: float = 25.0                  # optimizer and bookkeeping
    loader_ms: float = 12.0
    sigma: float = 0.010                    # rank jitter (PAI job 2 residuals)
    port_bytes_s: float = 9e9               # DP traffic on each port of a member node
    checksum: bool = False
    loss: bool = False
    saves: list = field(default_factory=list)      # (t, extra_ms, n_steps, async)
    comm: list = field(default_factory=list)       # (t_from, t_to, fn(t) -> mult, tag)
    stalls: list = field(default_factory=list)     # (node, t_from, fn(rng, t) -> ms, tag)
    sdc: list = field(default_factory=list)        # (node, gpu, t_from, tag)


@dataclass
class Segment:
    """One run of a job between (re)starts: its nodes in rank order."""

    t_begin: float
    t_stop: float
    nodes: list[int]
    step0: int
    gen: int = 0
    cold: tuple[float, ...] = ()           # compute factors of its first steps


class Sim:
    def __init__(self, rng: np.random.Generator, t0: float, dur_s: float, names: list[str],
                 gpus: int = 8, nics: int = 8, roce: bool = False) -> None:
        self.rng, self.t0, self.dur_s, self.names = rng, t0, dur_s, names
        self.gpus, self.nics, self.roce = gpus, nics, roce
        n, s = len(names), int(dur_s) + 4
        self.S = s
        self.load = np.zeros((n, gpus, s))
        self.traffic = np.zeros((n, nics, s))
        self.wait_mult = np.ones((n, nics, s))
        self.down = np.zeros((n, nics, s), dtype=bool)
        self.rate = np.full((n, nics, s), 400.0)
        self.port_ev: dict[tuple[int, int], list] = {}     # (t, field, inc, tag)
        self.gpu_ev: dict[tuple[int, int], list] = {}      # (t, field, value, tag)
        self.silent: dict[tuple[int, int], float] = {}
        self.node_tags: dict[int, list] = {}               # (t_from, tag): every record after
        self.recs: list[tuple[float, str, dict, frozenset]] = []
        self.gpu_off = np.exp(rng.normal(0.0, 0.003, (n, gpus)))
        self.idle_w = rng.uniform(*world.IDLE_W, (n, gpus))
        self.busy_w = rng.uniform(*world.BUSY_W, (n, gpus))
        self.inlet = rng.uniform(23.0, 27.0, n)
        self.wait_base = rng.uniform(2e5, 8e5, (n, nics))

    # -- helpers -----------------------------------------------------------------------------

    def sec(self, t: float) -> int:
        return min(max(int(t - self.t0), 0), self.S - 1)

    def set_load(self, node: int, gpus, t_from: float, t_to: float, level: float) -> None:
        a, b = self.sec(t_from), self.sec(t_to) + 1
        self.load[node, gpus, a:b] = level

    def tags_of(self, node: int, ts: float) -> set:
        return {tag for t, tag in self.node_tags.get(node, ()) if ts >= t}

    # -- a job -------------------------------------------------------------------------------

    def run(self, spec: Spec, seg: Segment) -> dict:
        """Step ``spec`` over ``seg``; returns its last step, end time and save steps."""
        rng = self.rng
        if seg.t_begin >= seg.t_stop:
            return {"last_step": seg.step0 - 1, "end": seg.t_begin, "save_steps": []}
        per_node = self.gpus
        world_size = len(seg.nodes) * per_node
        dp = world_size // (spec.tp * spec.pp)
        ranks = np.arange(world_size)
        tp_r = ranks % spec.tp
        dp_r = (ranks // spec.tp) % dp
        pp_r = ranks // (spec.tp * dp)
        node_r = np.array([seg.nodes[r // per_node] for r in ranks])
        gpu_r = ranks % per_node
        base_c = np.array(spec.compute_ms)[pp_r] * self.gpu_off[node_r, gpu_r]
        k_max = int((seg.t_stop - seg.t_begin) * 1000.0 / min(spec.compute_ms)) + 8
        jit = np.stack([world.jitter(rng, k_max, spec.sigma) for _ in ranks])
        skew = rng.uniform(0.0, 0.006, world_size)
        saves = sorted(x for x in spec.saves if seg.t_begin <= x[0] < seg.t_stop)
        save_steps, pending_async = [], []
        overrides = []
        t, k, i = seg.t_begin, seg.step0, 0
        last_end = seg.t_begin
        while True:
            cold = seg.cold[i] if i < len(seg.cold) else 1.0
            cold_r = cold * (1.0 + (rng.normal(0, 0.03, world_size) if cold > 1.5 else 0.0))
            c = base_c * np.exp(jit[:, min(i, k_max - 1)]) * cold_r
            lo = spec.loader_ms * (1.0 + 0.3 * rng.random(world_size))
            tags = [set() for _ in ranks]
            for node, t_from, fn, tag in spec.stalls:
                if t >= t_from:
                    ms = fn(rng, t)
                    if ms > 0:
                        hit = node_r == node
                        lo[hit] += ms
                        for r in np.flatnonzero(hit):
                            tags[r].add(tag)
                        overrides.append((node, t, t + ms / 1000.0, 0.15))
            mult = 1.0
            for t_from, t_to, fn, tag in spec.comm:
                if t_from <= t <= t_to:
                    mult *= fn(rng, t)
                    if tag:
                        for r in ranks:
                            tags[r].add(tag)
            m = spec.comm_ms * mult * math.exp(rng.normal(0, 0.015))
            o = spec.other_ms * (1.0 + 0.1 * rng.random())
            sync_save = 0.0
            while saves and saves[0][0] <= t:
                _, extra, n_steps, is_async = saves.pop(0)
                save_steps.append(k - 1)
                if is_async:
                    pending_async.extend([extra] * n_steps)
                else:
                    sync_save += extra
            if pending_async:
                o += pending_async.pop(0)
            o += sync_save
            dur = float(np.max(lo + c)) + m + o
            end = t + dur / 1000.0
            if end > seg.t_stop:
                break
            if sync_save:
                for node in seg.nodes:
                    overrides.append((node, end - sync_save / 1000.0, end, 0.25))
            step_ms = round(dur, 1)
            bad = {(n_, g_) for n_, g_, t_from, _ in spec.sdc if t >= t_from}
            for r in ranks:
                n_, g_ = int(node_r[r]), int(gpu_r[r])
                comp = round(float(c[r]), 1)
                comm = math.floor((step_ms - comp - lo[r] - o) * 10.0) / 10.0
                v = {"ts": round(end + skew[r], 4), "job": spec.job, "step": k, "rank": int(r),
                     "node": self.names[n_], "gpu": g_, "step_ms": step_ms,
                     "compute_ms": comp, "comm_ms": comm, "tp_rank": int(tp_r[r]),
                     "pp_rank": int(pp_r[r]), "dp_rank": int(dp_r[r]), "tenant": spec.tenant}
                if spec.loss:
                    v["loss"] = round(2.05 + 1.1 * math.exp(-k / 20000.0)
                                      + float(rng.normal(0, 0.03)), 4)
                    v["grad_norm"] = round(0.82 * math.exp(float(rng.normal(0, 0.05))), 4)
                tg = set(tags[r]) | self.tags_of(n_, end)
                if spec.checksum:
                    if (n_, g_) in bad:
                        v["param_checksum"] = world.hexsum(spec.job, seg.gen, k, "sdc", n_, g_)
                        tg |= {tag for n2, g2, t_from, tag in spec.sdc if (n2, g2) == (n_, g_)}
                    else:
                        v["param_checksum"] = world.hexsum(spec.job, seg.gen, k,
                                                           int(tp_r[r]), int(pp_r[r]))
                self.recs.append((v["ts"], "telemetry.step", v, frozenset(tg)))
            last_end = end
            t, k, i = end + 0.002, k + 1, i + 1
        for node in seg.nodes:
            self.set_load(node, slice(None), seg.t_begin, last_end, 1.0)
            a, b = self.sec(seg.t_begin), self.sec(last_end) + 1
            self.traffic[node, :, a:b] = spec.port_bytes_s * self.rng.uniform(
                0.97, 1.03, (self.nics, 1))
        for node, a, b, level in overrides:
            self.set_load(node, slice(None), a, b, level)
        return {"last_step": k - 1, "end": last_end, "save_steps": save_steps}

    # -- collectors --------------------------------------------------------------------------

    def _times(self, interval: float, node: int, salt: int) -> np.ndarray:
        phase = (np.random.default_rng([node, salt, int(self.t0)]).random() * interval)
        n = int((self.dur_s - phase) // interval) + 1
        return self.t0 + phase + interval * np.arange(n)

    def thermal(self, interval: float) -> None:
        power = world.settle_power(self.load, self.idle_w, self.busy_w)
        temp = world.lagged(power) * world.R_C_PER_W + self.inlet[:, None, None]
        for n, name in enumerate(self.names):
            for ts in self._times(interval, n, 1):
                s = self.sec(ts)
                for g in range(self.gpus):
                    if ts >= self.silent.get((n, g), math.inf):
                        continue
                    ld = float(self.load[n, g, s])
                    pw = float(power[n, g, s]) + float(self.rng.normal(0, 6.0 if ld > .5 else 1))
                    tc = float(temp[n, g, s]) + float(self.rng.normal(0, 0.4))
                    v = {"ts": round(float(ts) + float(self.rng.uniform(0, 0.05)), 3),
                         "node": name, "gpu": g, "gpu_temp_c": round(tc),
                         "mem_temp_c": round(tc + 5.0 + 3.0 * ld), "power_w": round(pw, 1),
                         "sm_clock_mhz": world.clock_of(ld, self.rng),
                         "throttle": 0x1 if ld < 0.05 else 0}
                    self.recs.append((v["ts"], "telemetry.thermal", v,
                                      frozenset(self.tags_of(n, ts))))

    def nic(self, interval: float) -> None:
        tx = np.cumsum(self.traffic, axis=2)
        busy = (self.traffic > 1e8).astype(float)
        wait = np.cumsum(self.wait_base[..., None] * busy * self.wait_mult, axis=2)
        cnp = np.cumsum(busy * 180.0 * self.wait_mult, axis=2)
        tx0 = self.rng.uniform(1e13, 9e13, (len(self.names), self.nics))
        w0 = self.rng.uniform(1e9, 9e9, (len(self.names), self.nics))
        for n, name in enumerate(self.names):
            for ts in self._times(interval, n, 2):
                s = self.sec(ts)
                for p in range(self.nics):
                    cnt = {"symbol_errors": 0, "link_downed": 0, "rcv_errors": 0,
                           "xmit_discards": 0, "out_of_sequence": 0, "packet_seq_err": 0}
                    tg = self.tags_of(n, ts)
                    for t_ev, fld, inc, tag in self.port_ev.get((n, p), ()):
                        if t_ev <= ts:
                            cnt[fld] += inc
                            if tag:
                                tg.add(tag)
                    v = {"ts": round(float(ts) + float(self.rng.uniform(0, 0.05)), 3),
                         "node": name, "nic": f"mlx5_{p}", "port": 1,
                         "link_state": "down" if self.down[n, p, s] else "up",
                         "rate_gbps": float(self.rate[n, p, s]),
                         "tx_bytes": int(tx0[n, p] + tx[n, p, s]),
                         "rx_bytes": int(tx0[n, p] * 1.01 + tx[n, p, s] * 0.998),
                         "symbol_errors": cnt["symbol_errors"],
                         "link_downed": cnt["link_downed"], "rcv_errors": cnt["rcv_errors"],
                         "xmit_discards": cnt["xmit_discards"],
                         "xmit_wait": int(w0[n, p] + wait[n, p, s])}
                    if self.roce:
                        v["out_of_sequence"] = cnt["out_of_sequence"]
                        v["packet_seq_err"] = cnt["packet_seq_err"]
                        v["np_cnp_sent"] = int(w0[n, p] / 1e4 + cnp[n, p, s])
                        v["rp_cnp_handled"] = int(w0[n, p] / 1.1e4 + cnp[n, p, s] * 0.97)
                    self.recs.append((v["ts"], "telemetry.nic", v, frozenset(tg)))

    def ecc(self, interval: float) -> None:
        for n, name in enumerate(self.names):
            for ts in self._times(interval, n, 3):
                for g in range(self.gpus):
                    if ts >= self.silent.get((n, g), math.inf):
                        continue
                    st = {"sbe_volatile": 0, "dbe_volatile": 0, "retired_pages_sbe": 0,
                          "retired_pages_dbe": 0, "row_remap_pending": False,
                          "row_remap_failure": False, "pcie_replay": 0,
                          "nvlink_crc_errors": 0, "nvlink_replay_errors": 0,
                          "nvlink_recovery_errors": 0, "recovery_action": "none"}
                    tg = self.tags_of(n, ts)
                    for t_ev, fld, val, tag in self.gpu_ev.get((n, g), ()):
                        if t_ev <= ts:
                            st[fld] = st[fld] + val if isinstance(st[fld], int) and not \
                                isinstance(st[fld], bool) else val
                            if tag:
                                tg.add(tag)
                    v = {"ts": round(float(ts) + float(self.rng.uniform(0, 0.05)), 3),
                         "node": name, "gpu": g, **st}
                    self.recs.append((v["ts"], "telemetry.ecc", v, frozenset(tg)))

    def xid(self, ts: float, node: int, gpu: int, code: int, tag: str | None) -> None:
        """An XID event: its own message, the code only (DESIGN: one sample an event)."""
        v = {"ts": round(ts, 3), "node": self.names[node], "gpu": gpu, "xid": code}
        self.recs.append((v["ts"], "telemetry.ecc", v, frozenset({tag} if tag else ())))
