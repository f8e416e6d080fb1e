"""Room ports, round 11: what a node seen alone can tell of its ports (issue 10).

One Monitors per telemetry partition sees some nodes, often one alone (and an operator
replays one node's log).  Its own ports are weak evidence: a DGX's storage pair is
``mlx5_N`` at the compute ports' rate, or at 200G streaming at their pace.  One node alone
pages a port only when it is the single outlier of at least three ports of its family and
rate at pace (or has abnormal errors or flaps of its own); anything more ambiguous waits for
a second node.  A ``rate_gbps`` no link trains at is a collector's error, dead-lettered.
Each test below fails on main c339944 unless it says it is a control.
"""

from __future__ import annotations

import gzip
import os
import subprocess
import sys
from pathlib import Path

import msgspec
import orjson
import pytest

from detector.decoding import decode
from detector.engine import Engine
from detector.events import MAX_RATE_GBPS, NIC, InvalidMessage, NicSample
from detector.metrics import invalid_reason
from detector.testing import feed
from tests.test_nicport_round10 import bad_on, dgx, fleet, low_findings
from tests.test_rate_round10 import rate_findings, run
from tests.test_review_round9 import SLURM
from tests.test_review_round10 import busy, firing, traffic

ROOT = Path(__file__).resolve().parents[1]
CLI = "import sys; from detector.cli import main; sys.argv[0] = 'faultline'; sys.exit(main())"


# -- rate_gbps: a rate no link trains at ------------------------------------------------------

def _nic_message(rate: float) -> bytes:
    return orjson.dumps({"ts": 1.0e9, "node": "n1", "nic": "mlx5_0", "port": 1,
                         "link_state": "up", "rate_gbps": rate, "tx_bytes": 0})


def test_a_negotiated_rate_no_link_trains_at_is_dead_lettered_as_out_of_range() -> None:
    # XDR / 800GbE is the top today; MAX_RATE_GBPS leaves 2x headroom.
    for rate in (0.0, 10.0, 800.0, MAX_RATE_GBPS):
        assert decode(NIC, _nic_message(rate)).rate_gbps == rate  # type: ignore[union-attr]
    for rate in (MAX_RATE_GBPS + 0.5, 1e12, -1.0):
        with pytest.raises(InvalidMessage) as bad:
            decode(NIC, _nic_message(rate))
        assert bad.value.field == "rate_gbps"
        assert invalid_reason(str(bad.value)) == "out_of_range"


def test_a_replayed_log_counts_the_absurd_rate_and_pages_nobody(tmp_path: Path) -> None:
    # One node alone, 8 ports busy; mlx5_0 reports 1e12 Gb/s on every sample (a collector
    # bug): through the command line its samples are dead letters, counted by reason, and
    # nothing is paged (main: 7 link_rate isolations of the other ports).
    log = tmp_path / "alone.jsonl.gz"
    events = traffic(["node-003"], {f"mlx5_{k}": busy for k in range(8)}, 30,
                     {"mlx5_0": 1e12})
    with gzip.open(log, "wb") as fh:
        for e in events:
            fh.write(orjson.dumps({"topic": NIC, "value": msgspec.to_builtins(e)}) + b"\n")
    out = tmp_path / "alerts.jsonl"
    done = subprocess.run([sys.executable, "-c", CLI, "replay", str(log), "--alerts-out",
                           str(out)], check=True, env=dict(os.environ, PYTHONPATH=str(ROOT)),
                          capture_output=True, cwd=ROOT, text=True)
    assert "invalid input (dead-lettered): 30: telemetry.nic rate_gbps x30" in done.stdout
    assert [a for a in map(orjson.loads, out.read_bytes().splitlines())
            if a["value"]["status"] == "firing"] == []


def test_a_forged_rate_under_the_bound_is_no_family_s_rate_on_a_lone_node() -> None:
    # 1,600 Gb/s passes decode; on a node seen alone one port reporting it does not make
    # the seven others at 400 "below their family's rate" (main: 7 link_rate isolations).
    events = traffic(["node-003"], {f"mlx5_{k}": busy for k in range(8)}, 30,
                     {"mlx5_0": MAX_RATE_GBPS})
    assert firing(feed(Engine(topology=SLURM), events)) == []


# -- throughput: the single outlier of a class that runs in lockstep ------------------------

def _alone(events: list[NicSample], node: str) -> list[NicSample]:
    return [e for e in events if e.node == node]


def test_a_slow_compute_port_beside_a_quiet_storage_pair_of_its_rate_waits_for_a_second_node(
        ) -> None:
    # dgx004: mlx5_5 at 4 Gb/s from its first sample, mlx5_8/9 (storage, 400G like the
    # compute ports) quiet.  Alone, three outliers of one class: nothing on the node says
    # which is the fabric's, so none is paged (main: all three).  With a second node the
    # storage name is quiet there too and mlx5_5 runs at pace: mlx5_5 alone is paged.
    events = fleet(["dgx004", "dgx005"], dgx(bad_on("dgx004")), 40)
    assert low_findings(_alone(events, "dgx004")) == []
    assert [f.scope.key for f in low_findings(events)] == ["nic:dgx004/mlx5_5:1"]


def test_a_lone_node_s_slow_port_with_errors_of_its_own_is_judged_beside_the_storage_pair(
        ) -> None:
    # The same lone node; from its 10th sample mlx5_5 also counts symbol errors (20 a
    # sample, 2 a second: a bad cable; none before): its own trouble (errors_seen, then
    # nic_errors) tells it from the quiet storage ports, which are still not paged (main: all
    # three nic_throughput).
    events = []
    errors = 0
    for e in _alone(fleet(["dgx004"], dgx(bad_on("dgx004")), 40), "dgx004"):
        if e.nic == "mlx5_5":
            i = round((e.ts - events[0].ts) / 10.0) if events else 0
            errors += 20 if i >= 10 else 0
            e = msgspec.structs.replace(e, symbol_errors=errors)
        events.append(e)
    assert [f.scope.key for f in low_findings(events)] == ["nic:dgx004/mlx5_5:1"]


def test_the_single_slow_port_of_a_lone_dgx_is_still_paged() -> None:
    # Control (passes on main too): storage pair quiet at 200G, mlx5_5 the single outlier of
    # seven 400G ports at pace -- paged alone, by the node's own ports.
    events = fleet(["dgx004"], dgx(bad_on("dgx004"), storage_rate=200.0), 40)
    assert [f.scope.key for f in low_findings(events)] == ["nic:dgx004/mlx5_5:1"]


def test_a_lone_node_with_its_storage_pair_at_the_compute_pace_pages_nothing() -> None:
    # Control: a lone node's storage pair at 400G, both streaming at the compute pace, and
    # nothing slow -- no outlier, nothing paged.
    def at_pace(node: str, i: int) -> float:
        return 75.0

    assert low_findings(fleet(["dgx004"], dgx(at_pace, at_pace), 40)) == []


# -- link_rate: the single port below many at one rate -----------------------------------

def _two_fabric_ports(node: str, port: str, i: int) -> tuple[float | None, float, bool]:
    """An HGX-like node: mlx5_0/1 fabric (n3's mlx5_1 trained at 200 of 400), mlx5_2 a
    100G frontend, quiet."""
    if port == "mlx5_2":
        return 100.0, 0.5, True
    return (200.0 if (node, port) == ("n3", "mlx5_1") else 400.0), 300.0, True


def test_a_lone_node_of_two_fabric_ports_cannot_tell_a_half_rate_one() -> None:
    # Alone: one port at 400 against one at 200 is no family's rate (the 200 could be the
    # node's storage or frontend at pace); main paged it.  A second node tells: its name is
    # at 400 on the other nodes.
    ports = ["mlx5_0", "mlx5_1", "mlx5_2"]
    assert rate_findings(run(["n3"], ports, 12, _two_fabric_ports)) == []
    found = rate_findings(run(["n1", "n2", "n3"], ports, 12, _two_fabric_ports))
    assert [(f.scope.key, f.active) for f in found] == [("nic:n3/mlx5_1:1", True)]


def _cut(case: str, node: str, out: Path) -> Path:
    """One node's records of a blind2 case (topology and its own labels kept)."""
    with gzip.open(ROOT / "bench" / "blind2" / "cases" / f"{case}.jsonl.gz") as fh, \
            gzip.open(out, "wb") as w:
        for line in fh:
            r = orjson.loads(line)
            v = r["value"]
            if r["topic"] == "topology" or v.get("node") == node or (
                    r["topic"] == "labels" and v["scope"].get("node") == node):
                w.write(line)
    return out


@pytest.mark.parametrize(("case", "bad", "healthy"), [
    ("half-rate-port-ib", "su2-dgx07", "su2-dgx06"),
    ("half-rate-port-roce", "nvl2-c16", "nvl2-c15")])
def test_blind2_f2_seen_alone_still_pages_the_half_rate_port_and_nothing_else(
        case: str, bad: str, healthy: str, tmp_path: Path) -> None:
    # Control: blind2's F2 cut to one node -- the faulty one pages its port (the topology's
    # word on the DGX; on the GB200 tray its node's ports: one netdev at 200, three at 400);
    # a healthy node of the same log alone pages nothing.
    def paged(node: str) -> list[dict]:
        log = _cut(case, node, tmp_path / f"{node}.jsonl.gz")
        out = tmp_path / f"{node}.alerts.jsonl"
        subprocess.run([sys.executable, "-c", CLI, "replay", str(log), "--alerts-out",
                        str(out), "--quiet"], check=True, capture_output=True, cwd=ROOT,
                       env=dict(os.environ, PYTHONPATH=str(ROOT)))
        return [a["value"] for a in map(orjson.loads, out.read_bytes().splitlines())
                if a["value"]["status"] == "firing"]

    hits = paged(bad)
    assert [(a["scope"]["level"], a["scope"]["node"], a["evidence"]["signals"][0]["signal"])
            for a in hits] == [("nic", bad, "link_rate")]
    assert paged(healthy) == []
