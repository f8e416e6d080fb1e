"""sdc45 (round 45): the numerics' SDC rules against what a mixed-precision run logs (issue 10,
blind35 F1/F2/F3).

A small dense job: each rank's local ``grad_norm`` its shard's level x 5 % batch noise, each
replica's ``loss`` a falling curve x 1.2 % noise, checksums every rank of a peer group agrees on.
Routine shapes (hard samples: one rank x1.8-2.6 on one step, ~1 in 40 steps somewhere) and
faults are laid on top.
"""

from __future__ import annotations

import numpy as np

from detector import testing as t
from detector.events import StepSample
from detector.monitors import Monitors
from detector.thresholds import Thresholds


def _job(steps: int, *, tp: int = 2, pp: int = 1, dp: int = 16, hard_every: float = 40.0,
         grad: dict[tuple[int, int], float] | None = None, seed: int = 450201
         ) -> list[StepSample]:
    """Steps of a tp x pp x dp job, ~1 s apart; ``hard_every``: a hard sample (one random
    rank's norm x1.8-2.6) one step in this many (0: none); ``grad`` (step, rank) -> factor."""
    rng = np.random.default_rng(seed)
    n = tp * pp * dp
    tp_of = np.arange(n) % tp
    pp_of = (np.arange(n) // tp) % pp
    dp_of = np.arange(n) // (tp * pp)
    shard = np.exp(0.3 * rng.standard_normal(tp * pp))[pp_of * tp + tp_of]
    out: list[StepSample] = []
    ts = t.T0
    for k in range(steps):
        ts += 1.0 + 0.01 * rng.standard_normal()
        g = shard * np.exp(0.05 * rng.standard_normal(n))
        if hard_every and k >= 3 and rng.random() < 1.0 / hard_every:
            g[rng.integers(n)] *= rng.uniform(1.8, 2.6)
        for (s, r), f in (grad or {}).items():
            if s == k:
                g[r] *= f
        loss = 3.0 * (1.0 + 0.012 * rng.standard_normal(dp))
        for r in range(n):
            out.append(t.step(ts + 0.001 * r, r, k, step_ms=1000.0, compute_ms=800.0,
                              comm_ms=200.0, tp=int(tp_of[r]), pp=int(pp_of[r]),
                              dp=int(dp_of[r]), grad_norm=round(float(g[r]), 4),
                              loss=round(float(loss[dp_of[r]]), 4)))
    return out


def _run(events: list[StepSample]) -> list:
    m = Monitors(Thresholds())
    out: list = []
    for e in events:
        m.process(e, out)
    m.advance(events[-1].ts + 60.0, out)
    return [f for f in out if f.active and f.verdict]


def _grad(found: list) -> list[tuple[int, int]]:
    return [(f.rank, int(f.evidence["step"])) for f in found if f.signal == "grad_outlier"]


# -- F3: hard samples are batch content; a GPU's spikes repeat ------------------------------


def test_two_hard_samples_close_together_on_one_rank_page_nobody() -> None:
    # Hard samples one step in 40 at random ranks, and two of them on rank 7 six steps apart
    # (x2.2, x1.9): round 44 paged it sdc/unknown at its GPU (blind35 F3).
    events = _job(600, grad={(300, 7): 2.2, (305, 7): 1.9})
    assert _grad(_run(events)) == []


def test_many_hard_samples_over_a_long_run_page_nobody() -> None:
    # 3000 steps x 32 ranks, ~75 hard samples: pairs on one rank within 50 steps happen by
    # chance (round 44 paged each one).
    assert _grad(_run(_job(3000, seed=450202))) == []


def test_a_gpu_whose_norm_spikes_again_and_again_is_paged_among_hard_samples() -> None:
    # Rank 5's norm x2.5 one step in 6 from step 200: beyond the job's rate of hard samples.
    spikes = {(s, 5): 2.5 for s in range(200, 600, 6)}
    found = _grad(_run(_job(600, grad=spikes)))
    assert [r for r, _ in found] == [5]
    assert 200 <= found[0][1] <= 200 + 4 * 6


def test_two_gross_spikes_in_a_quiet_job_are_paged() -> None:
    # No hard samples: two x10 spikes on one rank eight steps apart are a GPU, not a batch.
    found = _grad(_run(_job(200, hard_every=0.0, grad={(100, 9): 10.0, (108, 9): 8.0})))
    assert found == [(9, 108)]
