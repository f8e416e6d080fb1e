"""The stories: `lake` (three jobs on 17 HGX H100 nodes, a lagging Kafka partition, four
faults) and `grow` (a torchrun-elastic job growing onto two nodes, re-ranked, then hung).

``build(story, seed, minutes)`` returns the records (each with the time it *arrives*: event time
plus the lag of its partition), the labels and the routine effects. What each shape is and
why it is labelled so: README.md.
"""

from __future__ import annotations

import math
import random

from bench.blind13 import jobs, world

STORIES = ("lake", "grow")


class Spans:
    """First and last event time of the records each fault changed (a label's span)."""

    def __init__(self) -> None:
        self.span: dict = {}

    def touch(self, key: str, ts: float) -> None:
        lo, hi = self.span.get(key, (ts, ts))
        self.span[key] = (min(lo, ts), max(hi, ts))

    def of(self, *keys: str) -> tuple:
        got = [self.span[k] for k in keys if k in self.span]
        return (min(a for a, _ in got), max(b for _, b in got)) if got else (None, None)


def _gpu_label(fid, kind, cause, node, gpu, span, attributable=True) -> dict | None:
    """A gpu label over the span its records changed (None when a short log has none)."""
    if span[0] is None:
        return None
    return {"fault_id": fid, "kind": kind, "cause": cause,
            "scope": {"level": "gpu", "node": node, "gpu": gpu},
            "start_ts": round(span[0], 3), "end_ts": round(span[1], 3),
            "attributable": attributable}


def collect(gpus: dict, ports: dict, t0: float, t_end: float, rng: random.Random,
            spans: Spans, gpu_keys: dict, port_keys: dict) -> list:
    """Every collector's rows; a row of a unit named in gpu_keys / port_keys that its fault
    changed marks that fault's span."""
    def marker(key):
        return (lambda ts: spans.touch(key, ts)) if key else (lambda ts: None)

    tele = []
    for (n, g), s in gpus.items():
        touch = marker(gpu_keys.get((n, g)))
        tele += world.thermal_rows(n, g, s, t0, t_end, rng, touch)
        tele += world.ecc_rows(n, g, s, t0, t_end, rng, touch)
    for (n, k), p in ports.items():
        tele += world.nic_rows(n, k, p, t0, t_end, rng, marker(port_keys.get((n, k))))
    return tele


def build(story: str, seed: int, minutes: float = 15.0):
    return {"lake": build_lake, "grow": build_grow}[story](seed, minutes)


def build_lake(seed: int, minutes: float = 15.0):
    rng = random.Random(f"blind13/lake/{seed}")
    t0 = 1_796_000_000.0 + seed * 86_400.0
    dur = minutes * 60.0
    t_end = t0 + dur

    def at(lo: float, hi: float) -> float:
        return t0 + dur * rng.uniform(lo, hi)

    spans, effects = Spans(), []
    gpus = {(n, g): world.GpuState() for n in world.NODES for g in range(world.GPUS)}
    ports = {(n, k): world.PortState() for n in world.NODES for k in world.NICS}

    def busy(node, gpu, a, b):
        gpus[node, gpu].busy.add(a, b)
        ports[node, world.NICS[gpu]].busy.add(a, b)     # GPU k's nearest NIC is the k-th

    lp = seed % 4                               # the lagging partition
    lag_nodes = [n for n in world.NODES if world.partition_of(n) == lp]
    pt_nodes, cp_nodes, ft_nodes = (world.NODES[0:8], world.NODES[8:12],
                                    world.NODES[12:16])
    spare = world.NODES[16]

    # ---- routine: a shared-filesystem metadata stall hits every job's loader at once
    fs0, fs_len = at(0.36, 0.46), rng.uniform(25.0, 70.0)
    effects.append({"effect": "shared_fs_stall", "scope": {"level": "cluster"},
                    "start_ts": fs0, "end_ts": fs0 + fs_len})

    def fs_stall(t_start: float) -> float:
        if fs0 <= t_start < fs0 + fs_len:
            return fs0 + fs_len - t_start + rng.uniform(0.1, 0.4)
        return 0.0

    # ---- fault: corrected errors climbing for minutes, a remap pending, then a DBE
    sbe_node = rng.choice([n for n in pt_nodes if n in lag_nodes])
    sbe_gpu = rng.randrange(8)
    a, td = at(0.08, 0.18), rng.uniform(45.0, 70.0)
    t_dbe = at(0.74, 0.84)
    t_kill = t_dbe + rng.uniform(0.2, 1.5)
    st = gpus[sbe_node, sbe_gpu]
    st.sbe_rate = lambda t: (0.0 if t < a or t > t_kill
                             else min(40.0, 0.03 * 2.0 ** ((t - a) / td)))
    t_remap = at(0.45, 0.55)
    st.events += [(t_remap, "xid", 63), (t_remap, "remap_pending", True),
                  (t_dbe, "xid", 48), (t_dbe + rng.uniform(0.02, 0.1), "xid", 94),
                  (t_dbe, "dbe", 1), (t_dbe + 0.5, "recovery_action", "gpu_reset")]
    t92 = a + td * math.log2(8.0 / 0.03)
    if t92 < t_dbe:
        st.events.append((t92, "xid", 92))

    # ---- fault: a cold plate losing flow: one cp-long GPU heats up and throttles
    th_node = next(n for n in cp_nodes if n in lag_nodes)
    th_gpu, b = rng.randrange(8), at(0.22, 0.38)
    ramp, peak, clk = rng.uniform(60.0, 120.0), rng.uniform(22.0, 27.0), rng.uniform(1500, 1650)
    slow_f = 1.0 + 0.8 * (world.MAX_CLOCK_MHZ / clk - 1.0)

    def heat(t: float, is_busy: bool):
        if t < b:
            return None
        x = min(1.0, (t - b) / ramp)
        if not is_busy:
            return (x * peak * 0.3, None, 0)
        if x < 0.7:
            return (x * peak, None, 0)
        return (x * peak, clk + rng.uniform(-20.0, 20.0), 0x20 if x < 1.0 else 0x60)

    gpus[th_node, th_gpu].thermal_overlay = heat

    def th_slow(node, gpu, t):
        if node != th_node or gpu != th_gpu or t < b:
            return 1.0
        x = min(1.0, (t - b) / ramp)
        return slow_f if x >= 0.7 else 1.0 + 0.03 * x

    # ---- fault: an IB port flapping every few minutes under ft-small
    fl_node = next(n for n in ft_nodes if n in lag_nodes)
    fl_nic = rng.choice(world.NICS)
    flaps, tf = [], at(0.18, 0.3)
    while tf < t_end - 30.0:
        flaps.append((tf, rng.uniform(5.0, 14.0), rng.randrange(40, 400)))
        tf += rng.uniform(90.0, 200.0)
    ports[fl_node, fl_nic].flaps = flaps

    def flap_stall(c0: float, c1: float) -> float:
        return sum(d + rng.uniform(1.5, 3.0) for tdn, d, _ in flaps if c0 <= tdn < c1)

    # ---- fault: one cp-long GPU's parameters diverge (SDC) from a step on
    sdc_node = cp_nodes[(lp + 1) % 4]
    sdc_gpu = rng.randrange(8)

    pt = jobs.Job("pt-lake", "research", pt_nodes, 8, 1, 8, 2.05, 0.34, 100, (10.0, 14.0),
                  10, 41_200 + 37 * seed, neither_extra=fs_stall)
    cp = jobs.Job("cp-long", "research", cp_nodes, 2, 4, 4, 2.7, 0.55, 50, (8.0, 12.0), 5,
                  8_800 + 11 * seed, slow=th_slow, neither_extra=fs_stall)
    ft = jobs.Job("ft-small", "product", ft_nodes, 4, 1, 8, 0.72, 0.16, 200, (5.0, 8.0), 20,
                  2_300 + 5 * seed, comm_stall=flap_stall, neither_extra=fs_stall)
    sdc_step = cp.start_step + int(dur * rng.uniform(0.55, 0.7) / (cp.compute_s + cp.comm_s))
    cp.bad_checksum = lambda n, g, s: n == sdc_node and g == sdc_gpu and s >= sdc_step
    for job, watts in ((pt, 600.0), (cp, 640.0), (ft, 520.0)):
        for n in job.nodes:
            for g in range(8):
                gpus[n, g].load_w = watts * rng.uniform(0.96, 1.04)

    steps = []
    for job in (cp, ft):
        job.runs = [(t0 + rng.uniform(0.0, 3.0), None, job.nodes, job.start_step, False)]
        steps += jobs.run(job, t_end, rng, busy, effects, spans.touch)
    pt.runs = [(t0 + rng.uniform(0.0, 3.0), t_kill, pt_nodes, pt.start_step, False)]
    first = jobs.run(pt, t_end, rng, busy, effects, spans.touch)
    steps += first
    done = max(v["step"] for _, v in first)
    resume = done - done % pt.ckpt_every
    new_nodes = [spare if n == sbe_node else n for n in pt_nodes]
    t_back = t_dbe + rng.uniform(70.0, 110.0)
    if t_back < t_end - 30.0:
        pt.runs = [(t_back, None, new_nodes, resume, True)]
        steps += jobs.run(pt, t_end, rng, busy, effects, spans.touch)
        effects.append({"effect": "restart_on_spare", "scope": {"level": "node",
                                                                "node": spare},
                        "start_ts": t_back, "end_ts": t_back + 60.0})

    tele = collect(gpus, ports, t0, t_end, rng, spans,
                   {(sbe_node, sbe_gpu): "sbe", (th_node, th_gpu): "therm"},
                   {(fl_node, fl_nic): "flap"})

    # ---- delivery: one partition of the node-keyed topics lags; a rebalance re-delivers
    lag_s = rng.uniform(2.0, 3.0) if seed % 2 == 0 else rng.uniform(3.8, 4.8)
    l0, l1 = t0 + 0.1 * dur, t0 + 0.9 * dur

    def lag(ts: float) -> float:
        return lag_s * max(0.0, min(1.0, (ts - l0) / 60.0, (l1 - ts) / 60.0))

    for n in lag_nodes:
        effects.append({"effect": "partition_lag", "scope": {"level": "node", "node": n},
                        "start_ts": l0, "end_ts": l1})
    t_reb, dup_part = at(0.6, 0.7), (lp + 2) % 4
    effects.append({"effect": "rebalance_duplicates", "scope": {"level": "job",
                                                                "job": "ft-small"},
                    "start_ts": t_reb - 4.0, "end_ts": t_reb + 0.5})
    records = []
    for topic, v in tele:
        late = lag(v["ts"]) if world.partition_of(v["node"]) == lp else 0.0
        records.append((v["ts"] + late, topic, v))
        if world.partition_of(v["node"]) == dup_part and t_reb - 4.0 <= v["ts"] < t_reb:
            records.append((t_reb + rng.uniform(0.1, 0.5), topic, v))
    for topic, v in steps:
        records.append((v["ts"], topic, v))
        if v["job"] == "ft-small" and t_reb - 4.0 <= v["ts"] < t_reb:
            records.append((t_reb + rng.uniform(0.1, 0.5), topic, v))

    labels = [
        _gpu_label("sbe-aging", "hardware", "gpu_memory", sbe_node, sbe_gpu,
                   spans.of("sbe")),
        _gpu_label("cold-plate", "slow_node", "thermal", th_node, th_gpu,
                   spans.of("therm", f"cp-long:slow:{th_node}/{th_gpu}")),
        _gpu_label("cp-sdc", "sdc", "gpu_hardware", sdc_node, sdc_gpu,
                   spans.of("cp-long:sdc")),
    ]
    lo, hi = spans.of("flap", "ft-small:stall")
    labels.append({"fault_id": "ib-flap", "kind": "network", "cause": "nic",
                   "scope": {"level": "nic", "node": fl_node, "nic": fl_nic, "port": 1},
                   "start_ts": round(lo, 3) if lo else None,
                   "end_ts": round(hi, 3) if hi else None, "attributable": True})
    labels = [lab for lab in labels if lab and lab["start_ts"] is not None]
    return world.topology_text(), records, labels, effects


def build_grow(seed: int, minutes: float = 15.0):
    rng = random.Random(f"blind13/grow/{seed}")
    t0 = 1_796_500_000.0 + seed * 86_400.0
    dur = minutes * 60.0
    t_end = t0 + dur

    def at(lo: float, hi: float) -> float:
        return t0 + dur * rng.uniform(lo, hi)

    spans, effects = Spans(), []
    nodes = world.GROW_NODES
    gpus = {(n, g): world.GpuState() for n in nodes for g in range(world.GPUS)}
    ports = {(n, k): world.PortState() for n in nodes for k in world.NICS}

    def busy(node, gpu, a, b):
        gpus[node, gpu].busy.add(a, b)
        ports[node, world.NICS[gpu]].busy.add(a, b)

    first4, pair, rest = nodes[0:4], nodes[4:6], nodes[6:8]
    # ---- routine: ev-b (an evaluation job, low power) ends; el-pt grows onto its nodes
    ev = jobs.Job("ev-b", "research", pair, 8, 1, 2, 0.9, 0.12, 10_000, (1.0, 1.0), 50,
                  300 + seed)
    t_ev_end = at(0.22, 0.3)
    ev.runs = [(t0 + rng.uniform(0.0, 3.0), t_ev_end, pair, ev.start_step, False)]
    el = jobs.Job("el-pt", "research", first4, 8, 1, 4, 2.4, 0.4, 40, (9.0, 13.0), 10,
                  12_000 + 29 * seed)
    sft = jobs.Job("sft-c", "product", rest, 8, 1, 2, 1.3, 0.25, 150, (6.0, 9.0), 25,
                   700 + 3 * seed)
    for job, watts in ((ev, 330.0), (el, 610.0), (sft, 560.0)):
        for n in job.nodes:
            for g in range(8):
                gpus[n, g].load_w = watts * rng.uniform(0.96, 1.04)
    steps = jobs.run(ev, t_end, rng, busy, effects, spans.touch)
    sft.runs = [(t0 + rng.uniform(0.0, 3.0), None, rest, sft.start_step, False)]
    steps += jobs.run(sft, t_end, rng, busy, effects, spans.touch)
    effects.append({"effect": "job_end", "scope": {"level": "job", "job": "ev-b"},
                    "start_ts": t_ev_end - 5.0, "end_ts": t_ev_end})

    # ---- fault: a GPU of a joining node whose regulator trips HW slowdown under training load
    cap_node, cap_gpu = rng.choice(pair), rng.randrange(8)
    cap_clk = rng.uniform(1250.0, 1400.0)
    cap_f = 1.0 + 0.85 * (world.MAX_CLOCK_MHZ / cap_clk - 1.0)
    t_grow = t_ev_end + rng.uniform(20.0, 40.0)        # the scheduler hands el-pt the pair
    t_back = t_grow + rng.uniform(45.0, 70.0)          # re-rendezvous + checkpoint load

    def capped(t: float, is_busy: bool):
        if t < t_back or not is_busy:
            return None
        return (-6.0, cap_clk + rng.uniform(-25.0, 25.0), 0x8)

    gpus[cap_node, cap_gpu].thermal_overlay = capped
    el.slow = lambda n, g, t: cap_f if (n, g) == (cap_node, cap_gpu) and t >= t_back else 1.0

    # el-pt: DP4 until the grow, then DP6 in rendezvous order, same global batch
    el.runs = [(t0 + rng.uniform(0.0, 3.0), t_grow, first4, el.start_step, False)]
    part = jobs.run(el, t_end, rng, busy, effects, spans.touch)
    steps += part
    done = max(v["step"] for _, v in part)
    six = first4 + pair
    rng.shuffle(six)
    grown = jobs.Job(el.name, el.tenant, six, 8, 1, 6, el.compute_s * 4 / 6, el.comm_s * 1.1,
                     el.ckpt_every, el.ckpt_s, el.checksum_every, 0, slow=el.slow)
    effects.append({"effect": "elastic_grow", "scope": {"level": "job", "job": "el-pt"},
                    "start_ts": t_grow, "end_ts": t_back + 60.0})
    # ---- fault: one rank's loader deadlocks: every other rank spins in NCCL until the
    # watchdog (NCCL timeout 180-240 s) kills the job; torchrun restarts it re-ranked
    t_hang = at(0.6, 0.7)
    watchdog = rng.uniform(180.0, 240.0)
    resume = done - done % el.ckpt_every
    grown.runs = [(t_back, t_hang, six, resume, True)]
    part = jobs.run(grown, t_end, rng, busy, effects, spans.touch)
    steps += part
    # a short log may hang the re-formed job in its first step
    last = max((v["ts"] for _, v in part), default=min(t_end, max(t_back, t_hang)))
    hang_node, hang_gpu = rng.choice(six), rng.randrange(8)
    t_dead = min(t_end, last + watchdog)
    for n in six:
        for g in range(8):
            if (n, g) != (hang_node, hang_gpu):
                gpus[n, g].spin.add(last, t_dead)
    prev = gpus[hang_node, hang_gpu].thermal_overlay

    def hung(t: float, is_busy: bool, prev=prev):
        if last <= t < t_dead:
            return (0.0, None, 0)
        return prev(t, is_busy) if prev else None

    gpus[hang_node, hang_gpu].thermal_overlay = hung
    done = max((v["step"] for _, v in part), default=resume)
    if t_dead + 50.0 < t_end - 30.0:
        rng.shuffle(six)
        grown.runs = [(t_dead + rng.uniform(40.0, 60.0), None, six,
                       done - done % el.ckpt_every, True)]
        steps += jobs.run(grown, t_end, rng, busy, effects, spans.touch)

    tele = collect(gpus, ports, t0, t_end, rng, spans,
                   {(cap_node, cap_gpu): "cap", (hang_node, hang_gpu): "hang"}, {})
    records = [(v["ts"], topic, v) for topic, v in tele + steps]
    labels = [_gpu_label("grow-hw-slowdown", "slow_node", "power", cap_node, cap_gpu,
                         spans.of("cap", f"el-pt:slow:{cap_node}/{cap_gpu}"))]
    # the hang changes every el-pt GPU's rows (idle on the hung rank, spinning elsewhere)
    h = [v["ts"] for topic, v in tele if topic == "telemetry.thermal"
         and v["node"] in six and last <= v["ts"] < t_dead]
    if h:
        labels.append(_gpu_label("rank-hang", "slow_node", "unknown", hang_node, hang_gpu,
                                 (min(h), max(h)), attributable=False))
    labels = [lab for lab in labels if lab]
    return world.topology_text("grow", world.GROW_LEAVES), records, labels, effects
