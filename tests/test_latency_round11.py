"""Round 11 (room latency): a source fetched to its end holds a finding only within the skew.

The correlator's clock is the slowest source's.  A source fed without pause was
never idle, so every finding waited until that source's own records passed the
finding's time -- the partition fetched least recently held the clock (class (c)
of BENCHMARKS.md's latency sections), and a node whose clock lags held every
alert of the cluster for as long as it lags.  Now a source that a fetch sent
``hold_back_s`` after a finding's input reached Kafka found at its end reports
at least the event time this worker's inputs had reached by then
(``PipelineWorker.reported_clock``): what it brings later came to Kafka more
than the producers' skew after the finding's input.  A source with records
fetched and not yet processed is not at its end, and still holds.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path

import orjson
import pytest

from detector.events import ECC, THERMAL
from detector.pipeline.correlator import CorrelatorPartition
from detector.pipeline.worker import PipelineWorker, WorkerOutput
from detector.settings import Settings

HOLD_BACK_S = Settings().hold_back_s
T = 1_767_225_600.0       # event time of the first records
ARRIVED = 1_796_000_000.0  # when they reached Kafka (epoch seconds)
FINDINGS = "findings"


def thermal(ts: float, node: str = "node-b") -> bytes:
    return orjson.dumps({"ts": ts, "node": node, "gpu": 0, "gpu_temp_c": 60.0,
                         "sm_clock_mhz": 1980.0, "power_w": 500.0, "throttle": 0})


def ecc(ts: float, xid: int | None = None, node: str = "node-a") -> bytes:
    return orjson.dumps({"ts": ts, "node": node, "gpu": 2, "xid": xid})


class OneWorker:
    """A PipelineWorker holding ecc:0, thermal:0 and the findings partition, as the service
    drives it: batches with Kafka timestamps (ms), and the fetcher's view of each partition."""

    def __init__(self) -> None:
        self.w = PipelineWorker(telemetry_topics={ECC: ECC, THERMAL: THERMAL},
                                findings_topic=FINDINGS, findings_partitions=1,
                                expected_sources=[f"{ECC}:0", f"{THERMAL}:0"],
                                hold_back_s=HOLD_BACK_S, local_findings=True)
        self.tps = [(ECC, 0), (THERMAL, 0)]
        self.w.sources = {tp: self.w.new_partition(tp, 0.0) for tp in self.tps}  # type: ignore[misc]
        self.w.correlators = {(FINDINGS, 0): self.w.new_partition(  # type: ignore[misc]
            (FINDINGS, 0), 0.0)}
        self.offsets = {tp: 0 for tp in self.tps}
        self.ends: dict[tuple[str, int], float | None] = {tp: None for tp in self.tps}
        self.alerts: list[str] = []
        self.now = 0.0

    @property
    def corr(self) -> CorrelatorPartition:
        return self.w.correlators[(FINDINGS, 0)]  # type: ignore[return-value]

    def at_end(self, tp: tuple[str, int], offset: int) -> float | None:
        return self.ends[tp]

    def feed(self, tp: tuple[str, int], values: list[bytes], arrived: float) -> None:
        recs = []
        for v in values:
            recs.append((self.offsets[tp], b"k", v, int(1000 * arrived)))
            self.offsets[tp] += 1
        self.now += 0.01
        self.take(self.w.process({tp: recs}, self.now, lambda tp, off: True,
                                 arrivals_per_s=1000.0, at_end=self.at_end))

    def beat(self) -> None:
        self.now += 0.01
        self.take(self.w.heartbeat(self.now, lambda tp, off: True, self.at_end))

    def take(self, out: WorkerOutput) -> None:
        self.alerts += [a.scope.key for a, _ in out.alerts if a.status == "firing"]


def started() -> OneWorker:
    """Both sources have data; thermal's is 0-2 s, ecc's XID (a finding) at 10 s."""
    one = OneWorker()
    one.feed((THERMAL, 0), [thermal(T + k) for k in range(3)], ARRIVED)
    one.feed((ECC, 0), [ecc(T + k) for k in range(3)], ARRIVED)
    one.feed((ECC, 0), [ecc(T + 10.0, xid=79)], ARRIVED + 0.05)
    return one


def test_a_source_at_its_end_holds_a_finding_until_a_fetch_sent_after_the_skew() -> None:
    one = started()
    # thermal:0 found at its end by fetches sent before the XID's arrival + hold_back_s:
    # its next records may still be on their way (a producer's linger): it holds.
    for sent in (ARRIVED + 0.1, ARRIVED + 0.05 + HOLD_BACK_S - 0.01):
        one.ends[(THERMAL, 0)] = sent
        one.beat()
        assert one.alerts == []
    assert one.corr.released < T + 10.0
    # A fetch sent hold_back_s after it found thermal:0 at its end: the XID is decided,
    # though thermal:0's own records are still at 2 s.
    one.ends[(THERMAL, 0)] = ARRIVED + 0.05 + HOLD_BACK_S
    one.beat()
    assert one.alerts == ["gpu:node-a/2"]
    assert one.w.sources[(THERMAL, 0)].clock == T + 2.0
    # ... and time does not run past what the inputs that arrived by then had reached.
    assert one.corr.released == T + 10.0


def test_a_source_with_records_not_yet_processed_holds() -> None:
    one = started()
    one.ends[(THERMAL, 0)] = None  # records fetched for it, not yet handed over
    for _ in range(3):
        one.beat()
    assert one.alerts == []
    # Its records come, late in event time: the finding waited for them, none is late.
    one.feed((THERMAL, 0), [thermal(T + 9.0), thermal(T + 11.0)], ARRIVED + 1.0)
    assert one.alerts == ["gpu:node-a/2"]
    assert one.corr.late == 0


def test_an_empty_source_keeps_the_start_up_rules() -> None:
    """A source that never had a record is not let go by its fetches: a topic whose first
    records come later (a reporter started after the collectors) must not be overtaken."""
    one = OneWorker()
    one.feed((ECC, 0), [ecc(T + k) for k in range(3)], ARRIVED)
    one.feed((ECC, 0), [ecc(T + 10.0, xid=79)], ARRIVED + 0.05)
    one.ends[(THERMAL, 0)] = ARRIVED + 5.0
    one.w.sources[(THERMAL, 0)].caught_up = False  # its end not known: it holds
    one.now += 1.0
    one.take(one.w.release_all(one.now))
    one.take(one.w.process({}, one.now, lambda tp, off: tp != (THERMAL, 0),
                           arrivals_per_s=1000.0, at_end=one.at_end))
    assert one.alerts == []


# -- the real broker ---------------------------------------------------------------------

@pytest.mark.kafka
def test_a_node_whose_clock_lags_does_not_hold_another_nodes_alert(
        kafka_bootstrap: str, tmp_path: Path) -> None:
    """A collector whose clock is two minutes behind, producing without pause: its partition
    is never idle, and on main every alert of the cluster waited until its records passed
    the alert's time (here: never).  Now a fetch finding its partition at its end lets the
    XID through while that node's records are still two minutes behind."""
    import sys

    sys.path.insert(0, str(Path(__file__).resolve().parent / "integration"))
    from service_harness import Deployment, wait_for

    dep = Deployment(kafka_bootstrap, tmp_path)
    worker = dep.start_worker("w1")
    stop = threading.Event()
    newest: list[float] = []

    def lagging_collector() -> None:
        p = dep.producer()
        while not stop.is_set():
            ts = time.time() - 120.0
            p.produce(dep.topic(THERMAL), thermal(ts, node="node-lag"), b"node-lag")
            newest.append(ts)
            p.poll(0)
            stop.wait(0.05)
        p.flush(10)

    feeder = threading.Thread(target=lagging_collector, daemon=True)
    try:
        wait_for("the worker's assignment", lambda: len(
            (worker.status() or {}).get("sources") or {}) == 16, 120,
            on_timeout=worker.log_tail)
        feeder.start()
        wait_for("the lagging node's records to be read", lambda: any(
            s.get("clock") for name, s in ((worker.status() or {}).get("sources") or {}).items()
            if name.startswith(THERMAL)), 60, on_timeout=worker.log_tail)
        p = dep.producer()
        now = time.time()
        for k in range(3):  # a partition's first clock counts from its third record
            p.produce(dep.topic(ECC), ecc(now - 0.3 + 0.1 * k, node="node-bad"), b"node-bad")
        xid_ts = now + 0.1
        p.produce(dep.topic(ECC), ecc(xid_ts, xid=79, node="node-bad"), b"node-bad")
        p.flush(10)

        def alerted() -> bool:
            return any(v["status"] == "firing" and v["scope"].get("node") == "node-bad"
                       for _, v in dep.alerts())

        wait_for("the XID's isolation while node-lag's clock is behind it", alerted, 60,
                 interval_s=0.5, on_timeout=worker.log_tail)
        assert newest[-1] < xid_ts - 60.0  # the lagging node never caught up with it
    finally:
        stop.set()
        if feeder.is_alive():
            feeder.join(15)
        dep.stop_all()
