"""blind28's world: 8-GPU HGX H100 nodes that several tenants' jobs share.

A node has 8 GPUs and 4 NICs (`mlx5_0..3`), GPUs 2k and 2k+1 behind one PCIe switch with NIC k
(the default GPU-to-NIC rule of topologies/README.md). A bin-packing scheduler gives jobs GPU
sets that cut across those pairs, so one NIC carries two tenants' collectives, one power
supply and one set of fans feed every job on the node.

Physics (my numbers, argued in README.md):
- **Steps**: synchronous data parallelism (TP inside a node when ``tp`` > 1). A rank's compute is
  the job's base x real PAI noise x the GPU's state (a hidden slowdown, SW thermal slowdown, a
  power brake); a TP group waits inside compute for its slowest member; every rank waits for the
  slowest rank, then the all-reduce, whose time is set by the most loaded or damaged NIC any rank
  uses (a ring moves at its slowest link). ``step_ms = compute + comm + neither`` on every rank.
- **Thermal** (10 s): power from load (idle 60-70 W `0x1`; busy = the job's demand; at the 700 W
  limit the clock gives, `0x4`), die = inlet + R x power through a 25 s lag; past 88 C SW thermal
  slowdown (`0x20`) holds it by cutting power and clock; a power brake (`0x80`) drops the board to
  ~250 W and 40-50 % of its clock.
- **Ports** (10 s): bytes from every job behind the port, `xmit_wait` when they exceed ~70 % of
  line rate; **ECC** (30 s): cumulative DCGM counters, an XID as its own row.

`Log` keeps records with the faults that changed them, the routine shapes (effects) and writes
the incident log in arrival order with DESIGN's disorder, labels last.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import math
import random
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

from bench.blind28 import noise

GPUS, NICS = 8, 4
CAP_W, IDLE_W, CLOCK = 700.0, 65.0, 1980.0
HOLD_C = 88.0
LINE_GBS = 50.0           # 400 Gb/s in GB/s
THERMAL_S, NIC_S, ECC_S = 10.0, 10.0, 30.0


def nic_of(gpu: int) -> str:
    return f"mlx5_{gpu // 2}"


@dataclass
class Job:
    """One run of a synchronous job: ``gpus`` in rank order (rank = dp * tp + tp_rank)."""
    name: str
    tenant: str
    gpus: list[tuple[str, int]]
    tp: int
    compute_ms: float
    comm_ms: float
    start: float
    end: float
    demand_w: float
    nic_gbs: float = 4.0            # GB/s a rank puts on its NIC while training
    save_every: int = 60
    save_s: tuple[float, float] = (4.0, 7.0)
    first_step: int = 1
    checksum: bool = False
    cov: float = 0.02
    resume_of: Job | None = None    # a restart from that run's last checkpoint
    uploads: list[tuple[float, float]] = field(default_factory=list)  # checkpoint uploads
    # filled by the simulation
    ended: float | None = None      # its processes gone (a crash), GPUs idle from then
    died: float | None = None       # the XID that killed the step in flight
    saves: list[tuple[float, float]] = field(default_factory=list)
    last_save_step: int = 0


@dataclass
class Serve:
    """A single-GPU inference server: no step telemetry, power follows its traffic."""
    node: str
    gpu: int
    start: float
    end: float
    bursts: list[tuple[float, float, float]]   # (t0, t1, extra load)


class Log:
    """Records with the faults that changed them, effects and labels; the writer."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.recs: list[tuple[float, int, str, dict]] = []
        self.marks: dict[str, list[float]] = defaultdict(list)
        self.faults: dict[str, dict] = {}
        self.effects: list[dict] = []

    def fault(self, fid: str, kind: str, cause: str, scope: dict, attributable: bool) -> str:
        self.faults[fid] = {"fault_id": fid, "kind": kind, "cause": cause, "scope": scope,
                            "attributable": attributable}
        return fid

    def effect(self, name: str, scope: dict, t0: float, t1: float) -> None:
        self.effects.append({"effect": name, "scope": scope, "start_ts": round(t0, 3),
                             "end_ts": round(t1, 3), "expect": "pages nobody"})

    def emit(self, topic: str, value: dict, *fids: str) -> None:
        ts = value["ts"]
        r = self.rng.random()
        late = self.rng.uniform(0.4, 2.5) if r < 0.004 else self.rng.uniform(0.03, 0.4)
        self.recs.append((ts + late, len(self.recs), topic, value))
        if self.rng.random() < 0.001:   # a duplicate, delivered again up to 1.5 s later
            self.recs.append((ts + late + self.rng.uniform(0.05, 1.5), len(self.recs), topic,
                              value))
        for f in fids:
            if f:
                self.marks[f].append(ts)

    def labels(self) -> list[dict]:
        out = []
        for fid, lab in self.faults.items():
            ts = self.marks.get(fid)
            if ts:
                out.append({**lab, "start_ts": round(min(ts), 3), "end_ts": round(max(ts), 3)})
        return out

    def write(self, path: Path, topology: dict) -> Path:
        path.parent.mkdir(parents=True, exist_ok=True)
        with path.open("wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", compresslevel=5,
                                                    mtime=0) as gz, \
                io.TextIOWrapper(gz, encoding="utf-8") as fh:
            fh.write(_line({"topic": "topology", "value": topology}))
            for _, _, topic, value in sorted(self.recs, key=lambda x: (x[0], x[1])):
                fh.write(_line({"topic": topic, "value": value}))
            for lab in self.labels():
                fh.write(_line({"topic": "labels", "value": lab}))
        fx = path.with_name(path.name.replace(".jsonl.gz", ".effects.json"))
        fx.write_text(json.dumps(sorted(self.effects, key=lambda e: e["start_ts"]), indent=1))
        return path


def _line(rec: dict) -> str:
    """One record, compact (blind11's scorer finds labels by their line's first bytes)."""
    return json.dumps(rec, separators=(",", ":")) + "\n"


def _in(spans, t: float) -> bool:
    return any(a <= t < b for a, b, *_ in spans)


class World:
    """The nodes, the jobs and servers on them, the faults; renders every topic into a Log."""

    def __init__(self, seed: int, t0: float, minutes: float, nodes: list[str]) -> None:
        self.rng = random.Random(seed)
        self.t0, self.t1 = t0, t0 + minutes * 60.0
        self.nodes = nodes
        self.log = Log(random.Random(seed * 7919 + 1))
        self.inlet = {n: self.rng.uniform(23.0, 30.0) for n in nodes}
        self.res = {(n, g): self.rng.uniform(0.056, 0.064) for n in nodes for g in range(GPUS)}
        self.jobs: list[Job] = []
        self.serves: list[Serve] = []
        # faults: (t0, t1, factor, fid)
        self.slow: dict[tuple[str, int], list] = defaultdict(list)
        self.nic_bad: dict[tuple[str, str], list] = defaultdict(list)   # (t0, t1, kind, fid)
        self.brakes: dict[str, list] = defaultdict(list)                # (t0, t1, fid)
        self.fans: dict[str, tuple] = {}                                # (t0, ramp_s, x, fid)
        self.xids: dict[tuple[str, int], tuple] = {}                    # (t, code, fid)
        self.sdc: dict[tuple[str, int], tuple] = {}                     # (t0, fid)
        self.stalls: list[tuple[str, float, float]] = []                # host stalls (node, t, s)
        self._hot: dict[tuple[str, int], list] = {}     # 0x20 spans: (t0, t1, factor, fid)
        self._flaps: dict[tuple[str, str], list] = defaultdict(list)    # (down at, for s)

    # -- what a GPU / port is doing -------------------------------------------------------

    def job_on(self, node: str, gpu: int, t: float) -> Job | None:
        for j in self.jobs:
            end = j.ended if j.ended is not None else j.end
            if j.start <= t < end and (node, gpu) in j.gpus:
                return j
        return None

    def serve_on(self, node: str, gpu: int, t: float) -> Serve | None:
        for s in self.serves:
            if (s.node, s.gpu) == (node, gpu) and s.start <= t < s.end:
                return s
        return None

    def nic_load(self, node: str, nic: str, t: float) -> float:
        """GB/s every job puts on the port at ``t`` (uploads run at ~90 % of line rate)."""
        load = 0.0
        for g in range(GPUS):
            if nic_of(g) != nic:
                continue
            j = self.job_on(node, g, t)
            if j is not None:
                load += j.nic_gbs
                if _in(j.uploads, t):
                    load += 0.9 * LINE_GBS / sum(1 for x in range(GPUS) if nic_of(x) == nic
                                                 and self.job_on(node, x, t) is j)
        return load

    def nic_factor(self, node: str, nic: str, t: float) -> tuple[float, str | None]:
        """How much slower a collective through this port runs, and the fault behind it."""
        f, fid = max(1.0, self.nic_load(node, nic, t) / (0.7 * LINE_GBS)), None
        for a, b, kind, x, fault in self.nic_bad[(node, nic)]:
            if a <= t < b and (kind == "ber" or self._down(node, nic, t)):
                f, fid = f * x, fault
        return f, fid

    def _down(self, node: str, nic: str, t: float) -> bool:
        for a, b, kind, _, _ in self.nic_bad[(node, nic)]:
            if kind == "flap" and a <= t < b:
                return any(d <= t < d + s for d, s in self._flaps[(node, nic)])
        return False

    def gpu_factor(self, node: str, gpu: int, t: float) -> tuple[float, list[str]]:
        f, fids = 1.0, []
        for a, b, x, fid in self.slow[(node, gpu)]:
            if a <= t < b:
                f *= x
                fids.append(fid)
        for a, b, x, fid in self._hot.get((node, gpu), []):
            if a <= t < b:
                f *= x
                fids.append(fid)
        for a, b, fid in self.brakes[node]:
            if a <= t < b:
                f *= 1.9
                fids.append(fid)
        return f, fids

    # -- thermal first (it sets SW thermal slowdown's spans), then steps, ports, ECC ------

    def render(self) -> Log:
        for j in self.jobs:             # a job dies in the step in flight at its GPU's XID
            crash = min((x[0] for key, x in self.xids.items() if key in j.gpus
                         and j.start < x[0] < j.end), default=None)
            if crash is not None:
                j.died, j.ended = crash, crash + self.rng.uniform(0.5, 2.0)
        self._thermal()
        for j in sorted(self.jobs, key=lambda j: j.start):
            self._steps(j)
        self._ports()
        self._ecc()
        return self.log

    def _thermal(self) -> None:
        rng = self.rng
        for n in self.nodes:
            phase = rng.uniform(0, THERMAL_S)
            fan = self.fans.get(n)
            for g in range(GPUS):
                temp = self.inlet[n] + 5.0
                hot_from = None
                spans: list[tuple[float, float, float, str]] = []
                t = self.t0 + phase
                while t < self.t1:
                    fids = []
                    j, s = self.job_on(n, g, t), self.serve_on(n, g, t)
                    if j is not None:
                        demand = j.demand_w * rng.uniform(0.97, 1.02)
                        if _in(j.saves, t):
                            demand = rng.uniform(140, 170)
                    elif s is not None:
                        load = 0.35 + sum(x for a, b, x in s.bursts if a <= t < b)
                        demand = IDLE_W + load * 560.0 * rng.uniform(0.92, 1.06)
                    else:
                        demand = IDLE_W * rng.uniform(0.94, 1.06)
                    busy = j is not None or s is not None
                    res = self.res[(n, g)]
                    if fan:
                        a, ramp, x, fid = fan
                        if t >= a:
                            res *= 1 + (x - 1) * min(1.0, (t - a) / ramp)
                            fids.append(fid)
                    throttle = 0 if busy else 0x1
                    power, clock = demand, CLOCK if busy else 345.0
                    if power > CAP_W:
                        throttle |= 0x4
                        clock *= (CAP_W / power) ** 0.6
                        power = CAP_W * rng.uniform(0.985, 1.0)
                    brake = [f for a, b, f in self.brakes[n] if a <= t < b]
                    if brake and busy:
                        throttle = (throttle & ~0x4) | 0x80
                        power, clock = rng.uniform(230, 270), CLOCK * rng.uniform(0.4, 0.5)
                        fids += brake
                    target = self.inlet[n] + res * power
                    temp += (target - temp) * (1 - math.exp(-THERMAL_S / 25.0))
                    if busy and temp > HOLD_C:
                        allowed = (HOLD_C - self.inlet[n]) / res
                        clock *= max(0.6, (allowed / power) ** 0.5)
                        power = max(200.0, allowed * rng.uniform(0.98, 1.01))
                        temp = HOLD_C + rng.uniform(-0.8, 0.9)
                        throttle |= 0x20
                        if hot_from is None:
                            hot_from = t
                        spans.append((t, t + THERMAL_S, 1.0 + 0.9 * (1 - clock / CLOCK), fids[0]
                                      if fids else ""))
                    self.log.emit("telemetry.thermal", {
                        "ts": round(t, 3), "node": n, "gpu": g,
                        "gpu_temp_c": round(temp + rng.gauss(0, 0.3)),
                        "mem_temp_c": round(temp + 4.0 + 0.004 * power + rng.gauss(0, 0.3)),
                        "power_w": round(power + rng.gauss(0, 3.0), 1),
                        "sm_clock_mhz": round(clock / 15.0) * 15.0, "throttle": throttle},
                        *fids)
                    t += THERMAL_S
                if spans:
                    self._hot[(n, g)] = [(a, b, x, f) for a, b, x, f in spans]

    def _steps(self, j: Job) -> None:
        rng = self.rng
        size = len(j.gpus)
        streams = [noise.stream(rng, 4000) for _ in range(size)]
        wander = noise.stream(rng, 4000)
        if j.resume_of is not None:
            j.first_step = j.resume_of.last_save_step + 1
        t, step, k = j.start, j.first_step, 0
        if j.start < self.t0:           # running when the log opens: warm, mid-run
            t, k = self.t0 + rng.uniform(0, j.compute_ms / 1000.0), 4
        loss = rng.uniform(2.1, 2.6) * (1 + 0.3 * math.exp(-j.first_step / 2000.0))
        crash = j.died
        while t < min(j.end, self.t1):
            cold = (2.3, 1.5, 1.15, 1.04)[k] if k < 4 else 1.0
            base = j.compute_ms * cold * (1 + 0.006 * wander[k % 4000] / noise.SD)
            comp, fids = [], []
            for r, (n, g) in enumerate(j.gpus):
                f, fr = self.gpu_factor(n, g, t)
                c = base * (1 + j.cov * streams[r][k % 4000] / noise.SD) * f
                if rng.random() < 0.0015:       # a GC pause: one rank, one step
                    c += rng.uniform(300, 900)
                comp.append(c)
                fids.append(fr)
            for n, s0, dur in self.stalls:      # a host stall: every rank of the node
                if s0 <= t < s0 + 4.0:
                    for r, (nn, _) in enumerate(j.gpus):
                        if nn == n:
                            comp[r] += dur * 1000.0
            if j.tp > 1:                        # TP all-reduce inside compute
                for d in range(size // j.tp):
                    grp = range(d * j.tp, (d + 1) * j.tp)
                    top = max(comp[r] for r in grp)
                    for r in grp:
                        comp[r] += 0.85 * (top - comp[r])
            cmax = max(comp)
            nf = [self.nic_factor(n, nic_of(g), t) for n, g in j.gpus]
            worst = max(x for x, _ in nf)
            ar = j.comm_ms * worst * rng.uniform(0.97, 1.04)
            save = 0.0
            if step % j.save_every == 0:
                save = rng.uniform(*j.save_s) * 1000.0
            neither = [rng.uniform(12, 40) for _ in range(size)]
            step_ms = cmax + ar + max(neither) + save
            t_end = t + step_ms / 1000.0
            if crash is not None and t_end > crash:
                break
            if save:
                j.saves.append((t_end - save / 1000.0, t_end))
                j.last_save_step = step
            loss *= 1 - rng.uniform(0, 2e-4)
            for r, (n, g) in enumerate(j.gpus):
                tp_rank, dp = r % j.tp, r // j.tp
                rank_step = cmax + ar + neither[r] + save + rng.uniform(0, 4)
                v = {"ts": round(t + rank_step / 1000.0, 3), "job": j.name, "step": step,
                     "rank": r, "node": n, "gpu": g, "step_ms": round(rank_step, 2),
                     "compute_ms": round(comp[r], 2), "comm_ms": round(cmax - comp[r] + ar, 2),
                     "tp_rank": tp_rank, "pp_rank": 0, "dp_rank": dp,
                     "loss": round(loss * (1 + rng.gauss(0, 0.01)), 4),
                     "grad_norm": round(rng.lognormvariate(0, 0.1), 4), "tenant": j.tenant}
                mine = list(fids[r])
                if j.checksum:
                    salt = ""
                    bad = self.sdc.get((n, g))
                    if bad and t >= bad[0]:
                        salt = f"flip{step}"
                        mine.append(bad[1])
                    v["param_checksum"] = hashlib.blake2b(
                        f"{j.name}:{tp_rank}:{step}{salt}".encode(), digest_size=8).hexdigest()
                if nf[r][1]:
                    mine.append(nf[r][1])
                self.log.emit("telemetry.step", v, *mine)
            t, step, k = t_end, step + 1, k + 1

    def _ports(self) -> None:
        rng = self.rng
        for n in self.nodes:
            phase = rng.uniform(0, NIC_S)
            for i in range(NICS):
                nic = f"mlx5_{i}"
                tx = rx = rng.randrange(10**12, 10**14)
                sym = rng.randrange(0, 20)
                rcv = downed = wait = 0
                bad = self.nic_bad[(n, nic)]
                t = self.t0 + phase
                while t < self.t1:
                    fid = None
                    load = self.nic_load(n, nic, t)
                    # a port moves at most its line rate; the rest waits (xmit_wait)
                    moved = min(load, 0.97 * LINE_GBS) * NIC_S * 1e9 * rng.uniform(0.97, 1.03)
                    state = "up"
                    for a, b, kind, x, f in bad:
                        if a <= t < b:
                            fid = f
                            if kind == "ber":
                                sym += int(10 ** (1.0 + 2.5 * min(1.0, (t - a) / 240.0))
                                           * rng.uniform(0.6, 1.4))
                                rcv += rng.randrange(2, 40)
                                moved /= x
                            elif self._down(n, nic, t):
                                state = "down"
                                moved = 0.0
                                sym += rng.randrange(50, 400)
                            if kind == "flap" and any(
                                    t - NIC_S <= d < t for d, _ in self._flaps[(n, nic)]):
                                downed += 1
                    if fid is None and rng.random() < 0.004:
                        sym += 1              # a lone symbol error: routine
                    if load > 0.7 * LINE_GBS:
                        wait += int((load / (0.7 * LINE_GBS) - 1) * 4e6 * rng.uniform(0.7, 1.3))
                    tx += int(moved)
                    rx += int(moved * rng.uniform(0.97, 1.03))
                    self.log.emit("telemetry.nic", {
                        "ts": round(t, 3), "node": n, "nic": nic, "port": 1,
                        "link_state": state, "rate_gbps": 400.0, "tx_bytes": tx, "rx_bytes": rx,
                        "symbol_errors": sym, "link_downed": downed, "rcv_errors": rcv,
                        "xmit_discards": 0, "xmit_wait": wait}, fid or "")
                    t += NIC_S

    def _ecc(self) -> None:
        rng = self.rng
        for n in self.nodes:
            phase = rng.uniform(0, ECC_S)
            for g in range(GPUS):
                sbe, dbe, pages, action, fid = 0, 0, 0, "none", ""
                x = self.xids.get((n, g))
                if x:
                    self.log.emit("telemetry.ecc", {"ts": round(x[0], 3), "node": n, "gpu": g,
                                                    "xid": x[1]}, x[2])
                t = self.t0 + phase
                while t < self.t1:
                    if rng.random() < 0.003:
                        sbe += 1                # a lone corrected error: routine
                    if x and t >= x[0]:
                        dbe, pages, action, fid = 1, 1, "gpu_reset", x[2]
                    self.log.emit("telemetry.ecc", {
                        "ts": round(t, 3), "node": n, "gpu": g, "sbe_volatile": sbe,
                        "dbe_volatile": dbe, "retired_pages_sbe": 0, "retired_pages_dbe": pages,
                        "row_remap_pending": bool(pages), "row_remap_failure": False,
                        "pcie_replay": 0, "nvlink_crc_errors": 0, "nvlink_replay_errors": 0,
                        "nvlink_recovery_errors": 0, "recovery_action": action}, fid)
                    t += ECC_S
