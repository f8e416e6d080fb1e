"""Shared pieces of the Kafka benchmarks: a broker, the log as messages, workers, producing.

Used by bench/kafka_throughput.py; nothing here measures anything.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import subprocess
import sys
import tempfile
import time
import zlib
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any, NamedTuple

import orjson
from confluent_kafka import Producer

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from detector.events import STEP, TELEMETRY_TOPICS  # noqa: E402
from detector.service.kafka_io import read_to_end  # noqa: E402
from replay.log import Record, read_records  # noqa: E402

DEFAULT_LOG = ROOT / "replay" / "incidents" / "h100-128-all-faults.jsonl.gz"
DEFAULT_TOPOLOGY = ROOT / "topologies" / "h100-128.topo"
ARRIVED_HEADER = "faultline-arrived"  # detector.service.app.ARRIVED_HEADER
STAGES_HEADER = "faultline-stages"    # detector.service.app.STAGES_HEADER


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
                       compact(orjson.dumps(v)), float(v.get("ts", 0.0))))
    return out


def compact(b: bytes) -> bytes:
    """A copy of ``b`` in an object of its own size: the bytes orjson.dumps returns keep the
    whole buffer it wrote into, ~4 KB for a telemetry record of ~400 bytes, so the log held
    3.1 GB instead of ~0.3 (and a forked feed process copied every page it touched)."""
    return bytes(memoryview(b))


# -- processes ---------------------------------------------------------------------------


def proc_cpu_s(pid: int) -> float:
    """utime + stime of a process, from /proc/<pid>/stat."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def sched_s(pid: int) -> tuple[float, float]:
    """(seconds on a CPU, seconds runnable but waiting for one) of all of a process's
    threads so far, from /proc/<pid>/task/*/schedstat: the second is what a busy
    machine costs it."""
    run = wait = 0
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            fields = (task / "schedstat").read_text().split()
        except OSError:
            continue  # the thread ended meanwhile
        run += int(fields[0])
        wait += int(fields[1])
    return run / 1e9, wait / 1e9


def rss_kib(pid: int | str = "self") -> tuple[int, int]:
    """(VmRSS, VmHWM) of a process in KiB, from /proc."""
    out = {"VmRSS": 0, "VmHWM": 0}
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            key = line.split(":", 1)[0]
            if key in out:
                out[key] = int(line.split()[1])
    return out["VmRSS"], out["VmHWM"]


class BoxSampler:
    """What the whole machine did, sampled every ``every_s`` in a thread of this process:
    CPU time by kind (/proc/stat: steal is time the hypervisor gave this VM's CPUs to
    someone else), pressure stall totals (/proc/pressure: time some or all runnable tasks
    waited for a CPU or for I/O), the page cache's dirty and writeback bytes
    (/proc/meminfo), and for each of ``pids`` (name -> pid) its threads' seconds on a CPU
    and runnable without one (schedstat).  Tells a slow run's box from its code."""

    def __init__(self, every_s: float = 0.1, pids: dict[str, int] | None = None) -> None:
        import threading

        self.every_s = every_s
        self.pids = {k: v for k, v in (pids or {}).items() if v}
        self.samples: list[tuple[float, list[int], dict[str, int], int, int]] = []
        self.sched: list[dict[str, tuple[float, float]]] = []  # parallel to samples
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="box-sampler", daemon=True)

    def __enter__(self) -> BoxSampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(5)

    def _run(self) -> None:
        while True:
            self._sample()
            if self._stop.wait(self.every_s):
                self._sample()
                return

    def _sample(self) -> None:
        sched = {}
        for name, pid in self.pids.items():
            try:
                sched[name] = sched_s(pid)
            except OSError:  # ended
                continue
        self.samples.append(box_sample())
        self.sched.append(sched)

    def between(self, t0: float, t1: float) -> dict[str, float]:
        """The machine from ``t0`` to ``t1`` (epoch s; the samples nearest inside): CPU
        shares of the 2 cores' time (steal, iowait, idle), stall ms per second (PSI: cpu
        some, io some, io full), and the most dirty / writeback MiB seen."""
        idx = [k for k, x in enumerate(self.samples)
               if t0 - self.every_s <= x[0] <= t1 + self.every_s]
        if len(idx) < 2:
            return {}
        inside = [self.samples[k] for k in idx]
        a, b = inside[0], inside[-1]
        secs = b[0] - a[0]
        cpu = [y - x for x, y in zip(a[1], b[1], strict=True)]
        total = sum(cpu) or 1
        out = {"seconds": secs, "steal": cpu[7] / total if len(cpu) > 7 else float("nan"),
               "iowait": cpu[4] / total, "idle": cpu[3] / total,
               "dirty_mib": max(x[3] for x in inside) / 1024,
               "writeback_mib": max(x[4] for x in inside) / 1024}
        for k in a[2]:
            out[f"psi_{k}_ms_per_s"] = (b[2][k] - a[2][k]) / 1e3 / secs if secs > 0 else 0.0
        if self.sched:
            sa, sb = self.sched[idx[0]], self.sched[idx[-1]]
            for name in sa.keys() & sb.keys():
                if secs > 0:  # shares of one core: on a CPU, runnable without one
                    out[f"{name}_cpu"] = (sb[name][0] - sa[name][0]) / secs
                    out[f"{name}_wait"] = (sb[name][1] - sa[name][1]) / secs
        return out


def box_sample() -> tuple[float, list[int], dict[str, int], int, int]:
    """(epoch s, /proc/stat's cpu jiffies, PSI totals in µs by "cpu_some", "io_some",
    "io_full", /proc/meminfo Dirty kB, Writeback kB)."""
    now = time.time()
    with open("/proc/stat") as f:
        cpu = [int(x) for x in f.readline().split()[1:]]
    psi: dict[str, int] = {}
    for kind in ("cpu", "io"):
        try:
            with open(f"/proc/pressure/{kind}") as f:
                for line in f:
                    level, *fields = line.split()
                    psi[f"{kind}_{level}"] = int(fields[-1].split("=")[1])
        except OSError:
            pass
    dirty = writeback = 0
    with open("/proc/meminfo") as f:
        for line in f:
            if line.startswith("Dirty:"):
                dirty = int(line.split()[1])
            elif line.startswith("Writeback:"):
                writeback = int(line.split()[1])
    return now, cpu, psi, dirty, writeback


def loadavg() -> str:
    with open("/proc/loadavg") as f:
        return " ".join(f.read().split()[:3])


class Broker:
    """``bootstrap``, FAULTLINE_KAFKA_BOOTSTRAP, or a broker of our own (deploy/kafka/broker.py)."""

    def __init__(self, bootstrap: str | None, lean: bool = False,
                 diagnose: Path | None = None) -> None:
        """``lean``: a broker of our own runs with deploy/kafka/broker.py's LEAN_JVM_FLAGS and
        LEAN_PROPERTIES (serial GC, fewer threads) instead of the tests' settings.
        ``diagnose``: a folder where a broker of our own writes its request log
        (``requests.log``, every request's times) and a flight recording of its file
        syncs and monitor waits (``broker.jfr``, see jfr_events): diagnostics."""
        self.bootstrap = bootstrap or os.environ.get("FAULTLINE_KAFKA_BOOTSTRAP")
        self.lean = lean
        self._broker: Any = None
        self._mod: Any = None
        self.pid: int | None = None
        # A broker of our own logs its JVM's safepoint pauses (collections and the rest,
        # every thread stopped) here, with wall times: bench/kafka_throughput.py --stages
        # lines them up with slow alerts.
        self.gc_log: Path | None = None
        self.diagnose = diagnose
        self.request_log: Path | None = None
        self.jfr: Path | None = None

    def describe(self) -> str:
        if self._broker is None:
            return f"an existing broker at {self.bootstrap}"
        if self.lean:
            return ("our own broker, lean: " + " ".join(self._broker.jvm_flags) + ", "
                    + ", ".join(self._broker.properties.split()))
        return "our own broker, the tests' settings: " + " ".join(self._broker.jvm_flags)

    def __enter__(self) -> Broker:
        if not self.bootstrap:
            import importlib.util

            spec = importlib.util.spec_from_file_location(
                "faultline_broker", ROOT / "deploy" / "kafka" / "broker.py")
            assert spec is not None and spec.loader is not None
            mod = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(mod)
            self._mod = mod
            extra = ""
            if self.diagnose is not None:
                self.diagnose.mkdir(parents=True, exist_ok=True)
                self.request_log = self.diagnose / "requests.log"
                self.jfr = self.diagnose / "broker.jfr"
                jfc = self.diagnose / "waits.jfc"
                jfc.write_text(JFR_SETTINGS)
                extra = (f" -XX:StartFlightRecording=name=faultline,settings={jfc},"
                         f"filename={self.jfr}")
            self._broker = (mod.KafkaBroker(jvm_flags=mod.LEAN_JVM_FLAGS,
                                            properties=mod.LEAN_PROPERTIES,
                                            request_log=self.request_log)
                            if self.lean else mod.KafkaBroker(request_log=self.request_log))
            fd, name = tempfile.mkstemp(prefix="faultline-bench-safepoints-", suffix=".log")
            os.close(fd)
            self.gc_log = Path(name)
            opts = os.environ.get("FAULTLINE_KAFKA_JAVA_OPTS")
            os.environ["FAULTLINE_KAFKA_JAVA_OPTS"] = (
                f"{opts or ''} -Xlog:safepoint,gc:file={name}:time,uptime{extra}").strip()
            try:
                self.bootstrap = self._broker.start()
            finally:
                if opts is None:
                    del os.environ["FAULTLINE_KAFKA_JAVA_OPTS"]
                else:
                    os.environ["FAULTLINE_KAFKA_JAVA_OPTS"] = opts
            self.pid = self._broker.pid
        return self

    def __exit__(self, *exc: object) -> None:
        if self._broker is not None:
            self._broker.stop()
        if self.gc_log is not None:
            self.gc_log.unlink(missing_ok=True)

    def cpu_s(self) -> float:
        return proc_cpu_s(self.pid) if self.pid else float("nan")

    def jit_s(self) -> float:
        """CPU seconds our broker's JIT compiler threads (HotSpot's "C1/C2 CompilerThread")
        have used so far: a warm broker's are nearly idle."""
        if not self.pid:
            return float("nan")
        total = 0
        for task in Path(f"/proc/{self.pid}/task").iterdir():
            try:
                if (task / "comm").read_text().startswith(("C1 Compiler", "C2 Compiler")):
                    total += int((task / "schedstat").read_text().split()[0])
            except OSError:
                continue  # the thread ended meanwhile
        return total / 1e9

    def requests(self, since_s: float) -> list[dict[str, Any]]:
        """With ``diagnose``: the requests the broker completed since ``since_s`` (epoch),
        each its request-log JSON plus ``done_ms`` (deploy/kafka/broker.py request_times)."""
        if self.request_log is None:
            return []
        return self._mod.request_times(self.request_log, 1e3 * since_s)

    def waits(self, since_s: float) -> list[dict[str, Any]]:
        """With ``diagnose``: the broker's file syncs and lock waits since ``since_s``, from
        its flight recording (dumped now; see jfr_events)."""
        if self.jfr is None or not self.pid:
            return []
        dump = self.jfr.with_suffix(".dump.jfr")
        done = subprocess.run(["jcmd", str(self.pid), "JFR.dump", "name=faultline",
                               f"filename={dump}"], capture_output=True, timeout=120)
        if done.returncode != 0:
            return []
        return [e for e in jfr_events(dump) if e["end"] >= since_s]


# What the broker's flight recording keeps (bench --broker-diagnose): every file sync
# (fsync/fdatasync: FileChannel.force) with the thread and the stack that made it, and
# every wait of 5 ms or more to enter a Java monitor (a partition's log lock is one).
JFR_SETTINGS = """\
<?xml version="1.0" encoding="UTF-8"?>
<configuration version="2.0" label="faultline bench: syncs and waits">
  <event name="jdk.FileForce">
    <setting name="enabled">true</setting>
    <setting name="stackTrace">true</setting>
    <setting name="threshold">0 ms</setting>
  </event>
  <event name="jdk.JavaMonitorEnter">
    <setting name="enabled">true</setting>
    <setting name="stackTrace">true</setting>
    <setting name="threshold">5 ms</setting>
  </event>
</configuration>
"""


def jfr_events(path: Path) -> list[dict[str, Any]]:
    """The events of a flight recording as {type, start, end (epoch s), seconds, thread,
    path (a FileForce's file), frames (the top of its stack, method names)}."""
    import datetime as dt

    done = subprocess.run(["jfr", "print", "--json", "--stack-depth", "12", str(path)],
                          capture_output=True, timeout=300)
    if done.returncode != 0:
        return []
    out = []
    for e in json.loads(done.stdout)["recording"]["events"]:
        v = e["values"]
        start = dt.datetime.fromisoformat(v["startTime"].replace("Z", "+00:00")).timestamp()
        secs = _iso_seconds(v.get("duration", "PT0S"))
        frames = [f"{(f.get('method') or {}).get('type', {}).get('name', '?')}."
                  f"{(f.get('method') or {}).get('name', '?')}"
                  for f in ((v.get("stackTrace") or {}).get("frames") or ())]
        out.append({"type": e["type"], "start": start, "end": start + secs, "seconds": secs,
                    "thread": (v.get("eventThread") or {}).get("javaName"),
                    "path": v.get("path"), "frames": frames})
    return out


def _iso_seconds(text: str) -> float:
    """Seconds of an ISO 8601 duration as jfr prints them ("PT0.012S", "PT1M2.5S")."""
    import re

    m = re.fullmatch(r"PT(?:(\d+)H)?(?:(\d+)M)?(?:([\d.]+)S)?", text)
    if not m:
        return 0.0
    h, mi, sec = (float(x) if x else 0.0 for x in m.groups())
    return 3600 * h + 60 * mi + sec


def nice_of(pid: int | str = "self") -> int:
    """A process's (main thread's) nice value."""
    with open(f"/proc/{pid}/stat") as f:
        return int(f.read().rsplit(")", 1)[1].split()[16])


def renice(pid: int, value: int) -> None:
    """Set the nice value of every thread of ``pid`` (Linux's nice is per thread; threads
    started later inherit their creator's).  Raising a priority back needs root or
    CAP_SYS_NICE: a PermissionError then."""
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            os.setpriority(os.PRIO_PROCESS, int(task.name), value)
        except ProcessLookupError:
            continue  # the thread ended meanwhile


# Settings every measured worker gets on top of worker_env's (kafka_throughput.py
# --worker-env), e.g. FAULTLINE_SNAPSHOT_INTERVAL_S: the same for a --baseline's workers.
EXTRA_WORKER_ENV: dict[str, str] = {}


def worker_env(bootstrap: str, prefix: str, run: str, topology: str | None,
               partitions: int) -> dict[str, str]:
    """Settings of one measured deployment: the telemetry topics under ``prefix``, its own
    group and internal topics under ``run``, so deployments can read the same backlog."""
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
        # Defaults otherwise; a quiet partition lets time run on sooner, so a run settles.
        "FAULTLINE_IDLE_ADVANCE_S": "2", "PYTHONUNBUFFERED": "1"})
    if topology:
        env["FAULTLINE_TOPOLOGY"] = str(topology)
    env.update(EXTRA_WORKER_ENV)
    return env


class Worker:
    """One ``faultline serve`` process, its status file and its CPU."""

    def __init__(self, env: dict[str, str], workdir: Path, extra: list[str] | None = None,
                 code: Path | None = None) -> None:
        """``code``: another checkout of faultline to run the worker from (default: this one)."""
        workdir.mkdir(parents=True, exist_ok=True)
        self.workdir = workdir
        self.log = open(workdir / "worker.log", "wb")  # noqa: SIM115 - closed in stop()
        if code is not None:
            env = {**env, "PYTHONPATH": str(code)}
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "detector.cli", "serve", "--workdir", str(workdir),
             *(extra or [])], cwd=code or ROOT, env=env, stdout=self.log,
            stderr=subprocess.STDOUT)

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


FEED_CLIENT_ID = "faultline-bench-feed"  # the feed's requests in the broker's request log


def producer(bootstrap: str, linger_ms: float, stats: list[Any] | None = None,
             compression: str = "none") -> Producer:
    """The feed's producer; ``stats``: librdkafka's statistics every 100 ms appended there
    (see feed_stats)."""
    return Producer(_producer_conf(bootstrap, linger_ms, compression,
                                   None if stats is None else _stats_into(stats)))


def _stats_into(stats: list[Any]) -> Callable[[str], None]:
    return lambda text: stats.append(feed_stats(text))


def _producer_conf(bootstrap: str, linger_ms: float, compression: str,
                   on_stats: Callable[[str], None] | None = None) -> dict[str, Any]:
    """Every feed producer's settings (one place): ``on_stats`` gets librdkafka's
    statistics every 100 ms."""
    extra: dict[str, Any] = {}
    if on_stats is not None:
        extra = {"statistics.interval.ms": 100, "stats_cb": on_stats}
    return {**extra, "bootstrap.servers": bootstrap, "enable.idempotence": True,
            "client.id": FEED_CLIENT_ID,
            "linger.ms": linger_ms, "compression.type": compression,
            "queue.buffering.max.kbytes": 262144}


class FeedShape(NamedTuple):
    """How the paced feed of the latency runs is built.

    ``process``: in a process of its own (FeedProcess), with nothing else in it; else in
    the bench's process, beside its machine sampler thread (round 8's feed).  ``fresh``: a
    new producer for every run (a new idempotent producer id, metadata and connection in
    the feed's first second; round 8's), else one producer kept for all runs, the run's
    topics' metadata fetched before its clock starts -- as a collector that has been
    producing for hours.  ``stats``: librdkafka's statistics every 100 ms (the "who had a
    CPU" table's feed queueing).  ``queue_max``: messages the producer may hold (librdkafka's
    default 100,000): with a large queue a record waits inside the producer, its CreateTime
    already taken, where round 8's feed, at 100,000 queued, waited in its pacing loop and
    took the record's CreateTime only once librdkafka accepted it -- its queueing then
    hidden from the figure."""

    name: str
    linger_ms: float = 50.0      # the collector's sink (detector/collect/sinks.py)
    compression: str = "lz4"     # the same
    process: bool = True
    fresh: bool = False
    stats: bool = True
    queue_max: int = 2_000_000
    warm: bool = True
    producers: int = 2

    # ``producers``: the feed's records go through this many producers (kept ones, or fresh
    # ones, as above), a record by its key's CRC-32 -- librdkafka's partitioner's hash, so
    # with 8 partitions a topic producer k writes partition k of each topic, as a node's
    # collector writes its node's one partition of each.  librdkafka puts one partition in
    # a produce request and the broker answers a connection's requests one at a time: one
    # producer for all 32 partitions sent them in turn, and the last topic's records
    # reached Kafka 250-900 ms after the first's, stamped at the same moment (the lead's
    # quiet run of round 24, every 50th record's delivery report): the correlator's clock
    # waited for them, correctly -- they were older than the finding it held (BENCHMARKS.md
    # "lat25, round 25").  A collector writes a few partitions, not the fleet's.
    # Default 2 (lat26, round 26): in the lead's quiet-box A/B of 1, 2 and 8 producers
    # (a34d01b, 9 + 9 runs each, /tmp/lead26/lat.json) the slowest alert of a run that
    # kept the rate was ~355 / ~295 / ~366 ms (median run), the feed's own CPU 3.0 / 3.3 /
    # 3.8 µs an event, and the feed fell below 95 % of its rate in 1 / 2 / 4 runs of 18:
    # on this 2-core box eight producers' CPU is taken from the worker, and the spread
    # across partitions lat25 removed is not what holds the tail (BENCHMARKS.md, lat26).

    # ``warm``: the run's topics (and its alert topics) were written to before the worker
    # starts, as a collector's and a worker's have been for days; the worker starts at
    # their end (auto_offset_reset "latest").  Into brand-new partitions the feed's
    # produce() -> delivery in its first half second was 454-497 ms p50 against 37-69
    # into the same topics fed once before (the feed alone, bench/feed_cold.py; BENCHMARKS.md
    # "latency, round 11"): the broker's first appends to a partition, not the worker's.

    def label(self) -> str:
        base = FEED_SHAPES.get(self.name.split(":")[0])
        if base is not None and base._replace(name=self.name) == self:
            return self.name
        many = f"{self.producers} producers" if self.producers > 1 else "one producer"
        return (f"{self.name}: linger {self.linger_ms:g} ms, {self.compression}, "
                + ("own process" if self.process else "in the bench's process")
                + (f", {many} a run" if self.fresh else f", {many}")
                + ("" if self.stats else ", no statistics")
                + f", queue {self.queue_max:,}" + ("" if self.warm else ", fresh topics"))


FEED_SHAPES = {
    # a collector's shape: one long-lived producer in a process of its own, the sink's
    # linger and codec (the default)
    "deployed": FeedShape("deployed"),
    # round 8's bench feed: a new producer for each run in the bench's process, beside
    # its sampler, 5 ms linger, no compression
    "bench": FeedShape("bench", linger_ms=5.0, compression="none", process=False,
                       fresh=True, queue_max=100_000, warm=False, producers=1),
}


def feed_shape(spec: str) -> FeedShape:
    """``NAME[:KEY=VALUE,...]``: a shape of FEED_SHAPES with fields replaced, e.g.
    ``deployed:linger_ms=5,compression=none``."""
    name, _, rest = spec.partition(":")
    if name not in FEED_SHAPES:
        raise ValueError(f"unknown feed shape {name!r} (one of {', '.join(FEED_SHAPES)})")
    shape = FEED_SHAPES[name]._replace(name=spec)
    for item in filter(None, rest.split(",")):
        key, _, value = item.partition("=")
        if key not in FeedShape._fields or key == "name":
            raise ValueError(f"unknown feed shape field {key!r}")
        old = getattr(shape, key)
        shape = shape._replace(**{key: (value.lower() in ("1", "true", "yes"))
                                  if isinstance(old, bool) else type(old)(value)})
    if shape.producers < 1 or (shape.producers > 1 and not shape.process):
        raise ValueError(f"feed shape {spec!r}: producers must be 1, or more in the feed's "
                         "own process")
    return shape


class FeedProcess:
    """The paced feed in a process of its own, forked once from the bench (so the logs
    are shared, not copied), keeping one producer per shape for all its runs: no new
    idempotent producer id, metadata or connection per run, and none of the bench's
    sampling or parsing in the process that produces.  ``feeds``: message lists by name."""

    def __init__(self, feeds: dict[str, list[Msg]]) -> None:
        import multiprocessing

        if feeds and "warm" not in feeds:  # what a warm shape writes first (FeedShape.warm)
            feeds = {**feeds, "warm": next(iter(feeds.values()))[:WARM_RECORDS]}
        ctx = multiprocessing.get_context("fork")
        self._conn, child = ctx.Pipe()
        self.proc = ctx.Process(target=_feed_main, args=(child, feeds), name="bench-feed",
                                daemon=True)
        self.proc.start()
        child.close()
        self.pid: int = self.proc.pid  # type: ignore[assignment]

    def run(self, shape: FeedShape, bootstrap: str, prefix: str, feed: str,
            speed: float | None, sample: bool) -> dict[str, Any]:
        """Produce ``feed`` into ``prefix``'s telemetry topics paced at ``speed``:
        {t0 (epoch s the feed began), secs, acked (produce() -> delivery, every 50th
        message, see produce), stats (feed_stats every 100 ms), new_producer}."""
        self._conn.send((shape, bootstrap, prefix, feed, speed, sample))
        out = self._conn.recv()
        if isinstance(out, BaseException):
            raise out
        return out

    def close(self) -> None:
        if self.proc.is_alive():
            with contextlib.suppress(OSError):
                self._conn.send(None)
            self.proc.join(30)
            if self.proc.is_alive():
                self.proc.kill()
                self.proc.join(10)
        self._conn.close()

    def __enter__(self) -> FeedProcess:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _feed_main(conn: Any, feeds: dict[str, list[Msg]]) -> None:
    """The feed process: one command at a time from the bench (see FeedProcess.run);
    between them it polls its producers, so no statistics or reports pile up for the
    next run's first poll."""
    # Touch every message once now: the first pass over memory shared with the bench
    # copies its pages (each object's reference count is written), 5-6 µs a record in a
    # first run when it happened in the paced loop.
    for msgs in feeds.values():
        for m in msgs:
            m.value  # noqa: B018
    producers: dict[tuple[Any, ...], list[Producer]] = {}
    sink: list[list[Any]] = [[]]  # where the kept producers' statistics go: the run's list

    def on_stats(text: str) -> None:
        if sink[0] is not None:
            sink[0].append(feed_stats(text))

    while True:
        while not conn.poll(0.05):
            sink[0] = None  # type: ignore[call-overload]  # between runs: read, dropped
            for ps in producers.values():
                for p in ps:
                    p.poll(0)
        cmd = conn.recv()
        if cmd is None:
            break
        try:
            shape, bootstrap, prefix, feed, speed, sample = cmd
            stats: list[Any] = []
            key = (bootstrap, shape.linger_ms, shape.compression, shape.stats, shape.queue_max,
                   shape.producers)
            new = shape.fresh or key not in producers
            extra = {"queue.buffering.max.messages": shape.queue_max}
            # Statistics from the first producer only: each report is a JSON document of
            # every partition the producer knows, parsed here, and eight of them every
            # 100 ms took the feed's CPU from the paced loop.
            if shape.fresh:
                ps = [Producer({**_producer_conf(
                    bootstrap, shape.linger_ms, shape.compression,
                    _stats_into(stats) if shape.stats and k == 0 else None),
                    **extra}) for k in range(shape.producers)]
            elif new:
                ps = producers[key] = [Producer({**_producer_conf(
                    bootstrap, shape.linger_ms, shape.compression,
                    on_stats if shape.stats and k == 0 else None), **extra})
                    for k in range(shape.producers)]
                # Their producer ids and connections before any run: one message each to a
                # topic of its own, delivered.
                sink[0] = None  # type: ignore[call-overload]
                for p in ps:
                    p.produce(f"{FEED_CLIENT_ID}.ready", b"ready")
                for p in ps:
                    if p.flush(60):
                        raise RuntimeError("the feed's producer could not deliver")
            else:
                ps = producers[key]
            if not shape.fresh:
                # The run's topics as a collector producing for hours knows them: their
                # partitions' leaders in its metadata before the first record.
                for p in ps:
                    for t in TELEMETRY_TOPICS:
                        p.list_topics(prefix + t, timeout=30)
                    p.poll(0)
            sink[0] = stats
            acked: list[Any] = []
            t0 = time.time()
            secs = produce(ps, prefix, feeds[feed], speed, acked=acked if sample else None)
            for p in ps:
                p.poll(0)
            sink[0] = None  # type: ignore[call-overload]
            if shape.fresh:
                del ps, p
            conn.send({"t0": t0, "secs": secs, "acked": acked, "stats": stats,
                       "new_producer": new})
        except Exception as e:  # noqa: BLE001 - handed to the bench, which raises it
            conn.send(RuntimeError(f"feed process: {e!r}"))


# Records of the log written into a run's telemetry topics before its worker starts when
# its feed shape is ``warm`` (FeedShape): every partition the feed writes gets some.
WARM_RECORDS = 32_000
WARM_HEADER = "faultline-bench-warm"  # on the messages that warm an alert topic: not alerts


def warm_alert_topics(bootstrap: str, topics: list[str], partitions: int) -> None:
    """One message with WARM_HEADER into each partition of ``topics`` (alert topics: the
    reader passes them over), so the worker's first alert is not a partition's first
    append."""
    p = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True})
    for t in topics:
        for k in range(partitions):
            p.produce(t, b"{}", b"warm", k, headers=[(WARM_HEADER, b"1")])
    if p.flush(60):
        raise RuntimeError("could not warm the alert topics")


def repeat_log(msgs: list[Msg], times: int, gap_s: float = 1.0) -> list[Msg]:
    """The log ``times`` times over, each copy after the one before in event time: its
    ``ts`` shifted by the log's span plus ``gap_s``, and its step numbers by each job's
    span of steps, so every job goes on rather than restarting; cumulative NIC and ECC
    counters start again (a counter reset, which the detectors take as benign).  A longer
    feed at the same event rate: the latency runs' steady state, not only a fresh
    worker's first seconds."""
    if times <= 1 or not msgs:
        return msgs
    t_lo, t_hi = min(m.ts for m in msgs), max(m.ts for m in msgs)
    shift = t_hi - t_lo + gap_s
    steps: dict[Any, list[int]] = {}
    parsed = [orjson.loads(m.value) for m in msgs]
    for m, v in zip(msgs, parsed, strict=True):
        if m.topic == STEP and isinstance(v.get("step"), int):
            lo_hi = steps.setdefault(v.get("job"), [v["step"], v["step"]])
            lo_hi[0], lo_hi[1] = min(lo_hi[0], v["step"]), max(lo_hi[1], v["step"])
    out = list(msgs)
    for k in range(1, times):
        for m, v in zip(msgs, parsed, strict=True):
            w = dict(v)
            w["ts"] = v["ts"] + k * shift
            if m.topic == STEP and isinstance(v.get("step"), int):
                lo, hi = steps[v.get("job")]
                w["step"] = v["step"] + k * (hi - lo + 1)
            out.append(Msg(m.topic, m.key, compact(orjson.dumps(w)), m.ts + k * shift))
    return out


def create_topics(bootstrap: str, names: list[str], partitions: int,
                  config: dict[str, str] | None = None) -> None:
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap})
    for fut in admin.create_topics([NewTopic(n, num_partitions=partitions, config=config or {})
                                    for n in names]).values():
        fut.result(30)


def produce(p: Producer | list[Producer], prefix: str, msgs: list[Msg],
            speed: float | None = None, tick_s: float = 0.002, acked: list[Any] | None = None,
            sample_every: int = 50) -> float:
    """Produce in log order; paced by event time (``speed`` x real time) or at once; seconds.

    ``p``: a producer, or several: a record goes through the one :func:`route` picks by
    its key (FeedShape.producers).

    Paced, it wakes up at most every ``tick_s`` and produces what is due by then: the
    log's timestamps are nearly all distinct, and waking up for each message (25 µs
    apart at 40,000 events/s) cost the producer a third of its CPU.  A message's Kafka
    timestamp is still taken when it is produced, so latencies are unaffected.

    ``acked``: paced, every ``sample_every``-th message's (produce() time (its CreateTime),
    seconds to its delivery report as this loop's poll sees it, the same as librdkafka
    measured it when the ack came, topic, partition, offset): the feed's own share of an
    input's way to the worker (linger, send, the broker's append and ack), apart from the
    broker-to-worker fetch."""
    ps = p if isinstance(p, list) else [p]
    n = len(ps)
    by_key: dict[bytes | None, Producer] = {}
    topics = {t: prefix + t for t in TELEMETRY_TOPICS}
    sample = acked is not None and speed is not None
    start = time.time()
    ts0 = msgs[0].ts if msgs else 0.0
    i, total, high = 0, len(msgs), ts0
    while i < total:
        due = math.inf if speed is None else ts0 + (time.time() - start) * speed
        while i < total and max(high, msgs[i].ts) <= due:
            m = msgs[i]
            if n == 1:
                q = ps[0]
            else:
                q = by_key.get(m.key)  # type: ignore[assignment]
                if q is None:
                    q = by_key[m.key] = ps[route(m.key, n)]
            high = max(high, m.ts)
            try:
                if sample and i % sample_every == 0:
                    q.produce(topics[m.topic], m.value, m.key, on_delivery=partial(
                        _acked, acked, time.time()))
                else:
                    q.produce(topics[m.topic], m.value, m.key)
            except BufferError:
                q.poll(0.01)  # its queue is full: let librdkafka send, try this one again
                continue
            i += 1
            if speed is None and i % 5000 == 0:
                for q in ps:
                    q.poll(0)
        for q in ps:
            q.poll(0)
        if i < total:
            wait = (max(high, msgs[i].ts) - ts0) / speed - (time.time() - start)  # type: ignore[operator]
            if wait > 0:
                time.sleep(min(max(wait, tick_s), 0.05))
    deadline = time.time() + 60
    left = sum(q.flush(max(0.0, deadline - time.time())) for q in ps)
    if left:
        raise RuntimeError(f"{left} messages not delivered")
    return time.time() - start


def route(key: bytes | None, n: int) -> int:
    """Which of ``n`` producers sends a record keyed ``key``: its CRC-32 (librdkafka's default
    partitioner, consistent_random, takes the partition as CRC-32 modulo the partitions),
    so with ``n`` dividing a topic's partitions a producer writes the partitions congruent
    to it, and a node's records all go through one producer, as through its collector.
    No key: the first."""
    return 0 if key is None else zlib.crc32(key) % n


def feed_stats(text: str) -> dict[str, Any]:
    """What a librdkafka statistics report says of the feed's way to the broker (µs, over
    the last interval): messages waiting in the producer (``msg_cnt``), and for the
    broker connection ``int_latency`` (produce() to the message put in a request: linger,
    the producer's own queueing), ``outbuf_latency`` (a request waiting to be sent) and
    ``rtt`` (sent to its response), each as p50 / p99 / max; ``at`` epoch seconds."""
    x = orjson.loads(text)
    out: dict[str, Any] = {"at": time.time(), "msg_cnt": x.get("msg_cnt", 0)}
    for b in (x.get("brokers") or {}).values():
        if b.get("nodeid", -1) < 0:
            continue  # the bootstrap entry
        for key in ("int_latency", "outbuf_latency", "rtt"):
            w = b.get(key) or {}
            out[key] = (w.get("p50", 0), w.get("p99", 0), w.get("max", 0))
    return out


def _acked(out: list[Any], produced: float, err: Any, msg: Any) -> None:
    if err is None:
        # (CreateTime-ish, seconds to this poll, librdkafka's own produce() -> ack latency
        # taken when the ack came -- not delayed by this process's poll --, topic, partition,
        # offset)
        lat = msg.latency()
        out.append((produced, time.time() - produced, lat if lat is not None else -1.0,
                    msg.topic(), msg.partition(), msg.offset()))


def read_topic(bootstrap: str, topic: str) -> list[Any]:
    """Every message of a topic, from the beginning to its current end."""
    return read_to_end({"bootstrap.servers": bootstrap}, topic, 60.0)


def percentile(xs: list[float], q: float) -> float:
    if not xs:
        return float("nan")
    xs = sorted(xs)
    k = min(len(xs) - 1, max(0, round(q / 100.0 * (len(xs) - 1))))
    return xs[k]
