"""Story `diloco`: one job trained DiLoCo-style across two sites that sync every H steps.

`dl-30b` (tenant `foundation`) runs TP8 inside a node and data parallelism inside each site
(8 nodes a site: `w-h100-01..08` in `west`, `e-h100-01..08` in `east`, dp_rank 0-7 and 8-15).
Each site is an *island*: its ranks all-reduce every inner step over the site's own fabric and
step together; the two islands meet only at the **outer sync** every H (40-60) inner steps,
where the first island to arrive waits for the other and both then send their pseudo-gradients
over the inter-site link (6-10 s). Between syncs the islands run at their own pace: east sits
under a site power cap (630-660 W a board, `0x4` all the time, 2-5 % slower), so at one moment
east is a few steps behind west, and the same step number ends seconds apart on the two sites.
Parameters agree across the whole job only after an outer sync: the job writes
`param_checksum` on the sync steps only (DESIGN: ranks with the same tp_rank agree at the same
step -- between syncs the islands' copies differ by design, so a checksum there would be a
lie the contract forbids).
"""

from __future__ import annotations

import bisect
import hashlib
import random

from bench.blind29 import noise
from bench.blind29.world import LINE_GBPS, Board, Ecc, Log, Port, slowdown, thermal_rows

JOB, TENANT = "dl-30b", "foundation"
SITES = ("west", "east")


def _nodes(site: str) -> list[str]:
    return [f"{site[0]}-h100-{i:02d}" for i in range(1, 9)]


TOPOLOGY = "\n".join([
    "Topology=dl-two-site Version=1",
    "NodeSet=w-h100-[01-08] Gpus=8 Nics=mlx5_[0-7]",
    "NodeSet=e-h100-[01-08] Gpus=8 Nics=mlx5_[0-7]",
    "Rack=w-rack-[1-2] Nodes=w-h100-[01-08]",
    "Rack=e-rack-[1-2] Nodes=e-h100-[01-08]",
    "SwitchName=w-leaf-[0-1] Nodes=w-h100-[01-08]",
    "SwitchName=e-leaf-[0-1] Nodes=e-h100-[01-08]",
    "SwitchName=w-spine Switches=w-leaf-[0-1]",
    "SwitchName=e-spine Switches=e-leaf-[0-1]",
    ""])

COLD = (2.3, 1.5, 1.15, 1.04)


class Island:
    def __init__(self, site: str, idx: int, nodes: list[str]):
        self.site, self.idx, self.nodes = site, idx, list(nodes)
        self.t = 0.0
        self.k = 0
        self.cold = 0
        self.dead = False
        self.restart_at = None
        self.waiting = False
        self.pending = None
        self.idle: list[tuple[float, float]] = []   # GPUs not computing (waits, saves, crash)


def _csum(seed: int, step: int, tp: int, salt: str = "") -> str:
    return hashlib.blake2b(f"{seed}:{step}:{tp}:{salt}".encode(), digest_size=8).hexdigest()


def story(seed: int, minutes: float, t0: float) -> Log:
    rng = random.Random(f"blind29-diloco-{seed}")
    log = Log(rng, {"format": "faultline", "text": TOPOLOGY})
    end = t0 + minutes * 60.0
    span = end - t0
    H = rng.randint(40, 60)
    base_c = rng.uniform(2.1, 2.5)
    comm_base = rng.uniform(0.22, 0.32)
    cap_east = rng.uniform(630.0, 660.0)
    cov = 0.02

    boards: dict[tuple[str, int], Board] = {}
    for site in SITES:
        for n in _nodes(site):
            inlet = rng.uniform(22.0, 28.0)
            for g in range(8):
                boards[(n, g)] = Board(n, g, inlet, rng.uniform(0.052, 0.064),
                                       rng.uniform(690.0, 735.0),
                                       cap_w=cap_east if site == "east" else 700.0,
                                       idle_w=rng.uniform(62.0, 72.0))
    west, east = _nodes("west"), _nodes("east")

    # -- the faults, every seed -------------------------------------------------------------
    xsite = rng.choice(SITES)
    fsite = "east" if xsite == "west" else "west"
    xnodes = _nodes(xsite)
    pick = rng.sample(range(8), 2)
    hot_node, x_node = xnodes[pick[0]], xnodes[pick[1]]
    sdc_node = rng.choice([n for n in west + east if n not in (hot_node, x_node)])
    flap_node = rng.choice(_nodes(fsite))
    hot_g, sdc_g, x_g, flap_g = (rng.randrange(8) for _ in range(4))
    hot_t = t0 + span * rng.uniform(0.18, 0.30)
    boards[(hot_node, hot_g)].r_gain.append((hot_t, hot_t + rng.uniform(120, 180),
                                             rng.uniform(1.8, 2.1)))
    sdc_t = t0 + span * rng.uniform(0.38, 0.50)
    flap_t = t0 + span * rng.uniform(0.55, 0.65)
    downs, a = [], flap_t
    for _ in range(3):
        d = rng.uniform(8.0, 20.0)
        downs.append((a, a + d))
        a += d + rng.uniform(40.0, 80.0)
    x_t = t0 + span * rng.uniform(0.72, 0.82)
    restart_after = rng.uniform(70.0, 110.0)
    congested_sync = rng.randint(2, 5)
    stall = {s: (rng.choice(_nodes(s)), rng.randint(30, 250)) for s in SITES}

    isl = [Island(s, i, _nodes(s)) for i, s in enumerate(SITES)]
    for i in isl:
        i.t = t0 + rng.uniform(0.0, 1.0)
    ranks = {}
    for s, site in enumerate(SITES):
        for j, n in enumerate(_nodes(site)):
            for g in range(8):
                dp = s * 8 + j
                ranks[(n, g)] = dict(rank=dp * 8 + g, dp=dp, off=rng.gauss(0.0, 0.004))
    nsteps = int(span / base_c) + 20
    streams = {key: noise.stream(rng, nsteps) for key in sorted(ranks)}
    steps_out: dict[tuple[str, int], list[float]] = {}
    changed: dict[str, list[float]] = {"hot": [], "sdc": [], "flap": []}
    syncs = 0
    loss0 = rng.uniform(2.4, 2.7)

    def pre(island: Island) -> dict:
        """One inner step of ``island`` from island.t: each rank's compute and the step's
        length before any sync wait."""
        k = island.k + 1
        t = island.t
        cold = COLD[island.cold] if island.cold < len(COLD) else 1.0
        per = {}
        node_max = {}
        for n in island.nodes:
            cs = {}
            for g in range(8):
                r = ranks[(n, g)]
                z = streams[(n, g)][k % nsteps]
                c = base_c * (1 + r["off"] + cov * z) * cold
                c *= slowdown(boards[(n, g)].busy_share(t))
                if rng.random() < 0.0015:
                    c += rng.uniform(0.3, 0.9)    # a GC pause on one rank, one step
                cs[g] = c
            m = max(cs.values())
            node_max[n] = m
            for g, c in cs.items():
                per[(n, g)] = c + 0.85 * (m - c)
        imax = max(node_max.values())
        host = 0.0
        sn, sk = stall[island.site]
        if k == sk and sn in island.nodes:
            host = rng.uniform(1.5, 3.0)
            log.effect("one-step-host-stall", {"node": sn}, t, t + imax + host + 1)
        comm = comm_base * rng.uniform(0.95, 1.08)
        d = imax + comm + 0.04 + host
        extra = 0.0
        if flap_node in island.nodes:
            for a, b in downs:
                if a < t + d and b > t:
                    extra = max(extra, b - max(a, t) + 1.5)
        d += extra
        if extra:
            changed["flap"].append(t + d)
        return dict(k=k, t=t, per=per, d=d, host=host, sn=sn, hot=node_max.get(hot_node))

    def emit(island: Island, p: dict, extra_comm: float, save: float, sync: bool) -> None:
        k, t = p["k"], p["t"]
        d = p["d"] + extra_comm + save
        tend = t + d
        lossk = loss0 * (1.0 - 0.25 * (k / nsteps)) + (0.02 if island.site == "east" else 0.0)
        for (n, g), c in p["per"].items():
            r = ranks[(n, g)]
            loader = rng.uniform(0.012, 0.035) + (p["host"] if n == p["sn"] else 0.0)
            comm = d - c - loader - save
            v = {"ts": round(tend + rng.uniform(0.0, 0.004), 3), "job": JOB, "step": k,
                 "rank": r["rank"], "node": n, "gpu": g, "step_ms": round(d * 1000, 2),
                 "compute_ms": round(c * 1000, 2), "comm_ms": round(comm * 1000 - 0.02, 2),
                 "tp_rank": g, "pp_rank": 0, "dp_rank": r["dp"],
                 "loss": round(lossk + rng.gauss(0, 0.01), 4),
                 "grad_norm": round(rng.uniform(0.8, 1.2) * (1.2 - 0.3 * k / nsteps), 4),
                 "cluster": island.site, "tenant": TENANT}
            if sync:
                bad = (n, g) == (sdc_node, sdc_g) and t >= sdc_t
                v["param_checksum"] = _csum(seed, k, g, f"x{n}" if bad else "")
                if bad:
                    changed["sdc"].append(v["ts"])
            log.emit("telemetry.step", v)
            steps_out.setdefault((n, g), []).append(v["ts"])
        island.t = tend
        island.k = k
        island.cold += 1

    crashed = []

    def crash(island: Island) -> None:
        crashed.append(island.site)
        island.dead = True
        island.restart_at = x_t + restart_after
        island.nodes = [n for n in island.nodes if n != x_node]
        island.t = x_t
        log.effect("island-down-peer-runs-on", {"job": JOB}, x_t, x_t + restart_after + 60)

    while True:
        # a dead island re-forms from the live one's state once the live one passes its time
        for i in isl:
            if i.dead and i.restart_at is not None:
                other = [o for o in isl if o is not i and not o.dead and not o.waiting]
                if other and other[0].t >= i.restart_at and other[0].t < end:
                    i.dead = False
                    i.restart_at = None
                    i.k = other[0].k
                    i.t = other[0].t + rng.uniform(0.1, 0.6)
                    i.cold = 0
                    i.idle.append((x_t, i.t))
                    log.effect("island-reforms-from-peer-state", {"job": JOB}, i.t, i.t + 60)
        cands = [i for i in isl if not i.dead and not i.waiting and i.t < end]
        waiting = [i for i in isl if i.waiting]
        if waiting and not [c for c in cands if c.k < waiting[0].pending["k"]]:
            arrive = {id(w): w.pending["t"] + w.pending["d"] for w in waiting}
            top = max(arrive.values())
            syncs += 1
            xfer = rng.uniform(6.0, 10.0) * (0.6 if len(waiting) == 1 else 1.0)
            if syncs == congested_sync:
                xfer *= rng.uniform(2.5, 3.2)
                log.effect("inter-site-link-congested-sync", {"job": JOB}, top, top + xfer)
            save = rng.uniform(4.0, 7.0) if syncs % 4 == 0 else 0.0
            for w in waiting:
                if w.site == xsite and not crashed and x_t < top + xfer + save:
                    crash(w)        # the GPU falls off the bus while its island waits
                    w.waiting = False
                    w.pending = None
                    continue
                wait = top - arrive[id(w)]
                w.idle.append((arrive[id(w)] - w.pending["d"] * 0.02, top + xfer + save))
                emit(w, w.pending, wait + xfer, save, True)
                w.waiting = False
                w.pending = None
            log.effect("outer-sync", {"job": JOB}, top - 5, top + xfer + save)
            if save:
                log.effect("checkpoint-save", {"job": JOB}, top, top + xfer + save)
            continue
        if not cands:
            break
        i = min(cands, key=lambda c: c.t)
        p = pre(i)
        if i.site == xsite and not crashed and x_t < p["t"] + p["d"]:
            crash(i)
            continue
        if p["k"] % H == 0:
            i.waiting = True
            i.pending = p
            continue
        emit(i, p, 0.0, 0.0, False)

    for i in isl:
        if i.dead:
            i.idle.append((x_t, end + 1.0))

    # -- rows -------------------------------------------------------------------------------
    def idle_mask(island: Island) -> list:
        out = sorted(island.idle)
        return [x[0] for x in out], out

    masks = {i.site: idle_mask(i) for i in isl}

    def busy_fn(node: str, gpu: int):
        site = "west" if node.startswith("w") else "east"
        starts, ivs = masks[site]

        def busy(t: float):
            if node == x_node and t >= x_t:
                return None if gpu == x_g else False
            j = bisect.bisect_right(starts, t) - 1
            return not (j >= 0 and ivs[j][0] <= t <= ivs[j][1])
        return busy

    hot_rows = []
    for (n, g), b in sorted(boards.items()):
        site = "west" if n.startswith("w") else "east"
        walk = b.walk(t0, end + 1, busy_fn(n, g), rng)
        before = len(log.recs)
        thermal_rows(log, b, walk, t0, end, {"cluster": site})
        if (n, g) == (hot_node, hot_g):
            hot_rows = [r[1] for r in log.recs[before:]]
    ecc = {k: Ecc(*k) for k in boards}
    for (n, g), e in sorted(ecc.items()):
        site = "west" if n.startswith("w") else "east"
        off = log.lag[n] + 0.2
        t = t0 + off
        while t < end:
            if (n, g) == (x_node, x_g) and t >= x_t:
                break
            e.poll(log, t, {"cluster": site})
            t += 30.0
    if x_t < end:
        ecc[(x_node, x_g)].xid(log, x_t + 0.05, 79)
    ports = {(n, g): Port(n, f"mlx5_{g}", rng) for (n, g) in boards}
    flap_rows = []
    for (n, g), prt in sorted(ports.items()):
        site = "west" if n.startswith("w") else "east"
        busy = busy_fn(n, g)
        t = t0 + log.lag[n] + 0.35
        last = t0
        while t < end:
            state = busy(t)
            gbs = rng.uniform(9.0, 14.0) if state else rng.uniform(0.0, 0.05)
            up, nd, sym = True, 0, 0
            if (n, g) == (flap_node, flap_g):
                for a, b2 in downs:
                    if last < a <= t:
                        nd += 1
                        sym += rng.randint(20, 200)
                    if a <= t < b2:
                        up = False
                if nd or not up:
                    flap_rows.append(round(t, 3))
            prt.poll(log, t, gbs, up=up, sym=sym, downed=nd, rate=LINE_GBPS,
                     extra={"cluster": site})
            last = t
            t += 10.0

    # -- labels -----------------------------------------------------------------------------
    hrows = [ts for ts in hot_rows if ts >= hot_t]
    if hrows:
        log.label(f"hot-{hot_node}-g{hot_g}", "slow_node", "thermal",
                  {"level": "gpu", "node": hot_node, "gpu": hot_g}, hrows[0], hot_rows[-1])
    if changed["sdc"]:
        log.label(f"sdc-{sdc_node}-g{sdc_g}", "sdc", "gpu_hardware",
                  {"level": "gpu", "node": sdc_node, "gpu": sdc_g}, changed["sdc"][0],
                  steps_out[(sdc_node, sdc_g)][-1])
    fl = sorted(flap_rows + changed["flap"])
    if fl:
        log.label(f"flap-{flap_node}-mlx5_{flap_g}", "network", "nic",
                  {"level": "nic", "node": flap_node, "nic": f"mlx5_{flap_g}", "port": 1},
                  fl[0], fl[-1])
    if x_t < end:
        xt = round(x_t + 0.05, 3)
        log.label(f"xid79-{x_node}-g{x_g}", "hardware", "gpu_hardware",
                  {"level": "gpu", "node": x_node, "gpu": x_g}, xt, xt)
        log.effect("gpus-idle-beside-a-lost-gpu", {"node": x_node}, x_t, end)
    for n in east:
        log.effect("site-power-cap", {"node": n}, t0, end)
    log.effect("islands-steps-apart-in-time", {"job": JOB}, t0, end)
    return log
