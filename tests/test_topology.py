"""Cluster topology loading: hostlists, both file formats, the shipped examples, errors."""

from __future__ import annotations

import importlib.util
import pickle
from pathlib import Path

import pytest

from detector.topology import Topology, TopologyError, compress_hostlist, expand_hostlist

TOPOLOGIES = Path(__file__).resolve().parent.parent / "topologies"


def small() -> Topology:
    """Four rail-optimized nodes (2 rails, 2 leaves each), one CPU node, two NVLink domains."""
    return Topology.from_text("""\
Topology=small Version=1
NodeSet=node-[000-003] Gpus=8 Nics=mlx5_[0-7]
NodeSet=cpu-0 Gpus=1
Rack=rack-[0-1] Nodes=node-[000-003]
Domain=nvl-[0-1] Nodes=node-[000-003]
SwitchName=rail0-leaf[0-1] Nodes=node-[000-003] Nics=mlx5_0
SwitchName=rail1-leaf[0-1] Nodes=node-[000-003] Nics=mlx5_1
SwitchName=mgmt0 Nodes=cpu-0
SwitchName=spine0 Switches=rail[0-1]-leaf[0-1]
""", source="small.topo")


def error_of(text: str, source: str = "bad.topo") -> TopologyError:
    with pytest.raises(TopologyError) as caught:
        Topology.from_text(text, source=source)
    return caught.value


# --- hostlists -----------------------------------------------------------------------------


@pytest.mark.parametrize(("text", "names"), [
    ("node-[000-003,007]", ["node-000", "node-001", "node-002", "node-003", "node-007"]),
    ("node[8-10]", ["node8", "node9", "node10"]),
    ("node[08-10]", ["node08", "node09", "node10"]),
    ("node[1-2],gpu-a[1-2]", ["node1", "node2", "gpu-a1", "gpu-a2"]),
    ("rail[0-1]-leaf[0-1]", ["rail0-leaf0", "rail0-leaf1", "rail1-leaf0", "rail1-leaf1"]),
    ("nvl-r[0-1]-n[00-01]-ib",
     ["nvl-r0-n00-ib", "nvl-r0-n01-ib", "nvl-r1-n00-ib", "nvl-r1-n01-ib"]),
    ("mlx5_0", ["mlx5_0"]),
])
def test_expand_hostlist(text, names):
    assert expand_hostlist(text) == names


@pytest.mark.parametrize("text", [
    "", "a,,b", "a,", "node[1-", "node]1", "node[]", "node[a-b]", "node[3-1]", "node[[1]]",
    "node[0-99999999]",
])
def test_expand_hostlist_rejects(text):
    with pytest.raises(ValueError):
        expand_hostlist(text)


@pytest.mark.parametrize("names", [
    [f"node-{i:03d}" for i in range(128)],
    ["node9", "node10", "node12", "gpu1", "gpu2", "login"],
    ["node09", "node010", "node011", "a1-b2", "a1-b3"],
    ["n2", "n1", "n1"],
])
def test_compress_hostlist_round_trips(names):
    text = compress_hostlist(names)
    assert expand_hostlist(text) == names
    assert len(text) <= len(",".join(names))


def test_compress_hostlist_is_short_for_ranges():
    assert compress_hostlist([f"node-{i:03d}" for i in (*range(32), 40)]) == "node-[000-031,040]"


# --- the faultline format ----------------------------------------------------------------


def test_rail_switches_and_node_level_switch():
    topo = small()
    assert topo.name == "small"
    assert topo.switch_of("node-002", "mlx5_1") == "rail1-leaf1"
    assert topo.switch_of("node-001", "mlx5_0") == "rail0-leaf0"
    # A rail-optimized node faces one switch per rail, so it has no single leaf.
    assert topo.switch_of("node-002") is None
    # A NIC-less node hangs under its switch as a whole.
    assert topo.switch_of("cpu-0") == "mgmt0"
    assert topo.switch_of("cpu-0", "eth0") == "mgmt0"
    assert topo.nodes_under("rail1-leaf1") == ("node-002", "node-003")
    assert topo.nics_under("rail1-leaf1") == (("node-002", "mlx5_1"), ("node-003", "mlx5_1"))
    assert topo.nodes_under("spine0") == ()
    assert topo.parent_of("rail0-leaf1") == ("spine0",)
    assert topo.parent_of("spine0") == ()
    assert topo.switches() == ("mgmt0", "rail0-leaf0", "rail0-leaf1", "rail1-leaf0",
                               "rail1-leaf1", "spine0")


def test_nodes_gpus_nics_racks_domains():
    topo = small()
    assert topo.nodes() == ("cpu-0", "node-000", "node-001", "node-002", "node-003")
    assert topo.has_node("node-003") and not topo.has_node("node-004")
    assert (topo.gpus_of("node-001"), topo.gpus_of("cpu-0")) == (8, 1)
    assert topo.nics_of("node-001") == tuple(f"mlx5_{k}" for k in range(8))
    assert topo.nics_of("cpu-0") == ()
    assert topo.rack_of("node-002") == "rack-1"
    assert topo.domain_of("node-001") == "nvl-0"
    assert topo.domain_of("cpu-0") is None
    assert topo.nodes_in_domain("nvl-1") == ("node-002", "node-003")
    assert topo.domains() == ("nvl-0", "nvl-1")


def test_unknown_names_give_none_or_empty():
    topo = small()
    assert topo.gpus_of("node-999") == 0
    assert topo.nics_of("node-999") == ()
    assert topo.switch_of("node-999") is None
    assert topo.switch_of("node-999", "mlx5_0") is None
    assert topo.switch_of("node-000", "mlx5_9") is None  # not a NIC of a rail node
    assert topo.switch_of("node-000", "mlx5_5") is None  # a NIC no switch lists
    assert topo.nodes_under("leaf-x") == topo.nics_under("leaf-x") == topo.parent_of("leaf-x") == ()
    assert topo.domain_of("node-999") is None and topo.nodes_in_domain("nvl-9") == ()
    assert topo.rack_of("node-999") is None
    assert topo.nic_for_gpu("node-999", 0) is None
    assert topo.nic_for_gpu("node-000", 8) is None and topo.nic_for_gpu("node-000", -1) is None


def test_gpu_to_nic_default_and_explicit():
    topo = Topology.from_text("""\
Topology=nics
NodeSet=same[0-1] Gpus=8 Nics=mlx5_[0-7]
NodeSet=shared0 Gpus=8 Nics=mlx5_[0-3]
NodeSet=extra0 Gpus=4 Nics=mlx5_[0-5]
NodeSet=odd0 Gpus=3 Nics=mlx5_[0-1]
NodeSet=mapped0 Gpus=4 Nics=mlx5_[0-3] GpuNics=mlx5_2,mlx5_3,mlx5_0,mlx5_0
""")
    assert [topo.nic_for_gpu("same1", g) for g in (0, 7)] == ["mlx5_0", "mlx5_7"]
    assert [topo.nic_for_gpu("shared0", g) for g in range(8)] == [
        "mlx5_0", "mlx5_0", "mlx5_1", "mlx5_1", "mlx5_2", "mlx5_2", "mlx5_3", "mlx5_3"]
    assert topo.nic_for_gpu("extra0", 3) == "mlx5_3"
    assert topo.nic_for_gpu("odd0", 0) is None
    assert [topo.nic_for_gpu("mapped0", g) for g in range(4)] == [
        "mlx5_2", "mlx5_3", "mlx5_0", "mlx5_0"]


def test_keys_are_case_insensitive_and_lines_continue():
    topo = Topology.from_text("topology=ci\nnodeset=n[0-1] GPUS=2 \\\n   nics=ib[0-1]\n"
                              "switchname=s0 nodes=n[0-1]\n")
    assert topo.nics_of("n1") == ("ib0", "ib1")
    assert topo.nics_under("s0") == (("n0", "ib0"), ("n0", "ib1"), ("n1", "ib0"), ("n1", "ib1"))
    assert topo.switch_of("n1") == "s0"


def test_topology_is_immutable_and_pickles():
    topo = small()
    with pytest.raises(AttributeError):
        topo.name = "other"  # type: ignore[misc]
    copy = pickle.loads(pickle.dumps(topo))
    assert copy.switch_of("node-002", "mlx5_1") == "rail1-leaf1"
    error = error_of("Topology=x\nNodeSet=n0 Gpus=0\n")
    assert str(pickle.loads(pickle.dumps(error))) == str(error)


# --- the Slurm format --------------------------------------------------------------------


def test_slurm_tree_and_blocks():
    topo = Topology.from_text("""\
# a comment
SwitchName=leaf0 Nodes=node[000-003] LinkSpeed=400
switchname=leaf1 nodes=node[004-007]   # keys are case-insensitive in Slurm
SwitchName=spine0 Switches=leaf[0-1]
BlockName=b0 Nodes=node[000-003]
BlockName=b1 Nodes=node[004-007]
BlockSizes=4
""", source="/etc/slurm/topology.conf")
    assert topo.name == "topology"
    assert topo.nodes() == tuple(f"node{i:03d}" for i in range(8))
    assert topo.switch_of("node005") == "leaf1"
    assert topo.switch_of("node005", "mlx5_3") == "leaf1"  # Slurm knows no NICs
    assert topo.nics_of("node005") == () and topo.gpus_of("node005") == 0
    assert topo.nodes_under("leaf0") == tuple(f"node{i:03d}" for i in range(4))
    assert topo.nics_under("leaf0") == ()
    assert topo.parent_of("leaf1") == ("spine0",)
    assert topo.domain_of("node002") == "b0"
    assert topo.nodes_in_domain("b1") == tuple(f"node{i:03d}" for i in range(4, 8))


def test_slurm_multi_homed_node_has_no_single_leaf():
    topo = Topology.from_text("SwitchName=a Nodes=n[0-1]\nSwitchName=b Nodes=n[1-2]\n")
    assert topo.switch_of("n0") == "a"
    assert topo.switch_of("n1") is None
    assert topo.nodes_under("b") == ("n1", "n2")


def test_format_can_be_forced():
    with pytest.raises(TopologyError, match="starts with 'Topology=NAME'"):
        Topology.from_text("SwitchName=s0 Nodes=n0\n", fmt="faultline")
    with pytest.raises(TopologyError, match="field 'Topology'"):
        Topology.from_text("Topology=x\n", fmt="slurm")
    with pytest.raises(ValueError, match="unknown topology format"):
        Topology.from_text("Topology=x\n", fmt="yaml")


# --- the shipped examples ----------------------------------------------------------------


@pytest.mark.parametrize(("file", "nodes", "gpus", "switches", "domains"), [
    ("h100-128.topo", 16, 128, 16 + 2, 0),
    ("h100-1k.topo", 128, 1024, 32 + 16, 0),
    ("h100-16k.topo", 2048, 16384, 512 + 256, 0),
    ("gb200-nvl72.topo", 144, 576, 16 + 4, 8),
    ("h100-1k.topology.conf", 128, 0, 4 + 2, 0),
    ("example.topology.conf", 36, 0, 0, 2),
])
def test_examples_load_with_expected_counts(file, nodes, gpus, switches, domains):
    topo = Topology.load(TOPOLOGIES / file)
    assert len(topo.nodes()) == nodes
    assert sum(topo.gpus_of(n) for n in topo.nodes()) == gpus
    assert len(topo.switches()) == switches
    assert len(topo.domains()) == domains


def test_h100_1k_rails():
    topo = Topology.load(TOPOLOGIES / "h100-1k.topo")
    assert topo.switch_of("node-040", "mlx5_3") == "rail3-leaf1"
    assert topo.switch_of("node-127", "mlx5_7") == "rail7-leaf3"
    assert topo.nodes_under("rail3-leaf1") == tuple(f"node-{i:03d}" for i in range(32, 64))
    assert topo.nic_for_gpu("node-040", 3) == "mlx5_3"
    assert topo.rack_of("node-040") == "rack-10"
    assert len(topo.parent_of("rail3-leaf1")) == 16
    assert topo.domain_of("node-040") is None


def test_h100_128_and_16k_and_slurm_twin():
    small_cluster = Topology.load(TOPOLOGIES / "h100-128.topo")
    assert small_cluster.switch_of("node-009", "mlx5_5") == "rail5-leaf1"
    big = Topology.load(TOPOLOGIES / "h100-16k.topo")
    assert big.switch_of("node-2047", "mlx5_0") == "rail0-leaf63"
    assert big.parent_of("rail0-leaf63") == tuple(f"rail0-spine{i:02d}" for i in range(32))
    twin = Topology.load(TOPOLOGIES / "h100-1k.topology.conf")
    assert twin.name == "h100-1k"
    assert twin.switch_of("node-040", "mlx5_3") == "leaf1"


def test_gb200_domains():
    topo = Topology.load(TOPOLOGIES / "gb200-nvl72.topo")
    assert topo.domain_of("nvl-r3-n17") == "rack-3"
    assert len(topo.nodes_in_domain("rack-3")) == 18
    assert sum(topo.gpus_of(n) for n in topo.nodes_in_domain("rack-3")) == 72
    assert topo.switch_of("nvl-r3-n17", "mlx5_2") == "rail2-leaf1"


def test_examples_match_their_generator():
    spec = importlib.util.spec_from_file_location("generate", TOPOLOGIES / "generate.py")
    assert spec is not None and spec.loader is not None
    generate = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(generate)
    for name, text in generate.render().items():
        assert (TOPOLOGIES / name).read_text(encoding="utf-8") == text, name


# --- errors name file, line and field ----------------------------------------------------

HEAD = "Topology=bad\nNodeSet=node-[000-003] Gpus=8 Nics=mlx5_[0-7]\n"


@pytest.mark.parametrize(("text", "line", "field", "detail"), [
    ("Topology=bad\nNodeSet=n[0-1] Gpus=eight\n", 2, "Gpus",
     "expected a positive integer, got 'eight'"),
    ("Topology=bad\nNodeSet=n[0-1] Gpus=0\n", 2, "Gpus", "positive integer"),
    (HEAD + "Rack=r0 Nodes=node-[000-003] Colour=red\n", 3, "Colour", "unknown key"),
    (HEAD + "Cabinet=c0 Nodes=node-000\n", 3, "Cabinet", "unknown record type"),
    (HEAD + "SwitchName=leaf0 Nodes=node-[000-003]\nSwitchName=spine0 Switches=leaf[0-1]\n",
     4, "Switches", "unknown switch 'leaf1'"),
    (HEAD + "SwitchName=a Switches=b\nSwitchName=b Switches=a\n", 3, "Switches", "loop"),
    (HEAD + "NodeSet=node-003 Gpus=4\n", 3, "NodeSet", "'node-003' already declared on line 2"),
    (HEAD + "Domain=d0 Nodes=node-[000-001]\n\nDomain=d1 Nodes=node-[001-002]\n",
     5, "Nodes", "'node-001' is already in domain 'd0' (line 3)"),
    (HEAD + "Rack=r0 Nodes=node-[000-001]\nRack=r0 Nodes=node-002\n", 4, "Rack", "already defined"),
    (HEAD + "Domain=d[0-2] Nodes=node-[000-003]\n", 3, "Nodes", "cannot be dealt evenly"),
    (HEAD + "Domain=d0 Nodes=node-[000-004]\n", 3, "Nodes", "unknown node 'node-004'"),
    (HEAD + "Rack=r0 Nodes=node-[000-003\n", 3, "Nodes", "unmatched '['"),
    (HEAD + "Rack=r0 Nodes=node-[000-001,001]\n", 3, "Nodes", "lists 'node-001' twice"),
    (HEAD + "SwitchName=s0 Nodes=node-000 Nics=mlx5_9\n", 3, "Nics", "has no NIC 'mlx5_9'"),
    (HEAD + "SwitchName=s0 Nodes=node-000 Nics=mlx5_1\nSwitchName=s1 Nodes=node-000\n",
     4, "Nodes", "mlx5_1 of 'node-000' already faces switch 's0' (line 3)"),
    ("Topology=bad\nNodeSet=cpu-0 Gpus=1\nSwitchName=m[0-1] Nodes=cpu-0,cpu-0\n", 3, "Nodes",
     "lists 'cpu-0' twice"),
    ("Topology=bad\nNodeSet=cpu-0 Gpus=1\nSwitchName=m0 Nodes=cpu-0\nSwitchName=m1 Nodes=cpu-0\n",
     4, "Nodes", "node 'cpu-0' already faces switch 'm0' (line 3)"),
    (HEAD + "SwitchName=s0 Nodes=node-000 Switches=s1\n", 3, "Switches", "not both"),
    (HEAD + "SwitchName=s0\n", 3, "SwitchName", "needs Nodes="),
    (HEAD + "SwitchName=s0 Nodes=node-000\nSwitchName=s0 Nodes=node-001\n", 4, "SwitchName",
     "already defined on line 3"),
    (HEAD + "NodeSet=x0 Gpus=2 Nics=a[0-1] GpuNics=a0\n", 3, "GpuNics", "1 NICs for 2 GPUs"),
    (HEAD + "Rack=r0 Nodes=node-000 Nodes=node-001\n", 3, "Nodes", "given twice"),
    (HEAD + "Rack=r0\n", 3, "Nodes", "missing"),
    (HEAD + "Rack=r0 Nodes=\n", 3, "Nodes", "empty value"),
    ("Topology=bad Version=2\n", 1, "Version", "unsupported version"),
    (HEAD + "Topology=again\n", 3, "Topology", "given twice"),
    ("SwitchName=leaf0 Nodes=n[0-3]\nSwitchName=spine0 Switches=leaf[0-1]\n",
     2, "Switches", "unknown switch 'leaf1'"),
    ("SwitchName=leaf0 Nodes=n[0-3] Speed=1\n", 1, "Speed", "unknown key on a SwitchName line"),
    ("BlockName=b0 Nodes=n[0-3]\nBlockName=b1 Nodes=n[3-4]\n", 2, "Nodes", "already in block 'b0'"),
])
def test_errors_name_file_line_and_field(text, line, field, detail):
    error = error_of(text)
    assert (error.source, error.line, error.field) == ("bad.topo", line, field)
    assert detail in error.detail
    assert str(error).startswith(f"bad.topo:{line}: field '{field}': ")


def test_error_message_shape():
    error = error_of("Topology=x\n# comment\n\nNodeSet=n[0-1] Gpus=eight\n", "topologies/x.topo")
    assert str(error) == (
        "topologies/x.topo:4: field 'Gpus': expected a positive integer, got 'eight'")


@pytest.mark.parametrize(("text", "line", "detail"), [
    (HEAD + "Rack=r0 Nodes=node-000 oops\n", 3, "syntax error: expected Key=Value, got 'oops'"),
    ("# only a comment\n\n", 1, "no records"),
    ("\nNodeSet=n0 Gpus=1\n", 2, "cannot tell the format"),
])
def test_errors_without_a_field(text, line, detail):
    error = error_of(text)
    assert (error.line, error.field) == (line, None)
    assert str(error).startswith(f"bad.topo:{line}: {detail}")


def test_load_reports_the_path(tmp_path):
    path = tmp_path / "x.topo"
    path.write_text("Topology=x\nNodeSet=n0 Gpus=eight\n", encoding="utf-8")
    with pytest.raises(TopologyError, match=r"x\.topo:2: field 'Gpus'"):
        Topology.load(path)
    conf = tmp_path / "lab.topology.conf"
    conf.write_text("SwitchName=s0 Nodes=n[0-1]\n", encoding="utf-8")
    assert Topology.load(conf).name == "lab"


@pytest.mark.parametrize(("text", "field"), [
    ("Topology=x\nNodeSet=n[0-99] Gpus=1 Nics=m[0-99]\nSwitchName=s Nodes=n[0-99]", "Nodes"),
    ("Topology=x\nNodeSet=n0 Gpus=5000 Nics=m0", "Gpus"),
    ("Topology=x\nNodeSet=n0 Gpus=16777217", "Gpus"),
    ("Topology=x\nNodeSet=n0 Gpus=" + "9" * 5000, "Gpus"),
    ("SwitchName=leaf[0-99] Nodes=n[0-99]\nSwitchName=spine[0-99] Switches=leaf[0-99]",
     "Switches"),
], ids=["nic-links", "gpu-nics", "gpus", "gpus-5000-digits", "parent-links"])
def test_what_a_topology_holds_is_bounded_not_only_its_names(text, field, monkeypatch):
    """Short lines whose names fit the bound can still make a product of entries (each
    node's NICs under a switch, a GPU-to-NIC table, spines x leaves): the budget counts
    those too, and refuses before they are made (room fixes, round 8)."""
    import detector.hostlist

    monkeypatch.setattr(detector.hostlist, "MAX_NAMES", 1_000)
    with pytest.raises(TopologyError) as exc:
        Topology.from_text(text, source="bad.topo")
    assert exc.value.field == field
    monkeypatch.setattr(detector.hostlist, "MAX_NAMES", 100_000)
    if "16777217" not in text and "9" * 100 not in text:  # those are refused at any budget
        Topology.from_text(text, source="bad.topo")


def test_an_expression_over_the_bound_is_refused_before_its_groups_are_expanded(monkeypatch):
    """Each bracket group is bounded by what the groups before it leave of the limit: 20
    groups of 100,000 numbers are refused at the second, not after 2,000,000 strings."""
    import tracemalloc

    import detector.hostlist

    monkeypatch.setattr(detector.hostlist, "MAX_NAMES", 100_000)
    assert len(expand_hostlist("n[0-99999]")) == 100_000
    tracemalloc.start()
    try:
        with pytest.raises(ValueError, match="expands to more than 100,000 names"):
            expand_hostlist("n[0-99999]" * 20)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 20 << 20, f"peak {peak / 2**20:.0f} MiB"
