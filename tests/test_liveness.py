"""A node gone silent (detector.liveness; blind7 G4): one escalation at the node when every
collector of a node stops while the rest of the fleet reports; nothing for the feed
stopping, a log's gap, the end of a log, a reboot, a collector lagging on one topic, a job
ending, a node heard once."""

from __future__ import annotations

import gzip
import random
import zlib
from pathlib import Path

import orjson
import pytest

from detector import liveness
from detector.alerts import Alert
from detector.engine import Engine
from detector.thresholds import Thresholds
from detector.topology import Topology
from replay.runner import replay_log
from tests.test_service_stages import PARTITIONS, InMemoryCluster

T0 = 1767225600.0
NODES = [f"node-{i:03d}" for i in range(8)]


def fleet(*, seconds: float = 1200.0, interval: float = 10.0, nic_interval: float | None = 10.0,
          dead: dict[str, tuple[float, float]] | None = None,
          quiet: dict[str, tuple[float, float, tuple[str, ...]]] | None = None,
          gap: tuple[float, float] | None = None, job: bool = True, seed: int = 0,
          nodes: list[str] = NODES, idle: tuple[float, float] | None = None,
          nic_idle: bool = False) -> list[dict]:
    """Records of a healthy fleet, 2 GPUs a node: thermal and ECC every ``interval`` s and NIC
    every ``nic_interval`` s, each node at its own phase with +-10 % jitter, and a job with a
    rank on each GPU stepping every 2 s.  ``dead``: node -> [from, to) with no record of it
    (to=inf: it never comes back); ``quiet``: node -> (from, to, topics) with none on those
    topics; ``gap``: [from, to) with no record from anyone (a log's gap); ``idle``: [from, to)
    with every GPU idle (clock-event reason 0x1: the job was stopped) -- and, ``nic_idle``,
    every NIC port quiet (no save moving bytes), else at its 16 Gb/s throughout."""
    rng = random.Random(seed)
    dead, quiet = dead or {}, quiet or {}
    out: list[tuple[float, int, dict]] = []

    def off(node: str, ts: float, topic: str) -> bool:
        a, b = dead.get(node, (1e18, 1e18))
        if a <= ts - T0 < b or (gap is not None and gap[0] <= ts - T0 < gap[1]):
            return True
        qa, qb, topics = quiet.get(node, (1e18, 1e18, ()))
        return topic in topics and qa <= ts - T0 < qb

    for k, node in enumerate(nodes):
        for topic, every in (("thermal", interval), ("ecc", interval), ("nic", nic_interval)):
            if every is None:
                continue
            t = T0 + rng.uniform(0, every)
            while t < T0 + seconds:
                if not off(node, t, topic):
                    if topic == "nic":
                        moved = t - T0
                        if nic_idle and idle is not None:
                            moved -= max(0.0, min(moved, idle[1]) - idle[0])
                        out.append((t, len(out), {"topic": "telemetry.nic", "value": {
                            "ts": t, "node": node, "nic": "mlx5_0", "port": 1,
                            "link_state": "up", "rate_gbps": 400.0,
                            "tx_bytes": int(moved * 1e9), "rx_bytes": int(moved * 1e9)}}))
                    else:
                        for gpu in range(2):
                            v: dict = {"ts": t, "node": node, "gpu": gpu}
                            if topic == "thermal":
                                v.update(gpu_temp_c=65.0 + rng.random(), power_w=600.0,
                                         sm_clock_mhz=1980.0, throttle=0)
                                if idle is not None and idle[0] <= t - T0 < idle[1]:
                                    v.update(power_w=90.0, sm_clock_mhz=345.0, throttle=1)
                            else:
                                v.update(sbe_volatile=0, dbe_volatile=0)
                            out.append((t, len(out), {"topic": f"telemetry.{topic}", "value": v}))
                t += every * rng.uniform(0.9, 1.1)
        if job:
            for s in range(int(seconds / 2)):
                t = T0 + 2.0 * s + 1.0 + rng.uniform(0, 0.05)
                if any(off(n, t, "step") for n in nodes):
                    continue  # a rank's node is down: the step never ends
                for gpu in range(2):
                    out.append((t, len(out), {"topic": "telemetry.step", "value": {
                        "ts": t, "job": "job-1", "step": s, "rank": 2 * k + gpu, "node": node,
                        "gpu": gpu, "step_ms": 2000.0, "compute_ms": 1500.0,
                        "comm_ms": 480.0}}))
    out.sort(key=lambda r: r[:2])
    return [r[2] for r in out]


def write(tmp_path: Path, records: list[dict], name: str = "log") -> Path:
    path = tmp_path / f"{name}.jsonl.gz"
    with gzip.open(path, "wb") as fh:
        for r in records:
            fh.write(orjson.dumps(r) + b"\n")
    return path


def silent_pages(alerts: list[Alert]) -> list[Alert]:
    return [a for a in alerts if a.kind == "unattributed"]


def firing(alerts: list[Alert]) -> list[Alert]:
    return [a for a in alerts if a.status == "firing"]


def test_a_node_that_goes_dark_is_one_escalation_and_resolves_when_back(tmp_path):
    """node-003 stops every record at 400 s (its job's steps with it, its other ranks busy
    in the collective) and comes back at 1000 s: one escalation at the node, within 35 s of
    its death (silent19; 240-260 s after its last record before), with the last record per
    topic, the job on it and the next diagnostic; resolved once it reports."""
    res = replay_log(write(tmp_path, fleet(seconds=1300, dead={"node-003": (400, 1000)})))
    pages = silent_pages(res.alerts)
    assert [(a.status, a.scope.key, a.cause, a.topic) for a in pages] == [
        ("firing", "node:node-003", "unknown", "alerts.escalation"),
        ("resolved", "node:node-003", "unknown", "alerts.escalation")]
    a = pages[0]
    assert T0 + 400 - 11 <= a.onset_ts <= T0 + 400
    assert 15 <= a.detected_ts - (T0 + 400) <= 35
    assert "stopped stepping" in a.evidence["recommended_because"]
    assert set(a.evidence["last_record_ts"]) == {"ecc", "nic", "thermal"}
    assert [j["job"] for j in a.evidence["jobs_on_node"]] == ["job-1"]
    assert "BMC" in a.evidence["next_diagnostic"] and "console" in a.evidence["next_diagnostic"]
    assert a.action.requires_approval and a.granularity.gpus == 2
    assert pages[1].detected_ts >= T0 + 1000
    # nothing else fires on the fleet (its job stalls while the node is down)
    assert [x.scope.key for x in firing(res.alerts)] == ["node:node-003"]


def test_g4_fails_on_main_without_the_tracker(tmp_path, monkeypatch):
    """The same log with the scan switched off sends nothing about the node (main's answer)."""
    monkeypatch.setattr("detector.monitors._scan_liveness", lambda mon, found: None)
    res = replay_log(write(tmp_path, fleet(seconds=900, dead={"node-003": (400, 1e9)})))
    assert silent_pages(res.alerts) == []


@pytest.mark.parametrize("interval", [1.0, 10.0, 30.0])
def test_a_dead_node_is_told_at_every_cadence_and_a_reboot_is_not(tmp_path, interval):
    """dcgm-exporter's 30 s (no NIC telemetry), 10 s and 1 s: a node that dies is told; one
    that reboots (down 120 s, the simulator's longest, and back) is not -- its job stopped
    first, so the GPUs of its other nodes idle (replay/sim's reboot; silent19: a reboot under
    a job hung in its collective is the job lost, paged: the test below)."""
    nic = None if interval == 30.0 else interval
    secs = 900.0 if interval < 10 else 1500.0
    dies = replay_log(write(tmp_path, fleet(seconds=secs, interval=interval, nic_interval=nic,
                                            dead={"node-005": (300, 1e9)}), "d"))
    pages = silent_pages(dies.alerts)
    assert [(a.status, a.scope.key) for a in pages] == [("firing", "node:node-005")]
    assert pages[0].detected_ts - pages[0].onset_ts <= liveness.bound_s(interval) + 2 * max(
        interval, liveness.SCAN_S) + 5
    reboot = replay_log(write(tmp_path, fleet(seconds=secs, interval=interval, nic_interval=nic,
                                              dead={"node-005": (300, 420)},
                                              idle=(300, 450)), "r"))
    assert firing(reboot.alerts) == []


def test_the_end_of_a_log_a_gap_and_the_feed_stopping_page_nobody(tmp_path):
    """Every node stops at once: the log ends (then the engine runs on to the end), or
    comes back after a 10-minute gap (a broker hiccup, a recorder's pause)."""
    ends = replay_log(write(tmp_path, fleet(seconds=600), "end"))
    assert firing(ends.alerts) == []
    gap = replay_log(write(tmp_path, fleet(seconds=1500, interval=30.0, gap=(400, 1000),
                                           job=False), "gap"))
    assert firing(gap.alerts) == []


def test_a_collector_lagging_on_one_topic_or_a_job_ending_is_not_a_node(tmp_path):
    """node-002's thermal collector stops for 10 minutes (its ECC and NIC go on); the job
    ends at 500 s on every node: no page."""
    recs = fleet(seconds=1300, quiet={"node-002": (300, 900, ("thermal",))})
    recs = [r for r in recs if r["topic"] != "telemetry.step" or r["value"]["ts"] < T0 + 500]
    assert firing(replay_log(write(tmp_path, recs)).alerts) == []


def test_a_node_heard_once_is_never_paged_and_its_state_goes(tmp_path):
    """A name no topology lists sends one record and nothing again: no page, and its entry
    goes with its monitors (unit_idle_s)."""
    recs = fleet(seconds=1500, job=False)
    stray = {"topic": "telemetry.thermal", "value": {"ts": T0 + 100.5, "node": "stray-1",
                                                      "gpu": 0, "gpu_temp_c": 60.0}}
    recs.insert(next(i for i, r in enumerate(recs) if r["value"]["ts"] > T0 + 100.5), stray)
    eng = Engine(Thresholds(unit_idle_s=600.0))
    alerts: list[Alert] = []
    for r in recs:
        eng.ingest(r["topic"], r["value"], alerts)
        if r["value"]["ts"] < T0 + 300 and "stray-1" in eng.monitors._alive:
            seen = True
    assert seen
    assert "stray-1" not in eng.monitors._alive and "stray-1" not in eng.correlator._silent
    alerts += eng.finish()
    assert firing(alerts) == []


def test_a_node_that_never_comes_back_resolves_when_its_monitors_go(tmp_path):
    """A node gone for good (powered off, decommissioned): paged once, resolved when its
    monitors are dropped (unit_idle_s), saying so -- not "reported again"."""
    recs = fleet(seconds=1500, dead={"node-003": (300, 1e9)})
    res = replay_log(write(tmp_path, recs), thresholds=Thresholds(unit_idle_s=700.0))
    pages = silent_pages(res.alerts)
    assert [(a.status, a.scope.key) for a in pages] == [
        ("firing", "node:node-003"), ("resolved", "node:node-003")]
    assert "left the fleet" in pages[1].evidence["resolved_because"]
    assert pages[1].detected_ts >= T0 + 300 + 700


def test_state_is_capped_per_source_and_per_correlator(monkeypatch):
    monkeypatch.setattr(liveness, "MAX_NODES", 3)
    eng = Engine()
    alerts: list[Alert] = []
    for i in range(6):
        eng.ingest("telemetry.thermal", {"ts": T0 + i, "node": f"n{i}", "gpu": 0}, alerts)
    assert len(eng.monitors._alive) == 3


def test_snapshot_mid_silence_gives_the_same_page(tmp_path):
    """Restored from a snapshot taken while the node is quiet: the same one page (the state is
    data; the snapshot's schema fingerprint changed with it)."""
    recs = fleet(seconds=900, dead={"node-003": (400, 1e9)})
    whole = replay_log(write(tmp_path, recs))
    eng = Engine()
    alerts: list[Alert] = []
    for k, r in enumerate(recs):
        if k == len(recs) * 2 // 3:
            eng = Engine.restore(eng.snapshot())
        eng.ingest(r["topic"], r["value"], alerts)
    alerts += eng.finish()
    key = [(a.dedup_key, a.status, round(a.detected_ts, 3)) for a in silent_pages(alerts)]
    assert key == [(a.dedup_key, a.status, round(a.detected_ts, 3))
                   for a in silent_pages(whole.alerts)] and len(key) == 1


def _partition(node: str) -> int:
    return zlib.crc32(node.encode()) % PARTITIONS


def test_the_service_pages_the_node_as_the_replay_does(tmp_path):
    """Split stages (a source per topic-partition, findings through a topic, one correlator):
    the same escalation, judged where the node's records are (its partition's other nodes)."""
    dead = next(n for n in NODES if sum(_partition(m) == _partition(n) for m in NODES) >= 2)
    # (the job's other ranks step on: replayed at many times real time, a stalled job's step
    # partition holds the correlator at the stall for as long as the run's wall time -- live,
    # idle advance would move it on with the wall clock; its ranks on the node stay placed
    # there, so the job ran on it to the end)
    log = write(tmp_path, [r for r in fleet(seconds=900) if not (
        r["value"]["node"] == dead and r["value"]["ts"] >= T0 + 400)])
    want = [(a.dedup_key, a.status) for a in silent_pages(replay_log(log).alerts)]
    assert want == [(f"fl:esc:unattributed:node:{dead}", "firing")]
    svc = InMemoryCluster(log, seed=1)
    svc.run()
    assert [(a.dedup_key, a.status) for a in silent_pages(svc.alerts)] == want


# -- a part of the fleet going dark; a node leaving the fleet (silent18) ----------------------


def test_a_node_replaced_under_a_running_job_or_drained_after_its_job_is_not_paged(tmp_path):
    """node-003 leaves for good at 400 s: (a) its job's ranks go on on a node that joins in
    its place (the churning fleet's replacement: tests/test_state_bounds.py); (b) the job
    ended at 200 s, 200 s before (drained, then taken out).  No page -- on main both paged."""
    recs = fleet(seconds=1300, dead={"node-003": (400, 1e9)}, job=False)
    steps = [r for r in fleet(seconds=1300, job=True, seed=1) if r["topic"] == "telemetry.step"]
    for r in steps:  # (a): node-003's two ranks run on node-new from 400 s
        if r["value"]["node"] == "node-003" and r["value"]["ts"] >= T0 + 400:
            r["value"]["node"] = "node-new"
    spare = [r for r in fleet(seconds=1300, job=False, seed=2, nodes=["node-new"])
             if r["value"]["ts"] >= T0 + 380]
    moved = sorted(recs + steps + spare, key=lambda r: r["value"]["ts"])
    assert firing(replay_log(write(tmp_path, moved, "moved")).alerts) == []
    ended = sorted(recs + [r for r in steps if r["value"]["ts"] < T0 + 200],
                   key=lambda r: r["value"]["ts"])
    assert firing(replay_log(write(tmp_path, ended, "ended")).alerts) == []


TIERS = Topology.from_text("".join(
    f"SwitchName=leaf{k} Nodes=node-[{4 * k:03d}-{4 * k + 3:03d}]\n" for k in range(6))
    + "SwitchName=spine0 Switches=leaf[0-3]\nSwitchName=spine1 Switches=leaf[4-5]\n"
    + "SwitchName=core0 Switches=spine[0-1]\n")
TIER_NODES = [f"node-{i:03d}" for i in range(24)]


@pytest.mark.parametrize("part, dark", [("spine0", range(16)), ("leaf4", range(16, 20))])
def test_a_part_of_the_fleet_going_dark_under_a_job_is_one_page_naming_it(tmp_path, part,
                                                                          dark):
    """Every node under a switch stops at 400 s (the switch, or its rack's power: telemetry
    over the fabric goes with it) with the job running on them; back at 1100 s.  One
    escalation at the switch listing the nodes (not one a node: 16 on main), resolved when
    they are all back -- not before (the nodes back one by one leave it firing)."""
    down = {f"node-{n:03d}": (400.0, 1100.0) for n in dark}
    res = replay_log(write(tmp_path, fleet(seconds=1400, dead=down, nodes=TIER_NODES)),
                     topology=TIERS)
    pages = silent_pages(res.alerts)
    assert [(a.status, a.scope.key) for a in pages] == [
        ("firing", f"switch:{part}"), ("resolved", f"switch:{part}")]
    a = pages[0]
    # paged once most of the part is judged silent (the others join the same page)
    assert set(a.evidence["dark_nodes"]) <= set(down) and a.cause == "unknown"
    assert 2 * len(a.evidence["dark_nodes"]) > len(down)
    assert a.detected_ts - a.onset_ts <= liveness.SILENT_MIN_S + liveness.CONFIRM_S + 30
    assert part in a.evidence["next_diagnostic"]
    assert pages[1].detected_ts >= T0 + 1100
    assert [x.scope.key for x in firing(res.alerts)] == [f"switch:{part}"]


def test_one_node_dark_under_a_topology_is_still_the_node(tmp_path):
    res = replay_log(write(tmp_path, fleet(seconds=1000, dead={"node-005": (400, 1e9)},
                                           nodes=TIER_NODES)), topology=TIERS)
    assert [(a.status, a.scope.key) for a in silent_pages(res.alerts)] == [
        ("firing", "node:node-005")]


def test_two_nodes_dark_together_by_chance_are_two_node_pages(tmp_path):
    """Two of leaf0's four nodes, or one node under each of two leaves, stop at once: no
    switch took them (most of its nodes report): a page a node, no switch named."""
    for dark in (("node-001", "node-002"), ("node-001", "node-005")):
        res = replay_log(write(tmp_path, fleet(seconds=1000, dead={n: (400, 1e9) for n in dark},
                                               nodes=TIER_NODES)), topology=TIERS)
        assert sorted(a.scope.key for a in firing(silent_pages(res.alerts))) == [
            f"node:{n}" for n in dark]


def test_a_part_gone_for_good_resolves_when_its_nodes_leave_the_fleet(tmp_path):
    """leaf4's nodes never come back: the one page resolves when the last node's monitors go
    (unit_idle_s), saying it left the fleet -- not firing for ever."""
    down = {f"node-{n:03d}": (400.0, 1e9) for n in range(16, 20)}
    res = replay_log(write(tmp_path, fleet(seconds=1500, dead=down, nodes=TIER_NODES)),
                     topology=TIERS, thresholds=Thresholds(unit_idle_s=700.0))
    pages = silent_pages(res.alerts)
    assert [(a.status, a.scope.key) for a in pages] == [
        ("firing", "switch:leaf4"), ("resolved", "switch:leaf4")]
    assert "left the fleet" in pages[1].evidence["resolved_because"]
    assert pages[1].detected_ts >= T0 + 400 + 700


def test_a_node_dead_under_a_job_re_formed_on_the_others_before_the_page_is_paged(tmp_path):
    """node-003 dies at 400 s; its job stalls and re-forms 120 s later on the 7 others from a
    checkpoint, its ranks renumbered -- node-003's two ranks now run elsewhere (torchrun's
    rendezvous order; blind9's PDU trip, ops-hgx-s7), before the 240 s judgment.  Still the
    node's page: the jobs were noted once it was quiet 30 s (the churning fleet's node,
    replaced under a running job, has its ranks moved at once: no page)."""
    recs = fleet(seconds=1100, dead={"node-003": (400, 1e9)}, job=False)
    alive = [n for n in NODES if n != "node-003"]
    for s in range(550):
        t = T0 + 2.0 * s + 1.0
        if T0 + 400 <= t < T0 + 520:
            continue  # the job hangs in NCCL, then restarts
        where = NODES if t < T0 + 400 else alive
        step = s if t < T0 + 400 else s - 160  # back to the checkpoint
        for k, node in enumerate(where):
            for gpu in range(2):
                recs.append({"topic": "telemetry.step", "value": {
                    "ts": t, "job": "job-1", "step": step, "rank": 2 * k + gpu, "node": node,
                    "gpu": gpu, "step_ms": 2000.0, "compute_ms": 1500.0, "comm_ms": 480.0}})
    recs.sort(key=lambda r: r["value"]["ts"])
    pages = silent_pages(replay_log(write(tmp_path, recs)).alerts)
    assert [(a.status, a.scope.key) for a in pages] == [("firing", "node:node-003")]
