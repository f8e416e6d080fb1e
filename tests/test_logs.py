"""faultline's log filters: libraries capped at INFO, secrets redacted, repeats rate-limited."""

from __future__ import annotations

import io
import logging
from collections.abc import Iterator

import pytest

from detector import logs

SECRET = "s3cr3t-sasl-pa55"


@pytest.fixture
def out() -> Iterator[io.StringIO]:
    stream = io.StringIO()
    saved = {n: logging.getLogger(n).level for n in (*logs.NOISY, "")}
    yield stream
    root = logging.getLogger()
    for h in logs._installed:
        root.removeHandler(h)
    logs._installed.clear()
    for n, level in saved.items():
        logging.getLogger(n).setLevel(level)
    logging.captureWarnings(False)


def test_debug_is_ours_only_unless_a_library_is_named(out: io.StringIO) -> None:
    logs.configure("debug", stream=out)
    logging.getLogger("detector.pager").debug("ours at debug")
    logging.getLogger("aiokafka.conn").debug("wire bytes")
    logging.getLogger("some.lib").debug("theirs at debug")
    logging.getLogger("some.lib").info("theirs at info")
    text = out.getvalue()
    assert "ours at debug" in text and "theirs at info" in text
    assert "wire bytes" not in text and "theirs at debug" not in text
    logs.configure("debug", debug_loggers=["aiokafka"], stream=out)
    logging.getLogger("aiokafka.conn").debug("wire bytes, asked for")
    assert "wire bytes, asked for" in out.getvalue()


def test_secrets_are_redacted_in_messages_arguments_and_tracebacks(out: io.StringIO) -> None:
    logs.configure("debug", debug_loggers=["aiokafka"], secrets=[SECRET, "ab"], stream=out)
    log = logging.getLogger("aiokafka.conn")
    log.debug("sasl plain: %s", f"\0user\0{SECRET}")
    log.info(f"config {{'sasl_plain_password': '{SECRET}'}}")
    try:
        raise ValueError(f"auth failed for {SECRET}")
    except ValueError:
        log.exception("failed")
    text = out.getvalue()
    assert SECRET not in text
    assert text.count(logs.REDACTED) == 3


def test_a_repeated_line_is_printed_once_per_interval(out: io.StringIO) -> None:
    logs.configure("info", stream=out, interval_s=3600)
    log = logging.getLogger("librdkafka")
    for ms in range(300):
        log.error("FAIL [rdkafka#producer-1]: Connect to ipv4#127.0.0.1:9 failed: "
                  "Connection refused (after %dms in state CONNECT)", ms)
    log.error("a different error")
    lines = out.getvalue().splitlines()
    assert len(lines) == 2 and "Connection refused" in lines[0] and "different" in lines[1]


def test_the_pagers_secrets_are_the_ones_redacted() -> None:
    from detector.pager.config import PagerConfig

    cfg = PagerConfig.from_dict({}, env={
        "FAULTLINE_PAGER_SINKS_PAGERDUTY_ROUTING_KEY": "R" * 32,
        "FAULTLINE_PAGER_SINKS_WEBHOOK_URL": "https://u:pw-1234@tickets/x?token=tok-5678",
        "FAULTLINE_PAGER_SINKS_WEBHOOK_BEARER_TOKEN": "bearer-9abc",
        "FAULTLINE_PAGER_AUDIT_KEY": "audit-key-def0"})
    assert set(cfg.secrets()) >= {"R" * 32, "pw-1234", "token=tok-5678", "tok-5678",
                                  "bearer-9abc",
                                  "audit-key-def0"}
