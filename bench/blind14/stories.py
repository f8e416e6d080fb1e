"""The blind14 story, every choice from the seed: one fleet, two collectors, four jobs.

`fleet` (15 min; 12 HGX H100 `gx-01..12`, `mlx5_0-7` NDR; faultline topology: racks and leaves
`leaf-1..3` of four nodes, `spine-1/2` over them):

- **pt-a** (`research`): TP4 x PP2 x DP4 on gx-01..04 (stage 0 on 01-02, stage 1 on 03-04),
  ~2.1 s steps, loss on stage 1, checksum every 10 steps; **uncoordinated Python GC** (each rank
  on its own, 1 step in ~45, 150-400 ms of compute: routine); one GPU runs 7-10 C hotter than
  its peers all log (a worn thermal interface, no throttle: routine).
- **ft-b** (`product`): TP8 x DP4 on gx-05..08, ~1.5 s steps, a synchronous checkpoint every 40
  steps (8-12 s in neither on every rank), checksum every 20.
- **dp-c** (`research`): pure DP16 on gx-09..10 -- **a replica is one GPU** -- with rank fields,
  ~0.9 s steps, checksum every 25.
- **pt-d** (`product`): TP8 x DP2 on gx-11..12, ~2.4 s steps, checksum every 10.
- gx-09..12 run the site's 30 s pydcgm collector (blank sentinels leak) and follow the second NTP
  source (0.6-1.1 s ahead).
"""

from __future__ import annotations

import random

from bench.blind12.world import Label
from bench.blind14.jobs import Hook, Job, run
from bench.blind14.world import Node, World, collect

TOPOLOGY = """Topology=blind14-fleet Version=1
NodeSet=gx-[01-12] Gpus=8 Nics=mlx5_[0-7]
Rack=rack-[1-3] Nodes=gx-[01-12]
SwitchName=leaf-[1-3] Nodes=gx-[01-12]
SwitchName=spine-[1-2] Switches=leaf-[1-3]
"""


class GcPauses(Hook):
    """Routine: each rank's Python GC fires on its own, 1 step in ~45, 150-400 ms on the main
    thread (kernel launches wait): a different rank each time, never the same one twice in a row."""

    def __init__(self, rng: random.Random):
        self.rng = rng

    def compute(self, job, rank, t, compute_s):
        if self.rng.random() < 1.0 / 45.0:
            return (compute_s + self.rng.uniform(0.15, 0.4)) / compute_s
        return 1.0


class HotReplicaSdc(Hook):
    """A GPU whose SMs go wrong only when hot: from ``onset``, on a step whose start finds it at
    or above its own mean temperature under load + ``above_c``, 1 step in 7 corrupts activations.
    Its TP all-reduce spreads them over its TP group and the stages after: its replica's loss
    x2.5-6 and every rank of the replica's local grad norm x4-15. The all-reduce averages the bad
    gradient into everyone's (clipped) update, so every checksum still agrees and the next
    step's loss is 2-5 % up on every replica alike."""

    def __init__(self, world: World, node: Node, gpu: int, dp: int, onset: float,
                 above_c: float, label: Label, rng: random.Random):
        self.world, self.node, self.gpu, self.dp = world, node, gpu, dp
        self.onset, self.above_c, self.label, self.rng = onset, above_c, label, rng
        self.threshold_c: float | None = None
        self.bad = self.after = False
        self.lf = self.gf = 1.0

    def begin_step(self, job, step, t):
        if self.threshold_c is None:          # the job is placed now: its mean under load
            w = self.world
            ts = [w.t0 + 60.0 + 10.0 * k for k in range(int((w.t1 - w.t0 - 60.0) / 10.0))]
            self.threshold_c = sum(w.temp_c(self.node, self.gpu, x) for x in ts) / len(ts) \
                + self.above_c
        self.after, self.bad = self.bad, False
        if t >= self.onset and self.world.temp_c(self.node, self.gpu, t) >= self.threshold_c:
            self.bad = self.rng.random() < 1.0 / 7.0
        if self.bad:
            self.lf, self.gf = self.rng.uniform(2.5, 6.0), self.rng.uniform(4.0, 15.0)
            self.hit = self.node.name
        elif self.after:
            self.lf, self.gf = self.rng.uniform(1.02, 1.05), 1.0
            self.hit = self.node.name

    def loss(self, job, rank, step):
        if self.bad:
            return self.lf if job.coords(rank)[2] == self.dp else 1.0
        return self.lf if self.after else 1.0

    def grad(self, job, rank, step):
        return self.gf if self.bad and job.coords(rank)[2] == self.dp else 1.0


class SlowCheckpointWriter(Hook):
    """From ``onset`` one node's checkpoint writes take x2.4-3.2 (its storage port came back
    from a transceiver swap at 25 instead of 100 GbE -- a frontend NIC the telemetry does not
    carry): its ranks sit in neither that much longer every checkpoint, everyone else waits."""

    def __init__(self, node: str, onset: float, factor: float, label: Label):
        self.node, self.onset, self.factor, self.label = node, onset, factor, label

    def neither(self, job, rank, step, t, ckpt_s):
        if t >= self.onset and ckpt_s > 0 and job.where(rank)[0] == self.node:
            self.hit = self.node
            return ckpt_s * (self.factor - 1.0)
        return 0.0


class PsuBrake(Hook):
    """A node's failing power supply: the HGX board's power brake (0x80 | 0x8) on all eight GPUs
    in 6-14 s bursts every 36-84 s; a braked stretch of a step computes at 1/0.58 of the time
    (85 % clock-bound)."""

    def __init__(self, world: World, node: str, label: Label):
        self.world, self.node, self.label = world, node, label

    def compute(self, job, rank, t, compute_s):
        if job.where(rank)[0] != self.node:
            return 1.0
        lap = sum(max(0.0, min(b, t + compute_s) - max(a, t))
                  for a, b in self.world.brake.get(self.node, ()))
        if lap <= 0.0:
            return 1.0
        self.hit = self.node
        return 1.0 + (lap / compute_s) * (1.0 / 0.58 - 1.0) * 0.85


class LoaderLeak(Hook):
    """One rank's data-loader workers leak host memory from ``onset``: page-cache pressure, then
    swap; its time in neither grows from 0 to ``peak_s`` at the log's end (x0.6-1.4 a step)."""

    def __init__(self, world: World, rank: int, onset: float, peak_s: float, label: Label,
                 rng: random.Random):
        self.world, self.rank, self.onset, self.peak_s = world, rank, onset, peak_s
        self.label, self.rng = label, rng

    def neither(self, job, rank, step, t, ckpt_s):
        if rank != self.rank or t < self.onset:
            return 0.0
        extra = self.peak_s * (t - self.onset) / (self.world.t1 - self.onset)
        extra *= self.rng.uniform(0.6, 1.4)
        if extra >= 0.001:
            self.hit = job.where(rank)[0]
        return extra


def _hot_gpu(world: World, job: Job, rank: int) -> tuple[Node, int, int, Label]:
    """The GPU of ``rank`` runs 7-10 C hot all log (routine); its replica gets the SDC label."""
    node, gpu = world.nodes[job.where(rank)[0]], job.where(rank)[1]
    node.gpu_offset_c[gpu] += world.rng.uniform(7.0, 10.0)
    world.effect("hot-gpu", world.t0, world.t1, node=node.name, gpu=gpu)
    dp = job.coords(rank)[2]
    return node, gpu, dp, Label("hot-replica-sdc", "sdc", "unknown",
                                {"level": "replica", "job": job.name, "dp_rank": dp}, False)


def _psu_brake(world: World, node: str, first: tuple, last: tuple) -> Label:
    """Brake bursts of 6-14 s every 36-84 s on ``node`` from a share ``first`` of the log to a
    share ``last``; the label the thermal rows and the step records touch."""
    rng, span = world.rng, world.t1 - world.t0
    brake = Label("psu-brake-30s", "slow_node", "power", {"level": "node", "node": node}, True)
    tb, tend = world.t0 + span * rng.uniform(*first), world.t0 + span * rng.uniform(*last)
    windows = []
    while tb < tend:
        dur = rng.uniform(6.0, 14.0)
        windows.append((tb, tb + dur))
        tb += dur + rng.uniform(30.0, 70.0)
    world.brake[node] = windows
    world.brake_label = brake
    return brake


def fleet(seed: int, minutes: float = 15.0) -> tuple[World, str]:
    t0 = 1796342400.0 + 86400.0 * seed + 3600.0 * 14
    world = World(seed, t0, minutes)
    rng, span = world.rng, minutes * 60.0
    ntp_b = rng.uniform(0.6, 1.1)
    for i in range(1, 13):
        site = i >= 9
        world.nodes[f"gx-{i:02d}"] = Node(
            name=f"gx-{i:02d}", leaf=f"leaf-{(i - 1) // 4 + 1}", rack=(i - 1) // 4 + 1,
            collector="site-30s" if site else "dcgm-exporter",
            clock_s=(ntp_b + rng.uniform(-0.02, 0.02)) if site else rng.uniform(-0.03, 0.03),
            phase_s=rng.uniform(0.0, 9.0 if not site else 29.0),
            gpu_offset_c=[rng.uniform(-1.5, 1.5) for _ in range(8)],
            gpu_demand_w=[rng.uniform(640.0, 740.0) for _ in range(8)])
    for i in range(9, 13):
        n = world.nodes[f"gx-{i:02d}"]
        world.effect("ntp-second-source", t0, world.t1, node=n.name)
    nodes = [f"gx-{i:02d}" for i in range(1, 13)]

    # pt-a: the hot GPU and its SDC
    hot_rank = rng.randrange(32)
    a_nodes = nodes[0:4]
    a = Job("pt-a", "research", a_nodes, tp=4, pp=2, dp=4, compute_s=[1.62, 1.71],
            comm_s=0.34, step0=rng.randrange(20000, 60000), checksum_every=10)
    hot_node, hot_gpu, hot_dp, sdc = _hot_gpu(world, a, hot_rank)
    a.hooks = [GcPauses(random.Random(f"{seed}-gc")),
               HotReplicaSdc(world, hot_node, hot_gpu, hot_dp, t0 + span * rng.uniform(0.2, 0.35),
                             0.5, sdc, random.Random(f"{seed}-sdc"))]
    world.effect("gc-pauses", t0, world.t1, job="pt-a")

    # ft-b: a node's slow checkpoint writes
    b = Job("ft-b", "product", nodes[4:8], tp=8, pp=1, dp=4, compute_s=[1.18], comm_s=0.27,
            step0=rng.randrange(1000, 9000) * 40 + rng.randrange(1, 39), checksum_every=20,
            ckpt_every=40)
    slow_writer = nodes[4 + rng.randrange(4)]
    ckpt = Label("slow-ckpt-writer", "slow_node", "unknown",
                 {"level": "node", "node": slow_writer}, False)
    b.hooks = [SlowCheckpointWriter(slow_writer, t0 + span * rng.uniform(0.25, 0.4),
                                    rng.uniform(2.4, 3.2), ckpt)]

    # dp-c: one replica's loader leak
    c = Job("dp-c", "research", nodes[8:10], tp=1, pp=1, dp=16, compute_s=[0.74], comm_s=0.15,
            step0=rng.randrange(100, 5000), checksum_every=25)
    leak_rank = rng.randrange(16)
    ln, lg = c.where(leak_rank)
    leak = Label("loader-leak", "slow_node", "unknown",
                 {"level": "gpu", "node": ln, "gpu": lg}, False)
    c.hooks = [LoaderLeak(world, leak_rank, t0 + span * rng.uniform(0.15, 0.3),
                          rng.uniform(0.45, 0.8), leak, random.Random(f"{seed}-leak"))]

    # pt-d: a PSU brake in bursts, under a 30 s collector
    d = Job("pt-d", "product", nodes[10:12], tp=8, pp=1, dp=2, compute_s=[2.0], comm_s=0.38,
            step0=rng.randrange(5000, 30000), checksum_every=10)
    braked = nodes[10 + rng.randrange(2)]
    brake = _psu_brake(world, braked, (0.2, 0.35), (0.75, 0.9))
    d.hooks = [PsuBrake(world, braked, brake)]

    world.labels = [sdc, ckpt, leak, brake]
    for job in (a, b, c, d):
        run(world, job, t0 + rng.uniform(0.0, 3.0))
    _collect(world, brake)
    return world, TOPOLOGY


def _collect(world: World, brake: Label) -> None:
    """Every node's collector rows; a brake no thermal row sampled is not attributable."""
    for n in world.nodes.values():
        collect(world, n)
    if brake_rows(world, brake.scope["node"]) == 0:
        # the 30 s collector sampled no burst: nothing in telemetry names the cause
        brake.cause, brake.attributable = "unknown", False


def brake_rows(world: World, node: str) -> int:
    """Thermal rows of ``node`` that show the power brake (0x80)."""
    return sum(1 for _, _, topic, v in world.records if topic == "telemetry.thermal"
               and v["node"] == node and v["throttle"] & 0x80)


class CronStraggler(Hook):
    """A node's misplaced cron job (log compression and a metrics dump, every ``period_s``, for
    20-45 s) competes for the host's CPUs: the node's ranks compute x1.06-1.10 (kernel launches
    queue) and their loaders lose 80-200 ms a step (time in neither) while it runs."""

    def __init__(self, node: str, runs: list[tuple[float, float]], label: Label,
                 rng: random.Random):
        self.node, self.runs, self.label, self.rng = node, runs, label, rng
        self.on = False

    def begin_step(self, job, step, t):
        self.on = any(a <= t < b for a, b in self.runs)
        if self.on:
            self.hit = self.node

    def compute(self, job, rank, t, compute_s):
        return self.rng.uniform(1.06, 1.10) if self.on and job.where(rank)[0] == self.node \
            else 1.0

    def neither(self, job, rank, step, t, ckpt_s):
        return self.rng.uniform(0.08, 0.2) if self.on and job.where(rank)[0] == self.node \
            else 0.0


SLURM = """SwitchName=leaf-p1 Nodes=hx[01-04]
SwitchName=leaf-p2 Nodes=hx[05-08]
SwitchName=spine-p Switches=leaf-p[1-2]
"""


def pipe(seed: int, minutes: float = 15.0) -> tuple[World, str]:
    """`pipe` (15 min; 8 HGX H100 `hx01..08`, a Slurm topology.conf): dcgm-exporter at its
    default 30 s everywhere (thermal, ECC, InfiniBand), one NTP source. **pp-e** (`research`):
    TP2 x PP4 x DP8 = all 64 GPUs (stage k on hx(2k+1)-(2k+2)), ~3 s steps (stage 3 with the loss
    head 8 % heavier), checksum every 10 steps, uncoordinated GC. Faults: the hot replica's SDC
    (a replica spans four nodes, its loss only on stage 3), a node's cron straggler, a PSU brake
    in bursts."""
    t0 = 1796342400.0 + 86400.0 * seed + 3600.0 * 2
    world = World(seed + 1000, t0, minutes)
    rng, span = world.rng, minutes * 60.0
    for i in range(1, 9):
        world.nodes[f"hx{i:02d}"] = Node(
            name=f"hx{i:02d}", leaf=f"leaf-p{(i - 1) // 4 + 1}", rack=(i - 1) // 4 + 1,
            collector="exporter-30s",
            clock_s=rng.uniform(-0.03, 0.03), phase_s=rng.uniform(0.0, 29.0),
            gpu_offset_c=[rng.uniform(-1.5, 1.5) for _ in range(8)],
            gpu_demand_w=[rng.uniform(640.0, 740.0) for _ in range(8)])
    nodes = list(world.nodes)
    e = Job("pp-e", "research", nodes, tp=2, pp=4, dp=8, compute_s=[2.35, 2.3, 2.3, 2.48],
            comm_s=0.45, step0=rng.randrange(10000, 90000), checksum_every=10)
    hot_rank = rng.randrange(64)
    hot_node, hot_gpu, hot_dp, sdc = _hot_gpu(world, e, hot_rank)
    others = [n for n in nodes if n != hot_node.name]
    cron_node = others[rng.randrange(len(others))]
    cron = Label("cron-straggler", "slow_node", "unknown",
                 {"level": "node", "node": cron_node}, False)
    period, tc, runs = rng.uniform(240.0, 330.0), t0 + span * rng.uniform(0.1, 0.25), []
    while tc < world.t1:
        runs.append((tc, tc + rng.uniform(20.0, 45.0)))
        tc += period
    braked = [n for n in others if n != cron_node][rng.randrange(len(others) - 1)]
    brake = _psu_brake(world, braked, (0.3, 0.45), (0.8, 0.95))
    e.hooks = [GcPauses(random.Random(f"{seed}-pipe-gc")),
               HotReplicaSdc(world, hot_node, hot_gpu, hot_dp,
                             t0 + span * rng.uniform(0.2, 0.35), 0.5, sdc,
                             random.Random(f"{seed}-pipe-sdc")),
               CronStraggler(cron_node, runs, cron, random.Random(f"{seed}-cron")),
               PsuBrake(world, braked, brake)]
    world.effect("gc-pauses", t0, world.t1, job="pp-e")
    world.labels = [sdc, cron, brake]
    run(world, e, t0 + rng.uniform(0.0, 3.0))
    _collect(world, brake)
    return world, SLURM


STORIES = {"fleet": fleet, "pipe": pipe}
