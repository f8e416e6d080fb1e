"""Stage tracing (``trace_stages``): an alert carries when its input went through each stage.

The worker is driven as the Faust adapter drives it: a telemetry batch (with
its partitions' fetch times), its findings handed back as a findings batch
(with their Kafka timestamps), then the correlator's release.
"""

from __future__ import annotations

from detector.events import ECC
from detector.pipeline.worker import PipelineWorker, StageTrace, WorkerOutput
from detector.testing import T0

FINDINGS = "findings"
ECC_TP = (ECC, 0)
FINDINGS_TP = (FINDINGS, 0)


def worker(trace: StageTrace | None) -> PipelineWorker:
    w = PipelineWorker(telemetry_topics={ECC: ECC}, findings_topic=FINDINGS,
                       findings_partitions=1, expected_sources=[f"{ECC}:0"], trace=trace)
    w.sources = {ECC_TP: w.new_partition(ECC_TP, 0.0)}  # type: ignore[misc]
    w.correlators = {FINDINGS_TP: w.new_partition(FINDINGS_TP, 0.0)}  # type: ignore[misc]
    return w


def run(w: PipelineWorker) -> tuple[WorkerOutput, WorkerOutput]:
    """A double-bit ECC error (decided at its own record) through both stages."""
    records = [(i, b"node-007", b'{"ts": %r, "node": "node-007", "gpu": 3, "xid": %d}'
                % (T0 + i, xid), 1_000_000.0 + 1000 * i) for i, xid in enumerate((0, 0, 48))]
    first = w.process({ECC_TP: records}, 1.0, lambda tp, o: True, arrivals_per_s=1000.0,
                      fetched={ECC_TP: 1002.5})
    # The findings come back from the topic, each with its Kafka timestamp (ms).
    back = [(i, e.key, e.value, 1_002_750 + i) for i, e in enumerate(first.findings)]
    second = w.process({FINDINGS_TP: back}, 2.0, lambda tp, o: True,
                       fetched={FINDINGS_TP: 1003.0})
    return first, second


def test_an_alert_carries_the_times_of_its_stages() -> None:
    _, out = run(worker(StageTrace()))
    hardware = [(a, arrived, st) for (a, arrived), st in zip(out.alerts, out.stages, strict=True)
                if a.kind == "hardware"]
    assert len(hardware) == 1
    alert, arrived, st = hardware[0]
    assert arrived == 1002.0  # the third record's (the DBE) Kafka timestamp
    assert st is not None
    assert st["fetched"] == 1002.5 and st["findings_fetched"] == 1003.0
    # Its findings message's Kafka timestamp (after a "seen" message or two).
    assert st["found"] is not None and 1002.75 <= st["found"] < 1002.8
    handed, fhanded, decided = st["handed"], st["findings_handed"], st["decided"]
    assert handed is not None and fhanded is not None and decided is not None
    assert handed <= fhanded <= decided


def test_tracing_changes_no_output() -> None:
    plain_first, plain = run(worker(None))
    traced_first, traced = run(worker(StageTrace()))
    assert plain.stages == [] and len(traced.stages) == len(traced.alerts) > 0
    assert [e.value for e in plain_first.findings] == [e.value for e in traced_first.findings]
    assert [(a.to_dict(), t) for a, t in plain.alerts] == \
        [(a.to_dict(), t) for a, t in traced.alerts]


def test_the_trace_is_bounded() -> None:
    trace = StageTrace()
    for k in range(StageTrace.FINDINGS + 10):
        trace.taken("s:0", (k, 0))
    assert len(trace.findings) == StageTrace.FINDINGS
    for k in range(StageTrace.BATCHES + 10):
        trace.batch("s:0", k, k, None, 0.0)
    assert len(trace.inputs["s:0"]) == StageTrace.BATCHES
    # A finding no longer remembered has only the correlator's stamp.
    assert trace.stamps(("s:0", 0, 0), 5.0)["found"] is None
