"""Lead, round 30: review of the round's change -- bounds on what the replay holds.

home30's ``SourcePartition.admit_new`` (review29 3) holds a new cluster's far-ahead records
per cluster value until ``JUMP_AGREE`` of its own agree.  Rows stamped far ahead, each under
a new cluster value (a garbled or forged log), held one list a value: 20,000 such rows, 20,000
entries in the state and the snapshot.  No more new clusters wait than there are slots.
"""

from __future__ import annotations

import contextlib

from detector.engine import Engine
from detector.events import JUMP_AGREE, InvalidMessage
from detector.pipeline.clusters import MAX_CLUSTERS
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
