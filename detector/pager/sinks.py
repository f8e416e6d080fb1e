"""The pager's sinks: Alertmanager (API v2), PagerDuty (Events API v2), a JSON webhook.

Each ``deliver`` posts one :class:`~detector.pager.storm.Notification` and answers
with an :class:`Outcome`:

- 2xx (PagerDuty: 202): delivered;
- 408, 429, 5xx, a timeout or a refused connection: retried with exponential
  backoff and full jitter (``Retry-After`` honoured up to ``backoff_max_s``), at
  most ``max_attempts`` tries, then *exhausted*;
- any other 4xx (PagerDuty's 400: an invalid event): *rejected* at once.

The caller dead-letters a rejected or exhausted notification with the reason
and goes on.  PagerDuty and the webhook keep a ledger of what they delivered
(a JSON file in the state directory) and never send a second trigger for a
``dedup_key`` already triggered, nor a second resolve, nor a trigger older (in
event time) than the resolve that ended it — a stale redelivery; the same
problem firing again later does page again.  Alertmanager keeps
the set of active alerts and re-posts it every ``resend_interval_s`` with a
fresh ``endsAt``, so no active alert expires in Alertmanager while it fires.

HTTP is the standard library's; environment proxies apply except to loopback.
"""

from __future__ import annotations

import http.client
import json
import logging
import os
import random
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

import orjson

from detector.alerts import FiredAlert
from detector.metrics import PagerMetrics
from detector.pager.config import SinkConfig
from detector.pager.notification import Notification
from detector.pager.payloads import (
    alertmanager_alert,
    alertmanager_labels,
    pagerduty_event,
    pd_dedup_key,
    webhook_body,
)

log = logging.getLogger("faultline.pager")

LEDGER_MAX = 100_000
USER_AGENT = "faultline-pager/1"


class HttpAnswer(NamedTuple):
    status: int | None          # None: no HTTP answer (refused, reset, timed out)
    body: str
    retry_after_s: float | None


@dataclass(frozen=True, slots=True)
class Outcome:
    """How a delivery ended: delivered, or given up (``rejected``/``exhausted``) with why."""

    delivered: bool
    failure: str = ""            # "rejected" | "exhausted" | "stopped"
    reason: str = ""
    skipped: bool = False        # nothing to send: already delivered before

    @classmethod
    def ok(cls, *, skipped: bool = False) -> Outcome:
        return cls(True, skipped=skipped)


def retryable(status: int | None) -> bool:
    return status is None or status in (408, 429) or 500 <= status <= 599


_LOOPBACK = ("127.", "localhost", "::1", "[::1]")


def _opener(url: str) -> urllib.request.OpenerDirector:
    host = urllib.parse.urlsplit(url).hostname or ""
    if host.startswith(_LOOPBACK) or host == "localhost":
        return urllib.request.build_opener(urllib.request.ProxyHandler({}))
    return urllib.request.build_opener()


def post_json(url: str, body: bytes, headers: dict[str, str], timeout_s: float) -> HttpAnswer:
    """POST a JSON body; every outcome is an answer (no exception for HTTP or network errors)."""
    req = urllib.request.Request(url, data=body, method="POST", headers={
        "Content-Type": "application/json", "User-Agent": USER_AGENT, **headers})
    try:
        with _opener(url).open(req, timeout=timeout_s) as resp:
            return HttpAnswer(resp.status, resp.read(65536).decode(errors="replace"), None)
    except urllib.error.HTTPError as exc:
        try:
            text = exc.read(65536).decode(errors="replace")
        except OSError:
            text = ""
        finally:
            exc.close()
        return HttpAnswer(exc.code, text, _retry_after(exc.headers.get("Retry-After")))
    except (urllib.error.URLError, OSError, http.client.HTTPException) as exc:
        reason = getattr(exc, "reason", exc)
        return HttpAnswer(None, f"{type(exc).__name__}: {reason}", None)


def _retry_after(value: str | None) -> float | None:
    try:
        return max(0.0, float(value)) if value else None
    except ValueError:
        return None  # an HTTP date: ignore, the backoff decides


class Backoff:
    """Exponential backoff with full jitter: attempt k waits uniform(0, min(max, initial * 2^k))."""

    def __init__(self, initial_s: float, max_s: float, rng: random.Random) -> None:
        self.initial_s = initial_s
        self.max_s = max_s
        self.rng = rng

    def delay(self, attempt: int, retry_after_s: float | None = None) -> float:
        d = self.rng.uniform(0.0, min(self.max_s, self.initial_s * (2 ** attempt)))
        if retry_after_s is not None:
            d = max(d, min(retry_after_s, self.max_s))
        return d


class Ledger:
    """What a sink delivered, by dedup_key: the last event (triggered/resolved) and its event time.

    Kept in a JSON file.  A trigger is sent unless the key is triggered already, or was
    resolved by a message at least as new as it (a stale redelivery); a resolve unless the
    key is resolved already.
    """

    def __init__(self, path: Path | None) -> None:
        self.path = path
        self._state: OrderedDict[str, tuple[str, float]] = OrderedDict()
        if path is not None and path.exists():
            try:
                self._state.update({k: (str(v[0]), float(v[1])) for k, v in
                                    json.loads(path.read_text()).items()})
            except (OSError, ValueError, TypeError, IndexError) as exc:
                log.warning("ledger %s unreadable, starting empty: %s", path, exc)

    def wanted(self, key: str, event: str, ts: float) -> bool:
        """Whether ``event`` (trigger/resolve) for ``key`` at event time ``ts`` is news."""
        last = self._state.get(key)
        if last is None:
            return True
        state, at = last
        if event == "trigger":
            return state != "triggered" and ts > at
        return state != "resolved"

    def set(self, key: str, event: str, ts: float) -> None:
        self._state[key] = ("triggered" if event == "trigger" else "resolved", ts)
        self._state.move_to_end(key)
        while len(self._state) > LEDGER_MAX:
            self._state.popitem(last=False)
        self.save()

    def triggered(self) -> int:
        return sum(1 for v, _ in self._state.values() if v == "triggered")

    def save(self) -> None:
        if self.path is None:
            return
        tmp = self.path.with_suffix(".tmp")
        tmp.write_text(json.dumps(self._state))
        os.replace(tmp, self.path)


class Sink:
    """Posting with retries, shared by the three kinds; ``stop`` interrupts a backoff wait."""

    def __init__(self, config: SinkConfig, metrics: PagerMetrics, *, state_dir: Path | None,
                 stop: threading.Event, rng: random.Random | None = None,
                 wall: Callable[[], float] = time.time,
                 monotonic: Callable[[], float] = time.monotonic) -> None:
        self.config = config
        self.name = config.name
        self.metrics = metrics
        self.state_dir = state_dir
        self.stop = stop
        self.wall = wall
        self.monotonic = monotonic
        self.backoff = Backoff(config.backoff_initial_s, config.backoff_max_s,
                               rng or random.Random())

    def state_path(self, what: str) -> Path | None:
        if self.state_dir is None:
            return None
        self.state_dir.mkdir(parents=True, exist_ok=True)
        return self.state_dir / f"pager-{self.name}-{what}.json"

    def deliver(self, n: Notification) -> Outcome:
        raise NotImplementedError

    def idle(self) -> None:
        """Called between deliveries (about once a second): periodic work."""

    def headers(self) -> dict[str, str]:
        return {}

    def post(self, url: str, payload: Any) -> Outcome:
        """POST with retries for 408/429/5xx/no answer, at most ``max_attempts`` tries."""
        body = orjson.dumps(payload, default=str)
        cfg = self.config
        answer = HttpAnswer(None, "not sent", None)
        for attempt in range(cfg.max_attempts):
            if attempt:
                self.metrics.retry(self.name)
                if self.stop.wait(self.backoff.delay(attempt - 1, answer.retry_after_s)):
                    return Outcome(False, "stopped", "shutting down during retries")
            answer = post_json(url, body, self.headers(), cfg.timeout_s)
            if answer.status is not None and 200 <= answer.status <= 299:
                return Outcome.ok()
            if not retryable(answer.status):
                return Outcome(False, "rejected", f"{self.name}: HTTP {answer.status} from "
                               f"{_safe_url(url)}: {answer.body[:2000]}")
            log.info("%s: %s from %s (attempt %d of %d)", self.name,
                     answer.status or answer.body, _safe_url(url), attempt + 1, cfg.max_attempts)
        what = f"HTTP {answer.status}" if answer.status else answer.body
        return Outcome(False, "exhausted", f"{self.name}: gave up after {cfg.max_attempts} "
                       f"attempts on {_safe_url(url)}; last: {what} {answer.body[:500]}")


def _safe_url(url: str) -> str:
    """The URL without credentials or query (a webhook's token may ride in either)."""
    parts = urllib.parse.urlsplit(url)
    host = parts.hostname or ""
    if parts.port:
        host += f":{parts.port}"
    return urllib.parse.urlunsplit((parts.scheme, host, parts.path, "", ""))


class _LedgerSink(Sink):
    """A sink that must not repeat itself: one trigger and one resolve per dedup_key."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.ledger = Ledger(self.state_path("delivered"))
        self.metrics.active(self.name, self.ledger.triggered())

    def key(self, n: Notification) -> str:
        return n.dedup_key

    def deliver(self, n: Notification) -> Outcome:
        key = self.key(n)
        ts = max((a.detected_ts for a in n.alerts()), default=0.0)
        if not self.ledger.wanted(key, n.event, ts):
            return Outcome.ok(skipped=True)
        out = self.send(n)
        if out.delivered:
            self.ledger.set(key, n.event, ts)
            self.metrics.active(self.name, self.ledger.triggered())
        return out

    def send(self, n: Notification) -> Outcome:
        raise NotImplementedError


class PagerDutySink(_LedgerSink):
    """PagerDuty Events API v2: ``trigger`` and ``resolve`` by ``dedup_key``."""

    def key(self, n: Notification) -> str:
        return pd_dedup_key(n.dedup_key)

    def send(self, n: Notification) -> Outcome:
        assert self.config.routing_key is not None
        ev = pagerduty_event(n, self.config.routing_key.reveal(), source=self.config.source,
                             wall_now=self.wall(),
                             details_max_bytes=self.config.details_max_bytes)
        return self.post(self.config.urls[0], ev)


class WebhookSink(_LedgerSink):
    """A generic JSON webhook (a ticket queue, a chat bridge): one POST per notification."""

    def headers(self) -> dict[str, str]:
        h = dict(self.config.headers)
        if self.config.bearer_token is not None:
            h["Authorization"] = f"Bearer {self.config.bearer_token.reveal()}"
        return h

    def send(self, n: Notification) -> Outcome:
        body = webhook_body(n, wall_now=self.wall(),
                            details_max_bytes=self.config.details_max_bytes)
        for url in self.config.urls:
            out = self.post(url, body)
            if not out.delivered:
                return out
        return Outcome.ok()


class AlertmanagerSink(Sink):
    """Alertmanager API v2: active alerts posted, re-posted before they expire, then resolved."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._path = self.state_path("active")
        # dedup_key -> (envelope topic, envelope, severity): enough to rebuild the alert.
        self.active: dict[str, tuple[str, dict[str, Any], str]] = {}
        if self._path is not None and self._path.exists():
            try:
                self.active = {k: tuple(v) for k, v in  # type: ignore[misc]
                               json.loads(self._path.read_text()).items()}
            except (OSError, ValueError) as exc:
                log.warning("active set %s unreadable, starting empty: %s", self._path, exc)
        self._resent_at = self.monotonic()
        self.metrics.active(self.name, len(self.active))

    def _save(self) -> None:
        self.metrics.active(self.name, len(self.active))
        if self._path is not None:
            tmp = self._path.with_suffix(".tmp")
            tmp.write_text(json.dumps(self.active))
            os.replace(tmp, self._path)

    def _am(self, a: FiredAlert, severity: str, extra: str = "") -> dict[str, Any]:
        c = self.config
        return alertmanager_alert(a, severity, wall_now=self.wall(), ttl_s=c.alert_ttl_s,
                                  evidence_max_bytes=c.evidence_max_bytes, extra_summary=extra)

    def _post_all(self, alerts: list[dict[str, Any]]) -> Outcome:
        for base in self.config.urls:
            out = self.post(_alerts_url(base), alerts)
            if not out.delivered:
                return out
        return Outcome.ok()

    def deliver(self, n: Notification) -> Outcome:
        batch: list[dict[str, Any]] = []
        for a in ((n.alert,) if n.alert is not None else ()) + n.members + n.held_back:
            key = a.dedup_key
            old = self.active.get(key)
            if old is not None and a.status == "firing":
                before = FiredAlert.from_record(old[0], old[1])
                if alertmanager_labels(before, old[2]) != alertmanager_labels(a, n.severity):
                    # Same problem, new identity (its cause changed): end the old one now.
                    batch.append(self._am(_resolved(before), old[2]))
            batch.append(self._am(a, n.severity, n.summary))
        out = self._post_all(batch)
        if out.delivered or out.failure == "exhausted":
            # Exhausted: Alertmanager is away; keep firing alerts to re-send when it is back.
            for a in ((n.alert,) if n.alert is not None else ()) + n.members + n.held_back:
                if a.status == "firing":
                    self.active[a.dedup_key] = (a.topic, a.raw, n.severity)
                else:
                    self.active.pop(a.dedup_key, None)
            self._save()
        return out

    def idle(self) -> None:
        if not self.active or self.monotonic() - self._resent_at < self.config.resend_interval_s:
            return
        self._resent_at = self.monotonic()
        alerts = [self._am(FiredAlert.from_record(t, v), sev)
                  for t, v, sev in self.active.values()]
        out = self._post_all(alerts)
        if out.delivered:
            log.debug("%s: re-sent %d active alerts", self.name, len(alerts))
        elif out.failure != "stopped":
            self.metrics.failed(self.name, out.failure)
            log.warning("%s: re-sending %d active alerts failed: %s", self.name, len(alerts),
                        out.reason)


def _alerts_url(base: str) -> str:
    base = base.rstrip("/")
    return base if base.endswith("/api/v2/alerts") else base + "/api/v2/alerts"


def _resolved(a: FiredAlert) -> FiredAlert:
    return FiredAlert.from_record(a.topic, {**a.raw, "status": "resolved"})


SINK_CLASSES: dict[str, type[Sink]] = {"alertmanager": AlertmanagerSink,
                                       "pagerduty": PagerDutySink, "webhook": WebhookSink}


def make_sink(config: SinkConfig, metrics: PagerMetrics, *, state_dir: Path | None,
              stop: threading.Event, rng: random.Random | None = None,
              wall: Callable[[], float] = time.time,
              monotonic: Callable[[], float] = time.monotonic) -> Sink:
    return SINK_CLASSES[config.type](config, metrics, state_dir=state_dir, stop=stop, rng=rng,
                                     wall=wall, monotonic=monotonic)
