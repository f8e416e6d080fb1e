"""b12fix (round 21): NVIDIA's XID catalogue codes 144-150 (NVLink5, Blackwell) -- a GPU's
XID 149 is an NVLink fault paged at its GPU within DESIGN's second, not caught at the next
counter poll (blind12 B4); the two codes whose every decode row is IGNORE stay evidence."""

from __future__ import annotations

import pytest

from detector.alerts import ISOLATION, Alert
from detector.engine import Engine
from detector.testing import T0, ecc, feed, healthy_job
from detector.topology import Topology

NODE = "gb-b10"


def firing(alerts: list[Alert]) -> list[tuple[str, str, str, str]]:
    return [(a.topic, a.kind, a.cause, a.scope.key) for a in alerts if a.status == "firing"]


def run(xid: int) -> list[Alert]:
    events = [ecc(T0 + 0.01 * g, NODE, g, sbe=3) for g in range(4)]
    events.append(ecc(T0 + 10.0, NODE, 1, sbe=3, xid=xid))
    events += [ecc(T0 + 20.0 + i, "other", 0) for i in range(3)]
    return feed(Engine(), events)


@pytest.mark.parametrize("xid", [144, 145, 146, 149, 150])
def test_nvlink5_xid_is_its_gpu_within_a_second(xid: int) -> None:
    alerts = run(xid)  # before: no alert (an unknown XID is evidence only)
    assert firing(alerts) == [(ISOLATION, "hardware", "nvlink", f"gpu:{NODE}/1")]
    assert alerts[0].action.name == "reset_gpu"
    assert alerts[0].detection_latency_s <= 1.0


@pytest.mark.parametrize("xid", [147, 148])
def test_nvlink5_xid_the_catalogue_ignores_is_no_isolation(xid: int) -> None:
    assert firing(run(xid)) == []


NVL = Topology.from_text("""
Topology=nvl
NodeSet=tray-[00-03] Gpus=4 Nics=mlx5_[0-3]
Domain=rack-0 Nodes=tray-[00-03]
SwitchName=leaf0 Nodes=tray-[00-03]
""")


def test_an_nvl72_gpus_xid_149_is_paged_within_a_second_not_the_domain_window() -> None:
    # Before: held the domain's 6 s window (an ECC sample period + margin) for other trays.
    events = [ecc(T0 + 0.01 * g + n, f"tray-0{n}", g, sbe=3) for n in range(4) for g in range(4)]
    events.append(ecc(T0 + 10.0, "tray-02", 1, sbe=3, xid=149))
    events += [ecc(T0 + 20.0 + i, "tray-00", 0, sbe=3) for i in range(3)]
    alerts = feed(Engine(topology=NVL), sorted(events, key=lambda e: e.ts))
    assert firing(alerts) == [(ISOLATION, "hardware", "nvlink", "gpu:tray-02/1")]
    assert alerts[0].detection_latency_s <= 1.0


# -- B5: a slow GPU of a job of two ranks (JobMonitor._check_pair) ----------------------------

def test_the_rank_its_partner_waits_for_in_a_dp2_job_is_slow() -> None:
    # Before: no alert in 300 steps (two peers: no median to compare with).
    alerts = feed(Engine(), healthy_job(ranks=2, steps=300, slow={1: 1.3}))
    fired = [a for a in alerts if a.status == "firing"]
    assert [(a.kind, a.scope.key) for a in fired] == [("slow_node", "gpu:node-000/1")]
    assert fired[0].evidence["signals"][0]["partner"] == 0
    assert fired[0].detected_ts - T0 <= 25.0  # (one step a second: found within 25 steps)


def test_a_dp2_slowdown_that_ends_is_cleared() -> None:
    alerts = feed(Engine(), healthy_job(ranks=2, steps=200, slow={0: 1.35}, slow_to=60))
    assert [(a.status, a.scope.key) for a in alerts] == [
        ("firing", "gpu:node-000/0"), ("resolved", "gpu:node-000/0")]


def test_a_dp2_jobs_batch_imbalance_is_no_slow_rank() -> None:
    # Each step's batch makes either rank up to ~1.5x the other at random.
    alerts = feed(Engine(), healthy_job(ranks=2, steps=2000, jitter=0.2, seed=3))
    assert [a for a in alerts if a.status == "firing"] == []
