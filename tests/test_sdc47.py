"""sdc47 (round 47, issue 10): the numerics rules' false pages -- a loss is not known to fall.

``loss_climb`` (detector.sdc) pages the job's loss standing over its own level only with a
second sign, the job's gradient norm over its own level at the same time (blind35 F2: loss
x1.25-1.4, every norm x3-6); a loss that rises by design, wanders or meets a new data mix moves
no norm (revA46 F1, F2, F3, F13 -- pinned in tests/test_revA46.py).  tests/test_sdc45.py's job.
"""

from __future__ import annotations

import math

import numpy as np

from detector import sdc
from tests.test_sdc45 import _falling, _job, _run


def _climbs(found: list) -> list[tuple[str, str]]:
    return [(f.signal, f.scope.level) for f in found if f.signal == "loss_climb"]


def test_the_loss_up_for_good_with_the_norms_up_later_is_paged_when_they_rise() -> None:
    # the loss x1.3 from step 300, every norm x3 only from step 500: no page before the norms
    # rise (the loss alone is a data-mix phase's shape), the job's page soon after they do
    found = _run(_job(700, loss_x=lambda k: _falling(k) * (1.3 if k >= 300 else 1.0),
                      norm_x=lambda k: 3.0 if k >= 500 else 1.0))
    assert _climbs(found) == [("loss_climb", "job")]
    page = next(f for f in found if f.signal == "loss_climb")
    assert 500 <= int(page.evidence["step"]) <= 520
    assert page.evidence["grad_norm_ratio"] >= math.exp(sdc.CLIMB_NORM_RATIO)


def test_norms_up_without_the_loss_page_no_climb() -> None:
    # every norm x3 from step 300, the loss as before: no loss_climb (the norm is the second
    # sign, not the first)
    found = _run(_job(600, loss_x=_falling, norm_x=lambda k: 3.0 if k >= 300 else 1.0))
    assert _climbs(found) == []


def test_a_loss_climb_without_grad_norms_pages_nobody() -> None:
    # a job whose collector sends no grad_norm: its loss x1.3 for good has no second sign
    st = list(sdc.CLIMB_NEW)
    nan = np.full(4, np.nan)
    said = [sdc.loss_climb(st, k, np.full(4, 3.0 * _falling(k) * (1.3 if k >= 200 else 1.0)),
                           nan, 1000.0 + k, 1000.0 + k, "j", None, None) for k in range(500)]
    assert [f for f in said if f is not None] == []


def test_a_climb_state_from_before_sdc47_is_taken_and_extended() -> None:
    # a snapshot's seven-number state (no grad-norm level): restored, and learnt on from there
    old = [math.log(3.0), math.log(3.0), 200, 0, 0.0, 0, 199]
    assert sdc.climb_ok(old) and sdc.climb_ok(list(sdc.CLIMB_NEW))
    assert not sdc.climb_ok([*old, 0.0])
    sdc.loss_climb(old, 200, np.full(4, 3.0), np.full(4, 1.0), 1200.0, 1200.0, "j", None, None)
    assert len(old) == len(sdc.CLIMB_NEW) and old[9] == 1


# -- grad_outlier and grad_drift: what one signal cannot tell (revA46 F6, F7) ----------

def _grads(found: list, signal: str) -> list[tuple[int, int]]:
    return [(f.rank, int(f.evidence["step"])) for f in found if f.signal == signal]


def test_a_gross_spike_its_replica_mate_shares_pages_nobody() -> None:
    # x1000 on both ranks of replica 3 (tp 2) on one step: the replica's batch, not a GPU
    found = _run(_job(400, hard_every=0.0, grad={(200, 6): 1000.0, (200, 7): 1000.0}))
    assert _grads(found, "grad_outlier") == []


def test_a_gross_spike_pages_its_gpu_on_its_step() -> None:
    # x80 on rank 9 alone at step 200 of a quiet job (revA46 F7 is x100-x10^4): at once
    found = _run(_job(400, hard_every=0.0, grad={(200, 9): 80.0}))
    assert _grads(found, "grad_outlier") == [(9, 200)]
    assert found[0].evidence["gross_spike"] is True
