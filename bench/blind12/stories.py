"""The two blind12 stories; every choice is drawn from the seed.

- `nvl72`: two GB200 NVL72 racks (18 compute trays of 4 GPUs each, one NVLink domain a rack);
  one fp16 MoE job across 32 trays, a small SFT job on each rack's last two trays. Faults: a
  rack's power shelf losing PSUs (power-brake bursts on all 72 GPUs of one domain), an NVLink5
  error reported as XID 149 (not 74) that leaves the rack's all-to-all slower, and a GPU whose
  gradients go non-finite every few steps (the job skips those steps: an SDC seen only as one
  rank's `null` grad norm).
- `pool`: eight air-cooled HGX B200 nodes running many small jobs of 1, 2, 4 and 8 GPUs that
  start and end every few minutes. Faults: a GPU 22-38 % slow with no throttle reason,
  inherited by job after job; a DBE under a one-GPU job (XID 48) whose GPU the scheduler hands
  to the next job; a CPU-heavy container beside the jobs on one node.
"""

from __future__ import annotations

import calendar
import random
from dataclasses import dataclass

from bench.blind12.jobs import Hook, Job, Rank, run, tp_dp
from bench.blind12.world import B200, GB200, Label, World

T_BASE = float(calendar.timegm((2026, 11, 20, 6, 0, 0)))


def _t0(seed: int, story: str) -> float:
    return T_BASE + seed * 86400.0 + (0.0 if story == "nvl72" else 43200.0)


# ---- hooks ------------------------------------------------------------------------------
@dataclass
class Brake(Hook):
    """Ranks on a braked tray compute at the clock the brake leaves (~0.55x) for that share."""
    world: World
    label: Label

    def compute(self, r: Rank, t0: float, t1: float) -> float:
        return 1.0 + 0.62 * self.world.brake_share(r.node, t0, t1)


@dataclass
class SlowGpu(Hook):
    node: str
    gpu: int
    factor: float
    label: Label

    def compute(self, r: Rank, t0: float, t1: float) -> float:
        return self.factor if (r.node, r.gpu) == (self.node, self.gpu) else 1.0


@dataclass
class NodeHog(Hook):
    """A CPU-bound container on the node: loaders starve, kernel launches queue."""
    node: str
    t_from: float
    t_to: float
    seed: int
    label: Label

    def _on(self, r: Rank, t0: float) -> bool:
        return r.node == self.node and self.t_from <= t0 < self.t_to

    def compute(self, r: Rank, t0: float, t1: float) -> float:
        return 1.08 if self._on(r, t0) else 1.0

    def other_ms(self, r: Rank, t0: float, t1: float) -> float:
        if not self._on(r, t0):
            return 0.0
        return random.Random(f"{self.seed}/{r.rank}/{t0:.3f}").uniform(120.0, 420.0)


@dataclass
class LinkDegraded(Hook):
    """One GPU's NVLink lost a link: the rack's expert all-to-all runs at its pace."""
    job: str
    t_from: float
    factor: float
    label: Label

    def comm(self, job: Job, r: Rank, t0: float, t1: float) -> float:
        return self.factor if job.name == self.job and t0 >= self.t_from else 1.0


@dataclass
class InfGrads(Hook):
    node: str
    gpu: int
    t_from: float
    p: float
    seed: int
    label: Label

    def non_finite(self, r: Rank, step: int, t0: float) -> bool:
        return ((r.node, r.gpu) == (self.node, self.gpu) and t0 >= self.t_from
                and random.Random(f"{self.seed}/{step}").random() < self.p)


@dataclass
class Kill(Hook):
    """An XID at `ts` on one GPU that ends whatever job runs there."""
    node: str
    gpu: int
    ts: float
    xid: int
    label: Label | None
    fired: bool = False

    def kill(self, r: Rank, t0: float, t1: float):
        if (r.node, r.gpu) == (self.node, self.gpu) and t0 <= self.ts < t1:
            self.fired = True
            return (self.ts, self.xid, self.label)
        return None


# ---- nvl72 ------------------------------------------------------------------------------
def nvl72(seed: int, minutes: float) -> tuple[World, str]:
    rng = random.Random(f"blind12/nvl72/{seed}")
    t0 = _t0(seed, "nvl72") + rng.uniform(0, 600)
    dur = minutes * 60.0
    t_end = t0 + dur
    racks = {r: [f"gb-{r}{i:02d}" for i in range(1, 19)] for r in "ab"}
    nodes = racks["a"] + racks["b"]
    nics = [f"mlx5_{k}" for k in range(4)]
    w = World(rng, GB200, nodes, 4, nics, coolant_c=rng.uniform(30.0, 35.0))

    moe_nodes = racks["a"][:16] + racks["b"][:16]
    moe = Job("moe-fp16", "research", tp_dp("moe-fp16", moe_nodes, 4, 4),
              compute_ms=rng.uniform(1600, 1900), comm_ms=rng.uniform(480, 600), other_ms=25.0,
              first_step=rng.randint(30000, 60000), cold=False, fp16=True,
              overflow_per_step=1 / 160, ckpt_every=250, ckpt_s=(9.0, 14.0))

    # Fault: power shelf of one rack loses PSUs -> power-brake bursts on all its GPUs.
    rack = rng.choice("ab")
    b_from = t0 + dur * rng.uniform(0.35, 0.5)
    b_to = min(t_end - 45.0, b_from + 60.0 * rng.uniform(4.5, 7.0))
    brake = w.label("rack-brake", "slow_node", "power",
                    {"level": "domain", "domain": f"nvl72-{rack}"}, True)
    spans, t = [], b_from
    while t < b_to:
        on = rng.uniform(3.0, 6.5)
        spans.append((t, min(t + on, b_to)))
        t += on + rng.uniform(5.0, 13.0)
    for node in racks[rack]:
        w.brakes[node] = spans
        w.brake_label[node] = brake

    # Fault: NVLink5 error (XID 149) on a GPU of the MoE job, a link lost for good.
    xr = rng.choice("ab")
    xnode, xgpu = rng.choice(racks[xr][:16]), rng.randrange(4)
    x_ts = t0 + dur * rng.uniform(0.12, 0.3)
    nvl = w.label("nvlink-xid149", "hardware", "nvlink", {"level": "gpu", "node": xnode,
                                                           "gpu": xgpu}, True)
    w.xid(xnode, xgpu, x_ts, 149, nvl)
    for k in range(rng.randint(4, 8)):
        w.change(xnode, xgpu, x_ts - 2.0 + 3.0 * k, "nvlink_crc_errors", rng.randint(40, 160),
                 nvl)
        w.change(xnode, xgpu, x_ts - 2.0 + 3.0 * k, "nvlink_replay_errors", rng.randint(3, 20),
                 nvl)
    w.change(xnode, xgpu, x_ts + 0.4, "nvlink_recovery_errors", 1, nvl)
    link = LinkDegraded("moe-fp16", x_ts + 1.0, 1.0 + 0.6 * rng.uniform(0.05, 0.10), nvl)

    # Fault: a GPU whose local gradients go non-finite every few steps.
    snode, sgpu = rng.choice(moe_nodes), rng.randrange(4)
    s_from = t0 + dur * rng.uniform(0.55, 0.7)
    sdc = w.label("inf-grads", "sdc", "unknown", {"level": "gpu", "node": snode, "gpu": sgpu},
                  False)
    inf = InfGrads(snode, sgpu, s_from, rng.uniform(1 / 14, 1 / 7), seed, sdc)

    moe.hooks = [Brake(w, brake), link, inf]
    run(w, moe, t0 - 1.0, t_end, rng)
    for r in "ab":
        sft = Job(f"sft-{r}", "product", tp_dp(f"sft-{r}", racks[r][16:], 4, 4),
                  compute_ms=rng.uniform(800, 1000), comm_ms=rng.uniform(120, 180),
                  other_ms=40.0, cold=True, fp16=False, hooks=[Brake(w, brake)])
        run(w, sft, t0 + dur * rng.uniform(0.05, 0.15), t_end, rng)
    w.effect("rack-power-shelf", {"level": "domain", "domain": f"nvl72-{rack}"}, b_from, b_to,
             "(the fault) bursts: " + ", ".join(f"{a - t0:.0f}-{b - t0:.0f}s" for a, b in spans))
    w.collectors(t0, t_end, thermal_s=10.0, ecc_s=30.0, nic_s=10.0, gbps_busy=180.0,
                 integer_temps=True)
    topo = "\n".join([
        "Topology=gb200-2rack Version=1",
        "NodeSet=gb-a[01-18],gb-b[01-18] Gpus=4 Nics=mlx5_[0-3]",
        "Rack=rack-a,rack-b Nodes=gb-a[01-18],gb-b[01-18]",
        "Domain=nvl72-a,nvl72-b Nodes=gb-a[01-18],gb-b[01-18]",
        *[f"SwitchName=rail{k}-leaf0 Nodes=gb-a[01-18],gb-b[01-18] Nics=mlx5_{k}"
          for k in range(4)],
        "SwitchName=spine[0-1] Switches=rail[0-3]-leaf0", ""])
    return w, topo


# ---- pool -------------------------------------------------------------------------------
TENANTS = ("vision", "speech", "nlp-a", "nlp-b", "recsys")


def pool(seed: int, minutes: float) -> tuple[World, str]:
    rng = random.Random(f"blind12/pool/{seed}")
    t0 = _t0(seed, "pool") + rng.uniform(0, 600)
    dur = minutes * 60.0
    t_end = t0 + dur
    nodes = [f"b200-{i:02d}" for i in range(1, 9)]
    w = World(rng, B200, nodes, 8, [f"mlx5_{k}" for k in range(8)],
              coolant_c=rng.uniform(22.0, 27.0))

    lnode, lgpu = rng.choice(nodes[:4]), rng.randrange(8)
    lemon = w.label("slow-gpu", "slow_node", "unknown", {"level": "gpu", "node": lnode,
                                                         "gpu": lgpu}, False)
    w.gpu[(lnode, lgpu)].power_scale = rng.uniform(0.78, 0.86)
    w.gpu[(lnode, lgpu)].label_ids = (lemon,)
    slow = SlowGpu(lnode, lgpu, rng.uniform(1.22, 1.38), lemon)

    dnode, dgpu = rng.choice([n for n in nodes if n != lnode]), rng.randrange(8)
    d_ts = t0 + dur * rng.uniform(0.3, 0.5)
    dbe = w.label("dbe", "hardware", "gpu_memory", {"level": "gpu", "node": dnode, "gpu": dgpu},
                  True)
    for name, x in (("dbe_volatile", 1), ("retired_pages_dbe", 1), ("row_remap_pending", True),
                    ("recovery_action", "gpu_reset")):
        w.change(dnode, dgpu, d_ts, name, x, dbe)
    kill = Kill(dnode, dgpu, d_ts, 48, dbe)

    hnode = rng.choice([n for n in nodes if n not in (lnode, dnode)])
    h_from = t0 + dur * rng.uniform(0.5, 0.65)
    h_to = min(t_end - 30.0, h_from + 60.0 * rng.uniform(4.0, 6.0))
    hog_lab = w.label("cpu-hog", "slow_node", "unknown", {"level": "node", "node": hnode}, False)
    hog = NodeHog(hnode, h_from, h_to, seed, hog_lab)

    snode = rng.choice([n for n in nodes if n not in (lnode, dnode, hnode)])
    w.skew_s[snode] = rng.choice((-1.0, 1.0)) * rng.uniform(1.5, 3.2)
    w.effect("clock-skew", {"level": "node", "node": snode}, t0, t_end,
             f"chrony not yet converged: every ts {w.skew_s[snode]:+.2f} s (DESIGN allows 5 s)")
    bug_after = t0 + dur * rng.uniform(0.15, 0.3)       # a tenant's kernel bug: XID 13
    bug_done, bug = False, None
    free = {(n, g): t0 for n in nodes for g in range(8)}
    t, k = t0, 0
    queue: list[int] = []
    while t < t_end - 60.0:
        while len(queue) < 4:
            queue.append(rng.choices((1, 2, 4, 8), (0.35, 0.3, 0.2, 0.15))[0])
        for i, size in enumerate(queue):
            place = _place(free, nodes, size, t)
            if place is None:
                continue
            queue.pop(i)
            k += 1
            name = f"{rng.choice(('ft', 'sweep', 'pt', 'eval'))}-{seed}{k:03d}"
            multi = size == 8
            ranks = ([Rank(j, n, g, j % 4, j // 4) for j, (n, g) in enumerate(place)] if multi
                     else [Rank(j, n, g, 0, j) for j, (n, g) in enumerate(place)])
            c = rng.uniform(250, 900)
            job = Job(name, rng.choice(TENANTS), ranks, compute_ms=c,
                      comm_ms=(c * rng.uniform(0.08, 0.2) if size > 1 else 1.0),
                      other_ms=rng.uniform(15, 40), cold=True, fp16=rng.random() < 0.5,
                      overflow_per_step=1 / 120, rank_fields=multi,
                      hooks=[slow, hog, kill])
            if not bug_done and t >= bug_after:
                bug_done = True
                bn, bg = place[0]
                bug = Kill(bn, bg, t + rng.uniform(60.0, 120.0), 13, None)
                job.hooks.append(bug)
            stop = min(t_end, t + rng.uniform(100.0, 320.0))
            end = run(w, job, t, stop, rng)
            if bug is not None and bug.fired:
                w.effect("xid13-app-bug", {"level": "gpu", "node": bug.node, "gpu": bug.gpu,
                                           "job": name}, bug.ts, bug.ts + 1.0,
                         "a tenant's kernel faults (XID 13, the application's): job dies")
            elif bug is not None:
                bug_done = False                         # the job ended first: try the next
            bug = None
            for ng in place:
                free[ng] = end + rng.uniform(3.0, 15.0)
            break
        t += 1.0
    if not kill.fired:                                   # the DBE hit an idle GPU
        w.xid(dnode, dgpu, d_ts, 48, dbe)
    w.collectors(t0, t_end, thermal_s=15.0, ecc_s=30.0, nic_s=15.0, gbps_busy=40.0,
                 integer_temps=False)
    topo = "\n".join(["SwitchName=leaf-p1 Nodes=b200-[01-04]",
                      "SwitchName=leaf-p2 Nodes=b200-[05-08]",
                      "SwitchName=spine-p Switches=leaf-p[1-2]", ""])
    return w, topo


def _place(free: dict, nodes: list[str], size: int, t: float):
    """First fit: 1-4 GPUs on one node, 8 as 4 + 4 on two nodes (TP4 x DP2)."""
    per = 4 if size == 8 else size
    chosen = []
    for n in nodes:
        idle = [(n, g) for g in range(8) if free[(n, g)] <= t]
        if len(idle) >= per:
            chosen.append(idle[:per])
            if sum(map(len, chosen)) == size:
                return [x for grp in chosen for x in grp]
    return None


STORIES = {"nvl72": nvl72, "pool": pool}
