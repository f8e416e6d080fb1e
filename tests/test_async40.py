"""async40 (round 40, issue 10): asynchronous jobs on two GPU models, and with few workers.

detector.steps.asynchronous now reads classes of whole nodes (detector.sku_class, as the
synchronous path does) in a job of MIN_RANKS workers or more, and judges a job of 3-5 workers,
each against the others' median less its own start offset, over five windows.  Behaviour: a
node of another GPU model steady from the start pages nothing, one of its GPUs or the whole
node slowing later still pages, one node slower from the start still pages (a class of one is
a fault); in a small job a worker slowing pages in ~five windows, a heavier shard steady from
the start does not, a worker gross from the start does.  The parameter-server job is
tests/test_revA39.py's (revA39 F1 and F3 are its tests).
"""

from __future__ import annotations

import random

import msgspec
import pytest

from bench.alibaba_replay import DATA, as_asynchronous, async_pages
from detector.engine import Engine
from detector.testing import T0, feed
from replay.importers.alibaba import import_files
from tests.test_revA39 import _ps_job

SECOND_MODEL = {r: 1.12 for r in range(32, 48)}   # n4 and n5: another GPU model


def _pages(events) -> list[tuple[str, float]]:
    """(scope, seconds after T0) of each firing page."""
    return [(a.scope.key, a.detected_ts - T0) for a in feed(Engine(), events)
            if a.status == "firing"]


def _scopes(events) -> list[str]:
    return [s for s, _ in _pages(events)]


@pytest.mark.parametrize("seed", [0, 1])
def test_a_gpu_of_a_second_model_node_slowing_is_paged_alone(seed: int) -> None:
    # (before: n4 and n5 paged as whole nodes at 63 s, the GPU among them)
    pages = _pages(_ps_job(workers=48, seed=seed, model=SECOND_MODEL, slow={35: 1.2}))
    assert [s for s, _ in pages] == ["gpu:n4/3"]
    assert 60.0 + 40.0 <= pages[0][1] <= 60.0 + 90.0   # three windows after its onset


def test_a_whole_second_model_node_slowing_is_paged_alone() -> None:
    # (before: n4 paged as well, at 63 s)
    assert _scopes(_ps_job(workers=48, model=SECOND_MODEL,
                           slow={r: 1.2 for r in range(40, 48)})) == ["node:n5"]


def test_guard_one_node_slower_from_the_start_is_still_paged() -> None:
    # (a class is two whole nodes or more: one alone cannot be told from a fault)
    assert _scopes(_ps_job(workers=48, model={r: 1.12 for r in range(40, 48)})) == ["node:n5"]


def _joins_late(*, seconds: float = 300.0, at: float = 120.0, slow: float = 1.0) -> list:
    """48 worker places, n4 and n5 another GPU model (1.12x); rank 47 (n5's GPU 7) joins the
    job at ``at`` s (a worker added, or restarted there), at ``slow`` x its node mates' pace."""
    out = []
    for e in _ps_job(workers=48, seconds=seconds, model=SECOND_MODEL):
        if e.rank == 47:
            if e.ts < T0 + at:
                continue
            c = round(e.compute_ms * slow, 2)
            e = msgspec.structs.replace(e, compute_ms=c, step_ms=c + 200.0)
        out.append(e)
    return out


def test_a_worker_joining_a_second_model_node_later_pages_nothing() -> None:
    # (before: escalated 60 s after it joined, 3 of 3 seeds -- a node joins a class whole)
    assert _scopes(_joins_late()) == []


def test_a_worker_joining_a_second_model_node_slow_is_paged() -> None:
    assert _scopes(_joins_late(slow=1.25)) == ["gpu:n5/7"]


@pytest.mark.parametrize("workers", [3, 5])
def test_a_slow_worker_of_a_small_async_job_is_paged_in_five_windows(workers: int) -> None:
    # (before: never -- fewer than MIN_RANKS workers were never judged)
    pages = _pages(_ps_job(workers=workers, gpn=2, seconds=400.0, seed=1, slow={1: 1.2}))
    assert [s for s, _ in pages] == ["gpu:n0/1"]
    assert 60.0 + 80.0 <= pages[0][1] <= 60.0 + 130.0


@pytest.mark.parametrize("factor", [1.08, 1.12, 1.2])
def test_guard_a_heavier_shard_steady_from_the_start_of_a_small_job_pages_nothing(
        factor: float) -> None:
    for workers in (3, 4):
        assert _scopes(_ps_job(workers=workers, gpn=2, seconds=400.0, model={2: factor})) == []


def test_a_heavier_shard_worker_slowing_further_is_paged() -> None:
    # (before: never -- a job of four workers)
    assert _scopes(_ps_job(workers=4, gpn=2, seconds=400.0, model={2: 1.1},
                           slow={2: 1.25})) == ["gpu:n1/0"]


def test_a_worker_gross_from_the_start_of_a_small_job_is_paged() -> None:
    # (its start offset counts up to the synchronous path's start_offset_max, 10 %)
    assert _scopes(_ps_job(workers=4, gpn=2, seconds=300.0, model={2: 1.35})) == ["gpu:n1/0"]


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_guard_a_small_async_job_healthy_or_slower_alike_pages_nothing(seed: int) -> None:
    assert _scopes(_ps_job(workers=4, gpn=2, seconds=400.0, seed=seed)) == []
    assert _scopes(_ps_job(workers=3, gpn=2, seconds=300.0, seed=seed,
                           slow={r: 1.3 for r in range(3)})) == []


@pytest.mark.parametrize("job", [1, 2, 3])
def test_guard_pai_workers_replayed_as_an_async_job_page_nothing(job: int) -> None:
    # Real per-worker times (Alibaba PAI, bench/alibaba_replay.py --asynchronous): workers up to
    # ~12 % apart from their first iteration (job 1's 0-2, job 2's 5, job 3's 0-1), all ten and
    # subsets of 3-5 of them, as asynchronous jobs: no worker is paged.
    records, _, _ = import_files([DATA / f"job_{job}_norm.csv"])
    rng = random.Random(job)
    for ws in [None] + [set(rng.sample(range(10), k)) for k in (3, 4, 5)]:
        assert async_pages(as_asynchronous(records, ws)) == [], ws
