"""noise42 (round 42): the excursion hold reads a run against its peers not told slow.

``JobMonitor._excursion_held`` (noise41) holds a run whose mean is under ``_EXC_Z`` of the spread
its peers' own means of its length have (models.excursion).  Alibaba PAI job 4's five workers
told slow at iteration 1,294 (3.7-5.3x, their variance learnt in the warm-up and kept once told:
a 3-step spread of 0.28-0.46 in log) stayed among worker 3's peers; its straggle (1.19-1.56x from
~16,700) read 1.2 of their mean spread and was held 21 samples (paged at 17,014, not 16,804;
tests/test_alibaba_pages.py).  A rank told slow is a fault, not its job's noise: it leaves this
reference as it leaves the peer median (``_untold_reference``), while two peers are left.
"""

from __future__ import annotations

import math
from types import SimpleNamespace

import numpy as np

from detector.steps.common import _EXC_Z
from detector.steps.noise import _excursion_held
from models import excursion

_GROSS = (0, 5, 6, 7, 8)


def _job4_like(told: bool) -> SimpleNamespace:
    """Job 4 at ~16,750: ten workers in one group, the five gross ones' excursion spreads
    0.3-0.46 in log (``told``: told slow), the fast half's 0.02-0.05, the job long measured."""
    sd = np.array([0.40, 0.020, 0.019, 0.021, 0.047, 0.33, 0.28, 0.46, 0.44, 0.039])
    var = (sd[:, None] * np.array([1.0, 0.95, 0.85, 0.7])) ** 2
    reported = np.zeros(10, dtype=bool)
    if told:
        reported[list(_GROSS)] = True
    return SimpleNamespace(_exc_n=1600, _exc_v=var, _reported=reported)


def _held(job: SimpleNamespace, ratio: float, steps: int) -> bool:
    r = np.arange(10)
    return bool(_excursion_held(job, np.array([3]), np.array([steps]),
                                np.array([math.log(ratio)]), r, np.zeros(10, dtype=int))[0])


def test_a_straggler_is_judged_against_its_untold_peers_not_the_gross_ones_told() -> None:
    # worker 3 at 1.3x for 5 samples: ~8 of its untold peers' 5-step spread; among the told
    # gross ones' too (as before noise42) ~1 -- held until its length shrank that spread
    job = _job4_like(told=True)
    assert not _held(job, 1.3, 5)
    z_untold, z_all = (math.log(1.3) / excursion.sd_of_mean(
        job._exc_v[peers].mean(axis=0), job._exc_n, 5) for peers in ([1, 2, 4, 9], [
            0, 1, 2, 4, 5, 6, 7, 8, 9]))
    assert z_untold > _EXC_Z > 2 * z_all


def test_untold_wild_peers_still_hold_a_run_of_their_size() -> None:
    # the same spreads untold -- a job whose ranks do wander that much -- hold the run: the
    # reference is what the job's ranks do, only a fault told is out of it
    assert _held(_job4_like(told=False), 1.3, 5)


def test_a_run_among_ranks_mostly_told_is_read_against_them_all() -> None:
    # one untold peer is no spread: with fewer than two left the told ones stay in
    job = _job4_like(told=True)
    job._reported[[1, 2, 4]] = True
    assert _held(job, 1.3, 5)
