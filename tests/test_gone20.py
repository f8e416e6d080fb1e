"""gone20 (round 20): a GPU that does not come back (detector.gpu_missing, blind11 L3).

A node's GPU stops sending thermal and ECC rows while its siblings report on: one escalation
``unattributed``/``unknown`` at the GPU, resolved when it reports again.  Silent for a whole
node dark, a reboot with every GPU back, a row dropped twice, a node that never had more
GPUs, and a GPU already isolated off the bus (XID 79: evidence of that isolation)."""

from __future__ import annotations

import gzip
import math
from pathlib import Path

import orjson

from detector import gpu_missing
from detector.alerts import Alert, Scope
from detector.correlate import Correlator
from detector.events import ThermalSample
from detector.findings import Finding
from detector.monitors import Monitors
from detector.statecodec import SnapshotRefused, decode_state, encode_state
from detector.thresholds import Thresholds
from replay.runner import replay_log

T0 = 1767225600.0


def fleet(*, seconds: float = 1200.0, gpus: int = 4, nodes: int = 3,
          gone: dict | None = None, dark: dict | None = None,
          xid79: tuple | None = None) -> list[dict]:
    """Thermal rows every 15 s and ECC rows every 60 s of ``nodes`` nodes of ``gpus`` GPUs;
    ``gone``: (node, gpu) -> (from, to) s with no row from that GPU; ``dark``: node ->
    (from, to) s with no row from the node; ``xid79``: (node, gpu, at) s."""
    gone, dark = gone or {}, dark or {}
    recs: list[dict] = []
    for k in range(int(seconds // 15)):
        t = k * 15.0
        for n in range(nodes):
            node = f"nvl-{n:02d}"
            a, b = dark.get(node, (math.inf, math.inf))
            if a <= t < b:
                continue
            for g in range(gpus):
                a, b = gone.get((node, g), (math.inf, math.inf))
                if a <= t < b:
                    continue
                ts = T0 + t + 0.05 * g + 0.3 * n
                recs.append({"topic": "telemetry.thermal", "value": {
                    "ts": ts, "node": node, "gpu": g, "gpu_temp_c": 60.0, "mem_temp_c": 65.0,
                    "power_w": 300.0, "sm_clock_mhz": 1700, "throttle": 0}})
                if k % 4 == 0 or (xid79 and xid79[:2] == (node, g) and xid79[2] == t):
                    xid = 79 if xid79 and xid79[:2] == (node, g) and xid79[2] == t else None
                    recs.append({"topic": "telemetry.ecc", "value": {
                        "ts": ts + 0.01, "node": node, "gpu": g, "sbe_volatile": 0,
                        "dbe_volatile": 0, "retired_pages_sbe": 0, "retired_pages_dbe": 0,
                        "row_remap_pending": False, "row_remap_failure": False, "xid": xid,
                        "pcie_replay": 0, "recovery_action": "none"}})
    return recs


def replay(tmp_path: Path, recs: list[dict], name: str = "log") -> list[Alert]:
    path = tmp_path / f"{name}.jsonl.gz"
    with gzip.open(path, "wb") as fh:
        for r in recs:
            fh.write(orjson.dumps(r) + b"\n")
    return replay_log(path).alerts


def missing(alerts: list[Alert]) -> list[Alert]:
    return [a for a in alerts if a.kind == "unattributed" and a.scope.level == "gpu"]


def test_a_gpu_that_does_not_come_back_is_one_escalation_at_it(tmp_path):
    """Fails on main (nothing sent): nvl-01's GPU 2 gone after a reboot, siblings back."""
    alerts = replay(tmp_path, fleet(dark={"nvl-01": (300, 420)},
                                    gone={("nvl-01", 2): (300, math.inf)}))
    got = missing(alerts)
    assert [(a.status, a.scope.node, a.scope.gpu, a.cause) for a in got] == [
        ("firing", "nvl-01", 2, "unknown")]
    a = got[0]
    assert a.detected_ts - (T0 + 420) < 240  # three ECC intervals of its siblings, and a scan
    assert a.evidence["missing_on"] == ["ecc", "thermal"] and a.evidence["siblings_reporting"] == [
        0, 1, 3]
    assert "nvidia-smi -L" in a.evidence["next_diagnostic"]
    assert "lspci -d 10de:" in a.evidence["next_diagnostic"]


def test_it_resolves_when_the_gpu_reports_again(tmp_path):
    """Fails on main (never fires)."""
    alerts = replay(tmp_path, fleet(seconds=1500, gone={("nvl-00", 1): (300, 900)}))
    got = missing(alerts)
    assert [a.status for a in got] == ["firing", "resolved"]
    assert got[0].detected_ts < T0 + 900 < got[1].detected_ts


def test_a_reboot_a_dark_node_a_dropped_row_and_a_small_node_page_nobody(tmp_path):
    benign = {
        "reboot": fleet(dark={"nvl-01": (300, 420)}),
        "dark": fleet(dark={"nvl-02": (300, math.inf)}),
        "dropped": fleet(gone={("nvl-00", 3): (300, 330), ("nvl-01", 0): (600, 630)}),
        "small": fleet(gpus=2),
        "half": fleet(gone={("nvl-00", 0): (300, math.inf), ("nvl-00", 1): (300, math.inf)}),
        # thermal rows alone (no ECC collector): a blank field is not a card gone
        "thermal-only": [r for r in fleet(gone={("nvl-00", 2): (300, math.inf)})
                         if r["topic"] == "telemetry.thermal"],
    }
    for name, recs in benign.items():
        assert missing(replay(tmp_path, recs, name)) == [], name


def test_a_gpu_off_the_bus_under_its_isolation_is_not_a_second_page(tmp_path):
    alerts = replay(tmp_path, fleet(xid79=("nvl-01", 2, 300.0),
                                    gone={("nvl-01", 2): (315, math.inf)}))
    assert missing(alerts) == []
    assert any(a.topic == "alerts.isolation" and a.scope.gpu == 2 for a in alerts)


def test_state_is_bounded_and_a_malformed_snapshot_is_refused():
    mon = Monitors()
    for g in range(gpu_missing.MAX_GPUS + 8):
        for k in range(gpu_missing.KEEP + 3):
            gpu_missing.note(mon, ThermalSample(T0 + k, "n", g, 60.0, 400.0, 1980.0, 0), T0 + k,
                             [])
    gone = mon._gone
    times = gone["n"][1]["thermal"]
    assert len(times) == gpu_missing.MAX_GPUS
    assert all(len(t) == gpu_missing.KEEP for t in times.values())
    assert gpu_missing.check_restored(gone)
    mon = Monitors()
    mon._gone = gone
    again = decode_state(encode_state(mon))
    again.check_restored()
    assert again._gone == gone
    del again.__dict__["_gone"]  # a snapshot of round 19
    again.check_restored()
    assert again._gone == {}
    for bad in ({"n": [None, {"thermal": {0: ["x"]}}, {}]}, {"n": [None, {"nic": {}}, {}]},
                {"n": [None, {}, {0: math.nan}]}):
        again._gone = bad
        try:
            again.check_restored()
        except SnapshotRefused:
            continue
        raise AssertionError(f"a malformed _gone was restored: {bad}")


def test_the_service_pages_only_once_every_topic_source_misses_it():
    """In the service each telemetry topic is its own source: a GPU absent from the thermal
    rows while its ECC rows come (a collector's lag) is no page; absent from both is one."""
    corr = Correlator(Thresholds())
    corr.seen = lambda node, what: what in ("thermal", "ecc")

    def told(ts: float, topic: str, active: bool = True) -> Finding:
        return Finding(ts, T0, "gpu_missing", "unattributed", "unknown", Scope.of_gpu("n1", 2),
                       active, False, 0.9 if active else 0.0,
                       {"topics": [topic], "last_ts": T0, "siblings_reporting": [0, 1, 3],
                        "gpus_before": 4, "gpus_after": 3})

    out: list[Alert] = []
    corr.on_finding(told(T0 + 60, "thermal"), out)
    assert out == []
    corr.on_finding(told(T0 + 200, "ecc"), out)
    assert [(a.status, a.scope.gpu) for a in out] == [("firing", 2)]
    assert out[0].evidence["missing_on"] == ["ecc", "thermal"]
    corr.on_finding(told(T0 + 900, "thermal", active=False), out)
    corr.advance(T0 + 3000, out)
    assert [a.status for a in out] == ["firing", "resolved"]


def test_the_service_and_the_replay_say_the_same(tmp_path):
    """Through the service's stages (one source per telemetry topic-partition, healthy runs
    in the batch path, detector.quiet): the same firing escalation as the replay.  Fails
    without the correlator's per-topic join and the batch path's note."""
    from tests.test_service_stages import InMemoryCluster

    recs = fleet(seconds=1500, dark={"nvl-01": (300, 420)}, gone={("nvl-01", 2): (300, 1200)})
    path = tmp_path / "svc.jsonl.gz"
    with gzip.open(path, "wb") as fh:
        for r in recs:
            fh.write(orjson.dumps(r) + b"\n")
    want = [(a.dedup_key, a.status) for a in missing(replay_log(path).alerts)]
    assert want == [("fl:esc:unattributed:gpu:nvl-01/2", "firing"),
                    ("fl:esc:unattributed:gpu:nvl-01/2", "resolved")]
    svc = InMemoryCluster(path, seed=1)
    svc.run()
    # (the resolution waits for a quiet period the service's run ends inside; the replay's
    # end flushes it)
    assert [(a.dedup_key, a.status) for a in missing(svc.alerts)] == want[:1]
