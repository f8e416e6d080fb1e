"""The training-side step reporter: valid contract messages; never raises into training."""

from __future__ import annotations

import subprocess
import sys

import orjson
import pytest

from detector.events import STEP, InvalidMessage, decode
from faultline_reporter import Placement, StepReporter, placement_from_env


class Recorder:
    """A producer stand-in that keeps what it is given (the Kafka path has its own e2e test)."""

    def __init__(self, fail: type[BaseException] | None = None) -> None:
        self.values: list[bytes] = []
        self.keys: list[bytes] = []
        self.fail = fail

    def produce(self, topic: str, value: bytes, key: bytes) -> None:
        if self.fail is not None:
            raise self.fail("queue full")
        self.values.append(value)
        self.keys.append(key)

    def poll(self, timeout: float) -> int:
        return 0


def reporter(producer: Recorder, placement: Placement | None = None) -> StepReporter:
    return StepReporter("job-7", producer=producer, clock=lambda: 1767225600.5,
                        placement=placement or Placement(9, 1, "node-001", 1, 0, 4))


def test_a_step_becomes_one_valid_message_keyed_by_job():
    rec = Recorder()
    r = reporter(rec)
    with r.step(41) as s:
        with s.compute():
            sum(range(1000))
        with s.comm():
            pass
        s.loss, s.grad_norm, s.param_checksum = 2.5, 0.75, "00ff"
    assert rec.keys == [b"job-7"]
    m = decode(STEP, rec.values[0])  # the service's own decoder accepts it
    assert (m.job, m.step, m.rank, m.node, m.gpu) == ("job-7", 41, 9, "node-001", 1)
    assert (m.tp_rank, m.pp_rank, m.dp_rank) == (1, 0, 4)
    assert m.compute_ms > 0 and m.comm_ms >= 0 and m.step_ms >= m.compute_ms + m.comm_ms
    assert (m.loss, m.grad_norm, m.param_checksum, m.ts) == (2.5, 0.75, "00ff", 1767225600.5)


def test_explicit_timings_non_finite_values_and_pure_data_parallelism():
    rec = Recorder()
    r = reporter(rec, Placement(3, 3, "node-000"))
    for n in (1, 2):
        with r.step(n) as s:
            s.compute_ms, s.comm_ms = 700.0, 250.0  # e.g. from CUDA events
            if n == 2:
                s.loss = float("nan")  # sent as NaN: the detector salvages it (SDC check)
    v = orjson.loads(rec.values[0])
    assert v["step_ms"] == 950.0 and "loss" not in v and "tp_rank" not in v
    decode(STEP, rec.values[0])
    with pytest.raises(InvalidMessage) as exc:
        decode(STEP, rec.values[1])
    assert exc.value.nonfinite is not None and exc.value.nonfinite.field == "loss"
    assert r.errors == 0


def test_a_value_the_contract_refuses_is_left_out_and_counted_not_sent():
    """The one field goes, the step's message stays valid; a step number out of range has
    no field to leave out: that step is not sent.  Each is an error (room fixes, round 8)."""
    rec = Recorder()
    r = reporter(rec)
    bad = [("compute_ms", -1.0), ("comm_ms", float("inf")), ("grad_norm", -0.5),
           ("param_checksum", "f" * 257), ("param_checksum", "ab\x1b[2J"), ("number", -1),
           ("number", 1 << 63)]
    for n, (name, value) in enumerate(bad):
        with r.step(n) as s:
            s.compute_ms, s.comm_ms, s.grad_norm, s.param_checksum = 5.0, 1.0, 0.5, "ok"
            setattr(s, name, value)
    msgs = [decode(STEP, v) for v in rec.values]  # every message sent is valid
    assert [m.step for m in msgs] == [0, 1, 2, 3, 4]
    assert (msgs[0].compute_ms, msgs[1].comm_ms, msgs[2].grad_norm) == (None, None, None)
    assert [m.param_checksum for m in msgs] == ["ok", "ok", "ok", None, None]
    assert r.errors == len(bad) and "compute_ms -1.0" in r.first_error


def test_it_never_raises_into_the_training_loop_and_counts_what_it_lost():
    full = reporter(Recorder(BufferError))
    broken = reporter(Recorder(RuntimeError))
    for r in (full, broken):
        for n in range(3):
            with r.step(n):
                pass
    assert (full.dropped, full.errors) == (3, 0)
    assert (broken.dropped, broken.errors) == (0, 3) and "RuntimeError" in broken.first_error
    rec = Recorder()
    r = reporter(rec)
    with pytest.raises(ZeroDivisionError), r.step(5):
        1 / 0  # noqa: B018 - the training's own error goes through, and is not a sample
    assert rec.values == []


def test_placement_from_torchrun_and_megatron_sizes():
    p = placement_from_env({"RANK": "6", "LOCAL_RANK": "6", "WORLD_SIZE": "16",
                            "FAULTLINE_TP_SIZE": "2", "FAULTLINE_PP_SIZE": "2"}, node="n")
    # Megatron's default order: tensor fastest, then data, pipeline slowest (dp = 16/4 = 4)
    assert (p.tp_rank, p.dp_rank, p.pp_rank) == (0, 3, 0)
    p = placement_from_env({"RANK": "13", "WORLD_SIZE": "16", "TP_SIZE": "2", "PP_SIZE": "2"},
                           node="n")
    assert (p.tp_rank, p.dp_rank, p.pp_rank) == (1, 2, 1)
    with pytest.raises(ValueError, match="job"):
        StepReporter(producer=Recorder(), placement=p)


def test_the_package_imports_on_its_own_without_numpy_or_the_detector():
    code = ("import sys, faultline_reporter as f\n"
            "r = f.StepReporter('j', producer=type('P', (), {'produce': lambda *a: None, "
            "'poll': lambda *a: 0})(), placement=f.Placement(0, 0, 'n'))\n"
            "with r.step(0): pass\n"
            "bad = [m for m in sys.modules if m.split('.')[0] in "
            "('detector', 'replay', 'models', 'numpy', 'orjson', 'torch')]\n"
            "assert not bad, bad\n")
    subprocess.run([sys.executable, "-c", code], check=True)


class GpuClock:
    """Stands in for CUDA events (no GPU here): the GPU's time and how far it has run."""

    def __init__(self) -> None:
        self.now_ms = 0.0
        self.done_ms = 0.0

    def event(self):  # noqa: ANN201 - torch.cuda.Event's interface
        gpu = self

        class Event:
            def record(self) -> None:
                self.t = gpu.now_ms

            def query(self) -> bool:
                return self.t <= gpu.done_ms

            def synchronize(self) -> None:
                gpu.done_ms = max(gpu.done_ms, self.t)

            def elapsed_time(self, end) -> float:  # noqa: ANN001
                return end.t - self.t

        return Event()


def test_cuda_timed_steps_leave_in_order_once_the_gpu_has_run_past_them():
    gpu, rec = GpuClock(), Recorder()
    r = StepReporter("job-7", producer=rec, placement=Placement(0, 0, "n"),
                     event_factory=gpu.event)
    for n in range(2):
        with r.step(n) as s:
            with s.compute(cuda=True):
                gpu.now_ms += 700.0  # kernels queued: the host timer would see ~0
            with s.comm(cuda=True):
                gpu.now_ms += 250.0
    assert rec.values == []  # the GPU has not run them yet: nothing waits on it
    gpu.done_ms = 950.0  # step 0's kernels are done
    with r.step(2):
        pass
    assert [orjson.loads(v)["step"] for v in rec.values] == [0]
    r.close()  # waits for the GPU, once, at the end
    msgs = [orjson.loads(v) for v in rec.values]
    assert [m["step"] for m in msgs] == [0, 1, 2]
    assert (msgs[1]["compute_ms"], msgs[1]["comm_ms"]) == (700.0, 250.0)
    assert msgs[1]["step_ms"] >= 950.0 and r.errors == 0


def test_cuda_timing_without_cuda_reports_the_step_and_counts_the_error():
    def no_cuda():  # noqa: ANN202
        raise RuntimeError("no CUDA GPUs are available")

    rec = Recorder()
    r = StepReporter("job-7", producer=rec, placement=Placement(0, 0, "n"),
                     event_factory=no_cuda)
    with r.step(0) as s, s.compute(cuda=True):
        pass
    assert len(rec.values) == 1 and r.errors == 1 and "no CUDA" in r.first_error
