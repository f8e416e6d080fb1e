"""A numpy training-loop stand-in with one slow rank -> the step reporter -> Kafka -> serve
-> an escalation naming that rank's GPU.

Sixteen ranks on two nodes run as threads and meet at a barrier (the all-reduce)
inside ``s.comm()``: as in synchronous training, the slow rank's compute is longer
and everyone else waits for it in communication.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path

import numpy as np
import pytest
from confluent_kafka import Producer
from service_harness import Deployment, wait_for

from detector.alerts import ESCALATION, Scope
from faultline_reporter import Placement, StepReporter

pytestmark = pytest.mark.kafka

RANKS, STEPS, SLOW = 16, 60, 11  # rank 11: node-001, GPU 3


def train(rank: int, reporter: StepReporter, barrier: threading.Barrier) -> None:
    rng = np.random.default_rng(rank)
    w = rng.standard_normal(256) / 10
    x = rng.standard_normal(256)
    # The GPU's share of a step, as the host sees it: waiting.  Sleeping stands in for it
    # (sixteen threads doing real numpy work on two shared cores would time each other,
    # not themselves); the slow rank's kernels take 1.6x as long.
    kernel_s = 0.05 * (1.6 if rank == SLOW else 1.0)
    for step in range(STEPS):
        with reporter.step(step) as s:
            with s.compute():
                x = np.tanh(x * w + 0.01)  # the host's own work
                time.sleep(kernel_s)
            with s.comm():
                barrier.wait()  # the all-reduce: everyone waits for the slowest
            s.loss = float(np.abs(x).mean())


def test_a_slow_rank_reported_by_the_training_loop_is_escalated(
        kafka_bootstrap: str, tmp_path: Path) -> None:
    dep = Deployment(kafka_bootstrap, tmp_path)
    worker = dep.start_worker("w0")
    try:
        wait_for("the worker's topics and assignment", worker.status, 90,
                 on_timeout=worker.log_tail)
        producer = Producer({"bootstrap.servers": kafka_bootstrap, "enable.idempotence": True,
                             "linger.ms": 20})
        reporters = [StepReporter("job-1", producer=producer, topic=dep.topic("telemetry.step"),
                                  placement=Placement(r, r % 8, f"node-{r // 8:03d}"))
                     for r in range(RANKS)]
        barrier = threading.Barrier(RANKS)
        threads = [threading.Thread(target=train, args=(r, reporters[r], barrier))
                   for r in range(RANKS)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(120)
        assert producer.flush(30) == 0
        assert sum(r.sent for r in reporters) == RANKS * STEPS
        assert sum(r.dropped + r.errors for r in reporters) == 0

        def escalated() -> set[str]:
            return {Scope.from_dict(v["scope"]).key for topic, v in dep.alerts()
                    if topic == ESCALATION and v["status"] == "firing"
                    and v["kind"] == "slow_node"}

        wait_for("an escalation for the slow rank", lambda: "gpu:node-001/3" in escalated(), 90,
                 interval_s=1.0, on_timeout=lambda: f"{dep.alerts()}\n{worker.log_tail()}")
        firing = {Scope.from_dict(v["scope"]).key for _, v in dep.alerts()
                  if v["status"] == "firing"}
        assert firing == {"gpu:node-001/3"}, firing  # and no healthy rank named
    finally:
        dep.stop_all()
