"""The lead, round 11: blind3's B1 -- a port name's rate on other nodes of another model.

A degraded link is its name's exception across nodes; a rate its name has on a fair share of
the other nodes is a node model's design (an A100 node's 25G frontend ``mlx5_4`` beside H100
nodes whose ``mlx5_4`` is a 400G rail).  The case from blind3's logs:
tests/test_blind3_cases.py (B1); these hold both sides of the share.
"""

from __future__ import annotations

from tests.test_rate_round10 import rate_findings, run

A100 = [f"a{k}" for k in range(4)]
H100 = [f"h{k}" for k in range(4)]


def mixed(node: str, port: str, i: int) -> tuple[float | None, float, bool]:
    """A100 nodes: mlx5_0..3 at 200 busy, mlx5_4 a 25G frontend; H100: every port at 400."""
    if node.startswith("a"):
        return (25.0, 0.1, True) if port == "mlx5_4" else (200.0, 150.0, True)
    return 400.0, 300.0, True


def test_a_frontend_sharing_a_rail_name_with_another_node_model_is_no_degraded_link():
    """Four A100 nodes (mlx5_0..3 at 200, mlx5_4 a quiet 25G frontend) and four H100 nodes
    (mlx5_0..4 rails at 400) in one worker: mlx5_4 is at 400 on 4 of the 7 other nodes."""
    assert rate_findings(run(A100 + H100, [f"mlx5_{k}" for k in range(5)], 12, mixed)) == []


def test_one_node_of_nine_at_half_rate_is_still_a_degraded_link():
    """The exception: one port at 200 where its name is at 400 on eight other nodes."""
    nodes = [f"n{k}" for k in range(9)]

    def spec(node, port, i):
        return (200.0 if (node, port) == ("n4", "mlx5_1") else 400.0), 300.0, True
    found = rate_findings(run(nodes, [f"mlx5_{k}" for k in range(4)], 8, spec))
    assert [f.scope.key for f in found] == ["nic:n4/mlx5_1:1"]


def low_on_three(node, port, i):
    """mlx5_1 at 200 on n2, n4, n6; every other port at 400."""
    low = port == "mlx5_1" and node in ("n2", "n4", "n6")
    return (200.0 if low else 400.0), 300.0, True


def test_two_nodes_of_nine_at_the_lower_rate_of_another_port_count_are_a_share():
    """Two of the other eight at 200 (> one in four of the six at 400), on nodes of another
    port count (a fifth port: another node model): no degraded link."""
    nodes = [f"n{k}" for k in range(9)]

    def ports(node):
        return [f"mlx5_{k}" for k in range(5 if node in ("n2", "n4", "n6") else 4)]
    assert rate_findings(run(nodes, ports, 8, low_on_three)) == []


def test_three_nodes_of_nine_at_half_rate_beside_their_three_rails_are_degraded_links():
    """The same rate on nodes of the same port count, at half of their three other ports:
    as many degraded links (was "a share, not an exception" until review round 12's F3 --
    mlx5_3 at 200 on 5 of 16 nodes with a Slurm topology paged nowhere; room fabric14: a
    node model's port of the name is a frontend of 1/8 or less, or its node has another
    port count)."""
    nodes = [f"n{k}" for k in range(9)]
    found = rate_findings(run(nodes, [f"mlx5_{k}" for k in range(4)], 8, low_on_three))
    assert sorted(f.scope.key for f in found) == [f"nic:{n}/mlx5_1:1" for n in ("n2", "n4", "n6")]
