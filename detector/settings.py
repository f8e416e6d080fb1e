"""The service's configuration: one frozen object, from a TOML file and ``FAULTLINE_*`` variables.

Precedence, lowest first: defaults, the TOML file (``--config FILE`` or
``FAULTLINE_CONFIG``), environment variables, command-line flags.  Every
setting has one environment variable, ``FAULTLINE_`` + its name in capitals,
and one place in the file (``[section] key``).  Secrets are :class:`Secret`,
which never shows its value in ``repr``, ``str``, logs or ``faultline config``.

>>> s = Settings.load(env={"FAULTLINE_TOPIC_PREFIX": "dev.", "FAULTLINE_SASL_PASSWORD": "hunter2"})
>>> s.topic("telemetry.step"), s.sasl_password
('dev.telemetry.step', Secret('**********'))
>>> "hunter2" in s.to_toml()
False

One coercion engine serves these settings and the pager's (:mod:`detector.pager.config`):

>>> coerce("float", "2.5", "env X", text=True), coerce("list", "a, b", "env Y", text=True)
(2.5, ('a', 'b'))
>>> toml_value(Secret("hunter2")), redact_url("https://u:pw@h/p?token=t")
('"**********"', 'https://**********@h/p?**********')
"""

from __future__ import annotations

import dataclasses
import logging
import os
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import TYPE_CHECKING, Any

from detector.alerts import ESCALATION, ISOLATION
from detector.events import ECC, NIC, STEP, THERMAL

if TYPE_CHECKING:
    from detector.statecodec import StateCodec
from detector.thresholds import Thresholds

ENV_PREFIX = "FAULTLINE_"
CONFIG_ENV = "FAULTLINE_CONFIG"
REDACTED = "**********"
SECURITY_PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
SASL_MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")
OFFSET_RESETS = ("earliest", "latest")
LOG_LEVELS = ("debug", "info", "warning", "error")
DELIVERIES = ("batch", "agents")


class Secret:
    """A value that must not be printed: shows as ``**********``; ``reveal()`` gives it."""

    __slots__ = ("_value",)

    def __init__(self, value: str) -> None:
        self._value = value

    def reveal(self) -> str:
        return self._value

    def __repr__(self) -> str:
        return f"Secret('{REDACTED}')"

    def __str__(self) -> str:
        return REDACTED

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Secret) and other._value == self._value

    def __hash__(self) -> int:
        return hash(self._value)

    def __reduce__(self) -> Any:
        raise TypeError("a Secret is not pickled")


def _opt(section: str, help: str, key: str | None = None) -> dict[str, Any]:
    return {"section": section, "help": help, "key": key}


@dataclass(frozen=True)
class Settings:
    """Everything ``faultline serve`` and ``replay --to-kafka`` need to know."""

    # [kafka]
    bootstrap_servers: str = field(default="localhost:9092", metadata=_opt(
        "kafka", "Kafka bootstrap servers, comma-separated host:port"))
    group_id: str = field(default="faultline", metadata=_opt(
        "kafka", "consumer group (and Faust app id) shared by the workers of one deployment"))
    security_protocol: str = field(default="PLAINTEXT", metadata=_opt(
        "kafka", f"one of {', '.join(SECURITY_PROTOCOLS)}"))
    sasl_mechanism: str = field(default="PLAIN", metadata=_opt(
        "kafka", f"one of {', '.join(SASL_MECHANISMS)} (SASL_* protocols)"))
    sasl_username: str | None = field(default=None, metadata=_opt("kafka", "SASL user name"))
    sasl_password: Secret | None = field(default=None, metadata=_opt(
        "kafka", "SASL password (secret)"))
    ssl_cafile: str | None = field(default=None, metadata=_opt(
        "kafka", "CA bundle (PEM) to verify the brokers"))
    ssl_certfile: str | None = field(default=None, metadata=_opt(
        "kafka", "client certificate (PEM), for mutual TLS"))
    ssl_keyfile: str | None = field(default=None, metadata=_opt(
        "kafka", "client private key (PEM), for mutual TLS"))
    ssl_password: Secret | None = field(default=None, metadata=_opt(
        "kafka", "password of the client key (secret)"))
    session_timeout_s: float = field(default=30.0, metadata=_opt(
        "kafka", "consumer session timeout: how long a dead worker keeps its partitions"))
    auto_offset_reset: str = field(default="earliest", metadata=_opt(
        "kafka", "where a partition with no snapshot and no committed offset starts"))
    replication_factor: int = field(default=-1, metadata=_opt(
        "kafka", "replication of the topics faultline creates; -1: the broker's default"))

    # [topics]
    topic_prefix: str = field(default="", metadata=_opt(
        "topics", "prepended to every topic name below", "prefix"))
    topic_step: str = field(default=STEP, metadata=_opt("topics", "step telemetry", "step"))
    topic_ecc: str = field(default=ECC, metadata=_opt("topics", "ECC/XID telemetry", "ecc"))
    topic_nic: str = field(default=NIC, metadata=_opt("topics", "NIC telemetry", "nic"))
    topic_thermal: str = field(default=THERMAL, metadata=_opt(
        "topics", "thermal telemetry", "thermal"))
    topic_isolation: str = field(default=ISOLATION, metadata=_opt(
        "topics", "recommendations (output)", "isolation"))
    topic_escalation: str = field(default=ESCALATION, metadata=_opt(
        "topics", "escalations to a human (output)", "escalation"))
    topic_deadletter: str = field(default="telemetry.deadletter", metadata=_opt(
        "topics", "invalid input, with the reason in headers", "deadletter"))
    topic_findings: str = field(default="faultline.findings", metadata=_opt(
        "topics", "internal: findings and watermarks from stage 1 to stage 2", "findings"))
    topic_state: str = field(default="faultline.state", metadata=_opt(
        "topics", "internal, compacted: snapshots of each partition's state", "state"))

    # [partitions] (used when faultline creates a missing topic)
    partitions_telemetry: int = field(default=8, metadata=_opt(
        "partitions", "each telemetry topic: the unit of scale-out", "telemetry"))
    partitions_findings: int = field(default=1, metadata=_opt(
        "partitions", "findings topic: one correlator per partition, by cluster", "findings"))
    partitions_state: int = field(default=8, metadata=_opt("partitions", "state topic", "state"))
    partitions_alerts: int = field(default=4, metadata=_opt(
        "partitions", "each alert topic", "alerts"))
    partitions_deadletter: int = field(default=1, metadata=_opt(
        "partitions", "dead-letter topic", "deadletter"))

    # [service]
    state_dir: str = field(default="faultline-state", metadata=_opt(
        "service", "working directory of the worker (status file, Faust data)"))
    metrics_port: int = field(default=0, metadata=_opt(
        "service", "port of the Prometheus /metrics endpoint; 0: none"))
    metrics_addr: str = field(default="127.0.0.1", metadata=_opt(
        "service", "address the /metrics endpoint listens on (0.0.0.0: every interface)"))
    audit_file: str | None = field(default=None, metadata=_opt(
        "service", "hash-chained audit file of every alert emitted (faultline audit verify)"))
    audit_key: Secret | None = field(default=None, metadata=_opt(
        "service", "HMAC key of the audit chain (secret; without it: plain SHA-256)"))
    log_debug: tuple[str, ...] = field(default=(), metadata=_opt(
        "service", "libraries allowed to log below INFO, by logger name (e.g. aiokafka)"))
    topology: str | None = field(default=None, metadata=_opt(
        "service", "topology file (faultline format or Slurm topology.conf)"))
    home_cluster: str | None = field(default=None, metadata=_opt(
        "service", "the `cluster` value of the records the topology describes, which records "
        "without `cluster` join too; unset: each partition's first value read, moved to the "
        "cluster a faultline topology names itself when that one is read (set it when one "
        "stream carries several clusters)"))
    cluster_topologies: tuple[str, ...] = field(default=(), metadata=_opt(
        "service", "other clusters' topology files, CLUSTER=FILE each (home_cluster named; the "
        "home's is topology); a cluster without one runs without a topology"))
    snapshot_interval_s: float = field(default=5.0, metadata=_opt(
        "service", "wall seconds between state snapshots of each partition"))
    heartbeat_interval_s: float = field(default=1.0, metadata=_opt(
        "service", "wall seconds between watermarks (and idle checks) of each partition"))
    idle_advance_s: float = field(default=5.0, metadata=_opt(
        "service", "a caught-up partition quiet this long lets event time run on"))
    hold_back_s: float = field(default=0.25, metadata=_opt(
        "service", "the producers' skew: a partition with nothing new reports the event time "
        "the inputs that reached Kafka this long before its fetch had got to, less its own "
        "lateness (the alert latency lever; idle_advance_s still moves its clock)"))
    trace_stages: bool = field(default=False, metadata=_opt(
        "service", "stamp each alert with the wall times of its way through the stages (a "
        "faultline-stages header; bench/kafka_throughput.py --stages)"))
    source_timeout_s: float = field(default=30.0, metadata=_opt(
        "service", "a source silent this long no longer holds the correlator's clock"))
    delivery: str = field(default="batch", metadata=_opt(
        "service", "batch: fetched batches straight to the engine (fast); agents: Faust "
        "agents with stream.take_events"))
    batch_size: int = field(default=2000, metadata=_opt(
        "service", "most messages handed to the engine at once"))
    batch_within_s: float = field(default=0.05, metadata=_opt(
        "service", "longest an agent waits to fill a batch (delivery = agents)"))
    max_snapshot_bytes: int = field(default=16 << 20, metadata=_opt(
        "service", "largest snapshot message (sets the state topic's max.message.bytes)"))
    log_level: str = field(default="info", metadata=_opt(
        "service", f"one of {', '.join(LOG_LEVELS)}"))
    snapshot_key: Secret | None = field(default=None, metadata=_opt(
        "service", "HMAC key of the state snapshots (secret): a worker then refuses any "
        "snapshot it did not sign; unset: unsigned snapshots"))
    snapshot_key_previous: Secret | None = field(default=None, metadata=_opt(
        "service", "the key before snapshot_key, still accepted on restore while rotating"))

    # [recovery]: the jobs' checkpoint settings, for the recovery estimate on every alert
    checkpoint_interval_s: float = field(default=Thresholds.checkpoint_interval_s,
                                         metadata=_opt(
        "recovery", "the jobs' checkpoint interval: a restart redoes half of it on average"))
    restart_s: float = field(default=Thresholds.restart_s, metadata=_opt(
        "recovery", "time to restart a job from a checkpoint (reschedule, load, warm up)"))

    # [thresholds]: detection tunables, detector.thresholds.Thresholds field names
    thresholds: Mapping[str, float] = field(default_factory=dict, metadata=_opt(
        "thresholds", "overrides of detection thresholds, by the field names of "
        "detector/thresholds.py (e.g. hot_delta_c = 10.0)"))

    # -- derived -------------------------------------------------------------------------

    def topic(self, contract_name: str) -> str:
        """The real topic name of a contract topic (``telemetry.step`` ...), prefix applied."""
        return self.topic_prefix + self.topic_names()[contract_name]

    def topic_names(self) -> dict[str, str]:
        """Contract or internal name -> configured name (without the prefix)."""
        return {STEP: self.topic_step, ECC: self.topic_ecc, NIC: self.topic_nic,
                THERMAL: self.topic_thermal, ISOLATION: self.topic_isolation,
                ESCALATION: self.topic_escalation, "telemetry.deadletter": self.topic_deadletter,
                "faultline.findings": self.topic_findings, "faultline.state": self.topic_state}

    def engine_thresholds(self) -> Thresholds:
        return Thresholds().with_overrides({
            **dict(self.thresholds), "checkpoint_interval_s": self.checkpoint_interval_s,
            "restart_s": self.restart_s})

    def kafka_config(self) -> dict[str, Any]:
        """Connection settings for confluent-kafka (librdkafka names); secrets revealed."""
        conf: dict[str, Any] = {"bootstrap.servers": self.bootstrap_servers,
                                "security.protocol": self.security_protocol}
        if self.security_protocol.startswith("SASL"):
            conf["sasl.mechanism"] = self.sasl_mechanism
            if self.sasl_username is not None:
                conf["sasl.username"] = self.sasl_username
            if self.sasl_password is not None:
                conf["sasl.password"] = self.sasl_password.reveal()
        conf["logger"] = logging.getLogger("librdkafka")  # through faultline's log filters
        if self.security_protocol.endswith("SSL"):
            for key, value in (("ssl.ca.location", self.ssl_cafile),
                               ("ssl.certificate.location", self.ssl_certfile),
                               ("ssl.key.location", self.ssl_keyfile)):
                if value:
                    conf[key] = value
            if self.ssl_password is not None:
                conf["ssl.key.password"] = self.ssl_password.reveal()
        return conf

    def secrets(self) -> list[str]:
        """Every secret value set, for the log filter that redacts them."""
        return [v.reveal() for f in fields(self) if isinstance(v := getattr(self, f.name), Secret)]

    # -- loading -------------------------------------------------------------------------

    @classmethod
    def load(cls, path: str | os.PathLike[str] | None = None,
             env: Mapping[str, str] | None = None,
             overrides: Mapping[str, Any] | None = None) -> Settings:
        """Defaults, then the TOML file, then ``FAULTLINE_*`` variables, then ``overrides``."""
        env = os.environ if env is None else env
        values: dict[str, Any] = {}
        sources: dict[str, str] = {}
        path = path or env.get(CONFIG_ENV) or None
        if path:
            for name, value in _read_toml(Path(path)).items():
                values[name] = value
                sources[name] = f"file {path}"
        specs = {f.name: f for f in fields(cls)}
        for name, f in specs.items():
            var = env_var(name)
            if name != "thresholds" and var in env:
                values[name] = _coerce(f, env[var], f"env {var}", text=True)
                sources[name] = f"env {var}"
        for name, value in (overrides or {}).items():
            if value is not None:
                values[name] = _coerce(specs[name], value, f"--{name.replace('_', '-')}")
                sources[name] = "command line"
        settings = cls(**values)
        object.__setattr__(settings, "_sources", sources)
        settings._validate()
        return settings

    def source_of(self, name: str) -> str:
        return getattr(self, "_sources", {}).get(name, "default")

    def _validate(self) -> None:
        def bad(name: str, why: str) -> ValueError:
            return ValueError(f"setting {name} ({self.source_of(name)}): {why}")

        for name, allowed in (("security_protocol", SECURITY_PROTOCOLS),
                              ("sasl_mechanism", SASL_MECHANISMS),
                              ("auto_offset_reset", OFFSET_RESETS), ("log_level", LOG_LEVELS),
                              ("delivery", DELIVERIES)):
            if getattr(self, name) not in allowed:
                raise bad(name, f"must be one of {', '.join(allowed)}, got "
                          f"{getattr(self, name)!r}")
        for f in fields(self):
            v = getattr(self, f.name)
            if f.name.startswith("partitions_") and v < 1:
                raise bad(f.name, f"must be >= 1, got {v}")
            if f.name.endswith("_s") and not v > 0:
                raise bad(f.name, f"must be > 0, got {v}")
            if f.name.startswith("topic_") and f.name != "topic_prefix" and not v:
                raise bad(f.name, "must not be empty")
        if self.batch_size < 1:
            raise bad("batch_size", f"must be >= 1, got {self.batch_size}")
        if not 0 <= self.metrics_port < 65536:
            raise bad("metrics_port", f"must be a port number or 0, got {self.metrics_port}")
        if not self.bootstrap_servers.strip():
            raise bad("bootstrap_servers", "must name at least one host:port")
        if self.security_protocol.startswith("SASL") and (
                self.sasl_username is None or self.sasl_password is None):
            raise bad("security_protocol", "SASL needs sasl_username and sasl_password")
        if self.home_cluster is not None:
            # (checked here, not first at a partition's assignment: there a bad one was taken
            # for a malformed snapshot, each discarded, before the partition failed; review29)
            from detector.pipeline.clusters import check_home
            try:
                check_home(self.home_cluster)
            except ValueError as exc:
                raise bad("home_cluster", str(exc)) from None
        if self.snapshot_key_previous is not None and self.snapshot_key is None:
            raise bad("snapshot_key_previous", "is for a rotation: set snapshot_key too")
        try:
            self.engine_thresholds()
        except (ValueError, TypeError) as exc:
            raise bad("thresholds", str(exc)) from None

    def state_codec(self) -> StateCodec:
        """How this worker writes and reads its snapshots (keys and size limit)."""
        from detector.statecodec import StateCodec

        def raw(secret: Secret | None) -> bytes | None:
            return secret.reveal().encode() if secret is not None else None

        return StateCodec(raw(self.snapshot_key), raw(self.snapshot_key_previous),
                          self.max_snapshot_bytes)

    # -- showing -------------------------------------------------------------------------

    def to_toml(self) -> str:
        """The effective configuration as TOML, secrets redacted, each value's source noted."""
        lines = ["# faultline effective configuration (secrets redacted)"]
        section = None
        for f in fields(self):
            meta = f.metadata
            if meta["section"] != section:
                section = meta["section"]
                lines += ["", f"[{section}]"]
            value = getattr(self, f.name)
            key = meta["key"] or f.name
            if f.name == "thresholds":
                for k, v in sorted(dict(value).items()):
                    lines.append(f"{k} = {toml_value(v)}  # {self.source_of(f.name)}")
                continue
            source = self.source_of(f.name)
            note = (f"# {source}" if source.startswith("env ")
                    else f"# {source}; env {env_var(f.name)}")
            if value is None:
                lines.append(f"# {key} = (unset)  {note}")
            else:
                lines.append(f"{key} = {toml_value(value)}  {note}")
        return "\n".join(lines) + "\n"


def env_var(name: str) -> str:
    return ENV_PREFIX + name.upper()


def settings_help() -> str:
    """Every setting with its file place, environment variable and default (for --help)."""
    rows = []
    for f in fields(Settings):
        meta = f.metadata
        if f.name == "thresholds":  # a table of its own, not one value
            rows.append(("[thresholds] NAME", "TOML only", "none", meta["help"]))
            continue
        default = f.default if f.default is not dataclasses.MISSING else None
        rows.append((f"[{meta['section']}] {meta['key'] or f.name}", env_var(f.name),
                     repr(default), meta["help"]))
    place = max(len(r[0]) for r in rows)
    env = max(len(r[1]) for r in rows)
    return "\n".join(["settings (TOML file [section] key, environment variable, default):"] + [
        f"  {p:<{place}} {e:<{env}} default {d}: {h}" for p, e, d, h in rows])


def _read_toml(path: Path) -> dict[str, Any]:
    try:
        doc = tomllib.loads(path.read_text())
    except OSError as exc:
        raise ValueError(f"config file {path}: {exc.strerror}") from None
    except tomllib.TOMLDecodeError as exc:
        raise ValueError(f"config file {path}: {exc}") from None
    by_place = {(f.metadata["section"], f.metadata["key"] or f.name): f for f in fields(Settings)}
    values: dict[str, Any] = {}
    for section, table in doc.items():
        if not isinstance(table, dict):
            raise ValueError(f"config file {path}: {section!r} must be a [section]")
        if section == "thresholds":
            values["thresholds"] = dict(table)
            continue
        if section == "pager":
            continue  # read by detector.pager.config
        for key, raw in table.items():
            f = by_place.get((section, key))
            if f is None:
                raise ValueError(f"config file {path}: unknown setting [{section}] {key}")
            values[f.name] = _coerce(f, raw, f"[{section}] {key} in {path}")
    return values


def kind_of(f: dataclasses.Field[Any]) -> str:
    """The value kind of a settings field, from its annotation, for :func:`coerce`."""
    t = str(f.type)
    if "Secret" in t:
        return "secret"
    if "tuple" in t:
        return "list"
    if t.startswith("bool"):
        return "bool"
    for kind in ("float", "int", "str"):
        if kind in t:
            return kind
    return "other"


def coerce(kind: str, value: Any, where: str, *, text: bool = False,
           optional: bool = False) -> Any:
    """``value`` (from TOML or a flag, or a string from the environment when ``text``) as
    ``kind``: secret, urls, list, bool, int, float, str (or other: as is).  An empty
    variable unsets an ``optional`` setting.  Errors name the place and never show a secret.
    """
    if text and optional and value == "" and kind in ("str", "secret"):
        return None
    try:
        if kind == "secret":
            return value if isinstance(value, Secret) else Secret(str(value))
        if kind in ("urls", "list"):
            if text:
                return tuple(x.strip() for x in str(value).split(",") if x.strip())
            if isinstance(value, str) and kind == "urls":
                return (value,)
            if not isinstance(value, list | tuple) or not all(isinstance(x, str) for x in value):
                raise ValueError
            return tuple(value)
        if kind == "bool":
            if text:
                return {"true": True, "1": True, "false": False, "0": False}[str(value).lower()]
            if not isinstance(value, bool):
                raise ValueError
            return value
        if kind == "int":
            if isinstance(value, bool) or (isinstance(value, float) and not value.is_integer()):
                raise ValueError
            return int(value)
        if kind == "float":
            if isinstance(value, bool):
                raise ValueError
            return float(value)
        if kind == "str" and not isinstance(value, str):
            raise ValueError
        return value
    except (ValueError, TypeError, KeyError):
        shown = REDACTED if kind == "secret" else repr(value)
        what = {"urls": "a URL or a list of URLs", "list": "a list of strings"}.get(kind, kind)
        raise ValueError(f"{where}: must be {what}, got {shown}") from None


def redact_url(url: str) -> str:
    """A URL with its user part and query hidden (a token may ride in either)."""
    head, _, query = url.partition("?")
    scheme, sep, rest = head.partition("://")
    if "@" in rest.split("/", 1)[0]:
        rest = REDACTED + "@" + rest.split("@", 1)[1]
    return f"{scheme}{sep}{rest}" + (f"?{REDACTED}" if query else "")


def _coerce(f: dataclasses.Field[Any], value: Any, where: str, *, text: bool = False) -> Any:
    return coerce(kind_of(f), value, f"{where}: {f.name}", text=text,
                  optional="None" in str(f.type))


def toml_value(v: Any) -> str:
    """A value as TOML, secrets redacted (used by ``faultline config`` and the pager's)."""
    if isinstance(v, Secret):
        return f'"{REDACTED}"'
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float)):
        return repr(v)
    if isinstance(v, (tuple, list, frozenset)):
        return "[" + ", ".join(toml_value(x) for x in v) + "]"
    if isinstance(v, Mapping):
        return "{ " + ", ".join(f'"{k}" = {toml_value(x)}' for k, x in v.items()) + " }"
    s = str(v).replace("\\", "\\\\").replace('"', '\\"')
    return f'"{s}"'
