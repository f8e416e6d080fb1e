"""nic39 (round 39): a port's throughput is its GPUs' demand -- an idle port is not a bad NIC.

``nic_throughput`` (detector.network) reads a port's Gb/s against its node's other ports; it
is evidence of the port only where the port's demand is known to be its mates'
(detector/correlate/ports.py ``_demand_unknown``, detector.network ``_fell``):

- a port whose GPU's worker died (a hardware verdict on a GPU of its node just before its
  low run began) lost its demand (blind29 F3);
- a port that never ran at its node's pace is judged only where the job layout and the
  GPU-to-NIC map say its GPUs run its mates' job (revA38 F8, port rows alone);
- a port that ran at its own level below its node's median (a light tenant's) is judged low
  only below half of its own pace too (blind28 F1/F2 with port rows alone).

tests/test_nic38.py's fleet: two nodes of one leaf, 8 GPUs and 4 NICs each (GPUs 2k, 2k+1 on
mlx5_k with the map), steps every second, port samples every 10 s.
"""

from __future__ import annotations

import pytest

from detector.engine import Engine
from detector.events import Event, StepSample
from detector.testing import T0, ecc, feed, thermal
from detector.topology import Topology
from tests.test_nic38 import MAPPED, SLURM, Rate, _fleet

TOPOS = {"mapped": MAPPED, "slurm": SLURM}


def _pages(topo: Topology | None, events: list[Event]) -> list[tuple[str, str, str]]:
    return sorted((a.kind, a.cause, a.scope.key) for a in feed(Engine(topology=topo), events)
                  if a.status == "firing")


def _falls(port: str, at_s: float, to_gbps: float, before: float = 100.0) -> Rate:
    """n1's ``port`` at ``before`` Gb/s, then ``to_gbps`` from ``at_s``; every other port 100."""
    return lambda node, name, t: (to_gbps if t >= at_s else before) if (
        node, name) == ("n1", port) else 100.0


def _with_xid(events: list[Event], at_s: float, gpu: int, code: int = 48) -> list[Event]:
    """``events`` and an XID ``code`` on n1's ``gpu`` at ``at_s`` (ECC rows of n1 every 10 s)."""
    rows: list[Event] = [ecc(T0 + 10.0 * i + 0.2, "n1", g) for i in range(30) for g in range(8)]
    rows.append(ecc(T0 + at_s, "n1", gpu, xid=code))
    return sorted(events + rows, key=lambda e: e.ts)


_ALL8 = {"a": range(8)}


# -- a dead worker's port (blind29 F3) ---------------------------------------------------------

@pytest.mark.parametrize("topo", ["mapped", "slurm"])
def test_a_dead_gpus_port_going_quiet_is_not_a_bad_nic(topo: str) -> None:
    # XID 48 kills the worker on n1's GPU 6 at 149.5 s; its port mlx5_3 carries 1 Gb/s from
    # 150 s beside its mates' 100.  Main: the GPU isolated, and mlx5_3 isolated network/nic
    # 50 s later (no error, no flap, no rate change).
    events = _with_xid(_fleet(_ALL8, _falls("mlx5_3", 150.0, 1.0)), 149.5, 6)
    assert _pages(TOPOS[topo], events) == [("hardware", "gpu_memory", "gpu:n1/6")]


@pytest.mark.parametrize("topo", ["mapped", "slurm"])
def test_guard_a_port_going_quiet_with_no_gpu_fault_is_paged(topo: str) -> None:
    events = _fleet(_ALL8, _falls("mlx5_3", 150.0, 1.0))
    assert _pages(TOPOS[topo], events) == [("network", "nic", "nic:n1/mlx5_3:1")]


@pytest.mark.parametrize("topo", ["mapped", "slurm"])
def test_guard_a_port_going_quiet_minutes_after_a_gpu_fault_is_paged(topo: str) -> None:
    events = _with_xid(_fleet(_ALL8, _falls("mlx5_3", 200.0, 1.0)), 40.0, 6)
    assert _pages(TOPOS[topo], events) == [("hardware", "gpu_memory", "gpu:n1/6"),
                                           ("network", "nic", "nic:n1/mlx5_3:1")]


def test_guard_with_the_map_another_gpus_port_going_quiet_beside_a_dead_gpu_is_paged() -> None:
    # GPU 6 (mlx5_3's) dies; mlx5_1 (GPUs 2, 3) falls at the same time: the map says the dead
    # GPU is not behind it.
    events = _with_xid(_fleet(_ALL8, _falls("mlx5_1", 150.0, 1.0)), 149.5, 6)
    assert _pages(MAPPED, events) == [("hardware", "gpu_memory", "gpu:n1/6"),
                                      ("network", "nic", "nic:n1/mlx5_1:1")]


def _with_idle(events: list[Event], at_s: float, gpu: int) -> list[Event]:
    """``events`` and n1's thermal rows every 10 s, ``gpu`` idle (0x1, 210 MHz, 70 W) from
    ``at_s`` -- its worker gone -- the others busy."""
    rows: list[Event] = [
        thermal(T0 + 10.0 * i + 0.3, "n1", g, **(
            {"throttle": 0x1, "clock_mhz": 210.0, "power_w": 70.0}
            if g == gpu and 10.0 * i >= at_s else {})) for i in range(30) for g in range(8)]
    return sorted(events + rows, key=lambda e: e.ts)


@pytest.mark.parametrize("topo", ["mapped", "slurm"])
def test_a_port_going_quiet_as_its_gpu_goes_idle_is_not_a_bad_nic(topo: str) -> None:
    # n1's GPU 6 idle from 150 s (its worker exited: no XID), mlx5_3 at 1 Gb/s from 150 s.
    # Main: mlx5_3 isolated network/nic.
    events = _with_idle(_fleet(_ALL8, _falls("mlx5_3", 150.0, 1.0)), 150.0, 6)
    assert [p for p in _pages(TOPOS[topo], events) if p[0] == "network"] == []


@pytest.mark.parametrize("topo", ["mapped", "slurm"])
def test_guard_a_port_going_quiet_beside_busy_gpus_with_thermal_rows_is_paged(
        topo: str) -> None:
    events = _with_idle(_fleet(_ALL8, _falls("mlx5_3", 150.0, 1.0)), 1e9, 6)
    assert _pages(TOPOS[topo], events) == [("network", "nic", "nic:n1/mlx5_3:1")]


# -- a port never at its node's pace (revA38 F8; port rows alone) ------------------------------

def test_a_port_low_from_its_first_sample_with_port_rows_alone_is_not_paged() -> None:
    # No steps: nobody says what runs behind n1's mlx5_3 (3 Gb/s from its first sample).
    # Main: isolated network/nic.
    events = [e for e in _fleet(_ALL8, _falls("mlx5_3", 0.0, 3.0))
              if not isinstance(e, StepSample)]
    assert _pages(MAPPED, events) == []


def test_guard_a_port_low_from_its_first_sample_under_its_mates_job_is_paged() -> None:
    # The job's ranks on all 8 GPUs and the map: mlx5_3's GPUs run the job its mates run.
    events = _fleet(_ALL8, _falls("mlx5_3", 0.0, 3.0))
    assert _pages(MAPPED, events) == [("network", "nic", "nic:n1/mlx5_3:1")]


# -- a light tenant's port at a lower level of its own (blind28 F1/F2) -------------------------

@pytest.mark.parametrize("topo", ["mapped", "slurm"])
def test_a_light_ports_fall_to_its_remaining_tenants_level_is_not_paged(topo: str) -> None:
    # Port rows alone: n1's mlx5_2 at 70 Gb/s beside 100 (at its node's pace), then 45 from
    # 120 s -- under half its node's median, at 0.64 of its own.  Main: isolated network/nic.
    events = [e for e in _fleet(_ALL8, _falls("mlx5_2", 120.0, 45.0, before=70.0))
              if not isinstance(e, StepSample)]
    assert _pages(TOPOS[topo], events) == []


@pytest.mark.parametrize("topo", ["mapped", "slurm"])
def test_guard_a_light_port_falling_far_below_its_own_level_is_paged(topo: str) -> None:
    events = [e for e in _fleet(_ALL8, _falls("mlx5_2", 120.0, 8.0, before=70.0))
              if not isinstance(e, StepSample)]
    assert _pages(TOPOS[topo], events) == [("network", "nic", "nic:n1/mlx5_2:1")]
