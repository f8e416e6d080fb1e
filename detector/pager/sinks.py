"""The pager's sinks: Alertmanager (API v2), PagerDuty (Events API v2), a JSON webhook.

Each ``deliver`` posts one :class:`~detector.pager.storm.Notification` and answers
with an :class:`Outcome`:

- 2xx (PagerDuty: 202): delivered;
- 408, 429, 5xx, a timeout or a refused connection: *transient*, retried with
  exponential backoff and full jitter capped at ``backoff_max_s`` (a
  ``Retry-After`` in seconds or as an HTTP date is honoured, up to
  ``retry_after_max_s``) for as long as ``retry_for_s`` (24 h by default); while
  it lasts, ``faultline_pager_failing_since`` says since when; only then
  *exhausted*;
- 400, 401, 403, 404 and any other 4xx: *rejected* at once (permanent).

The caller dead-letters a rejected or exhausted notification with the reason
and goes on; a delivery in retry holds its sink's queue (and so the offsets
behind it), which is how a page outlives an outage.

PagerDuty and the webhook keep a ledger of what they delivered
(a JSON file in the state directory) and never send a second trigger for a
``dedup_key`` already triggered, nor a second resolve, nor a trigger older (in
event time) than the resolve that ended it — a stale redelivery; the same
problem firing again later does page again.  Alertmanager keeps
the set of active alerts and re-posts it every ``resend_interval_s`` with a
fresh ``endsAt``, so no active alert expires in Alertmanager while it fires.

HTTP is the standard library's; environment proxies apply except to loopback.
"""

from __future__ import annotations

import email.utils
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
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

import orjson

from detector.alerts import FiredAlert
from detector.metrics import PagerMetrics
from detector.pager import widening
from detector.pager.config import SinkConfig
from detector.pager.notification import Notification
from detector.pager.payloads import (
    alertmanager_alert,
    alertmanager_labels,
    pagerduty_event,
    pd_dedup_key,
    pd_widened_key,
    rescoped_key,
    webhook_body,
)

log = logging.getLogger("faultline.pager")

LEDGER_MAX = 100_000
LEDGER_VERSION = 2          # journal lines [key, state, ts, action, open_key] (v1: 3 fields)
USER_AGENT = "faultline-pager/1"


class HttpAnswer(NamedTuple):
    status: int | None          # None: no HTTP answer (refused, reset, timed out)
    body: str
    retry_after: str | None     # the Retry-After header as sent


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
        return HttpAnswer(exc.code, text, exc.headers.get("Retry-After"))
    except (urllib.error.URLError, OSError, http.client.HTTPException) as exc:
        reason = getattr(exc, "reason", exc)
        return HttpAnswer(None, f"{type(exc).__name__}: {reason}", None)


def retry_after_s(value: str | None, wall_now: float | None = None) -> float | None:
    """``Retry-After`` as seconds from now: delta-seconds or an HTTP date (RFC 9110 10.2.3).

    >>> retry_after_s("120"), retry_after_s("soon")
    (120.0, None)
    >>> retry_after_s("Thu, 01 Jan 2026 00:01:00 GMT", wall_now=1767225600.0)
    60.0
    """
    if not value:
        return None
    value = value.strip()
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    if when.tzinfo is None:
        return None
    return max(0.0, when.timestamp() - (time.time() if wall_now is None else wall_now))


class Backoff:
    """Exponential backoff with full jitter: attempt k waits uniform(0, min(max, initial * 2^k)).

    A ``Retry-After`` is a floor, honoured up to ``retry_after_max_s`` (a sink that asks for
    a day does not stall its queue for a day).

    >>> b = Backoff(0.01, 0.05, random.Random(0), retry_after_max_s=900.0)
    >>> b.delay(0, retry_after_s=7.0), b.delay(0, retry_after_s=86400.0), b.delay(0) < 0.05
    (7.0, 900.0, True)
    """

    def __init__(self, initial_s: float, max_s: float, rng: random.Random,
                 retry_after_max_s: float = 900.0) -> None:
        self.initial_s = initial_s
        self.max_s = max_s
        self.rng = rng
        self.retry_after_max_s = retry_after_max_s

    def delay(self, attempt: int, retry_after_s: float | None = None) -> float:
        d = self.rng.uniform(0.0, min(self.max_s, self.initial_s * (2 ** min(attempt, 60))))
        if retry_after_s is not None:
            d = max(d, min(retry_after_s, self.retry_after_max_s))
        return d


class Journal:
    """A state file kept as JSON lines: one line appended per change (the last line of a key
    wins when read back), rewritten whole (atomically) only when it holds twice as many lines
    as live keys -- so a change costs one short append, not a rewrite of the whole state."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.lines = 0

    def append(self, entry: list[Any], live: int, everything: Callable[[], Iterable[list[Any]]]
               ) -> None:
        """Append ``entry``; rewrite from ``everything()`` when the file is twice ``live``."""
        with open(self.path, "ab") as f:
            f.write(orjson.dumps(entry) + b"\n")
        self.lines += 1
        if self.lines > 2 * live + 1000:
            self.rewrite(everything())

    def rewrite(self, entries: Iterable[list[Any]]) -> None:
        tmp = self.path.with_suffix(".tmp")
        n = 0
        with open(tmp, "wb") as f:
            for e in entries:
                f.write(orjson.dumps(e) + b"\n")
                n += 1
        os.replace(tmp, self.path)
        self.lines = n

    @staticmethod
    def entries(data: bytes) -> Iterator[list[Any]]:
        """The lines of a journal as read back; a torn last line (a crash mid-write) skipped."""
        for line in data.splitlines():
            try:
                e = orjson.loads(line)
            except orjson.JSONDecodeError:
                continue
            if type(e) is list and e:
                yield e


class Ledger:
    """What a sink delivered, by dedup_key: the last event (triggered/resolved), its event
    time, the action it named and the key it is open under at the sink.

    A trigger is sent unless the key is triggered already, or was resolved by a message at
    least as new as it (a stale redelivery); a resolve only if the key is triggered (a
    resolve is never sent for a trigger that never went out, nor twice; state ``dead``: the
    trigger was dead-lettered).  A trigger for a triggered key whose action reaches further
    than the one delivered (:func:`detector.pager.widening.widened`) is news: see
    :meth:`widened`.

    Kept as a journal: one JSON line ``[key, state, ts, action, open_key]`` appended per
    change (the last line of a key wins), rewritten whole only when it holds twice as many
    lines as keys — so a delivery costs one short append, not a rewrite of up to
    ``LEDGER_MAX`` keys.  A line of the former journal (``[key, state, ts]``) or file
    format (one JSON object) is read (no action known) and rewritten; a line of any other
    shape or type is refused (skipped).
    """

    def __init__(self, path: Path | None) -> None:
        self.path = path
        self._journal = None if path is None else Journal(path)
        # key -> (state, ts, action, open_key): open_key "" means the key itself.
        self._state: OrderedDict[str, tuple[str, float, str, str]] = OrderedDict()
        self._triggered = 0
        if path is not None and path.exists():
            try:
                self._load(path.read_bytes())
            except (OSError, ValueError, TypeError, IndexError) as exc:
                log.warning("ledger %s unreadable, starting empty: %s", path, exc)
                self._state.clear()
        self._triggered = sum(1 for v in self._state.values() if v[0] == "triggered")
        if path is not None:
            self._compact()

    def _load(self, data: bytes) -> None:
        if data.lstrip().startswith(b"{"):  # the former format: one JSON object
            for k, v in json.loads(data).items():
                rec = _ledger_record([k, *v][:3])
                if rec is not None:
                    self._state[rec[0]] = rec[1]
            return
        for e in Journal.entries(data):  # (a torn last line: the lines before it stand)
            rec = _ledger_record(e)
            if rec is None:
                continue
            self._state[rec[0]] = rec[1]
            self._state.move_to_end(rec[0])

    def wanted(self, key: str, event: str, ts: float) -> bool:
        """Whether ``event`` (trigger/resolve) for ``key`` at event time ``ts`` is news."""
        last = self._state.get(key)
        if last is None:
            return event == "trigger"  # a resolve of a key never triggered here: nothing to end
        state, at = last[0], last[1]
        if event == "trigger":
            return state == "dead" or (state != "triggered" and ts > at)
        return state == "triggered"

    def widened(self, key: str, event: str, action: str, action_was: str = "") -> str | None:
        """The action last delivered for triggered ``key`` when a trigger naming ``action``
        reaches further than it (None: not a widening).  ``action_was`` (the envelope's
        evidence) stands in when the ledger does not know the delivered action."""
        last = self._state.get(key)
        if event != "trigger" or last is None or last[0] != "triggered":
            return None
        before = last[2] or action_was
        return before if before and widening.widened(before, action) else None

    def state(self, key: str) -> str | None:
        last = self._state.get(key)
        return None if last is None else last[0]

    def open_key(self, key: str) -> str:
        """The key ``key``'s problem is open under at the sink (itself unless widened)."""
        last = self._state.get(key)
        return (last[3] if last is not None else "") or key

    def set(self, key: str, event: str, ts: float, *, action: str = "", open_key: str = ""
            ) -> None:
        """``event``: trigger or resolve (delivered), or dead (a trigger dead-lettered)."""
        state = {"trigger": "triggered", "resolve": "resolved"}.get(event, event)
        old = self._state.get(key)
        self._triggered += (state == "triggered") - (old is not None and old[0] == "triggered")
        if state != "triggered":
            action, open_key = "", ""
        rec = (state, ts, action[:ACTION_MAX_CHARS], open_key[:OPEN_KEY_MAX_CHARS])
        self._state[key] = rec
        self._state.move_to_end(key)
        while len(self._state) > LEDGER_MAX:
            _, gone = self._state.popitem(last=False)
            self._triggered -= gone[0] == "triggered"
        if self._journal is not None:
            self._journal.append([key, *rec], len(self._state), self._lines)

    def triggered(self) -> int:
        return self._triggered

    def dead(self) -> list[str]:
        return [k for k, v in self._state.items() if v[0] == "dead"]

    def _lines(self) -> Iterator[list[Any]]:
        return ([k, *rec] for k, rec in self._state.items())

    def _compact(self) -> None:
        """Rewrite the journal with one line per key (atomically), and append from there."""
        assert self._journal is not None
        self._journal.rewrite(self._lines())


ACTION_MAX_CHARS = 64
OPEN_KEY_MAX_CHARS = 512
_LEDGER_STATES = ("triggered", "resolved", "dead")


def _ledger_record(e: Any) -> tuple[str, tuple[str, float, str, str]] | None:
    """One journal line as ``(key, (state, ts, action, open_key))``, or None when it is not
    one (a wrong length, type, state or size: refused, not guessed at).

    >>> _ledger_record(["k", "triggered", 1.0]), _ledger_record(["k", "gone", 1.0])
    (('k', ('triggered', 1.0, '', '')), None)
    >>> _ledger_record(["k", "triggered", 1.0, "drain_node", "k~drain_node"])[1][3]
    'k~drain_node'
    >>> _ledger_record(["k", "triggered", "1", "x", ""]), _ledger_record({"k": 1})
    (None, None)
    """
    if type(e) is not list or len(e) not in (3, 5):
        return None
    key, state, ts, *rest = e
    action, open_key = rest if rest else ("", "")
    if (type(key) is not str or state not in _LEDGER_STATES or type(ts) not in (int, float)
            or type(action) is not str or type(open_key) is not str
            or len(key) > OPEN_KEY_MAX_CHARS or len(action) > ACTION_MAX_CHARS
            or len(open_key) > OPEN_KEY_MAX_CHARS):
        return None
    return key, (state, float(ts), action, open_key)


class Sink:
    """Posting with retries, shared by the three kinds; ``stop`` interrupts a backoff wait.

    ``monotonic``, ``wall`` and ``sleep`` (wait seconds; True when stopped) are injectable
    so that a test can run a 5-minute outage against a real HTTP server in no time.
    """

    def __init__(self, config: SinkConfig, metrics: PagerMetrics, *, state_dir: Path | None,
                 stop: threading.Event, rng: random.Random | None = None,
                 wall: Callable[[], float] = time.time,
                 monotonic: Callable[[], float] = time.monotonic,
                 sleep: Callable[[float], bool] | None = None) -> None:
        self.config = config
        self.name = config.name
        self.metrics = metrics
        self.state_dir = state_dir
        self.stop = stop
        self.wall = wall
        self.monotonic = monotonic
        self.sleep = sleep if sleep is not None else stop.wait
        self.backoff = Backoff(config.backoff_initial_s, config.backoff_max_s,
                               rng or random.Random(), config.retry_after_max_s)
        self.failing_since: float | None = None   # wall time of the first failure in a row
        self.lost: OrderedDict[str, None] = OrderedDict()  # dead-lettered, not delivered since
        self.metrics.failing_since(self.name, 0.0)

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

    # -- dead letters that were later delivered --------------------------------------------

    def dead_lettered(self, n: Notification) -> None:
        """``n`` went to the dead letter: remember its alerts until they are delivered."""
        for a in n.alerts():
            self.lost[a.dedup_key] = None
            self.lost.move_to_end(a.dedup_key)
        while len(self.lost) > LEDGER_MAX:
            self.lost.popitem(last=False)
        self.metrics.deadletters_outstanding(self.name, len(self.lost))

    def found(self, keys: Any) -> None:
        """These alerts reached the sink: a dead letter of theirs no longer counts."""
        if self.lost:
            for k in keys:
                self.lost.pop(k, None)
            self.metrics.deadletters_outstanding(self.name, len(self.lost))

    # -- posting -----------------------------------------------------------------------------

    def post(self, url: str, payload: Any, *, retry: bool = True) -> Outcome:
        return self.post_any((url,), payload, retry=retry)

    def post_any(self, urls: tuple[str, ...] | list[str], payload: Any, *,
                 retry: bool = True) -> Outcome:
        """POST to each URL; delivered once one of them accepts.

        When none accepts and any failure was transient, the URLs not refused for good are
        tried again after a backoff, for up to ``retry_for_s`` (``retry=False``: one round).
        """
        body = orjson.dumps(payload, default=str)
        cfg = self.config
        started = self.monotonic()
        todo = list(urls)
        refused: list[str] = []
        attempt = 0
        while True:
            transient: list[str] = []
            hint: float | None = None
            accepted = False
            for url in todo:
                answer = post_json(url, body, self.headers(), cfg.timeout_s)
                if answer.status is not None and 200 <= answer.status <= 299:
                    accepted = True
                elif retryable(answer.status):
                    transient.append(f"{_answer_text(answer)} from {_safe_url(url)}")
                    ra = retry_after_s(answer.retry_after, self.wall())
                    if ra is not None:
                        hint = ra if hint is None else max(hint, ra)
                else:
                    refused.append(f"{self.name}: HTTP {answer.status} from {_safe_url(url)}: "
                                   f"{answer.body[:2000]}")
                    todo = [u for u in todo if u != url]
            if accepted:
                self._healthy()
                if transient or refused:
                    log.warning("%s: delivered, but not to every URL: %s", self.name,
                                "; ".join(transient + refused))
                return Outcome.ok()
            if not transient:
                self._healthy()  # the sink answered: it is up, and said no
                return Outcome(False, "rejected", "; ".join(refused))
            self._failing()
            delay = self.backoff.delay(attempt, hint)
            waited = self.monotonic() - started
            if not retry or waited + delay > cfg.retry_for_s:
                what = "; ".join(transient)
                return Outcome(False, "exhausted", f"{self.name}: gave up after {attempt + 1} "
                               f"attempts in {waited:.0f} s; last: {what}")
            if attempt & (attempt + 1) == 0:  # attempts 1, 2, 4, 8, ...: a few lines a day
                log.warning("%s: %s (attempt %d; retrying for up to %.0f s more)", self.name,
                            "; ".join(transient), attempt + 1, cfg.retry_for_s - waited)
            self.metrics.retry(self.name)
            if self.sleep(delay):
                return Outcome(False, "stopped", "shutting down during retries")
            attempt += 1

    def _failing(self) -> None:
        if self.failing_since is None:
            self.failing_since = self.wall()
            self.metrics.failing_since(self.name, self.failing_since)

    def _healthy(self) -> None:
        if self.failing_since is not None:
            log.warning("%s: answering again after %.0f s", self.name,
                        self.wall() - self.failing_since)
            self.failing_since = None
            self.metrics.failing_since(self.name, 0.0)


def _answer_text(answer: HttpAnswer) -> str:
    return f"HTTP {answer.status}" if answer.status is not None else answer.body[:300]


def _safe_url(url: str) -> str:
    """The URL without credentials or query (a webhook's token may ride in either).

    >>> _safe_url("https://bot:s3cret@tickets.example:8443/api/faultline?token=t0k")
    'https://tickets.example:8443/api/faultline'
    """
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
        self.lost.update(dict.fromkeys(self.ledger.dead()))
        self.metrics.deadletters_outstanding(self.name, len(self.lost))

    def key(self, n: Notification) -> str:
        return n.dedup_key

    def deliver(self, n: Notification) -> Outcome:
        key = self.key(n)
        ts = max((a.detected_ts for a in n.alerts()), default=0.0)
        action = widening.action_of(n.alert)
        was = self.ledger.widened(key, n.event, action, widening.action_was(n.alert))
        moved = None if was is not None else self._moved(key, n)
        if was is None and moved is None and not self.ledger.wanted(key, n.event, ts):
            return Outcome.ok(skipped=True)
        out, open_key = self.send(n, was, moved)
        if out.delivered:
            self.ledger.set(key, n.event, ts, action=action, open_key=open_key)
            self.metrics.active(self.name, self.ledger.triggered())
            self.found([key, *(a.dedup_key for a in n.alerts())])
        return out

    def dead_lettered(self, n: Notification) -> None:
        super().dead_lettered(n)
        if n.event == "trigger" and self.ledger.state(self.key(n)) != "triggered":
            # (A widened trigger given up: the one delivered before it stays open.)
            ts = max((a.detected_ts for a in n.alerts()), default=0.0)
            self.ledger.set(self.key(n), "dead", ts)

    def _moved(self, key: str, n: Notification) -> str | None:
        """The unit a trigger of triggered ``key`` moves its problem from, when that move
        was not delivered yet (:func:`~detector.pager.widening.rescoped`; None: no news).
        The move's own key (:func:`rescoped_key`) is what the ledger keeps it open under,
        so a redelivery of it is no news."""
        a = n.alert
        if (n.event != "trigger" or a is None or not widening.rescoped(a)
                or self.ledger.state(key) != "triggered"
                or self.ledger.open_key(key) == rescoped_key(n.dedup_key, a.scope.key)):
            return None
        return widening.scope_was(a)

    def send(self, n: Notification, was: str | None, moved: str | None = None
             ) -> tuple[Outcome, str]:
        """Post ``n`` (``was``: the action it widens, ``moved``: the unit it moves from, or
        None); the outcome, and the key the problem is open under at the sink afterwards
        ("": its own)."""
        raise NotImplementedError


class PagerDutySink(_LedgerSink):
    """PagerDuty Events API v2: ``trigger`` and ``resolve`` by ``dedup_key``.

    A trigger for an open dedup_key is added to its alert and notifies nobody (PagerDuty's
    de-duplication), so a problem whose action widens is triggered under a key of its own
    (:func:`~detector.pager.payloads.pd_widened_key`), which notifies, and the key it was
    open under is resolved; the problem's resolve ends whichever key is open.
    """

    def key(self, n: Notification) -> str:
        return pd_dedup_key(n.dedup_key)

    def send(self, n: Notification, was: str | None, moved: str | None = None
             ) -> tuple[Outcome, str]:
        assert self.config.routing_key is not None
        key = self.key(n)
        open_key = self.ledger.open_key(key)
        if n.event == "trigger" and (was is not None or moved is not None):
            assert n.alert is not None
            new_key = (pd_widened_key(n.dedup_key, widening.action_of(n.alert))
                       if was is not None else rescoped_key(n.dedup_key, n.alert.scope.key))
            out = self.post(self.config.urls[0], self._event(n, new_key, was, moved))
            if not out.delivered:
                return out, open_key
            if open_key != new_key:
                old = self.post(self.config.urls[0], self._event(
                    Notification(n.sink, "resolve", n.dedup_key, n.severity, None), open_key,
                    None))
                if not old.delivered:
                    log.warning("%s: %s widened to %s, but resolving %s failed: %s",
                                self.name, was, widening.action_of(n.alert), open_key,
                                old.reason)
            return out, new_key
        out = self.post(self.config.urls[0], self._event(
            n, open_key if n.event == "resolve" else key, None))
        return out, ""

    def _event(self, n: Notification, key: str, was: str | None, moved: str | None = None
               ) -> dict[str, Any]:
        assert self.config.routing_key is not None
        return pagerduty_event(n, self.config.routing_key.reveal(), source=self.config.source,
                               wall_now=self.wall(),
                               details_max_bytes=self.config.details_max_bytes,
                               dedup_key=key, action_was=was, scope_was=moved)


class WebhookSink(_LedgerSink):
    """A generic JSON webhook (a ticket queue, a chat bridge): one POST per notification."""

    def headers(self) -> dict[str, str]:
        h = dict(self.config.headers)
        if self.config.bearer_token is not None:
            h["Authorization"] = f"Bearer {self.config.bearer_token.reveal()}"
        return h

    def send(self, n: Notification, was: str | None, moved: str | None = None
             ) -> tuple[Outcome, str]:
        body = webhook_body(n, wall_now=self.wall(),
                            details_max_bytes=self.config.details_max_bytes, action_was=was,
                            scope_was=moved)
        for url in self.config.urls:
            out = self.post(url, body)
            if not out.delivered:
                return out, ""
        # (a move delivered: kept under its own key, so that its redelivery is no news)
        return Outcome.ok(), (rescoped_key(n.dedup_key, n.alert.scope.key)
                              if moved is not None and n.alert is not None else "")


class AlertmanagerSink(Sink):
    """Alertmanager API v2: active alerts posted, re-posted before they expire, then resolved."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        path = self.state_path("active")
        # dedup_key -> (envelope topic, envelope, severity): enough to rebuild the alert.
        # Kept as a Journal of [key, [topic, envelope, severity]] or [key, null] (gone): a
        # storm of distinct alerts costs one append each, not a rewrite of the whole set.
        self.active: dict[str, tuple[str, dict[str, Any], str]] = {}
        self._journal = None if path is None else Journal(path)
        if path is not None and path.exists():
            try:
                self._load(path.read_bytes())
            except (OSError, ValueError, TypeError) as exc:
                log.warning("active set %s unreadable, starting empty: %s", path, exc)
                self.active = {}
            assert self._journal is not None
            self._journal.rewrite(self._entries())
        self._resent_at = self.monotonic()
        self.metrics.active(self.name, len(self.active))

    def _load(self, data: bytes) -> None:
        if data.lstrip().startswith(b"{"):  # the former format: one JSON object
            self.active = {k: tuple(v) for k, v in  # type: ignore[misc]
                           json.loads(data).items()}
            return
        for e in Journal.entries(data):
            if len(e) != 2 or type(e[0]) is not str:
                continue
            if e[1] is None:
                self.active.pop(e[0], None)
            elif type(e[1]) is list and len(e[1]) == 3:
                self.active[e[0]] = tuple(e[1])  # type: ignore[assignment]

    def _entries(self) -> Iterator[list[Any]]:
        return ([k, list(v)] for k, v in self.active.items())

    def _save(self, changed: Iterable[str]) -> None:
        self.metrics.active(self.name, len(self.active))
        if self._journal is not None:
            for key in changed:
                v = self.active.get(key)
                self._journal.append([key, None if v is None else list(v)], len(self.active),
                                     self._entries)

    def _am(self, a: FiredAlert, severity: str, extra: str = "") -> dict[str, Any]:
        c = self.config
        return alertmanager_alert(a, severity, wall_now=self.wall(), ttl_s=c.alert_ttl_s,
                                  evidence_max_bytes=c.evidence_max_bytes, extra_summary=extra)

    def _post_all(self, alerts: list[dict[str, Any]], *, retry: bool = True) -> Outcome:
        """To every Alertmanager of an HA pair: delivered when one accepted (as Prometheus
        does); one that missed it gets it with the next re-send of the active set."""
        return self.post_any([_alerts_url(base) for base in self.config.urls], alerts,
                             retry=retry)

    def deliver(self, n: Notification) -> Outcome:
        batch: list[dict[str, Any]] = []
        alerts: list[FiredAlert] = []
        for a in n.alerts():
            key = a.dedup_key
            old = self.active.get(key)
            if old is not None and a.status == "firing":
                before = FiredAlert.from_record(old[0], old[1])
                a = _never_narrower(a, before)
                if alertmanager_labels(before, old[2]) != alertmanager_labels(a, n.severity):
                    # Same problem, new identity (its cause changed, or its action widened:
                    # the action is a label, so Alertmanager notifies of a new alert): end
                    # the old one now.
                    batch.append(self._am(_resolved(before), old[2]))
            alerts.append(a)
            batch.append(self._am(a, n.severity, n.summary))
        out = self._post_all(batch)
        if out.delivered:
            self.found(a.dedup_key for a in n.alerts())
        if out.delivered or out.failure == "exhausted":
            # Exhausted: Alertmanager is away; keep firing alerts to re-send when it is back.
            for a in alerts:
                if a.status == "firing":
                    self.active[a.dedup_key] = (a.topic, a.raw, n.severity)
                else:
                    self.active.pop(a.dedup_key, None)
            self._save(a.dedup_key for a in alerts)
        return out

    def idle(self) -> None:
        if not self.active or self.monotonic() - self._resent_at < self.config.resend_interval_s:
            return
        self._resent_at = self.monotonic()
        alerts = [self._am(FiredAlert.from_record(t, v), sev)
                  for t, v, sev in self.active.values()]
        out = self._post_all(alerts, retry=False)
        if out.delivered:
            log.debug("%s: re-sent %d active alerts", self.name, len(alerts))
            self.found(list(self.active))
        elif out.failure != "stopped":
            # Not a notification given up (nothing is dead-lettered): the next re-send tries
            # again, and faultline_pager_failing_since shows the outage meanwhile.
            log.warning("%s: re-sending %d active alerts failed: %s", self.name, len(alerts),
                        out.reason)


def _alerts_url(base: str) -> str:
    base = base.rstrip("/")
    return base if base.endswith("/api/v2/alerts") else base + "/api/v2/alerts"


def _never_narrower(a: FiredAlert, before: FiredAlert) -> FiredAlert:
    """``a``, with ``before``'s action when ``a``'s is not wider (a re-fire that narrows or
    only renames the action is not a new alert in Alertmanager: its action is a label)."""
    was, now = widening.action_of(before), widening.action_of(a)
    if not was or was == now or widening.widened(was, now):
        return a
    return FiredAlert.from_record(a.topic, {**a.raw, "action": before.raw.get("action")})


def _resolved(a: FiredAlert) -> FiredAlert:
    return FiredAlert.from_record(a.topic, {**a.raw, "status": "resolved"})


SINK_CLASSES: dict[str, type[Sink]] = {"alertmanager": AlertmanagerSink,
                                       "pagerduty": PagerDutySink, "webhook": WebhookSink}


def make_sink(config: SinkConfig, metrics: PagerMetrics, *, state_dir: Path | None,
              stop: threading.Event, rng: random.Random | None = None,
              wall: Callable[[], float] = time.time,
              monotonic: Callable[[], float] = time.monotonic,
              sleep: Callable[[float], bool] | None = None) -> Sink:
    return SINK_CLASSES[config.type](config, metrics, state_dir=state_dir, stop=stop, rng=rng,
                                     wall=wall, monotonic=monotonic, sleep=sleep)
