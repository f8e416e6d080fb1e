"""Healthy fleets at scale (replay/evaluation/fleet.py): streamed logs, GPU-days, per variant."""

from __future__ import annotations

import dataclasses

import pytest

from replay.evaluation.fleet import VARIANTS, per_variant, poisson_upper, run_log


def test_a_streamed_healthy_log_counts_its_gpu_days_from_event_time_and_decodes_cleanly() -> None:
    v = dataclasses.replace(VARIANTS["slurm-30s"], tp=2, pp=2, dp=4)  # 16 GPUs, 2 nodes
    r = v.recipe(1.0, hours=240 / 3600)  # four minutes
    res = run_log((r, 5))
    assert res["gpus"] == 16 and res["invalid"] == {}
    # event time, not wall time: 16 GPUs x ~240 s (the first and last record bound it)
    assert 16 * 225 / 86400 < res["gpu_days"] <= 16 * 242 / 86400
    assert res["events"] > 16 * 240 / 8  # at least every rank's steps (8 s) came through
    assert res["false_isolations"] == sum(p.startswith("isolation") for p in res["problems"])


def test_a_variant_s_hours_are_cut_into_logs_and_summed_per_variant() -> None:
    v = VARIANTS["reboot-1s"]
    assert [r.duration_s for r in v.logs(1.0)] == [3600.0, 3600.0]
    rows = per_variant([
        {"variant": "reboot-1s", "gpu_days": 10.0, "events": 5, "false_isolations": 1,
         "escalations": 2, "cpu_s": 1.0},
        {"variant": "h1k-30s", "gpu_days": 990.0, "events": 7, "false_isolations": 0,
         "escalations": 0, "cpu_s": 2.0}])
    assert [r["variant"] for r in rows] == ["h1k-30s", "reboot-1s", "all"]
    total = rows[-1]
    assert (total["gpu_days"], total["false_isolations"], total["escalations"]) == (1000.0, 1, 2)
    assert total["per_1k_gpu_days"] == 1.0
    assert total["upper95_per_1k"] == pytest.approx(4.744, abs=1e-3)
    assert poisson_upper(0) == pytest.approx(2.996, abs=1e-3)  # 0 in 3,000 GPU-days: <= 1/1k
