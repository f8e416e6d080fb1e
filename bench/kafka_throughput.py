"""Through Kafka, in one run: raw consumption, no-op Faust, the faultline worker, the engine.

Produces an incident log once into fresh uuid-prefixed telemetry topics
(``--partitions`` per topic) on a broker it starts itself (or
``FAULTLINE_KAFKA_BOOTSTRAP``), then measures one consumer at a time reading
the whole backlog, each in its own process, so the ratios hold on a noisy
machine:

  raw          confluent-kafka + orjson.loads of each value: the physical limit
  faust agent  a Faust agent that does nothing (Faust's default path)
  faust batch  the service's batch delivery into a stage that only counts
  faultline    ``faultline serve``, one worker: decode, Monitors, findings, correlator
  2 workers    two ``faultline serve`` processes in one group
  engine       the in-process engine on the same log (bench/engine_throughput.py)

Events/s is messages / wall time from the first message to the last; CPU is
the consumer process's own (all its threads) over the same span.  Then the
end-to-end latency at ``--rates`` of the worker's measured maximum: a fresh
worker, the log produced paced by event time at that average rate, and for
every alert (and every finding) the time from its input's Kafka timestamp to
its own.

    python bench/kafka_throughput.py [--log LOG] [--topology FILE] [--json OUT]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any, NamedTuple

import orjson

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition  # noqa: E402

from detector.events import STEP, TELEMETRY_TOPICS  # noqa: E402
from detector.thresholds import Thresholds  # noqa: E402
from replay.log import Record, read_records  # noqa: E402

DEFAULT_LOG = ROOT / "replay" / "incidents" / "h100-128-all-faults.jsonl.gz"
DEFAULT_TOPOLOGY = ROOT / "topologies" / "h100-128.topo"
ARRIVED_HEADER = "faultline-arrived"


class Msg(NamedTuple):
    topic: str          # contract name
    key: bytes | None
    value: bytes
    ts: float


def load(path: Path) -> list[Msg]:
    """The log's telemetry, keyed and serialized as ``faultline replay --to-kafka`` does."""
    out = []
    for rec in read_records(path):
        if not isinstance(rec, Record) or rec.topic not in TELEMETRY_TOPICS:
            continue
        v = rec.value
        key = v.get("job" if rec.topic == STEP else "node")
        out.append(Msg(rec.topic, key.encode() if isinstance(key, str) else None,
                       orjson.dumps(v), float(v.get("ts", 0.0))))
    return out


# -- processes ---------------------------------------------------------------------------


def proc_cpu_s(pid: int) -> float:
    """utime + stime of a process, from /proc/<pid>/stat."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def rss_kib(pid: int) -> tuple[int, int]:
    out = {"VmRSS": 0, "VmHWM": 0}
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            key = line.split(":", 1)[0]
            if key in out:
                out[key] = int(line.split()[1])
    return out["VmRSS"], out["VmHWM"]


def loadavg() -> str:
    with open("/proc/loadavg") as f:
        return " ".join(f.read().split()[:3])


class Broker:
    """FAULTLINE_KAFKA_BOOTSTRAP, or a broker of our own (deploy/kafka/broker.py)."""

    def __init__(self, bootstrap: str | None) -> None:
        self.bootstrap = bootstrap or os.environ.get("FAULTLINE_KAFKA_BOOTSTRAP")
        self._broker: Any = None
        self.pid: int | None = None

    def __enter__(self) -> Broker:
        if not self.bootstrap:
            import importlib.util

            spec = importlib.util.spec_from_file_location(
                "faultline_broker", ROOT / "deploy" / "kafka" / "broker.py")
            assert spec is not None and spec.loader is not None
            mod = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(mod)
            self._broker = mod.KafkaBroker()
            self.bootstrap = self._broker.start()
            self.pid = self._broker.pid
        return self

    def __exit__(self, *exc: object) -> None:
        if self._broker is not None:
            self._broker.stop()

    def cpu_s(self) -> float:
        return proc_cpu_s(self.pid) if self.pid else float("nan")


def worker_env(bootstrap: str, prefix: str, run: str, topology: str | None,
               partitions: int) -> dict[str, str]:
    """Settings of one measured deployment: shared telemetry topics, its own internal ones."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("FAULTLINE_") or k == "FAULTLINE_KAFKA_CACHE"}
    env.update({
        "FAULTLINE_BOOTSTRAP_SERVERS": bootstrap, "FAULTLINE_TOPIC_PREFIX": prefix,
        "FAULTLINE_GROUP_ID": f"{prefix}{run}",
        "FAULTLINE_TOPIC_FINDINGS": f"{run}.faultline.findings",
        "FAULTLINE_TOPIC_STATE": f"{run}.faultline.state",
        "FAULTLINE_TOPIC_ISOLATION": f"{run}.alerts.isolation",
        "FAULTLINE_TOPIC_ESCALATION": f"{run}.alerts.escalation",
        "FAULTLINE_TOPIC_DEADLETTER": f"{run}.telemetry.deadletter",
        "FAULTLINE_PARTITIONS_TELEMETRY": str(partitions),
        "FAULTLINE_IDLE_ADVANCE_S": "2", "FAULTLINE_HEARTBEAT_INTERVAL_S": "0.5",
        "FAULTLINE_LOG_LEVEL": "warning", "PYTHONUNBUFFERED": "1"})
    if topology:
        env["FAULTLINE_TOPOLOGY"] = str(topology)
    return env


class Worker:
    """One ``faultline serve`` process, its status file and its CPU."""

    def __init__(self, env: dict[str, str], workdir: Path, extra: list[str] | None = None
                 ) -> None:
        workdir.mkdir(parents=True, exist_ok=True)
        self.workdir = workdir
        self.log = open(workdir / "worker.log", "wb")  # noqa: SIM115 - closed in stop()
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "detector.cli", "serve", "--workdir", str(workdir),
             *(extra or [])], cwd=ROOT, env=env, stdout=self.log, stderr=subprocess.STDOUT)

    def status(self) -> dict[str, Any]:
        try:
            return json.loads((self.workdir / "status.json").read_text())
        except (OSError, ValueError):
            return {}

    def tail(self) -> str:
        lines = (self.workdir / "worker.log").read_text(errors="replace").splitlines()
        return "\n".join(lines[-30:])

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(60)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
        self.log.close()


def wait_for(what: str, cond: Any, timeout_s: float, workers: list[Worker]) -> Any:
    deadline = time.monotonic() + timeout_s
    while True:
        got = cond()
        if got:
            return got
        for w in workers:
            if w.proc.poll() is not None:
                raise RuntimeError(f"worker exited ({w.proc.returncode}) while waiting for "
                                   f"{what}:\n{w.tail()}")
        if time.monotonic() > deadline:
            raise RuntimeError(f"timed out waiting for {what}:\n"
                               + "\n".join(w.tail() for w in workers))
        time.sleep(0.1)


def processed(workers: list[Worker]) -> int:
    """Telemetry messages in the state of the partitions' current owners (offsets + 1)."""
    best: dict[str, int] = {}
    for w in workers:
        for src, st in (w.status().get("sources") or {}).items():
            best[src] = max(best.get(src, -1), st["offset"])
    return sum(o + 1 for o in best.values())


# -- producing ---------------------------------------------------------------------------


def producer(bootstrap: str, linger_ms: float) -> Producer:
    return Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True,
                     "linger.ms": linger_ms, "compression.type": "none",
                     "queue.buffering.max.kbytes": 262144})


def create_topics(bootstrap: str, names: list[str], partitions: int) -> None:
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap})
    for fut in admin.create_topics([NewTopic(n, num_partitions=partitions)
                                    for n in names]).values():
        fut.result(30)


def produce(p: Producer, prefix: str, msgs: list[Msg], speed: float | None = None) -> float:
    """Produce in log order; paced by event time (``speed`` x real time) or at once; seconds."""
    topics = {t: prefix + t for t in TELEMETRY_TOPICS}
    start = time.time()
    if speed is None:
        for i, m in enumerate(msgs):
            while True:
                try:
                    p.produce(topics[m.topic], m.value, m.key)
                    break
                except BufferError:
                    p.poll(0.01)
            if i % 5000 == 0:
                p.poll(0)
    else:
        ts0 = msgs[0].ts
        i, n, high = 0, len(msgs), ts0
        while i < n:
            due = ts0 + (time.time() - start) * speed
            while i < n and max(high, msgs[i].ts) <= due:
                m = msgs[i]
                high = max(high, m.ts)
                p.produce(topics[m.topic], m.value, m.key)
                i += 1
            p.poll(0)
            if i < n:
                wait = (max(high, msgs[i].ts) - ts0) / speed - (time.time() - start)
                if wait > 0:
                    time.sleep(min(wait, 0.05))
    left = p.flush(60)
    if left:
        raise RuntimeError(f"{left} messages not delivered")
    return time.time() - start


def read_topic(bootstrap: str, topic: str) -> list[Any]:
    """Every message of a topic, from the beginning to its current end."""
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": f"reader-{uuid.uuid4().hex}",
                  "enable.auto.commit": False, "enable.partition.eof": True})
    try:
        meta = c.list_topics(topic, timeout=30).topics[topic]
        ends = {}
        for part in meta.partitions:
            low, high = c.get_watermark_offsets(TopicPartition(topic, part), timeout=30)
            if high > low:
                ends[part] = high
        if not ends:
            return []
        c.assign([TopicPartition(topic, part, 0) for part in ends])
        out = []
        deadline = time.monotonic() + 60
        while ends and time.monotonic() < deadline:
            msg = c.poll(0.5)
            if msg is None:
                continue
            if msg.error():
                if msg.error().code() == KafkaError._PARTITION_EOF:
                    ends.pop(msg.partition(), None)
                    continue
                raise RuntimeError(str(msg.error()))
            out.append(msg)
            if msg.offset() + 1 >= ends.get(msg.partition(), 0):
                ends.pop(msg.partition(), None)
        return out
    finally:
        c.close()


# -- the measurements --------------------------------------------------------------------


def reference_consumer(mode: str, bootstrap: str, topics: list[str], n: int) -> dict[str, Any]:
    out = subprocess.run([sys.executable, str(ROOT / "bench" / "kafka_consumers.py"), mode,
                          "--bootstrap", bootstrap, "--topics", ",".join(topics),
                          "--expect", str(n)], cwd=ROOT, capture_output=True, timeout=900)
    # Faust's terminal codes may precede the result on its line.
    lines = [ln[ln.index('{"mode"'):] for ln in out.stdout.decode().splitlines()
             if '{"mode"' in ln]
    if not lines:
        raise RuntimeError(f"{mode}: no result\n{out.stderr.decode()[-3000:]}")
    return json.loads(lines[-1])


def serve_backlog(broker: Broker, prefix: str, n: int, workers: int, topology: str | None,
                  partitions: int, tmp: Path) -> dict[str, Any]:
    """``workers`` faultline workers in one group consume the backlog of ``n`` messages."""
    run = f"w{workers}-{uuid.uuid4().hex[:6]}"
    env = worker_env(broker.bootstrap, prefix, run, topology, partitions)  # type: ignore[arg-type]
    procs = [Worker(env, tmp / f"{run}-{k}") for k in range(workers)]
    broker_cpu0 = broker.cpu_s()
    try:
        wait_for(f"{n:,} messages processed", lambda: processed(procs) >= n, 900, procs)
        # Status files are written each heartbeat: wait for the one after the last input.
        wait_for("the final status", lambda: all(
            (w.status().get("input") or {}).get("last_wall") for w in procs), 30, procs)
        time.sleep(1.0)
        statuses = [w.status() for w in procs]
        inputs = [s["input"] for s in statuses]
        first = min(i["first_wall"] for i in inputs)
        last = max(i["last_wall"] for i in inputs)
        cpu = sum(i["last_cpu_s"] - i["first_cpu_s"] for i in inputs)
        rss = [rss_kib(w.proc.pid) for w in procs]
        return {"mode": f"faultline x{workers}", "messages": n, "wall_s": last - first,
                "cpu_s": cpu, "rss_kib": max(r[0] for r in rss),
                "hwm_kib": max(r[1] for r in rss), "broker_cpu_s": broker.cpu_s() - broker_cpu0,
                "per_worker": [{"events": s["counts"]["events"], "partitions": len(s["sources"]),
                                "wall_s": i["last_wall"] - i["first_wall"],
                                "cpu_s": i["last_cpu_s"] - i["first_cpu_s"]}
                               for s, i in zip(statuses, inputs, strict=True)]}
    finally:
        for w in procs:
            w.stop()


def percentile(xs: list[float], q: float) -> float:
    if not xs:
        return float("nan")
    xs = sorted(xs)
    k = min(len(xs) - 1, max(0, round(q / 100.0 * (len(xs) - 1))))
    return xs[k]


def latency_run(broker: Broker, msgs: list[Msg], rate: float, topology: str | None,
                partitions: int, tmp: Path) -> dict[str, Any]:
    """A fresh worker; the log produced paced to ``rate`` events/s; arrival -> output times."""
    prefix = f"bench-lat-{uuid.uuid4().hex[:8]}."
    run = "lat"
    env = worker_env(broker.bootstrap, prefix, run, topology, partitions)  # type: ignore[arg-type]
    w = Worker(env, tmp / f"lat-{prefix}")
    try:
        wait_for("the worker's assignment", lambda: len(w.status().get("sources") or {})
                 == 4 * partitions and w.status().get("correlators"), 120, [w])
        span = max(m.ts for m in msgs) - msgs[0].ts
        speed = rate * span / len(msgs)
        cpu0 = proc_cpu_s(w.proc.pid)
        secs = produce(producer(broker.bootstrap, 1.0), prefix, msgs, speed)
        cfg = Thresholds()
        settle = max(m.ts for m in msgs) + cfg.lateness_s + max(
            cfg.escalate_after_s, cfg.switch_window_s) + 1.0

        def settled() -> bool:
            cs = (w.status().get("correlators") or {}).values()
            return any((c.get("released") or -1e300) >= settle for c in cs)

        wait_for("the correlator to settle", settled, 120, [w])
        cpu = proc_cpu_s(w.proc.pid) - cpu0
        alerts, findings = [], []
        for name in ("alerts.isolation", "alerts.escalation"):
            for m in read_topic(broker.bootstrap, f"{prefix}{run}.{name}"):
                arrived = dict(m.headers() or []).get(ARRIVED_HEADER)
                if arrived is not None:
                    alerts.append(m.timestamp()[1] / 1000.0 - float(arrived))
        n_alerts = sum(len(read_topic(broker.bootstrap, f"{prefix}{run}.{name}"))
                       for name in ("alerts.isolation", "alerts.escalation"))
        for m in read_topic(broker.bootstrap, f"{prefix}{run}.faultline.findings"):
            v = orjson.loads(m.value())
            if v.get("type") == "finding" and v.get("arrived") is not None:
                findings.append(m.timestamp()[1] / 1000.0 - float(v["arrived"]))
        return {"rate": rate, "achieved_rate": len(msgs) / secs, "speed": speed,
                "worker_cpu_share": cpu / secs,
                "alert_messages": n_alerts, "alerts_timed": len(alerts),
                "alert_p50_ms": 1e3 * percentile(alerts, 50),
                "alert_p99_ms": 1e3 * percentile(alerts, 99),
                "alert_max_ms": 1e3 * max(alerts, default=float("nan")),
                "findings": len(findings), "finding_p50_ms": 1e3 * percentile(findings, 50),
                "finding_p99_ms": 1e3 * percentile(findings, 99),
                "finding_max_ms": 1e3 * max(findings, default=float("nan"))}
    finally:
        w.stop()


def engine_in_process(log: Path, topology: str | None, repeat: int) -> dict[str, Any]:
    sys.path.insert(0, str(ROOT / "bench"))
    import engine_throughput as et

    from detector.topology import Topology

    msgs = et.load(log)
    res = et.measure(msgs, Topology.load(topology) if topology else None, repeat)
    return {"messages": len(msgs), **res}


# -- report ------------------------------------------------------------------------------


def row(name: str, r: dict[str, Any], ref: float) -> str:
    rate = r["messages"] / r["wall_s"]
    cpu_us = 1e6 * r["cpu_s"] / r["messages"] if r.get("cpu_s") is not None else float("nan")
    rss = f"{r['hwm_kib'] / 1024:,.0f}" if r.get("hwm_kib") else "-"
    return (f"| {name} | {rate:,.0f} | {r['wall_s']:.2f} | {cpu_us:.2f} | "
            f"{rate / ref:.3f} | {rss} |")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--log", default=str(DEFAULT_LOG))
    ap.add_argument("--topology", default=str(DEFAULT_TOPOLOGY))
    ap.add_argument("--bootstrap", default=None, help="an existing Kafka (default: "
                    "FAULTLINE_KAFKA_BOOTSTRAP, else start one)")
    ap.add_argument("--partitions", type=int, default=8, help="per telemetry topic")
    ap.add_argument("--rates", default="0.5,0.9", help="latency runs, shares of the max rate")
    ap.add_argument("--skip", default="", help="comma-separated: raw, faust-agent, faust-batch, "
                    "faultline, two-workers, engine, latency")
    ap.add_argument("--repeat", type=int, default=1, help="best of N for the engine")
    ap.add_argument("--json", default=None, help="also write the results here")
    args = ap.parse_args()
    skip = set(filter(None, args.skip.split(",")))
    topology = args.topology or None
    msgs = load(Path(args.log))
    n = len(msgs)
    results: dict[str, Any] = {"log": args.log, "messages": n, "loadavg_start": loadavg()}
    print(f"log {args.log}: {n:,} telemetry messages; load average {loadavg()}", flush=True)
    with Broker(args.bootstrap) as broker, tempfile.TemporaryDirectory(
            prefix="faultline-bench-") as tmp_name:
        tmp = Path(tmp_name)
        prefix = f"bench-{uuid.uuid4().hex[:8]}."
        topics = [prefix + t for t in TELEMETRY_TOPICS]
        create_topics(broker.bootstrap, topics, args.partitions)  # type: ignore[arg-type]
        secs = produce(producer(broker.bootstrap, 20.0), prefix, msgs)  # type: ignore[arg-type]
        print(f"produced the backlog into {args.partitions} partitions x 4 topics "
              f"({prefix}*) in {secs:.1f}s", flush=True)
        for mode in ("raw", "faust-agent", "faust-batch"):
            if mode not in skip:
                cpu0 = broker.cpu_s()
                results[mode] = reference_consumer(mode, broker.bootstrap, topics, n)  # type: ignore[arg-type]
                results[mode]["broker_cpu_s"] = broker.cpu_s() - cpu0
                print(f"  {mode}: {n / results[mode]['wall_s']:,.0f} events/s", flush=True)
        for workers, key in ((1, "faultline"), (2, "two-workers")):
            if key not in skip:
                results[key] = serve_backlog(broker, prefix, n, workers, topology,
                                             args.partitions, tmp)
                print(f"  {key}: {n / results[key]['wall_s']:,.0f} events/s", flush=True)
        if "engine" not in skip:
            results["engine"] = engine_in_process(Path(args.log), topology, args.repeat)
            print(f"  engine: {n / results['engine']['decode+engine']:,.0f} events/s", flush=True)
        if "latency" not in skip and "faultline" in results:
            top = n / results["faultline"]["wall_s"]
            results["latency"] = []
            for share in map(float, args.rates.split(",")):
                lat = latency_run(broker, msgs, share * top, topology, args.partitions, tmp)
                lat["share"] = share
                results["latency"].append(lat)
                print(f"  latency at {share:.0%} ({share * top:,.0f}/s): alerts p50 "
                      f"{lat['alert_p50_ms']:.0f} ms p99 {lat['alert_p99_ms']:.0f} ms "
                      f"(n={lat['alerts_timed']}); findings p50 {lat['finding_p50_ms']:.0f} ms "
                      f"p99 {lat['finding_p99_ms']:.0f} ms (n={lat['findings']})", flush=True)
    results["loadavg_end"] = loadavg()
    report(results)
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1))
    return 0


def report(res: dict[str, Any]) -> None:
    n = res["messages"]
    print(f"\nload average: {res['loadavg_start']} at the start, {res['loadavg_end']} at the end")
    ref = n / res["raw"]["wall_s"] if "raw" in res else float("nan")
    print("| consumer (one process unless said) | events/s | wall s | CPU µs/event "
          "| ratio to raw | peak RSS MiB |")
    print("|---|---|---|---|---|---|")
    names = {"raw": "raw confluent-kafka + orjson.loads (the physical limit)",
             "faust-agent": "Faust, agent that does nothing (default path)",
             "faust-batch": "Faust, the service's batch delivery, no-op stage",
             "faultline": "`faultline serve`, one worker",
             "two-workers": "`faultline serve`, two workers in one group"}
    for key, name in names.items():
        if key in res:
            print(row(name, res[key], ref))
    if "engine" in res:
        e = res["engine"]
        for stage, label in (("parse", "in process: orjson.loads only"),
                             ("decode", "in process: decode (parse + validate)"),
                             ("engine", "in process: engine on decoded records"),
                             ("decode+engine", "in process: decode + engine (faultline replay)")):
            rate = n / e[stage]
            print(f"| {label} | {rate:,.0f} | {e[stage]:.2f} | {1e6 * e[stage] / n:.2f} | "
                  f"{rate / ref:.3f} | - |")
        print(f"\nengine state: {int(e['gpus'])} GPUs, {int(e['state_bytes']):,} bytes pickled "
              f"= {e['state_bytes'] / max(e['gpus'], 1):,.0f} B/GPU")
    if "two-workers" in res:
        for k, w in enumerate(res["two-workers"]["per_worker"]):
            print(f"two workers, #{k}: {w['partitions']} telemetry partitions at the end, "
                  f"{w['events']:,} events, {w['events'] / max(w['wall_s'], 1e-9):,.0f}/s "
                  f"over its own {w['wall_s']:.1f}s, CPU {w['cpu_s']:.1f}s")
    for key in ("raw", "faust-agent", "faust-batch", "faultline", "two-workers"):
        if key in res and res[key].get("broker_cpu_s") is not None:
            print(f"broker CPU during {key}: {res[key]['broker_cpu_s']:.1f}s")
    if res.get("latency"):
        print("\n| load (share of max) | events/s produced | alerts p50 ms | alerts p99 ms | "
              "alerts timed | findings p50 ms | findings p99 ms | findings |")
        print("|---|---|---|---|---|---|---|---|")
        for lat in res["latency"]:
            print(f"| {lat['share']:.0%} | {lat['achieved_rate']:,.0f} | "
                  f"{lat['alert_p50_ms']:.0f} | {lat['alert_p99_ms']:.0f} | "
                  f"{lat['alerts_timed']} of {lat['alert_messages']} | "
                  f"{lat['finding_p50_ms']:.0f} | {lat['finding_p99_ms']:.0f} | "
                  f"{lat['findings']} |")


if __name__ == "__main__":
    sys.exit(main())
