"""A capture of the live topics (``kcat -C -J``) as an incident log, so an incident can be replayed.

``kcat -C -J -b BROKER -t telemetry.step -t telemetry.ecc ... -e`` writes one
JSON envelope a line — ``{"topic", "partition", "offset", "ts", "key",
"payload", ...}`` — with the message value as a string in ``payload``.  A
topic maps to the contract topic its name ends with (so a ``--topic-prefix``
deployment's topics work too); alert topics are kept as alert records.  The
log is sorted by event time (the messages' own ``ts``; partitions interleave in
a capture).  Lines that are not envelopes, payloads that are not JSON objects,
tombstones and other topics are counted by reason and left out.

>>> value = orjson.dumps({"ts": 2.0, "node": "n1", "nic": "mlx5_0", "port": 1}).decode()
>>> lines = [orjson.dumps({"topic": "p.telemetry.nic", "partition": 0, "offset": 7,
...                        "key": "n1", "payload": value}), b"not json"]
>>> imp = KcatImport()
>>> [r["topic"] for r in imp.records(lines)], dict(imp.skipped)
(['telemetry.nic'], {'line 2: not a JSON envelope': 1})
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from typing import Any

import orjson

from detector.alerts import ALERT_TOPICS
from detector.events import TELEMETRY_TOPICS

_TOPICS = tuple(sorted(TELEMETRY_TOPICS + tuple(ALERT_TOPICS), key=len, reverse=True))


def contract_topic(name: str) -> str | None:
    """The contract topic a (possibly prefixed) topic name carries, or None."""
    for t in _TOPICS:
        if name == t or name.endswith(t) and name[-len(t) - 1] in "._-":
            return t
    return None


class KcatImport:
    """Turns kcat ``-J`` lines into incident-log records, counting what it leaves out."""

    def __init__(self) -> None:
        self.skipped: Counter[str] = Counter()
        self.per_topic: Counter[str] = Counter()
        self.lines = 0

    def records(self, lines: Iterable[str | bytes]) -> list[dict[str, Any]]:
        out: list[tuple[float, int, dict[str, Any]]] = []
        for n, line in enumerate(lines, 1):
            if not line.strip():
                continue
            self.lines += 1
            try:
                env = orjson.loads(line)
            except orjson.JSONDecodeError:
                self.skipped[f"line {n}: not a JSON envelope" if n <= 3 else
                             "not a JSON envelope"] += 1
                continue
            if not isinstance(env, dict) or not isinstance(env.get("topic"), str):
                self.skipped["not a kcat -J envelope (no topic)"] += 1
                continue
            topic = contract_topic(env["topic"])
            if topic is None:
                self.skipped[f"topic {env['topic'][:60]}: not a faultline topic"] += 1
                continue
            payload = env.get("payload")
            if payload is None:
                self.skipped["tombstone (no payload)"] += 1
                continue
            try:
                value = orjson.loads(payload) if isinstance(payload, str) else payload
            except orjson.JSONDecodeError:
                self.skipped[f"{topic}: payload is not JSON"] += 1
                continue
            if not isinstance(value, dict):
                self.skipped[f"{topic}: payload is not a JSON object"] += 1
                continue
            ts = value.get("ts", value.get("detected_ts"))
            order = float(ts) if isinstance(ts, (int, float)) and not isinstance(ts, bool) \
                else float("inf")  # no event time: kept, at the end, for replay to judge
            out.append((order, n, {"topic": topic, "value": value}))
            self.per_topic[topic] += 1
        out.sort(key=lambda x: (x[0], x[1]))
        return [r for _, _, r in out]
