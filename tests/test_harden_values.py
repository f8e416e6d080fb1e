"""Adversarial review (room harden, round 8): valid values at the edges of their types.

The decoder lets through what the contract allows: ``0.0``, ``-0.0``,
subnormals, ``1.8e308``, counters at ``2^63 - 1``, a counter that jumps there
and back.  These pins (all held on today's code) run such records through the
in-process :class:`~detector.engine.Engine` (the Monitors and Correlator the
service runs) and check what a user would notice: no exception, no alert on a
unit the values were not on, and a real slowdown after a window of edge values
still found at the same step.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

import pytest

from detector.engine import Engine
from detector.events import Event
from detector.testing import T0, ecc, feed, healthy_job, nic, thermal

BIG = 1.7976931348623157e308
COUNTER_MAX = (1 << 63) - 1


def _firing(events: list[Event]) -> list[tuple[str, int]]:
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a NaN made on the way shows as a RuntimeWarning
        alerts = feed(Engine(), events)
    return [(a.scope.key, round(a.detected_ts - T0)) for a in alerts if a.status == "firing"]


def _job(edit: Callable[[Any], Any]) -> list[Event]:
    """16 ranks, rank 5 30 % slower from step 200; steps 50-79 edited."""
    out: list[Event] = []
    for e in healthy_job(ranks=16, steps=300, slow={5: 1.3}, slow_from=200, seed=7):
        out.append(edit(e) if 50 <= e.step < 80 else e)
    return out


STEP_EDGES: dict[str, Callable[[Any], Any]] = {
    "all_compute_0": lambda e: e._replace(compute_ms=0.0),
    "one_compute_0": lambda e: e._replace(compute_ms=0.0) if e.rank == 3 else e,
    "all_subnormal": lambda e: e._replace(compute_ms=5e-324),
    "one_subnormal": lambda e: e._replace(compute_ms=5e-324) if e.rank == 3 else e,
    "all_huge": lambda e: e._replace(compute_ms=1e300, step_ms=1e300, comm_ms=0.0),
    "all_negative_zero": lambda e: e._replace(compute_ms=-0.0, comm_ms=-0.0),
    "grad_norm_max": lambda e: e._replace(grad_norm=BIG),
    "grad_norm_0": lambda e: e._replace(grad_norm=0.0),
    "loss_min": lambda e: e._replace(loss=-BIG),
    "step_ms_0_no_parts": lambda e: e._replace(step_ms=0.0, compute_ms=None, comm_ms=None),
}


@pytest.mark.parametrize("edit", STEP_EDGES.values(), ids=STEP_EDGES.keys())
def test_step_values_at_their_edges_change_no_alert(edit: Callable[[Any], Any]) -> None:
    clean = _firing(_job(lambda e: e))
    assert clean == [("gpu:node-000/5", 206)]
    assert _firing(_job(edit)) == clean


def _gpu_samples(edit: Callable[[Any], Any]) -> list[Event]:
    """8 GPUs' thermal and ECC samples a second for 300 s; GPU 3's edited for 10 s."""
    out: list[Event] = []
    for i in range(300):
        for g in range(8):
            for e in (thermal(T0 + i, "node-000", g), ecc(T0 + i, "node-000", g)):
                out.append(edit(e) if g == 3 and 100 <= i < 110 else e)
    return out


def _nic_samples(edit: Callable[[Any, int], Any]) -> list[Event]:
    out: list[Event] = []
    for i in range(300):
        for k in range(4):
            e = nic(T0 + i, "node-000", f"mlx5_{k}", tx=10**9 * i, rx=10**9 * i)
            out.append(edit(e, i) if k == 1 and 100 <= i < 103 else e)
    return out


SAMPLE_EDGES: dict[str, list[Event]] = {
    "temp_max": _gpu_samples(lambda e: e._replace(gpu_temp_c=BIG, mem_temp_c=BIG)
                             if hasattr(e, "gpu_temp_c") else e),
    "temp_min": _gpu_samples(lambda e: e._replace(gpu_temp_c=-BIG)
                             if hasattr(e, "gpu_temp_c") else e),
    "power_clock_max": _gpu_samples(lambda e: e._replace(power_w=BIG, sm_clock_mhz=BIG)
                                    if hasattr(e, "power_w") else e),
    "power_clock_subnormal": _gpu_samples(
        lambda e: e._replace(power_w=5e-324, sm_clock_mhz=5e-324)
        if hasattr(e, "power_w") else e),
    "throttle_all_bits": _gpu_samples(lambda e: e._replace(throttle=COUNTER_MAX)
                                      if hasattr(e, "throttle") else e),
    "ecc_counters_max": _gpu_samples(
        lambda e: e._replace(sbe_volatile=COUNTER_MAX, pcie_replay=COUNTER_MAX,
                             nvlink_crc_errors=COUNTER_MAX) if hasattr(e, "xid") else e),
    "xid_max": _gpu_samples(lambda e: e._replace(xid=(1 << 24) - 1)
                            if hasattr(e, "xid") else e),
    "nic_bytes_max": _nic_samples(lambda e, i: e._replace(tx_bytes=COUNTER_MAX,
                                                          rx_bytes=COUNTER_MAX)),
    "nic_bytes_max_and_back": _nic_samples(
        lambda e, i: e._replace(tx_bytes=COUNTER_MAX if i % 2 else 0)),
    "nic_errors_max": _nic_samples(lambda e, i: e._replace(symbol_errors=COUNTER_MAX,
                                                           link_downed=COUNTER_MAX)),
    "nic_rate_max": _nic_samples(lambda e, i: e._replace(rate_gbps=BIG)),
    "nic_same_ts": _nic_samples(lambda e, i: e._replace(ts=T0 + 100)),
}


@pytest.mark.parametrize("events", SAMPLE_EDGES.values(), ids=SAMPLE_EDGES.keys())
def test_sample_values_at_their_edges_alert_at_most_on_their_own_unit(events: list[Event]
                                                                      ) -> None:
    units = {unit for unit, _ in _firing(events)}
    assert units <= {"gpu:node-000/3", "nic:node-000/mlx5_1:1"}
