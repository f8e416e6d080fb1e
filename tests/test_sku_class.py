"""sku21 (round 21): whole nodes alike slower from a job's start are a class (another GPU
model), judged against their class; one node alone, or a node that slowed since its first
look, is not (detector.sku_class, JobMonitor._class_over)."""

from __future__ import annotations

import numpy as np

from detector import sku_class
from tests.test_blind11_cases import _replay


def _find(levels: dict[str, float], first: dict[str, float] | None = None,
          known: dict[int, tuple[float, float]] | None = None, se: float = 0.015):
    nodes = [n for n in levels for _ in range(8)]
    over = np.array([levels[n] for n in nodes])
    first_v = np.array([(first or levels)[n] for n in nodes])
    e = np.full(len(nodes), se)
    return sku_class.find(nodes, over, e, first_v, e, np.ones(len(nodes), dtype=bool),
                          known or {})


def test_two_whole_nodes_alike_from_the_start_are_a_class():
    found = _find({"a1": 0.0, "a2": 0.01, "a3": -0.01, "b1": 0.08, "b2": 0.075})
    assert found == {"b1": 0, "b2": 0}


def test_one_node_alone_is_not_a_class():
    assert _find({"a1": 0.0, "a2": 0.01, "a3": -0.01, "b1": 0.08}) == {}


def test_nodes_far_apart_are_two_singletons_not_a_class():
    assert _find({"a1": 0.0, "a2": 0.01, "b1": 0.05, "b2": 0.13}) == {}


def test_a_node_that_slowed_since_its_first_look_joins_no_class():
    # (blind11 L2: an H200 at 0.96x its peers at first, at the H100s' pace later)
    levels = {"a1": 0.0, "a2": 0.01, "b1": 0.08, "b2": 0.075, "a3": 0.08}
    found = _find(levels, first={**levels, "a3": -0.035})
    assert found == {"b1": 0, "b2": 0}
    # ... nor an existing class
    assert _find({"a1": 0.0, "a3": 0.08}, first={"a1": 0.0, "a3": -0.035},
                 known={0: (0.078, 0.01)}) == {}
    # while one slow from its first look (noisier then) joins it
    assert _find({"a1": 0.0, "b3": 0.07}, first={"a1": 0.0, "b3": 0.045},
                 known={0: (0.078, 0.01)}) == {"b3": 0}


def test_a_class_slower_than_the_cap_is_none():
    assert _find({"a1": 0.0, "a2": 0.01, "b1": 0.30, "b2": 0.31}) == {}


def test_offsets_are_each_class_median_clipped():
    cls = np.array([-1, -1, 0, 0, 0, 1, 1])
    over = np.array([0.0, 0.01, 0.07, 0.08, 0.09, 0.5, 0.5])
    off, known = sku_class.offsets(cls, over, np.full(7, 0.01), np.ones(7, dtype=bool))
    assert off.tolist() == [0.0, 0.0, 0.08, 0.08, 0.08, sku_class.MAX_OFFSET,
                            sku_class.MAX_OFFSET]
    assert set(known) == {0, 1}


def test_blind11_mixed_sku_job_pages_no_h100_node():
    # L1 on the L2 case: lc-pack's H100 nodes (1.04-1.10x by their HBM, from the first step)
    # were escalated as slow nodes (h100-01 in this case) before sku21.
    sc = _replay("L2-h200-slow-at-h100-pace")
    assert sc["faults"]
    assert not [p for p in sc["problems"] if "h100" in str(p)], sc["problems"]
