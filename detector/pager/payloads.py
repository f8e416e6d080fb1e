"""What each sink is sent: an Alertmanager alert, a PagerDuty event, a webhook body.

Pure functions of a :class:`~detector.pager.storm.Notification` (and the wall time
where a timestamp is needed); the sinks in :mod:`detector.pager.sinks` post them.

Limits kept here, so a payload is never refused for its size:
PagerDuty's ``payload.summary`` is at most 1,024 characters and the whole
event under 512 KB (``custom_details`` is cut to ``details_max_bytes``);
an Alertmanager label value is at most 256 characters, the evidence
annotation at most ``evidence_max_bytes``.

>>> from detector.alerts import FiredAlert
>>> from detector.pager.notification import Notification
>>> a = FiredAlert.from_record("alerts.escalation", {
...     "dedup_key": "fl:c1:esc:unattributed:node:node-007", "status": "firing",
...     "kind": "unattributed", "cause": "unknown", "onset_ts": 100.0, "detected_ts": 103.0,
...     "scope": {"level": "node", "node": "node-007"}, "cluster": "c1", "tenant": "t-a",
...     "summary": "slow rank, no cause", "evidence": {"next_diagnostic": "dcgmi diag -r 3"}})
>>> n = Notification("am", "trigger", a.dedup_key, "critical", a)
>>> am = alertmanager_alert(a, "critical", wall_now=200.0, ttl_s=240.0)
>>> " ".join(sorted(am["labels"]))
'alertname cause cluster dedup_key kind level node severity source tenant topic'
>>> am["labels"]["alertname"], am["labels"]["topic"], am["labels"]["node"]
('FaultlineEscalation', 'escalation', 'node-007')
>>> am["annotations"]["next_diagnostic"]
'dcgmi diag -r 3'
>>> ev = pagerduty_event(n, "R" * 32, source=None, wall_now=200.0, details_max_bytes=65536)
>>> ev["event_action"], ev["payload"]["severity"], ev["payload"]["source"]
('trigger', 'critical', 'node-007')
"""

from __future__ import annotations

import re
import unicodedata
from datetime import UTC, datetime
from typing import Any

import orjson

from detector.alerts import ESCALATION, FiredAlert
from detector.pager.config import SHORT_TOPIC
from detector.pager.notification import Notification

SUMMARY_MAX_CHARS = 1024      # PagerDuty payload.summary
DEDUP_KEY_MAX_CHARS = 255     # PagerDuty dedup_key
LABEL_MAX_CHARS = 256         # ours, for Alertmanager label values
WEBHOOK_VERSION = 1
_SCOPE_LABELS = ("node", "gpu", "nic", "port", "switch", "domain", "job", "dp_rank")


def iso(ts: float) -> str:
    """RFC 3339 UTC with milliseconds, as Alertmanager and PagerDuty take it."""
    return datetime.fromtimestamp(ts, UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


def alert_name(topic: str) -> str:
    return "FaultlineEscalation" if topic == ESCALATION else "FaultlineIsolation"


def title(a: FiredAlert) -> str:
    """One line: what, where, and the detector's own summary."""
    head = f"[faultline {SHORT_TOPIC.get(a.topic, a.topic)}] {a.kind}/{a.cause} on {a.scope.key}"
    text = a.summary
    # Envelopes written before the summary stopped repeating its kind and scope.
    text = text.removeprefix(f"{a.kind}/{a.cause} on {a.scope.key}").removeprefix(": ")
    return f"{head}: {text}" if text else head


def _action_text(a: FiredAlert) -> str:
    act = a.action
    if act is None:
        return ""
    line = ": ".join(p for p in (act.name, act.detail) if p)
    if act.requires_approval:
        line += " (requires approval)"
    if act.rollback:
        line += f"; rollback: {act.rollback}"
    return line


def _next_diagnostic(a: FiredAlert) -> str | None:
    return a.next_diagnostic


def _three_figures(a: FiredAlert) -> dict[str, str]:
    """Detection latency, isolation granularity and recovery time, as a person reads them."""
    out = {"detection_latency_s": f"{a.detection_latency_s:.3f}"}
    if a.granularity is not None:
        out["granularity"] = a.granularity.line()
    if a.recovery is not None:
        out["recovery"] = a.recovery.line()
    return out


def bounded_json(value: Any, max_bytes: int) -> str:
    """``value`` as compact JSON, cut to ``max_bytes`` with a note saying how much was cut."""
    text = orjson.dumps(value, default=str).decode()
    if len(text.encode()) <= max_bytes:
        return text
    note = f"... (cut: {len(text.encode())} bytes in all)"
    keep = max(0, max_bytes - len(note.encode()))
    return text.encode()[:keep].decode(errors="ignore") + note


# What a name or text from telemetry must not carry into a page: terminal escape sequences
# (CSI, OSC), other control characters, and Unicode format characters (bidi overrides such
# as U+202E, zero-width characters) that make a text read differently than it is.
_ESCAPES = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]"           # CSI: colours, cursor moves
                      r"|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?"  # OSC: titles, hyperlinks
                      r"|\x9b[0-?]*[ -/]*[@-~]")
STRING_MAX_CHARS = 65536      # any one string in a payload


def clean_text(text: str, *, max_chars: int = STRING_MAX_CHARS, one_line: bool = False) -> str:
    r"""``text`` without escape sequences, control and format characters, cut to ``max_chars``.

    >>> clean_text("node-1\x1b[31mRED\x1b[0m\u202eevil\x00")
    'node-1REDevil'
    >>> clean_text("a\nb\tc", one_line=True), clean_text("a\nb")
    ('a b c', 'a\nb')
    >>> len(clean_text("x" * 9, max_chars=4))
    4
    """
    text = text[:max_chars]  # first: a megabyte name costs no more than its first part
    if not text.isprintable():
        text = _ESCAPES.sub("", text)
        text = "".join(
            (" " if one_line else ch) if ch in "\n\t"
            else ch for ch in text
            if ch in "\n\t" or unicodedata.category(ch) not in ("Cc", "Cf", "Cs", "Co", "Cn"))
    return text[:max_chars]


def clean(value: Any, *, max_chars: int = STRING_MAX_CHARS) -> Any:
    """Every string in a JSON-like value (keys too) through :func:`clean_text`."""
    if isinstance(value, str):
        return clean_text(value, max_chars=max_chars)
    if isinstance(value, dict):
        return {clean_text(str(k), max_chars=max_chars): clean(v, max_chars=max_chars)
                for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [clean(v, max_chars=max_chars) for v in value]
    return value


def _label(v: Any) -> str:
    return clean_text(str(v), max_chars=LABEL_MAX_CHARS, one_line=True)


# -- Alertmanager ------------------------------------------------------------------------


def alertmanager_labels(a: FiredAlert, severity: str) -> dict[str, str]:
    """The identity of an alert in Alertmanager: stable for one problem (no evidence here)."""
    labels = {"alertname": alert_name(a.topic), "topic": SHORT_TOPIC.get(a.topic, a.topic),
              "kind": a.kind, "cause": a.cause, "severity": severity, "level": a.scope.level,
              "dedup_key": a.dedup_key, "source": "faultline"}
    if a.action is not None and a.action.name:
        # (A label: a problem whose action widens is a new alert, which notifies.)
        labels["action"] = a.action.name
    scope = a.scope.to_dict()
    for k in _SCOPE_LABELS:
        if scope.get(k) is not None:
            labels[k] = scope[k]
    for k, v in (("cluster", a.cluster), ("tenant", a.tenant)):
        if v:
            labels[k] = v
    return {k: _label(v) for k, v in labels.items()}


def alertmanager_alert(a: FiredAlert, severity: str, *, wall_now: float, ttl_s: float,
                       evidence_max_bytes: int = 4096, extra_summary: str = "") -> dict[str, Any]:
    """One element of ``POST /api/v2/alerts``; a resolved alert gets ``endsAt``."""
    ann = {"summary": title(a)[:SUMMARY_MAX_CHARS], "action": _action_text(a),
           "evidence": bounded_json(a.evidence, evidence_max_bytes),
           "confidence": f"{a.confidence:.2f}", **_three_figures(a),
           "onset": iso(a.onset_ts), "detected": iso(a.detected_ts)}
    diag = _next_diagnostic(a)
    if diag:
        ann["next_diagnostic"] = diag
    if a.job:
        ann["job"] = a.job
    was = a.evidence.get("action_was") if isinstance(a.evidence, dict) else None
    if isinstance(was, str) and was:
        ann["action_was"] = _label(was)
    if extra_summary:
        ann["grouped"] = extra_summary[:SUMMARY_MAX_CHARS]
    # Event time may run ahead of (a replay) or behind (a backlog) the wall clock:
    # Alertmanager judges by its own clock, so clamp to now.
    starts = min(a.detected_ts, wall_now)
    ends = wall_now if a.status == "resolved" else wall_now + ttl_s
    out: dict[str, Any] = {"labels": alertmanager_labels(a, severity), "annotations": ann,
                           "startsAt": iso(starts), "endsAt": iso(max(ends, starts))}
    return clean(out)


# -- PagerDuty ---------------------------------------------------------------------------


def pd_dedup_key(key: str) -> str:
    """PagerDuty takes at most 255 characters: a longer key keeps its start and a hash."""
    if len(key) <= DEDUP_KEY_MAX_CHARS:
        return key
    import hashlib
    digest = hashlib.blake2b(key.encode(), digest_size=16).hexdigest()
    return key[:DEDUP_KEY_MAX_CHARS - 33] + "~" + digest


def _source(a: FiredAlert | None) -> str:
    if a is None:
        return "faultline"
    s = a.scope
    return s.node or s.switch or s.domain or (f"job {s.job}" if s.job else s.key)


def _brief(a: FiredAlert) -> dict[str, Any]:
    return {"dedup_key": a.dedup_key, "status": a.status, "kind": a.kind, "cause": a.cause,
            "scope": a.scope.key, "tenant": a.tenant, "summary": a.summary or None}


def details(n: Notification, max_bytes: int) -> dict[str, Any]:
    """What a person paged needs, bounded: the envelope (evidence cut if large) and the group."""
    d: dict[str, Any] = {}
    a = n.alert
    if a is not None:
        d = {"topic": a.topic, "dedup_key": a.dedup_key, "kind": a.kind, "cause": a.cause,
             "scope": a.scope.to_dict(),
             "action": a.action.to_dict() if a.action is not None else None,
             "confidence": a.confidence, "onset": iso(a.onset_ts), "detected": iso(a.detected_ts),
             "detection_latency_s": round(a.detection_latency_s, 3),
             "granularity": a.granularity.to_dict() if a.granularity is not None else None,
             "recovery": a.recovery.to_dict() if a.recovery is not None else None,
             "job": a.job, "tenant": a.tenant, "cluster": a.cluster,
             "next_diagnostic": _next_diagnostic(a), "evidence": a.evidence,
             "alert_id": a.id}
    if n.summary:
        d["storm"] = n.summary
    if n.members:
        d["grouped"] = [_brief(m) for m in n.members]
    if n.held_back:
        d["held_back"] = [_brief(h) for h in n.held_back]
    size = len(orjson.dumps(d, default=str))
    if size > max_bytes and "evidence" in d:
        d["evidence"] = bounded_json(d["evidence"], max(256, max_bytes // 4))
    for key in ("grouped", "held_back"):
        while key in d and len(orjson.dumps(d, default=str)) > max_bytes and len(d[key]) > 1:
            cut = len(d[key]) // 2
            d[f"{key}_not_listed"] = d.get(f"{key}_not_listed", 0) + len(d[key]) - cut
            d[key] = d[key][:cut]
    if len(orjson.dumps(d, default=str)) > max_bytes:  # still too big: say so, keep the key
        d = {"dedup_key": d.get("dedup_key"), "storm": d.get("storm"),
             "note": f"details cut: over {max_bytes} bytes"}
    return d


def pd_widened_key(key: str, action: str) -> str:
    """The PagerDuty dedup_key of a problem once its action widened to ``action``.

    >>> pd_widened_key("fl:iso:hardware:gpu:node-015/3", "drain_node")
    'fl:iso:hardware:gpu:node-015/3~drain_node'
    """
    return pd_dedup_key(f"{clean_text(key)}~{clean_text(action, max_chars=64)}")


def rescoped_key(key: str, scope: str) -> str:
    """The key a problem is open under at a ledger sink once it moved to unit ``scope``
    (detector.pager.widening.rescoped): PagerDuty's dedup_key of it, a webhook's marker.

    >>> rescoped_key("fl:esc:sdc:job:job-1", "gpu:node-000/1")
    'fl:esc:sdc:job:job-1@gpu:node-000/1'
    """
    return pd_dedup_key(f"{clean_text(key)}@{clean_text(scope, max_chars=128)}")


def pagerduty_event(n: Notification, routing_key: str, *, source: str | None,
                    wall_now: float, details_max_bytes: int, dedup_key: str | None = None,
                    action_was: str | None = None, scope_was: str | None = None
                    ) -> dict[str, Any]:
    """An Events API v2 event: ``trigger`` with a payload, or ``resolve``
    (``dedup_key``: another key than the notification's; ``action_was``: the action a
    widened trigger replaces, ``scope_was``: the unit a re-scoped one leaves -- each said in
    its summary and details)."""
    ev: dict[str, Any] = {"routing_key": routing_key, "event_action": n.event,
                          "dedup_key": dedup_key or pd_dedup_key(clean_text(n.dedup_key))}
    if n.event != "trigger":
        return ev
    a = n.alert
    text = title(a) if a is not None else n.summary
    if a is not None and action_was:
        text = f"{_widened_line(a, action_was)} {text}"
    elif a is not None and scope_was:
        text = f"{_rescoped_line(a, scope_was)} {text}"
    if a is not None and n.summary:
        text = f"{text} [{n.summary}]"
    primary = a if a is not None else (n.held_back[0] if n.held_back else None)
    ev["payload"] = {
        "summary": text[:SUMMARY_MAX_CHARS],
        "source": (source or _source(primary))[:SUMMARY_MAX_CHARS],
        "severity": n.severity,
        "timestamp": iso(min(a.detected_ts, wall_now) if a is not None else wall_now),
        "component": primary.scope.key if primary is not None else "faultline",
        "group": (primary.cluster if primary is not None else None) or "faultline",
        "class": f"{primary.kind}/{primary.cause}" if primary is not None else "held_back",
        "custom_details": details(n, details_max_bytes),
    }
    if action_was:
        ev["payload"]["custom_details"]["action_was"] = action_was
    if scope_was:
        ev["payload"]["custom_details"]["scope_was"] = scope_was
    ev["client"] = "faultline"
    return clean(ev)


# -- webhook -----------------------------------------------------------------------------


def _widened_line(a: FiredAlert, action_was: str) -> str:
    name = a.action.name if a.action is not None else "?"
    return f"ACTION WIDENED {action_was} -> {name}:"


def _rescoped_line(a: FiredAlert, scope_was: str) -> str:
    return f"NOW AT {a.scope.key} (was {scope_was}):"


def webhook_body(n: Notification, *, wall_now: float, details_max_bytes: int,
                 action_was: str | None = None, scope_was: str | None = None
                 ) -> dict[str, Any]:
    """A JSON body for a ticket queue or a chat bridge: the envelope itself, plus storm info
    (``action_was``: the action a widened trigger replaces)."""
    a = n.alert
    envelope: dict[str, Any] | None = None
    if a is not None:
        envelope = dict(a.raw)
        if len(orjson.dumps(envelope, default=str)) > details_max_bytes:
            envelope["evidence"] = bounded_json(envelope.get("evidence", {}),
                                                max(256, details_max_bytes // 4))
    body: dict[str, Any] = {
        "version": WEBHOOK_VERSION, "source": "faultline", "event": n.event,
        "dedup_key": n.dedup_key, "severity": n.severity,
        "topic": a.topic if a is not None else None,
        "title": (title(a) if a is not None else n.summary)[:SUMMARY_MAX_CHARS],
        "sent_at": iso(wall_now), "alert": envelope,
    }
    if n.summary:
        body["storm"] = n.summary
    if n.members:
        body["grouped"] = [_brief(m) for m in n.members]
    if n.held_back:
        body["held_back"] = [_brief(h) for h in n.held_back]
    if action_was and a is not None:
        body["action_was"] = action_was
        body["title"] = f"{_widened_line(a, action_was)} {body['title']}"[:SUMMARY_MAX_CHARS]
    elif scope_was and a is not None:
        body["scope_was"] = scope_was
        body["title"] = f"{_rescoped_line(a, scope_was)} {body['title']}"[:SUMMARY_MAX_CHARS]
    return clean(body)
