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


def dbe_records() -> list[tuple[int, bytes, bytes, float]]:
    return [(i, b"node-007", b'{"ts": %r, "node": "node-007", "gpu": 3, "xid": %d}'
             % (T0 + i, xid), 1_000_000.0 + 1000 * i) for i, xid in enumerate((0, 0, 48))]


def run(w: PipelineWorker) -> tuple[WorkerOutput, WorkerOutput]:
    """A double-bit ECC error (decided at its own record) through both stages."""
    records = dbe_records()
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
    assert st["source"] == f"{ECC}:0" and st["offset"] == 2  # the DBE's partition and offset
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


def test_a_finding_that_waited_names_the_source_that_held_the_clock() -> None:
    trace = StageTrace()
    ecc1 = (ECC, 1)
    w = PipelineWorker(telemetry_topics={ECC: ECC}, findings_topic=FINDINGS,
                       findings_partitions=1, expected_sources=[f"{ECC}:0", f"{ECC}:1"],
                       trace=trace)
    w.sources = {tp: w.new_partition(tp, 0.0) for tp in (ECC_TP, ecc1)}  # type: ignore[misc]
    w.correlators = {FINDINGS_TP: w.new_partition(FINDINGS_TP, 0.0)}  # type: ignore[misc]
    fed = 0

    def through(by_tp: dict[tuple[str, int], list[tuple[int, bytes, bytes, float]]],
                now: float) -> WorkerOutput:
        nonlocal fed
        first = w.process(by_tp, now, lambda tp, o: False, arrivals_per_s=1000.0)
        back = [(fed + i, e.key, e.value, 1_000_000 + i) for i, e in enumerate(first.findings)]
        fed += len(back)
        return w.process({FINDINGS_TP: back}, now, lambda tp, o: False)

    def msg(node: str, ts: float, xid: int) -> bytes:
        return b'{"ts": %r, "node": "%s", "gpu": 3, "xid": %d}' % (ts, node.encode(), xid)

    # The DBE on partition 0 while partition 1, still being read, is 30 s behind it.
    held = through({ECC_TP: [(i, b"n7", msg("node-007", T0 + i, xid), 1e6)
                             for i, xid in enumerate((0, 0, 48))],
                    ecc1: [(0, b"n9", msg("node-009", T0 - 30, 0), 1e6)]}, 1.0)
    assert not [a for a, _ in held.alerts if a.kind == "hardware"]
    # Partition 1 catches up: the finding is released, and says who it waited for.
    out = through({ecc1: [(1, b"n9", msg("node-009", T0 + 5, 0), 1e6)]}, 2.0)
    stages = [st for (a, _), st in zip(out.alerts, out.stages, strict=True)
              if a.kind == "hardware"]
    assert len(stages) == 1 and stages[0] is not None
    assert stages[0]["held_by"] == [f"{ECC}:1"] and stages[0]["source"] == f"{ECC}:0"


def test_local_findings_decide_the_alert_in_its_inputs_batch_and_pass_over_the_copies() -> None:
    """``local_findings``: the correlator this worker holds takes the batch's findings at
    once, so the DBE's alert leaves with the batch that read it (through the topic it
    waits for the findings to come back); the copies keyed with the correlator's tag,
    read back, are passed over; one keyed for another object is not."""
    plain = worker(StageTrace())
    assert not [a for a, _ in plain.process(
        {ECC_TP: dbe_records()}, 1.0, lambda tp, o: True, arrivals_per_s=1000.0).alerts]
    w = worker(StageTrace())
    w.local_findings = True
    first = w.process({ECC_TP: dbe_records()}, 1.0, lambda tp, o: True, arrivals_per_s=1000.0,
                      fetched={ECC_TP: 1002.5})
    hardware = [(a, st) for (a, _), st in zip(first.alerts, first.stages, strict=True)
                if a.kind == "hardware"]
    assert len(hardware) == 1
    st = hardware[0][1]
    assert st is not None and st["found"] == st["findings_fetched"] == st["findings_handed"]
    corr = w.correlators[FINDINGS_TP]
    tag = first.local[0]
    assert tag == corr.local_tag
    back = [(i, tag + e.key, e.value, 1_002_750 + i) for i, e in enumerate(first.findings)]
    again = w.process({FINDINGS_TP: back}, 2.0, lambda tp, o: True)
    assert again.alerts == [] and corr.duplicates == 0 and corr.offset == len(back) - 1
    # Keyed by another correlator object (before a restart): read, its finding a duplicate.
    other = [(len(back) + i, b"\0other|" + e.key, e.value, 1_002_760 + i)
             for i, e in enumerate(first.findings)]
    w.process({FINDINGS_TP: other}, 3.0, lambda tp, o: True)
    assert corr.duplicates > 0
