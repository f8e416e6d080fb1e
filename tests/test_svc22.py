"""svc22: a job's stop read from a backlog.  A service's step partition (keyed by job) whose
job stops and steps again minutes later (re-formed on other nodes) sees its records' time
jump over the stop when it reads them from a backlog (a restart, a consumer behind, the
tests' InMemoryCluster): the stop was never told, and the service paged a node lost under
its job only on the 240 s path (blind9 nvl72's lone dead node: 254-267 s or not at all,
against the replay's 31-45 s)."""

from __future__ import annotations

import orjson

from detector.events import STEP
from detector.liveness import SCAN_S, stop_s
from detector.pipeline.source import SourcePartition
from replay.runner import replay_log
from tests.test_dark20 import DEAD, pages_of, service
from tests.test_liveness import NODES, T0, fleet, silent_pages, write
from tests.test_silent19 import by_ts, steps


def test_the_service_pages_a_node_lost_under_a_job_that_resumes_later(tmp_path):
    """DEAD dies at 400 s under job-1, re-formed on the other nodes at 650 s: the service
    pages it within 35 s of its death, as the replay does (before: 240 s on)."""
    rest = [n for n in NODES if n != DEAD]
    log = write(tmp_path, by_ts(fleet(seconds=900, dead={DEAD: (400, 1e9)})
                                + steps("job-1", rest, 650, 900, step0=1000)))
    want = pages_of(replay_log(log).alerts)
    assert want == [("firing", f"node:{DEAD}")]
    assert silent_pages(replay_log(log).alerts)[0].detected_ts - (T0 + 400) <= 35
    svc = service(log)
    assert pages_of(svc.alerts) == want
    a = silent_pages(svc.alerts)[0]
    assert a.detected_ts - (T0 + 400) <= 35
    assert [j["job"] for j in a.evidence["jobs_on_node"]] == ["job-1"]


def test_a_step_partition_tells_a_stop_its_records_jump_over_at_its_time():
    """The stop's finding is made and tagged when it was due, not at the record after."""
    part = SourcePartition(STEP, 0, 1)
    recs = steps("job-1", ["node-a", "node-b"], 0, 100) + steps(
        "job-1", ["node-a", "node-b"], 300, 310, step0=500)
    emits: list = []
    part.process([(i, b"job-1", orjson.dumps(r["value"]), None) for i, r in enumerate(recs)],
                 0.0, emits, [])
    stops, resumed = [], []
    for e in emits:
        m = orjson.loads(e.value)
        if m.get("type") == "finding" and m["finding"]["scope"].get("job") == "job-1" \
                and m["finding"]["signal"] == "silent" \
                and "hang_s" not in m["finding"]["evidence"]:  # (b13fix's hang: later)
            if "resumed_ts" in m["finding"]["evidence"]:  # (live25: stepping again at 300 s)
                resumed.append(m["finding"]["evidence"]["stopped_ts"])
                continue
            stops.append((m["tag"], m["finding"]["evidence"]["last_step_ts"]))
    last = T0 + 99.0
    assert len(stops) == 1 and resumed == [last]
    tag, told = stops[0]
    assert told == last
    assert last + stop_s(2.0) <= tag <= last + stop_s(2.0) + SCAN_S
