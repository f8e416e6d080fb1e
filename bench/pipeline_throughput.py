"""The service's worker pipeline in process, no Kafka: what one worker spends around the engine.

Splits an incident log into partitions by key as producers do (``--partitions``
per telemetry topic), then hands a :class:`~detector.pipeline.worker.PipelineWorker`
fetched-size batches (``--batch`` records from each partition in turn) and its
own findings messages back, with a heartbeat every ``--beat`` batches: what
``faultline serve`` does between the Kafka client and the output producer.
Against, in the same process: ``decode`` + ``Engine.process`` over the same
messages (what replay does).  The difference is the pipeline's own cost per
event (findings codec, watermarks, per-record bookkeeping).  Times are process
CPU time, best of ``--repeat``, the two alternating.

    python bench/pipeline_throughput.py [LOG] [--topology FILE] [--repeat N] [--profile]

``--topics step,nic``: only those telemetry topics' messages (``telemetry.`` may be left
out): what a record of a kind costs the worker (perf42: a step message 10.9 CPU µs with its
step's evaluation, a NIC or thermal sample 4.3).  ``--batches 20,40,2000``: the worker
alone at each batch size in turn (best of ``--repeat`` each, a heartbeat every ~800
records a partition): what a hand-over's size costs -- a live feed's hand-overs are small.
"""

from __future__ import annotations

import argparse
import gc
import sys
import time
import zlib
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from detector.decoding import decode  # noqa: E402
from detector.engine import Engine  # noqa: E402
from detector.events import STEP, TELEMETRY_TOPICS, InvalidMessage  # noqa: E402
from detector.pipeline.worker import PipelineWorker  # noqa: E402
from detector.topology import Topology  # noqa: E402

sys.path.insert(0, str(ROOT / "bench"))
from engine_throughput import DEFAULT_LOG, DEFAULT_TOPOLOGY, load  # noqa: E402

FINDINGS = "findings"


def partitioned(msgs: list[tuple[str, bytes]], partitions: int
                ) -> dict[tuple[str, int], list[tuple[int, bytes, bytes, float]]]:
    """Records per (topic, partition), keyed as the contract says (step by job, rest by node)."""
    import orjson

    queues: dict[tuple[str, int], list[tuple[int, bytes, bytes, float]]] = {}
    for topic, raw in msgs:
        v = orjson.loads(raw)
        key = str(v.get("job" if topic == STEP else "node")).encode()
        q = queues.setdefault((topic, zlib.crc32(key) % partitions), [])
        q.append((len(q), key, raw, 1.7e12))
    return queues


def run_pipeline(queues: dict[Any, list[Any]], topo: Topology | None, batch: int,
                 beat: int) -> tuple[int, int]:
    """All records through a fresh worker; returns (alerts, findings messages)."""
    worker = PipelineWorker(telemetry_topics={t: t for t in TELEMETRY_TOPICS},
                            findings_topic=FINDINGS, findings_partitions=1,
                            expected_sources=[f"{t}:{p}" for t, p in queues], topology=topo)
    now = 1000.0
    worker.sources = {tp: worker.new_partition(tp, now) for tp in queues}  # type: ignore[misc]
    worker.correlators = {(FINDINGS, 0): worker.new_partition((FINDINGS, 0), now)}  # type: ignore[misc]
    pos = dict.fromkeys(queues, 0)
    fpos = 0
    alerts = n_findings = 0
    k = 0

    def caught_up(tp: Any, offset: int) -> bool:
        return tp == (FINDINGS, 0) or pos[tp] >= len(queues[tp])

    left = True
    while left:
        left = False
        by_tp = {}
        for tp, q in queues.items():
            p = pos[tp]
            if p < len(q):
                by_tp[tp] = q[p:p + batch]
                pos[tp] = p + batch
                left = True
        out = worker.process(by_tp, now, caught_up, arrivals_per_s=1000.0)
        k += 1
        if k % beat == 0:
            now += 1.0
            beat_out = worker.heartbeat(now, caught_up)
            out.findings.extend(beat_out.findings)
        recs = [(fpos + i, e.key, e.value, 1.7e12) for i, e in enumerate(out.findings)]
        fpos += len(recs)
        n_findings += len(recs)
        alerts += len(out.alerts)
        if recs:
            alerts += len(worker.process({(FINDINGS, 0): recs}, now, caught_up,
                                         arrivals_per_s=1000.0).alerts)
    return alerts, n_findings


def run_engine(msgs: list[tuple[str, bytes]], topo: Topology | None) -> int:
    eng = Engine(topology=topo)
    n = 0
    for topic, raw in msgs:
        try:  # noqa: SIM105 - cheaper than contextlib.suppress in a hot loop
            n += len(eng.process(decode(topic, raw)))
        except InvalidMessage:
            pass
    return n + len(eng.finish())


def sweep(queues: dict[Any, list[Any]], topo: Topology | None, n: int, sizes: list[int],
          repeat: int) -> int:
    """The pipeline worker alone at each batch size, in turns; best CPU µs an event each."""
    best = dict.fromkeys(sizes, float("inf"))
    for _ in range(repeat):
        for b in sizes:
            gc.collect()
            t0 = time.process_time()
            run_pipeline(queues, topo, b, max(1, 800 // b))  # (a beat: ~800 records a partition)
            best[b] = min(best[b], time.process_time() - t0)
    print(f"{n:,} telemetry messages, {len(queues)} partitions; best of {repeat}")
    for b in sizes:
        print(f"  batches of {b:>5} a partition: {best[b] * 1e6 / n:5.2f} CPU us/event")
    return 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("log", nargs="?", default=str(DEFAULT_LOG))
    ap.add_argument("--topology", default=str(DEFAULT_TOPOLOGY))
    ap.add_argument("--partitions", type=int, default=8, help="per telemetry topic")
    ap.add_argument("--batch", type=int, default=40, help="records per partition per batch")
    ap.add_argument("--beat", type=int, default=20, help="batches per heartbeat (1 s)")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--profile", action="store_true", help="cProfile one pipeline run")
    ap.add_argument("--topics", default="", help="comma-separated: only these telemetry "
                    "topics (step, nic, thermal, ecc)")
    ap.add_argument("--batches", default="", help="comma-separated batch sizes: the pipeline "
                    "worker alone at each (--batch and --beat ignored)")
    args = ap.parse_args()
    topo = Topology.load(args.topology) if args.topology else None
    msgs = load(Path(args.log))
    if args.topics:
        keep = {t if t.startswith("telemetry.") else f"telemetry.{t}"
                for t in args.topics.split(",")}
        msgs = [m for m in msgs if m[0] in keep]
    queues = partitioned(msgs, args.partitions)
    n = len(msgs)
    if args.batches:
        return sweep(queues, topo, n, [int(b) for b in args.batches.split(",")], args.repeat)
    if args.profile:
        import cProfile
        import pstats

        prof = cProfile.Profile()
        prof.runcall(run_pipeline, queues, topo, args.batch, args.beat)
        pstats.Stats(prof).sort_stats("tottime").print_stats(30)
        return 0
    best = {"decode + engine": float("inf"), "pipeline worker": float("inf")}
    for _ in range(args.repeat):
        for name, fn in (("decode + engine", lambda: run_engine(msgs, topo)),
                         ("pipeline worker", lambda: run_pipeline(queues, topo, args.batch,
                                                                  args.beat))):
            gc.collect()
            t0 = time.process_time()
            fn()
            best[name] = min(best[name], time.process_time() - t0)
    print(f"log: {args.log} ({n:,} telemetry messages, {len(queues)} partitions, "
          f"batches of {args.batch} a partition)")
    for name, secs in best.items():
        print(f"  {name:<18} {n / secs:>10,.0f} events/s  ({secs * 1e6 / n:5.2f} CPU us/event)")
    extra = best["pipeline worker"] - best["decode + engine"]
    print(f"  the pipeline around decode + engine: {extra * 1e6 / n:.2f} CPU us/event")
    return 0


if __name__ == "__main__":
    sys.exit(main())
