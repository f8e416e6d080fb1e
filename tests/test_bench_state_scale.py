"""bench/state_scale.py's synthetic cluster: healthy telemetry, so the engine must stay quiet.

The benchmark's state-per-GPU figure is only meaningful if the stream it feeds
is what it claims (every GPU tracked, no fault); this keeps it honest as the
detectors change.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "bench"))

import state_scale  # noqa: E402


def test_healthy_synthetic_cluster_raises_nothing_and_tracks_every_gpu() -> None:
    r = state_scale.one(gpus=256, seconds=30, job_gpus=64)
    assert r["tracked_gpus"] == 256
    assert r["alerts"] == 0
    # Per second: a thermal sample per GPU, a NIC sample per port (one per GPU), a step
    # per rank; ECC every 5 s.
    assert r["events"] == 30 * 3 * 256 + 30 // 5 * 256
    assert 0 < r["state_bytes_per_gpu"] <= 4096
