"""sdc45 (round 45): the numerics' SDC rules against what a mixed-precision run logs (issue 10,
blind35 F1/F2/F3).

A small dense job: each rank's local ``grad_norm`` its shard's level x 5 % batch noise, each
replica's ``loss`` a falling curve x 1.2 % noise, checksums every rank of a peer group agrees on.
Routine shapes (hard samples: one rank x1.8-2.6 on one step, ~1 in 40 steps somewhere) and
faults are laid on top.
"""

from __future__ import annotations

from collections.abc import Callable

import msgspec
import numpy as np

from detector import testing as t
from detector.events import StepSample
from detector.monitors import Monitors
from detector.thresholds import Thresholds


def _job(steps: int, *, tp: int = 2, pp: int = 1, dp: int = 16, hard_every: float = 40.0,
         grad: dict[tuple[int, int], float] | None = None, seed: int = 450201,
         drift: tuple[int, int, float] | None = None, hot: tuple[int, float, int] | None = None,
         loss_x: Callable[[int], float] | None = None, first: int = 0,
         norm_x: Callable[[int], float] | None = None) -> list[StepSample]:
    """Steps ``first``.. of a tp x pp x dp job, ~1 s apart; ``hard_every``: a hard sample (one
    random rank's norm x1.8-2.6) one step in this many (0: none); ``grad`` (step, rank) ->
    factor; ``drift`` (rank, from step, factor on its norm from then); ``hot`` (steps, factor,
    groups): in each expert-parallel group (the ranks split in that many) a random rank's norm
    x factor for that many steps, then another's (MoE routing's hot expert, moving);
    ``loss_x`` step -> factor on every replica's loss, ``norm_x`` on every rank's norm."""
    rng = np.random.default_rng(seed)
    n = tp * pp * dp
    tp_of = np.arange(n) % tp
    pp_of = (np.arange(n) // tp) % pp
    dp_of = np.arange(n) // (tp * pp)
    shard = np.exp(0.3 * rng.standard_normal(tp * pp))[pp_of * tp + tp_of]
    out: list[StepSample] = []
    ts = t.T0 + first
    hot_ranks: list[int] = []
    for k in range(first, first + steps):
        ts += 1.0 + 0.01 * rng.standard_normal()
        g = shard * np.exp(0.05 * rng.standard_normal(n))
        if drift and k >= drift[1]:
            g[drift[0]] *= drift[2]
        if hot:
            if k % hot[0] == 0:
                size = n // hot[2]
                hot_ranks = [j * size + int(rng.integers(size)) for j in range(hot[2])]
            g[hot_ranks] *= hot[1]
        if hard_every and k >= 3 and rng.random() < 1.0 / hard_every:
            g[rng.integers(n)] *= rng.uniform(1.8, 2.6)
        for (s, r), f in (grad or {}).items():
            if s == k:
                g[r] *= f
        if norm_x:
            g = g * norm_x(k)
        loss = 3.0 * (1.0 + 0.012 * rng.standard_normal(dp)) * (loss_x(k) if loss_x else 1.0)
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


def _grad(found: list, signal: str = "grad_outlier") -> list[tuple[int, int]]:
    return [(f.rank, int(f.evidence["step"])) for f in found if f.signal == signal]


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


# -- F1: one GPU's results drifting on one kernel: its local norm a level off its peers' ------


def test_one_gpu_whose_local_norm_stands_x1_2_its_peers_is_paged() -> None:
    # Rank 5's norm x1.2 its 15 DP peers' from step 150, hard samples around: grad_drift at its
    # GPU once it has stood so for a minute; nobody else.
    found = _run(_job(400, drift=(5, 150, 1.2)))
    assert [(f.rank, f.scope.level, f.kind, f.cause) for f in found] == [
        (5, "gpu", "sdc", "unknown")]
    assert found[0].signal == "grad_drift"
    assert 150 + 60 <= _grad(found, "grad_drift")[0][1] <= 150 + 100
    assert found[0].ts - found[0].onset_ts >= 60.0


def test_a_hot_expert_that_moves_within_a_minute_pages_nobody() -> None:
    # MoE routing: one rank's norm x1.2 for 40 steps, then another's (blind34 moe-s: x1.15
    # for 20-300 steps of ~70 ms, on 15 ranks in turn).
    assert _run(_job(900, hot=(40, 1.2, 1))) == []


def test_hot_experts_of_two_groups_that_move_slowly_page_nobody() -> None:
    # Two expert-parallel groups, each with its hot expert for 150 steps (blind34 moe-a:
    # tens to hundreds of 1.1 s steps): longer than a minute, but never the job's only rank
    # off its peers.
    assert _run(_job(900, hot=(150, 1.2, 2))) == []


def test_a_drift_too_small_to_tell_from_batches_pages_nobody() -> None:
    assert _run(_job(600, drift=(5, 100, 1.06))) == []


# -- F2: corruption every replica shares: the job's loss up and staying up ----------------


def _falling(k: int) -> float:
    return 1.0 + 2.0 * 0.5 ** (k / 60.0)  # (a warm-up's fall, then a slow decline)


def test_the_jobs_loss_up_x1_3_for_good_is_escalated_at_the_job() -> None:
    # blind35 F2's shape: every replica's loss x1.3 for good and every rank's norm x3 with it
    # (sdc47: the loss alone, a data-mix phase's shape, pages nobody -- revA46 F3)
    found = _run(_job(600, loss_x=lambda k: _falling(k) * (1.3 if k >= 350 else 1.0),
                      norm_x=lambda k: 3.0 if k >= 350 else 1.0))
    assert [(f.signal, f.scope.level, f.scope.job, f.kind, f.cause) for f in found] == [
        ("loss_climb", "job", "job-1", "sdc", "unknown")]
    assert 350 + 90 <= int(found[0].evidence["step"]) <= 350 + 130


def test_a_loss_blow_up_that_recovers_pages_nobody() -> None:
    # Every replica's loss x2 for 8 steps, back within ~25 (blind35's attention-logit blow-up),
    # twice.
    def blow(k: int) -> float:
        for at in (250, 420):
            if at <= k < at + 8:
                return _falling(k) * 2.0
            if at + 8 <= k < at + 33:
                return _falling(k) * (1.0 + 1.0 * (at + 33 - k) / 25.0)
        return _falling(k)
    assert _run(_job(600, loss_x=blow)) == []


def test_a_restart_from_a_checkpoint_with_its_older_loss_pages_nobody() -> None:
    # The job runs to step 400, restarts from step 200's checkpoint: its loss is that step's
    # again (x1.4 the latest), and falls as before.
    events = _job(400, loss_x=lambda k: 1.0 + 2.0 * 0.5 ** (k / 200.0))
    more = _job(300, first=200, loss_x=lambda k: 1.0 + 2.0 * 0.5 ** (k / 200.0), seed=450203)
    gap = events[-1].ts + 120.0 - more[0].ts
    events += [msgspec.structs.replace(e, ts=e.ts + gap) for e in more]
    assert _run(events) == []
