"""Logging for the long-running commands: capped, redacted and rate-limited.

- **Caps.**  faultline's own loggers (``faultline*``, ``detector*``,
  ``replay*``) log at the configured level; every other logger (aiokafka,
  kafka, faust, mode, librdkafka, urllib3, ...) at INFO or above, unless it is
  named in ``debug_loggers`` (``log_debug`` setting): ``log_level = "debug"``
  alone never turns on a library's wire-level debug output, which is where
  SASL exchanges and connection secrets show up.
- **Redaction.**  Every configured secret (SASL/SSL passwords, PagerDuty
  routing keys, bearer tokens, ...) is replaced by ``**********`` in every
  line, whoever logs it, tracebacks included.
- **Rate limit.**  A line that repeats (the same logger and text, digits
  aside: "Connect to ipv4#127.0.0.1:9 failed ... after 3ms") is printed once
  per ``interval_s``; the next one printed says how many were suppressed.
  An unreachable broker gives a handful of lines a minute, not hundreds.

librdkafka (confluent-kafka) logs to stderr by itself; :func:`kafka_logger`
is passed as its ``logger`` so that its lines go through the same filters.

>>> f = RateLimit(interval_s=60.0, clock=iter([0.0, 1.0, 2.0, 61.0]).__next__)
>>> recs = [logging.LogRecord("librdkafka", logging.WARNING, "", 0,
...                           f"Connect to 10.0.0.1:9092 failed (after {ms}ms)", (), None)
...         for ms in (3, 5, 4, 2)]
>>> [f.filter(r) for r in recs]
[True, False, False, True]
>>> recs[3].getMessage()
'Connect to 10.0.0.1:9092 failed (after 2ms) (2 like it suppressed in the last 61 s)'
"""

from __future__ import annotations

import logging
import re
import sys
import threading
import time
from collections.abc import Callable, Iterable

REDACTED = "**********"
OWN = ("faultline", "detector", "replay", "__main__")
# Libraries whose DEBUG output is wire-level (and may carry credentials): set to INFO at once
# so their debug records are not even built.
NOISY = ("aiokafka", "kafka", "faust", "mode", "librdkafka", "urllib3", "asyncio", "venusian")
FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"
_NUMBERS = re.compile(r"\d+")


def _own(name: str) -> bool:
    return name == "root" or any(name == p or name.startswith(p + ".") for p in OWN)


def _named(name: str, names: tuple[str, ...]) -> bool:
    return any(name == n or name.startswith(n + ".") for n in names)


class CapThirdParty(logging.Filter):
    """Below INFO, only faultline's own loggers and those asked for by name pass."""

    def __init__(self, debug_loggers: Iterable[str] = ()) -> None:
        super().__init__()
        self.debug_loggers = tuple(debug_loggers)

    def filter(self, record: logging.LogRecord) -> bool:
        return (record.levelno >= logging.INFO or _own(record.name)
                or _named(record.name, self.debug_loggers))


class Redact(logging.Filter):
    """Replaces every secret in the rendered line (message, arguments, traceback)."""

    def __init__(self, secrets: Iterable[str] = ()) -> None:
        super().__init__()
        self.secrets: list[str] = []
        self.add(secrets)

    def add(self, secrets: Iterable[str]) -> None:
        # Longest first, so that a secret containing another is replaced whole; short
        # values (a 1-3 character "password") would redact half of every line: skipped.
        self.secrets = sorted({s for s in (*self.secrets, *secrets) if s and len(s) >= 4},
                              key=len, reverse=True)

    def _clean(self, text: str) -> str:
        for s in self.secrets:
            if s in text:
                text = text.replace(s, REDACTED)
        return text

    def filter(self, record: logging.LogRecord) -> bool:
        if not self.secrets:
            return True
        msg = record.getMessage()
        clean = self._clean(msg)
        if clean != msg:
            record.msg, record.args = clean, ()
        if record.exc_info and not record.exc_text:
            record.exc_text = logging.Formatter().formatException(record.exc_info)
        if record.exc_text:
            record.exc_text = self._clean(record.exc_text)
        if record.stack_info:
            record.stack_info = self._clean(record.stack_info)
        return True


class RateLimit(logging.Filter):
    """One line per distinct text (digits aside) per logger per ``interval_s``, at WARNING and
    below; ERROR and above pass when the text is new or once per interval too."""

    def __init__(self, interval_s: float = 60.0, *, max_keys: int = 10_000,
                 clock: Callable[[], float] = time.monotonic) -> None:
        super().__init__()
        self.interval_s = interval_s
        self.max_keys = max_keys
        self.clock = clock
        self._lock = threading.Lock()
        self._seen: dict[tuple[str, int, str], tuple[float, int]] = {}
        self.suppressed = 0

    def filter(self, record: logging.LogRecord) -> bool:
        if self.interval_s <= 0:
            return True
        key = (record.name, record.levelno, _NUMBERS.sub("#", record.getMessage())[:300])
        now = self.clock()
        with self._lock:
            last = self._seen.get(key)
            if last is not None and now - last[0] < self.interval_s:
                self._seen[key] = (last[0], last[1] + 1)
                self.suppressed += 1
                return False
            if len(self._seen) >= self.max_keys:
                cutoff = now - self.interval_s
                self._seen = {k: v for k, v in self._seen.items() if v[0] >= cutoff}
                if len(self._seen) >= self.max_keys:
                    self._seen.clear()
            self._seen[key] = (now, 0)
        if last is not None and last[1]:
            record.msg, record.args = (f"{record.getMessage()} ({last[1]} like it suppressed "
                                       f"in the last {now - last[0]:.0f} s)"), ()
        return True


_installed: list[logging.Handler] = []


def configure(level: str = "info", *, debug_loggers: Iterable[str] = (),
              secrets: Iterable[str] = (), interval_s: float = 60.0,
              stream: object = None) -> logging.Handler:
    """Set up the root logger with the three filters; call once per process (again: replaces)."""
    root = logging.getLogger()
    for h in _installed:
        root.removeHandler(h)
    _installed.clear()
    handler = logging.StreamHandler(stream if stream is not None else sys.stderr)  # type: ignore[arg-type]
    handler.setFormatter(logging.Formatter(FORMAT))
    debug_loggers = tuple(debug_loggers)
    # Order: drop what is capped, redact, then rate-limit on the redacted text.
    handler.addFilter(CapThirdParty(debug_loggers))
    handler.addFilter(Redact(secrets))
    handler.addFilter(RateLimit(interval_s))
    root.addHandler(handler)
    _installed.append(handler)
    numeric = getattr(logging, level.upper())
    root.setLevel(numeric)
    for name in NOISY:
        if not _named(name, debug_loggers):
            logging.getLogger(name).setLevel(max(numeric, logging.INFO))
    for name in debug_loggers:
        logging.getLogger(name).setLevel(logging.DEBUG)
    logging.captureWarnings(True)
    return handler


def kafka_logger() -> logging.Logger:
    """The logger to hand to confluent-kafka clients (``logger`` in their config)."""
    return logging.getLogger("librdkafka")
