"""Adversarial review (room harden, round 8): a topology is text a user hands over too.

``--topology FILE``, and the topology record a log may carry as its first
record (DESIGN.md, "Incident logs"), are parsed by :meth:`Topology.from_text`.
Hostlist expansion is bounded (``detector.hostlist.MAX_NAMES``, 1,000,000 names
per expression, "a typo must fail fast instead of eating memory"); these check
the bound holds for a whole topology.
"""

from __future__ import annotations

import pytest

import detector.hostlist
from detector.topology import Topology, TopologyError


@pytest.mark.parametrize("text", [
    "SwitchName=leaf0 Nodes=node[0-99999999]",
    "SwitchName=leaf0 Nodes=n[0-9999][0-9999]",
    "SwitchName=leaf0 Nodes=" + "n[0-9]" * 12,
    "SwitchName=s1 Switches=s2\nSwitchName=s2 Switches=s1",
    "SwitchName=s1 Switches=s1",
])
def test_one_expression_too_large_or_a_loop_is_refused_at_once(text: str) -> None:
    with pytest.raises(TopologyError):
        Topology.from_text(text, fmt="slurm")


def test_a_topology_is_bounded_as_a_whole(monkeypatch: pytest.MonkeyPatch) -> None:
    limit = 1_000
    monkeypatch.setattr(detector.hostlist, "MAX_NAMES", limit)
    with pytest.raises(TopologyError):
        Topology.from_text("SwitchName=leaf0 Nodes=n[0-9999]", fmt="slurm")  # the bound holds
    text = "\n".join(f"SwitchName=leaf{k} Nodes=n{k}x[0-{limit - 2}]" for k in range(3))
    with pytest.raises(TopologyError):
        Topology.from_text(text, fmt="slurm")
