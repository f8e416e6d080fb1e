"""The two stories of a fleet mid-rollout, every choice from the seed (README: "Stories").

``rolling``: a rolling driver + firmware upgrade walks through a training fleet -- the spares
first, then (at a planned stop) two of the job's nodes; the job comes back on upgraded spares.
``canary``: a fleet that stays in three driver cohorts (old, new, a canary with a new clock
policy) under two jobs.
"""

from __future__ import annotations

import random

from bench.blind30.jobs import Job, run
from bench.blind30.world import Fleet, Hot, Log

T0 = 1_780_000_000.0


def topology(name: str, prefix: str) -> str:
    return "\n".join([
        f"Topology={name} Version=1",
        f"NodeSet={prefix}-[01-12] Gpus=8 Nics=mlx5_[0-7]",
        f"Rack=rack-[1-3] Nodes={prefix}-[01-12]",
        f"SwitchName=leaf-[1-2] Nodes={prefix}-[01-12]",
        "SwitchName=spine-1 Switches=leaf-[1-2]", ""])


def _nodes(prefix: str) -> list[str]:
    return [f"{prefix}-{i:02d}" for i in range(1, 13)]


def rolling(seed: int, seconds: int) -> tuple[Log, str]:
    rng = random.Random(f"blind30-rolling-{seed}")
    t0 = T0 + seed * 86_400.0
    T = float(seconds)
    log = Log(rng, "rollout")
    fleet = Fleet(rng, log, t0, seconds)
    names = _nodes("r")
    for n in names:
        fleet.add_node(n, "old")
    job = Job("llm-ft", "research", tp=True, base_ms=rng.uniform(2200, 2600),
              comm_ms=rng.uniform(350, 500), cov=rng.uniform(0.012, 0.018),
              busy_w=rng.uniform(600, 660), save_every=rng.randint(80, 110))
    spares = names[8:]
    # the spares upgraded two at a time: dark 60-90 s, back on the new driver, counters at 0
    order = spares[:]
    rng.shuffle(order)
    lock_node, rate_node = order[0], order[1]
    t = t0 + rng.uniform(0.03, 0.06) * T
    for pair in (order[:2], order[2:]):
        back = t
        for n in pair:
            a = t + rng.uniform(0, 8)
            dark = rng.uniform(60, 90)
            fleet.nodes[n].dark.append((a, a + dark))
            fleet.nodes[n].upgrade_at = a + dark
            log.effect("driver_upgrade", {"node": n}, a, a + dark + 30)
            back = max(back, a + dark)
        t = back + rng.uniform(10, 30)
    # a firmware tool's clock lock left on one upgraded spare: every GPU at 1,200-1,300 MHz
    # when busy, no reason bit
    ln = fleet.nodes[lock_node]
    ln.clock_lock_mhz = rng.choice((1200.0, 1245.0, 1290.0))
    ln.lock_from = ln.upgrade_at
    log.fault(f"lock-{lock_node}", "slow_node", "software", {"level": "node",
                                                             "node": lock_node}, True)
    # a port that came back from the reboot trained at 200 Gb/s, losing symbols
    nic = f"mlx5_{rng.randrange(8)}"
    rn = fleet.nodes[rate_node]
    rn.degraded[nic] = (rn.upgrade_at, f"rate-{rate_node}-{nic}")
    log.fault(f"rate-{rate_node}-{nic}", "network", "nic",
              {"level": "nic", "node": rate_node, "nic": nic, "port": 1}, True)
    # one-step loader stall on one node (its ranks read 1.5-3 s longer; the job waits)
    first = rng.randint(4000, 9000)
    stall = (first + rng.randint(30, 100), names[rng.randrange(8)])
    job.stalls[stall] = rng.uniform(1500, 3000)
    # phase 1: the job on r-01..r-08 until the planned stop (saved at the stop)
    stop = t0 + rng.uniform(0.42, 0.46) * T
    end1, nxt = run(fleet, log, rng, job, names[:8], t0, stop, first, cold=False)
    _stall_effect(log, job, stall)
    job.stalls.clear()
    log.effect("planned_stop", {"job": job.name}, end1, end1 + 120)
    for n in names[:2]:
        a = end1 + rng.uniform(10, 20)
        d = rng.uniform(60, 90)
        fleet.nodes[n].dark.append((a, a + d))
        fleet.nodes[n].upgrade_at = a + d
        log.effect("driver_upgrade", {"node": n}, a, a + d + 30)
    # phase 2: back on r-03..r-08 + the lock node + one more upgraded spare, cold
    nodes2 = names[2:8] + [lock_node, order[2]]
    start2 = end1 + rng.uniform(60, 90)
    log.effect("restart_cold", {"job": job.name}, start2, start2 + 30)
    xid_node = names[2 + rng.randrange(6)]
    xid_gpu = rng.randrange(8)
    xid_t = t0 + rng.uniform(0.64, 0.72) * T
    end2, nxt2 = run(fleet, log, rng, job, nodes2, start2, xid_t, nxt)
    # XID 94 (contained ECC) on an old-driver node: the process dies, the step in flight lost
    fid = f"xid94-{xid_node}-g{xid_gpu}"
    fleet.xids.append((xid_t, xid_node, xid_gpu, 94, fid))
    fleet.ecc_fault[(xid_node, xid_gpu)] = (xid_t, fid, "dbe")
    log.fault(fid, "hardware", "gpu_memory", {"level": "gpu", "node": xid_node,
                                              "gpu": xid_gpu}, True)
    # phase 3: 60-90 s later, without that node, with the port-degraded spare, from the save
    nodes3 = [n for n in nodes2 if n != xid_node] + [rate_node]
    start3 = xid_t + rng.uniform(60, 90)
    saved = (nxt2 - 1) - (nxt2 - 1) % job.save_every
    resume3 = saved + 1 if saved >= nxt else nxt  # from the last save (or the stop's)
    slow_link = rng.uniform(1.3, 1.45)
    deg_t = rn.upgrade_at
    job.comm_at = lambda t: slow_link if t >= deg_t else 1.0
    log.effect("restart_cold", {"job": job.name}, start3, start3 + 30)
    run(fleet, log, rng, job, nodes3, start3, t0 + T, resume3)
    fleet.emit()
    return log, topology("rollout", "r")


def canary(seed: int, seconds: int) -> tuple[Log, str]:
    rng = random.Random(f"blind30-canary-{seed}")
    t0 = T0 + seed * 86_400.0 + 43_200.0
    T = float(seconds)
    log = Log(rng, "canary")
    fleet = Fleet(rng, log, t0, seconds)
    names = _nodes("c")
    for i, n in enumerate(names):
        fleet.add_node(n, "old" if i < 6 else "canary" if i < 8 else "new")
    for n in names[6:8]:
        log.effect("canary_clock_policy", {"node": n}, t0, t0 + T)
    a_nodes, b_nodes = names[:8], names[8:]
    ja = Job("lm-a", "search", tp=True, base_ms=rng.uniform(1800, 2200),
             comm_ms=rng.uniform(300, 450), cov=rng.uniform(0.012, 0.018),
             busy_w=rng.uniform(600, 670), save_every=rng.randint(90, 130))
    jb = Job("lm-b", "ads", tp=False, base_ms=rng.uniform(550, 700),
             comm_ms=rng.uniform(120, 180), cov=rng.uniform(0.015, 0.02),
             busy_w=rng.uniform(520, 600))
    # a GPU's cold plate failing on an old-driver node of lm-a
    hn, hg = a_nodes[rng.randrange(6)], rng.randrange(8)
    nd = fleet.nodes[hn]
    hot = Hot(t0 + rng.uniform(0.15, 0.3) * T, rng.uniform(120, 180), rng.uniform(1.8, 2.1),
              nd.inlet_c, nd.r_cw[hg], ja.busy_w, nd.idle_w[hg])
    fleet.hot[(hn, hg)] = (f"hot-{hn}-g{hg}", hot)
    log.fault(f"hot-{hn}-g{hg}", "slow_node", "thermal", {"level": "gpu", "node": hn,
                                                          "gpu": hg}, True)
    # a canary GPU whose parameters go wrong
    sn, sg = names[6 + rng.randrange(2)], rng.randrange(8)
    sdc_t = t0 + rng.uniform(0.35, 0.5) * T
    sfid = f"sdc-{sn}-g{sg}"
    ja.checksum = lambda n, g, step, t: ((f"{step:08x}{sg:02x}dead00", sfid)
                                         if (n, g) == (sn, sg) and t >= sdc_t else None)
    log.fault(sfid, "sdc", "gpu_hardware", {"level": "gpu", "node": sn, "gpu": sg}, True)
    # lm-b: a GPU 12-18 % slow with nothing in telemetry; later XID 119 (GSP) on another node
    wn, wg = b_nodes[rng.randrange(4)], rng.randrange(8)
    slow_t, slow_m = t0 + rng.uniform(0.2, 0.35) * T, rng.uniform(1.12, 1.18)
    wfid = f"slow-{wn}-g{wg}"
    jb.hidden = lambda n, g, t: ((slow_m, wfid) if (n, g) == (wn, wg) and t >= slow_t
                                 else (1.0, None))
    log.fault(wfid, "slow_node", "unknown", {"level": "gpu", "node": wn, "gpu": wg}, False)
    xn = rng.choice([n for n in b_nodes if n != wn])
    xg = rng.randrange(8)
    xt = t0 + rng.uniform(0.7, 0.8) * T
    xfid = f"xid119-{xn}-g{xg}"
    fleet.xids.append((xt, xn, xg, 119, xfid))
    fleet.ecc_fault[(xn, xg)] = (xt, xfid, "gsp")
    log.fault(xfid, "hardware", "gpu_hardware", {"level": "gpu", "node": xn, "gpu": xg}, True)
    # lm-a: one node's one-step loader stall
    first_a = rng.randint(2000, 6000)
    stall = (first_a + rng.randint(60, 200), a_nodes[rng.randrange(8)])
    ja.stalls[stall] = rng.uniform(1500, 3000)
    run(fleet, log, rng, ja, a_nodes, t0, t0 + T, first_a, cold=False)
    _stall_effect(log, ja, stall)
    first_b = rng.randint(20000, 60000)
    end_b, nxt_b = run(fleet, log, rng, jb, b_nodes, t0, xt, first_b, cold=False)
    # lm-b restarted elastic on the three other nodes (24 ranks) 50-80 s later, cold
    back = xt + rng.uniform(50, 80)
    log.effect("restart_cold", {"job": jb.name}, back, back + 30)
    run(fleet, log, rng, jb, [n for n in b_nodes if n != xn], back, t0 + T, nxt_b)
    fleet.emit()
    return log, topology("canary", "c")


def _stall_effect(log: Log, job: Job, stall: tuple[int, str]) -> None:
    ts = [v["ts"] for _, topic, v, _ in log.rows if topic == "telemetry.step"
          and v["job"] == job.name and v["step"] == stall[0] and v["node"] == stall[1]]
    if ts:
        log.effect("loader_stall", {"node": stall[1]}, min(ts) - 5, max(ts))


STORIES = {"rolling": rolling, "canary": canary}
