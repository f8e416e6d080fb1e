"""clu39 (round 39, issue 10): a node belongs to one cluster -- a record that omits `cluster`
for a node whose cluster its other rows named is that cluster's, so one fault has one dedup key
(blind30 F1: an XID event row without `cluster`, the same GPU's DBE rows with it, paged twice).
CorrelatorPartition.cluster_of keeps each node's first value (bounded, counted), on the one
path both drivers run; a later different value does not move the node."""

from __future__ import annotations

import pytest

from detector.engine import Engine
from detector.events import EccSample
from detector.pipeline import correlator as pc
from detector.statecodec import UNSIGNED, SnapshotRefused


def _ecc(ts: float, node: str, gpu: int, cluster: str | None, *, dbe: int = 0,
         xid: int | None = None) -> EccSample:
    return EccSample(ts, node, gpu, 0, dbe, 0, dbe, False, False, xid, 0, 0, 0, 0, "none",
                     cluster=cluster)


def _healthy(cluster: str | None = "east", node: str = "gpu-004", n: int = 6) -> list:
    return [_ecc(1_000.0 + 10 * k, node, g, cluster) for k in range(n) for g in range(8)]


def _run(eng: Engine, evs: list) -> list:
    alerts = []
    for ev in evs:
        alerts += eng.process(ev)
    return alerts


def _xid_then_dbe(cluster: str | None = "east") -> list:
    """gpu-004's rows name ``cluster``; its XID 94 row names none; its DBE rows 9 s later do."""
    return [_ecc(1_070.0, "gpu-004", 3, None, xid=94),
            *(_ecc(1_079.0 + 10 * k, "gpu-004", 3, cluster, dbe=1) for k in range(3))]


def test_an_xid_row_without_cluster_and_its_dbe_rows_with_it_are_one_problem():
    """Fails before: fl:iso:hardware:gpu:gpu-004/3 on the XID, then
    fl:east:iso:hardware:gpu:gpu-004/3 on the DBE -- two pages."""
    eng = Engine()
    assert _run(eng, _healthy()) == []
    alerts = _run(eng, _xid_then_dbe()) + eng.finish()
    firing = {a.dedup_key for a in alerts if a.status == "firing"}
    assert firing == {"fl:east:iso:hardware:gpu:gpu-004/3"}
    assert {a.cluster for a in alerts} == {"east"}


def test_a_stream_without_cluster_keeps_its_keys():
    eng = Engine()
    assert _run(eng, _healthy(None)) == []
    evs = _xid_then_dbe(None)
    alerts = _run(eng, evs) + eng.finish()
    assert {a.dedup_key for a in alerts} == {"fl:iso:hardware:gpu:gpu-004/3"}


def test_another_cluster_for_a_known_node_does_not_move_it():
    """A row naming `west` for gpu-004 (misconfigured or forged) is counted; the node stays
    east's, and its rows without `cluster` still page under east's key."""
    eng = Engine()
    _run(eng, _healthy() + [_ecc(1_065.0, "gpu-004", 5, "west")])
    assert eng.stage.cluster_moves >= 1
    assert eng.stage.cluster_of("gpu-004", None) == "east"
    alerts = _run(eng, [_ecc(1_070.0, "gpu-004", 3, None, xid=94)])
    assert [a.dedup_key for a in alerts] == ["fl:east:iso:hardware:gpu:gpu-004/3"]


def test_the_nodes_clusters_are_bounded_and_counted(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setattr(pc, "MAX_NODE_CLUSTERS", 2)
    eng = Engine()
    _run(eng, [_ecc(1_000.0 + k, f"gpu-{k:03d}", 0, "east") for k in range(5)])
    assert len(eng.stage._cluster_of) == 2 and eng.stage.cluster_over == 3
    # (a node not remembered: a row without `cluster` is the home's, as the source routed it
    # -- key43; before, unnamed)
    assert eng.stage.cluster_of("gpu-004", None) == "east"
    assert "gpu-004" not in eng.stage._cluster_of and eng.stage.cluster_over == 4


def test_a_snapshot_keeps_the_nodes_clusters():
    first = Engine()
    _run(first, _healthy())
    eng = Engine.restore(first.snapshot())
    assert eng.stage.cluster_of("gpu-004", None) == "east"
    alerts = _run(eng, _xid_then_dbe()) + eng.finish()
    assert {a.dedup_key for a in alerts if a.status == "firing"} == {
        "fl:east:iso:hardware:gpu:gpu-004/3"}


def test_a_malformed_map_is_refused():
    eng = Engine()
    _run(eng, _healthy())
    state = UNSIGNED.decode(eng.snapshot(), "engine")
    state["correlator"]["cluster_of"] = {"gpu-004": 7}
    with pytest.raises(SnapshotRefused):
        Engine.restore(UNSIGNED.encode(state, "engine"))


def test_a_clock_held_by_a_setting_is_reset_not_drained():
    """blind30 F2's page: slow_node/software at a node resets its clocks, nothing restarts."""
    from detector.alerts import Scope
    from detector.playbook import action_for, reach
    from detector.recovery import estimate

    a = action_for("slow_node", "software", Scope.of_node("r-09"))
    assert a.name == "reset_clocks" and "nvidia-smi -rgc" in a.detail
    assert reach(a.name) < reach("drain_gpu")
    assert estimate(a.name, "slow_node", 0.0, 10.0, 1800.0, 300.0).estimate_s == 0.0
