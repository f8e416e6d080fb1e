"""home29b (round 29): a stream of one cluster value keeps the topology, whatever its name.

home29's e1e69b0 took a faultline topology's own ``Topology=NAME`` for the home cluster when
none is configured; a stream whose records all carry one `cluster` value named otherwise (the
bundled topologies are named after their hardware, h100-128 ...; an exporter labels records
with the site's name) then ran its only cluster with no topology (review29 1b).  The home is
again the named one, else the first value read (detector.pipeline.clusters), in both stages of
the service and in the replay.  (The Engine's case: tests/test_review29.py 1b.)
"""

from __future__ import annotations

import orjson

from detector.events import ECC
from tests.test_home28 import EAST, _drive, _ecc, _msg, _topology_of, _worker


def _one_cluster_service(cluster: str) -> list:
    """Both telemetry partitions and the findings partition of a worker, no home configured,
    the faultline topology `Topology=east`, every record of ``cluster``: its alerts."""
    w = _worker(None)
    feeds = [{(ECC, 1): [(0, b"gpu-004", _msg(_ecc(1_000.0, cluster, dbe=True)), None)]},
             {(ECC, 0): [(0, b"gpu-002", _msg(_ecc(1_001.0, cluster, node="gpu-002")), None),
                         (1, b"gpu-002", _msg(_ecc(1_030.0, cluster, dbe=True,
                                                   node="gpu-002")), None)]},
             {(ECC, 1): [(1, b"gpu-004", _msg(_ecc(1_031.0, cluster)), None)]}]
    alerts = _drive(w, feeds)
    assert {p.cluster for p in w.sources.values()} == {cluster}
    assert w.correlators[("findings", 0)].cluster == cluster
    return alerts


def test_the_service_keeps_the_topology_for_one_cluster_named_otherwise() -> None:
    alerts = _one_cluster_service("prod-a")
    assert len(alerts) >= 2 and _topology_of(alerts) == {"prod-a": "full"}


def test_the_service_keeps_the_topology_for_one_cluster_of_its_name() -> None:
    # (the control: the topology's own name -- as before and with e1e69b0)
    assert _topology_of(_one_cluster_service("east")) == {"east": "full"}


def test_replay_keeps_the_topology_for_one_cluster_named_otherwise(tmp_path) -> None:
    from detector.cli.main import main
    from replay.log import read_records
    recs = [{"topic": "topology", "value": {"format": "faultline", "text": EAST.text}}]
    recs += [{"topic": ECC, "value": orjson.loads(_msg(ev))}
             for ev in (_ecc(1_000.0, "prod-a"), _ecc(1_030.0, "prod-a", dbe=True))]
    path = tmp_path / "one.jsonl"
    path.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in recs))
    out = tmp_path / "alerts.jsonl"
    assert main(["replay", str(path), "--quiet", "--alerts-out", str(out)]) == 0
    got = {r.value["cluster"]: r.value["evidence"]["conditions"]["topology"]
           for r in read_records(out) if r.value.get("status") == "firing"}
    assert got == {"prod-a": "full"}
