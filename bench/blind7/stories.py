"""blind7's two stories, `gh200-shared` and `h200-summer`; every choice comes from the seed.

`build(story, seed, minutes)` returns a filled World: its records (event-time order per
source), labels and manifest. Why each shape is realistic: README.md.
"""

from __future__ import annotations

import math

from bench.blind7.gen import GH200, H200, Attempt, megatron_ranks, run_attempt
from bench.blind7.world import World

STORIES = ("gh200-shared", "h200-summer")
LINE_BPS = 400e9 / 8


def inference_load(rng, n_s: int, phase: float) -> list[float]:
    """A serving replica's GPU load each second: idle, decode (memory-bound), prefill bursts
    (compute-bound, over the board limit), with a request rate that rises and falls."""
    out, state, left = [], "idle", 0
    for t in range(n_s):
        lam = 0.55 + 0.3 * math.sin(2 * math.pi * t / 700.0 + phase)
        if left <= 0:
            x = rng.random()
            if state == "prefill":
                state, left = "decode", rng.randint(2, 12)
            elif state == "decode":
                if x < 0.3 * lam:
                    state, left = "prefill", rng.randint(1, 4)
                elif x < 0.3 * lam + 0.25 * (1 - lam):
                    state, left = "idle", rng.randint(1, 8)
                else:
                    left = rng.randint(1, 6)
            elif x < lam:
                state, left = "prefill", rng.randint(1, 4)
            else:
                left = rng.randint(1, 5)
        left -= 1
        out.append(0.03 if state == "idle" else
                   rng.uniform(0.42, 0.62) if state == "decode" else rng.uniform(1.0, 1.06))
    return out


def _window(a: float, b: float):
    return lambda t: a <= t < b


# ====================================================================== gh200-shared


def gh200_shared(w: World) -> str:
    r, n = w.rng, w.n_s
    for t in range(n):  # facility water to the cold plates, slowly swinging
        w.inlet_base[t] = 28.0 + 1.0 * math.sin(2 * math.pi * t / 1100.0)
    names = [f"gh-{i:02d}" for i in range(1, 13)]
    nics = [f"mlx5_{k}" for k in range(4)]
    for i, nm in enumerate(names):
        w.add_node(nm, GH200, 4, nics, f"leaf{i // 4 + 1}")
    topo = ("Topology=gh200-shared Version=1\n"
            "# 12 quad-GH200 nodes, one NDR port per superchip; 3 leaves of 4 nodes, 1 spine\n"
            "NodeSet=gh-[01-12] Gpus=4 Nics=mlx5_[0-3]\n"
            "SwitchName=leaf[1-3] Nodes=gh-[01-12]\n"
            "SwitchName=spine1 Switches=leaf[1-3]\n")
    # ---- training job T: TP2 x DP14, nodes 1-6 whole, GPUs 0-1 of nodes 7-8
    hosts = [(nm, g) for nm in names[:6] for g in range(4)]
    hosts += [("gh-07", 0), ("gh-07", 1), ("gh-08", 0), ("gh-08", 1)]
    ranks = megatron_ranks(hosts, 2, 1, 14)
    for nm, g in hosts:
        w.set_load(nm, g, 0, n, 0.97)
        w.set_port(nm, f"mlx5_{g}", 0, n, 0.30)
    # ---- inference servers (tenant "serving"): TP2 replicas, no step records
    servers = [("gh-07", (2, 3)), ("gh-08", (2, 3))]
    servers += [(nm, gs) for nm in names[8:] for gs in ((0, 1), (2, 3))]
    for nm, gs in servers:
        ld = inference_load(r, n, r.uniform(0, 6.3))
        for g in gs:
            w.set_load(nm, g, 0, n, lambda t, ld=ld: ld[t] * (1 + r.gauss(0, 0.03)))
            w.set_port(nm, f"mlx5_{g}", 0, n, lambda t, ld=ld: 0.015 + 0.05 * ld[t])
    # ---- healthy: a leaf3 server restarts on a new model version and pulls its weights
    rs_node, rs_g = r.choice([s for s in servers if s[0] in names[8:]])
    rs_t = r.uniform(420, 640)
    rs_d = r.uniform(40, 60)
    for g in rs_g:
        w.set_load(rs_node, g, rs_t, rs_t + rs_d, 0.0)
    pull_from = r.choice([nm for nm in names[8:] if nm != rs_node])
    pull = _window(rs_t + rs_d - 6, rs_t + rs_d)

    def weight_pull(node, nic, t, d):
        if pull(t) and nic == f"mlx5_{rs_g[0]}":
            if node == rs_node:
                d["rx_bytes"] += 0.9 * LINE_BPS
            elif node == pull_from:
                d["tx_bytes"] += 0.9 * LINE_BPS
                d["xmit_wait"] *= 20
        return None
    w.nic_hooks.append(weight_pull)
    w.manifest["healthy"].append({"what": "server restart + weight pull inside leaf3",
                                  "node": rs_node, "gpus": list(rs_g), "t": rs_t})
    # ---- fault: an aging GPU of T (needs more power for the same clock)
    ag_node, ag_gpu = r.choice(names[1:5]), r.randrange(4)
    a0, a1 = r.uniform(0.12, 0.16), r.uniform(0.26, 0.32)
    lab_age = w.label("aging", "slow_node", "power", {"level": "gpu", "node": ag_node,
                                                       "gpu": ag_gpu})
    g = w.gpus[(ag_node, ag_gpu)]
    g.age = lambda t: a0 + (a1 - a0) * t / n
    g.label = lab_age
    # ---- fault: the serving tenant's traffic spike congests leaf2's uplinks
    xs, xd = r.uniform(360, 540), r.uniform(200, 260)
    xw, xcnp, xc = r.uniform(30, 80), r.uniform(300, 900), r.uniform(1.30, 1.45)
    lab_x = w.label("xtenant", "network", "switch", {"level": "switch", "switch": "leaf2"},
                    attributable=False)
    in_x = _window(xs, xs + xd)

    def xtenant_nic(node, nic, t, d):
        if not in_x(t) or w.nodes[node].leaf != "leaf2":
            return None
        d["xmit_wait"] *= xw
        d["np_cnp_sent"] += xcnp
        d["rp_cnp_handled"] += xcnp
        if node in ("gh-07", "gh-08") and nic in ("mlx5_2", "mlx5_3"):
            d["tx_bytes"] = 0.8 * LINE_BPS
            d["rx_bytes"] = 0.3 * LINE_BPS
        return lab_x
    w.nic_hooks.append(xtenant_nic)
    w.hooks.comm.append(lambda job, t: (xc, lab_x) if in_x(t) else (1.0, None))
    # ---- fault: a T port retrains and comes back at half its rate (HDR 200 instead of NDR)
    hr_node, hr_k = r.choice(names[:4]), r.randrange(4)
    hr_nic = f"mlx5_{hr_k}"
    phase = w.nodes[hr_node].phase + 0.7
    sample = phase + 10 * math.ceil((r.uniform(630, 750) - phase) / 10)
    ds = float(math.floor(sample - r.uniform(1.0, 3.0)))  # the link drops on a second
    dd = r.uniform(4.0, 7.0)
    hf = r.uniform(1.18, 1.26)
    lab_hr = w.label("halfrate", "network", "nic", {"level": "nic", "node": hr_node,
                                                     "nic": hr_nic, "port": 1})

    def halfrate_nic(node, nic, t, d):
        if node != hr_node or nic != hr_nic or t < ds - 8:
            return None
        if t < ds:
            d["symbol_errors"] = d.get("symbol_errors", 0) + r.randint(5, 40)
        elif t < ds + dd:
            d.update(state="down", tx_bytes=0, rx_bytes=0, xmit_wait=0, np_cnp_sent=0,
                     rp_cnp_handled=0)
            if t == int(ds):
                d["link_downed"] = 1
        else:
            d.update(state="up", rate=200.0)
            d["tx_bytes"] /= hf
            d["rx_bytes"] /= hf
            d["xmit_wait"] *= 4
        return lab_hr
    w.nic_hooks.append(halfrate_nic)
    w.hooks.comm.append(lambda job, t: (hf, lab_hr) if t >= ds + dd else (1.0, None))

    def halfrate_stall(job, a, b):
        ov = min(b, ds + dd) - max(a, ds)
        return ((ov + 2.0) * 1000.0, lab_hr) if ov > 0 else (0.0, None)
    w.hooks.stall.append(halfrate_stall)
    # ---- fault: a serving GPU's row remap fails (XID 63, then 64); the server restarts on it
    rf_node, rf_gs = r.choice([s for s in servers if s[0] in names[9:] and
                               (s[0], s[1]) != (rs_node, rs_g)])
    rf_gpu = r.choice(rf_gs)
    tx = r.uniform(780, 960)
    tx64 = tx + r.uniform(1.0, 4.0)
    lab_rf = w.label("remapfail", "hardware", "gpu_memory", {"level": "gpu", "node": rf_node,
                                                              "gpu": rf_gpu})
    w.xids += [(tx, rf_node, rf_gpu, 63, lab_rf), (tx64, rf_node, rf_gpu, 64, lab_rf)]
    down = r.uniform(60, 90)
    for g2 in rf_gs:
        w.set_load(rf_node, g2, tx64 + 1, tx64 + 1 + down, 0.0)

    def remapfail_ecc(node, gpu, t, v):
        if node != rf_node or gpu != rf_gpu or t < tx or "dbe_volatile" not in v:
            return None
        if t < tx64:
            v["row_remap_pending"] = True
        else:
            v["dbe_volatile"] += 1
            v["row_remap_failure"] = True
        return lab_rf
    w.ecc_hooks.append(remapfail_ecc)
    # ---- run
    w.run_physics()
    at = Attempt("pretrain-t", "research", ranks, r.uniform(0.0, 1.5), n, r.randint(4000, 6000),
                 r.uniform(1400, 1600), r.uniform(220, 280), 35.0, ckpt_every=150,
                 ckpt_ms=(900.0, 1400.0), async_tail=(8, 0.05), warmup=1.0,
                 seed=r.randrange(2**31))
    run_attempt(at, w.gpus, w.hooks, w.t0, {k: v.clock_off for k, v in w.nodes.items()},
                w.emit)
    w.manifest["faults"] = [{"aging": [ag_node, ag_gpu, a0, a1]}, {"xtenant": [xs, xd, xc]},
                            {"halfrate": [hr_node, hr_nic, ds, dd, hf]},
                            {"remapfail": [rf_node, rf_gpu, tx, tx64]}]
    return topo


# ====================================================================== h200-summer


def h200_summer(w: World) -> str:
    r, n = w.rng, w.n_s
    for t in range(n):  # a 45 C afternoon: the economizer's supply air climbs 41 -> 45 C
        w.inlet_base[t] = 41.0 + 4.0 * t / n + 0.4 * math.sin(2 * math.pi * t / 600.0)
    names = [f"hgx-{i:02d}" for i in range(1, 11)]
    nics = [f"mlx5_{k}" for k in range(8)]
    dcgm_default = {"hgx-03", "hgx-08"}
    for i, nm in enumerate(names):
        if nm in dcgm_default:  # dcgm-exporter, default counters: no ECC/NVLink fields
            w.add_node(nm, H200, 8, nics, f"leaf{i // 5 + 1:02d}", ints=True, full_ecc=False)
        else:  # the site's NVML collector: 5 s thermal (floats), PCIe link fields, recovery
            w.add_node(nm, H200, 8, nics, f"leaf{i // 5 + 1:02d}", thermal_s=5.0, ecc_s=15.0,
                       ints=False, recovery=True, xid_at_event=True)
            w.nodes[nm].extra = {g: {"pcie_link_gen": 5, "pcie_link_width": 16}
                                 for g in range(8)}
    topo = ("# Slurm topology.conf (tree): 10 HGX H200 nodes, two leaves, one spine\n"
            "SwitchName=leaf01 Nodes=hgx-[01-05] LinkSpeed=400\n"
            "SwitchName=leaf02 Nodes=hgx-[06-10] LinkSpeed=400\n"
            "SwitchName=spine01 Switches=leaf[01-02]\n")
    # ---- job A: TP8 x PP2 x DP3 on hgx-01..06; a node dies; torchrun re-forms it on 4 nodes
    lost = r.choice(names[4:6])
    tl = r.uniform(720, 840)
    tr = tl + r.uniform(95, 150)  # NCCL timeout + elastic agent restart + rendezvous
    survivors = [nm for nm in names[:6] if nm != lost]
    chosen = r.sample(survivors, 4)  # rendezvous order renumbers the ranks
    spare = [nm for nm in survivors if nm not in chosen][0]
    hosts1 = [(nm, g) for nm in names[:6] for g in range(8)]
    hosts2 = [(nm, g) for nm in chosen for g in range(8)]
    start2 = tr + r.uniform(20, 35)
    for nm, g in hosts1:
        w.set_load(nm, g, 0, tl, 0.97)
        w.set_port(nm, f"mlx5_{g}", 0, tl, 0.30)
    for nm, g in hosts2:
        w.set_load(nm, g, start2 - 3, n, 0.97)
        w.set_port(nm, f"mlx5_{g}", start2, n, 0.30)
    w.nodes[lost].dead_from = tl
    lab_lost = w.label("node-lost", "unattributed", "unknown", {"level": "node", "node": lost},
                       attributable=False)
    lab_lost.touch(round(w.t0 + tl + w.nodes[lost].clock_off, 3))
    lab_lost.touch(round(w.t0 + n, 3))
    reload_t = tr + r.uniform(200, 300)
    if reload_t < n - 60:
        w.nodes[spare].reset_at = reload_t
        w.nodes[spare].gaps = [(reload_t - 35, reload_t)]
        w.manifest["healthy"].append({"what": "driver reload on the spare", "node": spare,
                                      "t": reload_t})
    # ---- fault: a fan wall fails on an A node (+0.030 C/W over a minute, then repaired)
    fan = r.choice([nm for nm in names[:4]])
    fs, fd = r.uniform(180, 360), r.uniform(300, 420)
    lab_fan = w.label("fanwall", "slow_node", "thermal", {"level": "node", "node": fan})

    def k_add(t):
        return 0.030 * min(1.0, max(0.0, (t - fs) / 60.0), max(0.0, (fs + fd + 60 - t) / 60.0))
    for g in range(8):
        w.gpus[(fan, g)].k_add = k_add
        w.gpus[(fan, g)].label = lab_fan
    # ---- job B: a vision-language SFT, TP8 x DP4 on hgx-07..10, CPU-side decoding
    hostsb = [(nm, g) for nm in names[6:] for g in range(8)]
    ranksb = megatron_ranks(hostsb, 8, 1, 4)
    for nm, g in hostsb:
        w.set_load(nm, g, 0, n, 0.95)
        w.set_port(nm, f"mlx5_{g}", 0, n, 0.25)
    # ---- fault: a B GPU's PCIe link trained at Gen4 x8 (activation offload 4x slower)
    pn, pg = r.choice(names[6:]), r.randrange(8)
    pf = r.uniform(1.18, 1.27)
    lab_pcie = w.label("pcie-x8", "slow_node", "unknown", {"level": "gpu", "node": pn,
                                                            "gpu": pg}, attributable=False)
    if w.nodes[pn].extra:
        w.nodes[pn].extra[pg] = {"pcie_link_gen": 4, "pcie_link_width": 8}
    w.hooks.compute.append(lambda rk, t: (pf, lab_pcie) if (rk.node, rk.gpu) == (pn, pg)
                           else (1.0, None))
    # ---- fault: memory pressure on a B host: its loaders re-read from NFS, stalls
    ln = r.choice([nm for nm in names[6:] if nm != pn])
    ls, ld = r.uniform(300, 840), r.uniform(240, 360)
    lab_ld = w.label("loader", "slow_node", "unknown", {"level": "node", "node": ln},
                     attributable=False)
    memo: dict = {}

    def loader_neither(rk, t, rng):
        if rk.node != ln or not ls <= t < ls + ld:
            return 0.0, None
        key = round(t, 3)
        if key not in memo:
            memo.clear()
            memo[key] = min(3000.0, 700.0 * math.exp(rng.gauss(0, 0.6))) if rng.random() < 0.6 \
                else 0.0
        base = memo[key]
        return (base * (1 + rng.gauss(0, 0.15)), lab_ld) if base else (0.0, None)
    w.hooks.neither.append(loader_neither)
    # ---- run
    w.run_physics()
    offs = {k: v.clock_off for k, v in w.nodes.items()}
    ranks1 = megatron_ranks(hosts1, 8, 2, 3)
    step0 = r.randint(8000, 10000)
    a1 = Attempt("pt-a", "lab-a", ranks1, r.uniform(0, 2), min(tl, n), step0, r.uniform(2500, 2700),
                 r.uniform(420, 480), 60.0, stage_off=(0.06, 0.0), ckpt_every=80,
                 ckpt_ms=(12000.0, 18000.0), warmup=1.0, seed=r.randrange(2**31))
    _, last = run_attempt(a1, w.gpus, w.hooks, w.t0, offs, w.emit)
    resume = (last // 80) * 80 + 1
    a2 = Attempt("pt-a", "lab-a", megatron_ranks(hosts2, 8, 2, 2), start2, n, resume,
                 a1.compute_ms * 1.5, a1.comm_ms, 60.0, stage_off=(0.06, 0.0), ckpt_every=80,
                 ckpt_ms=(12000.0, 18000.0), warmup=5.0, seed=r.randrange(2**31))
    run_attempt(a2, w.gpus, w.hooks, w.t0, offs, w.emit)
    b = Attempt("vlm-sft-b", "lab-b", ranksb, r.uniform(0, 2), n, r.randint(1500, 3000),
                r.uniform(1800, 2000), 300.0, 250.0, ckpt_every=200, ckpt_ms=(8000.0, 12000.0),
                warmup=1.0, loader_stall=1 / 300, seed=r.randrange(2**31))
    run_attempt(b, w.gpus, w.hooks, w.t0, offs, w.emit)
    w.manifest["faults"] = [{"node-lost": [lost, tl, tr, chosen, spare, last, resume]},
                            {"fanwall": [fan, fs, fd]}, {"pcie-x8": [pn, pg, pf]},
                            {"loader": [ln, ls, ld]}]
    return topo


def build(story: str, seed: int, minutes: float = 20.0) -> tuple[World, dict]:
    w = World(story, seed, minutes)
    text = gh200_shared(w) if story == "gh200-shared" else h200_summer(w)
    w.emit_dcgm()
    w.emit_nic()
    fmt = "faultline" if story == "gh200-shared" else "slurm"
    return w, {"format": fmt, "text": text}
