"""One host, one node (room b17name, round 27; blind17 N1): a collector that names a host by its
FQDN while the topology and the job use the short name (or the other way round) reports on the
node the topology knows (detector/node_names.py) -- and the names that are two hosts, not one
(another domain, another case, an address, a name too long for DNS, a known name that
reports the same telemetry itself) stay apart; the table is bounded and survives a snapshot.
"""

from __future__ import annotations

import orjson
import pytest

import detector.node_names as nn
from detector.engine import Engine
from detector.events import StepSample
from detector.monitors import Monitors
from detector.node_names import NodeNames, dns_name
from detector.pipeline.source import SourcePartition
from detector.quiet import quiet_run
from detector.statecodec import SnapshotRefused
from detector.testing import T0, ecc, feed, healthy_job, step, thermal
from detector.topology import Topology

SHORT = Topology.from_text("Topology=t\nNodeSet=gn[01-04] Gpus=8\n"
                           "SwitchName=leaf-1 Nodes=gn[01-04]\n")
FQDN = "gn02.pod2.corp.example"


def _xid74(node: str, ts: float = T0 + 30) -> list:
    """An NVLink XID (74) with CRC errors on GPU 1 of ``node``, after a healthy baseline."""
    return [ecc(T0, node, 1), ecc(T0 + 10, node, 1),
            ecc(ts, node, 1, xid=74, nvlink=(400, 40, 0))]


def _firing(alerts: list) -> list[tuple[str, str, str]]:
    return [(a.kind, a.cause, a.scope.key) for a in alerts if a.status == "firing"]


def test_an_fqdn_row_the_topology_knows_by_its_short_name_is_that_node() -> None:
    # blind17 N1's XID: main isolated gpu:gn02.pod2.corp.example/1 (a node the topology does
    # not list: a miss and a false positive by DESIGN's rule)
    alerts = feed(Engine(topology=SHORT), _xid74(FQDN))
    assert _firing(alerts) == [("hardware", "nvlink", "gpu:gn02/1")]


def test_a_short_row_the_topology_knows_by_its_fqdn_is_that_node() -> None:
    topo = Topology.from_text("Topology=t\nNodeSet=gn[01-04].pod2.corp.example Gpus=8\n")
    alerts = feed(Engine(topology=topo), _xid74("gn02"))
    assert _firing(alerts) == [("hardware", "nvlink", f"gpu:{FQDN}/1")]


def test_without_a_topology_the_jobs_step_records_name_the_node() -> None:
    # the job on gn02 (socket.gethostname()) steps first; dcgm-exporter's rows say the FQDN
    eng = Engine()
    jobs = [step(T0 + k, r, k, node="gn02", gpu=r) for k in range(3) for r in range(2)]
    alerts = feed(eng, [*jobs, *_xid74(FQDN, T0 + 30)])
    assert _firing(alerts) == [("hardware", "nvlink", "gpu:gn02/1")]


@pytest.mark.parametrize(("name", "why"), [
    ("GN02.pod2.corp.example", "another case: names compare as strings"),
    ("gn02", "the name itself"),
    ("10.0.0.2", "an IPv4 address"),
    ("gn02.10", "a last label of digits: no DNS name"),
    ("fe80::2", "an IPv6 address"),
    ("gn02..corp", "an empty label"),
    ("gn02.pod2 corp", "a space"),
    ("gn02." + "x" * 64, "a label over 63 characters"),
    ("gn02." + ".".join(["a" * 60] * 5), "over 253 characters"),
    ("gn05.pod2.corp.example", "a first label the topology does not list"),
])
def test_names_that_are_not_another_form_of_a_known_name_stay_themselves(name: str,
                                                                         why: str) -> None:
    names = NodeNames(SHORT)
    assert names.resolve(thermal(T0, name, 0), {}).node == name, why
    assert names.alias == {}


def test_a_second_domain_of_one_short_name_is_another_host() -> None:
    # gn02.pod2 took gn02; gn02.pod3 (another pod reusing the short name) is not merged into it
    eng = Engine(topology=SHORT)
    alerts = feed(eng, [*_xid74(FQDN), *_xid74("gn02.pod3.corp.example", T0 + 40)])
    assert sorted(_firing(alerts)) == [("hardware", "nvlink", "gpu:gn02.pod3.corp.example/1"),
                                       ("hardware", "nvlink", "gpu:gn02/1")]


def test_a_known_name_that_reports_the_kind_itself_keeps_the_fqdn_apart() -> None:
    # gn02's own collector reports its ECC under gn02: an FQDN's ECC rows are another host's
    eng = Engine(topology=SHORT)
    alerts = feed(eng, [ecc(T0 - 20, "gn02", 1), *_xid74(FQDN)])
    assert _firing(alerts) == [("hardware", "nvlink", f"gpu:{FQDN}/1")]


def test_a_topology_of_fqdns_in_two_domains_merges_nothing() -> None:
    topo = Topology.from_text("Topology=t\nNodeSet=gn02.pod[2-3].corp.example Gpus=8\n")
    names = NodeNames(topo)
    for name in ("gn02", FQDN, "gn02.pod3.corp.example", "gn02.pod4.corp.example"):
        assert names.resolve(thermal(T0, name, 0), {}).node == name  # gn02: ambiguous
    assert names.alias == {}


def test_step_records_under_the_fqdn_join_the_node_on_both_paths() -> None:
    # a job that reports hostname -f while the topology lists short names: the batch path
    # (quiet_run) must not take a step under a name the record path would resolve
    steps = [s._replace(node=FQDN) if s.node == "node-000" else s
             for s in healthy_job(ranks=16, steps=12)]
    topo = Topology.from_text("Topology=t\nNodeSet=gn02,node-001 Gpus=8\n")
    kept = []
    for batch in (True, False):
        mon, found, i = Monitors(topology=topo), [], 0
        while i < len(steps):
            j = quiet_run(mon, steps, i) if batch else i
            if j > i:
                i = j
                continue
            mon.process(steps[i], found)
            i += 1
        kept.append({e.node for job in mon._jobs.values() for buf in job._pending.values()
                     for e in buf.events} | {hw[0] for job in mon._jobs.values()
                                             for hw in job._hw if hw is not None})
    assert kept[0] == kept[1] == {"gn02", "node-001"}


def test_the_table_is_bounded_against_a_flood_of_names(monkeypatch) -> None:
    monkeypatch.setattr(nn, "MAX_NAMES", 8)
    names = NodeNames(SHORT)
    for k in range(40):
        names.resolve(thermal(T0, f"junk-{k}.example", 0), {})
        names.resolve(thermal(T0, f"gn0{1 + k % 4}.pod{k}.example", 0), {})
        names.learn_step(f"job-node-{k}")
    assert len(names.plain) <= 8 and len(names.steps) <= 8 and len(names.alias) <= 8
    assert names.valid()
    # a name past the bound is itself, and stays so
    assert names.resolve(thermal(T0, "gn03.late.example", 0), {}).node == "gn03.late.example"


def test_the_aliases_survive_a_snapshot() -> None:
    eng = Engine(topology=SHORT)
    feed(eng, [ecc(T0, FQDN, 1), ecc(T0 + 10, FQDN, 1)], finish=False)
    again = Engine.restore(eng.snapshot(), SHORT)
    assert again.monitors._names.alias == {FQDN: "gn02"}
    alerts = feed(again, [ecc(T0 + 30, FQDN, 1, xid=74, nvlink=(400, 40, 0)),
                          *_xid74("gn02.pod3.corp.example", T0 + 40)])
    # the restored table still holds gn02's other name taken: gn02.pod3 stays apart
    assert sorted(_firing(alerts)) == [("hardware", "nvlink", "gpu:gn02.pod3.corp.example/1"),
                                       ("hardware", "nvlink", "gpu:gn02/1")]


def test_a_restored_table_that_is_not_one_is_refused() -> None:
    eng = Engine(topology=SHORT)
    feed(eng, _xid74(FQDN), finish=False)
    eng.monitors._names.alias = {FQDN: 7}
    with pytest.raises(SnapshotRefused):
        Engine.restore(eng.snapshot(), SHORT)


def test_a_pruned_node_forgets_its_other_name() -> None:
    names = NodeNames(SHORT)
    assert names.resolve(thermal(T0, FQDN, 0), {}).node == "gn02"
    names.forget("gn02")
    assert names.alias == {} and "gn02" not in names.plain
    # decided afresh: another domain may take it now that nothing of the first is kept
    assert names.resolve(thermal(T0, "gn02.pod3.example", 0), {}).node == "gn02"


def test_dns_name() -> None:
    assert dns_name(FQDN) and dns_name("gn02.pod2") and not dns_name("gn02")
    assert not dns_name("10.1.2.3") and not dns_name("gn02.") and not dns_name(".gn02")


def test_a_step_sample_keeps_its_fields_when_renamed() -> None:
    s = step(T0, 3, 7, node=FQDN, gpu=3, tp=1, pp=0, dp=2)
    names = NodeNames(SHORT)
    r = names.resolve(s, {})
    assert type(r) is StepSample and r.node == "gn02"
    assert r._replace(node=FQDN) == s


def test_the_services_sample_partition_names_the_node_as_the_topology_does() -> None:
    # the service's way in (a fetched batch of message bytes: decode_chunked, quiet_run, the
    # record path), as the replay's: the finding and the "seen" notice name gn02
    src = SourcePartition("telemetry.ecc", 0, 1, topology=SHORT)
    rows = [orjson.dumps({"ts": T0 + 10 * k, "node": FQDN, "gpu": g})
            for k in range(3) for g in range(8)]
    rows.append(orjson.dumps({"ts": T0 + 30, "node": FQDN, "gpu": 1, "xid": 74,
                              "nvlink_crc_errors": 400}))
    emits: list = []
    src.process([(k, FQDN.encode(), raw, None) for k, raw in enumerate(rows)], 0.0, emits, [])
    msgs = [orjson.loads(e.value) for e in emits]
    assert {m["node"] for m in msgs if m["type"] == "seen"} == {"gn02"}
    assert {m["finding"]["scope"]["node"] for m in msgs if m["type"] == "finding"} == {"gn02"}
