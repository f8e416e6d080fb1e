"""b12fix (round 21): NVIDIA's XID catalogue codes 144-150 (NVLink5, Blackwell) -- a GPU's
XID 149 is an NVLink fault paged at its GPU within DESIGN's second, not caught at the next
counter poll (blind12 B4); the two codes whose every decode row is IGNORE stay evidence."""

from __future__ import annotations

import pytest

from detector.alerts import ISOLATION, Alert
from detector.engine import Engine
from detector.testing import T0, ecc, feed
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
