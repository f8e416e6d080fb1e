"""clusters27 (round 27): a unit is (cluster, node), not its host name (issue 10, blind18 C1-C3).

Two clusters in one stream both name their hosts gpu-001..008 (DESIGN's optional `cluster` on
every record).  The two stages both drivers run keep each cluster value's units apart: a
SourcePartition's `monitors` and a CorrelatorPartition's `correlator` are its first cluster's
(and every record's with no `cluster`), each other value gets its own in `others`, at most
MAX_CLUSTERS in all.  A stream of zero or one cluster value runs and snapshots as before.
"""

from __future__ import annotations

import pytest

from detector.engine import Engine
from detector.events import EccSample, InvalidMessage, NicSample
from detector.pipeline.clusters import MAX_CLUSTERS
from detector.statecodec import UNSIGNED, SnapshotRefused


def _ports(clustered: bool, n: int = 60) -> list[NicSample]:
    """One port name in two clusters, both healthy: east's counters since boot hold 4 link
    downs and 20,000 old symbol errors, west's none (blind18 C1's shape), every 5 s."""
    evs = []
    for k in range(n):
        for cluster, downed, symbols, lag in (("east", 4, 20_000, 0.0), ("west", 0, 0, 1.5)):
            evs.append(NicSample(
                1_000.0 + 5 * k + lag, "gpu-004", "mlx5_3", 1, link_state="up", rate_gbps=400.0,
                tx_bytes=10**9 + k * 10**8, rx_bytes=10**9 + k * 10**8, symbol_errors=symbols,
                link_downed=downed, rcv_errors=0, xmit_discards=0,
                cluster=cluster if clustered else None))
    return evs


def _dbe(ts: float, cluster: str | None) -> EccSample:
    return EccSample(ts, "gpu-004", 3, 0, 1, 0, 1, True, False, 48, 0, 0, 0, 0, "none",
                     cluster=cluster)


def _healthy_ecc(ts: float, cluster: str | None) -> EccSample:
    return EccSample(ts, "gpu-004", 3, 0, 0, 0, 0, False, False, None, 0, 0, 0, 0, "none",
                     cluster=cluster)


def _run(eng: Engine, evs: list) -> list:
    alerts = []
    for ev in evs:
        alerts += eng.process(ev)
    return alerts


def _stream() -> list:
    """Both clusters' ports, east's healthy ECC rows, and a DBE on west's gpu-004/3."""
    evs: list = list(_ports(True))
    evs += [_healthy_ecc(1_000.2 + 30 * k, "east") for k in range(10)]
    evs.append(_dbe(1_150.7, "west"))
    evs.sort(key=lambda e: e.ts)
    return evs


def test_two_clusters_port_counters_are_two_units():
    eng = Engine()
    alerts = _run(eng, _ports(True)) + eng.finish()
    assert alerts == []
    assert eng.stats()["clusters"] == 2


def test_without_cluster_the_same_rows_are_one_unit_and_page():
    """The control: the same rows with no `cluster` are one port's, whose counters step back
    and forth (what main did with the two clusters' rows) -- so the test above can fail."""
    eng = Engine()
    alerts = _run(eng, _ports(False)) + eng.finish()
    assert alerts
    assert "clusters" not in eng.stats()


def test_an_alert_names_its_cluster():
    eng = Engine()
    alerts = _run(eng, _stream()) + eng.finish()
    assert [(a.kind, a.scope.key, a.cluster) for a in alerts] == [
        ("hardware", "gpu:gpu-004/3", "west")]


def test_records_without_cluster_join_the_first_cluster():
    """A trainer's rows without `cluster` beside DCGM rows with one: one cluster, not two; the
    state is the one a stream without clusters has (no key of the split)."""
    eng = Engine()
    evs = [_healthy_ecc(1_000.0 + 10 * k, "east" if k % 2 else None) for k in range(20)]
    assert _run(eng, evs) == []
    assert "clusters" not in eng.stats()
    assert set(UNSIGNED.decode(eng.snapshot(), "engine")) == {"offset", "source", "correlator"}
    assert eng.process(_dbe(1_300.0, None))[0].scope.key == "gpu:gpu-004/3"


def test_a_snapshot_of_two_clusters_restores_the_split():
    evs = _stream()
    whole = Engine()
    expected = [a.to_dict() for a in _run(whole, evs) + whole.finish()]
    first = Engine()
    half = len(evs) // 2
    got = _run(first, evs[:half])
    assert first.stats()["clusters"] == 2
    eng = Engine.restore(first.snapshot())
    assert sorted(eng.source.others) == ["west"] and eng.source.cluster == "east"
    assert sorted(eng.stage.others) == ["west"] and eng.stage.cluster == "east"
    got += _run(eng, evs[half:]) + eng.finish()
    assert [a.to_dict() for a in got] == expected


def test_clusters_past_the_cap_are_refused_and_counted():
    eng = Engine()
    for k in range(MAX_CLUSTERS):
        eng.process(_healthy_ecc(1_000.0 + k, f"c{k}"))
    assert eng.stats()["clusters"] == MAX_CLUSTERS
    with pytest.raises(InvalidMessage) as exc:
        eng.process(_healthy_ecc(1_100.0, "one-more"))
    assert exc.value.reason == "too_many_clusters"
    assert eng.stats()["clusters"] == MAX_CLUSTERS and eng.source.too_many_clusters == 1
    eng.process(_healthy_ecc(1_101.0, "c3"))  # a known one still goes in
    assert Engine.restore(eng.snapshot()).source.too_many_clusters == 1


@pytest.mark.parametrize("forge", [
    lambda s: s["source"].update(others="west"),
    lambda s: s["source"].update(others=[["west"]]),
    lambda s: s["source"].update(others=[[7, s["source"]["others"][0][1]]]),
    lambda s: s["source"].update(others=[["east", s["source"]["others"][0][1]]]),
    lambda s: s["source"].update(others=s["source"]["others"] * 2),
    lambda s: s["source"].update(others=[["west", {}]]),
    lambda s: s["source"].update(cluster=None),
    lambda s: s["source"].update(too_many_clusters=-1),
    lambda s: s["source"].update(others=[[f"c{k}", s["source"]["others"][0][1]]
                                         for k in range(MAX_CLUSTERS)]),
    lambda s: s["correlator"].update(others="west"),
    lambda s: s["correlator"].update(others=[["west", s["correlator"]["others"][0][1]]]),
    lambda s: s["correlator"].update(others=[["east", *s["correlator"]["others"][0][1:]]]),
    lambda s: s["correlator"].update(others=[["west", s["correlator"]["others"][0][1], []]]),
    lambda s: s["correlator"].update(cluster=3),
])
def test_a_forged_split_is_refused(forge):
    eng = Engine()
    _run(eng, _stream())
    state = UNSIGNED.decode(eng.snapshot(), "engine")
    forge(state)
    with pytest.raises(SnapshotRefused):
        Engine.restore(UNSIGNED.encode(state, "engine"))


def test_process_many_keeps_two_clusters_apart():
    evs = _stream()
    one = Engine()
    expected = [a.to_dict() for a in _run(one, evs) + one.finish()]
    many = Engine()
    got = []
    for k in range(0, len(evs), 7):
        got += many.process_many(evs[k:k + 7])
    got += many.finish()
    assert [a.to_dict() for a in got] == expected
    assert many.stats()["clusters"] == 2


def test_process_many_of_one_cluster_takes_the_batch_path(monkeypatch: pytest.MonkeyPatch):
    import detector.engine as engine
    runs = []
    real = engine.quiet_run

    def counting(*args, **kw):
        runs.append(1)
        return real(*args, **kw)
    monkeypatch.setattr(engine, "quiet_run", counting)
    eng = Engine()
    eng.process_many([_healthy_ecc(1_000.0 + k, "east" if k % 3 else None) for k in range(30)])
    assert runs and eng.source.cluster == "east"


@pytest.mark.parametrize("case", ["C1-two-clusters-counters-read-as-jumps",
                                  "C2-west-port-errors-under-east-names",
                                  "C3-west-straggler-in-a-shared-job-name"])
@pytest.mark.parametrize("seed", [0, 1])
def test_the_service_worker_keeps_two_clusters_apart(case: str, seed: int):
    """The same split in the service's stages (SourcePartition.others,
    CorrelatorPartition.others): the in-memory worker over blind18's cases raises the
    Engine's problems -- C1 none (main's worker paged C1's counters as one unit's too)."""
    from replay.log import log_topology
    from replay.runner import replay_log
    from tests.blindcases import cases_of
    from tests.test_service_stages import InMemoryCluster, problems
    log = cases_of("blind18") / f"{case}.jsonl.gz"
    topology = log_topology(log)
    expected = problems(replay_log(log, topology=topology).alerts)
    svc = InMemoryCluster(log, seed, topology=topology)
    svc.run()
    assert problems(svc.alerts) == expected
    assert svc.dead == []
    if case.startswith("C1"):
        assert expected == set()
    else:
        assert any(p[0].startswith("fl:west:") for p in expected), expected


@pytest.mark.parametrize("many", [False, True])
def test_the_topology_is_the_first_clusters_in_both_stages(many: bool):
    """The first record is east's step row (which no correlator notice follows), then west's
    and east's ECC rows: the topology's cluster is east in the monitors and the correlator
    alike (blind18 held s6 gave west's alerts the topology and east's none before this)."""
    from detector.testing import healthy_job
    # (half of a step's ranks: rows that make no finding and no notice, as a job's mid-run
    # rows of blind18 held s6 before west's first thermal row)
    steps = sorted((s._replace(cluster="east") for s in healthy_job(steps=3, t0=1_000.0)),
                   key=lambda e: e.ts)[:8]
    evs = [*steps, _healthy_ecc(steps[-1].ts + 1.0, "west"),
           _healthy_ecc(steps[-1].ts + 2.0, "east")]
    eng = Engine()
    if many:
        eng.process_many(evs)
    else:
        _run(eng, evs)
    assert eng.source.cluster == eng.stage.cluster == "east"
