"""blind33's two stories; every choice drawn from the seed (README.md says what is in them).

``profiles`` -- H100 nodes whose workload power profile the scheduler switches for the whole job
(max-Q: the limit 700 -> 560 W, max-P back), walking node by node; a frozen power reading; saves.
Faults: the profile applied to one node only, a GPU whose clock the profile's application clocks
keep low after the switch back, a VRM whose power brake comes and goes.
``smooth`` -- a GB200 NVL72 rack with power smoothing (an idle board keeps a power floor, the
first kernels after idle wait for the ramp), EDPp clocks that move with the coolant, a facility
demand response walking the rack's trays down to a lower budget, an evaluation job that pauses.
Faults: a cold plate losing flow (the boost leaves first, 0x20 at 87 C), a tray's PSU braking,
a GPU whose power ramp is limited to its slowest setting.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable

from bench.blind33 import jobs, world
from bench.blind33.world import GB200, H100, Gpu, Log

STORIES = ("profiles", "smooth")
EPOCH = 1_796_000_000.0


def build(story: str, seed: int, minutes: float) -> Log:
    """The story's log for ``seed``, ``minutes`` long."""
    return {"profiles": _profiles, "smooth": _smooth}[story](seed, minutes * 60.0)


def _saves(rng: random.Random, n_steps: int, every: tuple[int, int], gap: tuple[float, float]
           ) -> dict[int, float]:
    out, k = {}, rng.randint(*every) // 2
    while k < n_steps:
        out[k] = round(rng.uniform(*gap), 2)
        k += rng.randint(*every)
    return out


def _episodes(rng: random.Random, t0: float, t1: float, dur: tuple[float, float],
              every: tuple[float, float]) -> list[tuple[float, float]]:
    out, t = [], t0
    while t < t1:
        d = rng.uniform(*dur)
        out.append((t, t + d))
        t += d + rng.uniform(*every)
    return out


def _set(gpus: list[Gpu], **kw: float | bool) -> Callable[[], None]:
    def act() -> None:
        for g in gpus:
            for k, v in kw.items():
                setattr(g, k, v)
    return act


def _profiles(seed: int, dur: float) -> Log:
    rng = random.Random(seed * 1000 + 331)
    t0 = EPOCH + seed * 86_400.0
    t1 = t0 + dur
    nodes = [f"p-{i:02d}" for i in range(1, 11)]
    topo = ("Topology=pw-a Version=1\nNodeSet=p-[01-10] Gpus=8 Nics=mlx5_[0-7]\n"
            "Rack=rack-[1-5] Nodes=p-[01-10]\nSwitchName=leaf-[1-2] Nodes=p-[01-10]\n"
            "SwitchName=spine-1 Switches=leaf-[1-2]\n")
    log = Log(topo, seed)
    gpus = {n: [Gpu(n, i, H100, rng.gauss(1.0, 0.006)) for i in range(8)] for n in nodes}
    s0 = rng.uniform(1.35, 1.45)
    job = jobs.Job("pf-pt", "core", "pw-a", 8, 2, 4, [gpus[nodes[g]] for g in range(8)],
                   [s0, s0 * rng.uniform(1.04, 1.07)], rng.uniform(0.30, 0.36),
                   rng.uniform(0.18, 0.24), rng.uniform(0.008, 0.012))
    n_steps = int(dur / 1.8) + 20
    job.gaps = _saves(rng, n_steps, (110, 150), (8.0, 12.0))
    one, stuck_n, vrm_n, frozen_n = rng.sample(nodes[:8], 4)
    maxq_w = round(rng.uniform(550.0, 570.0))
    # the job-wide profile switches, node by node (the scheduler's agent on each in turn)
    t_q, t_p = t0 + dur * rng.uniform(0.30, 0.38), t0 + dur * rng.uniform(0.60, 0.68)
    walk_q = {n: t_q + i * rng.uniform(0.8, 1.4) for i, n in enumerate(nodes[:8])}
    walk_p = {n: t_p + i * rng.uniform(0.8, 1.4) for i, n in enumerate(nodes[:8])}
    for n in nodes[:8]:
        job.actions.append((walk_q[n], _set(gpus[n], limit_w=float(maxq_w))))
        job.actions.append((walk_p[n], _set(gpus[n], limit_w=H100.tdp_w)))
    log.effect("profile-max-q", {"job": "pf-pt"}, t_q, max(walk_q.values()),
               f"the job's workload power profile switched to max-Q ({maxq_w} W) node by node: "
               "0x4 on every GPU, every rank x~1.08")
    log.effect("profile-max-p", {"job": "pf-pt"}, t_p, max(walk_p.values()),
               "switched back to max-P (700 W) node by node")
    # fault: the max-Q profile applied to one node only, until the job-wide switch
    t_o = t0 + dur * rng.uniform(0.08, 0.20)
    job.actions.append((t_o, _set(gpus[one], limit_w=float(maxq_w))))
    log.label(f"profile-{one}", "slow_node", "power", {"level": "node", "node": one}, t_o,
              walk_q[nodes[7]])
    # fault: application clocks left at the max-Q clock on one GPU after the switch back
    sg = rng.randrange(8)
    held = round(math.sqrt(maxq_w / H100.busy_w) * rng.uniform(0.985, 0.995), 3)
    job.actions.append((walk_p[stuck_n] + 0.001, _set([gpus[stuck_n][sg]], held_clock=held)))
    log.label(f"clock-{stuck_n}-g{sg}", "slow_node", "power",
              {"level": "gpu", "node": stuck_n, "gpu": sg}, walk_p[stuck_n], t1)
    # fault: a VRM failing -- the power brake on one GPU, on and off
    vg = rng.randrange(8)
    t_v = t0 + dur * rng.uniform(0.72, 0.82)
    gpus[vrm_n][vg].brakes = _episodes(rng, t_v, t1, (3.0, 8.0), (15.0, 40.0))
    log.label(f"vrm-{vrm_n}-g{vg}", "slow_node", "power",
              {"level": "gpu", "node": vrm_n, "gpu": vg}, t_v, t1)
    # routine: a power reading that stops moving
    fg = rng.randrange(8)
    gpus[frozen_n][fg].frozen_from = t0 + dur * rng.uniform(0.2, 0.5)
    log.effect("frozen-power-reading", {"node": frozen_n, "gpu": fg},
               gpus[frozen_n][fg].frozen_from, t1,
               "the board's power reading repeats its last value; the GPU is healthy")
    for k, gap in sorted(job.gaps.items()):
        log.effect("save", {"job": "pf-pt"}, 0.0, 0.0, f"step {k + 1}: {gap} s idle")
    phase = rng.uniform(0, 2 * math.pi)

    def coolant(t: float) -> float:  # the cold aisle cycles with the CRAHs
        return H100.coolant_c + 1.5 * math.sin(2 * math.pi * (t - t0) / 420.0 + phase)

    recs: list = []
    jobs.run(job, t0 + 2.0, t1, rng, coolant, recs)
    for n in nodes[8:]:
        for g in gpus[n]:
            g.book(t0, t1, -1.0, 0.0, 0, coolant(t0))
    _fix_saves(log, recs, "pf-pt")
    all_gpus = [g for n in nodes for g in gpus[n]]
    recs += world.rows(all_gpus, t0, t1, rng)
    for n in nodes:
        recs += world.nic_rows(n, 8, t0, t1, 400.0, job.busy.get(n, []), rng)
    log.records = recs
    return log


def _fix_saves(log: Log, recs: list, name: str) -> None:
    """Give each save effect its time from the step records (the step that carries it)."""
    ends = {}
    for _, v in recs:
        if v["job"] == name and v["rank"] == 0:
            ends[v["step"]] = (v["ts"], v["step_ms"])
    for e in log.effects:
        if e["effect"] in ("save", "pause") and e["scope"].get("job") == name:
            k = int(e["what"].split(":")[0].split()[1])
            if k in ends:
                ts, ms = ends[k]
                e["start_ts"], e["end_ts"] = round(ts - ms / 1000.0, 3), round(ts, 3)
    log.effects[:] = [e for e in log.effects if e["end_ts"] > 0]


def _smooth(seed: int, dur: float) -> Log:
    rng = random.Random(seed * 1000 + 332)
    t0 = EPOCH + seed * 86_400.0 + 43_200.0
    t1 = t0 + dur
    trays = [f"g-{i:02d}" for i in range(1, 19)]
    topo = ("Topology=pw-b Version=1\nNodeSet=g-[01-18] Gpus=4 Nics=mlx5_[0-3]\n"
            "Rack=rack-1 Nodes=g-[01-18]\nDomain=nvl-1 Nodes=g-[01-18]\n"
            "SwitchName=leaf-[1-2] Nodes=g-[01-18]\nSwitchName=spine-1 Switches=leaf-[1-2]\n")
    log = Log(topo, seed)
    gpus = {n: [Gpu(n, i, GB200, rng.gauss(1.0, 0.006)) for i in range(4)] for n in trays}

    def group(j: int) -> list[Gpu]:  # TP8 over NVLink: two trays
        return gpus[trays[2 * j]] + gpus[trays[2 * j + 1]]

    s0 = rng.uniform(1.60, 1.75)
    job = jobs.Job("sm-pt", "lm", "pw-b", 8, 2, 4, [group(j) for j in range(8)],
                   [s0, s0 * rng.uniform(1.03, 1.06)], rng.uniform(0.28, 0.34),
                   rng.uniform(0.16, 0.22), rng.uniform(0.008, 0.012))
    n_steps = int(dur / 1.9) + 20
    job.gaps = _saves(rng, n_steps, (90, 130), (8.0, 12.0))
    for k in job.gaps:  # the ramp from the smoothing floor stretches the first kernels
        job.stretch[k] = rng.uniform(1.12, 1.20)
        log.effect("save", {"job": "sm-pt"}, 0.0, 0.0,
                   f"step {k + 1}: {job.gaps[k]} s idle at the smoothing floor, then every "
                   f"rank x{job.stretch[k]:.2f} (the power ramp)")
    ev = jobs.Job("sm-ev", "lm", "pw-b", 8, 1, 1, [group(8)], [rng.uniform(0.85, 0.95)],
                  0.05, 0.0, rng.uniform(0.008, 0.012))
    k = rng.randint(20, 40)
    while k < int(dur / 0.9):
        ev.gaps[k] = round(rng.uniform(60.0, 120.0), 1)
        ev.stretch[k] = rng.uniform(1.15, 1.25)
        log.effect("pause", {"job": "sm-ev"}, 0.0, 0.0,
                   f"step {k + 1}: {ev.gaps[k]} s idle at the smoothing floor, then x"
                   f"{ev.stretch[k]:.2f}")
        k += rng.randint(45, 90)
    # three TP groups (tray pairs), a tray of each
    hot_n, psu_n, ramp_n = (trays[2 * j + rng.randrange(2)] for j in rng.sample(range(8), 3))
    # routine: the facility's demand response walks the rack's trays down, then back up
    t_d = t0 + dur * rng.uniform(0.40, 0.52)
    d_len = rng.uniform(60.0, 120.0)
    budget = round(rng.uniform(960.0, 1000.0))
    for i, n in enumerate(trays):
        act_dn = _set(gpus[n], limit_w=float(budget))
        act_up = _set(gpus[n], limit_w=GB200.tdp_w)
        owner = ev if n in trays[16:] else job
        owner.actions += [(t_d + i * 0.5, act_dn), (t_d + d_len + i * 0.5, act_up)]
    log.effect("demand-response", {"job": "sm-pt"}, t_d, t_d + d_len + 9.0,
               f"the rack's budget cut: every GPU's limit {budget} W, tray after tray: 0x4 on "
               "every GPU, every rank x~1.07")
    # fault: a cold plate losing flow -- the die warms, EDPp gives up boost, then 0x20
    hg = rng.randrange(4)
    t_h = t0 + dur * rng.uniform(0.15, 0.30)
    r_end = rng.uniform(0.055, 0.065)
    for i in range(13):
        r = GB200.r_cpw + (r_end - GB200.r_cpw) * i / 12
        job.actions.append((t_h + 10.0 * i, _set([gpus[hot_n][hg]], r_cpw=r)))
    log.label(f"flow-{hot_n}-g{hg}", "slow_node", "thermal",
              {"level": "gpu", "node": hot_n, "gpu": hg}, t_h, t1)
    # fault: a tray's PSU failing -- the power brake on its four GPUs, on and off
    t_p = t0 + dur * rng.uniform(0.55, 0.70)
    eps = _episodes(rng, t_p, t1, (2.0, 6.0), (15.0, 45.0))
    for g in gpus[psu_n]:
        g.brakes = eps
    log.label(f"psu-{psu_n}", "slow_node", "power", {"level": "node", "node": psu_n}, t_p, t1)
    # fault: a GPU whose power ramp is limited to its slowest setting
    rg = rng.randrange(4)
    t_r = t0 + dur * rng.uniform(0.75, 0.85)
    job.actions.append((t_r, _set([gpus[ramp_n][rg]], ramp_slow=True)))
    log.label(f"ramp-{ramp_n}-g{rg}", "slow_node", "power",
              {"level": "gpu", "node": ramp_n, "gpu": rg}, t_r, t1)
    phase = rng.uniform(0, 2 * math.pi)

    def coolant(t: float) -> float:  # the CDU's supply swings with the facility water
        return GB200.coolant_c + 1.5 * math.sin(2 * math.pi * (t - t0) / 300.0 + phase)

    recs: list = []
    jobs.run(job, t0 + 2.0, t1, rng, coolant, recs)
    jobs.run(ev, t0 + 5.0, t1, rng, coolant, recs)
    _fix_saves(log, recs, "sm-pt")
    _fix_saves(log, recs, "sm-ev")
    recs += world.rows([g for n in trays for g in gpus[n]], t0, t1, rng)
    busy = {n: job.busy.get(n, []) + ev.busy.get(n, []) for n in trays}
    for n in trays:
        recs += world.nic_rows(n, 4, t0, t1, 400.0, busy[n], rng)
    log.records = recs
    return log
