"""blind38's two stories, every choice from the seed: ``tp8`` (TP groups of 8 over two compute
trays, two racks) and ``cdu`` (three racks, three jobs of TP4 a tray, the racks' coolant loops
and NVLink backplanes). README.md says what is in them and why."""

from __future__ import annotations

import random

from bench.blind38.jobs import CommDrag, Job, Segment, Slow, run
from bench.blind38.rack import Effect, Fault, Heat, Rack, World

STORIES = ("tp8", "cdu")


def _racks(rng: random.Random, names: list[str]) -> list[Rack]:
    return [Rack(f"nvl-{n}", [f"{n}-t{k:02d}" for k in range(1, 19)], rng.uniform(30.0, 33.0))
            for n in names]


def _t0(story: str, seed: int) -> float:
    return 1_790_000_000.0 + 100_000.0 * seed + (0.0 if story == "tp8" else 50_000.0)


def _gpu(at: tuple[str, int]) -> dict:
    return {"level": "gpu", "node": at[0], "gpu": at[1]}


def tp8(seed: int, minutes: float) -> tuple[World, str]:
    """One job, TP8 x DP16 on two racks: each TP group spans two compute trays."""
    rng = random.Random(f"blind38/tp8/{seed}")
    t0 = _t0("tp8", seed)
    dur = minutes * 60.0
    w = World(rng, t0, t0 + dur, _racks(rng, ["a1", "a2"]), "nv-a")
    a1, a2 = (r.trays for r in w.racks)
    used = a1[:16] + a2[:16]

    def place(trays: list[str]) -> list[list[tuple[str, int]]]:
        return [[(trays[2 * d + k // 4], k % 4) for k in range(8)] for d in range(16)]

    # faults on three distinct trays, the swapped tray a fourth, all of rack a1's or a2's 16
    pick = rng.sample(range(16), 4)
    swap_i = pick[0]
    slow_tray = rng.choice([a1, a2])[pick[1]]
    nvl_tray = rng.choice([a1, a2])[pick[2]]
    slow_at, nvl_at = (slow_tray, rng.randrange(4)), (nvl_tray, rng.randrange(4))
    dom = w.racks[seed % 2]

    f_slow = Fault(f"slowgpu-{slow_at[0]}-g{slow_at[1]}", "slow_node", "unknown",
                   _gpu(slow_at), False)
    f_nvl = Fault(f"nvlink-{nvl_at[0]}-g{nvl_at[1]}", "hardware", "nvlink", _gpu(nvl_at), True)
    f_sw = Fault(f"switchtray-{dom.name}", "unattributed", "unknown",
                 {"level": "domain", "domain": dom.name}, False)
    w.faults += [f_slow, f_nvl, f_sw]

    t_swap = t0 + dur * rng.uniform(0.40, 0.55)
    gap = rng.uniform(60.0, 90.0)
    second = list(used)
    second[swap_i] = a1[16]
    job = Job("gb-tp8", "pretrain", tp=8, dp=16, compute_ms=rng.uniform(1700.0, 2000.0),
              tp_ms=rng.uniform(500.0, 600.0), dp_tail_ms=rng.uniform(180.0, 260.0),
              hidden=rng.uniform(0.55, 0.70), wait_in_compute=rng.uniform(0.5, 0.7),
              segments=[Segment(t0 + rng.uniform(2.0, 6.0), t_swap, place(used),
                                save_at_stop=True),
                        Segment(t_swap + gap, t0 + dur, place(second), warm_steps=2)],
              saves=[t0 + dur * rng.uniform(0.25, 0.33)])
    t_slow = t0 + dur * rng.uniform(0.15, 0.30)
    job.slows.append(Slow(slow_at, t_slow, rng.uniform(1.12, 1.20), f_slow))
    t_nvl = t0 + dur * rng.uniform(0.35, 0.50)
    job.drags.append(CommDrag(lambda at: at == nvl_at, t_nvl, rng.uniform(1.35, 1.60), f_nvl))
    w.nvlink[nvl_at] = [(t_nvl, rng.uniform(40.0, 300.0), rng.uniform(0.2, 1.5), f_nvl)]
    t_sw = t0 + dur * rng.uniform(0.58, 0.72)
    in_dom = set(dom.trays)
    job.drags.append(CommDrag(lambda at: at[0] in in_dom, t_sw, rng.uniform(1.30, 1.50), f_sw))

    # routine: rack a2's power smoothing holds every GPU at 85 % of TDP or more, the swap
    w.power_floor["nvl-a2"] = 0.85
    for tray in a2:
        w.effects.append(Effect("power-smoothing-floor", {"level": "node", "node": tray},
                                t0, t0 + dur, "the rack's power smoothing burns to a floor"))
    off = t_swap + rng.uniform(20.0, 40.0)
    w.powered_off[used[swap_i]] = off
    w.effects += [
        Effect("tray-swapped-for-a-spare", {"level": "node", "node": used[swap_i]},
               t_swap - 10.0, off, "planned: the job saved, stopped, restarted on the spare"),
        Effect("restart-on-spare-tray", {"level": "job", "job": job.name}, t_swap - 10.0,
               t_swap + gap + 15.0, "a save, a stop, two warm-up steps x1.6"),
        Effect("sharded-save", {"level": "job", "job": job.name}, job.saves[0] - 1.0,
               job.saves[0] + 15.0, "6-9 s of checkpoint I/O on every rank"),
    ]
    run(w, job, rng)
    w.xid(t_nvl + rng.uniform(5.0, 60.0), nvl_at[0], nvl_at[1], 74, f_nvl)
    w.collect()
    return w, "nv-a"


def cdu(seed: int, minutes: float) -> tuple[World, str]:
    """Three racks, three TP4 jobs (a TP group a tray); a rack's coolant loop loses flow, an
    NVLink cartridge of another rack's backplane degrades, a GPU's cold plate clogs, and the
    third rack is drained for maintenance with its job moved onto the hot rack."""
    rng = random.Random(f"blind38/cdu/{seed}")
    t0 = _t0("cdu", seed)
    dur = minutes * 60.0
    w = World(rng, t0, t0 + dur, _racks(rng, ["b1", "b2", "b3"]), "nv-b")
    b1, b2, b3 = (r.trays for r in w.racks)

    def place(trays: list[str]) -> list[list[tuple[str, int]]]:
        return [[(tray, k) for k in range(4)] for tray in trays]

    t_drain = t0 + dur * rng.uniform(0.45, 0.60)
    gap = rng.uniform(70.0, 100.0)
    big = Job("gb-big", "sft", tp=4, dp=16, compute_ms=rng.uniform(1500.0, 1800.0),
              tp_ms=rng.uniform(300.0, 380.0), dp_tail_ms=rng.uniform(200.0, 300.0),
              hidden=rng.uniform(0.55, 0.70), wait_in_compute=rng.uniform(0.5, 0.7),
              segments=[Segment(t0 + rng.uniform(2.0, 6.0), t0 + dur, place(b1[:8] + b2[:8]))],
              saves=[t0 + dur * rng.uniform(0.30, 0.40)])
    small = Job("gb-small", "sft", tp=4, dp=8, compute_ms=rng.uniform(1100.0, 1300.0),
                tp_ms=rng.uniform(250.0, 300.0), dp_tail_ms=rng.uniform(120.0, 180.0),
                hidden=rng.uniform(0.55, 0.70), wait_in_compute=rng.uniform(0.5, 0.7),
                segments=[Segment(t0 + rng.uniform(2.0, 6.0), t0 + dur, place(b2[8:16]))])
    ev = Job("gb-eval", "eval", tp=4, dp=8, compute_ms=rng.uniform(1200.0, 1400.0),
             tp_ms=rng.uniform(250.0, 300.0), dp_tail_ms=rng.uniform(120.0, 180.0),
             hidden=rng.uniform(0.55, 0.70), wait_in_compute=rng.uniform(0.5, 0.7),
             segments=[Segment(t0 + rng.uniform(2.0, 6.0), t_drain, place(b3[:8]),
                               save_at_stop=True),
                       Segment(t_drain + gap, t0 + dur, place(b1[8:16]), warm_steps=2)])

    # the coolant loop of rack b1: supply +32-40 C (x0.75-1.25 by height) over 6-9 min
    f_cdu = Fault("coolant-nvl-b1", "slow_node", "thermal", {"level": "domain",
                                                             "domain": "nvl-b1"}, True)
    t_cdu = t0 + dur * rng.uniform(0.15, 0.30)
    w.supply_rise["nvl-b1"] = (f_cdu, t_cdu, rng.uniform(360.0, 540.0), rng.uniform(32.0, 40.0))
    # an NVLink cartridge of rack b2's backplane: 8 consecutive trays' links err and slow
    lo = rng.randrange(2, 7)
    band = set(b2[lo:lo + 8])
    f_cart = Fault("cartridge-nvl-b2", "hardware", "nvlink", {"level": "domain",
                                                              "domain": "nvl-b2"}, True)
    t_cart = t0 + dur * rng.uniform(0.35, 0.55)
    factor = rng.uniform(1.30, 1.50)
    for tray in sorted(band):
        for g in range(4):
            w.nvlink[(tray, g)] = [(t_cart, rng.uniform(5.0, 40.0), rng.uniform(0.05, 0.3),
                                    f_cart)]
    for job in (big, small):
        job.drags.append(CommDrag(lambda at: at[0] in band, t_cart, factor, f_cart))
    # one GPU's cold plate clogs on rack b2, outside the cartridge's band
    hot_at = (rng.choice([t for t in b2[:16] if t not in band]), rng.randrange(4))
    f_hot = Fault(f"hot-{hot_at[0]}-g{hot_at[1]}", "slow_node", "thermal", _gpu(hot_at), True)
    t_hot = t0 + dur * rng.uniform(0.25, 0.45)
    rise = rng.uniform(38.0, 46.0)
    w.heats.append(Heat(lambda n, g, t: rise * min(1.0, (t - t_hot) / 60.0)
                        if (n, g) == hot_at and t >= t_hot else 0.0, f_hot))
    w.faults += [f_cdu, f_cart, f_hot]

    # routine: rack b3 drained for maintenance (its job saved, moved to b1's free trays, two
    # warm-up steps), then powered off; gb-big's sharded save
    off = t_drain + rng.uniform(30.0, 60.0)
    for tray in b3:
        w.powered_off[tray] = off
        w.effects.append(Effect("rack-drained-for-maintenance", {"level": "node", "node": tray},
                                t_drain - 10.0, off, "planned: the rack powered off"))
    w.effects += [
        Effect("job-moved-off-a-drained-rack", {"level": "job", "job": ev.name},
               t_drain - 10.0, t_drain + gap + 15.0, "a save, a stop, two warm-up steps x1.6"),
        Effect("sharded-save", {"level": "job", "job": big.name}, big.saves[0] - 1.0,
               big.saves[0] + 15.0, "6-9 s of checkpoint I/O on every rank"),
    ]
    for job in (big, small, ev):
        run(w, job, rng)
    w.collect()
    return w, "nv-b"


def build(story: str, seed: int, minutes: float) -> tuple[World, str]:
    return {"tp8": tp8, "cdu": cdu}[story](seed, minutes)
