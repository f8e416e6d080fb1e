"""Lead, round 30: review of the round's change -- bounds on what the replay holds, and the
new snapshot fields checked at restore.

home30's ``SourcePartition.admit_new`` (review29 3) holds a new cluster's far-ahead records
per cluster value until ``JUMP_AGREE`` of its own agree.  Rows stamped far ahead, each under
a new cluster value (a garbled or forged log), held one list a value: 20,000 such rows, 20,000
entries in the state and the snapshot.  No more new clusters wait than there are slots.
"""

from __future__ import annotations

import contextlib
import math
from typing import Any

import orjson
import pytest

from detector.engine import Engine
from detector.events import JUMP_AGREE, NIC, THERMAL, InvalidMessage
from detector.pipeline.clusters import MAX_CLUSTERS
from detector.pipeline.source import DeadLetter, SourcePartition
from detector.statecodec import UNSIGNED, SnapshotRefused
from tests.test_home30 import EAST_SLURM, _ahead, _ecc


def test_far_ahead_rows_under_new_values_hold_no_more_clusters_than_slots() -> None:
    eng = Engine(topology=EAST_SLURM, home_cluster="east")
    for k in range(5):
        eng.process(_ecc(1_000.0 + k, "east"))
    for i in range(500):
        with contextlib.suppress(InvalidMessage):
            eng.process(_ecc(90_000.0 + 1_000.0 * i, f"ghost-{i}"))
    held = eng.source.held_new
    assert len(held) <= MAX_CLUSTERS, len(held)
    assert sum(len(v) for v in held.values()) <= MAX_CLUSTERS * JUMP_AGREE
    # (and the bounded hold goes through a snapshot and back: restore accepts it)
    restored = Engine.restore(eng.snapshot(), EAST_SLURM, home_cluster="east")
    assert len(restored.source.held_new) == len(held)


def test_a_cluster_ahead_is_still_taken_beside_the_bound() -> None:
    eng = Engine(topology=EAST_SLURM, home_cluster="east")
    alerts: list = []
    for ev in _ahead(0, 60):
        with contextlib.suppress(InvalidMessage):
            alerts += eng.process(ev)
    alerts += eng.finish()
    assert sorted({a.cluster for a in alerts if a.status == "firing"}) == ["east", "west"]


# -- forged snapshot fields the round added: refused at restore, not a partition that fails
# on every later record (tests/test_harden_snapshot.py's rule) --------------------------------

T0 = 1767225600.0
WALL = T0 + 100.0
_NIC_NAMES = ("tx_bytes", "rx_bytes", "symbol_errors", "link_downed", "rcv_errors",
              "xmit_discards", "xmit_wait", "out_of_sequence", "packet_seq_err",
              "np_cnp_sent", "rp_cnp_handled")


def _nic_records(first: int, t: float, n: int) -> list:
    out = []
    for i in range(n):
        v = {"ts": t + i, "node": "node-000", "nic": f"mlx5_{i % 4}", "port": 1,
             "link_state": "up", "rate_gbps": 400.0}
        v.update(dict.fromkeys(_NIC_NAMES, 1_000 * (i // 4)))
        out.append((first + i, b"k", orjson.dumps(v), None))
    return out


def _thermal_records(first: int, t: float, n: int) -> list:
    return [(first + i, b"k", orjson.dumps({
        "ts": t + i // 8, "node": "node-000", "gpu": i % 8, "gpu_temp_c": 65.0,
        "power_w": 500.0, "sm_clock_mhz": 1980.0, "throttle": 0}), None) for i in range(n)]


def _restored(topic: str, records: Any, forge: Any) -> SourcePartition:
    part = SourcePartition(topic, 0, 1, wall_clock=lambda: WALL)
    part.process(records(0, T0, 40), WALL, [], [])
    forge(part.monitors)
    offset, blob = part.snapshot(UNSIGNED)
    return SourcePartition.restore(topic, 0, 1, offset, blob, wall_clock=lambda: WALL)


@pytest.mark.parametrize("run", ["xx", [1.0], [0, 0.0, 0, math.nan], {"a": 1}])
def test_a_forged_cnp_run_is_refused_at_restore(run: Any) -> None:
    def forge(mon: Any) -> None:
        for nics in mon._nics.values():
            for p in nics._ports.values():
                p.cnp_run = run
    with pytest.raises(SnapshotRefused):
        _restored(NIC, _nic_records, forge)


def test_a_well_formed_cnp_run_restores() -> None:
    def forge(mon: Any) -> None:
        for nics in mon._nics.values():
            for p in nics._ports.values():
                p.cnp_run = [1, T0, 0, 0.0]
    back = _restored(NIC, _nic_records, forge)
    dead: list[DeadLetter] = []
    back.process(_nic_records(100, T0 + 40, 40), WALL, [], dead)
    assert dead == []


def test_a_brake_poll_at_infinity_is_refused_at_restore() -> None:
    # (+inf: _poll_in never ends the watch -- every sample of the node off the quiet path)
    def forge(mon: Any) -> None:
        for t in mon._node_temps.values():
            t.brake_poll = math.inf
    with pytest.raises(SnapshotRefused):
        _restored(THERMAL, _thermal_records, forge)
