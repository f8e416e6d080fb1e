"""Which sinks an alert goes to, and how severe it is: the pager's routing rules.

Routes are tried in order; the first that matches decides, unless it says
``continue = true`` (as in Alertmanager).  An alert no route matches goes to
``default_sinks`` (every sink when that is unset).  Severity depends on the
topic and kind only, never on the status, so a resolve follows its trigger.

>>> from detector.pager.config import PagerConfig
>>> cfg = PagerConfig.from_dict({
...     "sinks": {"oncall": {"type": "pagerduty", "routing_key": "k"},
...               "tickets": {"type": "webhook", "url": "http://127.0.0.1:1/t"}},
...     "routes": [{"topic": "escalation", "sinks": ["oncall"]},
...                {"topic": "isolation", "kind": "sdc", "sinks": ["oncall", "tickets"]},
...                {"topic": "isolation", "sinks": ["tickets"]}]}, env={})
>>> r = Router(cfg)
>>> r.route(ESCALATION, "unattributed", "unknown", "critical", None, None, "firing")
('oncall',)
>>> r.route(ISOLATION, "slow_node", "thermal", "warning", "tenant-a", None, "firing")
('tickets',)
>>> r.severity(ISOLATION, "slow_node"), r.severity(ESCALATION, "sdc")
('warning', 'critical')
"""

from __future__ import annotations

from detector.alerts import ESCALATION, ISOLATION
from detector.pager.config import SHORT_TOPIC, PagerConfig, Route

__all__ = ["ESCALATION", "ISOLATION", "Router"]


class Router:
    """The routing rules and severity table of a :class:`PagerConfig`."""

    def __init__(self, config: PagerConfig) -> None:
        self.routes = config.routes
        self.default = tuple(config.default_sinks if config.default_sinks is not None
                             else config.sinks)
        self._severity = dict(config.severity)

    def severity(self, topic: str, kind: str) -> str:
        """critical | error | warning | info: by kind if configured, else by topic."""
        return self._severity.get(kind) or self._severity.get(SHORT_TOPIC.get(topic, ""),
                                                              "warning")

    def route(self, topic: str, kind: str, cause: str, severity: str, tenant: str | None,
              cluster: str | None, status: str) -> tuple[str, ...]:
        """The sinks (in order, without repeats) for an alert with these fields."""
        out: list[str] = []
        matched = False
        for r in self.routes:
            if _matches(r, topic, kind, cause, severity, tenant, cluster, status):
                matched = True
                out += [s for s in r.sinks if s not in out]
                if not r.continue_:
                    break
        return tuple(out) if matched else self.default


def _matches(r: Route, topic: str, kind: str, cause: str, severity: str, tenant: str | None,
             cluster: str | None, status: str) -> bool:
    return ((r.topics is None or topic in r.topics)
            and (r.kinds is None or kind in r.kinds)
            and (r.causes is None or cause in r.causes)
            and (r.severities is None or severity in r.severities)
            and (r.tenants is None or tenant in r.tenants)
            and (r.clusters is None or cluster in r.clusters)
            and (r.statuses is None or status in r.statuses))
