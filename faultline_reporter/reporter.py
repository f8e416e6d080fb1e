"""``StepReporter``: times steps on one rank and produces them to ``telemetry.step``.

The cost on the training thread is a few ``perf_counter`` calls, one small
dict, ``json.dumps`` and librdkafka's enqueue (see BENCHMARKS.md, "reporter
cost per step").  Nothing here waits for the broker: the queue is bounded
(``buffer_messages``), a full queue drops the step and counts it, and a
delivery that fails later is counted too.  No exception leaves a reporter
method except from the constructor's argument checks.
"""

from __future__ import annotations

import json
import math
import os
import time
from collections import deque
from collections.abc import Callable
from typing import Any

from faultline_reporter.ranks import Placement, placement_from_env

TOPIC = "telemetry.step"
_now = time.perf_counter
_INF = float("inf")
# The contract's bounds (DESIGN.md "Bounds"; not imported: the reporter needs only
# confluent-kafka): step numbers below 2^63, names of at most 256 printable characters.
_STEP_LIMIT = 1 << 63
_NAME_CHARS = 256


class _ComputeTimer:
    """Adds the wall time of its ``with`` block to the step's ``compute_ms``."""

    __slots__ = ("_step", "_t0")

    def __init__(self, step: Step) -> None:
        self._step = step
        self._t0 = 0.0

    def __enter__(self) -> _ComputeTimer:
        self._t0 = _now()
        return self

    def __exit__(self, *exc: object) -> None:
        st = self._step
        st.compute_ms = (st.compute_ms or 0.0) + (_now() - self._t0) * 1e3


class _CommTimer(_ComputeTimer):
    """Adds the wall time of its ``with`` block to the step's ``comm_ms``."""

    __slots__ = ()

    def __exit__(self, *exc: object) -> None:
        st = self._step
        st.comm_ms = (st.comm_ms or 0.0) + (_now() - self._t0) * 1e3


class _CudaTimer:
    """Records CUDA events around its block: the GPU's time, not the host's (kernels run
    asynchronously, so a host timer measures their launch).  Read later, without waiting."""

    __slots__ = ("_step", "_comm", "_start")

    def __init__(self, step: Step, comm: bool) -> None:
        self._step = step
        self._comm = comm
        self._start: Any = None

    def __enter__(self) -> _CudaTimer:
        try:
            self._start = self._step._reporter._new_event()
            self._start.record()
        except Exception as exc:  # no CUDA after all: the step goes out without this timing
            self._step._reporter._error(exc)
            self._start = None
        return self

    def __exit__(self, *exc: object) -> None:
        if self._start is None:
            return
        try:
            end = self._step._reporter._new_event()
            end.record()
        except Exception as e:
            self._step._reporter._error(e)
            return
        st = self._step
        if st._events is None:
            st._events = []
        st._events.append((self._comm, self._start, end))


class Step:
    """One step in progress: time ``compute()`` and ``comm()``, set ``loss``, ``grad_norm``,
    ``param_checksum``; or set ``compute_ms``/``comm_ms`` yourself (e.g. from CUDA events)."""

    __slots__ = ("_reporter", "number", "_t0", "compute_ms", "comm_ms", "loss", "grad_norm",
                 "param_checksum", "_events")

    def __init__(self, reporter: StepReporter, number: int) -> None:
        self._reporter = reporter
        self.number = number
        self._t0 = 0.0
        self.compute_ms: float | None = None
        self.comm_ms: float | None = None
        self.loss: float | None = None
        self.grad_norm: float | None = None
        self.param_checksum: str | None = None
        self._events: list[tuple[bool, Any, Any]] | None = None

    def compute(self, cuda: bool = False) -> _ComputeTimer | _CudaTimer:
        """Time a block into ``compute_ms``; ``cuda=True``: with CUDA events on the current
        stream (the step's message then leaves once the GPU has passed the end event)."""
        return _CudaTimer(self, False) if cuda else _ComputeTimer(self)

    def comm(self, cuda: bool = False) -> _CommTimer | _CudaTimer:
        """Time a block into ``comm_ms`` (``cuda=True``: as for :meth:`compute`)."""
        return _CudaTimer(self, True) if cuda else _CommTimer(self)

    def __enter__(self) -> Step:
        self._t0 = _now()
        return self

    def __exit__(self, exc_type: object, exc: object, tb: object) -> None:
        if exc_type is None:  # a step that raised is the training's business, not a sample
            self._reporter._finish(self, (_now() - self._t0) * 1e3)


def _finite(v: Any) -> float | None:
    if v is None:
        return None
    if type(v) is float:  # the common case, without the try
        return v if -_INF < v < _INF else None
    try:
        f = float(v)
    except (TypeError, ValueError):
        return None
    return f if math.isfinite(f) else None


def _number(v: Any) -> float | None:
    """A loss or gradient norm as a float, NaN and infinities included; None if not a number."""
    if v is None or type(v) is float:
        return v
    try:
        return float(v)
    except (TypeError, ValueError):
        return None


def _json(f: float) -> str:
    # NaN and the infinities as Python's json writes them: the contract makes such a step
    # message invalid, and the detector salvages exactly that case into its SDC check (a
    # NaN loss on one replica is what silent data corruption looks like). The step's
    # timing is dead-lettered with it; the NaN is not lost.
    return repr(f) if -_INF < f < _INF else json.dumps(f)


class StepReporter:
    """One rank's reporter.  ``producer`` may be shared by several reporters in one process
    (anything with confluent-kafka's ``produce``/``poll``/``flush``); by default one is made
    from ``bootstrap`` (or ``FAULTLINE_BOOTSTRAP_SERVERS``) with ``kafka_config`` added."""

    def __init__(self, job: str | None = None, *, bootstrap: str | None = None,
                 placement: Placement | None = None, topic: str | None = None,
                 producer: Any = None, kafka_config: dict[str, Any] | None = None,
                 buffer_messages: int = 10_000, clock: Callable[[], float] = time.time,
                 tenant: str | None = None, cluster: str | None = None,
                 event_factory: Callable[[], Any] | None = None,
                 max_deferred_steps: int = 64) -> None:
        env = os.environ
        self.job = job or env.get("FAULTLINE_JOB") or env.get("TORCHELASTIC_RUN_ID") or \
            env.get("SLURM_JOB_ID")
        if not self.job:
            raise ValueError("StepReporter needs a job id (job=..., or FAULTLINE_JOB)")
        self.placement = placement or placement_from_env()
        self.topic = topic or env.get("FAULTLINE_TOPIC_PREFIX", "") + TOPIC
        self._clock = clock
        self.sent = 0
        self.dropped = 0       # full queue, or a delivery that failed
        self.errors = 0        # anything else that went wrong (counted, never raised)
        self.first_error: str | None = None
        p = self.placement
        base: dict[str, Any] = {"job": self.job, "rank": p.rank, "node": p.node, "gpu": p.gpu}
        if p.tp_rank is not None and p.pp_rank is not None and p.dp_rank is not None:
            base.update(tp_rank=p.tp_rank, pp_rank=p.pp_rank, dp_rank=p.dp_rank)
        if tenant:
            base["tenant"] = tenant
        if cluster:
            base["cluster"] = cluster
        # The fixed fields, serialised once: a step adds only numbers to this prefix.
        self._prefix = json.dumps(base, separators=(",", ":"))[:-1].encode() + b',"ts":'
        self._key = self.job.encode()
        self._own_producer = producer is None
        if producer is None:
            from confluent_kafka import Producer

            servers = bootstrap or env.get("FAULTLINE_BOOTSTRAP_SERVERS")
            if not servers:
                raise ValueError("StepReporter needs bootstrap=... or FAULTLINE_BOOTSTRAP_SERVERS")
            producer = Producer({
                "bootstrap.servers": servers, "enable.idempotence": True, "linger.ms": 100,
                "allow.auto.create.topics": False,  # `faultline serve` creates them, planned
                "queue.buffering.max.messages": buffer_messages,
                **(kafka_config or {}), "on_delivery": self._delivered,
                "delivery.report.only.error": True})
        self._producer = producer
        self._event_factory = event_factory
        # Steps timed with CUDA events wait here, in order, until the GPU has run past them.
        self._deferred: deque[tuple[Step, float, float]] = deque()
        self._max_deferred = max_deferred_steps

    def _new_event(self) -> Any:
        if self._event_factory is None:
            import torch

            self._event_factory = lambda: torch.cuda.Event(enable_timing=True)
        return self._event_factory()

    def step(self, number: int) -> Step:
        """A context manager around one training step (``with reporter.step(n) as s:``)."""
        return Step(self, number)

    def _delivered(self, err: Any, msg: Any) -> None:
        if err is not None:
            self.dropped += 1
            if self.first_error is None:
                self.first_error = str(err)

    def _finish(self, s: Step, wall_ms: float) -> None:
        ts = self._clock()
        if s._events is not None or self._deferred:
            if len(self._deferred) >= self._max_deferred:
                self._deferred.popleft()  # the GPU is far behind: the oldest step is lost
                self.dropped += 1
            self._deferred.append((s, ts, wall_ms))
            self._release(wait=False)
            return
        self._format(s, ts, wall_ms)

    def _release(self, wait: bool) -> None:
        """Send the deferred steps whose CUDA events are done, oldest first (all if ``wait``)."""
        while self._deferred:
            s, ts, wall_ms = self._deferred[0]
            try:
                for _, _, end in s._events or ():
                    if wait:
                        end.synchronize()
                    elif not end.query():
                        return
                for comm, start, end in s._events or ():
                    ms = float(start.elapsed_time(end))
                    if comm:
                        s.comm_ms = (s.comm_ms or 0.0) + ms
                    else:
                        s.compute_ms = (s.compute_ms or 0.0) + ms
            except Exception as exc:
                self._error(exc)
            self._deferred.popleft()
            self._format(s, ts, wall_ms)

    def _format(self, s: Step, ts: float, wall_ms: float) -> None:
        try:
            number = s.number
            if type(number) is not int or not 0 <= number < _STEP_LIMIT:
                number = int(number)
                if not 0 <= number < _STEP_LIMIT:  # no field to leave out: not sent
                    raise ValueError(f"step number {number} is outside [0, 2^63): not sent")
            # A float timer >= 0 goes as is (the common case, no call); anything else is
            # converted, or left out and counted.
            compute, comm = s.compute_ms, s.comm_ms
            if type(compute) is not float or not 0.0 <= compute < _INF:
                compute = self._duration("compute_ms", compute)
            if type(comm) is not float or not 0.0 <= comm < _INF:
                comm = self._duration("comm_ms", comm)
            # time in neither (loader, optimizer) is the rest; the contract wants the sum to fit
            step_ms = max(wall_ms, (compute or 0.0) + (comm or 0.0))
            if step_ms == _INF:  # two timers near 1e308: neither is a duration
                self._error(ValueError("compute_ms + comm_ms is infinite: left out"))
                compute = comm = None
                step_ms = wall_ms
            # Formatted by hand: json.dumps of a dict costs several times more, and every
            # value here is an int, a float (repr is valid JSON when finite) or the checksum.
            tail = f'{ts!r},"step":{number},"step_ms":{step_ms!r}'
            if compute is not None:
                tail += f',"compute_ms":{compute!r}'
            if comm is not None:
                tail += f',"comm_ms":{comm!r}'
            loss = _number(s.loss)
            if loss is not None:
                tail += ',"loss":' + _json(loss)
            grad_norm = _number(s.grad_norm)
            if grad_norm is not None:
                if -_INF < grad_norm < 0:  # a norm is >= 0: the contract refuses it
                    self._error(ValueError(f"grad_norm {grad_norm!r} < 0: left out"))
                else:
                    tail += ',"grad_norm":' + _json(grad_norm)
            checksum = s.param_checksum
            if checksum is not None:
                checksum = str(checksum)
                if len(checksum) <= _NAME_CHARS and checksum.isprintable():
                    tail += ',"param_checksum":' + json.dumps(checksum)
                else:  # the contract refuses the whole message for it
                    self._error(ValueError(f"param_checksum of {len(checksum)} characters "
                                           f"(at most {_NAME_CHARS}, printable): left out"))
            self._send(self._prefix + tail.encode() + b"}")
        except Exception as exc:  # never into the training loop
            self._error(exc)

    def _duration(self, name: str, v: Any) -> float | None:
        """A timer in ms for the message: None (left out, counted) unless finite and >= 0."""
        if v is None:
            return None
        ms = _finite(v)
        if ms is None or ms < 0:
            self._error(ValueError(f"{name} {v!r} is not a duration >= 0: left out"))
            return None
        return ms

    def _send(self, value: bytes) -> None:
        try:
            self._producer.produce(self.topic, value, self._key)
            self.sent += 1
        except BufferError:
            self.dropped += 1
        self._producer.poll(0)

    def _error(self, exc: Exception) -> None:
        self.errors += 1
        if self.first_error is None:
            self.first_error = f"{type(exc).__name__}: {exc}"

    def close(self, timeout_s: float = 5.0) -> int:
        """Deliver what is queued, waiting at most ``timeout_s``; returns how many were left.

        Steps still waiting for their CUDA events are completed first (this waits for the GPU).
        """
        self._release(wait=True)
        if not self._own_producer:
            return 0
        try:
            left = int(self._producer.flush(timeout_s))
        except Exception as exc:
            self._error(exc)
            return 0
        self.dropped += left
        return left

    def __enter__(self) -> StepReporter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
