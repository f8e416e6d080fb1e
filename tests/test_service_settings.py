"""The service's settings: file, environment and flags in that order; secrets never shown."""

from __future__ import annotations

from pathlib import Path

import pytest

from detector.cli import main
from detector.settings import Secret, Settings

TOML = """
[kafka]
bootstrap_servers = "kafka-1:9093,kafka-2:9093"
security_protocol = "SASL_SSL"
sasl_mechanism = "SCRAM-SHA-512"
sasl_username = "faultline"
sasl_password = "pa55word-from-file"
ssl_cafile = "/etc/ssl/ca.pem"

[topics]
prefix = "prod."

[partitions]
telemetry = 32

[service]
snapshot_interval_s = 10

[thresholds]
slow_h = 12.0
"""


@pytest.fixture
def config(tmp_path: Path) -> Path:
    path = tmp_path / "faultline.toml"
    path.write_text(TOML)
    return path


def test_the_file_then_the_environment_then_flags(config: Path) -> None:
    s = Settings.load(config, env={"FAULTLINE_PARTITIONS_TELEMETRY": "64",
                                   "FAULTLINE_TOPIC_PREFIX": "env."},
                      overrides={"topic_prefix": "flag.", "group_id": None})
    assert s.partitions_telemetry == 64 and s.snapshot_interval_s == 10.0
    assert s.topic("telemetry.step") == "flag.telemetry.step"
    assert s.group_id == "faultline"  # a flag not given changes nothing
    assert s.engine_thresholds().slow_h == 12.0
    assert s.source_of("partitions_telemetry") == "env FAULTLINE_PARTITIONS_TELEMETRY"
    conf = s.kafka_config()
    assert conf["sasl.password"] == "pa55word-from-file"
    assert conf["ssl.ca.location"] == "/etc/ssl/ca.pem"
    assert conf["security.protocol"] == "SASL_SSL"


def test_secrets_never_show(config: Path) -> None:
    s = Settings.load(config, env={"FAULTLINE_SSL_PASSWORD": "key-secret"})
    for text in (repr(s), str(s), s.to_toml(), repr(s.sasl_password), f"{s.ssl_password}"):
        assert "pa55word" not in text and "key-secret" not in text
    assert s.sasl_password == Secret("pa55word-from-file")


def test_faultline_config_prints_the_effective_settings_redacted(
        config: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FAULTLINE_SASL_PASSWORD", "from-the-environment")
    assert main(["config", "--config", str(config), "--bootstrap", "kafka-9:9092"]) == 0
    out = capsys.readouterr().out
    assert 'bootstrap_servers = "kafka-9:9092"  # command line' in out
    assert 'prefix = "prod."  # file' in out
    assert 'sasl_password = "**********"  # env FAULTLINE_SASL_PASSWORD' in out
    assert "from-the-environment" not in out and "pa55word" not in out
    assert "slow_h = 12.0" in out


@pytest.mark.parametrize(("env", "message"), [
    ({"FAULTLINE_PARTITIONS_TELEMETRY": "many"}, "partitions_telemetry: must be int"),
    ({"FAULTLINE_PARTITIONS_TELEMETRY": "0"}, "partitions_telemetry (env"),
    ({"FAULTLINE_SECURITY_PROTOCOL": "TLS"}, "must be one of PLAINTEXT"),
    ({"FAULTLINE_SECURITY_PROTOCOL": "SASL_SSL"}, "SASL needs sasl_username"),
    ({"FAULTLINE_IDLE_ADVANCE_S": "-1"}, "idle_advance_s"),
    ({"FAULTLINE_DELIVERY": "carrier-pigeon"}, "delivery"),
])
def test_bad_settings_are_refused_with_their_name_and_source(env: dict[str, str],
                                                              message: str) -> None:
    with pytest.raises(ValueError, match=message.replace("(", r"\(")):
        Settings.load(env=env)


def test_a_bad_secret_is_not_echoed_in_the_error() -> None:
    with pytest.raises(ValueError) as err:
        Settings.load(env={"FAULTLINE_SECURITY_PROTOCOL": "SASL_PLAINTEXT",
                           "FAULTLINE_SASL_USERNAME": "u", "FAULTLINE_SASL_PASSWORD": "hunter2",
                           "FAULTLINE_SASL_MECHANISM": "hunter2"})
    assert "sasl_mechanism" in str(err.value)


def test_unknown_file_settings_are_refused(tmp_path: Path) -> None:
    path = tmp_path / "x.toml"
    path.write_text('[kafka]\nbootstrap = "x:1"\n')
    with pytest.raises(ValueError, match=r"unknown setting \[kafka\] bootstrap"):
        Settings.load(path, env={})
    path.write_text('[thresholds]\nslow_hh = 1\n')
    with pytest.raises(ValueError, match="unknown threshold"):
        Settings.load(path, env={})


def test_serve_help_documents_every_setting_and_its_variable(
        capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["serve", "--help"])
    out = capsys.readouterr().out
    for var in ("FAULTLINE_BOOTSTRAP_SERVERS", "FAULTLINE_SASL_PASSWORD", "FAULTLINE_STATE_DIR",
                "FAULTLINE_PARTITIONS_TELEMETRY", "FAULTLINE_METRICS_PORT", "FAULTLINE_CONFIG",
                "FAULTLINE_DELIVERY", "FAULTLINE_SNAPSHOT_INTERVAL_S"):
        assert var in out
