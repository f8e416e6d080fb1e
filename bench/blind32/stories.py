"""blind32's two stories: a job that heals itself, and a zero-bubble pipeline whose context grows.

Every choice comes from the seed (``random.Random(f"{story}-{seed}")``). ``build(story, seed,
minutes) -> Log``. The README says what each fault and routine shape is and why.
"""

from __future__ import annotations

import math
import random

from bench.blind32 import world
from bench.blind32.jobs import Fx, Job
from bench.blind32.world import BOOST_MHZ, Log, Node

STORIES = ("selfheal", "zb")
T0 = 1_790_000_000.0


def _topology(name: str, prefix: str, n: int, racks: int, leaves: int) -> str:
    hosts = f"{prefix}-[01-{n:02d}]"
    return "\n".join([
        f"Topology={name}",
        f"NodeSet={hosts} Gpus=8 Nics=mlx5_[0-7]",
        f"Rack=rack-{name[-1]}[1-{racks}] Nodes={hosts}",
        f"SwitchName=leaf-{name[-1]}[1-{leaves}] Nodes={hosts}",
        f"SwitchName=spine-{name[-1]} Switches=leaf-{name[-1]}[1-{leaves}]", ""])


class _First:
    """First and last ts a fault changed (for its label)."""

    def __init__(self):
        self.first = math.inf
        self.last = -math.inf

    def saw(self, ts: float) -> None:
        self.first = min(self.first, ts)
        self.last = max(self.last, ts)


def _hot_plate(node: Node, gpu: int, r_cw: float, since: float, seen: _First):
    """A GPU whose die runs to ``inlet + r_cw x power`` from ``since``; held at 88 C with 0x20,
    giving up power (and the square root of it in clock) to stay there."""
    state = {"temp": None}

    def hook(kind, name, gpu_, ts, row):
        if kind != "thermal" or name != node.name or gpu_ != gpu or ts < since:
            return row
        t = state["temp"] if state["temp"] is not None else row["gpu_temp_c"]
        power = row["power_w"]
        target = node.inlet_c + r_cw * power
        t += (target - t) * (1 - math.exp(-world.THERMAL_S / 25.0))
        if t >= 88.0 and power > 150:
            allowed = (88.0 - node.inlet_c) / r_cw
            row["throttle"] |= 0x20
            row["sm_clock_mhz"] = round(row["sm_clock_mhz"] * math.sqrt(allowed / power), 0)
            row["power_w"] = round(allowed, 1)
            t = 88.0
        state["temp"] = t
        row["gpu_temp_c"] = round(t + random.Random(ts).gauss(0, 0.2), 1)
        row["mem_temp_c"] = round(t + 6.0, 1)
        seen.saw(ts)
        return row
    return hook


def selfheal(seed: int, minutes: float) -> Log:
    """``selfheal``: an LLM pretraining job with in-job resilience machinery (cluster rz-a)."""
    rng = random.Random(f"selfheal-{seed}")
    dur = minutes * 60.0
    t0 = T0 + seed * 86_400.0
    end_t = t0 + dur
    cl = "rz-a"
    log = Log(rng, _topology(cl, "h", 10, 5, 2))
    nodes = [Node(f"h-{i:02d}", rng, rng.uniform(24.0, 28.0)) for i in range(1, 11)]
    spare, spare2 = nodes[8], nodes[9]
    s0 = rng.uniform(1450.0, 1550.0)
    job = Job(log, rng, "llm-pt", "core", cl, list(nodes[:8]), 2,
              [s0, s0 * rng.uniform(1.05, 1.10)], rng.uniform(300.0, 380.0),
              rng.uniform(60.0, 100.0), rng.uniform(0.008, 0.012),
              [rng.uniform(600.0, 630.0), rng.uniform(610.0, 640.0)], checksums=False)
    slow_pos, nic_pos, xid_pos = rng.sample(range(8), 3)
    slow_g, xid_g, hot_g, nic_k = (rng.randrange(8) for _ in range(4))
    slow_x = rng.uniform(1.09, 1.13)
    t_slow = t0 + rng.uniform(0.15, 0.30) * dur
    t_nic = t0 + rng.uniform(0.25, 0.40) * dur
    t_xid = t0 + rng.uniform(0.45, 0.55) * dur
    stall = rng.uniform(35.0, 50.0)
    nic_x = rng.uniform(1.25, 1.45)
    hot_r = nodes[8].r_cw[hot_g] * rng.uniform(1.9, 2.05)
    slow_node, nic_node, xid_node = (nodes[p] for p in (slow_pos, nic_pos, xid_pos))

    # the hot spares' health checks: a short GEMM burn at the board's limit and an NCCL test
    # between the two spares, every 3-5 min (the swapped-in spare stops them)
    for sp in (spare, spare2):
        t = t0 + rng.uniform(60.0, 120.0)
        while t < end_t - 30.0:
            d = rng.uniform(20.0, 30.0)
            if sp is spare and t + d > t_xid:
                break
            sp.load(t, t + d, rng.uniform(710.0, 740.0), 300.0, 0.2)
            log.effect("burnin", {"node": sp.name}, t, t + d,
                       "a hot spare's health check: GEMM burn at the board's limit (0x4) and an "
                       "NCCL test to the other spare; no job")
            t += d + rng.uniform(180.0, 300.0)

    hooks = []
    seen_slow, seen_nic, seen_hot = _First(), _First(), _First()
    nic_state = {"down": False}

    def nic_hook(kind, name, dev, ts, row):
        if kind != "nic" or name != nic_node.name or dev != f"mlx5_{nic_k}" or ts < t_nic:
            return row
        row["link_downed"] = 1
        row["symbol_errors"] = 40 + int((ts - t_nic) / 10.0) * 2
        row["rcv_errors"] = 3
        if not nic_state["down"]:
            nic_state["down"] = True
            row["link_state"] = "down"
            row["rate_gbps"] = 0.0
        else:
            row["rate_gbps"] = 200.0
        seen_nic.saw(ts)
        return row

    def dead_gpu(kind, name, gpu, ts, row):
        if kind in ("thermal", "ecc") and name == xid_node.name and gpu == xid_g and ts > t_xid:
            return None
        return row

    t_restart = t_xid + stall
    hooks += [nic_hook, dead_gpu, _hot_plate(spare, hot_g, hot_r, t_restart, seen_hot)]
    # when the hot GPU reaches 88 C under the job's load, and what the hold costs its TP group
    p_busy = job.busy_w[job.stage(xid_pos)] * 0.85
    allowed = (88.0 - spare.inlet_c) / hot_r
    temp_idle = spare.inlet_c + spare.r_cw[hot_g] * world.IDLE_W
    target = spare.inlet_c + hot_r * p_busy
    hot_from = t_restart + (25.0 * math.log((target - temp_idle) / (target - 88.0))
                            if target > 88.0 else 1e9)
    hot_x = (p_busy / allowed) ** 0.45 if target > 88.0 else 1.0

    t = t0 + rng.uniform(2.0, 5.0)
    step, last_snap, xid_done = 1, 0, False
    next_snap = rng.randint(55, 75)
    snap: dict = {}
    warm = 0
    while t < end_t:
        fx = Fx()
        if not xid_done and t + 1.8 > t_xid:
            t_xid = max(t_xid, t + 0.2)
            world.xid(log, xid_node.name, xid_g, t_xid, 79, cl)
            log.label(f"xid79-{xid_node.name}-g{xid_g}", "hardware", "gpu_hardware",
                      {"level": "gpu", "node": xid_node.name, "gpu": xid_g}, t_xid,
                      t_xid + stall, True)
            for pos, nd in enumerate(job.nodes):
                if pos != xid_pos:
                    nd.load(t, t_xid + 30.0, world.WAIT_W)
            log.effect("nccl-hang", {"job": job.name}, t, t_xid + stall,
                       "every other rank blocked in a collective until the watchdog (30 s), "
                       "then the in-process restart; no step records")
            t = t_xid + stall
            job.nodes[xid_pos] = spare
            log.effect("swap-in", {"node": spare.name}, t, end_t,
                       f"hot spare {spare.name} takes {xid_node.name}'s ranks (same rank, "
                       "tp/pp/dp) without a job restart")
            log.effect("left-idle", {"node": xid_node.name}, t, end_t,
                       "the failed node's other GPUs idle once the job moved off it")
            step = last_snap + 1 if last_snap else 1
            log.effect("restart", {"job": job.name}, t_xid, t + 15.0,
                       f"in-process restart from the in-memory checkpoint: steps re-run from "
                       f"{step} (step numbers repeat), the first step +3-5 s (warm-up), the "
                       "second x1.2")
            xid_done, warm, snap = True, 2, {}
            next_snap = step + rng.randint(70, 100)
            continue
        if t >= t_slow and job.nodes[slow_pos] is slow_node:
            fx.compute[slow_pos] = slow_x
        if t >= t_nic:
            fx.reduce_x *= nic_x
            if t - 10.0 < t_nic <= t + 1.8:
                fx.comm_extra_ms += rng.uniform(2000.0, 4000.0)
        if xid_done and t >= hot_from:
            fx.compute[xid_pos] = fx.compute.get(xid_pos, 1.0) * hot_x
        if warm == 2:
            for pos in range(8):
                fx.neither_ms[pos] = rng.uniform(3000.0, 5000.0)
            fx.comm_extra_ms += rng.uniform(1000.0, 2000.0)
        elif warm == 1:
            fx.job_compute *= 1.2
        warm = max(0, warm - 1)
        if step == next_snap:
            snap = {"s": step, "x": rng.uniform(1.04, 1.07), "rx": rng.uniform(1.3, 1.5),
                    "p": rng.uniform(150.0, 300.0), "t": t}
            last_snap = step
            next_snap = step + rng.randint(70, 100)
        if snap:
            d = step - snap["s"]
            if d in (0, 1):
                fx.job_compute *= snap["x"]
            if 2 <= d <= 5:
                fx.reduce_x *= snap["rx"]
                fx.nic_extra_gbps += 150.0
                fx.congestion = 1.0
            if 2 <= d < 18:
                fx.neither_ms[(d - 2) // 2] = fx.neither_ms.get((d - 2) // 2, 0.0) + snap["p"]
        start = t
        t = job.step(step, t, fx)
        if snap:
            d = step - snap["s"]
            if d == 1:
                log.effect("snapshot", {"job": job.name}, snap["t"], t,
                           "async checkpoint: GPU->host copies, every rank's compute x1.04-1.07 "
                           "for 2 steps")
            if d == 2:
                snap["r"] = start
            if d == 5:
                log.effect("replicate", {"job": job.name}, snap["r"], t,
                           "in-memory checkpoint sent to a buddy node: NIC bursts and xmit_wait "
                           "on every node, every rank's reduction x1.3-1.5 for 4 steps")
            if 2 <= d < 18 and d % 2 == 0:
                snap["n"] = start
            if 2 <= d < 18 and d % 2 == 1:
                log.effect("persist", {"node": job.nodes[(d - 2) // 2].name}, snap["n"], t,
                           "the node's turn to persist its shard: its ranks +0.15-0.3 s in "
                           "neither for 2 steps, the job waiting")
            if d >= 18:
                snap = {}
        if fx.compute.get(slow_pos) == slow_x:
            seen_slow.saw(t)
        step += 1
    world.emit_hardware(log, rng, nodes, t0, end_t, hooks, cl)
    log.label(f"slow-{slow_node.name}-g{slow_g}", "slow_node", "unknown",
              {"level": "gpu", "node": slow_node.name, "gpu": slow_g}, seen_slow.first,
              seen_slow.last, False)
    log.label(f"nic-{nic_node.name}-mlx5_{nic_k}", "network", "nic",
              {"level": "nic", "node": nic_node.name, "nic": f"mlx5_{nic_k}", "port": 1},
              seen_nic.first, seen_nic.last, True)
    if xid_done and math.isfinite(seen_hot.first):
        log.label(f"hot-{spare.name}-g{hot_g}", "slow_node", "thermal",
                  {"level": "gpu", "node": spare.name, "gpu": hot_g}, seen_hot.first,
                  seen_hot.last, True)
    log.labels = [lab for lab in log.labels if lab["start_ts"] <= lab["end_ts"]
                  and math.isfinite(lab["start_ts"])]
    return log


def zb(seed: int, minutes: float) -> Log:
    """``zb``: long-context extension of an LLM on a zero-bubble pipeline (cluster rz-b)."""
    rng = random.Random(f"zb-{seed}")
    dur = minutes * 60.0
    t0 = T0 + seed * 86_400.0 + 43_200.0
    end_t = t0 + dur
    cl = "rz-b"
    log = Log(rng, _topology(cl, "z", 12, 6, 3))
    nodes = [Node(f"z-{i:02d}", rng, rng.uniform(24.0, 28.0)) for i in range(1, 13)]
    s = rng.uniform(1900.0, 2100.0)
    head = rng.uniform(1.12, 1.18)
    busy = rng.uniform(590.0, 620.0)
    job = Job(log, rng, "lc-ext", "lm", cl, list(nodes), 4, [s, s, s, s * head],
              rng.uniform(350.0, 450.0), rng.uniform(200.0, 260.0), rng.uniform(0.008, 0.012),
              [busy] * 4, checksums=True)
    slow_pos = rng.choice((3, 7, 11))
    cap_pos, sbe_pos, sdc_pos = rng.sample([p for p in range(12) if p != slow_pos], 3)
    slow_g, cap_g, sbe_g, sdc_g = (rng.randrange(8) for _ in range(4))
    slow_x = rng.uniform(1.07, 1.10)
    t_slow = t0 + rng.uniform(0.25, 0.60) * dur
    t_cap = t0 + rng.uniform(0.15, 0.30) * dur
    t_sbe = t0 + rng.uniform(0.50, 0.65) * dur
    t_sdc = t0 + rng.uniform(0.70, 0.85) * dur
    t_ext = t0 + rng.uniform(0.35, 0.50) * dur
    cap_w = rng.uniform(440.0, 480.0)
    ext_x = rng.uniform(1.55, 1.75)
    head_after = rng.uniform(1.06, 1.09)
    seen = {k: _First() for k in ("slow", "cap", "sbe", "sdc")}

    def cap_hook(kind, name, gpu, ts, row):
        if kind != "thermal" or name != nodes[cap_pos].name or gpu != cap_g or ts < t_cap:
            return row
        seen["cap"].saw(ts)
        if row["power_w"] > cap_w:
            row["sm_clock_mhz"] = round(min(row["sm_clock_mhz"], BOOST_MHZ) * math.sqrt(
                cap_w / row["power_w"]), 0)
            row["power_w"] = round(cap_w + rng.uniform(-3.0, 1.0), 1)
            row["throttle"] |= 0x4
        return row

    sbe = {"n": 0, "xid": None, "t": t_sbe}

    def sbe_hook(kind, name, gpu, ts, row):
        if kind != "ecc" or name != nodes[sbe_pos].name or gpu != sbe_g or ts < t_sbe:
            return row
        rate = 6.0 * 2.0 ** ((ts - t_sbe) / 45.0)
        sbe["n"] += int(rate * world.ECC_S / 30.0 * rng.uniform(0.6, 1.4)) + 1
        row["sbe_volatile"] += sbe["n"]
        if sbe["xid"] is None and sbe["n"] > 300:
            sbe["xid"] = ts + rng.uniform(0.5, 5.0)
            world.xid(log, name, gpu, sbe["xid"], 92, cl)
        if sbe["xid"] is not None and ts > sbe["xid"] + 45.0:
            row["row_remap_pending"] = True
        seen["sbe"].saw(ts)
        return row

    t = t0 + rng.uniform(2.0, 5.0)
    step = 1
    next_save = rng.randint(110, 150)
    spikes = sorted(rng.sample(range(40, max(44, int(dur / 2.6))), 3))[: rng.randint(2, 3)]
    stalls = {rng.randint(30, max(31, int(dur / 2.8))): rng.randrange(12)
              for _ in range(rng.randint(1, 2))}
    ext_step = None
    log.effect("stage-imbalance", {"job": job.name}, t, end_t,
               "the last stage (LM head, loss) computes x1.12-1.18 of the others (x1.06-1.09 "
               "after the context extension); every other stage waits for it in comm")
    while t < end_t:
        fx = Fx()
        if ext_step is None and t >= t_ext:
            ext_step = step
            for pos in range(12):
                fx.neither_ms[pos] = rng.uniform(18000.0, 28000.0)
            log.effect("context-extension", {"job": job.name}, t, end_t,
                       "sequence length 32k -> 64k with activation recompute: one step +18-28 s "
                       "in neither on every rank (recompile, re-shard), then every rank's "
                       "compute x1.55-1.75 for good; grad-norm spikes for a few steps")
        if ext_step is not None:
            fx.job_compute *= ext_x
            for pos in (3, 7, 11):
                fx.compute[pos] = head_after / head
            if 1 <= step - ext_step <= 5:
                fx.grad_x = rng.uniform(4.0, 10.0)
                fx.loss_add = 0.25 / (step - ext_step)
        if step in spikes or step - 1 in spikes:
            fx.grad_x = rng.uniform(3.0, 8.0)
            fx.loss_add = rng.uniform(0.1, 0.3)
        if step == next_save:
            for pos in range(12):
                fx.neither_ms[pos] = fx.neither_ms.get(pos, 0.0) + rng.uniform(9000.0, 14000.0)
            next_save = step + rng.randint(110, 150)
        if step in stalls:
            fx.neither_ms[stalls[step]] = fx.neither_ms.get(stalls[step], 0.0) + rng.uniform(
                1500.0, 3000.0)
        if t >= t_slow:
            fx.compute[slow_pos] = fx.compute.get(slow_pos, 1.0) * slow_x
        if t >= t_cap:
            fx.compute[cap_pos] = fx.compute.get(cap_pos, 1.0) * (busy / cap_w) ** 0.45
        if t >= t_sdc:
            fx.bad_sum.add((sdc_pos, sdc_g))
        start = t
        t = job.step(step, t, fx)
        if start >= t_slow:
            seen["slow"].saw(t)
        if start >= t_cap:
            seen["cap"].saw(t)
        if start >= t_sdc:
            seen["sdc"].saw(t)
        if fx.neither_ms and ext_step != step and len(fx.neither_ms) == 12:
            log.effect("save", {"job": job.name}, start, t,
                       "synchronous checkpoint: every rank 9-14 s in neither, one step")
        elif step in stalls:
            log.effect("loader-stall", {"node": nodes[stalls[step]].name}, start, t,
                       "one node's loader 1.5-3 s late for one step")
        if step in spikes:
            log.effect("loss-spike", {"job": job.name}, start, t + 5.0,
                       "a loss / grad-norm spike on every rank (the data's), 1-2 steps")
        step += 1
    world.emit_hardware(log, rng, nodes, t0, end_t, [cap_hook, sbe_hook], cl)
    for key, kind, cause, pos, g, attr in (
            ("cap", "slow_node", "power", cap_pos, cap_g, True),
            ("slow", "slow_node", "unknown", slow_pos, slow_g, False),
            ("sbe", "hardware", "gpu_memory", sbe_pos, sbe_g, True),
            ("sdc", "sdc", "gpu_hardware", sdc_pos, sdc_g, True)):
        sn = seen[key]
        if math.isfinite(sn.first):
            log.label(f"{key}-{nodes[pos].name}-g{g}", kind, cause,
                      {"level": "gpu", "node": nodes[pos].name, "gpu": g}, sn.first, sn.last,
                      attr)
    return log


def build(story: str, seed: int, minutes: float) -> Log:
    return {"selfheal": selfheal, "zb": zb}[story](seed, minutes)
