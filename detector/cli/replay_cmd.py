"""``faultline replay``: incident logs through the engine in this process, or into Kafka."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from detector.alerts import Alert
from detector.cli.common import EXIT_UNREADABLE, env, env_float, format_alert, load_topology
from detector.cli.progress import progress

if TYPE_CHECKING:
    from detector.topology import Topology


def register(sub: argparse._SubParsersAction) -> dict[str, Callable[[argparse.Namespace], int]]:
    _add_replay(sub)
    return {"replay": _run_replay}


def _add_replay(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "replay", help="run the engine in one process over incident logs",
        description="Replay incident logs (files or folders of .jsonl/.jsonl.gz) through the "
        "engine in this process: print alerts as they fire, write them as records, and print "
        "a scorecard when the logs carry labels.")
    p.add_argument("logs", nargs="+", help="incident log files or folders")
    p.add_argument("--topology", default=env("FAULTLINE_TOPOLOGY"),
                   help="topology file: faultline format or Slurm topology.conf "
                   "[env FAULTLINE_TOPOLOGY]")
    p.add_argument("--home-cluster", default=env("FAULTLINE_HOME_CLUSTER"),
                   help="the `cluster` value of the records the topology describes (records "
                   "without one join it; default: the log's topology record's `cluster`, else "
                   "the first value read, moved to the cluster a faultline topology names "
                   "itself when that one is read) "
                   "[env FAULTLINE_HOME_CLUSTER]")
    p.add_argument("--cluster-topology", action="append", metavar="CLUSTER=FILE", default=[],
                   help="another cluster's topology file (repeatable; --home-cluster named, its "
                   "topology --topology): default, the log's topology records after its "
                   "first, each with its `cluster`")
    p.add_argument("--alerts-out", default=env("FAULTLINE_ALERTS_OUT"),
                   help="write alert records here (.jsonl or .jsonl.gz) [env FAULTLINE_ALERTS_OUT]")
    p.add_argument("--quiet", action="store_true", help="print only the scorecard")
    k = p.add_argument_group(
        "into Kafka", "With --to-kafka the engine does not run here: the logs' telemetry is "
        "produced into the telemetry topics (key: job for steps, node for the rest) for "
        "`faultline serve` to consume; labels and alert records are skipped.")
    k.add_argument("--to-kafka", metavar="BOOTSTRAP", default=env("FAULTLINE_TO_KAFKA"),
                   help="produce into the Kafka at these bootstrap servers [env "
                   "FAULTLINE_TO_KAFKA]")
    k.add_argument("--speed", type=float, default=env_float("FAULTLINE_SPEED"),
                   help="pace by event time, X times real time (default: as fast as possible) "
                   "[env FAULTLINE_SPEED]")
    k.add_argument("--topic-prefix", default=None,
                   help="prepended to the topic names [env FAULTLINE_TOPIC_PREFIX]")
    p.add_argument("--config", default=None, help="settings file (TOML): [thresholds] and "
                   "[recovery] (checkpoint interval, restart time) here; topic names, partitions "
                   "and Kafka security with --to-kafka [env FAULTLINE_CONFIG]")


def _clusters_of(path: Path) -> tuple[str | None, dict[str, Topology]]:
    """The clusters a log's topology records name (its home's, the others' topologies), when
    --topology stands for the first record's text; none when those records do not parse."""
    from detector.topology import TopologyError
    from replay.log import log_head
    try:
        head = log_head(path)
    except TopologyError:
        return None, {}  # (--topology given: the log's own topology is not needed)
    return head.cluster, head.others


def _run_replay(args: argparse.Namespace) -> int:
    if args.to_kafka:
        return _run_replay_to_kafka(args)
    if args.speed is not None:
        raise ValueError("--speed paces production into Kafka: use it with --to-kafka")
    from detector.settings import Settings
    from detector.topology import load_by_cluster
    from replay.log import write_records
    from replay.runner import replay_log

    thresholds = Settings.load(args.config).engine_thresholds()  # [thresholds], [recovery]
    topology = load_topology(args.topology)
    cluster_topologies = load_by_cluster(args.cluster_topology)
    from replay.log import log_files, log_head
    files = log_files(args.logs)
    if not files:
        raise ValueError(f"no incident logs found in {' '.join(args.logs)}")
    all_alerts: list[Alert] = []
    unreadable = 0
    for path in files:
        if topology is None:
            topo, home, others = log_head(path)
            if args.home_cluster in others:  # one of the log's clusters: its topology is home's
                # (review29: exited 2, "its topology is the topology"); the first, its own's
                others = {**others, **({} if home is None or topo is None else {home: topo})}
                topo = others.pop(args.home_cluster)
        else:  # --topology wins over the log's first topology, not over the cluster it names
            topo, home, others = topology, *_clusters_of(path)  # (review29: else first read)
        home = args.home_cluster or home  # --home-cluster wins over the log's own
        others = {**{c: t for c, t in others.items() if c != home}, **cluster_topologies}
        where = "" if topo is None else f"  (topology {topo.name}" + (
            ", from the log)" if topology is None else ")")
        print(f"== {path}{where}", flush=True)

        def on_alert(a: Alert, t0: float) -> None:
            if not args.quiet:
                print(format_alert(a, t0), flush=True)

        with progress(f"replay {path.name}") as on_progress:
            res = replay_log(path, topology=topo, thresholds=thresholds, on_alert=on_alert,
                             on_progress=on_progress, home_cluster=home, topologies=others)
        why = res.unreadable()
        if why:
            print(f"faultline replay: {path}: nothing could be read: {why}", file=sys.stderr)
            unreadable += 1
            continue
        if res.damaged:
            print(f"faultline replay: warning: {path}: {res.damaged}; replayed the "
                  f"{res.events:,} events before it", file=sys.stderr)
        all_alerts.extend(res.alerts)
        rate = res.events / res.seconds if res.seconds else 0.0
        span = (res.last_ts or 0.0) - (res.first_ts or 0.0)
        print(f"-- {res.events:,} events over {span:,.0f} s of event time in {res.seconds:.1f} s "
              f"({rate:,.0f} events/s); {len(res.alerts)} alert messages", flush=True)
        if res.invalid:
            bad = ", ".join(f"{k} x{v}" for k, v in res.invalid.most_common(6))
            print(f"-- invalid input (dead-lettered): {sum(res.invalid.values())}: {bad}")
        if res.labels:
            print(res.scorecard().format(), flush=True)
    if args.alerts_out:
        n = write_records(args.alerts_out, (a.record() for a in all_alerts))
        print(f"wrote {n} alert records to {args.alerts_out}")
    return EXIT_UNREADABLE if unreadable else 0


def _run_replay_to_kafka(args: argparse.Namespace) -> int:
    from detector.settings import Settings
    from replay.log import log_files
    from replay.to_kafka import produce_logs

    settings = Settings.load(args.config, overrides={
        "bootstrap_servers": args.to_kafka, "topic_prefix": args.topic_prefix})
    files = log_files(args.logs)
    if not files:
        raise ValueError(f"no incident logs found in {' '.join(args.logs)}")
    pace = f"at {args.speed:g}x real time" if args.speed else "as fast as possible"
    print(f"producing {len(files)} log(s) into {settings.bootstrap_servers} {pace}", flush=True)
    from detector.service.kafka_io import ServiceKafkaError

    try:
        res = produce_logs(files, settings, speed=args.speed)
    except ServiceKafkaError as exc:
        print(f"faultline replay: {exc}", file=sys.stderr)
        return 1
    topics = ", ".join(f"{settings.topic(t)} {n:,}" for t, n in sorted(res.per_topic.items()))
    print(f"-- {res.sent:,} records in {res.seconds:.1f} s ({res.rate:,.0f} records/s): {topics}")
    skipped = [f"{n} {what}" for n, what in ((res.labels, "labels"), (res.alerts, "alert records"),
                                             (res.invalid, "invalid lines")) if n]
    if skipped:
        print(f"-- not produced: {', '.join(skipped)}")
    if res.unkeyed:
        print(f"-- {res.unkeyed} records had no key field (produced unkeyed; the service will "
              f"dead-letter them)")
    return 0
