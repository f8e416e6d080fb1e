"""Adversarial review (room harden, round 8): what the training-side reporter puts on the wire.

The reporter (``faultline_reporter``) runs inside training code, which hands it
whatever it has: a NaN loss (what silent data corruption looks like), a
checksum longer than the contract's names, a timer that went negative.  Its
messages go through the service's real first stage here
(:meth:`SourcePartition.process`), with a producer stand-in that keeps what it
is given (the Kafka path has its own end-to-end test).
"""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from detector.events import STEP
from detector.findings import Finding
from detector.pipeline.source import DeadLetter, Emit, SourcePartition
from faultline_reporter import Placement, StepReporter

T0 = 1767225600.0


class _Recorder:
    def __init__(self) -> None:
        self.values: list[bytes] = []

    def produce(self, topic: str, value: bytes, key: bytes) -> None:
        self.values.append(value)

    def poll(self, timeout: float) -> int:
        return 0


def _job(steps: int, ranks: int, bad: dict[str, Any], bad_rank: int, bad_step: int
         ) -> list[bytes]:
    """Messages of ``ranks`` reporters (pure data parallelism) over ``steps`` steps; at
    ``bad_step`` rank ``bad_rank`` sets the ``bad`` fields on its step."""
    clock = {"t": T0}
    rec = _Recorder()
    reps = [StepReporter("job-1", producer=rec, clock=lambda: clock["t"],
                         placement=Placement(r, r % 8, f"node-{r // 8:03d}"))
            for r in range(ranks)]
    for n in range(steps):
        for r, rep in enumerate(reps):
            clock["t"] = T0 + n + 0.001 * r
            with rep.step(n) as s:
                s.compute_ms, s.comm_ms = 700.0, 250.0
                s.loss, s.grad_norm, s.param_checksum = 2.0, 1.0, f"ck{n}"
                if r == bad_rank and n == bad_step:
                    for k, v in bad.items():
                        setattr(s, k, v)
    return rec.values


def _through_stage_one(values: list[bytes]) -> tuple[list[dict[str, Any]], list[DeadLetter]]:
    part = SourcePartition(STEP, 0, 1, wall_clock=lambda: T0 + 100.0)
    emits: list[Emit] = []
    dead: list[DeadLetter] = []
    part.process([(i, b"job-1", v, None) for i, v in enumerate(values)], T0, emits, dead)
    part.run_on(float("inf"), found := [])  # the end of the input: every step decided
    findings = [orjson.loads(e.value)["finding"] for e in emits
                if orjson.loads(e.value)["type"] == "finding"]
    findings += [Finding.to_dict(f) for f in found]
    return findings, dead


@pytest.mark.parametrize("bad", [{"loss": float("nan")}, {"grad_norm": float("inf")}],
                         ids=["nan_loss", "inf_grad_norm"])
def test_a_non_finite_loss_from_the_reporter_reaches_the_sdc_check(bad: dict[str, Any]
                                                                   ) -> None:
    findings, _ = _through_stage_one(_job(6, 4, bad, bad_rank=2, bad_step=3))
    assert [(f["signal"], f["scope"]) for f in findings if f["signal"] == "nonfinite"] == [
        ("nonfinite", {"level": "gpu", "node": "node-000", "gpu": 2})]


@pytest.mark.parametrize("bad", [{"param_checksum": "f" * 300}, {"compute_ms": -1.0},
                                 {"comm_ms": -0.5}, {"number": -1}],
                         ids=["checksum_300", "compute_neg", "comm_neg", "step_neg"])
def test_every_message_the_reporter_sends_is_one_the_contract_accepts(bad: dict[str, Any]
                                                                      ) -> None:
    _, dead = _through_stage_one(_job(4, 4, bad, bad_rank=1, bad_step=2))
    assert [d.reason for d in dead] == []
