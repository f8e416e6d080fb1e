"""revA46 (round 46, issue 10): adversarial review of round 45's rules -- sdc45 (a rank's
grad-norm spikes beyond the job's own rate, ``grad_drift``, ``loss_climb``), brake45 (GPUs of
a node braking in turn are its power), key45 (a node's cluster from its named records) -- in
shapes their rooms did not tune on: losses that are not a pretraining curve (RL's KL-weighted
loss, a value loss that wanders, a data-mix phase, warm restarts, a long-context phase, a slow
climb), data-parallel jobs without tensor-parallel mates and of 2-4 ranks, fp16 overflow steps,
one gross spike, a supply braking a node's GPUs at random, DCGM rows naming the host's FQDN.

Probes are in process (Monitors or Engine, no broker, no wall clock), built below; the probe
scripts are /tmp/revA46/sdcp.py, brk.py, keyp.py (``PYTHONPATH=TREE python /tmp/revA46/sdcp.py
grpo "{'steps':400}" 460800,460801`` -- run from TREE: the venv's .pth hook imports the tree of
the current directory).  Findings are strict xfails whose reasons give n of m probe runs,
whether round 45's start (4eb0b81, = main f08a653's detector) does the same, and a fix idea;
the other tests are guards that held.  Ranked by harm in BENCHMARKS.md "revA46, round 46".
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
import pytest
from msgspec.structs import replace

from detector import testing as t
from detector.engine import Engine
from detector.events import StepSample, ThermalSample
from detector.monitors import Monitors
from detector.testing import T0, feed, thermal
from detector.thresholds import Thresholds
from tests.test_revA44 import CLOCK, _brake_rows, _dp_job
from tests.test_revA44 import _firing as _fired

GM = Callable[[int, np.ndarray], np.ndarray]


def _job(steps: int, *, tp: int = 2, dp: int = 16, hard_every: float = 40.0, seed: int = 460800,
         gmul: GM | None = None, loss_x: Callable[[int], float] | None = None,
         lnoise: float = 0.012, null: Callable[[int, int, np.random.Generator], set[int]]
         | None = None) -> list[StepSample]:
    """tests/test_sdc45.py's dense job (tp x dp, ~1 s steps; each rank's local ``grad_norm``
    its shard's level x 5 % batch noise, a hard sample -- one random rank x1.8-2.6 -- one step
    in ``hard_every``; each replica's ``loss`` 3 x ``loss_x(step)`` x (1 + ``lnoise`` noise)),
    with ``gmul`` (step, dp of each rank) -> a factor per rank on its norm, and ``null`` (step,
    ranks, rng) -> the ranks whose norm is null that step (an fp16 overflow: skipped)."""
    rng = np.random.default_rng(seed)
    n = tp * dp
    tp_of, dp_of = np.arange(n) % tp, np.arange(n) // tp
    shard = np.exp(0.3 * rng.standard_normal(tp))[tp_of]
    out: list[StepSample] = []
    ts = T0
    for k in range(steps):
        ts += 1.0 + 0.01 * rng.standard_normal()
        g = shard * np.exp(0.05 * rng.standard_normal(n))
        if hard_every and k >= 3 and rng.random() < 1.0 / hard_every:
            g[rng.integers(n)] *= rng.uniform(1.8, 2.6)
        if gmul:
            g = g * gmul(k, dp_of)
        loss = 3.0 * (1.0 + lnoise * rng.standard_normal(dp)) * (loss_x(k) if loss_x else 1.0)
        nul = null(k, n, rng) if null else set()
        out += [t.step(ts + 0.001 * r, r, k, step_ms=1000.0, compute_ms=800.0, comm_ms=200.0,
                       tp=int(tp_of[r]), pp=0, dp=int(dp_of[r]),
                       grad_norm=None if r in nul else round(float(g[r]), 4),
                       loss=round(float(loss[dp_of[r]]), 4)) for r in range(n)]
    return out


def _run(events: list[StepSample]) -> list[tuple[str, str, int | None, int]]:
    """(signal, scope level, rank, step) of every active verdict of the step monitors."""
    m = Monitors(Thresholds())
    out: list = []
    for e in events:
        m.process(e, out)
    m.advance(events[-1].ts + 60.0, out)
    return [(f.signal, f.scope.level, f.rank, int(f.evidence.get("step", -1)))
            for f in out if f.active and f.verdict]


def _falling(k: int, half: float = 300.0) -> float:
    return 1.0 + 2.0 * 0.5 ** (k / half)


def _rank_x(rank: int | None, f: float, start: int, stop: int = 1 << 30, *,
            dp: int | None = None) -> GM:
    """A factor ``f`` on rank ``rank``'s norm (or every rank of replica ``dp``) for steps
    ``start``..``stop``."""
    def gm(k: int, dp_of: np.ndarray) -> np.ndarray:
        m = np.ones(len(dp_of))
        if start <= k < stop:
            if dp is not None:
                m[dp_of == dp] = f
            else:
                m[rank] = f
        return m
    return gm


# == sdc45's loss_climb: the job's loss over its own level ====================================

# (was a strict xfail: "revA46 F1 (new in round 45: sdc45's loss_climb): an RL job logging
# GRPO's loss as TRL does -- beta x KL to the reference policy (the advantage term averages ~0),
# positive and rising from ~0 as the policy moves off the reference (beta 0.04, KL 0.002 -> 0.2,
# tim ..." -- sdc47: a climb pages only with the job's grad norm x1.5 over its own level too
# (detector.sdc CLIMB_NORM_RATIO); a GRPO loss moves no norm)
def test_a_grpo_loss_rising_with_its_kl_pages_nobody() -> None:
    def kl(k: int) -> float:
        return 0.04 * (0.002 + 0.2 * (1.0 - math.exp(-k / 600.0))) / 3.0
    found = _run(_job(400, loss_x=kl, lnoise=0.15, hard_every=0.0))
    assert [f for f in found if f[0] == "loss_climb"] == []


def _wander(seed: int, steps: int, s: float = 0.15, rho: float = 0.97) -> list[float]:
    rng = np.random.default_rng(seed + 7)
    w = [0.0]
    for _ in range(steps):
        w.append(rho * w[-1] + math.sqrt(1.0 - rho * rho) * s * float(rng.standard_normal()))
    return w


# (was a strict xfail: "revA46 F2 (new in round 45: loss_climb): a positive loss that wanders
# rather than falls -- a PPO value loss, a reward model's, a small fine-tune's: log-loss an
# AR(1) 0.97 of 15 % spread, healthy -- is escalated sdc/unknown at job scope 2-3 times a
# 3,000-step r ..." -- sdc47: a climb pages only with the job's grad norm x1.5 over its own
# level too (detector.sdc CLIMB_NORM_RATIO); a wandering loss moves no norm)
def test_a_value_loss_that_wanders_pages_nobody() -> None:
    w = _wander(460801, 1500)
    found = _run(_job(1500, seed=460801, loss_x=lambda k: math.exp(w[k]), hard_every=0.0))
    assert [f for f in found if f[0] == "loss_climb"] == []


# (was a strict xfail: "revA46 F3 (new in round 45: loss_climb): a data-mix phase (a
# curriculum's next stage, a harder domain) raising every replica's loss x1.3 from step 800 for
# good, the loss still falling as before, is escalated sdc/unknown at job scope 103 steps in, 3
# of 3 seeds ..." -- sdc47: a climb pages only with the job's grad norm x1.5 over its own level
# too (detector.sdc CLIMB_NORM_RATIO); a data mix moves no norm (blind35 F2 moves it x3-6))
def test_a_data_mix_phase_raising_the_loss_pages_nobody() -> None:
    found = _run(_job(1000, loss_x=lambda k: _falling(k) * (1.3 if k >= 800 else 1.0)))
    assert [f for f in found if f[0] == "loss_climb"] == []


@pytest.mark.xfail(strict=True, reason=(
    "revA46 F4 (loss_climb's miss): a job's loss climbing 0.1 % a step from step 700 (x1.65 "
    "in 500 steps, x2.7 in 1,000: a slow divergence from corrupted optimizer state) is never "
    "paged, 3 of 3 seeds (460800-02); 0.2 % a step from 300: paged at step 887.  The level "
    "learns 1/64 a step while the loss is within half the ratio over it, so any climb slower "
    "than ~log(1.2)/2/64 = 0.14 % a step is followed, never stood over.  4eb0b81: no rule.  "
    "Fix idea: hold the level (no upward learning) once the loss has stood over it for "
    "CLIMB_STEPS, or a second, slower level (half-life ~1,000 steps) that must also be "
    "exceeded.  sdc47: a climb now pages only with the job's grad norm x1.5 over its own level "
    "too (revA46 F1/F2/F3/F13); this probe's norms stay flat, so a fix of the level alone "
    "would not page it either -- a slow divergence that moves no norm is a loss alone"))
def test_a_loss_climbing_slowly_for_good_is_escalated() -> None:
    found = _run(_job(1200, loss_x=lambda k: _falling(k, 200.0) * (
        math.exp(0.001 * (k - 700)) if k >= 700 else 1.0)))
    assert [f[:2] for f in found if f[0] == "loss_climb"] == [("loss_climb", "job")]



# (was a strict xfail: "revA46 F13 (new in round 45: loss_climb): a pretraining loss spike that
# recovers over a few hundred steps (every replica's loss x1.6 at step 600, back with a half-
# life of 100 steps -- the slow recoveries of OPT/BLOOM-style spikes, no hardware) is escalated
# sdc ..." -- sdc47: a climb pages only with the job's grad norm x1.5 over its own level too
# (detector.sdc CLIMB_NORM_RATIO); the probe's spike moves no norm)
def test_a_loss_spike_recovering_over_hundreds_of_steps_pages_nobody() -> None:
    def lx(k: int) -> float:
        b = _falling(k)
        return b * (1.0 + 0.6 * 0.5 ** ((k - 600) / 100.0)) if k >= 600 else b
    assert [f for f in _run(_job(1300, loss_x=lx)) if f[0] == "loss_climb"] == []

@pytest.mark.parametrize(("bump", "period"), [(1.3, 400), (1.5, 500)])
def test_guard_warm_restarts_of_the_lr_page_nobody(bump: float, period: int) -> None:
    # SGDR: the LR back at its peak every ``period`` steps, the loss up x bump and back down
    # (half-life 60 steps): 0 pages, x1.3 in 3 seeds (460800-02), x1.5 in 2 (460800-01)
    def lx(k: int) -> float:
        base = _falling(k, 800.0)
        return base * (1.0 + (bump - 1.0) * 0.5 ** ((k % period) / 60.0)) if k >= period else base
    found = _run(_job(1600, seed=460801, loss_x=lx))
    assert [f for f in found if f[0] == "loss_climb"] == []


def test_guard_a_long_context_phase_the_loss_recovers_from_pages_nobody() -> None:
    # x1.25 at step 500, back with a half-life of 400 steps: 0 of 3 seeds
    def lx(k: int) -> float:
        return _falling(k) * (1.0 + 0.25 * 0.5 ** ((k - 500) / 400.0) if k >= 500 else 1.0)
    assert [f for f in _run(_job(1100, seed=460802, loss_x=lx)) if f[0] == "loss_climb"] == []


# == sdc45's grad_drift and grad_outlier: a rank against its peers ===========================

@pytest.mark.xfail(strict=True, reason=(
    "revA46 F5 (new in round 45: sdc45's grad_drift): a data-parallel job without tensor "
    "parallelism (tp 1, 16 ranks) where rank 5 reads a harder shard for 300 steps (its local "
    "norm x1.2; x1.15 for 200 steps the same) -- streaming per-rank shards (webdataset, "
    "MosaicML streaming) -- is paged sdc/unknown at rank 5's GPU ~75 steps in, 5 of 5 runs "
    "(460800-02 x1.2, 460800-01 x1.15); tp 2 (the replica's mate as high): nobody.  With one "
    "rank a replica there is no replica mate to tell batches from the GPU (drift_judge's "
    "mates check needs two others; a tp-2 replica's pair is saved by the lookback's two ranks "
    "off).  4eb0b81: no rule.  Fix idea: no grad_drift page in a job whose replicas are one "
    "rank (or of two) without a second sign -- the rank's loss against its peers' (its "
    "batches raise both), a checksum; or a drift that ends on its own within a few hundred "
    "steps resolved without a page (a GPU's drift stays).  The same for grad_outlier: rank "
    "5's shard of hard samples (x2.2 every 6th step for 100 steps) is paged at its GPU 12-18 "
    "steps in, 3 of 3, tp 2 nobody -- 4eb0b81 the same (pre-existing).  sdc47 tried the "
    "hold (a rank alone in its replica paged 360 s after its drift began, its onset kept over "
    "gaps): F5 quiet 6 of 6, but blind35's F1 cut (one peer group: 8 one-rank replicas, a "
    "real kernel drift) then missed its drift -- the same shape; not landed"))
def test_a_pure_dp_ranks_harder_shard_is_no_gpu() -> None:
    found = _run(_job(900, tp=1, gmul=_rank_x(None, 1.2, 300, 600, dp=5)))
    assert [f for f in found if f[0] == "grad_drift"] == []


def test_guard_a_replicas_harder_shard_with_its_tp_mate_is_no_gpu() -> None:
    # the same at tp 2: both ranks of replica 5 as high -- nobody
    assert _run(_job(900, tp=2, gmul=_rank_x(None, 1.2, 300, 600, dp=5))) == []


# (was a strict xfail: "revA46 F6 (sdc45's spike rate, improved from round 44): healthy pure
# data-parallel jobs (tp 1) with hard samples one step in 40 page grad_outlier at a GPU in 4 of
# 18 runs of 3,000 steps (3 ranks 2/6, 4 ranks 1/6 (two pages), 16 ranks 1/4, 8 ranks 0/2; tp 2
# x d ..." -- sdc47: a job under SPIKE_PRIOR_RANKS (16) ranks weighs the spike prior in job
# steps and takes its own moderate spikes out of the job's rate only in a share n/16; 3 ranks
# 6/6 runs quiet (were 2/6))
def test_a_small_healthy_jobs_hard_samples_page_nobody() -> None:
    # 460801, 3 ranks: rank 1 paged at step 118
    assert _run(_job(600, tp=1, dp=3, seed=460801)) == []


# (was a strict xfail: "revA46 F7 (pre-existing): a one-step corruption on one rank -- its local
# norm x100, x1000 or x10^4 its peers' at one step (a flipped exponent in its gradients before
# the all-reduce hands them to every replica), its TP mate not -- is never paged, 5 of 5 (x1000
# ..." -- sdc47: one spike x50 its peers' (sdc.GROSS_SPIKE), its replica's other ranks not,
# pages alone; no blind corpus's step records hold a one-rank spike past x20)
def test_one_gross_spike_on_one_rank_is_paged() -> None:
    found = _run(_job(600, gmul=lambda k, d: np.where(np.arange(len(d)) == 7,
                                                      1000.0 if k == 300 else 1.0, 1.0)))
    assert [f[:3] for f in found if f[0] == "grad_outlier"] == [("grad_outlier", "gpu", 7)]


@pytest.mark.xfail(strict=True, reason=(
    "revA46 F8 (pre-existing, min_peers): a drift on one rank of a two-replica job (tp 1 x dp "
    "2, x1.25 from step 200; tp 2 x dp 2, x1.3) is never paged, 4 of 4 (460800-02, 460800); 3 "
    "ranks: grad_drift at its GPU ~120 steps in.  4eb0b81: nothing either.  The numerics' twin "
    "of revA45 F2: with one peer nothing says which of two is off.  Fix idea: the rank whose "
    "own norm left its own past level while its peer's stayed (grad-norm history, as peers46 "
    "may build for step times)"))
def test_a_drift_in_a_two_rank_job_is_paged() -> None:
    found = _run(_job(700, tp=1, dp=2, gmul=_rank_x(1, 1.25, 200)))
    assert [f[:3] for f in found if f[0] == "grad_drift"] == [("grad_drift", "gpu", 1)]


def test_guard_a_drift_in_a_three_rank_job_is_paged_at_its_gpu() -> None:
    found = _run(_job(700, tp=1, dp=3, gmul=_rank_x(1, 1.25, 200)))
    assert [f[:3] for f in found] == [("grad_drift", "gpu", 1)]


@pytest.mark.parametrize("every", [50, 150])
def test_guard_fp16_overflow_steps_with_a_null_norm_page_nobody(every: int) -> None:
    # a dynamic loss scale's skipped step: one random rank's norm null every ``every`` steps
    # (it overflowed; the step is skipped): 0 pages in 5 runs (every 150: 460800-02, every 50:
    # 460802); 4eb0b81 paged hard samples (5 in 3,000 steps, 460800)
    def null(k: int, n: int, rng: np.random.Generator) -> set[int]:
        return {int(rng.integers(n))} if k % every == 7 else set()
    assert _run(_job(1500, seed=460802, null=null)) == []


# == brake45: GPUs of a node braking in turn =================================================

@pytest.mark.parametrize(("interval", "p", "phase_s", "polls"),
                         [(10.0, 0.33, 0.0, 120), (10.0, 0.15, 0.0, 120),
                          (30.0, 0.5, 29.0, 60)], ids=["10s", "10s-sparse", "30s-phases"])
def test_guard_a_supply_braking_a_random_gpu_now_and_then_is_the_nodes_page(
        interval: float, p: float, phase_s: float, polls: int) -> None:
    # a failing PSU: on each poll (with chance p) one random GPU of the node brakes (0x88,
    # half clock) -- any GPU, so each one rarely: the node's power page, 9 of 9 (460810-12),
    # 120-640 s in
    rng = np.random.default_rng(460811)
    braking = {k: {int(rng.integers(8))} for k in range(6, polls) if rng.random() < p}
    fired = _fired(feed(Engine(), _brake_rows(braking, interval, polls, phase_s, 460811),
                        finish=False))
    assert [f[:3] for f in fired] == [("isolation", "power", "node:node-000")], fired



@pytest.mark.xfail(strict=True, reason=(
    "revA46 F10 (brake45's node setting against its job profile): application clocks left on "
    "two GPUs of each of two nodes of a four-node DP job (node-000 GPUs 2 and 5, node-001 GPUs "
    "1 and 6: 0x2 at -8 %, their ranks x1.087 from 120 s; random phases) -- two nodes' "
    "settings by brake45's own rule -- get one page a node, its scope flipping with the "
    "cadence: 10 s polls two GPU pages (GPUs 5 and 6 never paged), 30 s one node page and one "
    "GPU page, 6 of 6 runs (460820-22 x 10/30 s) wrong for a node label, and for GPU labels "
    "GPU 5 or 6 missed in each; one node with two GPUs beside one GPU on the other: a node "
    "page and a GPU page, right.  4eb0b81: two GPU pages (2/2).  The second node showing the "
    "same reads as the job's profile (explaining neither), or the node paged first hides the "
    "other.  Fix idea: a profile is the job's when it is on (nearly) every node of it, at the "
    "same GPUs; a setting on a minority of nodes is each node's own"))
def test_application_clocks_on_two_gpus_of_each_of_two_nodes_are_two_node_pages() -> None:
    from tests.test_brake45 import _held_job
    from tests.test_revA44 import HELD
    held = {(0, 2), (0, 5), (1, 1), (1, 6)}
    slow = {n * 8 + g: CLOCK / HELD for n, g in held}
    fired = _fired(feed(Engine(), _held_job(held, slow, interval=10.0, seed=460820),
                        finish=False))
    assert sorted(f[:3] for f in fired) == [("isolation", "power", "node:node-000"),
                                            ("isolation", "power", "node:node-001")], fired



@pytest.mark.xfail(strict=True, reason=(
    "revA46 F14 (pre-existing): application clocks left on a second GPU of a node (GPU 5: 0x2 "
    "at -8 %, its rank x1.087 from 300 s) after the first's (GPU 2 from 120 s, paged power "
    "at its GPU with reset_clocks -i 2 at 136-171 s) -- two separate settings -- is never "
    "paged in the 100 s left: no page of GPU 5, no node page (brake45: 0x2 on two busy GPUs "
    "is the node's), 4 of 4 (460860-61 x 10/30 s polls); GPU 5's fault is missed under "
    "DESIGN's rule (GPU 2's page is another scope).  4eb0b81: the same (2/2).  Fix idea: a "
    "GPU page's problem takes no other GPU's slow rank; a second GPU's 0x2 while the first's "
    "page is open re-scopes it to the node (a new dedup_key) or pages the second GPU"))
def test_a_second_gpus_application_clocks_after_the_first_page_are_paged() -> None:
    from tests.test_brake45 import _held_job
    from tests.test_revA44 import HELD
    f = CLOCK / HELD
    a = _held_job({(0, 2)}, {2: f}, interval=10.0, seed=460860)
    b = _held_job({(0, 2), (0, 5)}, {2: f, 5: f}, interval=10.0, seed=460860)
    events = [x if x.ts < T0 + 300.0 else y for x, y in zip(a, b, strict=True)]
    fired = _fired(feed(Engine(), events, finish=False))
    assert any(k in ("gpu:node-000/5", "node:node-000") and at >= 300.0
               for _, _, k, at in fired), fired

# (was a strict xfail: "revA46 F11 (pre-existing; brake45's lost-row poll did not cause it): a
# supply braking four GPUs of a node at once (1, 3, 5, 7: 0x88, half clock) every third 10 s
# poll, 20 % of rows lost at random: the node's power page at 90-120 s and, 300-690 s later, a
# power isolation of GPU 1 alone beside it -- a second problem, a false positive under DESIGN's
# rule -- 2 of 5 runs (460830-34; ...).  4eb0b81: the same page at 420.1 s" -- passes with
# wait46's cadence grid, 5 of 5, but by accident, not F11's fix (traced): GPU 2's cadence was
# first told 20 s from two gaps over lost rows, then re-told 16.67 s with a 6.67 s jitter
# (detector.cadence.retell's mean over a multiple), which lengthens node-000's waits; with
# retell or the grid's quiet band off, GPU 1's page at 420.1 s returns.  F11 stays open: its
# fix idea stands, and a re-tell that restarts a grid told at a multiple brings it back) --
# cap47 mended that flaw (two short gaps alike tell the rows' interval: GPU 2 told 20 s at
# 100.2 s, 10 s at 120.2 s, 30 s over two pairs of lost rows at 290.2 s, 10 s at 370.2 s, no
# jitter told) and the test still passes, 10 of 10 seeds (460830-39) one node page, as main;
# not re-traced which wait now keeps GPU 1's page away
def test_a_supply_braking_four_gpus_with_rows_lost_is_one_node_page() -> None:
    rng = np.random.default_rng(460830)
    rows = _brake_rows({k: {1, 3, 5, 7} for k in range(6, 80) if k % 3 == 0}, 10.0, 80, 0.0,
                       460830)
    fired = _fired(feed(Engine(), [r for r in rows if rng.random() >= 0.2], finish=False))
    assert [f[:3] for f in fired] == [("isolation", "power", "node:node-000")], fired


# == tray45: a TP group's one GPU showing why ===============================================

# (was a strict xfail: "revA46 F12 (pre-existing; tray45's elimination needs a free GPU): in a
# fleet whose GPUs show 0x4 at full clock all the time (a fleet power limit: A100s at a site's
# limit, blind23's routine cap), a TP group over two trays slowed by one GPU's real cap (0x4 and
# clock -3 %, draw -3.5 %; or -8 %/-10 %) is escalated unknown at its replica: TP2 over two
# one-GPU nodes 7 of 7 (460850-51 rows 1/10/30 s, 460852 10 s), TP4, TP8: 3 of 3; the same rows
# without the routine bit: power at the GPU (TP2) or its node (TP4).  4eb0b81: the same replica
# escalation.  No mate is 'free' of a reason, so no GPU is the group's lone cause" -- cap47: a
# GPU under a SW cap on every loaded sample measures a cap's clock loss against the clock it
# holds under it routinely (detector.thermal's GpuThermal._routine_drop), told as a minor cap;
# its mates, at their routine clock, are free of it: power at the GPU or its node, 11 of 11
# probes (TP2/4/8/16, 1/10/30 s rows, 460850-52), 8.1-43.6 s after onset)
@pytest.mark.parametrize(("shape", "shows", "want"), [
    ("tp2-2n", "shallow", {"gpu:t-07/0"}), ("tp4-2n", "ramp", {"gpu:t-06/1", "node:t-06"})])
def test_a_tp_groups_capped_gpu_under_a_routine_power_bit_is_paged_power(
        shape: str, shows: str, want: set[str]) -> None:
    from tests.test_revA44 import SHAPES, _tp_world
    events, _ = _tp_world(460850, shows=shows, factor=1.06 if shows == "shallow" else 1.09,
                          row_s=10.0, **SHAPES[shape])
    events = [replace(e, throttle=e.throttle | 0x4) if isinstance(e, ThermalSample) else e
              for e in events]
    fired = _fired(feed(Engine(), events))
    assert len(fired) == 1 and fired[0][:2] == ("isolation", "power") and fired[0][2] in want, \
        fired

# == key45 / node names: the same node named two ways ========================================

def _east_cap(*, steps_named: bool, dcgm_cluster: str, fqdn: bool) -> list:
    """tests/test_key45.py's two sites (west's job on node-100/101 named west; east's job on
    node-000/001 from T0 + 10 s, rank 3 12 % slow from step 120, its GPU capped: 0x4, clock
    -11 %): east's step records named east (``steps_named``) or not; the DCGM rows every 10 s
    from T0 + 0.5 s -- before east's first step -- naming ``dcgm_cluster``, the host as its
    FQDN ``node-000.east.example.com`` (``fqdn``) or as the steps name it."""
    west = [replace(e, cluster="west", node=e.node.replace("node-0", "node-1"))
            for e in _dp_job(steps=200, job="wjob", seed=5, t0=T0)]
    east = _dp_job(steps=190, job="ejob", seed=6, t0=T0 + 10.0, slow={3: (1.12, 120)})
    if steps_named:
        east = [replace(e, cluster="east") for e in east]
    rows = []
    for k in range(20):
        for n in range(2):
            for g in range(8):
                ts = T0 + 0.5 + 10 * k + 0.01 * g
                capped = (n, g) == (0, 3) and ts >= T0 + 130.0
                rows.append(replace(thermal(
                    ts, f"node-{n:03d}" + (".east.example.com" if fqdn else ""), g,
                    throttle=0x4 if capped else 0, clock_mhz=CLOCK / 1.12 if capped else CLOCK,
                    power_w=480.0 if capped else 640.0), cluster=dcgm_cluster))
    return sorted([*west, *east, *rows], key=lambda e: e.ts)


def _keys(alerts) -> list[tuple[str, str]]:
    return [(a.dedup_key, a.cause) for a in alerts if a.status == "firing"]


def test_guard_a_cap_on_named_dcgm_rows_explains_a_node_whose_steps_name_none() -> None:
    # key45's shape turned around: the DCGM rows name east, the job's step records no cluster
    # (west home): power at east, both orders (east's steps first too); 4eb0b81 the same
    alerts = feed(Engine(), _east_cap(steps_named=False, dcgm_cluster="east", fqdn=False),
                  finish=False)
    assert _keys(alerts) == [("fl:east:iso:slow_node:gpu:node-000/3", "power")]


@pytest.mark.xfail(strict=True, reason=(
    "revA46 F9 (pre-existing: node_names' documented order): with no topology, a "
    "dcgm-exporter naming the host by its FQDN (node-000.east.example.com, its Kubernetes "
    "node object) whose rows begin before the job's first step record (the usual order: the "
    "exporter runs before any job) keeps the FQDN as a node of its own, so the GPU's cap "
    "never joins its rank: the 12 % slow rank is escalated unknown at 137 s, 1 of 2 orders "
    "(east's steps first: power at 120.5 s); 4eb0b81 the same.  Upper case (EAST) in the "
    "rows' cluster: unknown in both orders (the contract compares names as strings).  Fix "
    "idea: an FQDN kept as itself is re-decided when a step record first names its first "
    "label -- its units moved, as key45 moves a node claimed by its named records (no page "
    "made yet)"))
def test_an_fqdn_collector_before_the_job_explains_its_cap() -> None:
    alerts = feed(Engine(), _east_cap(steps_named=True, dcgm_cluster="east", fqdn=True),
                  finish=False)
    assert _keys(alerts) == [("fl:east:iso:slow_node:gpu:node-000/3", "power")]
