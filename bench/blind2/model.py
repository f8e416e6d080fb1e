"""What a blind2 log is made of: jobs (with attempts), faults, healthy events.

A fault is data plus hooks; the emitters call the hooks on every record the
fault could change and note the record's time when it did (`Labels.touch`), so
a label's start_ts/end_ts are the first and last records the fault changed.
What counts as "changed": the unit's own telemetry showing the fault, and the
steps of a job while the fault slows them. Consequences that are not the
fault's symptom -- a job hanging and restarting elsewhere, GPUs idling after
a crash -- are not counted (they are the cluster's reaction, not the fault).
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class Attempt:
    start: float                  # processes up; first step ends after warm-up
    stop: float                   # processes gone
    nodes: list[str]
    first_step: int
    hang_from: float | None = None  # steps stop here; GPUs spin in NCCL until stop


@dataclass
class Job:
    name: str
    tenant: str
    gpus_per_node: int
    tp: int
    pp: int
    fields: bool                  # sends tp/pp/dp ranks
    step_s: float
    compute_frac: float           # of a step, the slowest rank's compute
    data_frac: float
    noise_sd: float               # per-rank compute noise per step (lower with accumulation)
    util: float                   # GPU power demand while training, 0..1
    attempts: list[Attempt]
    checksum_every: int = 1
    checkpoint_every: int = 0
    checkpoint_s: float = 0.0
    eval_every: int = 0
    eval_extra: float = 0.0       # eval step's compute, as a share of a step's compute
    seqlen_sd: float = 0.0        # per-rank per-step compute imbalance (packing)
    loader_stall_p: float = 0.0   # chance a rank waits on its input pipeline in a step
    send_compute: bool = True
    stage_skew: tuple[float, ...] = (1.0,)

    @property
    def ranks(self) -> int:
        return len(self.attempts[0].nodes) * self.gpus_per_node

    @property
    def dp(self) -> int:
        return self.ranks // (self.tp * self.pp)

    def position(self, rank: int) -> tuple[int, int, int]:
        """(tp, pp, dp) in Megatron's tp-dp-pp order: tp fastest, pp slowest."""
        tp = rank % self.tp
        dp = (rank // self.tp) % self.dp
        pp = rank // (self.tp * self.dp)
        return tp, pp, dp


@dataclass
class Label:
    fault_id: str
    kind: str
    cause: str
    scope: dict
    attributable: bool = True
    start_ts: float | None = None
    end_ts: float | None = None

    def touch(self, ts: float) -> None:
        if self.start_ts is None or ts < self.start_ts:
            self.start_ts = ts
        if self.end_ts is None or ts > self.end_ts:
            self.end_ts = ts

    def record(self) -> dict:
        return {"fault_id": self.fault_id, "kind": self.kind, "cause": self.cause,
                "scope": self.scope, "start_ts": self.start_ts,
                "end_ts": self.end_ts, "attributable": self.attributable}


@dataclass
class Fault:
    """One fault: a label and the hooks the emitters call. Every hook is optional."""

    label: Label
    onset: float
    until: float = float("inf")
    nodes: frozenset = frozenset()        # nodes whose telemetry it may change
    jobs: frozenset = frozenset()         # jobs whose steps it may change
    params: dict = field(default_factory=dict)

    # step time: multiplier on one GPU's compute, on a job's pure communication,
    # and seconds every rank of a job stalls in a step ending in (t0, t1]
    def gpu_factor(self, node: str, gpu: int, t: float) -> float:
        return 1.0

    def comm_factor(self, job: str, t: float) -> float:
        return 1.0

    def stall_s(self, job: str, t0: float, t1: float) -> float:
        return 0.0

    def step(self, rec: dict, job: Job, rank: int) -> None:
        pass

    def thermal(self, rec: dict, node: str, gpu: int, t: float) -> None:
        pass

    def ecc(self, rec: dict, node: str, gpu: int, t0: float, t1: float) -> None:
        pass

    def nic(self, rec: dict, node: str, nic: str, t0: float, t1: float) -> None:
        pass

    def xids(self) -> list[tuple[float, str, int, int, dict]]:
        """XID events: (ts, node, gpu, code, fields that change with it)."""
        return []

    def gpu_gone(self, node: str, gpu: int, t: float) -> bool:
        """True when the GPU no longer answers DCGM (fell off the bus)."""
        return False


@dataclass
class Healthy:
    """Operation that must page nobody; windows are [start, end)."""

    power_cap: tuple[float, float, float] | None = None     # start, end, cap_w
    congestion: list[tuple[float, float, str, frozenset, float]] = field(default_factory=list)
    loader_slow: list[tuple[float, float, str, str, float]] = field(default_factory=list)
    telemetry_pause: list[tuple[float, float, str]] = field(default_factory=list)
    counter_clear: float | None = None
    app_xids: list[tuple[float, str, int, int]] = field(default_factory=list)
    global_grad_spike: list[tuple[str, int]] = field(default_factory=list)

    def in_cap(self, t: float) -> float | None:
        if self.power_cap and self.power_cap[0] <= t < self.power_cap[1]:
            return self.power_cap[2]
        return None

    def comm_factor(self, job: str, t: float) -> float:
        f = 1.0
        for start, end, j, _nodes, factor in self.congestion:
            if j == job and start <= t < end:
                f *= factor
        return f

    def congested(self, node: str, t: float) -> float:
        for start, end, _j, nodes, factor in self.congestion:
            if node in nodes and start <= t < end:
                return factor
        return 1.0

    def paused(self, node: str, t: float) -> bool:
        return any(n == node and s <= t < e for s, e, n in self.telemetry_pause)
