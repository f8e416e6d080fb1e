"""Story `async`: a recommender trained asynchronously against parameter servers.

`ps-ctr` (tenant `ads`) runs 48 workers, one a GPU, on `gpu-01..06` (HGX H100, 8 NICs: GPU k
on `mlx5_k`); the parameter servers are CPU hosts outside the telemetry. Each worker pulls
embeddings and dense weights, computes, and pushes its gradients on its own -- **nobody waits
for anybody**: a slow worker makes fewer updates, it does not slow its peers, and nobody's
`comm_ms` grows when it lags. The job writes TensorFlow's `global_step` as the parameter
servers return it after each push, so **every step number is one worker's** (the 48 workers'
updates interleave; no two ranks report the same step). No `tp/pp/dp_rank` (pure data
parallelism), no `param_checksum` (a worker's copy is stale by design). `gpu-07` is the pool's
spare node: idle GPUs that take a restarted worker and two workers added mid-run.
"""

from __future__ import annotations

import random

from bench.blind29 import noise
from bench.blind29.world import LINE_GBPS, Board, Ecc, Log, Port, slowdown, thermal_rows

JOB, TENANT, CLUSTER = "ps-ctr", "ads", "pai-east"
NODES = [f"gpu-{i:02d}" for i in range(1, 8)]
SPARE = "gpu-07"
TOPOLOGY = "\n".join([
    "SwitchName=leaf-a Nodes=gpu-[01-04]",
    "SwitchName=leaf-b Nodes=gpu-[05-07]",
    "SwitchName=spine Switches=leaf-a,leaf-b",
    ""])
COLD = (2.3, 1.5, 1.15, 1.04)


def story(seed: int, minutes: float, t0: float) -> Log:
    rng = random.Random(f"blind29-async-{seed}")
    log = Log(rng, {"format": "slurm", "text": TOPOLOGY})
    end = t0 + minutes * 60.0
    span = end - t0
    base_c = rng.uniform(0.42, 0.55)
    comm_base = rng.uniform(0.16, 0.24)
    cov = 0.03
    boards = {}
    for n in NODES:
        inlet = rng.uniform(22.0, 28.0)
        for g in range(8):
            boards[(n, g)] = Board(n, g, inlet, rng.uniform(0.052, 0.064),
                                   rng.uniform(380.0, 520.0), idle_w=rng.uniform(62.0, 72.0))

    # -- the faults ---------------------------------------------------------------------------
    busy_nodes = rng.sample(NODES[:6], 4)
    slow_n, clock_n, x_n, ber_n = busy_nodes
    slow_g, clock_g, x_g, ber_g = (rng.randrange(8) for _ in range(4))
    slow_t = t0 + span * rng.uniform(0.12, 0.25)
    slow_f = rng.uniform(1.18, 1.25)
    clock_t = t0 + span * rng.uniform(0.25, 0.40)
    clock_share = rng.uniform(0.62, 0.70)
    boards[(clock_n, clock_g)].stuck = (clock_t, clock_share)
    x_t = t0 + span * rng.uniform(0.38, 0.50)
    x_back = x_t + rng.uniform(40.0, 80.0)
    ber_t = t0 + span * rng.uniform(0.60, 0.72)
    ber_retrain = ber_t + rng.uniform(60.0, 90.0)
    ber_f = rng.uniform(1.5, 1.8)

    # -- routine ------------------------------------------------------------------------------
    hot_shards = []
    for _ in range(2):
        a = t0 + span * rng.uniform(0.05, 0.9)
        hot_shards.append((a, a + rng.uniform(40.0, 90.0), rng.uniform(1.6, 2.2)))
        log.effect("parameter-server-hot-shard", {"job": JOB}, a, hot_shards[-1][1])
    evals, a = [], t0 + rng.uniform(200.0, 280.0)
    while a < end:
        evals.append((a, a + rng.uniform(30.0, 50.0)))
        log.effect("chief-evaluation-pause", {"node": "gpu-01"}, *evals[-1])
        a += rng.uniform(240.0, 300.0)
    join_t = t0 + span * rng.uniform(0.45, 0.55)
    log.effect("workers-join-on-spare", {"node": SPARE}, join_t, join_t + 30)
    log.effect("spare-gpus-idle", {"node": SPARE}, t0, end)
    log.effect("one-step-numbers-a-worker", {"job": JOB}, t0, end)

    # workers: rank -> list of (start, stop, node, gpu)
    places = {r: [(t0 + rng.uniform(0, 2.0), end, NODES[r // 8], r % 8)] for r in range(48)}
    xr = NODES.index(x_n) * 8 + x_g
    places[xr] = [(places[xr][0][0], x_t, x_n, x_g), (x_back, end, SPARE, 2)]
    if x_back < end:
        log.effect("worker-restarted-on-spare", {"node": SPARE}, x_back, x_back + 30)
    places[48] = [(join_t, end, SPARE, 0)]
    places[49] = [(join_t + rng.uniform(0.2, 2.0), end, SPARE, 1)]

    events = []     # (ts, rank, node, gpu, step_ms, compute_ms, comm_ms)
    changed = {"slow": [], "clock": [], "ber": []}
    nstream = int(span / (base_c + comm_base)) + 50
    for r in sorted(places):
        off = rng.gauss(0.0, 0.008)
        z = noise.stream(rng, nstream)
        i = 0
        for start, stop, n, g in places[r]:
            t, cold = start, 0
            b = boards[(n, g)]
            while t < min(stop, end):
                if r == 0 and [e for e in evals if e[0] <= t < e[1]]:
                    t = [e for e in evals if e[0] <= t < e[1]][0][1]
                    continue
                c = base_c * (1 + off + cov * z[i % nstream])
                c *= COLD[cold] if cold < len(COLD) else 1.0
                c *= slowdown(b.busy_share(t))
                if (n, g) == (slow_n, slow_g) and t >= slow_t:
                    c *= slow_f
                if rng.random() < 0.0015:
                    c += rng.uniform(0.3, 0.9)
                comm = comm_base * rng.uniform(0.9, 1.15)
                for a, e, f in hot_shards:
                    if a <= t < e:
                        comm *= f
                if (n, g) == (ber_n, ber_g) and t >= ber_t:
                    comm *= ber_f if t < ber_retrain else 2.0
                loader = rng.uniform(0.01, 0.03)
                d = c + comm + loader
                if t + d >= stop:
                    break
                ts = t + d
                events.append((ts, r, n, g, d, c, comm))
                if (n, g) == (slow_n, slow_g) and t >= slow_t:
                    changed["slow"].append(ts)
                if (n, g) == (clock_n, clock_g) and t >= clock_t:
                    changed["clock"].append(ts)
                if (n, g) == (ber_n, ber_g) and t >= ber_t:
                    changed["ber"].append(ts)
                t = ts
                i += 1
                cold += 1
    events.sort()
    gstep = rng.randint(2_000_000, 9_000_000)
    last_of: dict[tuple[str, int], float] = {}
    for ts, r, n, g, d, c, comm in events:
        gstep += 1
        log.emit("telemetry.step", {
            "ts": round(ts, 3), "job": JOB, "step": gstep, "rank": r, "node": n, "gpu": g,
            "step_ms": round(d * 1000, 2), "compute_ms": round(c * 1000, 2),
            "comm_ms": round(comm * 1000, 2),
            "loss": round(0.52 - 0.04 * (ts - t0) / span + rng.gauss(0, 0.015), 4),
            "grad_norm": round(rng.uniform(0.5, 0.9), 4), "cluster": CLUSTER,
            "tenant": TENANT})
        last_of[(n, g)] = ts

    # -- rows ---------------------------------------------------------------------------------
    def busy_fn(n: str, g: int):
        spans = [(a, b) for pl in places.values() for a, b, nn, gg in pl if (nn, gg) == (n, g)]

        def busy(t: float):
            if (n, g) == (x_n, x_g) and t >= x_t:
                return False
            return any(a <= t < b for a, b in spans)
        return busy

    clock_rows = []
    for (n, g), b in sorted(boards.items()):
        walk = b.walk(t0, end + 1, busy_fn(n, g), rng)
        before = len(log.recs)
        thermal_rows(log, b, walk, t0, end, {"cluster": CLUSTER})
        if (n, g) == (clock_n, clock_g):
            clock_rows = [rec[1] for rec in log.recs[before:] if rec[1] >= clock_t]
    x_rows = []
    for (n, g) in sorted(boards):
        e = Ecc(n, g)
        t = t0 + log.lag[n] + 0.2
        while t < end:
            if (n, g) == (x_n, x_g) and t >= x_t:
                if not e.pending:
                    e.xid(log, x_t + 0.02, 48)
                    e.dbe, e.pages_dbe, e.pending, e.action = 1, 1, True, "gpu_reset"
                x_rows.append(round(t, 3))
            e.poll(log, t, {"cluster": CLUSTER})
            t += 30.0
    ber_rows = []
    for (n, g) in sorted(boards):
        prt = Port(n, f"mlx5_{g}", rng)
        busy = busy_fn(n, g)
        t = t0 + log.lag[n] + 0.35
        downed_done = False
        while t < end:
            gbs = rng.uniform(3.0, 6.0) if busy(t) else rng.uniform(0.0, 0.03)
            sym = rcv = nd = 0
            rate = LINE_GBPS
            if (n, g) == (ber_n, ber_g) and t >= ber_t:
                age = t - ber_t
                sym = int(30 * 10 ** min(2.5, 2.5 * age / 240.0) * rng.uniform(0.7, 1.3))
                rcv = max(1, sym // 40)
                if t >= ber_retrain:
                    rate = 200.0
                    if not downed_done:
                        nd, downed_done = 1, True
                ber_rows.append(round(t, 3))
            prt.poll(log, t, gbs, rate=rate, sym=sym, rcv=rcv, downed=nd,
                     extra={"cluster": CLUSTER})
            t += 10.0

    # -- labels -------------------------------------------------------------------------------
    if changed["slow"]:
        log.label(f"slow-{slow_n}-g{slow_g}", "slow_node", "unknown",
                  {"level": "gpu", "node": slow_n, "gpu": slow_g}, changed["slow"][0],
                  changed["slow"][-1], attributable=False)
    ck = sorted(changed["clock"] + clock_rows)
    if ck:
        log.label(f"clock-{clock_n}-g{clock_g}", "slow_node", "gpu_hardware",
                  {"level": "gpu", "node": clock_n, "gpu": clock_g}, ck[0], ck[-1])
    if x_t < end:
        log.label(f"xid48-{x_n}-g{x_g}", "hardware", "gpu_memory",
                  {"level": "gpu", "node": x_n, "gpu": x_g}, round(x_t + 0.02, 3),
                  max([round(x_t + 0.02, 3)] + x_rows))
    bb = sorted(changed["ber"] + ber_rows)
    if bb:
        log.label(f"ber-{ber_n}-mlx5_{ber_g}", "network", "nic",
                  {"level": "nic", "node": ber_n, "nic": f"mlx5_{ber_g}", "port": 1},
                  bb[0], bb[-1])
    _ = last_of
    return log
