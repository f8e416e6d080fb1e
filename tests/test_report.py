"""The incident report's first line and problems, without a browser (see
tests/integration/test_servers_report.py for the page in chromium)."""

from __future__ import annotations

from detector.alerts import Alert
from detector.engine import Engine
from detector.testing import T0, ecc, feed, healthy_job
from replay.report.page import problems_of, verdict


def _alerts() -> list[Alert]:
    events = sorted([*healthy_job(steps=90, slow={3: 1.3}, slow_from=10, slow_to=25),
                     ecc(T0 + 5.0, "node-001", 2, dbe=1, xid=48),
                     ecc(T0 + 9.0, "node-000", 6, dbe=1, xid=48)], key=lambda e: e.ts)
    return feed(Engine(), events)


def test_the_first_line_says_what_was_isolated_and_who_needs_a_human() -> None:
    probs = problems_of(_alerts())
    assert [p.first.scope.key for p in probs] == ["gpu:node-001/2", "gpu:node-000/6",
                                                  "gpu:node-000/3"]
    assert probs[2].last.status == "resolved" and len(probs[2].messages) == 2
    assert verdict(probs, None) == "2 faults isolated, 1 needs a human: node-000 GPU 3"
    assert verdict([], None) == "No faults found: nothing to do"
    assert verdict(probs[:1], None) == "1 fault isolated, none needs a human"


def test_a_problem_resolved_only_by_the_end_of_input_is_still_firing() -> None:
    (p,) = [p for p in problems_of(_alerts()) if p.first.topic.endswith("escalation")]
    assert p.resolved_ts is not None
    p.log_end = p.last.detected_ts - 1.0
    assert p.resolved_ts is None
