"""A node lost under its job is paged in seconds, not minutes (detector.liveness, silent19).

blind9 found silent nodes paged 238-362 s after they went dark, though their job stops
stepping within seconds (every other rank waits in the collective).  Now: a node quiet on
every topic (its quickest 1.5 intervals, at least 20 s) whose job stopped stepping with it
while the job's GPUs on its other nodes stay busy -- NCCL spinning on a dead peer -- with
nothing else stepping there is paged then.  A job that ended or was stopped first (its
GPUs idle, or on to the next job), a node replaced under a running job, a job on that node
alone: the 240 s path of round 18, or nothing.
"""

from __future__ import annotations

import pytest

from detector import liveness
from detector.alerts import Alert
from detector.engine import Engine
from replay.runner import replay_log
from tests.test_liveness import NODES, T0, TIER_NODES, TIERS, firing, fleet, silent_pages, write


def steps(job: str, nodes: list[str], t0: float, t1: float, step0: int = 0) -> list[dict]:
    """A job's step records, a rank on each of 2 GPUs of each node, every 2 s in [t0, t1)."""
    out = []
    for s in range(int((t1 - t0) / 2)):
        t = T0 + t0 + 2.0 * s + 1.0
        for k, node in enumerate(nodes):
            for gpu in range(2):
                out.append({"topic": "telemetry.step", "value": {
                    "ts": t, "job": job, "step": step0 + s, "rank": 2 * k + gpu, "node": node,
                    "gpu": gpu, "step_ms": 2000.0, "compute_ms": 1500.0, "comm_ms": 480.0}})
    return out


def by_ts(recs: list[dict]) -> list[dict]:
    return sorted(recs, key=lambda r: r["value"]["ts"])


@pytest.mark.parametrize("interval, nic, within", [(10.0, 10.0, 35.0), (15.0, None, 45.0)])
def test_a_node_lost_under_its_job_is_paged_in_seconds(tmp_path, interval, nic, within):
    """node-003 dies at 400 s under the job, whose other ranks wait busy: paged within 35 s
    (10 s telemetry) or 45 s (15 s, no NIC: an A100's exporter) of its death, naming the job
    that stalled -- main paged it 240-262 s after its last record."""
    res = replay_log(write(tmp_path, fleet(seconds=900, interval=interval, nic_interval=nic,
                                           dead={"node-003": (400, 1e9)})))
    pages = silent_pages(res.alerts)
    assert [(a.status, a.scope.key) for a in pages] == [("firing", "node:node-003")]
    a = pages[0]
    assert a.detected_ts - (T0 + 400) <= within
    assert [j["job"] for j in a.evidence["jobs_on_node"]] == ["job-1"]
    assert "stopped stepping with it" in a.evidence["recommended_because"]
    assert [x.scope.key for x in firing(res.alerts)] == ["node:node-003"]


def test_a_part_going_dark_under_a_job_is_one_page_in_seconds(tmp_path):
    """leaf4's four nodes go dark at 400 s (a rack's PDU) under the job: one page at the
    leaf within 45 s, listing its nodes (main: 240-300 s)."""
    down = {f"node-{n:03d}": (400.0, 1e9) for n in range(16, 20)}
    res = replay_log(write(tmp_path, fleet(seconds=900, dead=down, nodes=TIER_NODES)),
                     topology=TIERS)
    pages = silent_pages(res.alerts)
    assert [(a.status, a.scope.key) for a in pages] == [("firing", "switch:leaf4")]
    assert pages[0].detected_ts - (T0 + 400) <= 45
    assert 2 * len(pages[0].evidence["dark_nodes"]) > len(down)


def test_a_job_ending_as_its_node_leaves_while_the_next_starts_is_no_page(tmp_path):
    """job-1 ends at 400 s on the record node-003 leaves for good at; job-2 starts on the
    other nodes' GPUs at once (the churning fleet's residue: a drained node whose job ended as
    it left).  No page: the GPUs went on to another job (main paged it after 240 s)."""
    others = [n for n in NODES if n != "node-003"]
    recs = fleet(seconds=1000, dead={"node-003": (400, 1e9)}, job=False)
    recs += steps("job-1", NODES, 0, 400) + steps("job-2", others, 402, 1000)
    assert firing(replay_log(write(tmp_path, by_ts(recs))).alerts) == []


def test_a_job_that_stopped_with_its_gpus_idle_waits_for_the_slow_path(tmp_path):
    """node-003 goes dark as its job stops and the other GPUs go idle (a job cancelled, the
    simulator's reboot): no fast page; never back, it is paged on the 240 s path."""
    res = replay_log(write(tmp_path, fleet(seconds=900, dead={"node-003": (400, 1e9)},
                                           idle=(400, 1e9))))
    pages = silent_pages(res.alerts)
    assert [(a.status, a.scope.key) for a in pages] == [("firing", "node:node-003")]
    assert pages[0].detected_ts - pages[0].onset_ts >= liveness.SILENT_MIN_S
    assert "stopped stepping with it" not in pages[0].evidence["recommended_because"]


def test_a_reboot_under_a_job_hung_in_its_collective_is_paged_and_resolves(tmp_path):
    """A node down 120 s under a job whose other ranks spin in NCCL (busy GPUs): the job is
    lost -- paged in seconds, resolved when the node reports again."""
    res = replay_log(write(tmp_path, fleet(seconds=900, dead={"node-005": (300, 420)})))
    pages = silent_pages(res.alerts)
    assert [(a.status, a.scope.key) for a in pages] == [
        ("firing", "node:node-005"), ("resolved", "node:node-005")]
    assert pages[0].detected_ts - (T0 + 300) <= 35 and pages[1].detected_ts >= T0 + 420


def test_a_job_hung_on_live_nodes_or_a_short_collector_pause_is_no_page(tmp_path):
    """The job stops stepping at 400 s (a hang: its GPUs stay busy) while every node reports;
    or node-003's collectors all pause 30 s while the job steps on: no page."""
    hang = [r for r in fleet(seconds=900) if r["topic"] != "telemetry.step"
            or r["value"]["ts"] < T0 + 400]
    assert firing(replay_log(write(tmp_path, hang, "hang")).alerts) == []
    pause = fleet(seconds=900, quiet={"node-003": (400, 430, ("thermal", "ecc", "nic"))})
    assert firing(replay_log(write(tmp_path, pause, "pause")).alerts) == []


def test_a_job_on_the_lost_node_alone_waits_for_the_slow_path(tmp_path):
    """A job on node-003 alone stops as it goes dark: its end looks the same -- the 240 s
    path, as before."""
    recs = fleet(seconds=900, dead={"node-003": (400, 1e9)}, job=False)
    recs += steps("solo", ["node-003"], 0, 400)
    pages = silent_pages(replay_log(write(tmp_path, by_ts(recs))).alerts)
    assert [(a.status, a.scope.key) for a in pages] == [("firing", "node:node-003")]
    assert pages[0].detected_ts - pages[0].onset_ts >= liveness.SILENT_MIN_S


@pytest.mark.parametrize("of_round_22", [False, True])
def test_snapshot_after_the_fast_page_gives_the_same_alerts(tmp_path, of_round_22):
    """Restored from a snapshot taken just after the fast judgment (the source's topic state
    4, told quiet; the correlator's node judged): the same page and resolution.  A round-22
    source's snapshot holds state 3 there (its own judgment, gone since path23): restored
    as 4, the same alerts."""
    recs = fleet(seconds=1300, dead={"node-003": (400, 1000)})
    whole = replay_log(write(tmp_path, recs))
    eng = Engine()
    alerts: list[Alert] = []
    cut = next(k for k, r in enumerate(recs) if r["value"]["ts"] > T0 + 450)
    for k, r in enumerate(recs):
        if k == cut:
            assert all(st[liveness._SILENT] == 4
                       for st in eng.monitors._alive["node-003"][1].values())
            assert liveness._JUDGED in eng.correlator._silent["node-003"]
            if of_round_22:
                for st in eng.monitors._alive["node-003"][1].values():
                    st[liveness._SILENT] = 3
            eng = Engine.restore(eng.snapshot())
            assert all(st[liveness._SILENT] == 4
                       for st in eng.monitors._alive["node-003"][1].values())
        eng.ingest(r["topic"], r["value"], alerts)
    alerts += eng.finish()
    assert [(a.dedup_key, a.status, round(a.detected_ts, 3)) for a in silent_pages(alerts)] \
        == [(a.dedup_key, a.status, round(a.detected_ts, 3)) for a in silent_pages(whole.alerts)]
