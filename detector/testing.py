"""A test harness for the engine: record builders and a tiny synchronous job, no broker needed.

Tests of a detector read like the incident they describe:

>>> eng = Engine()
>>> alerts = feed(eng, healthy_job(steps=30, slow={3: 1.2}, slow_from=15))
>>> [(a.kind, a.scope.key, a.topic) for a in alerts if a.status == "firing"]
[('slow_node', 'gpu:node-000/3', 'alerts.escalation')]
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator

import numpy as np
import orjson

from detector.alerts import Alert
from detector.engine import Engine
from detector.events import EccSample, Event, NicSample, StepSample, ThermalSample

T0 = 1767225600.0


def step(ts: float, rank: int, step_no: int, *, job: str = "job-1", node: str | None = None,
         gpu: int | None = None, step_ms: float = 1000.0, compute_ms: float | None = 700.0,
         comm_ms: float | None = None, tp: int = 0, pp: int = 0, dp: int | None = None,
         grad_norm: float | None = 1.0, loss: float | None = 2.0,
         checksum: str | None = None) -> StepSample:
    node = node if node is not None else f"node-{rank // 8:03d}"
    gpu = gpu if gpu is not None else rank % 8
    if comm_ms is None and compute_ms is not None:
        comm_ms = max(0.0, step_ms - compute_ms - 20.0)
    return StepSample(ts, job, step_no, rank, node, gpu, step_ms, compute_ms, comm_ms, tp, pp,
                      rank if dp is None else dp, loss, grad_norm, checksum, None, None)


def ecc(ts: float, node: str, gpu: int, *, sbe: int = 0, dbe: int = 0, retired_sbe: int = 0,
        retired_dbe: int = 0, pending: bool = False, failure: bool = False,
        xid: int | None = None, pcie: int = 0, nvlink: tuple[int, int, int] = (0, 0, 0),
        recovery: str = "none") -> EccSample:
    return EccSample(ts, node, gpu, sbe, dbe, retired_sbe, retired_dbe, pending, failure, xid,
                     pcie, *nvlink, recovery, None, None)


def thermal(ts: float, node: str, gpu: int, *, temp_c: float = 65.0, clock_mhz: float = 1980.0,
            throttle: int = 0, power_w: float = 600.0) -> ThermalSample:
    return ThermalSample(ts, node, gpu, temp_c, temp_c + 5.0, power_w, clock_mhz, throttle,
                         None, None)


def nic(ts: float, node: str, nic_name: str, *, tx: int = 0, rx: int = 0, errors: int = 0,
        link_downed: int = 0, up: bool = True, port: int = 1) -> NicSample:
    return NicSample(ts, node, nic_name, port, "up" if up else "down", 400.0, tx, rx, errors,
                     link_downed, errors, 0, 0, 0, 0, 0, 0, None, None)


def healthy_job(*, ranks: int = 16, steps: int = 40, t0: float = T0, step_s: float = 1.0,
                jitter: float = 0.015, slow: dict[int, float] | None = None, slow_from: int = 0,
                slow_to: int | None = None, seed: int = 0, job: str = "job-1",
                stage_compute_ms: tuple[float, ...] = (700.0,)) -> Iterator[StepSample]:
    """Steps of a synchronous data-parallel job; ``slow`` maps rank -> compute factor.

    With several ``stage_compute_ms`` the ranks are split into that many pipeline
    stages (pp_rank), each with its own compute time and its own peer group.
    """
    rng = np.random.default_rng(seed)
    stages = len(stage_compute_ms)
    per_stage = ranks // stages
    for s in range(steps):
        noise = rng.lognormal(0.0, jitter, ranks)
        factors = np.ones(ranks)
        if slow and s >= slow_from and (slow_to is None or s < slow_to):
            for r, f in slow.items():
                factors[r] = f
        pp = np.arange(ranks) // per_stage
        compute = np.array(stage_compute_ms)[np.minimum(pp, stages - 1)] * noise * factors
        step_ms = float(compute.max()) + 250.0
        end = t0 + s * step_s
        for r in range(ranks):
            yield step(end + 0.001 * r, r, s, job=job, step_ms=round(step_ms, 2),
                       compute_ms=round(float(compute[r]), 2), tp=0, pp=int(pp[r]),
                       dp=r % per_stage)


def parallel_step(s: int, compute: np.ndarray, *, tp: int, pp: int, step_s: float = 1.0,
                  t0: float = T0) -> list[StepSample]:
    """Step ``s`` of a synchronous TP x PP x DP job from each rank's ``compute`` (ms).

    Rank ``r`` is tp rank ``r % tp``, pp rank ``(r // tp) % pp``, replica ``r // (tp * pp)``,
    on GPU ``r % 8`` of ``node-{r // 8}``; every rank's ``step_ms`` is the slowest compute
    plus 250 ms, its message ``0.001 * r`` s after ``t0 + step_s * s``.
    """
    step_ms = round(float(compute.max()) + 250.0, 2)
    return [step(t0 + step_s * s + 0.001 * r, r, s, step_ms=step_ms,
                 compute_ms=round(float(compute[r]), 2), tp=r % tp, pp=(r // tp) % pp,
                 dp=r // (tp * pp)) for r in range(len(compute))]


def feed(engine: Engine, events: Iterable[Event], *, finish: bool = True) -> list[Alert]:
    """Run events through the engine in the given order; returns every alert message."""
    out: list[Alert] = []
    for ev in events:
        out.extend(engine.process(ev))
    if finish:
        out.extend(engine.finish())
    return out



def power_capped(drop: Callable[[int], float], *, node: str = "node-000", gpu: int = 3,
                 seconds: int = 120) -> list[ThermalSample]:
    """One GPU's samples at 1 Hz, capped by power management (0x4) ``drop(t)`` below its
    clock baseline wherever that is > 0 (70 °C, 700 W), uncapped otherwise (66 °C, 640 W)."""
    out = []
    for t in range(seconds):
        d = drop(t)
        out.append(thermal(T0 + t + 0.5, node, gpu, temp_c=70.0 if d else 66.0,
                           clock_mhz=1980.0 * (1 - d), throttle=0x4 if d else 0,
                           power_w=700.0 if d else 640.0))
    return out


def firing_beside_slow_rank(samples: Iterable[Event], slowdown: float, *, rank: int = 3,
                            slow_from: int = 62, steps: int = 120
                            ) -> list[tuple[str, str, str, str]]:
    """(topic, kind, cause, scope) of every firing alert when ``samples`` are fed in time
    order with a 16-rank job whose ``rank`` runs ``slowdown`` x from step ``slow_from``.

    The engine is not finished: finish() moves the clock past any excuse's end.
    """
    job = healthy_job(steps=steps, slow={rank: slowdown}, slow_from=slow_from)
    alerts = feed(Engine(), sorted([*job, *samples], key=lambda e: e.ts), finish=False)
    return [(a.topic, a.kind, a.cause, a.scope.key) for a in alerts if a.status == "firing"]


YEAR_2100 = 4102444800.0


def poison_messages(ts: float, *, job: str = "job-1", node: str = "node-000",
                    step_no: int = 0, nan_loss: bool = True) -> list[tuple[str, bytes]]:
    """(topic, value bytes) of messages that once stopped a worker or poisoned its state.

    A deeply nested message, ranks of 2^63 and 1,048,575, a year-2100 ``ts``,
    an ANSI-escaped name and a NaN literal: a worker must dead-letter (or, for
    the large but legal rank, absorb) each and raise the same problems as
    without them.  (Not the NaN loss, with ``nan_loss``: it is dead-lettered,
    and reported as possible corruption on that GPU, as it should be.)
    """
    def step_msg(**changes: object) -> bytes:
        base: dict[str, object] = {
            "ts": ts, "job": job, "step": step_no, "rank": 0, "node": node, "gpu": 0,
            "step_ms": 1000.0, "compute_ms": 700.0, "comm_ms": 250.0}
        base.update(changes)
        return orjson.dumps(base)

    nested = b'{"ts": %r, "node": "%s", "gpu": 0, "x": ' % (ts, node.encode())
    nan = [("telemetry.step", step_msg(loss=1.0).replace(b'"loss":1.0', b'"loss":NaN'))]
    return [
        ("telemetry.step", nested + b"[" * 1000 + b"]" * 1000 + b"}"),
        ("telemetry.thermal", nested + b"[" * 5000 + b"]" * 5000 + b"}"),
        ("telemetry.step", step_msg(tp_rank=1 << 63, pp_rank=0, dp_rank=0)),
        ("telemetry.step", step_msg(rank=1_048_575, gpu=7, node="node-ghost")),
        ("telemetry.thermal", orjson.dumps({"ts": YEAR_2100, "node": node, "gpu": 0,
                                            "gpu_temp_c": 60.0})),
        ("telemetry.ecc", orjson.dumps({"ts": YEAR_2100, "node": node, "gpu": 1, "xid": 48,
                                        "dbe_volatile": 1})),
        ("telemetry.nic", orjson.dumps({"ts": ts, "node": "\x1b[31mnode-000\u202e", "nic": "m",
                                        "port": 1})),
    ] + (nan if nan_loss else [])


def link_down_behind_a_rarely_sampled_port(slow_s: float) -> tuple[list[NicSample], float]:
    """(NIC samples in time order, when node-001's link went down): four nodes of two ports
    sampled every second, no topology, and node-slow's port sampled every ``slow_s`` seconds
    going down first; node-001's mlx5_0 goes down 10 s after node-slow's is seen down."""
    t_down = T0 + 3 * slow_s + 15.0
    events = [nic(T0 + k * slow_s, "node-slow", "mlx5_0", up=k < 3, link_downed=int(k >= 3))
              for k in range(5)]
    for i in range(int(T0), int(T0 + 4.5 * slow_s)):
        for n in range(4):
            down = n == 1 and i >= t_down
            events.append(nic(i + 0.01 * n, f"node-{n:03d}", "mlx5_0", up=not down,
                              link_downed=int(down)))
            events.append(nic(i + 0.01 * n, f"node-{n:03d}", "mlx5_1"))
    events.sort(key=lambda e: e.ts)
    return events, t_down
