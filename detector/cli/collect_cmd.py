"""``faultline collect``: the per-node agent (dcgm-exporter, node_exporter / sysfs, kernel log)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable

from detector.cli.common import EXIT_FORCED, env, env_float


def register(sub: argparse._SubParsersAction) -> dict[str, Callable[[argparse.Namespace], int]]:
    p = sub.add_parser(
        "collect", help="per-node agent: dcgm-exporter, node_exporter/sysfs and kernel-log XIDs "
        "into the telemetry topics or an incident log",
        description="Scrape dcgm-exporter, node_exporter's infiniband collector (or the "
        "InfiniBand sysfs tree) and follow the kernel log for XIDs; produce telemetry.thermal, "
        "telemetry.ecc and telemetry.nic to Kafka (idempotent, keyed by node, bounded buffer) "
        "or write an incident log. A failing source is retried with exponential backoff. "
        "SIGTERM or SIGINT: deliver what is buffered and exit; a second signal exits at once.")
    src = p.add_argument_group("sources")
    src.add_argument("--dcgm", metavar="URL", default=env("FAULTLINE_COLLECT_DCGM"),
                     help="dcgm-exporter's metrics URL, e.g. http://127.0.0.1:9400/metrics "
                     "[env FAULTLINE_COLLECT_DCGM]")
    src.add_argument("--node-exporter", metavar="URL",
                     default=env("FAULTLINE_COLLECT_NODE_EXPORTER"),
                     help="node_exporter's metrics URL (its infiniband collector is asked for "
                     "alone) [env FAULTLINE_COLLECT_NODE_EXPORTER]")
    src.add_argument("--sysfs", metavar="PATH", default=env("FAULTLINE_COLLECT_SYSFS"),
                     help="read <PATH>/class/infiniband directly (RoCE hw_counters included; "
                     "fills what node_exporter lacks) [env FAULTLINE_COLLECT_SYSFS]")
    src.add_argument("--kernel-log", metavar="SRC", default=env("FAULTLINE_COLLECT_KERNEL_LOG"),
                     help="journal, dmesg or a file to follow, for XIDs with their own times; "
                     "when given, it alone reports XIDs [env FAULTLINE_COLLECT_KERNEL_LOG]")
    src.add_argument("--node", default=env("FAULTLINE_COLLECT_NODE"),
                     help="node name in the messages (default: this host's name) "
                     "[env FAULTLINE_COLLECT_NODE]")
    src.add_argument("--interval", type=float,
                     default=env_float("FAULTLINE_COLLECT_INTERVAL_S") or 10.0,
                     help="seconds between scrapes (default 10) [env FAULTLINE_COLLECT_INTERVAL_S]")
    src.add_argument("--timeout", type=float,
                     default=env_float("FAULTLINE_COLLECT_TIMEOUT_S") or 5.0,
                     help="per-scrape timeout, seconds (default 5) "
                     "[env FAULTLINE_COLLECT_TIMEOUT_S]")
    src.add_argument("--max-backoff", type=float,
                     default=env_float("FAULTLINE_COLLECT_MAX_BACKOFF_S") or 300.0,
                     help="longest wait before retrying a failing source, seconds (default "
                     "300) [env FAULTLINE_COLLECT_MAX_BACKOFF_S]")
    out = p.add_argument_group("output (one of)")
    out.add_argument("--bootstrap", metavar="HOST:PORT",
                     default=env("FAULTLINE_COLLECT_BOOTSTRAP"),
                     help="produce to this Kafka [env FAULTLINE_COLLECT_BOOTSTRAP]")
    out.add_argument("--out", metavar="LOG", default=env("FAULTLINE_COLLECT_OUT"),
                     help="write an incident log (.jsonl or .jsonl.gz) [env FAULTLINE_COLLECT_OUT]")
    out.add_argument("--topology", default=env("FAULTLINE_TOPOLOGY"),
                     help="with --out: the topology record at the log's head (default: this "
                     "node's GPUs and NICs as seen) [env FAULTLINE_TOPOLOGY]")
    out.add_argument("--duration", type=float, default=env_float("FAULTLINE_COLLECT_DURATION_S"),
                     help="stop after this many seconds (default: run until signalled) "
                     "[env FAULTLINE_COLLECT_DURATION_S]")
    k = p.add_argument_group("Kafka")
    k.add_argument("--config", default=None, help="settings file (TOML): topic names, Kafka "
                   "security [env FAULTLINE_CONFIG]")
    k.add_argument("--topic-prefix", default=None, help="prepended to the topic names "
                   "[env FAULTLINE_TOPIC_PREFIX]")
    k.add_argument("--buffer", type=int, default=int(env("FAULTLINE_COLLECT_BUFFER") or 100_000),
                   help="most messages held while the broker is away; past it they are "
                   "dropped and counted (default 100,000) [env FAULTLINE_COLLECT_BUFFER]")
    m = p.add_argument_group("own metrics")
    m.add_argument("--metrics-port", type=int,
                   default=int(env("FAULTLINE_COLLECT_METRICS_PORT") or 9467),
                   help="port of the agent's /metrics; -1: none (default 9467) "
                   "[env FAULTLINE_COLLECT_METRICS_PORT]")
    m.add_argument("--metrics-addr", default=env("FAULTLINE_COLLECT_METRICS_ADDR", "127.0.0.1"),
                   help="address of the agent's /metrics (default 127.0.0.1: this host only) "
                   "[env FAULTLINE_COLLECT_METRICS_ADDR]")
    return {"collect": _run_collect}


def _run_collect(args: argparse.Namespace) -> int:
    import logging
    import signal
    import socket
    import threading

    from prometheus_client import CollectorRegistry

    from detector.collect.agent import CollectMetrics, Collector
    from detector.collect.kernel_log import KernelXids
    from detector.collect.sinks import KafkaSink, LogSink
    from detector.events import TELEMETRY_TOPICS
    from detector.metrics import serve_metrics

    if bool(args.bootstrap) == bool(args.out):
        raise ValueError("give exactly one output: --bootstrap HOST:PORT or --out LOG")
    if not args.interval > 0:
        raise ValueError(f"--interval must be > 0, got {args.interval}")
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: "
                        "%(message)s")
    node = args.node or socket.gethostname()
    registry = CollectorRegistry()
    metrics = CollectMetrics(registry)
    sink: KafkaSink | LogSink
    if args.out:
        from detector.topology import Topology
        topo = Topology.load(args.topology) if args.topology else None
        sink = LogSink(args.out, topology=topo, name=f"collect-{node}")
        where = args.out
    else:
        from detector.settings import Settings
        settings = Settings.load(args.config, overrides={
            "bootstrap_servers": args.bootstrap, "topic_prefix": args.topic_prefix})
        sink = KafkaSink(settings.kafka_config(),
                         {t: settings.topic(t) for t in TELEMETRY_TOPICS},
                         buffer_messages=args.buffer, on_drop=metrics.dropped.inc)
        where = f"Kafka at {settings.bootstrap_servers}"
    kernel = KernelXids(args.kernel_log) if args.kernel_log else None
    server = (serve_metrics(registry, args.metrics_port, args.metrics_addr)
              if args.metrics_port >= 0 else None)
    collector = Collector(node, sink, metrics, dcgm_url=args.dcgm,
                          node_exporter_url=args.node_exporter, sysfs=args.sysfs, kernel=kernel,
                          interval_s=args.interval, timeout_s=args.timeout,
                          max_backoff_s=args.max_backoff)
    stop = threading.Event()

    def on_signal(signum: int, _frame: object) -> None:
        if stop.is_set():
            print(f"faultline collect: second signal ({signum}): exiting now", file=sys.stderr)
            sys.exit(EXIT_FORCED)
        stop.set()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    metrics_at = f"; /metrics on {args.metrics_addr}:{server.port}" if server else ""
    print(f"faultline collect: node {node} every {args.interval:g} s into {where}{metrics_at}",
          flush=True)
    try:
        ticks = collector.run(duration_s=args.duration, stop=stop)
    finally:
        sink.close(30.0)
        if kernel is not None:
            kernel.close()
        if server is not None:
            server.close()
    print(f"faultline collect: {ticks} scrapes, {sink.sent} messages, {sink.dropped} "
          f"dropped", flush=True)
    return 0
