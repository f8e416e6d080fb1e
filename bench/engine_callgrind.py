"""Instructions per event of the engine, counted by callgrind: a yardstick a shared machine
cannot bend (wall time moves +-25 % between runs here, instruction counts +-1 %).

Two runs under ``valgrind --tool=callgrind`` in one tree, PYTHONHASHSEED=0: the engine
over the first ``--prefix`` decoded records of the bundled incident, three passes and one
pass (a fresh Engine each pass); imports, loading and decoding cancel in the difference:

    (instructions of 3 passes - instructions of 1 pass) / (2 x records)

    python bench/engine_callgrind.py [--prefix 20000]     # prints instructions/event

``--warm W``: the steady state instead -- one run, one Engine, records W..prefix counted
alone (collected only inside a ``functools.reduce`` over ``Engine.process``, after the
first W records warmed the engine; creation and warm-up out of the count):

    python bench/engine_callgrind.py --warm 5000          # ~40 s of CPU

``--many``: the same records through ``Engine.process_many`` in chunks of 500 (the
batch path of samples, detector.quiet) instead of ``Engine.process`` one by one.

``--worker``: the service's worker instead of the Engine -- the records as Kafka message bytes,
cut into 8 partitions a topic and handed to a fresh ``PipelineWorker`` a pass as
bench/pipeline_throughput.py does (batches of 40 a partition, a heartbeat every 20 batches, the
findings messages fed back): decode, the partitions' monitors, the findings codec and the
correlator, everything the worker spends an event but Kafka's client (3 passes - 1 pass):

    python bench/engine_callgrind.py --worker             # ~2 minutes of CPU

``--worker --warm W``: the worker's steady state -- one pass over the first W records and one over
the first ``--prefix`` (a fresh worker each), the difference over the records between: the
worker's start-up (units made, warm-ups, first samples) out of the count, which the default
prefix of 20,000 records (~45 s of the incident) is mostly made of:

    python bench/engine_callgrind.py --worker --warm 20000 --prefix 120000

``--nic``: the NIC path alone -- the prefix's NIC samples (decoded, in log order) through a
fresh ``NodeNics`` a node per pass, as ``Monitors.process`` takes them (``quiet``, else
``update``); instructions per NIC sample (3 passes - 1 pass): the share a change of that path
moves, apart from the rest of the worker (round 33's prototype, BENCHMARKS "fast33"):

    python bench/engine_callgrind.py --nic                # ~1 minute of CPU

``--steps``: the step path alone -- the prefix's step messages (decoded, in log order) cut into 8
partitions by job and handed to a fresh ``Monitors`` a partition in batches of 40 (the batch path,
else ``Monitors.process``), their steps' evaluations included; instructions per step message (3
passes - 1 pass): the yardstick of a change to ``JobMonitor._evaluate`` (perf43):

    python bench/engine_callgrind.py --steps --prefix 120000   # ~2 minutes of CPU

``--thermal``: the thermal path alone -- the prefix's thermal samples (decoded, in log order)
cut into 8 partitions by node and handed to a fresh ``Monitors`` a partition in batches of 40 as
the worker does (:func:`detector.quiet.quiet_run`, the record it stops at through
``Monitors.process``); instructions per thermal sample (3 passes - 1 pass): the share a change
of the thermal quiet path (GpuThermal.quiet, NodeTemps.take, the thermal hooks) moves:

    python bench/engine_callgrind.py --thermal            # ~1 minute of CPU

(``--passes N`` is the inner mode the script runs under valgrind.)  Run A/B by running it
in two worktrees; about 2 minutes of CPU each run at the default prefix.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def decoded(prefix: int) -> list:
    """The first ``prefix`` telemetry records of the bundled incident, decoded (those that
    decode)."""
    import orjson

    from bench.engine_throughput import DEFAULT_LOG
    from detector.decoding import decode
    from detector.events import TELEMETRY_TOPICS, InvalidMessage
    from replay.log import open_log

    events = []
    telemetry = set(TELEMETRY_TOPICS)
    seen = 0
    with open_log(DEFAULT_LOG) as f:  # (not the whole log: under valgrind that is minutes)
        for line in f:
            rec = orjson.loads(line)
            if rec["topic"] not in telemetry:
                continue
            seen += 1
            if seen > prefix:
                break
            try:  # noqa: SIM105 - as the other benchmarks
                events.append(decode(rec["topic"], orjson.dumps(rec["value"])))
            except InvalidMessage:
                pass
    return events


def passes(n: int, prefix: int, warm: int = 0, many: bool = False) -> int:
    """The inner run: ``n`` passes of a fresh Engine over the first ``prefix`` records; with
    ``warm``, one Engine fed the first ``warm`` records, then the rest inside a reduce."""
    import functools

    from bench.engine_throughput import DEFAULT_TOPOLOGY
    from detector.engine import Engine
    from detector.topology import Topology

    topo = Topology.load(str(DEFAULT_TOPOLOGY))
    events = decoded(prefix)
    if warm:
        eng = Engine(topology=topo)
        for ev in events[:warm]:
            eng.process(ev)
        if many:
            many_ = eng.process_many
            chunks = [events[k:k + 500] for k in range(warm, len(events), 500)]
            functools.reduce(lambda _, c: many_(c), chunks, None)  # (counted alone)
            return len(events) - warm
        process = eng.process
        functools.reduce(lambda _, ev: process(ev), events[warm:], None)  # (counted alone)
        return len(events) - warm
    for _ in range(n):
        eng = Engine(topology=topo)
        if many:
            for k in range(0, len(events), 500):
                eng.process_many(events[k:k + 500])
        else:
            for ev in events:
                eng.process(ev)
        eng.finish()
    return len(events)


def worker_passes(n: int, prefix: int, collect: bool = False) -> int:
    """The inner run of ``--worker``: ``n`` passes of a fresh PipelineWorker over the first
    ``prefix`` telemetry records (as bench/pipeline_throughput.py feeds it); ``collect``:
    the passes inside a ``functools.reduce`` (``--warm``'s toggle: the log's loading, which
    grows with the prefix, out of the count)."""
    import orjson

    from bench.engine_throughput import DEFAULT_LOG, DEFAULT_TOPOLOGY
    from bench.pipeline_throughput import partitioned, run_pipeline
    from detector.events import TELEMETRY_TOPICS
    from detector.topology import Topology
    from replay.log import open_log

    topo = Topology.load(str(DEFAULT_TOPOLOGY))
    msgs = []
    telemetry = set(TELEMETRY_TOPICS)
    with open_log(DEFAULT_LOG) as f:
        for line in f:
            rec = orjson.loads(line)
            if rec["topic"] in telemetry:
                msgs.append((rec["topic"], orjson.dumps(rec["value"])))
                if len(msgs) == prefix:
                    break
    queues = partitioned(msgs, 8)
    if collect:
        import functools

        functools.reduce(lambda _, __: run_pipeline(queues, topo, 40, 20), range(n), None)
        return len(msgs)
    for _ in range(n):
        run_pipeline(queues, topo, 40, 20)
    return len(msgs)


def nic_passes(n: int, prefix: int) -> int:
    """The inner run of ``--nic``: ``n`` passes of fresh NodeNics (one PortNames of the
    topology shared, as Monitors does) over the NIC samples of the first ``prefix`` records."""
    from bench.engine_throughput import DEFAULT_TOPOLOGY
    from detector.events import NicSample
    from detector.network import NodeNics
    from detector.port_names import PortNames
    from detector.thresholds import Thresholds
    from detector.topology import Topology

    topo = Topology.load(str(DEFAULT_TOPOLOGY))
    cfg = Thresholds()
    samples = [e for e in decoded(prefix) if type(e) is NicSample]
    for _ in range(n):
        names = PortNames(topo)
        nodes: dict[str, NodeNics] = {}
        out: list = []
        for s in samples:
            nics = nodes.get(s.node)
            if nics is None:
                nics = nodes[s.node] = NodeNics(s.node, names)
            if not nics.quiet(s, cfg):
                nics.update(s, cfg, out)
    return len(samples)


def _partition_passes(n: int, prefix: int, kind: str, key: str) -> int:
    """``n`` passes of fresh Monitors, one a partition (the records' ``key`` hashed into 8),
    over the ``kind`` events of the first ``prefix`` records (batches of 40 a partition in turn,
    through the batch path and the record path as the worker takes them)."""
    import zlib

    from bench.engine_throughput import DEFAULT_TOPOLOGY
    from detector import events
    from detector.monitors import Monitors
    from detector.quiet import quiet_run
    from detector.topology import Topology

    cls = getattr(events, kind)
    topo = Topology.load(str(DEFAULT_TOPOLOGY))
    parts: list[list] = [[] for _ in range(8)]
    for e in decoded(prefix):
        if type(e) is cls:
            parts[zlib.crc32(getattr(e, key).encode()) % 8].append(e)
    batches = [p[k:k + 40] for k in range(0, max(map(len, parts)), 40) for p in parts]
    for _ in range(n):
        mons = [Monitors(topology=topo) for _ in parts]
        out: list = []
        for k, evs in enumerate(batches):
            mon = mons[k % len(parts)]
            i = 0
            while i < len(evs):
                i = quiet_run(mon, evs, i)
                if i < len(evs):
                    mon.process(evs[i], out)
                    i += 1
    return sum(map(len, parts))


def thermal_passes(n: int, prefix: int) -> int:
    """The inner run of ``--thermal``: the thermal samples, a partition by node."""
    return _partition_passes(n, prefix, "ThermalSample", "node")


def step_passes(n: int, prefix: int) -> int:
    """The inner run of ``--steps``: the step messages, a partition by job."""
    return _partition_passes(n, prefix, "StepSample", "job")


def count(n: int, prefix: int, out: Path, warm: int = 0, many: bool = False,
          worker: bool = False, nic: bool = False, thermal: bool = False,
          steps: bool = False) -> tuple[int, int]:
    """(instructions, records) of one inner run under callgrind."""
    # (OpenBLAS's idle worker threads spin, and callgrind counts every thread: +-400
    # instructions an event between two runs of one tree, perf37 -- one thread, none spin)
    env = {**os.environ, "PYTHONHASHSEED": "0", "PYTHONPATH": str(ROOT),
           "OPENBLAS_NUM_THREADS": "1"}
    toggle = ["--toggle-collect=functools_reduce"] if warm else []
    run = subprocess.run(
        ["valgrind", "--tool=callgrind", *toggle, f"--callgrind-out-file={out}",
         sys.executable, __file__, "--passes", str(n), "--prefix", str(prefix),
         "--warm", str(warm), *(["--many"] if many else []),
         *(["--worker"] if worker else []), *(["--nic"] if nic else []),
         *(["--thermal"] if thermal else []), *(["--steps"] if steps else [])],
        env=env, capture_output=True, text=True, check=True)
    records = int(run.stdout.split()[-1])
    total = re.search(r"^summary: (\d+)", out.read_text(errors="replace"), re.M)
    assert total is not None, "no summary line in the callgrind output"
    return int(total.group(1)), records


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--prefix", type=int, default=20000, help="records of the incident")
    ap.add_argument("--warm", type=int, default=0, help="steady state: count records "
                    "WARM..prefix alone, after WARM records warmed one engine")
    ap.add_argument("--many", action="store_true", help="Engine.process_many in chunks of "
                    "500 instead of Engine.process a record")
    ap.add_argument("--worker", action="store_true", help="the service's PipelineWorker "
                    "on the records' message bytes (decode, monitors, findings codec, "
                    "correlator) instead of the Engine on decoded records")
    ap.add_argument("--nic", action="store_true", help="the NIC path alone: the prefix's "
                    "NIC samples through NodeNics (quiet, else update)")
    ap.add_argument("--thermal", action="store_true", help="the thermal path alone: the "
                    "prefix's thermal samples through Monitors' batch path (quiet_run)")
    ap.add_argument("--steps", action="store_true", help="the step path alone: the "
                    "prefix's step messages through Monitors (quiet_run, else process), "
                    "their steps' evaluations included")
    ap.add_argument("--passes", type=int, default=None, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.passes is not None:
        print(worker_passes(args.passes, args.prefix, args.warm > 0) if args.worker
              else nic_passes(args.passes, args.prefix) if args.nic
              else thermal_passes(args.passes, args.prefix) if args.thermal
              else step_passes(args.passes, args.prefix) if args.steps
              else passes(args.passes, args.prefix, args.warm, args.many))
        return 0
    if args.nic or args.thermal or args.steps:
        kind = "nic" if args.nic else "thermal" if args.thermal else "steps"
        with tempfile.TemporaryDirectory(prefix="engine-callgrind-") as tmp:
            one, samples = count(1, args.prefix, Path(tmp) / "one.out", **{kind: True})
            three, _ = count(3, args.prefix, Path(tmp) / "three.out", **{kind: True})
        what = "NIC sample" if args.nic else "step message" if args.steps else "thermal sample"
        print(f"{kind}: {(three - one) / (2 * samples):,.0f} instructions/{what} "
              f"({samples:,} of "
              f"{args.prefix:,} records, 1 pass {one:,}, 3 passes {three:,})")
        return 0
    if args.worker and args.warm:
        # The worker's steady state: one pass over the first ``warm`` records and one over the
        # first ``prefix`` (each a fresh worker, counted inside the pass alone: the log's
        # loading grows with the prefix); the difference is what records warm..prefix cost a
        # worker that took the first ``warm`` -- its start-up (units made, warm-ups, first
        # samples) out of the count, as a long feed sees it.
        with tempfile.TemporaryDirectory(prefix="engine-callgrind-") as tmp:
            head, first = count(1, args.warm, Path(tmp) / "head.out", args.warm, worker=True)
            total, records = count(1, args.prefix, Path(tmp) / "total.out", args.warm,
                                   worker=True)
        print(f"worker, steady state: {(total - head) / (records - first):,.0f} "
              f"instructions/event (records {first:,}..{records:,}: 1 pass of {first:,} "
              f"{head:,}, of {records:,} {total:,})")
        return 0
    if args.worker:
        with tempfile.TemporaryDirectory(prefix="engine-callgrind-") as tmp:
            one, records = count(1, args.prefix, Path(tmp) / "one.out", worker=True)
            three, _ = count(3, args.prefix, Path(tmp) / "three.out", worker=True)
        print(f"worker: {(three - one) / (2 * records):,.0f} instructions/event "
              f"({records:,} records, 1 pass {one:,}, 3 passes {three:,})")
        return 0
    if args.warm:
        with tempfile.TemporaryDirectory(prefix="engine-callgrind-") as tmp:
            total, records = count(1, args.prefix, Path(tmp) / "warm.out", args.warm,
                                   args.many)
        print(f"engine, steady state: {total / records:,.0f} instructions/event "
              f"(records {args.warm:,}..{args.prefix:,}: {records:,}, {total:,})")
        return 0
    with tempfile.TemporaryDirectory(prefix="engine-callgrind-") as tmp:
        one, records = count(1, args.prefix, Path(tmp) / "one.out", many=args.many)
        three, _ = count(3, args.prefix, Path(tmp) / "three.out", many=args.many)
    print(f"engine: {(three - one) / (2 * records):,.0f} instructions/event "
          f"({records:,} records, 1 pass {one:,}, 3 passes {three:,})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
