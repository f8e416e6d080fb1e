"""The pager's configuration: the ``[pager]`` section of the settings file, ``FAULTLINE_PAGER_*``.

Same conventions as :mod:`detector.settings`: defaults, then the TOML file,
then environment variables, then command-line flags; secrets are
:class:`~detector.settings.Secret` and never printed.  The Kafka connection
and topic names are the service's own settings (``[kafka]``, ``[topics]``).

Places and variables:

- ``[pager] KEY`` — ``FAULTLINE_PAGER_KEY`` (``group_id``, ``metrics_port``, ...);
- ``[pager.sinks.NAME] KEY`` — ``FAULTLINE_PAGER_SINKS_NAME_KEY`` (``NAME`` in
  capitals, ``-`` as ``_``); a sink can be declared by variables alone, and one
  named ``alertmanager``, ``pagerduty`` or ``webhook`` needs no ``type``;
- ``[pager.sinks.NAME.storm]``, ``[pager.severity]`` and ``[[pager.routes]]``
  are TOML only.

>>> cfg = PagerConfig.from_dict({}, env={
...     "FAULTLINE_PAGER_SINKS_PAGERDUTY_ROUTING_KEY": "R" * 32,
...     "FAULTLINE_PAGER_SINKS_ALERTMANAGER_URL": "http://127.0.0.1:9093"})
>>> sorted(cfg.sinks), cfg.sinks["pagerduty"].routing_key
(['alertmanager', 'pagerduty'], Secret('**********'))
>>> cfg.sinks["pagerduty"].storm.enabled, cfg.sinks["alertmanager"].storm.enabled
(True, False)
>>> "R" * 32 in cfg.to_toml()
False
"""

from __future__ import annotations

import os
import tomllib
import urllib.parse
from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any

from detector.alerts import CAUSES, ESCALATION, ISOLATION, KINDS
from detector.settings import Secret, Settings, coerce, kind_of, redact_url, toml_value

PAGER_ENV = "FAULTLINE_PAGER_"
SINK_TYPES = ("alertmanager", "pagerduty", "webhook")
SEVERITIES = ("critical", "error", "warning", "info")  # PagerDuty's, most severe first
TOPIC_NAMES = {"isolation": ISOLATION, "escalation": ESCALATION,
               ISOLATION: ISOLATION, ESCALATION: ESCALATION}
SHORT_TOPIC = {ISOLATION: "isolation", ESCALATION: "escalation"}
PAGERDUTY_URL = "https://events.pagerduty.com/v2/enqueue"
GROUP_FIELDS = ("cluster", "tenant", "topic", "kind", "cause", "level", "switch", "domain",
                "node", "job")
DEFAULT_SEVERITY = {"escalation": "critical", "isolation": "warning"}


@dataclass(frozen=True)
class StormConfig:
    """Storm control of one sink: group alerts into one notification, then rate-limit."""

    enabled: bool = True
    # Alerts alike in these fields within the window are one notification.
    # "switch" is the scope's switch, or the leaf of the scope's node in the topology.
    group_by: tuple[str, ...] = ("cluster", "topic", "kind", "cause")
    # A firing alert waits this long before it is grouped; its resolve inside the hold drops
    # both (a page the detector took back seconds after it fired wakes nobody).  Hardware
    # events' pages (detector.pager.hold.held) are never held.
    hold_s: float = 20.0
    group_wait_s: float = 10.0       # the first alert of a group waits this long for others
    group_interval_s: float = 300.0  # later alerts of a group go out at most this often
    burst: int = 10                  # token bucket: notifications at once ...
    per_minute: float = 2.0          # ... and refilled at this rate
    max_listed: int = 20             # alerts named in a summary; the rest are counted


@dataclass(frozen=True)
class SinkConfig:
    """One destination: an Alertmanager, a PagerDuty service, or a JSON webhook."""

    name: str
    type: str
    urls: tuple[str, ...] = field(default=(), repr=False)  # a token may ride in a URL
    routing_key: Secret | None = None       # PagerDuty integration key (secret)
    bearer_token: Secret | None = None      # webhook: Authorization: Bearer ... (secret)
    headers: Mapping[str, str] = field(default_factory=dict, repr=False)  # webhook: extra
    source: str | None = None               # PagerDuty payload.source; default: the scope's host
    timeout_s: float = 10.0
    # 408, 429, 5xx, timeouts, refused connections: retried this long (24 h), then dead letter
    retry_for_s: float = 86400.0
    backoff_initial_s: float = 1.0
    backoff_max_s: float = 30.0
    retry_after_max_s: float = 900.0        # a Retry-After is honoured up to this
    resend_interval_s: float = 60.0         # Alertmanager: re-send active alerts this often
    alert_ttl_s: float = 240.0              # Alertmanager: endsAt of a firing alert, from now
    evidence_max_bytes: int = 4096          # evidence as an Alertmanager annotation
    details_max_bytes: int = 65536          # PagerDuty custom_details / webhook body evidence
    storm: StormConfig = field(default_factory=StormConfig)


# The value kind of each sink and storm setting, read from the fields' types like every
# other setting's (detector.settings.coerce): one coercion engine, and a field added to
# SinkConfig or StormConfig is settable without a second list to keep in step.
_SINK_SCALARS: dict[str, str] = {
    ("url" if f.name == "urls" else f.name): ("urls" if f.name == "urls" else kind_of(f))
    for f in fields(SinkConfig) if f.name not in ("name", "headers", "storm")}
_STORM_KEYS: dict[str, str] = {f.name: kind_of(f) for f in fields(StormConfig)}


@dataclass(frozen=True)
class Route:
    """Alerts matching every given field go to ``sinks``; an absent field matches anything."""

    sinks: tuple[str, ...]
    topics: frozenset[str] | None = None      # contract names: alerts.isolation / .escalation
    kinds: frozenset[str] | None = None
    causes: frozenset[str] | None = None
    severities: frozenset[str] | None = None
    tenants: frozenset[str] | None = None
    clusters: frozenset[str] | None = None
    statuses: frozenset[str] | None = None
    continue_: bool = False                   # go on matching the routes after this one


_ROUTE_KEYS = {"topic": "topics", "kind": "kinds", "cause": "causes", "severity": "severities",
               "tenant": "tenants", "cluster": "clusters", "status": "statuses"}


@dataclass(frozen=True)
class PagerConfig:
    """Everything ``faultline pager`` needs beyond the Kafka connection."""

    group_id: str = "faultline-pager"
    metrics_port: int = 0
    metrics_addr: str = "127.0.0.1"               # 0.0.0.0: every interface
    audit_file: str | None = None                 # hash-chained record of every delivery
    audit_key: Secret | None = None               # HMAC key of that chain (secret)
    deadletter_topic: str = "alerts.deadletter"   # prefixed like every topic
    deadletter_file: str | None = None            # JSON lines instead of the topic
    state_dir: str | None = None                  # default: the service's state_dir
    commit_interval_s: float = 1.0
    drain_timeout_s: float = 10.0                 # on shutdown, wait this long for deliveries
    max_in_flight: int = 10000                    # pause consuming with this many undelivered
    default_sinks: tuple[str, ...] | None = None  # when no route matches; None: every sink
    severity: Mapping[str, str] = field(default_factory=lambda: dict(DEFAULT_SEVERITY))
    sinks: Mapping[str, SinkConfig] = field(default_factory=dict)
    routes: tuple[Route, ...] = ()

    # -- building ------------------------------------------------------------------------

    @classmethod
    def from_dict(cls, table: Mapping[str, Any], env: Mapping[str, str] | None = None,
                  overrides: Mapping[str, Any] | None = None, where: str = "[pager]",
                  *, validate: bool = True) -> PagerConfig:
        """From a parsed ``[pager]`` table, then ``FAULTLINE_PAGER_*`` variables, then flags.

        ``validate=False`` for showing a configuration that is not (yet) enough to run.
        """
        env = os.environ if env is None else env
        table = dict(table)
        values: dict[str, Any] = {}
        sources: dict[str, str] = {}
        in_file = where.split(" in ", 1)[1] if " in " in where else "the settings"
        place = f"file {in_file}"
        scalars = {f.name: f for f in fields(cls)
                   if f.name not in ("severity", "sinks", "routes")}
        sink_tables: dict[str, dict[str, Any]] = {}
        for key, raw in table.items():
            if key == "sinks":
                if not isinstance(raw, dict):
                    raise ValueError(f"{where} sinks must be a table of [pager.sinks.NAME]")
                sink_tables = {str(n): dict(t) for n, t in raw.items()}
            elif key == "routes":
                continue
            elif key == "severity":
                values["severity"] = _severity(raw, f"{where} severity")
                sources["severity"] = place
            elif key in scalars:
                values[key] = coerce(kind_of(scalars[key]), raw, f"{where} {key}")
                sources[key] = place
            else:
                raise ValueError(f"unknown setting {where} {key}")
        for name, f in scalars.items():
            var = PAGER_ENV + name.upper()
            if var in env:
                values[name] = coerce(kind_of(f), env[var], f"env {var}", text=True,
                                      optional="None" in str(f.type))
                sources[name] = f"env {var}"
        for name, value in (overrides or {}).items():
            if value is not None:
                values[name] = coerce(kind_of(scalars[name]), value, f"--{name.replace('_', '-')}")
                sources[name] = "command line"
        sinks = _sinks(sink_tables, env, where, sources, place)
        routes = tuple(_route(r, f"{where} routes[{i}]") for i, r in
                       enumerate(_list_of_tables(table.get("routes", []), f"{where} routes")))
        cfg = cls(**values, sinks=sinks, routes=routes)
        object.__setattr__(cfg, "_sources", sources)
        if validate:
            cfg.validate()
        return cfg

    def source_of(self, name: str) -> str:
        """Where a value came from: default, file ..., env ..., or command line.

        Sink settings are named ``sinks.NAME.KEY``; routes are from the file (TOML only).
        """
        return getattr(self, "_sources", {}).get(name, "default")

    def secrets(self) -> list[str]:
        """Every secret value (routing keys, tokens, credentials and queries in URLs), for
        the log filter that redacts them."""
        out = [self.audit_key.reveal()] if self.audit_key is not None else []
        for sc in self.sinks.values():
            out += [s.reveal() for s in (sc.routing_key, sc.bearer_token) if s is not None]
            out += [v for k, v in sc.headers.items() if k.lower() in ("authorization",
                                                                      "x-api-key")]
            for url in sc.urls:
                parts = urllib.parse.urlsplit(url)
                out += [p for p in (parts.password, parts.query) if p]
                out += [v for _, v in urllib.parse.parse_qsl(parts.query) if v]
        return out

    def validate(self) -> None:
        if not self.sinks:
            raise ValueError("the pager has no sinks: configure [pager.sinks.NAME] or e.g. "
                             "FAULTLINE_PAGER_SINKS_ALERTMANAGER_URL / "
                             "FAULTLINE_PAGER_SINKS_PAGERDUTY_ROUTING_KEY")
        for i, r in enumerate(self.routes):
            for s in r.sinks:
                if s not in self.sinks:
                    raise ValueError(f"[pager] routes[{i}]: unknown sink {s!r} "
                                     f"(sinks: {', '.join(sorted(self.sinks))})")
        for s in self.default_sinks or ():
            if s not in self.sinks:
                raise ValueError(f"[pager] default_sinks: unknown sink {s!r}")
        if not 0 <= self.metrics_port < 65536:
            raise ValueError(f"[pager] metrics_port must be a port or 0, got {self.metrics_port}")
        if not self.deadletter_topic and not self.deadletter_file:
            raise ValueError("[pager] needs deadletter_topic or deadletter_file")
        for name in ("commit_interval_s", "drain_timeout_s"):
            if not getattr(self, name) > 0:
                raise ValueError(f"[pager] {name} must be > 0")
        if self.max_in_flight < 1:
            raise ValueError("[pager] max_in_flight must be >= 1")

    # -- showing -------------------------------------------------------------------------

    def to_toml(self) -> str:
        """The effective pager configuration as TOML, secrets redacted, each value's source
        noted (default, the file, a variable, or the command line)."""
        out = ["[pager]"]
        for f in fields(self):
            if f.name in ("severity", "sinks", "routes"):
                continue
            v = getattr(self, f.name)
            src = self.source_of(f.name)
            note = f"# {src}" if src.startswith("env ") else (
                f"# {src}; env {PAGER_ENV}{f.name.upper()}")
            out.append(f"# {f.name} = (unset)  {note}" if v is None
                       else f"{f.name} = {toml_value(v)}  {note}")
        if not self.sinks:
            out.append("# no sinks: add [pager.sinks.NAME] or e.g. "
                       "FAULTLINE_PAGER_SINKS_ALERTMANAGER_URL")
        out += ["", f"[pager.severity]  # {self.source_of('severity')}"]
        out += [f"{k} = {toml_value(v)}" for k, v in self.severity.items()]
        for s in self.sinks.values():
            out += ["", f"[pager.sinks.{s.name}]"]
            for f in fields(s):
                if f.name in ("name", "storm"):
                    continue
                v = getattr(s, f.name)
                key = "url" if f.name == "urls" else f.name
                if v is None or v == {} or v == ():
                    continue
                if f.name == "headers":  # may carry credentials: names only
                    v = {k: Secret(x) for k, x in v.items()}
                if f.name == "urls":  # a token may ride in the query or the user part
                    v = tuple(redact_url(u) for u in v)
                src = self.source_of(f"sinks.{s.name}.{key}")
                if src == "default" and f.name == "type":
                    src = "default: the sink's name"
                out.append(f"{key} = {toml_value(v)}  # {src}")
            out += ["", f"[pager.sinks.{s.name}.storm]  "
                    f"# {self.source_of(f'sinks.{s.name}.storm')}"]
            out += [f"{f.name} = {toml_value(getattr(s.storm, f.name))}" for f in fields(s.storm)]
        for r in self.routes:
            out += ["", "[[pager.routes]]"]
            for key, attr in _ROUTE_KEYS.items():
                v = getattr(r, attr)
                if v is not None:
                    shown = sorted(SHORT_TOPIC.get(x, x) for x in v)
                    out.append(f"{key} = {toml_value(shown)}")
            out.append(f"sinks = {toml_value(list(r.sinks))}")
            if r.continue_:
                out.append("continue = true")
        return "\n".join(out) + "\n"


# -- loading with the service's settings -----------------------------------------------


def load(path: str | os.PathLike[str] | None = None, env: Mapping[str, str] | None = None,
         settings_overrides: Mapping[str, Any] | None = None,
         pager_overrides: Mapping[str, Any] | None = None, *, validate: bool = True
         ) -> tuple[Settings, PagerConfig]:
    """The service settings (Kafka, topics) and the pager's, from one file and the environment.

    ``validate=False`` (for ``faultline config``): a pager with no sinks yet is shown, not
    refused."""
    env = os.environ if env is None else env
    path = path or env.get("FAULTLINE_CONFIG") or None
    doc: dict[str, Any] = {}
    if path:
        try:
            doc = tomllib.loads(Path(path).read_text())
        except OSError as exc:
            raise ValueError(f"config file {path}: {exc.strerror}") from None
        except tomllib.TOMLDecodeError as exc:
            raise ValueError(f"config file {path}: {exc}") from None
    table = doc.get("pager", {})
    if not isinstance(table, dict):
        raise ValueError(f"config file {path}: 'pager' must be a [section]")
    settings = _service_settings(path, doc, env, settings_overrides or {})
    pager = PagerConfig.from_dict(table, env, pager_overrides,
                                  where=f"[pager] in {path}" if path else "[pager]",
                                  validate=validate)
    if pager.state_dir is None:
        sources = {**getattr(pager, "_sources", {}),
                   "state_dir": f"the service's state_dir ({settings.source_of('state_dir')})"}
        pager = replace(pager, state_dir=settings.state_dir)
        object.__setattr__(pager, "_sources", sources)
    return settings, pager


def _service_settings(path: str | os.PathLike[str] | None, doc: dict[str, Any],
                      env: Mapping[str, str], overrides: Mapping[str, Any]) -> Settings:
    """The service settings of the same file (Settings skips the [pager] section)."""
    return Settings.load(path, env=env, overrides=overrides)


# -- pieces ------------------------------------------------------------------------------


def _sinks(tables: dict[str, dict[str, Any]], env: Mapping[str, str], where: str,
           sources: dict[str, str] | None = None, place: str = "file"
           ) -> dict[str, SinkConfig]:
    raw: dict[str, dict[str, Any]] = {n: dict(t) for n, t in tables.items()}
    from_env: dict[str, dict[str, str]] = {}
    prefix = PAGER_ENV + "SINKS_"
    known = {_env_name(n): n for n in raw}
    for var, value in env.items():
        if not var.startswith(prefix):
            continue
        rest = var[len(prefix):]
        for key in sorted(_SINK_SCALARS, key=len, reverse=True):
            suffix = "_" + key.upper()
            if rest.endswith(suffix) and len(rest) > len(suffix):
                env_name = rest[:-len(suffix)]
                name = known.get(env_name, env_name.lower())
                from_env.setdefault(name, {})[key] = value
                break
        else:
            raise ValueError(f"env {var}: unknown sink setting (keys: "
                             f"{', '.join(sorted(_SINK_SCALARS))})")
    out: dict[str, SinkConfig] = {}
    for name in sorted(set(raw) | set(from_env)):
        out[name] = _sink(name, raw.get(name, {}), from_env.get(name, {}),
                          f"{where} sinks.{name}")
        if sources is not None:
            for key in raw.get(name, {}):
                sources[f"sinks.{name}.{key}"] = place
            for key in from_env.get(name, {}):
                sources[f"sinks.{name}.{key}"] = (
                    f"env {PAGER_ENV}SINKS_{_env_name(name)}_{key.upper()}")
    return out


def _env_name(name: str) -> str:
    return name.upper().replace("-", "_")


def _sink(name: str, table: dict[str, Any], env: dict[str, str], where: str) -> SinkConfig:
    values: dict[str, Any] = {}
    storm_table: dict[str, Any] | None = None
    for key, raw in table.items():
        if key == "storm":
            if not isinstance(raw, dict):
                raise ValueError(f"{where}.storm must be a table")
            storm_table = dict(raw)
        elif key == "headers":
            if not isinstance(raw, dict) or not all(isinstance(v, str) for v in raw.values()):
                raise ValueError(f"{where} headers must be a table of strings")
            values["headers"] = dict(raw)
        elif key in _SINK_SCALARS:
            values[key] = coerce(_SINK_SCALARS[key], raw, f"{where} {key}")
        else:
            raise ValueError(f"unknown setting {where} {key}")
    for key, text in env.items():
        var = f"{PAGER_ENV}SINKS_{_env_name(name)}_{key.upper()}"
        values[key] = coerce(_SINK_SCALARS[key], text, f"env {var}", text=True)
    kind = values.pop("type", None) or (name if name in SINK_TYPES else None)
    if kind not in SINK_TYPES:
        raise ValueError(f"{where}: type must be one of {', '.join(SINK_TYPES)}, got {kind!r}")
    urls = values.pop("url", ())
    if kind == "pagerduty" and not urls:
        urls = (PAGERDUTY_URL,)
    if not urls:
        raise ValueError(f"{where}: a {kind} sink needs url")
    for u in urls:
        if not u.startswith(("http://", "https://")):
            raise ValueError(f"{where}: url must be http:// or https://, got {u!r}")
    if kind == "pagerduty" and (values.get("routing_key") is None
                                or not values["routing_key"].reveal()):
        raise ValueError(f"{where}: a pagerduty sink needs routing_key (secret; e.g. env "
                         f"{PAGER_ENV}SINKS_{_env_name(name)}_ROUTING_KEY)")
    if kind == "alertmanager" and storm_table and storm_table.get("enabled", True):
        raise ValueError(f"{where}.storm: Alertmanager groups and throttles by itself "
                         f"(group_by, group_wait, group_interval in its route); remove it")
    storm = _storm(storm_table or {}, f"{where}.storm",
                   enabled_default=kind != "alertmanager")
    cfg = SinkConfig(name=name, type=kind, urls=tuple(urls), storm=storm, **values)
    for f in ("timeout_s", "backoff_initial_s", "backoff_max_s", "resend_interval_s",
              "alert_ttl_s", "retry_for_s", "retry_after_max_s"):
        if not getattr(cfg, f) > 0:
            raise ValueError(f"{where} {f} must be > 0")
    for f in ("evidence_max_bytes", "details_max_bytes"):
        if getattr(cfg, f) < 1:
            raise ValueError(f"{where} {f} must be >= 1")
    if kind == "alertmanager" and not cfg.resend_interval_s < cfg.alert_ttl_s:
        raise ValueError(f"{where}: resend_interval_s must be below alert_ttl_s, or active "
                         f"alerts expire between re-sends")
    if cfg.details_max_bytes > 500_000:
        raise ValueError(f"{where} details_max_bytes must stay under PagerDuty's 512 KB")
    return cfg


def _storm(table: dict[str, Any], where: str, *, enabled_default: bool) -> StormConfig:
    values: dict[str, Any] = {"enabled": enabled_default}
    for key, raw in table.items():
        if key not in _STORM_KEYS:
            raise ValueError(f"unknown setting {where} {key}")
        values[key] = coerce(_STORM_KEYS[key], raw, f"{where} {key}")
    if "group_by" in values:
        bad = [g for g in values["group_by"] if g not in GROUP_FIELDS]
        if bad:
            raise ValueError(f"{where} group_by: unknown field {bad[0]!r} "
                             f"(fields: {', '.join(GROUP_FIELDS)})")
        values["group_by"] = tuple(values["group_by"])
    cfg = StormConfig(**values)
    if cfg.group_wait_s < 0 or cfg.group_interval_s < 0 or not 0 <= cfg.hold_s <= 3600:
        raise ValueError(f"{where}: group_wait_s and group_interval_s must be >= 0, "
                         f"hold_s between 0 and 3600")
    if cfg.burst < 1 or not cfg.per_minute > 0 or cfg.max_listed < 1:
        raise ValueError(f"{where}: burst and max_listed must be >= 1, per_minute > 0")
    return cfg


def _route(table: dict[str, Any], where: str) -> Route:
    values: dict[str, Any] = {}
    allowed = {"topics": set(TOPIC_NAMES), "kinds": set(KINDS), "causes": set(CAUSES),
               "severities": set(SEVERITIES), "statuses": {"firing", "resolved"}}
    for key, raw in table.items():
        if key == "sinks":
            values["sinks"] = tuple(coerce("list", raw, f"{where} sinks"))
        elif key == "continue":
            values["continue_"] = coerce("bool", raw, f"{where} continue")
        elif key in _ROUTE_KEYS:
            attr = _ROUTE_KEYS[key]
            items = [raw] if isinstance(raw, str) else coerce("list", raw, f"{where} {key}")
            ok = allowed.get(attr)
            for x in items:
                if ok is not None and x not in ok:
                    raise ValueError(f"{where} {key}: {x!r} is not one of "
                                     f"{', '.join(sorted(ok))}")
            if attr == "topics":
                items = [TOPIC_NAMES[x] for x in items]
            values[attr] = frozenset(items)
        else:
            raise ValueError(f"unknown setting {where} {key}")
    if not values.get("sinks"):
        raise ValueError(f"{where}: a route needs sinks = [...]")
    return Route(**values)


def _severity(raw: Any, where: str) -> dict[str, str]:
    if not isinstance(raw, dict):
        raise ValueError(f"{where} must be a table")
    out = dict(DEFAULT_SEVERITY)
    for key, value in raw.items():
        if key not in ("isolation", "escalation", *KINDS):
            raise ValueError(f"{where}: {key!r} is not isolation, escalation or a kind")
        if value not in SEVERITIES:
            raise ValueError(f"{where} {key}: must be one of {', '.join(SEVERITIES)}, "
                             f"got {value!r}")
        out[key] = value
    return out


def _list_of_tables(raw: Any, where: str) -> list[dict[str, Any]]:
    if not isinstance(raw, list) or not all(isinstance(t, dict) for t in raw):
        raise ValueError(f"{where} must be [[pager.routes]] tables")
    return raw
