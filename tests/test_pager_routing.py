"""Pager configuration and routing: escalations page a human, recommendations make tickets."""

from __future__ import annotations

from pathlib import Path

import pytest

from detector.alerts import ESCALATION, ISOLATION
from detector.pager import config as pager_config
from detector.pager.config import PagerConfig
from detector.pager.routing import Router

KEY = "0123456789abcdef0123456789abcdef"

CONFIG = f"""
[kafka]
bootstrap_servers = "broker-1:9092"

[topics]
prefix = "prod."

[pager]
group_id = "pager-prod"
metrics_port = 9465

[pager.severity]
sdc = "critical"

[pager.sinks.oncall]
type = "pagerduty"
routing_key = "{KEY}"

[pager.sinks.oncall.storm]
group_by = ["cluster", "switch", "kind"]
burst = 3

[pager.sinks.tickets]
type = "webhook"
url = "http://tickets.example:8080/api?token=t0ps3cret"
bearer_token = "b3arer"

[pager.sinks.am]
type = "alertmanager"
url = ["http://am-1:9093", "http://am-2:9093"]

[[pager.routes]]
topic = "escalation"
sinks = ["oncall", "am"]

[[pager.routes]]
topic = "isolation"
kind = "sdc"
sinks = ["oncall"]
continue = true

[[pager.routes]]
topic = "isolation"
tenant = ["tenant-a", "tenant-b"]
sinks = ["tickets", "am"]
"""


@pytest.fixture
def config_file(tmp_path: Path) -> Path:
    path = tmp_path / "faultline.toml"
    path.write_text(CONFIG)
    return path


def test_one_file_configures_kafka_topics_and_the_pager(config_file: Path) -> None:
    settings, cfg = pager_config.load(config_file, env={})
    assert settings.bootstrap_servers == "broker-1:9092"
    assert settings.topic(ESCALATION) == "prod.alerts.escalation"
    assert (cfg.group_id, cfg.metrics_port, cfg.state_dir) == (
        "pager-prod", 9465, settings.state_dir)
    assert cfg.sinks["am"].urls == ("http://am-1:9093", "http://am-2:9093")
    assert cfg.sinks["oncall"].storm.group_by == ("cluster", "switch", "kind")
    assert cfg.sinks["oncall"].storm.burst == 3 and cfg.sinks["oncall"].storm.enabled
    assert not cfg.sinks["am"].storm.enabled  # Alertmanager groups by itself


def test_environment_beats_the_file_and_flags_beat_the_environment(config_file: Path) -> None:
    env = {"FAULTLINE_PAGER_GROUP_ID": "from-env", "FAULTLINE_PAGER_METRICS_PORT": "9999",
           "FAULTLINE_BOOTSTRAP_SERVERS": "env-broker:9092",
           "FAULTLINE_PAGER_SINKS_ONCALL_ROUTING_KEY": "f" * 32,
           "FAULTLINE_PAGER_SINKS_TICKETS_RETRY_FOR_S": "3600"}
    settings, cfg = pager_config.load(config_file, env=env,
                                      pager_overrides={"metrics_port": 1234})
    assert settings.bootstrap_servers == "env-broker:9092"
    assert (cfg.group_id, cfg.metrics_port) == ("from-env", 1234)
    assert cfg.sinks["oncall"].routing_key.reveal() == "f" * 32  # type: ignore[union-attr]
    assert cfg.sinks["tickets"].retry_for_s == 3600.0


def test_secrets_are_never_printed(config_file: Path) -> None:
    _, cfg = pager_config.load(config_file, env={})
    text = cfg.to_toml()
    for secret in (KEY, "b3arer", "t0ps3cret"):
        assert secret not in text and secret not in repr(cfg)
    assert "routing_key = \"**********\"" in text


def test_sinks_from_the_environment_alone() -> None:
    _, cfg = pager_config.load(None, env={
        "FAULTLINE_PAGER_SINKS_PAGERDUTY_ROUTING_KEY": KEY,
        "FAULTLINE_PAGER_SINKS_ALERTMANAGER_URL": "http://127.0.0.1:9093",
        "FAULTLINE_PAGER_SINKS_ON_CALL_2_TYPE": "webhook",
        "FAULTLINE_PAGER_SINKS_ON_CALL_2_URL": "http://127.0.0.1:8000/a,http://127.0.0.1:8000/b"})
    assert {n: s.type for n, s in cfg.sinks.items()} == {
        "alertmanager": "alertmanager", "pagerduty": "pagerduty", "on_call_2": "webhook"}
    assert cfg.sinks["on_call_2"].urls == ("http://127.0.0.1:8000/a", "http://127.0.0.1:8000/b")
    # No routes: every alert goes to every sink.
    assert Router(cfg).route(ISOLATION, "slow_node", "thermal", "warning", None, None,
                             "firing") == ("alertmanager", "on_call_2", "pagerduty")


@pytest.mark.parametrize(("text", "message"), [
    ("[pager.sinks.x]\ntype = \"pagerduty\"\n", "needs routing_key"),
    ("[pager.sinks.x]\ntype = \"fax\"\n", "type must be one of"),
    ("[pager.sinks.x]\ntype = \"webhook\"\n", "needs url"),
    ("[pager.sinks.alertmanager]\nurl = \"http://a:1\"\n[pager.sinks.alertmanager.storm]\n"
     "burst = 2\n",
     "Alertmanager groups and throttles by itself"),
    ("[pager.sinks.w]\ntype = \"webhook\"\nurl = \"http://a:1\"\ntimeout_s = \"soon\"\n",
     "timeout_s: must be float"),
    ("[pager.sinks.w]\ntype = \"webhook\"\nurl = \"http://a:1\"\n[[pager.routes]]\n"
     "topic = \"escalation\"\nsinks = [\"nobody\"]\n", "unknown sink 'nobody'"),
    ("[pager.sinks.w]\ntype = \"webhook\"\nurl = \"http://a:1\"\n[[pager.routes]]\n"
     "kind = \"meltdown\"\nsinks = [\"w\"]\n", "'meltdown' is not one of"),
    ("[pager.sinks.w]\ntype = \"webhook\"\nurl = \"http://a:1\"\n[pager.sinks.w.storm]\n"
     "group_by = [\"rack\"]\n", "unknown field 'rack'"),
    ("[pager]\ncolour = \"blue\"\n", "unknown setting [pager]"),
    ("[pager]\n", "the pager has no sinks"),
])
def test_bad_configuration_is_refused_with_the_place_named(tmp_path: Path, text: str,
                                                           message: str) -> None:
    path = tmp_path / "bad.toml"
    path.write_text(text)
    with pytest.raises(ValueError, match=message.replace("[", r"\[").replace("(", r"\(")):
        pager_config.load(path, env={})


def test_a_bad_kafka_setting_is_still_reported_beside_a_pager_section(tmp_path: Path) -> None:
    path = tmp_path / "bad.toml"
    path.write_text("[kafka]\nbootstrap_servers = \"\"\n[pager.sinks.alertmanager]\n"
                    "url = \"http://a:1\"\n")
    with pytest.raises(ValueError, match="bootstrap_servers"):
        pager_config.load(path, env={})


def test_routes_first_match_wins_unless_continue(config_file: Path) -> None:
    _, cfg = pager_config.load(config_file, env={})
    r = Router(cfg)

    def route(topic: str, kind: str, tenant: str | None = "tenant-a") -> tuple[str, ...]:
        return r.route(topic, kind, "unknown", r.severity(topic, kind), tenant, "c1", "firing")

    assert route(ESCALATION, "unattributed") == ("oncall", "am")
    assert route(ISOLATION, "sdc") == ("oncall", "tickets", "am")   # continue = true
    assert route(ISOLATION, "slow_node") == ("tickets", "am")       # a ticket, not a page
    # No route matched: the default is every sink.
    assert route(ISOLATION, "slow_node", tenant="tenant-z") == ("am", "oncall", "tickets")


def test_severity_by_kind_then_topic(config_file: Path) -> None:
    _, cfg = pager_config.load(config_file, env={})
    r = Router(cfg)
    assert r.severity(ISOLATION, "sdc") == "critical"
    assert r.severity(ISOLATION, "hardware") == "warning"
    assert r.severity(ESCALATION, "hardware") == "critical"


def test_default_sinks_can_drop_what_no_route_matches() -> None:
    cfg = PagerConfig.from_dict({
        "default_sinks": [],
        "sinks": {"tickets": {"type": "webhook", "url": "http://t:1"}},
        "routes": [{"topic": "isolation", "sinks": ["tickets"]}]}, env={})
    assert Router(cfg).route(ESCALATION, "sdc", "unknown", "critical", None, None,
                             "firing") == ()


def test_every_sink_and_storm_field_is_read_from_the_file_with_its_type() -> None:
    """A field added to SinkConfig or StormConfig is a setting at once, coerced like every
    other (an int where a float is asked, a string list to a tuple), and a wrong type is
    refused with the place named."""
    from dataclasses import fields

    from detector.pager.config import SinkConfig, StormConfig

    storm = {"enabled": True, "group_by": ["node", "kind"], "hold_s": 8, "group_wait_s": 3,
             "group_interval_s": 7, "burst": 4, "per_minute": 5, "max_listed": 6}
    assert {f.name for f in fields(StormConfig)} == set(storm)
    sink = {"type": "webhook", "url": "http://h:1/x", "routing_key": "k", "bearer_token": "b",
            "source": "src", "timeout_s": 2, "retry_for_s": 3, "backoff_initial_s": 0.5,
            "backoff_max_s": 4, "retry_after_max_s": 5, "resend_interval_s": 6,
            "alert_ttl_s": 60, "evidence_max_bytes": 100, "details_max_bytes": 200,
            "headers": {"X-A": "1"}, "storm": storm}
    assert {f.name for f in fields(SinkConfig)} - {"name", "urls"} == set(sink) - {"url"}
    cfg = PagerConfig.from_dict({"sinks": {"s": sink}}, env={}).sinks["s"]
    assert cfg.urls == ("http://h:1/x",) and cfg.retry_for_s == 3.0
    assert type(cfg.timeout_s) is float and type(cfg.evidence_max_bytes) is int
    assert cfg.storm.group_by == ("node", "kind") and type(cfg.storm.per_minute) is float
    assert cfg.routing_key is not None and cfg.routing_key.reveal() == "k"
    with pytest.raises(ValueError, match=r"\[pager\] sinks\.s\.storm burst: must be int"):
        PagerConfig.from_dict({"sinks": {"s": {**sink, "storm": {"burst": 1.5}}}}, env={})
    with pytest.raises(ValueError, match=r"sinks\.s timeout_s: must be float"):
        PagerConfig.from_dict({"sinks": {"s": {**sink, "timeout_s": "soon"}}}, env={})


def test_the_printed_configuration_reads_back_to_the_same_routes(config_file: Path) -> None:
    """`faultline pager --print-config` is TOML an operator can keep: its routes, read
    again, route as the original does."""
    import tomllib

    _, cfg = pager_config.load(config_file, env={})
    printed = tomllib.loads(cfg.to_toml())
    again = PagerConfig.from_dict({**printed["pager"], "sinks": {}}, env={}, validate=False)
    assert again.routes == cfg.routes and any(r.continue_ for r in again.routes)
