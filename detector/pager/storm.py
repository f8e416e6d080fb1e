"""Storm control for one sink: a leaf-switch failure is one page, not sixty-four.

Two mechanisms, both on an injected clock (wall seconds, monotonic):

- **Hold.**  A firing alert waits ``hold_s`` (20 s) before it is grouped; if its
  resolve comes inside the hold, neither goes anywhere and it is counted
  (``withdrawn``): a page the detector took back seconds after it fired -- a finer
  unit superseded by a coarser one, a node's power page withdrawn when its site's
  cap shows, a NIC page withdrawn when its rail retrains -- wakes nobody.  Only
  those pages are held (:func:`detector.pager.hold.held`); a hardware event's page
  (an XID, a DBE, a link down, a checksum mismatch) never is.  A held page whose
  group was notified while it was held waits ``group_wait_s`` after the hold, not
  the group interval.
- **Grouping.**  Firing alerts alike in the configured fields (by default
  cluster, topic, kind and cause; ``switch`` groups by leaf switch) are held
  for ``group_wait_s`` after the first one, then go out as one notification:
  the most severe alert is its primary (its ``dedup_key`` is the
  notification's, so the same problem never pages twice), the others ride
  along as members.  Alerts of the same group arriving later wait until
  ``group_interval_s`` after the last notification of that group.  A group's
  notification is resolved when every alert in it has resolved; an alert that
  resolves before it was sent is dropped (a blip pages nobody) and counted.
- **Rate limit.**  Each notification takes a token from a bucket (``burst``,
  refilled at ``per_minute``).  With none left, its alerts are held back; when
  a token is there again, one summary goes out: "held back N alerts", by kind
  and cause, with the first ``max_listed`` scopes.  Resolves are never limited.

Every alert carries a *ticket* (its Kafka offset, in the pager); a ticket is
handed on with the notification that delivers the alert, or done at once
when the alert needs no message of its own (a duplicate, or a member of a
group already sent), so an offset is committed only once what it asked for
is out.

>>> from detector.alerts import FiredAlert
>>> from detector.pager.config import StormConfig
>>> def nic(node, status="firing"):
...     return FiredAlert.from_record("alerts.isolation", {
...         "dedup_key": f"fl:iso:network:nic:{node}/mlx5_0", "status": status,
...         "kind": "network", "cause": "nic", "onset_ts": 0.0, "detected_ts": 0.0,
...         "scope": {"level": "nic", "node": node, "nic": "mlx5_0"}, "cluster": "c1"})
>>> storm = StormControl("oncall", StormConfig(hold_s=0.0, group_wait_s=5.0), now=0.0)
>>> out = []
>>> for i in range(64):
...     out += storm.offer(nic(f"node-{i:03d}"), "warning", None, now=0.01 * i)
>>> out, [len(n.members) for n in storm.due(now=5.0)]
([], [63])
>>> out = []
>>> for i in range(64):
...     out += storm.offer(nic(f"node-{i:03d}", "resolved"), "warning", None, now=60.0)
>>> [(n.event, n.dedup_key) for n in out]
[('resolve', 'fl:iso:network:nic:node-000/mlx5_0')]
"""

from __future__ import annotations

import hashlib
import json
import logging
import math
import os
import threading
from collections import Counter, OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from detector.alerts import FiredAlert
from detector.pager import widening
from detector.pager.config import SEVERITIES, StormConfig
from detector.pager.hold import held
from detector.pager.notification import Notification
from detector.topology import Topology

MAX_REMEMBERED = 100_000  # notified alerts kept for their resolves; the oldest go first
log = logging.getLogger("faultline.pager")


@dataclass(slots=True)
class _Item:
    alert: FiredAlert
    severity: str
    ticket: Any
    arrived: float = -math.inf  # when storm control took it (the hold's start)


@dataclass(slots=True)
class _Group:
    pending: OrderedDict[str, _Item] = field(default_factory=OrderedDict)
    flush_at: float = math.inf
    last_sent: float = -math.inf


@dataclass(slots=True)
class _Sent:
    """A notification out: its key, and which of its alerts still fire."""

    key: str
    firing: set[str]


class TokenBucket:
    """``burst`` tokens, refilled at ``per_minute``; starts full.

    >>> b = TokenBucket(burst=2, per_minute=6.0, now=0.0)
    >>> [b.take(0.0), b.take(0.0), b.take(0.0), b.take(10.0)]
    [True, True, False, True]
    """

    def __init__(self, burst: int, per_minute: float, *, now: float) -> None:
        self.burst = burst
        self.rate_per_s = per_minute / 60.0
        self._tokens = float(burst)
        self._at = now

    def _refill(self, now: float) -> None:
        if now > self._at:
            self._tokens = min(self.burst, self._tokens + (now - self._at) * self.rate_per_s)
            self._at = now

    def take(self, now: float) -> bool:
        self._refill(now)
        if self._tokens >= 1.0:
            self._tokens -= 1.0
            return True
        return False

    def next_token_at(self, now: float) -> float:
        self._refill(now)
        return now if self._tokens >= 1.0 else now + (1.0 - self._tokens) / self.rate_per_s


def severity_rank(severity: str) -> int:
    """0 for critical ... 3 for info (unknown: after info)."""
    return SEVERITIES.index(severity) if severity in SEVERITIES else len(SEVERITIES)


class StormControl:
    """Grouping and rate limiting of one sink's notifications (see the module doc)."""

    def __init__(self, sink: str, config: StormConfig, *, now: float,
                 topology: Topology | None = None,
                 on_held: Callable[[str, int], None] | None = None,
                 state_path: Path | None = None) -> None:
        self.sink = sink
        self.config = config
        self.topology = topology
        self._on_held = on_held or (lambda reason, n: None)
        self._bucket = TokenBucket(config.burst, config.per_minute, now=now)
        self._groups: dict[tuple[str, ...], _Group] = {}
        self._pending_in: dict[str, tuple[str, ...]] = {}
        self._held: OrderedDict[str, _Item] = OrderedDict()
        # In the hold, by key: the alert and when it goes on (in release order: the hold is
        # one length, the clock never goes back).
        self._hold: OrderedDict[str, tuple[_Item, float]] = OrderedDict()
        self._sent: OrderedDict[str, _Sent] = OrderedDict()
        # Delivered notifications with alerts still firing, kept on disk so that after a
        # restart a group still resolves as one (a notification made but not delivered is
        # not kept: its alerts are uncommitted and come again).
        self._state_path = state_path
        self._lock = threading.Lock()
        self._durable: dict[str, list[str]] = {}
        if state_path is not None and state_path.exists():
            try:
                self._durable = {str(k): list(v) for k, v in
                                 json.loads(state_path.read_text()).items()}
            except (OSError, ValueError) as exc:
                log.warning("storm state %s unreadable, starting empty: %s", state_path, exc)
        for note_key, members in self._durable.items():
            sent = _Sent(note_key, set(members))
            for k in members:
                self._sent[k] = sent

    def _confirm(self, sent: _Sent) -> None:
        with self._lock:
            if sent.firing:
                self._durable[sent.key] = sorted(sent.firing)
                self._save()

    def _save(self) -> None:
        if self._state_path is None:
            return
        tmp = self._state_path.with_suffix(".tmp")
        tmp.write_text(json.dumps(self._durable))
        os.replace(tmp, self._state_path)

    # -- input ---------------------------------------------------------------------------

    def offer(self, alert: FiredAlert, severity: str, ticket: Any, *, now: float
              ) -> list[Notification]:
        """Take one alert message; returns what is to be sent now (often nothing yet)."""
        if alert.status == "resolved":
            return self._resolve(alert, severity, ticket)
        key = alert.dedup_key
        sent = self._sent.get(key)
        if sent is not None and widening.news(alert):
            # Its action widened (drain_gpu -> drain_node): news for whoever was paged, at
            # once, under the notification it went out in; the sink's ledger keeps a
            # redelivery or a same-action re-fire from paging again.  Not held by the rate
            # limit (a held alert's resolve would be dropped as cleared, and the page it
            # widens is out), but it spends a token: groups after it feel it.
            self._bucket.take(now)
            return [Notification(self.sink, "trigger", sent.key, severity, alert,
                                 tickets=[ticket])]
        in_hold = self._hold.get(key)
        if (key in self._sent or key in self._held or key in self._pending_in
                or in_hold is not None):
            # Re-sent by the detector (more evidence) or redelivered: it is in hand already.
            if key in self._pending_in:
                item = self._groups[self._pending_in[key]].pending[key]
                item.alert = alert  # the newest evidence goes out
            _done(ticket)
            self._on_held("duplicate", 1)
            if in_hold is None:
                return []
            in_hold[0].alert = alert
            if held(alert):
                return []
            del self._hold[key]  # it turned out a hardware event's: no longer held
            self._group(in_hold[0], now)
            return self.due(now)
        item = _Item(alert, severity, ticket, now)
        if self.config.hold_s > 0 and held(alert):
            self._hold[key] = (item, now + self.config.hold_s)
        else:
            self._group(item, now)
        return self.due(now)

    def _group(self, item: _Item, now: float) -> None:
        """Into its group, to go out with it (no sooner than ``group_wait_s`` from now).

        A page released from the hold into a group notified after it arrived would have
        gone out in that notification without the hold: it waits ``group_wait_s`` only,
        not the group interval (revA34 F1), so no page waits longer than ``hold_s +
        group_wait_s`` from its arrival for the hold's sake."""
        key = item.alert.dedup_key
        gkey = self.group_key(item.alert)
        group = self._groups.get(gkey)
        if group is None:
            group = self._groups[gkey] = _Group()
        wait = now + self.config.group_wait_s
        if item.arrived < now and group.last_sent >= item.arrived:  # (sent while it was held)
            group.flush_at = min(group.flush_at, wait) if group.pending else wait
        elif not group.pending:
            group.flush_at = max(wait, group.last_sent + self.config.group_interval_s)
        group.pending[key] = item
        self._pending_in[key] = gkey

    def _resolve(self, alert: FiredAlert, severity: str, ticket: Any) -> list[Notification]:
        key = alert.dedup_key
        in_hold = self._hold.pop(key, None)
        if in_hold is not None:  # taken back inside the hold: nobody is paged
            _done(in_hold[0].ticket)
            _done(ticket)
            self._on_held("withdrawn", 1)
            return []
        gkey = self._pending_in.pop(key, None)
        if gkey is not None:  # resolved before it was sent: nobody needs to hear of it
            item = self._groups[gkey].pending.pop(key)
            _done(item.ticket)
            _done(ticket)
            self._on_held("cleared", 1)
            return []
        item = self._held.pop(key, None)
        if item is not None:
            _done(item.ticket)
            _done(ticket)
            self._on_held("cleared", 1)
            return []
        sent = self._sent.pop(key, None)
        if sent is None:  # not sent by us (or before a restart): pass the resolve on
            return [Notification(self.sink, "resolve", key, severity, alert, tickets=[ticket])]
        with self._lock:
            sent.firing.discard(key)
            if sent.key in self._durable:
                if sent.firing:
                    self._durable[sent.key] = sorted(sent.firing)
                else:
                    del self._durable[sent.key]
                self._save()
        if sent.firing:  # others of its notification still fire
            _done(ticket)
            return []
        return [Notification(self.sink, "resolve", sent.key, severity, alert, tickets=[ticket])]

    def drop_revoked(self) -> int:
        """Drop the alerts held, waiting for their group or rate limited whose tickets are no
        longer live (their Kafka partition was revoked: uncommitted, the new owner reads them
        again and sends them, or sees their resolve) -- so this pager sends no trigger whose
        resolve goes to another (revA34 F3).  Returns how many were dropped."""
        n = 0
        for key in [k for k, (it, _) in self._hold.items() if not _live(it.ticket)]:
            del self._hold[key]
            n += 1
        for key in [k for k, it in self._held.items() if not _live(it.ticket)]:
            del self._held[key]
            n += 1
        for key, gkey in list(self._pending_in.items()):
            group = self._groups[gkey]
            if not _live(group.pending[key].ticket):
                del group.pending[key]
                del self._pending_in[key]
                n += 1
        return n

    # -- time ----------------------------------------------------------------------------

    def due(self, now: float) -> list[Notification]:
        """Notifications whose time has come: held-back summaries first, then groups."""
        out: list[Notification] = []
        while self._hold:
            key, (item, release_at) = next(iter(self._hold.items()))
            if release_at > now:
                break
            del self._hold[key]
            self._group(item, release_at)  # (its group's wait counted from its release)
        if self._held and self._bucket.take(now):
            out.append(self._summary(list(self._held.values())))
            self._held.clear()
        for gkey, group in list(self._groups.items()):
            if group.pending and group.flush_at <= now:
                items = list(group.pending.values())
                group.pending.clear()
                for it in items:
                    self._pending_in.pop(it.alert.dedup_key, None)
                group.last_sent = now
                if self._bucket.take(now):
                    out.append(self._group_notification(items))
                else:
                    for it in items:
                        self._held[it.alert.dedup_key] = it
                    self._on_held("rate_limited", len(items))
            elif not group.pending and now - group.last_sent >= self.config.group_interval_s:
                del self._groups[gkey]
        return out

    def next_due(self, now: float) -> float:
        """When :meth:`due` may next have something (inf: nothing waiting)."""
        t = min((g.flush_at for g in self._groups.values() if g.pending), default=math.inf)
        if self._hold:
            t = min(t, next(iter(self._hold.values()))[1])
        if self._held:
            t = min(t, self._bucket.next_token_at(now))
        return t

    # -- pieces --------------------------------------------------------------------------

    def group_key(self, a: FiredAlert) -> tuple[str, ...]:
        return tuple(self._field(a, f) for f in self.config.group_by)

    def _field(self, a: FiredAlert, name: str) -> str:
        s = a.scope
        if name == "cluster":
            return a.cluster or ""
        if name == "tenant":
            return a.tenant or ""
        if name == "topic":
            return a.topic
        if name == "kind":
            return a.kind
        if name == "cause":
            return a.cause
        if name == "level":
            return s.level
        if name == "switch":
            if s.switch:
                return s.switch
            if s.node and self.topology is not None:
                return self.topology.switch_of(s.node, s.nic) or s.node
            return s.node or s.key
        if name == "domain":
            if s.domain:
                return s.domain
            if s.node and self.topology is not None:
                return self.topology.domain_of(s.node) or s.node
            return s.node or s.key
        if name == "node":
            return s.node or s.key
        if name == "job":
            return s.job or a.job or ""
        raise ValueError(f"unknown group_by field {name!r}")

    def _group_notification(self, items: list[_Item]) -> Notification:
        ordered = sorted(items, key=lambda it: severity_rank(it.severity))  # stable: arrival
        primary = ordered[0]
        members = tuple(it.alert for it in ordered[1:])
        note = Notification(self.sink, "trigger", primary.alert.dedup_key, primary.severity,
                            primary.alert, members=members,
                            tickets=[it.ticket for it in items])
        if members:
            self._on_held("grouped", len(members))
            note.summary = (f"{len(items)} alerts alike ({_what(items)}): "
                            f"{_listing([it.alert for it in ordered], self.config.max_listed)}")
        self._remember(note, [it.alert.dedup_key for it in items])
        return note

    def _summary(self, items: list[_Item]) -> Notification:
        keys = sorted(it.alert.dedup_key for it in items)
        digest = hashlib.blake2b("\n".join(keys).encode(), digest_size=8).hexdigest()
        severity = min((it.severity for it in items), key=severity_rank)
        note = Notification(self.sink, "trigger", f"faultline:held-back:{digest}", severity,
                            None, held_back=tuple(it.alert for it in items),
                            tickets=[it.ticket for it in items])
        note.summary = (f"faultline held back {len(items)} alert"
                        f"{'s' if len(items) != 1 else ''} (rate limit of {self.sink}): "
                        f"{_what(items)}; "
                        f"{_listing([it.alert for it in items], self.config.max_listed)}")
        self._remember(note, [it.alert.dedup_key for it in items])
        return note

    def _remember(self, note: Notification, alert_keys: list[str]) -> None:
        sent = _Sent(note.dedup_key, set(alert_keys))
        note.on_delivered.append(lambda: self._confirm(sent))
        for k in alert_keys:
            self._sent[k] = sent
            self._sent.move_to_end(k)
        while len(self._sent) > MAX_REMEMBERED:
            self._sent.popitem(last=False)


def _what(items: list[_Item]) -> str:
    counts = Counter(f"{it.alert.kind}/{it.alert.cause}" for it in items)
    return ", ".join(f"{n} {what}" for what, n in counts.most_common())


def _listing(alerts: list[FiredAlert], limit: int) -> str:
    shown = ", ".join(a.scope.key for a in alerts[:limit])
    more = len(alerts) - limit
    return shown + (f" (+{more} more)" if more > 0 else "")


def _live(ticket: Any) -> bool:
    """Whether the ticket's partition is still this pager's (no ticket: yes)."""
    return bool(getattr(ticket, "live", True))


def _done(ticket: Any) -> None:
    if ticket is not None:
        ticket.done()
