"""A checksum tie: two replicas that disagree, with no third to say which one is wrong.

Data-parallel replicas hold bitwise-identical parameters after every optimizer step, so a
``param_checksum`` that differs between them is silent data corruption somewhere in the
job.  With three or more replicas a strict majority names the wrong one, at once (its GPU
is escalated with the rerun that tells a transient upset from a GPU that computes wrong,
detector.steps).  With two -- a DP-2 job, or a larger one down to two peers
-- nothing in the checksums tells which GPU computed wrong: neither GPU's scope surely
holds the fault, the job's does.  So the tie is **one** escalation at job scope (DESIGN's
smallest scope it can localize; blind4 D2: one page per candidate GPU was two pages, each
wrong half the time), naming both candidates, with the step that tells them apart: rerun
it on a third GPU (Megatron's rerun state machine) -- whichever replica's result the rerun
does not reproduce is the faulty GPU.

The tie ends when the two agree again for ``checksum_clear_steps`` steps, when a candidate
leaves the job, or when a majority decides it: after a rebalance, a third replica votes
and one candidate loses -- its GPU paged (``checksum_mismatch``), the job page resolved
as answered, the other candidate cleared at once.  The state is the job monitor's
``_pair``: rank -> ``[onset_ts, agreeing steps, the other candidate's rank]``.

The tie is paged on the step the checksums split (DESIGN: "SDC checksum mismatch: the same
step"), whatever comes after: a job that crashes on its corrupted weights, ends, or sends no
more grad norms still has its page.  The job's next steps' gradient norms may then judge it
(the tiebreak below): the GPU named updates the same incident (detector.correlate
``_sdc_tie``: the job's page, one dedup_key, fires again narrowed to the GPU).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from detector.alerts import Scope
from detector.findings import Finding
from models.numpy_c import count_nonzero
from models.peer_stats import group_median_scale

# The raw score of the job escalation: that some replica of the job computed wrong is what
# a checksum difference says for sure (not which one: the GPU pages it replaces were 0.5).
TIE_SEVERITY = 0.9


# What one tie finding names, however many pairs disagree (a whole replica of a DP-2 job
# diverging at once is one pair per tensor/pipeline rank, 8,192 on a 16k-GPU job): the first
# pairs by name and checksum, the first candidates' ranks and nodes, and the counts.
TIE_PAIRS_NAMED = 4
TIE_RANKS_KEPT = 16
TIE_NODES_NAMED = 8


def tie(pair: dict[int, list[float]], paired: set[int], step: int,
        pairs: list[list[tuple[int, str, int, str | None, float]]], decided_ts: float,
        job: str, tenant: str | None, cluster: str | None) -> Finding | None:
    """Pairs of replicas whose checksums differ on ``step``: each of ``pairs`` is the two
    ranks as (rank, node, gpu, checksum, ts).  Every candidate is marked ``paired`` (still
    disagreeing) and kept in ``pair``; when any is new, one job escalation for the step is
    returned (a later step's new pair makes a new one, replacing it), else None.  Its size
    is bounded whatever the number of pairs: the first ``TIE_PAIRS_NAMED`` pairs named, the
    first ``TIE_RANKS_KEPT`` candidate ranks listed, and ``candidate_count``.
    """
    new = []
    for candidates in pairs:
        fresh = False
        for (rank, *_, ts), (other, *_) in zip(candidates, candidates[::-1], strict=True):
            paired.add(rank)
            if rank in pair:
                pair[rank][1] = 0
                continue
            pair[rank] = [ts, 0, other]
            fresh = True
        if fresh:
            new.append(candidates)
    if not new:
        return None
    named = new[:TIE_PAIRS_NAMED]
    names = "; ".join(" vs ".join(f"rank {r} (GPU {g} on {n})" for r, n, g, _, _ in c)
                      for c in named)
    if len(new) > len(named):
        names += f"; and {len(new) - len(named)} more pairs"
    nodes = sorted({node for c in new for _, node, _, _, _ in c})
    where = " and ".join(nodes[:TIE_NODES_NAMED]) + (
        f" and {len(nodes) - TIE_NODES_NAMED} more nodes" if len(nodes) > TIE_NODES_NAMED else "")
    diag = (f"rerun step {step} on a third GPU (Megatron rerun state machine): the replica "
            f"whose result it does not reproduce is the faulty GPU; then `dcgmi diag -r 4` "
            f"on {where}")
    return Finding(
        decided_ts, min(v[0] for v in pair.values()), "checksum_pair", "sdc", "unknown",
        Scope.of_job(job), True, True, TIE_SEVERITY,
        {"step": step, "candidates": names, "candidate_ranks": sorted(pair)[:TIE_RANKS_KEPT],
         "candidate_count": len(pair), "pairs_new": len(new),
         "checksums": [f"rank {r}: {c}" for cs in named for r, _, _, c, _ in cs],
         "replicas_compared": 2,
         "note": "two replicas disagree: no majority can say which one is wrong; the fault "
                 "is on one of the candidates' GPUs, so the job is the scope",
         "next_diagnostic": diag},
        job, tenant, cluster)


# -- a tie judged: the candidate whose own gradient norm stays off after the split ----------
#
# A copy of the weights corrupted on one GPU moves that rank's own gradient norm from the step
# its checksum leaves its peer's on (blind19 R1: x1.2-1.5) -- evidence of its own that the
# checksums do not give.  One step's jump is no proof: in DP-2 the other replica trains on its
# own batch (a hard one moves its norm once) and one forged step record can move any
# (review30 6: judged on the split step alone, the innocent replica's x1.4 named its GPU for
# good).  So the split's two levels and spreads (each rank's own history before it: the
# JobMonitor's ``_gmean`` / ``_gdev`` / ``_gown`` / ``_gn`` by slot, kept only in jobs whose peer
# groups are pairs, :func:`grad_track`) are held (detector.step_numerics ``_tie_lean``) and
# each later step with both grad norms judged against them (:func:`still_off`): a rank off
# against its level (and, with two or more replica mates, beyond their move: a hard batch
# moves every shard of a replica alike) and over its peer on TIE_STEPS judged steps in a row,
# the split's among them, names its GPU.  A run must start within TIE_WINDOW judged steps;
# none, both off, a history not warm yet, or no grad norms: the job's page stays (nothing is
# guessed, nothing is lost -- it was sent on the split).
TIE_GRAD_ALPHA = 1.0 / 32.0  # smoothing of a rank's own history of log(grad_norm)
TIE_GRAD_WARM = 16           # steps of its history before its jump can break a tie
TIE_GRAD_Z = 5.0             # the jump: robust sigmas of its history, less its replica's move
TIE_GRAD_CALM = 2.0          # the peer's: within this many of its own
TIE_GRAD_RATIO = 1.1         # ... and at least this ratio over its history and over its peer's
TIE_GRAD_FLOOR = 0.01        # floor of a history's spread (log(grad_norm))
TIE_STEPS = 3                # judged steps in a row (the split's first) before a GPU is named
TIE_WINDOW = 8               # judged steps after the split a run may start in
TIE_GRAD_SEVERITY = 0.8      # the GPU escalation a tiebreak makes (a strict majority's: 0.95)
_TRACK_CAP = 1 << 20         # (a history's step count stops there)
_MEAN_ABS_TO_SIGMA = 1.2533


def grad_track(mean: np.ndarray, dev: np.ndarray, own: np.ndarray, n: np.ndarray,
               r: np.ndarray, lg: np.ndarray, dp: np.ndarray
               ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Move the own histories of the ranks in slots ``r`` (replicas ``dp``) on by this step's
    ``log(grad_norm)`` ``lg``: ``mean``, ``dev``, ``own``, ``n`` are per slot the smoothed
    level, the mean absolute deviation from it, that of the deviation less its replica's
    median one (a replica of three ranks or more: a batch moves its shards alike; else the
    deviation itself) and the steps taken.  Returns, per rank, its deviation from its history
    before this step, the spread of its own part (a robust sigma, floored) and its steps.  A
    step off by more than four sigmas moves the history as four would: a jump is seen whole
    on its step, and a persistent one learned over a few dozen steps.

    >>> m, d, o, n = np.zeros(1), np.zeros(1), np.zeros(1), np.zeros(1, dtype=np.int64)
    >>> at, dp = np.zeros(1, dtype=int), np.zeros(1, dtype=int)
    >>> for g in (1.0, 1.1, 0.9, 1.0): _ = grad_track(m, d, o, n, at, np.log([g]), dp)
    >>> dev, sig, k = grad_track(m, d, o, n, at, np.log([1.5]), dp)
    >>> int(k[0]), bool(dev[0] / sig[0] > 5.0)
    (4, True)
    """
    m, s, so, k = mean[r], dev[r], own[r], n[r]
    d = lg - m
    shift, _, size = group_median_scale(d, dp)
    e = np.where(size >= 3, d - shift, d)
    first = k == 0
    lim = 4.0 * np.maximum(s * _MEAN_ABS_TO_SIGMA, TIE_GRAD_FLOOR)
    sig = np.maximum(so * _MEAN_ABS_TO_SIGMA, TIE_GRAD_FLOOR)
    lim_own = 4.0 * sig
    a = np.maximum(1.0 / (k + 1.0), TIE_GRAD_ALPHA)
    b = np.maximum(1.0 / np.maximum(k, 1.0), TIE_GRAD_ALPHA)
    mean[r] = np.where(first, lg, m + a * np.clip(d, -lim, lim))
    dev[r] = np.where(first, 0.0, s + b * (np.minimum(np.abs(d), lim) - s))
    own[r] = np.where(first, 0.0, so + b * (np.minimum(np.abs(e), lim_own) - so))
    n[r] = np.minimum(k + 1, _TRACK_CAP)
    return d, sig, k


def tiebreak(pair: list[int], dev: np.ndarray, sig: np.ndarray, steps: np.ndarray,
             dp: np.ndarray) -> tuple[int, dict[str, Any]] | None:
    """Of a tie's two candidates (``pair``: their positions in the step), the one whose own
    gradient norm jumped on this step while the other's stayed ordinary, with what says so;
    None when nothing leans.  ``dev``, ``sig``, ``steps``: per position of the step its
    :func:`grad_track` deviation (NaN: none sent), spread and history; ``dp`` its replica (a
    replica's move, its other ranks' median deviation when it has two or more, is taken off
    each candidate's).  One step: a lean to judge on the next ones (:func:`still_off`)."""
    if any(not steps[i] >= TIE_GRAD_WARM for i in pair):
        return None
    own = _own_moves(pair, dev, sig, dp)
    if own is None:
        return None
    for j, k in ((0, 1), (1, 0)):
        (d, z), (dq, zq) = own[j], own[k]
        if (z >= TIE_GRAD_Z and d >= math.log(TIE_GRAD_RATIO) and abs(zq) <= TIE_GRAD_CALM
                and d - dq >= math.log(TIE_GRAD_RATIO)):
            return j, _why(d, z, dq, zq)
    return None


def still_off(pair: list[int], dev: np.ndarray, sig: np.ndarray, dp: np.ndarray
              ) -> dict[str, Any] | None:
    """A tie judged on a step after its split (detector.step_numerics ``_tie_steps``): the
    first of ``pair`` (positions) off -- its deviation from its level before the split
    (``dev``, in ``sig`` of that level's spread, less its replica's move as :func:`tiebreak`
    takes it) at least TIE_GRAD_RATIO and TIE_GRAD_Z, and TIE_GRAD_RATIO over its peer's --
    with what says so; None when not (or a grad norm not sent).  The peer's own calm is not
    asked: a few percent of its shard's noise against the spread of one level says nothing
    (a corrupted copy's peer trains on)."""
    own = _own_moves(pair, dev, sig, dp)
    if own is None:
        return None
    (d, z), (dq, zq) = own
    if z >= TIE_GRAD_Z and d >= math.log(TIE_GRAD_RATIO) and d - dq >= math.log(TIE_GRAD_RATIO):
        return _why(d, z, dq, zq)
    return None


def _why(d: float, z: float, dq: float, zq: float) -> dict[str, Any]:
    return {"grad_norm_jump": round(math.exp(d), 3), "grad_norm_jump_z": round(z, 1),
            "peer_grad_norm_change": round(math.exp(dq), 3), "peer_grad_norm_z": round(zq, 1)}


def _own_moves(pair: list[int], dev: np.ndarray, sig: np.ndarray, dp: np.ndarray
               ) -> list[tuple[float, float]] | None:
    """Each of ``pair``'s deviation less its replica's move (its other ranks' median
    deviation when it has two or more), and that in its spread; None when one sent none."""
    own: list[tuple[float, float]] = []
    for i in pair:
        if dev[i] != dev[i]:
            return None
        mates = (dp == dp[i]) & (dev == dev)
        mates[i] = False
        shift = float(np.median(dev[mates])) if count_nonzero(mates) >= 2 else 0.0
        d = float(dev[i]) - shift
        own.append((d, d / float(sig[i])))
    return own


def lean_ok(rank: Any, v: Any, last_step: int, clock: float) -> bool:
    """Whether a restored held tie (the job monitor's ``_tie_lean``: rank -> ``[onset_ts, run,
    peer, level, peer's level, spread, peer's spread, split step, judged steps]``) is one
    ``_tie_steps`` could have left (revA31 6): the split step no later than the job's last
    (``last_step``), the onset finite and not past ``clock``, a peer that is another rank, a
    run short of naming (< TIE_STEPS) within the window, finite levels, spreads > 0.  A forged
    split step of 2**62 held a pair for ever: its later splits and steps judged nothing."""
    if not (type(rank) is int and type(v) is list and len(v) == 9
            and all(type(x) in (int, float) and math.isfinite(x) for x in v)
            and all(type(v[k]) is int for k in (1, 2, 7, 8))):
        return False
    onset, run, peer, _, _, sig, sig_q, first, judged = v
    return (onset <= clock and 0 <= run < TIE_STEPS and peer != rank and 0 <= first <= last_step
            and sig > 0.0 and sig_q > 0.0 and 0 <= judged < TIE_WINDOW + TIE_STEPS)


def decided(pair: dict[int, list[float]], losers: set[int]) -> list[int]:
    """Candidates of a tie that lost a majority vote (``losers``): each leaves ``pair`` with
    its partner (the other candidate agrees with the majority: healthy).  Returns them."""
    out = [r for r in pair if r in losers]
    for rank in out:
        partner = pair.pop(rank, None)
        if partner is not None and len(partner) > 2:
            pair.pop(int(partner[2]), None)
    return out


def tie_over(ts: float, step: int | None, note: str, job: str, tenant: str | None,
             cluster: str | None) -> Finding:
    """The job's tie cleared: no candidate left in the monitor's ``pair``."""
    return Finding(ts, ts, "checksum_pair", "sdc", "unknown", Scope.of_job(job), False, True,
                   0.0, {"step": step, "note": note}, job, tenant, cluster)


# -- one replica's loss, again and again ---------------------------------------------------
#
# Corruption in one replica's forward or backward pass that the all-reduce averages into
# every replica's gradient leaves the checksums agreeing: what shows is that replica's loss
# (and its ranks' gradient norm) far off the other replicas' on the steps it strikes.  A hard
# batch does the same once, on any replica; so one outlier step is nothing.  A replica is a
# suspect when its outlier steps of the last LOSS_WINDOW_STEPS steps are more than chance
# allows twice over: (1) their share of all the replicas' there, were every replica equally
# likely to draw them (the binomial tail, times the replicas: any one of them could have) --
# a job-wide rise of outliers (new data) is no replica's; and (2) their number, at the job's
# own long-run rate of outliers per replica-step (the Poisson tail, times the replicas) -- a
# job whose data is heavy-tailed (outliers every few dozen steps) sees 5 of 6 on one replica
# by chance in a long run (1-16 false pages in 100k steps, Student-t noise, without it).
LOSS_RATIO_FLOOR = 1.25     # a replica's loss at least this many times the replicas' median
LOSS_Z = 6.0                # ... and this many robust sigmas of the replicas' spread
LOSS_MIN_REPLICAS = 3       # with two, neither is the odd one out
LOSS_WINDOW_STEPS = 512     # steps (with a loss) the outliers are counted over; as many
#                             quiet steps resolve the page
LOSS_EVENTS_KEPT = 64       # outlier steps remembered (the oldest go first)
LOSS_MIN_SPIKES = 5         # a replica's outlier steps before it can be a suspect
LOSS_ALPHA = 1e-2           # (1): chance of its share if outliers fell on any replica alike
LOSS_RATE_ALPHA = 1e-5      # (2): chance of its count at the job's rate
LOSS_RATE_HALF_LIFE = 5000  # steps: the memory of that rate
LOSS_RATE_PRIOR = (1.0, 2000.0)  # outliers, replica-steps: the rate before the job's own
LOSS_FLAGGED_KEPT = 16      # replicas paged at once (each needs LOSS_MIN_SPIKES kept events)
LOSS_LEARN_EVERY = 64       # steps between samples of the replicas' spread
LOSS_LEARN_ALPHA = 0.2      # its smoothing (~5 samples)
LOSS_SEVERITY = 0.6         # as a GPU's repeated gradient-norm outliers (detector.steps)
_MAD_TO_SIGMA = 1.4826
_NODES_NAMED = 8


def binomial_tail(c: int, n: int, p: float) -> float:
    """P(X >= c) for X ~ Binomial(n, p)."""
    return min(1.0, sum(math.comb(n, k) * p ** k * (1.0 - p) ** (n - k) for k in range(c, n + 1)))


def _poisson_tail(c: int, mu: float) -> float:
    """P(X >= c) for X ~ Poisson(mu)."""
    term = total = math.exp(-mu)
    for k in range(1, c):
        term *= mu / k
        total += term
    return max(0.0, 1.0 - total)


def check_loss(x: Any) -> bool:
    """Whether a restored :class:`ReplicaLoss` has this module's shapes and bounds (review27:
    its fields came back as any type -- a ``rate`` of one number failed the job's next step)."""
    def nums(v: Any, n: int) -> bool:  # (an event's grad-norm ratio may be NaN: none sent)
        return type(v) is list and len(v) == n and all(type(u) in (int, float) for u in v)
    return (type(x) is ReplicaLoss and type(x.seq) is int and type(x.scale) in (int, float)
            and type(x.events) is list and len(x.events) <= LOSS_EVENTS_KEPT + 1
            and all(nums(e, 6) and type(e[1]) is int for e in x.events)
            and type(x.flagged) is dict and len(x.flagged) <= LOSS_FLAGGED_KEPT + 1
            and all(type(k) is int and nums(v, 2) for k, v in x.flagged.items())
            and nums(x.rate, 3) and type(x.rate[2]) is int)


class ReplicaLoss:
    """A job's loss outliers by replica (the job monitor's ``_losses``): plain data, bounded.

    ``seq`` counts the job's steps with a loss; ``scale`` is the replicas' spread of
    ``log(loss)`` (robust sigma, smoothed); ``events`` the latest outlier steps as
    ``[seq, dp_rank, log loss ratio, log grad-norm ratio, ts, step]``; ``flagged`` the
    replicas paged, ``dp_rank -> [onset_ts, seq of its latest outlier]``; ``rate`` the
    job's outliers and replica-steps (decayed) and its replicas at the last full look.
    """

    __slots__ = ("seq", "scale", "events", "flagged", "rate")

    def __init__(self) -> None:
        self.seq = 0
        self.scale = 0.0
        self.events: list[list[float]] = []
        self.flagged: dict[int, list[float]] = {}
        self.rate = [0.0, 0.0, 0]

    def step(self, step: int, loss: np.ndarray, buf: Any, groups: np.ndarray,
             decided_ts: float, job: str, tenant: str | None, cluster: str | None
             ) -> list[Finding]:
        """One decided step: ``loss`` per message (NaN: none sent); ``buf`` the step's columns
        (detector.steps._StepBuffer: ``dp_array()``, ``grad``, ``hw``, ``ts``); ``groups``
        each message's peer group.  Returns the findings: a replica paged or resolved."""
        self.seq += 1
        seq = self.seq
        out: list[Finding] = []
        if self.flagged:
            for dp in [d for d, v in self.flagged.items() if seq - v[1] >= LOSS_WINDOW_STEPS]:
                del self.flagged[dp]
                out.append(Finding(decided_ts, decided_ts, "loss_outlier", "sdc", "unknown",
                                   Scope.of_replica(job, dp), False, True, 0.0,
                                   {"step": step, "note": f"no loss outlier for "
                                    f"{LOSS_WINDOW_STEPS} steps"}, job, tenant, cluster,
                                   None, dp))
        rate = self.rate
        keep = 0.5 ** (1.0 / LOSS_RATE_HALF_LIFE)
        rate[0] *= keep
        rate[1] = rate[1] * keep + rate[2]
        thr = max(math.log(LOSS_RATIO_FLOOR), LOSS_Z * self.scale)
        learn = seq % LOSS_LEARN_EVERY == 0 or not rate[2]
        hi, lo = float(loss.max()), float(loss.min())
        if not learn and lo > 0.0 and hi < lo * math.exp(thr):
            return out  # (the usual step: all replicas' losses within the threshold)
        ok = loss == loss  # (NaN: not sent)
        dp = buf.dp_array()
        if not ok.all():
            loss, dp = loss[ok], dp[ok]
        if not len(loss) or float(loss.min()) <= 0.0:
            return out  # (a loss that can be <= 0 -- a policy loss -- has no ratios)
        if len(loss) < LOSS_MIN_REPLICAS:
            return out
        lg = np.log(loss)
        reps, inv = np.unique(dp, return_inverse=True)
        n_rep = rate[2] = len(reps)
        if n_rep < LOSS_MIN_REPLICAS:
            return out
        rv = np.empty(n_rep)
        rv[inv] = lg if n_rep == len(lg) else group_median_scale(lg, dp)[0]
        dev = rv - float(np.median(rv))
        mad = float(np.median(np.abs(dev))) * _MAD_TO_SIGMA
        if learn:
            self.scale = mad if self.scale == 0.0 else self.scale + LOSS_LEARN_ALPHA * (
                mad - self.scale)
        hit = (dev > max(thr, LOSS_Z * mad)).nonzero()[0]
        if not len(hit) or 2 * len(hit) >= n_rep:
            return out  # (none, or no minority: the step's data, not a replica)
        gdev = self._grad_dev(buf, groups, ok, inv, n_rep)
        ts = np.asarray(buf.ts, dtype=float)[ok] if not ok.all() else np.asarray(buf.ts)
        events = self.events
        for i in hit.tolist():
            d = int(reps[i])
            events.append([seq, d, round(float(dev[i]), 4), round(float(gdev[i]), 4),
                           float(ts[inv == i].min()), step])
            rate[0] += 1.0
            if d in self.flagged:
                self.flagged[d][1] = seq
        while events and (seq - events[0][0] >= LOSS_WINDOW_STEPS
                          or len(events) > LOSS_EVENTS_KEPT):
            del events[0]
        for i in hit.tolist():
            d = int(reps[i])
            if d in self.flagged or len(self.flagged) >= LOSS_FLAGGED_KEPT:
                continue
            mine = [e for e in events if e[1] == d]
            if len(mine) < LOSS_MIN_SPIKES:
                continue
            chance = n_rep * binomial_tail(len(mine), len(events), 1.0 / n_rep)
            if chance > LOSS_ALPHA:
                continue
            # (its own outliers of the window left out: the rate is the rest of the job's)
            q = (max(0.0, rate[0] - len(mine)) + LOSS_RATE_PRIOR[0]) / (
                rate[1] + LOSS_RATE_PRIOR[1])
            by_rate = n_rep * _poisson_tail(len(mine), q * min(seq, LOSS_WINDOW_STEPS))
            if by_rate > LOSS_RATE_ALPHA:
                continue
            self.flagged[d] = [mine[0][4], seq]
            out.append(self._page(d, mine, len(events), n_rep, (chance, by_rate, q), step, buf,
                                  decided_ts, job, tenant, cluster))
        return out

    @staticmethod
    def _grad_dev(buf: Any, groups: np.ndarray, ok: np.ndarray, inv: np.ndarray,
                  n_rep: int) -> np.ndarray:
        """Each replica's ``log(grad_norm)`` over its peer groups' medians (its ranks'
        median; NaN where it sent none): evidence beside the loss."""
        g = np.array(buf.grad, dtype=float)[ok]
        out = np.full(n_rep, np.nan)
        good = g > 0.0
        if good.sum() < LOSS_MIN_REPLICAS:
            return out
        lg = np.log(g[good])
        d = lg - group_median_scale(lg, groups[ok][good])[0]
        med, _, _ = group_median_scale(d, inv[good])
        out[inv[good]] = med
        return out

    def _page(self, dp: int, mine: list[list[float]], total: int, n_rep: int,
              chance: tuple[float, float, float],
              step: int, buf: Any, decided_ts: float, job: str, tenant: str | None,
              cluster: str | None) -> Finding:
        mates = buf.dp_array() == dp
        nodes = sorted({buf.hw[i][0] for i in mates.nonzero()[0].tolist()})
        where = ", ".join(nodes[:_NODES_NAMED]) + (
            f" and {len(nodes) - _NODES_NAMED} more" if len(nodes) > _NODES_NAMED else "")
        steps = [int(e[5]) for e in mine]
        grad = [round(math.exp(e[3]), 2) if e[3] == e[3] else None for e in mine]
        return Finding(
            decided_ts, mine[0][4], "loss_outlier", "sdc", "unknown", Scope.of_replica(job, dp),
            True, True, LOSS_SEVERITY,
            {"step": step, "replica": dp, "outlier_steps": steps,
             "loss_ratios": [round(math.exp(e[2]), 2) for e in mine],
             "grad_norm_ratios": grad,
             "other_replicas_outliers": total - len(mine), "replicas_compared": n_rep,
             "window_steps": LOSS_WINDOW_STEPS, "chance_share": float(f"{chance[0]:.2g}"),
             "chance_count": float(f"{chance[1]:.2g}"),
             "outliers_per_replica_step": float(f"{chance[2]:.2g}"),
             "nodes": nodes[:_NODES_NAMED], "attributable": False,
             "note": f"replica {dp}'s loss was >= {LOSS_RATIO_FLOOR:g}x the other replicas' on "
                     f"{len(mine)} of the last {LOSS_WINDOW_STEPS} steps, the others' on "
                     f"{total - len(mine)}; checksums agree (an all-reduce averages the "
                     "corruption into every replica): one hard batch is one step, the same "
                     "replica again and again is its hardware",
             "next_diagnostic": (
                 f"rerun step {steps[-1]} of replica {dp} on other GPUs (Megatron rerun state "
                 "machine): a loss the rerun reproduces is the data, one it does not is the "
                 f"replica's hardware; then `dcgmi diag -r 4` on {where}")},
            job, tenant, cluster, None, dp)


# -- one rank's gradient-norm spikes, again and again (grad_outlier) ----------------------
#
# A rank whose local grad norm stands out from its peers' on one step is most often its batch
# (a hard sample: blind35's one rank x1.8-2.6, ~1 in 40 steps somewhere in the job); corruption
# on one GPU strikes the same rank again and again (blind34: x3-12 one step in 4-9).  So a
# rank's spikes page only when so many so close together are beyond what the job's own rate
# of spikes explains: its latest ``c`` spikes within ``d`` steps, at the rate ``lam`` a
# rank-step the rest of the job spikes at (decayed, with a prior before the job's own), would
# start ``n * lam * P(Poisson(lam * d) >= c - 1)`` such clusters a step by chance among its
# ``n`` ranks -- at most SPIKE_ALPHA (about one false page a job in 1/SPIKE_ALPHA steps).
# Spikes are counted at two sizes, each with its own rate and prior: any (robust z >=
# Thresholds.grad_z, x1.8 at the floor of the spread) and big ones (BIG_SPIKE_Z times that,
# x3.3): a batch's spikes are common and moderate, a wrong GPU's often gross (blind34 x3-12,
# tests' x8-12) -- two gross ones close together on one rank of a quiet job page, two moderate
# ones need a job whose rate makes them rare.  Round 44 paged any two within ~50 steps: every
# false positive of blind35 (F3).  The prior is one spike in SPIKE_PRIOR_STEPS rank-steps in a
# job of SPIKE_PRIOR_RANKS ranks or more, and one in as many *job* steps as a job of that size
# takes for them in a smaller one: a hard sample is one batch, wherever it lands, so a 3-rank
# job's rank sees one ~5x as often as a 16-rank job's, and a small job's rank-steps come too
# slowly for its own rate to take over soon (sdc47, revA46 F6: healthy 3-16-rank pure-DP jobs
# with a hard sample one step in 40 paged grad_outlier 4 of 18 runs, all in their first 533
# steps: 3 hard samples on one rank of 3 in 62 steps read as 1e-7 at 1 in 2,000 rank-steps).
# Likewise the rank's own spikes, taken out of the job's rate in a large job (a wrong GPU's
# must not raise the bar it is judged by), are a share of n / SPIKE_PRIOR_RANKS taken out in a
# smaller one: of 3 ranks, a rank's own are a third of the job's evidence, and 4 hard samples
# on one rank of 3 in 80 steps, none on the others, is chance (3 x 3^-4 = 0.04), not 6e-7.
# A wrong GPU's spikes in a small job page by the big ones' count (its own taken out whole:
# big spikes are rare in a healthy job of any size, x3.3 and more).
# One spike alone pages when it is gross: a rank's local norm GROSS_SPIKE (log) over its peer
# group's median on one step, its replica's other ranks not (a flipped exponent in its
# gradients before the all-reduce hands them to every replica: revA46 F7, x100-x10^4, never
# paged).  A hard sample is x1.8-2.6, a wrong GPU's repeated spikes x3-12 (blind34), an
# attention-logit blow-up moves every rank alike; no blind corpus's step records hold a
# one-rank spike past x20 of its peers (sdc47's scan).
GROSS_SPIKE = math.log(50.0)
SPIKES_KEPT = 4              # a rank's latest spike steps kept, at each size
SPIKE_ALPHA = 1e-6           # chance clusters a job-step that still page
BIG_SPIKE_Z = 2.0            # a big spike: this many times Thresholds.grad_z
SPIKE_RATE_HALF_LIFE = 5000  # steps: the memory of the job's spike rates
SPIKE_PRIOR_STEPS = 2000.0   # rank-steps a spike, before the job's own rate ...
BIG_SPIKE_PRIOR_STEPS = 20000.0  # ... and a big one
SPIKE_PRIOR_RANKS = 16       # a job this large weighs the prior in rank-steps; smaller: less
SPIKE_RATE_KEEP = 0.5 ** (1.0 / SPIKE_RATE_HALF_LIFE)


def spike_rate_ok(x: Any) -> bool:
    """Whether a restored job spike rate (``[spikes, big spikes, rank-steps]``, decayed) is
    one."""
    return (type(x) is list and len(x) == 3
            and all(type(v) in (int, float) and math.isfinite(v) and v >= 0.0 for v in x))


def spike_cluster(seq: np.ndarray, now: int, spikes: float, rank_steps: float,
                  prior_steps: float, n: int, share_own: bool = False
                  ) -> dict[str, Any] | None:
    """Whether a rank that spiked on step ``now`` (a count of the job's evaluated steps) has
    spiked beyond chance: ``seq`` its latest spikes' steps (oldest first, 0: none, ``now``
    last); ``spikes`` and ``rank_steps`` the job's (decayed; its own of ``seq`` are taken
    out), ``prior_steps`` the rank-steps a spike before the job's own rate (weighed as that
    many rank-steps in a job of SPIKE_PRIOR_RANKS ranks or more, less in a smaller one); ``n``
    the ranks compared; ``share_own``: its own spikes are taken out of the job's in a share of
    n / SPIKE_PRIOR_RANKS only (moderate spikes, a small job's hard samples), else all.
    Returns what says so (the least likely cluster's), or None.

    >>> seq = np.array([0.0, 0.0, 50.0, 58.0])  # (two in a quiet 16-rank job)
    >>> spike_cluster(seq, 58, 2.0, 928.0, BIG_SPIKE_PRIOR_STEPS, 16)["spikes"]
    2
    >>> spike_cluster(seq, 58, 30.0, 40000.0, SPIKE_PRIOR_STEPS, 32) is None  # (1 in 40 steps)
    True
    """
    small = min(1.0, n / SPIKE_PRIOR_RANKS)
    own = float(count_nonzero(seq > 0.0)) * (small if share_own else 1.0)
    lam = (max(0.0, spikes - own) + 1.0) / (rank_steps + prior_steps * small)
    best = None
    for c in range(2, len(seq) + 1):
        first = float(seq[-c])
        if first <= 0.0:
            break
        d = now - first + 1.0
        chance = n * lam * _poisson_upper(c - 1, lam * d)
        if chance <= SPIKE_ALPHA and (best is None or chance < best[2]):
            best = (c, d, chance)
    if best is None:
        return None
    return {"spikes": best[0], "within_steps": int(best[1]),
            "chance_per_step": float(f"{best[2]:.2g}"),
            "job_spikes_per_rank_step": float(f"{lam:.2g}")}


# -- one rank's gradient norm off its peers' for minutes (grad_drift) ---------------------
#
# A GPU whose results drift on one kernel (blind35 F1: its local norm x1.18-1.35 its DP peers'
# at every step, its checksum in agreement -- the all-gather hands it the right weights, the
# wrong gradients it contributes are averaged in) is never one step's spike: it is a level.
# DP peers (one tensor/pipeline shard, other batches) draw their norms from one distribution,
# so each rank's deviation from its peer group's median is noise around zero; its smoothed
# deviation (DRIFT_ALPHA, each step's clipped at DRIFT_CLIP: a hard sample moves it by a
# sixteenth of that) standing DRIFT_Z robust sigmas of the job's ranks' smoothed deviations
# above their median, and at least DRIFT_RATIO, for DRIFT_STEPS steps in a row, pages its GPU
# sdc/unknown -- unless its replica's other ranks stand as high (its replica's batches, not
# its GPU).  It must also have stood so for DRIFT_MIN_S, and be the job's only rank off its
# peers for DRIFT_LOOKBACK_STEPS: in a mixture-of-experts job the router's hot expert raises
# its rank's local norm (blind34 moe-s: x1.15 for tens to hundreds of steps) and moves on --
# another rank goes off soon after -- where a drifting GPU stays the only one.  Resolved when
# its smoothed deviation is back under half the ratio.
DRIFT_ALPHA = 1.0 / 16.0     # smoothing of a rank's deviation from its peers (log)
DRIFT_CLIP = math.log(1.4)   # a step's deviation counts at most this much (a hard sample)
DRIFT_RATIO = math.log(1.1)  # the smoothed deviation that may page: x1.1
DRIFT_Z = 8.0                # ... and these robust sigmas of the job's ranks' above their median
DRIFT_FLOOR = 0.01           # floor of that spread (log)
DRIFT_STEPS = 20             # steps in a row it stands so before its GPU is paged ...
DRIFT_MIN_S = 60.0           # ... and seconds (a hot expert moves on within 20 s at 70 ms)
DRIFT_LOOKBACK_STEPS = 2000  # steps in which no other rank of the job may have stood off
DRIFT_SEVERITY = 0.6         # as repeated spikes (grad_outlier)


def drift_judge(e: np.ndarray, dp: np.ndarray, cand: np.ndarray
                ) -> tuple[np.ndarray, float, float]:
    """Which of a step's ranks stand out by their smoothed deviations ``e`` (their replicas
    ``dp``; ``cand``: those at least DRIFT_RATIO): over the job's median by DRIFT_Z robust
    sigmas, and over their replica's other ranks' median by half their own (when it has two
    others or more).  Returns them (a mask), the median and the spread."""
    center = float(np.median(e))
    spread = max(float(np.median(np.abs(e - center))) * _MAD_TO_SIGMA, DRIFT_FLOOR)
    out = cand & ((e - center) > DRIFT_Z * spread)
    for i in out.nonzero()[0].tolist():
        mates = dp == dp[i]
        mates[i] = False
        if count_nonzero(mates) >= 2 and float(np.median(e[mates])) - center > 0.5 * (
                e[i] - center):
            out[i] = False  # (its replica's batches: every rank of it stands as high)
    return out, center, spread


# -- the whole job's loss up and staying up (loss_climb) ----------------------------------
#
# Corruption that every replica shares leaves nothing to vote on: optimizer state flipped on
# one rank and spread by the distributed optimizer's all-gather (blind35 F2) hands every DP
# peer the same wrong weights -- every checksum agrees -- and every replica's loss goes up
# x1.25-1.4 and stays up, every rank's gradient norm x3-6 with it.  Routine excursions of the
# whole job come back: a logit blow-up (x1.4-2.2 for 4-9 steps, recovered in ~25), a bad
# batch, the warm-up's fall.  So the job's loss (the median of its ranks', smoothed over a few
# steps) standing CLIMB_RATIO over its own level from before (following it down at once, up
# slowly while within half of that, held while above) for CLIMB_STEPS steps and CLIMB_MIN_S
# seconds is a climb.  A loss is not known to fall (sdc47, revA46 F1/F2/F3/F13): DESIGN has no
# field saying what ``loss`` is -- GRPO's beta x KL rises from ~0 by design, a value loss or a
# reward model's wanders x1.5 both ways, a data-mix phase raises it x1.3 for good, a pretraining
# spike recovers over hundreds of steps -- and none of these moves the gradient norms.  So a
# climb pages only with a second sign: the job's gradient norm (the median of its ranks',
# smoothed and levelled as the loss) standing CLIMB_NORM_RATIO over its own level at the same
# time.  Then one escalation at job scope, sdc/unknown, not attributable: nothing in the
# contract's fields names a GPU (DESIGN's smallest scope it can localize).  A job that sends no
# gradient norm has no second sign: its loss alone pages nobody.  Resolved when the loss is back
# within half the ratio.  A restart from a checkpoint (its loss is the checkpoint's:
# JobMonitor._restart) learns the levels anew.
CLIMB_RATIO = math.log(1.2)  # the job's loss over its level (log) that may page
CLIMB_STEPS = 100            # steps in a row over it (a blow-up recovers in ~25) ...
CLIMB_MIN_S = 90.0           # ... and seconds
CLIMB_FAST = 0.25            # smoothing of the job's loss, a step
CLIMB_LEARN = 1.0 / 64.0     # ... and of its level, a step (while within half the ratio)
CLIMB_WARM = 32              # steps before its level can page
CLIMB_NORM_RATIO = math.log(1.5)  # the second sign: the job's grad norm over its level (log)
CLIMB_SEVERITY = 0.6
# the state (JobMonitor._loss_climb): [smoothed log loss, level, steps learned, steps over in a
# row, onset ts, paged (0/1), last step, smoothed log grad norm, its level, its steps learned]
CLIMB_NEW = (0.0, 0.0, 0, 0, 0.0, 0, -1, 0.0, 0.0, 0)
_CLIMB_COUNTS = (2, 3, 5, 6, 9)
_CLIMB_OLD = 7  # (a state before sdc47: no grad-norm level, learnt anew)


def climb_ok(x: Any) -> bool:
    """Whether a restored ``_loss_climb`` is one (CLIMB_NEW's length, or a state before sdc47's
    seven, finite numbers, counters ints)."""
    return (type(x) is list and len(x) in (len(CLIMB_NEW), _CLIMB_OLD)
            and all(type(v) in (int, float) and math.isfinite(v) for v in x)
            and all(type(x[k]) is int and x[k] >= -1 for k in _CLIMB_COUNTS if k < len(x)))


def _level(fast: float, level: float, n: int, x: float, ratio: float
           ) -> tuple[float, float, float]:
    """One step ``x`` (a log) into a smoothed value ``fast`` and its ``level`` (``n`` steps
    learned): the level follows it down at once, up slowly while within half ``ratio`` over
    it, and is held while above.  Returns the new fast value, level and how far over it the
    fast value stood before the level moved."""
    fast = x if n == 0 else fast + CLIMB_FAST * (x - fast)
    over = fast - level
    if n == 0 or over < 0.0:
        level = fast
    elif over < 0.5 * ratio:
        level += (1.0 / (n + 1) if n < CLIMB_WARM else CLIMB_LEARN) * (fast - level)
    return fast, level, over


def loss_climb(st: list[Any], step: int, loss: np.ndarray, grad: np.ndarray, ts: float,
               decided_ts: float, job: str, tenant: str | None, cluster: str | None
               ) -> Finding | None:
    """One decided step of the job's losses (``loss``, NaN: none sent) and gradient norms
    (``grad``, likewise; ``ts`` its first record's time) into ``st`` (CLIMB_NEW's shape): the
    job's page when its loss has stood CLIMB_RATIO over its level for long enough and its
    gradient norm CLIMB_NORM_RATIO over its own, its resolution when back, else None."""
    if len(st) < len(CLIMB_NEW):
        st.extend(CLIMB_NEW[len(st):])
    if step <= st[6]:
        return None  # (a step decided after a later one: its loss is no news)
    st[6] = step
    have = loss[loss == loss]
    if not len(have) or not float(have.min()) > 0.0:
        return None  # (none, or a loss that can be <= 0 -- a policy loss -- has no ratios)
    n = int(st[2])
    fast, level, over = _level(float(st[0]), float(st[1]), n, float(np.median(np.log(have))),
                               CLIMB_RATIO)
    st[0], st[1], st[2] = fast, level, min(n + 1, 1 << 30)
    g = grad[grad > 0.0]  # (NaN compares false: none sent; the median of logs: two norms at
    # float's max would overflow their mean)
    gn = int(st[9])
    if len(g):
        gfast, glevel, _ = _level(float(st[7]), float(st[8]), gn,
                                  float(np.median(np.log(g))), CLIMB_NORM_RATIO)
        st[7], st[8], st[9] = gfast, glevel, min(gn + 1, 1 << 30)
    g_over = float(st[7]) - float(st[8]) if int(st[9]) > CLIMB_WARM else math.nan
    out = None
    if n >= CLIMB_WARM and over >= CLIMB_RATIO:
        if st[3] == 0:
            st[4] = ts
        st[3] += 1
        if (not st[5] and st[3] >= CLIMB_STEPS and ts - st[4] >= CLIMB_MIN_S
                and g_over >= CLIMB_NORM_RATIO):
            st[5] = 1
            ratio, g_ratio = math.exp(over), math.exp(g_over)
            out = Finding(
                decided_ts, float(st[4]), "loss_climb", "sdc", "unknown", Scope.of_job(job),
                True, True, CLIMB_SEVERITY,
                {"step": step, "loss_ratio": round(ratio, 3), "steps_over": int(st[3]),
                 "loss": round(math.exp(fast), 4), "loss_level": round(math.exp(level), 4),
                 "grad_norm_ratio": round(g_ratio, 3), "attributable": False,
                 "note": f"the job's loss has stood x{ratio:.2f} its level for {st[3]} steps "
                         f"({ts - st[4]:.0f} s) and not come back (a blow-up or a bad batch "
                         f"recovers within ~25 steps), its gradient norm x{g_ratio:.2f} its "
                         "own level with it (a loss that rises by design, wanders or meets a "
                         "new data mix moves no norm); every replica alike, so no vote of "
                         "checksums or losses can say which GPU: corruption every replica "
                         "shares (optimizer state spread by the all-gather) or the run "
                         "diverging -- either way the weights since the onset are suspect",
                 "next_diagnostic": "restore the last checkpoint before the onset and rerun "
                 "the steps since on other nodes (Megatron rerun state machine): a rerun "
                 "whose loss stays at the level is corruption on the job's GPUs (then `dcgmi "
                 "diag -r 4` on its nodes); one that climbs alike is the training diverging"},
                job, tenant, cluster)
    else:
        st[3] = 0
        if st[5] and over < 0.5 * CLIMB_RATIO:
            st[5] = 0
            out = Finding(decided_ts, decided_ts, "loss_climb", "sdc", "unknown",
                          Scope.of_job(job), False, True, 0.0,
                          {"step": step, "note": "the job's loss is back at its level"},
                          job, tenant, cluster)
    return out


def _poisson_upper(c: int, mu: float) -> float:
    """P(X >= c) for X ~ Poisson(mu), summed upward (no cancellation for a small ``mu``)."""
    if mu >= 1.0:
        return _poisson_tail(c, mu)
    term = math.exp(-mu) * mu ** c / math.factorial(c)
    total = 0.0
    for k in range(c + 1, c + 60):
        total += term
        if term < total * 1e-16:
            break
        term *= mu / k
    return min(1.0, total)
