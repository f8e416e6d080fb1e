"""A test harness for the pager: a fake clock, alert builders, a recording HTTP receiver,
and a check of PagerDuty Events API v2 payloads.  Standard library only.

>>> clock = FakeClock(100.0)
>>> clock.advance(2.5)
102.5
>>> a = alert("node-003")
>>> a.dedup_key, a.scope.key
('fl:c1:iso:network:nic:node-003/mlx5_0', 'nic:node-003/mlx5_0')
>>> validate_pagerduty_event(b'{"routing_key": "x", "event_action": "trigger"}')
Traceback (most recent call last):
ValueError: routing_key must be a 32-character string
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from detector.alerts import ESCALATION, ISOLATION, FiredAlert

PD_MAX_BODY_BYTES = 512 * 1024
PD_SEVERITIES = ("critical", "error", "warning", "info")
_PD_TOP = {"routing_key", "event_action", "dedup_key", "payload", "images", "links", "client",
           "client_url"}
_PD_PAYLOAD = {"summary", "source", "severity", "timestamp", "component", "group", "class",
               "custom_details"}


class FakeClock:
    """A clock that moves only when told to: ``clock()`` reads it."""

    def __init__(self, t: float = 0.0) -> None:
        self.t = t

    def __call__(self) -> float:
        return self.t

    def advance(self, seconds: float) -> float:
        self.t += seconds
        return self.t

    def sleeper(self, stop: threading.Event | None = None, *, also: FakeClock | None = None
                ) -> Callable[[float], bool]:
        """A ``sleep(seconds) -> stopped`` that moves this clock (and ``also``) at once."""
        lock = threading.Lock()

        def sleep(seconds: float) -> bool:
            if stop is not None and stop.is_set():
                return True
            with lock:
                self.advance(seconds)
                if also is not None:
                    also.advance(seconds)
            time.sleep(0.001)  # let the other threads run, as a real wait would
            return False

        return sleep


def envelope(node: str = "node-007", *, topic: str = ISOLATION, kind: str = "network",
             cause: str = "nic", status: str = "firing", level: str | None = None,
             cluster: str | None = "c1", tenant: str | None = "tenant-a",
             detected_ts: float = 1767225600.0, evidence: dict[str, Any] | None = None,
             summary: str | None = None, dedup_key: str | None = None,
             **scope_ids: Any) -> dict[str, Any]:
    """An alert envelope as the detector writes it (DESIGN.md, output contract)."""
    if level is None:
        level = "nic" if kind == "network" and cause == "nic" else "node"
    scope: dict[str, Any] = {"level": level}
    if level in ("gpu", "node", "nic"):
        scope["node"] = node
    if level == "gpu":
        scope["gpu"] = scope_ids.pop("gpu", 0)
    if level == "nic":
        scope["nic"] = scope_ids.pop("nic", "mlx5_0")
    if level == "switch":
        scope["switch"] = scope_ids.pop("switch", node)
    if level in ("job", "replica"):
        scope["job"] = scope_ids.pop("job", "job-1")
    if level == "replica":
        scope["dp_rank"] = scope_ids.pop("dp_rank", 0)
    if level == "domain":
        scope["domain"] = scope_ids.pop("domain", node)
    scope.update(scope_ids)
    unit = _unit(scope)
    short = "iso" if topic == ISOLATION else "esc"
    key = dedup_key or f"fl:{cluster + ':' if cluster else ''}{short}:{kind}:{unit}"
    ev = dict(evidence if evidence is not None else {"signals": [{"signal": "link_down"}]})
    if topic == ESCALATION:
        ev.setdefault("next_diagnostic", f"`dcgmi diag -r 3` on {node}")
    value: dict[str, Any] = {
        "id": hashlib.blake2b(f"{key}|{status}|{detected_ts}".encode(),
                              digest_size=8).hexdigest(), "dedup_key": key,
        "status": status, "kind": kind, "cause": cause, "scope": scope,
        "action": {"name": "check_link" if kind == "network" else "investigate",
                   "detail": f"look at {unit}", "requires_approval": True,
                   "rollback": "nothing was changed"},
        "onset_ts": detected_ts - 1.0, "detected_ts": detected_ts, "detection_latency_s": 1.0,
        "confidence": 0.9, "evidence": ev, "job": "job-1", "tenant": tenant,
        "summary": summary if summary is not None else "signal=link_down"}
    if cluster is not None:
        value["cluster"] = cluster
    return value


def _unit(scope: dict[str, Any]) -> str:
    from detector.alerts import Scope
    return Scope.from_dict(scope).key


def alert(node: str = "node-007", **kwargs: Any) -> FiredAlert:
    """A parsed alert (what the pager handles), built like :func:`envelope`."""
    topic = kwargs.get("topic", ISOLATION)
    return FiredAlert.from_record(topic, envelope(node, **kwargs))


def resolved(a: FiredAlert) -> FiredAlert:
    return FiredAlert.from_record(a.topic, {**a.raw, "status": "resolved"})


# -- an HTTP receiver --------------------------------------------------------------------


@dataclass
class Request:
    path: str
    headers: dict[str, str]
    body: bytes
    status: int             # what the receiver answered

    def json(self) -> Any:
        return json.loads(self.body)


@dataclass
class Receiver:
    """A local HTTP server recording every POST; answers from ``answers`` in turn, then 200.

    ``validate(body) -> None`` may raise ValueError: the receiver answers 400 with the
    message (as PagerDuty does for an invalid event).
    """

    answers: list[int] = field(default_factory=list)
    default: int = 200
    decide: Callable[[], int] | None = None   # the status to answer, when given (not answers)
    retry_after: str | None = None            # sent as Retry-After with every non-2xx answer
    validate: Callable[[bytes], Any] | None = None
    reply: bytes = b'{"status": "success"}'
    requests: list[Request] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._lock = threading.RLock()  # conditions in wait_for may call bodies()
        self._changed = threading.Condition(self._lock)
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 - http.server's name
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                status, text = receiver._answer(body)
                receiver._record(Request(self.path, dict(self.headers.items()), body, status))
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(text)))
                if status >= 300 and receiver.retry_after is not None:
                    self.send_header("Retry-After", receiver.retry_after)
                self.end_headers()
                self.wfile.write(text)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, args=(0.05,),
                                        daemon=True, name="test-receiver")
        self._thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_port}"

    def _answer(self, body: bytes) -> tuple[int, bytes]:
        if self.validate is not None:
            try:
                self.validate(body)
            except ValueError as exc:
                return 400, json.dumps({"status": "invalid event", "message": "Event object "
                                        "is invalid", "errors": [str(exc)]}).encode()
        with self._lock:
            if self.decide is not None:
                status = self.decide()
            else:
                status = self.answers.pop(0) if self.answers else self.default
        return status, (self.reply if status < 300 else b'{"status": "try again"}')

    def _record(self, r: Request) -> None:
        with self._changed:
            self.requests.append(r)
            self._changed.notify_all()

    def bodies(self, status: int | None = None) -> list[Any]:
        with self._lock:
            return [r.json() for r in self.requests if status is None or r.status == status]

    def wait_for(self, what: str, condition: Callable[[list[Request]], Any],
                 timeout_s: float = 10.0) -> Any:
        """Until ``condition(requests)`` is truthy; AssertionError naming ``what`` if never."""
        deadline = time.monotonic() + timeout_s
        with self._changed:
            while True:
                result = condition(list(self.requests))
                if result:
                    return result
                left = deadline - time.monotonic()
                if left <= 0:
                    raise AssertionError(f"timed out after {timeout_s:g}s waiting for {what}; "
                                         f"{len(self.requests)} requests: "
                                         f"{[r.body[:200] for r in self.requests[-5:]]}")
                self._changed.wait(min(left, 0.2))

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(5)

    def __enter__(self) -> Receiver:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


# -- PagerDuty's schema ------------------------------------------------------------------


def validate_pagerduty_event(body: bytes) -> dict[str, Any]:
    """Check one Events API v2 request body as PagerDuty documents it; ValueError says why."""
    if len(body) >= PD_MAX_BODY_BYTES:
        raise ValueError(f"event is {len(body)} bytes, over 512 KB")
    try:
        ev = json.loads(body)
    except ValueError:
        raise ValueError("body is not JSON") from None
    if not isinstance(ev, dict):
        raise ValueError("event must be an object")
    unknown = set(ev) - _PD_TOP
    if unknown:
        raise ValueError(f"unknown fields {sorted(unknown)}")
    if not isinstance(ev.get("routing_key"), str) or len(ev["routing_key"]) != 32:
        raise ValueError("routing_key must be a 32-character string")
    action = ev.get("event_action")
    if action not in ("trigger", "acknowledge", "resolve"):
        raise ValueError(f"event_action must be trigger, acknowledge or resolve, got {action!r}")
    key = ev.get("dedup_key")
    if key is not None and (not isinstance(key, str) or not 0 < len(key) <= 255):
        raise ValueError("dedup_key must be a string of 1 to 255 characters")
    if action != "trigger":
        if key is None:
            raise ValueError(f"{action} needs dedup_key")
        return ev
    p = ev.get("payload")
    if not isinstance(p, dict):
        raise ValueError("trigger needs payload")
    unknown = set(p) - _PD_PAYLOAD
    if unknown:
        raise ValueError(f"unknown payload fields {sorted(unknown)}")
    for f in ("summary", "source"):
        if not isinstance(p.get(f), str) or not p[f]:
            raise ValueError(f"payload.{f} is required")
    if len(p["summary"]) > 1024:
        raise ValueError(f"payload.summary is {len(p['summary'])} characters, over 1,024")
    if p.get("severity") not in PD_SEVERITIES:
        raise ValueError(f"payload.severity must be one of {PD_SEVERITIES}")
    for f in ("timestamp", "component", "group", "class"):
        if f in p and not isinstance(p[f], str):
            raise ValueError(f"payload.{f} must be a string")
    if "timestamp" in p:
        from datetime import datetime
        try:
            datetime.fromisoformat(p["timestamp"].replace("Z", "+00:00"))
        except ValueError:
            raise ValueError("payload.timestamp must be ISO 8601") from None
    if "custom_details" in p and not isinstance(p["custom_details"], dict):
        raise ValueError("payload.custom_details must be an object")
    return ev


def triggers(bodies: Iterable[dict[str, Any]]) -> list[str]:
    """The dedup_keys of the trigger events among request bodies, in order."""
    return [b["dedup_key"] for b in bodies if b.get("event_action") == "trigger"]
