"""A real single-node Kafka broker (KRaft, loopback only) for development and CI.

Standard library only: this runs before the project's virtualenv exists. The
broker's jars come from Maven Central through ``pom.xml`` beside this file and
are cached in ``$FAULTLINE_KAFKA_CACHE/kafka-<version>/libs`` (default cache
``~/.cache/faultline``); Java 17+ and Maven must be on PATH (or JAVA_HOME set).

CLI::

    python deploy/kafka/broker.py fetch                  # download the jars once
    python deploy/kafka/broker.py start [--data-dir DIR] # last stdout line: 127.0.0.1:PORT
    python deploy/kafka/broker.py stop  [--data-dir DIR]

Library::

    with KafkaBroker() as broker:
        broker.create_topic("telemetry.step", partitions=3)
        ... broker.bootstrap ...

Readiness and topic creation speak the Kafka wire protocol over a plain socket
(ApiVersions v0, Metadata v4, CreateTopics v2: all still served by Kafka 4.x),
so no client library and no second JVM is needed.
"""

from __future__ import annotations

import argparse
import atexit
import base64
import contextlib
import fcntl
import json
import os
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import time
import uuid
import xml.etree.ElementTree as ET
from pathlib import Path

POM = Path(__file__).resolve().parent / "pom.xml"
NODE_ID = 1
STATE_FILE = "broker.json"
# Everything start() writes into a data dir; stop() removes exactly these from a
# directory it did not create, and the whole directory from one it did.
_OWNED = ("kafka-logs", "server.properties", "log4j2.xml", "broker.log", "broker.out", STATE_FILE)


DEFAULT_JVM_FLAGS = ("-XX:+UseG1GC", "-XX:MaxGCPauseMillis=20")
# A leaner single-node broker for benchmarks that share a small machine with what they
# measure (bench/kafka_throughput.py): the serial collector instead of G1's concurrent
# threads, one network thread and two request handlers for a benchmark's handful of
# clients.  Broker CPU per 1,000 events in paced runs at 41,000 events/s, a fresh broker's
# first three runs: 16.6 / 16.6 / 11.3 ms with the tests' settings, 12.3 / 12.9 / 11.3
# lean (C2's compiler threads took 5-7 CPU-seconds a run until warm, with either).  C1
# only (-XX:TieredStopAtLevel=1) saved those (9.7 / 10.0) but its code is slower once
# warm (13.3 in the third run), so it is not used.  BENCHMARKS.md, "Latency, round 3".
LEAN_JVM_FLAGS = ("-XX:+UseSerialGC",)
LEAN_PROPERTIES = """\
num.network.threads=1
num.io.threads=2
"""


class BrokerError(RuntimeError):
    """The broker could not be fetched, started, reached or stopped."""


# --------------------------------------------------------------------------- jars


def kafka_version() -> str:
    """The Kafka version pinned in pom.xml (the one place it is written)."""
    ns = {"m": "http://maven.apache.org/POM/4.0.0"}
    node = ET.parse(POM).getroot().find("m:properties/m:kafka.version", ns)
    if node is None or not (node.text or "").strip():
        raise BrokerError(f"{POM}: no <kafka.version> property")
    return node.text.strip()


def libs_dir() -> Path:
    root = os.environ.get("FAULTLINE_KAFKA_CACHE") or Path.home() / ".cache" / "faultline"
    return Path(root).expanduser() / f"kafka-{kafka_version()}" / "libs"


def fetch() -> Path:
    """Download the broker's jars into the cache once; later calls return at once."""
    libs = libs_dir()
    if (libs / ".complete").exists():
        return libs
    libs.parent.mkdir(parents=True, exist_ok=True)
    mvn = shutil.which("mvn")
    if mvn is None:
        raise BrokerError("Maven (mvn) is not on PATH; it is needed once to fetch the Kafka jars")
    # A lock, so that parallel test sessions do not download into each other.
    with open(libs.parent / ".fetch.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if (libs / ".complete").exists():
            return libs
        print(f"fetching Kafka {kafka_version()} jars into {libs} ...", file=sys.stderr)
        tmp = Path(tempfile.mkdtemp(prefix="libs.tmp-", dir=libs.parent))
        try:
            cmd = [mvn, "-q", "-B", "-f", str(POM), "dependency:copy-dependencies",
                   f"-DoutputDirectory={tmp}"]
            done = subprocess.run(cmd, stdin=subprocess.DEVNULL, capture_output=True, text=True)
            if done.returncode != 0:
                raise BrokerError(f"{' '.join(cmd)} failed:\n{_tail(done.stdout + done.stderr)}")
            if not (tmp / f"kafka_2.13-{kafka_version()}.jar").exists():
                raise BrokerError(f"Maven ran but {tmp} has no kafka_2.13 jar")
            (tmp / ".complete").touch()
            shutil.rmtree(libs, ignore_errors=True)  # a half-written dir from an older layout
            tmp.rename(libs)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    return libs


def _java() -> str:
    home = os.environ.get("JAVA_HOME")
    java = str(Path(home) / "bin" / "java") if home else shutil.which("java")
    if not java or not os.access(java, os.X_OK):
        raise BrokerError("no java found (PATH or JAVA_HOME); Kafka 4.x needs Java 17+")
    return java


# ------------------------------------------------------------------------ the wire
# Just enough of the Kafka protocol (non-flexible versions) for readiness and topics.

_API_VERSIONS, _METADATA, _CREATE_TOPICS = 18, 3, 19
_METADATA_V, _CREATE_TOPICS_V = 4, 2
_TOPIC_ALREADY_EXISTS = 36


def _str(s: str | None) -> bytes:
    if s is None:
        return struct.pack(">h", -1)
    b = s.encode()
    return struct.pack(">h", len(b)) + b


class _Reader:
    def __init__(self, data: bytes) -> None:
        self._data, self._pos = data, 0

    def _take(self, fmt: str) -> int:
        (value,) = struct.unpack_from(fmt, self._data, self._pos)
        self._pos += struct.calcsize(fmt)
        return value

    def i8(self) -> int:
        return self._take(">b")

    def i16(self) -> int:
        return self._take(">h")

    def i32(self) -> int:
        return self._take(">i")

    def str(self) -> str | None:
        n = self.i16()
        if n < 0:
            return None
        self._pos += n
        return self._data[self._pos - n : self._pos].decode()

    def array(self, item) -> list:
        n = self.i32()
        return [item() for _ in range(max(n, 0))]


def _call(bootstrap: str, api_key: int, version: int, body: bytes, timeout_s: float) -> _Reader:
    host, port = bootstrap.rsplit(":", 1)
    header = struct.pack(">hhi", api_key, version, 1) + _str("faultline-broker-py")
    with socket.create_connection((host, int(port)), timeout=timeout_s) as sock:
        sock.sendall(struct.pack(">i", len(header) + len(body)) + header + body)
        size = struct.unpack(">i", _recv(sock, 4))[0]
        reader = _Reader(_recv(sock, size))
    reader.i32()  # correlation id
    return reader


def _recv(sock: socket.socket, n: int) -> bytes:
    buf = bytearray()
    while len(buf) < n:
        chunk = sock.recv(n - len(buf))
        if not chunk:
            raise ConnectionError("broker closed the connection")
        buf += chunk
    return bytes(buf)


def _check_api_versions(bootstrap: str) -> None:
    r = _call(bootstrap, _API_VERSIONS, 0, b"", 5.0)
    r.i16()  # error code: v0 always answers with the list
    ranges = {k: (lo, hi) for k, lo, hi in r.array(lambda: (r.i16(), r.i16(), r.i16()))}
    for key, want, name in ((_METADATA, _METADATA_V, "Metadata"),
                            (_CREATE_TOPICS, _CREATE_TOPICS_V, "CreateTopics")):
        lo, hi = ranges.get(key, (0, -1))
        if not lo <= want <= hi:
            raise BrokerError(f"broker serves {name} v{lo}..v{hi}; broker.py speaks v{want}")


def metadata(bootstrap: str, topics: list[str] | None = None, timeout_s: float = 5.0) -> dict:
    """Brokers and topics as the broker reports them: what a client sees on connect.

    Returns ``{"brokers": {node_id: "host:port"}, "topics": {name: {partition: leader}}}``;
    a topic in error maps to its error code (an int) instead.
    """
    body = (struct.pack(">i", -1) if topics is None
            else struct.pack(">i", len(topics)) + b"".join(_str(t) for t in topics))
    r = _call(bootstrap, _METADATA, _METADATA_V, body + b"\x00", timeout_s)
    r.i32()  # throttle
    brokers = {n: f"{h}:{p}" for n, h, p, _rack in
               r.array(lambda: (r.i32(), r.str(), r.i32(), r.str()))}
    r.str()  # cluster id
    r.i32()  # controller id

    def partition() -> tuple[int, int, int]:
        err, index, leader = r.i16(), r.i32(), r.i32()
        r.array(r.i32)  # replicas
        r.array(r.i32)  # isr
        return err, index, leader

    def topic() -> tuple[str, int | dict[int, int]]:
        err, name = r.i16(), r.str()
        r.i8()  # is internal
        parts = r.array(partition)
        return name or "", err or {i: (leader if e == 0 else -1) for e, i, leader in parts}

    return {"brokers": brokers, "topics": dict(r.array(topic))}


# ------------------------------------------------------------------------- broker


class KafkaBroker:
    """One KRaft broker+controller on free loopback ports, in its own process group.

    ``detach=True`` leaves it running when this Python process exits (the CLI);
    otherwise it is stopped at interpreter exit at the latest.
    """

    def __init__(self, data_dir: str | Path | None = None, *, start_timeout_s: float = 90.0,
                 stop_timeout_s: float = 20.0, heap: str = "512m", detach: bool = False,
                 jvm_flags: tuple[str, ...] = DEFAULT_JVM_FLAGS, properties: str = "",
                 request_log: str | Path | None = None) -> None:
        """``jvm_flags`` replace the broker JVM's garbage-collector and compiler flags;
        ``properties`` (``key=value`` lines) are appended to its server.properties,
        overriding earlier lines: a benchmark's broker can be leaner than the tests' (LEAN_*).
        ``request_log``: a file for Kafka's request log at DEBUG (one line per request:
        epoch ms, then its JSON with ``totalTimeMs``, ``requestQueueTimeMs``,
        ``localTimeMs``, ...), a diagnostic for benchmarks (see request_times)."""
        self.data_dir = Path(data_dir).resolve() if data_dir is not None else None
        self.start_timeout_s = start_timeout_s
        self.stop_timeout_s = stop_timeout_s
        self.heap = heap
        self.detach = detach
        self.jvm_flags = tuple(jvm_flags)
        self.properties = properties
        self.request_log = Path(request_log).resolve() if request_log is not None else None
        self._proc: subprocess.Popen[bytes] | None = None
        self._bootstrap: str | None = None
        self._created_dir = False

    @property
    def bootstrap(self) -> str:
        if self._bootstrap is None:
            raise BrokerError("broker not started")
        return self._bootstrap

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc else None

    def __enter__(self) -> KafkaBroker:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def start(self) -> str:
        """Format fresh storage, start the broker, wait until it serves metadata."""
        if self._proc is not None:
            return self.bootstrap
        libs, java = fetch(), _java()
        if self.data_dir is None:
            self.data_dir = Path(tempfile.mkdtemp(prefix="faultline-kafka-"))
            self._created_dir = True
        else:
            self._created_dir = not self.data_dir.exists()
            self.data_dir.mkdir(parents=True, exist_ok=True)
            running = _running_from_state(self.data_dir)
            if running:
                raise BrokerError(f"a broker from {self.data_dir} already runs "
                                  f"(pid {running['pid']}, {running['bootstrap']}); stop it first")
            _remove_owned(self.data_dir, whole_dir=False)
        try:
            # A free port can be taken between choosing it and the broker binding it:
            # try again on fresh ports rather than fail the whole test session.
            for attempt in range(3):
                try:
                    self._launch(java, libs)
                    break
                except _PortTaken:
                    if attempt == 2:
                        raise
        except BaseException:
            self.stop()
            raise
        if not self.detach:
            atexit.register(self.stop)
        return self.bootstrap

    def _launch(self, java: str, libs: Path) -> None:
        assert self.data_dir is not None
        d = self.data_dir
        _remove_owned(d, whole_dir=False)
        broker_port, controller_port = _free_ports(2)
        bootstrap = f"127.0.0.1:{broker_port}"
        props = d / "server.properties"
        props.write_text(_server_properties(d / "kafka-logs", broker_port, controller_port)
                         + self.properties)
        (d / "log4j2.xml").write_text(_log4j2(d / "broker.log", self.request_log))
        jvm = [java, f"-Xmx{self.heap}", "-Djava.awt.headless=true",
               f"-Dlog4j2.configurationFile={d / 'log4j2.xml'}", f"-Dkafka.logs.dir={d}",
               "-cp", str(libs / "*")]
        # The format tool is a short-lived JVM: C1 only and serial GC start it faster.
        fmt = subprocess.run(
            [*jvm, "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC", "kafka.tools.StorageTool",
             "format", "-t", _cluster_id(), "-c", str(props)],
            stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=120, cwd=d)
        if fmt.returncode != 0:
            raise BrokerError(f"kafka-storage format failed:\n{_tail(fmt.stdout + fmt.stderr)}")
        with open(d / "broker.out", "wb") as out:
            self._proc = subprocess.Popen(
                [*jvm, *self.jvm_flags, "-XX:+ExitOnOutOfMemoryError",
                 *os.environ.get("FAULTLINE_KAFKA_JAVA_OPTS", "").split(),
                 "kafka.Kafka", str(props)],
                stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT, cwd=d,
                start_new_session=True)  # Ctrl-C on the test run must not hit it first
        self._wait_ready(bootstrap)
        self._bootstrap = bootstrap
        (d / STATE_FILE).write_text(json.dumps({
            "pid": self._proc.pid, "bootstrap": bootstrap, "data_dir": str(d),
            "created_data_dir": self._created_dir, "kafka_version": kafka_version()}))

    def _wait_ready(self, bootstrap: str) -> None:
        assert self._proc is not None and self.data_dir is not None
        deadline = time.monotonic() + self.start_timeout_s
        checked_versions = False
        while True:
            code = self._proc.poll()
            if code is not None:
                self._proc = None
                log = _broker_log_tail(self.data_dir)
                if "Address already in use" in log:
                    raise _PortTaken(log)
                raise BrokerError(f"Kafka broker exited with code {code} during startup:\n{log}")
            try:
                if not checked_versions:
                    _check_api_versions(bootstrap)
                    checked_versions = True
                # Metadata lists only unfenced brokers: ours in it means clients can work.
                if NODE_ID in metadata(bootstrap, timeout_s=2.0)["brokers"]:
                    return
            except (OSError, struct.error):
                pass
            if time.monotonic() > deadline:
                raise BrokerError(f"Kafka broker not ready after {self.start_timeout_s:.0f}s:\n"
                                  f"{_broker_log_tail(self.data_dir)}")
            time.sleep(0.1)

    def create_topic(self, name: str, partitions: int = 1, *, exist_ok: bool = False,
                     timeout_s: float = 30.0) -> None:
        """Create a topic (replication 1) and wait until every partition has a leader."""
        body = (struct.pack(">i", 1) + _str(name) + struct.pack(">ihii", partitions, 1, 0, 0)
                + struct.pack(">ib", int(timeout_s * 1000), 0))
        r = _call(self.bootstrap, _CREATE_TOPICS, _CREATE_TOPICS_V, body, timeout_s + 5)
        r.i32()  # throttle
        for topic, err, message in r.array(lambda: (r.str(), r.i16(), r.str())):
            if err and not (exist_ok and err == _TOPIC_ALREADY_EXISTS):
                raise BrokerError(f"CreateTopics {topic!r} failed: error {err} {message or ''}")
        deadline = time.monotonic() + timeout_s
        while True:
            leaders = metadata(self.bootstrap, [name])["topics"].get(name)
            if isinstance(leaders, dict) and leaders and all(v >= 0 for v in leaders.values()):
                return
            if time.monotonic() > deadline:
                raise BrokerError(f"topic {name!r} has no leader for every partition: {leaders}")
            time.sleep(0.05)

    def stop(self) -> None:
        """Stop the broker (SIGTERM, then SIGKILL after stop_timeout_s); remove its data."""
        atexit.unregister(self.stop)
        proc, self._proc, self._bootstrap = self._proc, None, None
        if proc is not None and proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(self.stop_timeout_s)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        if self.data_dir is not None:
            _remove_owned(self.data_dir, whole_dir=self._created_dir)


class _PortTaken(BrokerError):
    pass


def stop_from_state(data_dir: Path, timeout_s: float = 20.0) -> bool:
    """Stop the broker that ``start`` left running from data_dir; False if none was."""
    state_path = data_dir / STATE_FILE
    if not state_path.exists():
        return False
    state = json.loads(state_path.read_text())
    pid = int(state["pid"])
    if _is_our_broker(pid, data_dir):
        os.kill(pid, signal.SIGTERM)
        if not _wait_gone(pid, data_dir, timeout_s):
            os.kill(pid, signal.SIGKILL)
            _wait_gone(pid, data_dir, 10.0)
    _remove_owned(data_dir, whole_dir=bool(state.get("created_data_dir")))
    return True


# ------------------------------------------------------------------------ helpers



# What every single-node broker here sets, whatever its listeners (the SASL_SSL broker of
# the security tests adds these to its own listener lines).
SINGLE_NODE_PROPERTIES = """\
num.partitions=1
offsets.topic.replication.factor=1
offsets.topic.num.partitions=4
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
share.coordinator.state.topic.replication.factor=1
share.coordinator.state.topic.min.isr=1
group.initial.rebalance.delay.ms=0
# Lets tests give a consumer a short session: a killed worker frees its partitions fast.
group.min.session.timeout.ms=2000
num.network.threads=2
num.io.threads=4
"""


def _server_properties(log_dir: Path, broker_port: int, controller_port: int) -> str:
    return f"""\
process.roles=broker,controller
node.id={NODE_ID}
controller.quorum.voters={NODE_ID}@127.0.0.1:{controller_port}
listeners=PLAINTEXT://127.0.0.1:{broker_port},CONTROLLER://127.0.0.1:{controller_port}
advertised.listeners=PLAINTEXT://127.0.0.1:{broker_port}
listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT
controller.listener.names=CONTROLLER
inter.broker.listener.name=PLAINTEXT
log.dirs={log_dir}
auto.create.topics.enable=true
""" + SINGLE_NODE_PROPERTIES


_LOG4J2 = """\
<?xml version="1.0" encoding="UTF-8"?>
<Configuration status="warn">
  <Appenders>
    <File name="file" fileName="{log}">
      <PatternLayout pattern="[%d] %p %m (%c)%n"/>
    </File>
  </Appenders>
  <Loggers>
    <Root level="warn"><AppenderRef ref="file"/></Root>
  </Loggers>
</Configuration>
"""


# Kafka's request log (kafka.network.RequestChannel logs every completed request to this
# logger at DEBUG), epoch milliseconds first: see KafkaBroker(request_log=...).
_REQUEST_APPENDER = """\
    <File name="requests" fileName="{log}">
      <PatternLayout pattern="%d{{UNIX_MILLIS}} %m%n"/>
    </File>
"""
_REQUEST_LOGGER = """\
    <Logger name="kafka.request.logger" level="debug" additivity="false">
      <AppenderRef ref="requests"/>
    </Logger>
"""


def _log4j2(log: Path, request_log: Path | None = None) -> str:
    """The broker's log4j2 configuration: warnings to ``log``, and with ``request_log``
    every completed request there."""
    xml = _LOG4J2.format(log=_xml_attr(str(log)))
    if request_log is None:
        return xml
    return (xml.replace("  </Appenders>", _REQUEST_APPENDER.format(
        log=_xml_attr(str(request_log))) + "  </Appenders>", 1)
        .replace("  <Loggers>\n", "  <Loggers>\n" + _REQUEST_LOGGER, 1))


def request_times(path: Path, since_ms: float = 0.0) -> list[dict]:
    """The requests of a request log (see KafkaBroker(request_log=...)) completed at or
    after ``since_ms``: each its JSON (``requestHeader``, ``totalTimeMs``,
    ``requestQueueTimeMs``, ``localTimeMs``, ``remoteTimeMs``, ``responseQueueTimeMs``,
    ``sendTimeMs``, ...) plus ``done_ms``, when it completed (epoch ms)."""
    out = []
    try:
        lines = path.read_text(errors="replace").splitlines()
    except OSError:
        return out
    for line in lines:
        stamp, _, rest = line.partition(" ")
        start = rest.find("{")
        if not stamp.isdigit() or start < 0 or int(stamp) < since_ms:
            continue
        try:
            req = json.loads(rest[start:])
        except ValueError:
            continue
        req["done_ms"] = int(stamp)
        out.append(req)
    return out


def _xml_attr(s: str) -> str:
    return s.replace("&", "&amp;").replace('"', "&quot;").replace("<", "&lt;")


def _cluster_id() -> str:
    # Kafka's Uuid.randomUuid().toString(): URL-safe base64 of 16 bytes, unpadded;
    # Kafka never hands out one starting with "-", which a CLI would read as a flag.
    while True:
        cid = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        if not cid.startswith("-"):
            return cid


def _free_ports(n: int) -> list[int]:
    with contextlib.ExitStack() as stack:
        socks = [stack.enter_context(socket.socket()) for _ in range(n)]
        for s in socks:
            s.bind(("127.0.0.1", 0))
        return [s.getsockname()[1] for s in socks]


def _tail(text: str, lines: int = 40) -> str:
    # Java stack traces would fill any tail with frames and push out the message
    # that matters: keep the first three frames of each trace.
    kept, frames = [], 0
    for line in text.rstrip().splitlines():
        frames = frames + 1 if line.lstrip().startswith(("at ", "... ")) else 0
        if frames <= 3:
            kept.append(line)
    return "\n".join(kept[-lines:])


def _broker_log_tail(data_dir: Path) -> str:
    parts = []
    for name in ("broker.out", "broker.log"):
        path = data_dir / name
        if path.exists():
            parts.append(f"--- {path} (tail)\n{_tail(path.read_text(errors='replace'))}")
    return "\n".join(parts) or f"(no broker log in {data_dir})"


def _remove_owned(data_dir: Path, *, whole_dir: bool) -> None:
    if whole_dir:
        shutil.rmtree(data_dir, ignore_errors=True)
        return
    for name in _OWNED:
        path = data_dir / name
        if path.is_dir():
            shutil.rmtree(path, ignore_errors=True)
        else:
            path.unlink(missing_ok=True)


def _is_our_broker(pid: int, data_dir: Path) -> bool:
    """Whether pid is still the Kafka JVM started from data_dir (pids get reused)."""
    try:
        args = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    zombie = stat.rsplit(")", 1)[-1].split()[0] == "Z"
    return (not zombie and b"kafka.Kafka" in args
            and str(data_dir / "server.properties").encode() in args)


def _running_from_state(data_dir: Path) -> dict | None:
    try:
        state = json.loads((data_dir / STATE_FILE).read_text())
    except (OSError, ValueError):
        return None
    return state if _is_our_broker(int(state["pid"]), data_dir) else None


def _wait_gone(pid: int, data_dir: Path, timeout_s: float) -> bool:
    deadline = time.monotonic() + timeout_s
    while _is_our_broker(pid, data_dir):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.1)
    return True


# ---------------------------------------------------------------------------- CLI


def main(argv: list[str] | None = None) -> int:
    default_dir = os.environ.get("FAULTLINE_KAFKA_DATA_DIR") or str(
        Path(tempfile.gettempdir()) / f"faultline-kafka-{os.getuid()}")
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("fetch", help="download the broker's jars into the cache (once)")
    for name, text in (("start", "start a broker in the background; print its bootstrap"),
                       ("stop", "stop the broker started from --data-dir; remove its data")):
        p = sub.add_parser(name, help=text)
        p.add_argument("--data-dir", default=default_dir, help="broker state and logs "
                       "(env FAULTLINE_KAFKA_DATA_DIR; default %(default)s)")
    args = parser.parse_args(argv)
    try:
        if args.command == "fetch":
            print(fetch())
        elif args.command == "start":
            started = time.monotonic()
            broker = KafkaBroker(args.data_dir, detach=True)
            broker.start()
            print(f"Kafka {kafka_version()} pid {broker.pid} ready in "
                  f"{time.monotonic() - started:.1f}s, data in {broker.data_dir}", file=sys.stderr)
            print(broker.bootstrap)
        elif args.command == "stop" and not stop_from_state(Path(args.data_dir).resolve()):
            print(f"no broker state in {args.data_dir}; nothing to stop", file=sys.stderr)
    except BrokerError as e:
        print(f"broker.py {args.command}: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
