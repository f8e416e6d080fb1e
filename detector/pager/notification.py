"""The pager's unit of work: one message for one sink, and the offsets (tickets) behind it.

Storm control makes notifications (:mod:`detector.pager.storm`), the sinks
deliver them (:mod:`detector.pager.sinks`), and :mod:`detector.pager.core`
dead-letters them; a notification's tickets are done once it is delivered or
dead-lettered, and only then can the offsets behind it be committed.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol

from detector.alerts import FiredAlert


class Ticket(Protocol):
    def done(self) -> None: ...


@dataclass(slots=True)
class Notification:
    """One message for one sink: a trigger (for one alert, a group, or a summary) or a resolve."""

    sink: str
    event: str                         # "trigger" | "resolve"
    dedup_key: str
    severity: str
    alert: FiredAlert | None           # the primary alert; None for a held-back summary
    members: tuple[FiredAlert, ...] = ()    # alerts folded into this one notification
    held_back: tuple[FiredAlert, ...] = ()  # a summary: the alerts the rate limit held
    tickets: list[Ticket | None] = field(default_factory=list)
    summary: str = ""                  # storm control's line when it covers several alerts
    on_delivered: list[Callable[[], None]] = field(default_factory=list)

    def alerts(self) -> tuple[FiredAlert, ...]:
        """Every alert this notification speaks for."""
        head = (self.alert,) if self.alert is not None else ()
        return head + self.members + self.held_back

    def delivered(self) -> None:
        """The sink accepted it (called before :meth:`done`)."""
        for fn in self.on_delivered:
            fn()

    def done(self) -> None:
        """Delivered (or dead-lettered): the offsets behind it may be committed."""
        for t in self.tickets:
            if t is not None:
                t.done()
        self.tickets = []
