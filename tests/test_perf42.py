"""perf42's yardsticks: the worker's steady state under callgrind (``engine_callgrind.py --worker
--warm``) counts inside its passes alone, and pipeline_throughput's ``--topics`` and
``--batches`` (BENCHMARKS.md "perf42, round 42")."""

from __future__ import annotations

import functools

import pytest


def test_worker_passes_collect_runs_each_pass_inside_reduce(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # --warm's inner run: the passes inside functools.reduce (callgrind's toggle), each one a
    # whole pipeline run over the prefix -- not the log's loading, which grows with it.
    from bench import engine_callgrind, pipeline_throughput

    runs: list[int] = []
    inside: list[bool] = []
    real_reduce = functools.reduce
    depth = [0]

    def reduce(*args: object) -> object:
        depth[0] += 1
        try:
            return real_reduce(*args)  # type: ignore[arg-type]
        finally:
            depth[0] -= 1

    def run(queues: dict, topo: object, batch: int, beat: int) -> tuple[int, int]:
        runs.append(sum(map(len, queues.values())))
        inside.append(depth[0] > 0)
        return 0, 0

    monkeypatch.setattr(functools, "reduce", reduce)
    monkeypatch.setattr(pipeline_throughput, "run_pipeline", run)
    assert engine_callgrind.worker_passes(2, 500, collect=True) == 500
    assert runs == [500, 500] and inside == [True, True]
    runs.clear()
    inside.clear()
    assert engine_callgrind.worker_passes(1, 300) == 300
    assert runs == [300] and inside == [False]


def test_pipeline_sweep_reports_each_batch_size(capsys: pytest.CaptureFixture[str]) -> None:
    import orjson

    from bench.pipeline_throughput import DEFAULT_LOG, DEFAULT_TOPOLOGY, partitioned, sweep
    from detector.topology import Topology
    from replay.log import open_log

    msgs = []
    with open_log(DEFAULT_LOG) as f:
        for line in f:
            rec = orjson.loads(line)
            if rec["topic"] == "telemetry.thermal":
                msgs.append((rec["topic"], orjson.dumps(rec["value"])))
                if len(msgs) == 1500:
                    break
    queues = partitioned(msgs, 2)
    assert sweep(queues, Topology.load(str(DEFAULT_TOPOLOGY)), len(msgs), [10, 400], 1) == 0
    lines = capsys.readouterr().out.splitlines()
    assert any("batches of    10 a partition" in line for line in lines)
    assert any("batches of   400 a partition" in line for line in lines)
