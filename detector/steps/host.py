"""A rank late by its host path (``host_late``), a node carrying its job's host
time (detector.host_time), its host time risen (detector.host_rise).
"""

from __future__ import annotations

import math
from collections import Counter
from typing import Any

import numpy as np

from detector import host_events, host_rise, host_straggler, host_time
from detector.alerts import Scope
from detector.findings import Finding
from detector.steps.common import _SAVE_GAP_STEPS, _floats, _ints, _smoothed, _StepBuffer
from models import lag1
from models.numpy_c import clip, count_nonzero
from models.peer_stats import MAD_TO_SIGMA, group_median, median

# A raised host_late run whose least-squares line has grown to this share of a step's work, from
# under this fraction of it at the run's start, is escalated at once (JobMonitor._host_grew)
_HOST_GROWN = 0.15
_HOST_GROWN_FROM = 0.5
# Two or more ranks of one node late by their host path from the job's (re)start -- over
# host_offset_max through the warm-up, their run unbroken since -- are escalated once that run
# has lasted _START_STEPS steps past the warm-up (JobMonitor._host_from_start), not after
# host_hold_s and host_node_page_s: the holds wait for a stall mid-job to catch up (blind2's
# healthy input pipeline: it starts at its height and falls) and for one GPU's PCIe replay rate
# (six DCGM samples); a host the node's ranks share, late from before its job's first step,
# has no backlog to catch up and no one link (blind23 L1: loaders on the far socket, paged
# ~115 steps after the job's first).  Unbroken: the run began within _START_SLACK steps of the
# warm-up's end; flat: its line's end at least _START_KEPT of its start (a loader warming up
# falls).  60 steps, not 10 (revA33 1): a node's cold page cache or dataset shard, or loaders
# warming up one by one, late for its job's first 20-60 steps, was paged at the 20th and held
# ~10 minutes; blind23 L1 is now paged ~70 steps after the job's first (was ~115 before start33).
# A node late 70 steps and more from the start is paged (the trade: tests/test_lead33.py).
_START_STEPS = 60
# A part of a node late so, the rest of it on time from the start, is escalated _START_PART_STEPS
# past the warm-up (start35, blind23 L1: a NUMA mis-binding, one socket's GPUs 10-17 % late): a
# node's cold start is the node's -- its page cache, filesystem client, container image and CPU
# clocks are shared by every rank on it (revA33 1's shapes: all its ranks late from step 0, or
# its loaders back at their pace one by one) -- while a part late alike with its mates on time
# from the first step has a host of its own: one socket's CPUs, memory and PCIe root (a process
# bound to the far socket), or one PCIe switch -- half the node's ranks at most, the rest on
# time (most of a node late is its cold start with a few ranks' shards cached: revA35 3).  The
# trade: a cold start of a part of a node
# alone (a few ranks' shards cold while their mates' are cached) lasting past the warm-up's 10th
# step is paged (tests/test_start35.py).
_START_PART_STEPS = 10
_PART_LEARNT = 0.5  # (late from the start: this share of host_offset_max learnt; on time: less)
_START_SLACK = 2
_START_KEPT = 0.75

# After a step every rank spent in neither compute nor collectives (a checkpoint snapshot, an
# evaluation pass: the job's median host time _EVENT_SHARE of its step over its usual), a slow
# rank found within _AFTER_EVENT_S that is under _AFTER_EVENT_RATIO slower is held
# (JobMonitor._hold_after_event): an async checkpoint's write-back slows each node from host
# memory to storage for 30-80 s, one node ending last (blind10 K3: 1.03-1.07x for ~12 steps,
# a different node each checkpoint), and fades; a fault stays and is reported after.
_EVENT_SHARE = 0.05
# ... unless that step was _SYNC_SAVE_STEPS of the job's usual steps or more in neither (the
# job's median host time): a synchronous save, a pause, a context extension's re-shard -- the
# write was the step itself; an async checkpoint's snapshot is a copy to host memory, a
# fraction of a step (blind10 K3, K7: 0.23-0.34 of a step), and its write-back follows.
_SYNC_SAVE_STEPS = 2.0
# A one-rank unit that is its job's rank 0 or last rank recurring (JobMonitor._periodic): its
# latest episodes' first steps kept (_LOG_EPISODES, for _LOG_UNITS units a job), a gap within
# _LOG_SLACK steps of a multiple of the shortest is the framework's period.
_LOG_EPISODES = 6
_LOG_UNITS = 4
_LOG_SLACK = 2
# Each rank's host excess smoothed over ~4 steps (_host_recent): what its node mates are
# judged on beside a lone straggler (host_straggler.lone) -- one step of a noisy loader is not
# a mate late with it; a node's shared trouble lasting a few steps is.
_RECENT_ALPHA = 0.25


def _check_host(self, step: int, slots: np.ndarray, groups: np.ndarray, ts: np.ndarray,
                compute: np.ndarray, buf: _StepBuffer, decided_ts: float,
                out: list[Finding]) -> np.ndarray | None:
    """A rank late by its host path while its compute is normal: ``host_late``, evidence.

    A rank's time in neither compute nor collectives, ``step_ms - compute_ms - comm_ms``
    (host-to-device copies, data loading, the CPU, its PCIe link), is what it adds to
    every step besides its compute: in synchronous training its peers wait for it in
    their collectives.  A downtrained PCIe link that replays little, a node whose CPUs
    are throttled or starved, a rank pinned to the far socket make that time stand out
    of its peers' while ``compute_ms`` is normal, so the compute CUSUM cannot see it.
    Each rank's host time less its pipeline stage's median (a stage's ranks load and copy
    alike; stages differ), in shares of the step's median busy time (``step_ms -
    comm_ms``: how much later it arrives), less its own learned offset (up to
    ``host_offset_max``, from the warm-up: rank 0's logging), in units of the job's
    noise, feeds a second robust CUSUM (the compute one's k, h and clip); an alarm whose
    run averages ``host_min_effect`` of a step's work (less ``slow_effect_z`` standard
    errors) on a rank the compute CUSUM has not reported, once the run has lasted
    ``host_hold_s``, is a ``host_late`` finding -- evidence, not a verdict: it joins a
    problem firing on the GPU (a PCIe replay rate's ``gpu_hardware``), and pages nobody
    on its own.  It clears as the CUSUM does.

    Why not a page: blind2's healthy "slow input pipeline on one tray for 3 min" (+45 %
    of a step in host time) is, by this signal, what blind3's K2 without its compute is
    (+14-17 % for 4-5 min); as a paging slow rank it added 16 FP node escalations to
    blind2 seeds 0..3 (0 before), and no duration or size separates the two without
    tuning on them (BENCHMARKS "steps, round 12").

    The hold: the one cause of a late host path telemetry names is a PCIe link's replay
    rate (detector.gpu_health), which needs six DCGM samples of replays; as a paging slow
    rank without it, a downtrained link was escalated ``unknown`` 26 s into blind3 K4 and
    its replay rate's ``gpu_hardware`` came after (attribution 2/2 -> 0/2, seeds 8..9).

    What does not page: a loader stall on one rank for one step (clipped at
    ``slow_z_clip``: one step adds at most 3 of the 10 an alarm needs, and drains), a
    checkpoint or any slowdown every rank's host shares (the stage's median moves with
    it), a job whose ranks all have the same host time, sequence-length imbalance (it
    moves compute and comm, not the host part).  A producer without ``compute_ms`` is
    scored on ``step_ms - comm_ms`` by the compute CUSUM already (host time included);
    one without ``comm_ms`` tells no rank's host time (every ``step_ms`` is the
    slowest rank's): not checked.

    Returns the ranks' host times (at least 0; read only), or None when a rank has none
    (NaN): what :meth:`_host_rise` judges, computed here once (it computed them again).
    """
    cfg = self.cfg
    busy = _floats(buf.step_ms) - _floats(buf.comm)  # compute + host: not waiting
    host = busy - compute
    if count_nonzero(np.isnan(host)):
        return None  # (a rank without comm_ms: no host times this step)
    np.maximum(host, 0.0, out=host)  # (rounding: step_ms may trail compute + comm)
    if len(host) < cfg.min_peers:
        return host
    scale = median(busy)
    if not scale > 0.0:
        return host
    pp = buf.pp
    if pp.count(pp[0]) != len(pp):  # (a C loop over the tuple: no numpy call)
        # (the medians alone: group_median_scale's MADs were half of this method's cost)
        med, size, k = group_median(host, groups >> 24)
        e = (host - med) / scale
        if not k >= cfg.min_peers:  # (stages of one size with their peers: every rank's)
            e = np.where(size >= cfg.min_peers, e, 0.0)
        job_med = median(host)
    else:  # (one stage: the usual job without pipeline parallelism)
        med = job_med = median(host)
        e = (host - med) / scale
    self._host_events(step, slots, buf, host, job_med, ts, decided_ts, out)
    r = slots
    self._host_sigma = _smoothed(self._host_sigma,
                                 median(np.abs(e), scratch=True) * MAD_TO_SIGMA,
                                 cfg.slow_sigma_alpha)
    sigma = max(self._host_sigma, cfg.host_sigma_floor)
    base = self._host_base[r]
    over = e - base
    self._host_dev[r] = over
    if self._evaluated <= cfg.warmup_steps:
        # An offset from the job's start, up to host_offset_max, is this rank's own
        # (rank 0 logs, a rank on the far socket); beyond it, a path slow from before
        # the job began (blind3 K4: a link trained down before the log) still shows.
        self._host_base[r] = clip(base + 0.2 * over, 0.0, cfg.host_offset_max)
        return host
    z = over / sigma
    healthy = ~self._reported[r] & ~self._host.alarmed[r]
    self._hl_xy, self._hl_xx, self._hl_n = lag1.update(
        (self._hl_xy, self._hl_xx, self._hl_n), z[healthy], self._host_dev_z[r][healthy])
    self._host_dev_z[r] = z
    learn = np.abs(z) < 3.0
    if count_nonzero(self._host.alarmed):
        learn &= ~self._host.alarmed[r]
    self._host_base[r] = np.where(learn, clip(base + cfg.slow_baseline_alpha * over,
                                             0.0, cfg.host_offset_max), base)
    _, cleared, score = self._host.step(r, z, ts)
    in_run = score > 0.0
    n_was = self._host_n[r]
    # (each run's offset at its start: a run is judged new by what was learnt before it)
    self._host_base0[r] = np.where(in_run & (n_was == 0), base, self._host_base0[r])
    self._lone_streak[r] = np.where(in_run, self._lone_streak[r]
                                    + (over >= cfg.host_min_effect), 0)
    self._host_recent[r] += _RECENT_ALPHA * (over - self._host_recent[r])
    self._host_sum[r] = np.where(in_run, self._host_sum[r] + over, 0.0)
    self._host_tx[r] = np.where(in_run, self._host_tx[r] + n_was * over, 0.0)
    self._host_n[r] = np.where(in_run, n_was + 1, 0)
    new = start = r[:0]
    # A lone straggler is judged on its run's steps, alarmed or not yet (_page_lone)
    lone_at = np.flatnonzero((self._lone_streak[r] >= host_straggler.STEPS)
                             & ~self._host_rep[r] & ~self._reported[r] & ~self._slow.alarmed[r])
    if len(lone_at):
        self._page_lone(step, r, lone_at, host, over, z, groups, buf, sigma, decided_ts, out)
    if count_nonzero(self._host.alarmed):
        # (a rank paged alone just now is reported: not host_late evidence as well)
        at = (self._host.alarmed[r] & ~self._host_rep[r] & ~self._reported[r]
              & ~self._slow.alarmed[r]).nonzero()[0]
        if len(at):
            s_at = r[at]
            n = np.maximum(self._host_n[s_at], 1)
            mean = self._host_sum[s_at] / n
            margin = cfg.slow_effect_z * sigma / np.sqrt(n)
            big = mean - margin >= cfg.host_min_effect
            held = decided_ts - self._host.onset_ts[s_at] >= cfg.host_hold_s
            # Once one rank's run is held long enough, every rank late enough goes with it
            # on this step: a node's ranks leave zero a step or two apart by their noise
            # (when this paged, blind3_hostonly k8s-mixed s8: a GPU escalation beside its
            # node's).
            if count_nonzero(big & held):
                new = at[big]
            elif count_nonzero(big) >= 2:
                start = new = self._host_from_start(r, at[big], z[at[big]])
    if len(cleared):
        self._clear_lone(step, cleared, buf, decided_ts, out)
        cleared = cleared[self._host_rep[cleared]]
    # A raised host_late whose run has now lasted host_page_s is told again, with how long
    # (the correlator escalates it: Correlator._host_lasting) -- on the step that shows it,
    # so the end of the input (time run on without steps) confirms no duration.
    prev, self._host_seen_ts = self._host_seen_ts, decided_ts
    lasting = grew = r[:0]
    if count_nonzero(self._host_rep):
        due = self._host.onset_ts[r] + self._host_page_after(r)
        lasting = np.flatnonzero(self._host_rep[r] & (due <= decided_ts) & (due > prev))
        grew = self._host_grew(r)
        if len(grew):
            lasting = np.union1d(lasting, grew)
            self._host_told[r[grew]] = True
        if len(cleared) and len(lasting):
            lasting = lasting[~np.isin(r[lasting], cleared)]
    if len(start):
        # (raised and told lasting on one step: the host they share, late from the start)
        lasting = np.union1d(lasting, start)
        self._host_told[r[start]] = True
    if len(new) == 0 and len(cleared) == 0 and len(lasting) == 0:
        return host
    dp_of = dict(zip(buf.ranks, buf.dp, strict=True))
    rank_of = self._rank_of
    for i, again in [(i, False) for i in new.tolist()] + [(i, True) for i in lasting.tolist()]:
        sl = int(r[i])
        rank = rank_of[sl]
        self._host_rep[sl] = True
        mean = float(self._host_sum[sl]) / int(max(self._host_n[sl], 1))
        out.append(self._finding(
            rank, dp_of[rank], "host_late", "slow_node", "unknown", decided_ts,
            float(self._host.onset_ts[sl]), True, min(0.95, 0.5 + mean * 3),
            {"step": step, "rank": rank, "basis": "host_time",
             **self._host_evidence(sl, float(host[i]), float(
                 med if np.ndim(med) == 0 else med[i]), sigma, "every rank of the node late "
                 "alike: the node's CPU clocks (`turbostat`) and its input pipeline"),
             "peer_median_busy_ms": round(scale, 2),
             "baseline_ratio": round(math.exp(float(self._base[sl])), 4),
             "rule": f"time in neither compute nor collectives (step_ms - compute_ms - "
                     f"comm_ms) over its stage's median, averaging >= "
                     f"{cfg.host_min_effect:.0%} of a step's work, its compute normal: "
                     "its host path (PCIe link, CPU, data loading)",
             **({"lasting_s": round(decided_ts - float(self._host.onset_ts[sl]), 1)}
                if again else {}),
             **({"growing": self._host_trend(sl)} if again and i in grew else {})},
            verdict=False))
    for sl in cleared.tolist():
        rank = rank_of[sl]
        self._host_rep[sl] = self._host_told[sl] = False
        out.append(self._finding(rank, dp_of.get(rank), "host_late", "slow_node", "unknown",
                                 decided_ts, decided_ts, False, 0.0, {"step": step},
                                 verdict=False))
    return host


def _page_lone(self, step: int, r: np.ndarray, cand: np.ndarray, host: np.ndarray,
               over: np.ndarray, z: np.ndarray, groups: np.ndarray, buf: _StepBuffer,
               sigma: float, decided_ts: float, out: list[Finding]) -> np.ndarray:
    """Page, as ``slow_rank`` findings, the ranks of ``cand`` (indices into ``r``: host runs
    late ``host_straggler.STEPS`` steps or more, not reported) that straggle alone by their
    own host path while the job waits for them (:mod:`detector.host_straggler`); returns
    their indices.  Only a run that is new (the rank had not learned the most host offset
    a rank may own when it began; a rank late from the job's start keeps host_late's
    holds unless :meth:`_lone_from_start`), late on enough of its steps
    (``host_straggler.steps_for`` of them, half its steps or more) and still going (this
    step over the CUSUM's allowance) whose mean is clear of host_min_effect by
    ``slow_effect_z`` standard errors is paged -- alarmed in its CUSUM or not yet: the run's
    own mean is the test (a rank +10 % of a step under +-30 % loader jitter reaches the
    CUSUM's h in ~15 steps, its mean clear in 7-10: revA35 5).  A rank paged so is held
    alarmed: it clears as an alarmed run does."""
    cfg = self.cfg
    sl = r[cand]
    # (the job's host noise not measured yet -- its lag-1 not known: nothing paged, the
    # count kept on; measured, the steps its runs ask for)
    hl = (self._hl_xy, self._hl_xx, self._hl_n)
    if not lag1.known(hl, len(self._rank_of)):
        return cand[:0]
    rho = lag1.rho_of(hl)
    late = self._lone_streak[sl]
    n = np.maximum(self._host_n[sl], 1)
    # (a run's mean over n steps of noise whose lag-1 is rho has the spread of n (1-rho)/(1+rho)
    # independent steps': host_straggler.spread)
    margin = cfg.slow_effect_z * sigma * host_straggler.spread(rho) / np.sqrt(n)
    keep = ((z[cand] > cfg.slow_k) & (late >= host_straggler.steps_for(rho)) & (2 * late >= n)
            & (self._host_sum[sl] / n - margin >= cfg.host_min_effect))
    old = keep & (self._host_base0[sl] >= cfg.host_offset_max)
    if count_nonzero(old):
        keep &= ~old | self._lone_from_start(sl)
    cand = cand[keep]
    if not len(cand):
        return cand
    hw = buf.hw
    names: dict[str, int] = {}
    node = _ints([names.setdefault(h[0], len(names)) for h in hw])
    comm = _floats(buf.comm)
    n_run = self._host_n[r]
    run = np.where(n_run > 0, self._host_sum[r] / np.maximum(n_run, 1), 0.0)
    # (a mate slow in compute counts as late too: with TP inside the node its mates wait
    # for the late rank inside their compute -- the node's PCIe rules, _hold_for_ecc)
    paged = host_straggler.lone(cand, node, host, comm, over, run, self._host_recent[r],
                                self._host.alarmed[r] | self._slow.alarmed[r], groups,
                                cfg.host_min_effect, sigma)
    dp_of = dict(zip(buf.ranks, buf.dp, strict=True))
    for i in paged.tolist():
        s = int(r[i])
        rank = self._rank_of[s]
        self._reported[s] = self._lone_rep[s] = True
        # (paged before its CUSUM reached h: alarmed now, so it clears as an alarmed run
        # does -- slow_clear_steps quiet steps -- and teaches its offset nothing meanwhile)
        self._host.alarmed[s] = True
        peers = np.flatnonzero(groups == groups[i])
        peers = peers[peers != i]
        mean = float(self._host_sum[s]) / int(max(self._host_n[s], 1))
        out.append(self._finding(
            rank, dp_of[rank], "slow_rank", "slow_node", "unknown", decided_ts,
            float(self._host.onset_ts[s]), True, min(0.95, 0.5 + mean * 3),
            {"step": step, "rank": rank, "basis": "host_time",
             **self._host_evidence(s, float(host[i]), float(np.median(host[peers])), sigma,
                                   "then its loader process (CPU affinity, NUMA node, "
                                   "storage reads)"),
             "comm_ms": round(float(comm[i]), 2),
             "peer_median_comm_ms": round(float(np.median(comm[peers])), 2),
             # (none: its host or its link, untold -- escalated at the node, Correlator)
             "node_mates": int(count_nonzero(node == node[i])) - 1,
             "rule": "time in neither compute nor collectives (step_ms - compute_ms - "
                     "comm_ms) over its peers', its node's other ranks not, the job "
                     "waiting for it (its comm_ms the lowest): its own host path "
                     "(PCIe link, loader)"}))
    return paged


def _lone_from_start(self, sl: np.ndarray) -> np.ndarray:
    """Per slot of ``sl`` (host runs of ranks that learnt the most host offset a rank may own
    in the warm-up): whether it is a rank late alone from the job's (re)start to page as a
    lone straggler (:meth:`_page_lone`) -- its run unbroken since the warm-up's end
    (``_START_SLACK``), ``_START_STEPS`` steps long, its line not fallen under ``_START_KEPT``
    of its start (:meth:`_host_trend`), and neither the job's rank 0 nor its last rank.

    A link trained down before the job, a loader bound to the far socket, one GPU's PCIe
    switch: late from the first step and for good, its peers waiting for it, its node mates
    on time (host_straggler.lone, as for a run begun mid-job) -- was held host_page_s (600 s:
    revA35 8, not paged in 225 s).  What the holds are for stays held: a cold shard or a
    loader warming up (late for its job's first 20-60 steps, falling: revA33 1's bound), and
    rank 0, which logs, evaluates and writes the checkpoint's metadata for the job in every
    framework -- its own host time from the start is the application's (tests/test_start33.py:
    +8 % of a step, never paged), and the job's last rank, which is Megatron-LM's logging
    rank (``print_rank_last``: the loss lives on the last pipeline stage) with the same
    application-own host time (revA36 F4: +8 % from the first step escalated at its GPU,
    3/3 seeds).  Which of the two logs is the framework's; nothing in host time tells a link
    trained down from the application's own work, so both keep the holds -- a link whose
    replays DCGM counts is still named on its GPU through host_late's path (gpu_health's
    replay rate).  The trade: one rank's shard cold for longer than the warm-up's 60th step
    is paged; a link trained down under rank 0 or the last rank is held host_page_s."""
    past = self._evaluated - self.cfg.warmup_steps
    last = max(self._rank_of)
    ok = ((self._host_n[sl] >= max(past - _START_SLACK, _START_STEPS))
          & np.array([self._rank_of[s] not in (0, last) for s in sl.tolist()], dtype=bool))
    for i in np.flatnonzero(ok).tolist():
        t = self._host_trend(int(sl[i]))
        ok[i] = t["to_share"] >= _START_KEPT * t["from_share"]
    return ok


def _host_evidence(self, sl: int, host_ms: float, peer_ms: float, sigma: float,
                   then: str) -> dict[str, Any]:
    """What a finding of slot ``sl``'s host run says (``host_ms`` its host time this
    step, ``peer_ms`` its peers', ``sigma`` the job's host noise; ``then``: the diagnostic
    after its link's)."""
    node, gpu = self._hw[sl] or ("?", 0)
    runs = int(max(self._host_n[sl], 1))
    return {"host_ms": round(host_ms, 2), "peer_median_host_ms": round(peer_ms, 2),
            "host_excess_over_run": round(float(self._host_sum[sl]) / runs, 4),
            "run_steps": runs,
            "compute_ratio_to_peers": round(math.exp(float(self._slow_dev[sl])), 4),
            "host_baseline": round(float(self._host_base[sl]), 4),
            "noise_sigma": round(sigma, 4), "cusum": round(float(self._host.score[sl]), 2),
            "next_diagnostic": (
                f"its host path: `nvidia-smi -q -d PCIE -i {gpu}` on {node} (link "
                "generation and width below the maximum: reseat or RMA the link), "
                f"`dcgmi diag -r 2` on {node} (PCIe bandwidth); {then}")}


def _clear_lone(self, step: int, cleared: np.ndarray, buf: _StepBuffer,
                decided_ts: float, out: list[Finding]) -> None:
    """Clear the lone stragglers (:meth:`_page_lone`) among ``cleared`` (slots whose host
    run cleared) still reported slow (another path may have withdrawn them: a restart, a
    move)."""
    mine = cleared[self._lone_rep[cleared]]
    if not len(mine):
        return
    dp_of = dict(zip(buf.ranks, buf.dp, strict=True))
    for s in mine.tolist():
        self._lone_rep[s] = False
        if self._reported[s]:
            self._reported[s] = False
            rank = self._rank_of[s]
            out.append(self._finding(rank, dp_of[rank], "slow_rank", "slow_node",
                                     "unknown", decided_ts, decided_ts, False, 0.0,
                                     {"step": step}))


def _lone_unlasted(self, out: list[Finding]) -> None:
    """The end of the input (:meth:`expire` at +inf, its waiting steps decided): a lone
    straggler (:meth:`_page_lone`) whose run had not lasted ``host_straggler.LONE_S`` by the
    job's last step is withdrawn as of that step.  The correlator escalates such a rank only
    once its run has lasted LONE_S (Correlator._hold_for_ecc), and time run on without steps
    shows no duration -- as host_late's lasting is told on the step that shows it.  A live
    worker's job stopping there has the rank withdrawn (:meth:`_retract_slow`) and the run
    dropped (Correlator._lone_dropped); the replay's end of input escalated it when the
    hold's timer came (host39, open: a per-rank loader burst in a one-rank-a-node job's last
    30 steps escalated at its node 17 s after the job's last step).  A run that lasted
    LONE_S of its job's steps is left to page."""
    n = len(self._rank_of)
    last = self._last_step_ts
    for s in np.flatnonzero(self._lone_rep[:n] & self._reported[:n]).tolist():
        if float(self._host.onset_ts[s]) + host_straggler.LONE_S <= last:
            continue
        self._lone_rep[s] = self._reported[s] = False
        rank = self._rank_of[s]
        out.append(self._finding(
            rank, None, "slow_rank", "slow_node", "unknown", last, last, False, 0.0,
            {"step": self._last_step, "rank": rank,
             "note": "the input ended before its run lasted "
                     f"{host_straggler.LONE_S:g} s of its job's steps"}))


def _host_from_start(self, r: np.ndarray, big: np.ndarray, z: np.ndarray) -> np.ndarray:
    """Indices into ``r`` (of ``big``: alarmed host runs, not raised, averaging
    host_min_effect; ``z`` their scores this step) of ranks late by their host path since
    the job's (re)start, two or more on one node: each learnt the most host offset it may
    (``host_offset_max``) in the warm-up, its run began within ``_START_SLACK`` steps of
    the warm-up's end and has lasted ``_START_STEPS`` steps, goes on (this step over the
    CUSUM's allowance: a loader back at its peers' pace leaves its score up a few steps),
    and its line has not fallen under ``_START_KEPT`` of its start (:meth:`_host_trend`).
    Raised at once and told lasting (the correlator's escalation, at the node: the host
    they share) -- see ``_START_STEPS``.

    A rank alone keeps the holds (rank 0's logging, one loader's shard, one GPU's link: a
    PCIe replay rate names it); a node's ranks late only from mid-job keep them too (an
    input pipeline stalled and catching up: blind2's healthy 3 minutes)."""
    past = self._evaluated - self.cfg.warmup_steps
    if past < _START_PART_STEPS:
        return big[:0]
    sl = r[big]
    ok = ((self._host_n[sl] >= max(past - _START_SLACK, _START_PART_STEPS))
          & (self._host_base[sl] >= self.cfg.host_offset_max) & (z > self.cfg.slow_k))
    keep = []
    for i in np.flatnonzero(ok).tolist():
        t = self._host_trend(int(sl[i]))
        if t["to_share"] >= _START_KEPT * t["from_share"]:
            keep.append(i)
    hw = self._hw
    keep = [i for i in keep if hw[int(sl[i])] is not None]
    # (a whole node: its runs _START_STEPS long; a part of one: _START_PART_STEPS)
    whole = [i for i in keep if self._host_n[sl[i]] >= _START_STEPS]
    nodes = Counter(hw[int(sl[i])][0] for i in whole)
    part = Counter(hw[int(sl[i])][0] for i in keep)
    parts = {n for n, k in part.items() if k >= 2 and nodes[n] < 2 and self._host_part(r, n)}
    return np.array([big[i] for i in keep if nodes[hw[int(sl[i])][0]] >= 2 and i in whole
                     or hw[int(sl[i])][0] in parts], dtype=np.intp)


def _host_part(self, r: np.ndarray, node: str) -> bool:
    """Whether ranks of ``node`` late from the start (:meth:`_host_from_start`) are a part of
    it whose mates were on time from the start: of the job's ranks on it this step (``r``)
    each is either late so (``_PART_LEARNT`` of the most host offset, ``host_offset_max``,
    learnt in the warm-up -- a noisy host's quiet steps teach a little back after it -- and
    its host CUSUM alarmed) or on time (less learnt, no alarm), and at least as many on time
    as late: a socket's GPUs are half its node's, a PCIe switch's fewer (a node's cold start
    with one or two ranks' shards cached is most of it late: revA35 3).  A loader back at its
    pace keeps most of its learnt offset (it unlearns slow_baseline_alpha a step, only while
    within 3 sigma: ~35 steps to half) with no alarm: neither, so its node's cold start is
    not a part's -- see ``_START_PART_STEPS``."""
    hw = self._hw
    mine = np.array([s for s in r.tolist() if hw[s] is not None and hw[s][0] == node],
                    dtype=np.intp)
    learnt = self._host_base[mine] >= _PART_LEARNT * self.cfg.host_offset_max
    alarmed = self._host.alarmed[mine]
    on_time = int(count_nonzero(~learnt & ~alarmed))
    late = int(count_nonzero(learnt & alarmed))
    return on_time >= late and on_time + late == len(mine)


def _host_trend(self, sl: int) -> dict[str, float]:
    """A host_late run's least-squares line over its steps: its excess (shares of a step's
    work) at the run's first step and now, and the run's steps."""
    n = int(self._host_n[sl])
    mean = float(self._host_sum[sl]) / max(n, 1)
    half = (n - 1) / 2.0
    sii = n * (n * n - 1) / 12.0
    slope = (float(self._host_tx[sl]) - half * float(self._host_sum[sl])) / sii \
        if sii > 0.0 else 0.0
    return {"from_share": round(mean - slope * half, 4),
            "to_share": round(mean + slope * half, 4), "run_steps": n}


def _host_grew(self, r: np.ndarray) -> np.ndarray:
    """Indices into ``r`` of raised host_late runs, not yet told for it, whose line has
    grown to ``_HOST_GROWN`` of a step's work from under ``_HOST_GROWN_FROM`` of that at
    the run's start: told again now, escalated as a lasting one (Correlator._host_lasting).

    A leak grows (blind14 N4: a rank's loader workers copying pages, its time in neither
    rising linearly from 0 to 0.73 s of a 0.9 s step over 12 min): waiting host_page_s
    (600 s) for it, as for a flat run, paged it at 70 % of the step, not when it became
    material.  What the wait is for -- an input pipeline catching up (blind2's healthy
    3-minute stall, +45 % of a step from its first step) -- starts at its height and
    falls; a slow CPU or link (blind3) is flat: neither grows from little."""
    at = np.flatnonzero(self._host_rep[r] & ~self._host_told[r])
    if not len(at):
        return at
    keep = []
    for i in at.tolist():
        t = self._host_trend(int(r[i]))
        if t["to_share"] >= _HOST_GROWN and t["from_share"] <= _HOST_GROWN_FROM \
                * t["to_share"]:
            keep.append(i)
    return np.array(keep, dtype=np.intp)


def _host_events(self, step: int, slots: np.ndarray, buf: _StepBuffer, host: np.ndarray,
                 host_med: float, ts: np.ndarray, decided_ts: float,
                 out: list[Finding]) -> None:
    """The job's host time this step (``host_med`` its median): a job-wide host step
    (every rank's: a checkpoint's snapshot, an evaluation) noted for
    :meth:`_hold_after_event`; after the warm-up each node's share (:meth:`_host_share`)."""
    sm = buf.step_ms
    step_ms = sorted((sm[0], sm[len(sm) // 2], sm[-1]))[1]  # (all about alike: synchronous)
    share = host_med / max(step_ms, 1e-9)
    # A save, an evaluation pass is a rare step: _SAVE_GAP_STEPS "events" in a row are the
    # job's own level (a job loading 6 % of its step from its first step; a job-wide rise
    # that stays), learnt as on any other step -- not every step an event for good.
    run = self._event_run = (self._event_run + 1 if share - self._host_level >= _EVENT_SHARE
                             else 0)
    if 0 < run < _SAVE_GAP_STEPS:
        ev = self._event_ts
        # (from 5 usual steps before it: a CUSUM's run may begin a few steps early, on noise)
        at = float(ts.min()) - 0.005 * min(self._usual_step_ms or step_ms, step_ms)
        if at - ev[0] > 1.0:
            since = at - ev[0]
            ev[1], ev[0] = ev[0], at
            long = self._event_long
            long[1], long[0] = long[0], host_med >= _SYNC_SAVE_STEPS * (
                self._usual_step_ms or step_ms)
            if since >= _SAVE_GAP_STEPS * self._period:
                self._host_at_event(step, slots, buf, host, at, since, decided_ts, out)
    else:
        self._host_level = _smoothed(self._host_level, min(share, 1.0), 0.1)
        self._usual_step_ms = _smoothed(self._usual_step_ms, step_ms, 0.1)
    if self._evaluated > self.cfg.warmup_steps:
        self._host_share(step, slots, buf, host, step_ms, decided_ts, out)


def _host_at_event(self, step: int, slots: np.ndarray, buf: _StepBuffer, host: np.ndarray,
                   event_ts: float, since_s: float, ts: float, out: list[Finding]) -> None:
    """A job-wide host event (a checkpoint save, from ``event_ts``): a node slow at its every
    one raised, or cleared when it is not (detector.host_events)."""
    code = self._host_codes(slots, buf)
    table = self._he = host_events.grow(self._he, len(self._hs_keys))
    for i, up, at in host_events.judge(table, code[slots], self._hs[:, host_time.STAGE],
                                       host, event_ts, since_s):
        node = host_time.node_of(self._hs_keys[i])
        out.append(Finding(
            ts, at, "host_events", "slow_node", "unknown", Scope.of_node(node), up, True,
            0.7 if up else 0.0,
            {"step": step, **host_events.evidence(node, table[i], since_s)} if up
            else {"step": step}, self.job, self.tenant, self.cluster))


def _host_codes(self, slots: np.ndarray, buf: _StepBuffer) -> np.ndarray:
    """Each slot's unit of detector.host_time, made again when the job's ranks moved."""
    code = self._hs_code
    if (self._hs_code_at != (self._moves, self.restarts, id(self._hs_keys))
            or len(code) < len(self._rank_of)
            or (self._hs_code_some and count_nonzero(code[slots] == -1))):
        code = self._host_units(slots, buf)
    return code


def _host_share(self, step: int, slots: np.ndarray, buf: _StepBuffer, host: np.ndarray,
                step_ms: float, ts: float, out: list[Finding]) -> None:
    """A node whose ranks carry the job's excess host time for minutes (detector.host_time):
    its ``host_share`` finding raised, or cleared."""
    code = self._host_codes(slots, buf)
    lay = self._hs_layout
    if lay is not None and len(slots) == len(lay[0]):  # (every rank: the usual step)
        found = host_time.judge_regular(self._hs, lay, slots, host, step_ms, ts,
                                        self.cfg.host_node_page_s)
    else:
        found = host_time.judge(self._hs, code[slots], host, step_ms, ts,
                                self.cfg.host_node_page_s)
    if len(self._hs):
        new = np.flatnonzero(self._hs[:, host_time.EP_LAST] == ts)
        if len(new):
            self._note_episodes(step, new, code)
    for i, up, at in found:
        mine = np.flatnonzero(code == i)
        if up and (count_nonzero(self._host_rep[mine])
                   or (len(mine) == 1 and self._rank_of[int(mine[0])] in (
                       0, max(self._rank_of)) and self._periodic(self._hs_keys[i]))):
            # Its ranks are host_late already (their own CUSUM, past the warm-up's
            # offset): that path escalates them (_check_host, host_node_page_s); this
            # unit is looked at again next step (blind7 G5, tests/test_steps17.py).  A unit
            # of one rank that is the job's rank 0 or its last rank recurs by the framework's
            # own work -- logging, evaluation, a checkpoint's metadata, as _lone_from_start
            # holds them -- not by its host's (revA39 F4: every 100 steps, 18 of 18 paged),
            # when its episodes come every so many steps (:meth:`_periodic`).
            self._hs[i, host_time.RAISED] = 0.0
            continue
        key = self._hs_keys[i]
        out.append(Finding(
            ts, at, "host_share", "slow_node", "unknown",
            Scope.of_node(host_time.node_of(key)), up, True, 0.7 if up else 0.0,
            {"step": step, **host_time.evidence(key, self._hs[i], step_ms)} if up
            else {"step": step},
            self.job, self.tenant, self.cluster))


def _note_episodes(self, step: int, new: np.ndarray, code: np.ndarray) -> None:
    """The units of ``new`` (detector.host_time: an episode counted on this step) that are one
    rank, the job's rank 0 or its last: the step each episode began (its streak's first hot
    step) kept, the latest ``_LOG_EPISODES`` a unit, for :meth:`_periodic`."""
    last = max(self._rank_of)
    eps = self._log_eps
    for i in new.tolist():
        mine = np.flatnonzero(code == i)
        if len(mine) != 1 or self._rank_of[int(mine[0])] not in (0, last):
            continue
        key = self._hs_keys[i]
        began = step - max(int(self._hs[i, host_time.STREAK]), 1) + 1
        kept = eps.pop(key, [])[-(_LOG_EPISODES - 1):] + [began]
        eps[key] = kept  # (the latest unit last: the oldest goes first)
        while len(eps) > _LOG_UNITS:
            del eps[next(iter(eps))]


def _periodic(self, key: str) -> bool:
    """Whether the episodes of unit ``key`` (:meth:`_note_episodes`: rank 0's or the last
    rank's, alone on its node) came every so many steps: each gap between their first steps
    within ``_LOG_SLACK`` steps of a multiple of the shortest.

    The framework's own work on its logging rank comes on a step count (a metrics flush every
    100 steps, an evaluation every 500, a checkpoint's metadata every 1,000): its episodes'
    gaps are multiples of one period.  A failing loader or device stalls at drawn times: its
    gaps are not, and its node is paged as any other node's (revA40 F6: a loader stalling
    every 2-4 min, +8-20 % of a step for 3-6 steps, on rank 0's or the last rank's node was
    never paged, 6 of 6 runs).  Chance puts a drawn gap of 300 steps within 2 of a multiple
    of the shortest about 1 time in 60; all of two or more gaps, far less."""
    eps = self._log_eps.get(key, [])
    if len(eps) < 3:
        return True  # (too few to tell: the framework's, as before)
    gaps = [b - a for a, b in zip(eps, eps[1:], strict=False)]
    p = min(gaps)
    return p > 2 * _LOG_SLACK and all(
        abs(g - p * round(g / p)) <= _LOG_SLACK for g in gaps)


def _host_units(self, slots: np.ndarray, buf: _StepBuffer) -> np.ndarray:
    """Each slot's unit (detector.host_time): its node's ranks of its stage and, in a job
    with tensor parallelism, of its replica (new units named, up to MAX_UNITS)."""
    keys = self._hs_keys
    index = {k: i for i, k in enumerate(keys)}
    code = np.full(len(self._rank_of), -1, dtype=np.int64)
    tp_any = any(buf.tp)
    hw = self._hw
    stages: list[int] = []
    nodes: list[int] = []
    node_id: dict[str, int] = {}
    for s, pp, dp in zip(slots.tolist(), buf.pp, buf.dp, strict=True):
        h = hw[s]
        key = host_time.unit_key(h[0], pp or 0, dp if tp_any else None) if h else None
        i = index.get(key) if key is not None else -2
        if i is None:
            if len(keys) >= host_time.MAX_UNITS:
                i = -2
            else:
                if not node_id:  # (the nodes of the units named so far, in their order)
                    for k, row in zip(keys, self._hs.tolist(), strict=False):
                        node_id.setdefault(host_time.node_of(k), int(row[host_time.NODE]))
                i = index[key] = len(keys)
                keys.append(key)
                stages.append(pp or 0)
                nodes.append(node_id.setdefault(h[0], len(keys) - 1))
        code[s] = i
    if stages:
        self._hs = host_time.grow(self._hs, len(keys), np.array(stages, dtype=float),
                                  np.array(nodes, dtype=float))
    at = (self._moves, self.restarts, id(keys))
    if self._hs_code_at[1:] == at[1:] and self._hs_code_at[0] != at[0]:
        # The job's ranks moved (an elastic re-form renumbers its replicas): a unit that had
        # ranks before and has none now ends its run -- a run is one unit's steps in a row, and
        # one left standing would join a stall before the move to one after it (blind27 F4).
        old = self._hs_code
        gone = np.setdiff1d(old[old >= 0], code[code >= 0])
        if len(gone):
            host_time.end_runs(self._hs, gone)
    self._hs_code, self._hs_code_at = code, at
    self._hs_code_some = len(slots) < len(self._rank_of)  # (made from some ranks only)
    self._hs_layout = None if self._hs_code_some else host_time.regular(code)
    return code


def _host_share_withdraw(self, now: float, out: list[Finding]) -> None:
    """The job stopped stepping (a pause past job_stopped_steps, an evaluation pass
    among them): its raised nodes are cleared (a job gone for good must not leave a page
    open), their runs kept -- a run that goes on when the job steps again is raised again
    at once, within the correlator's quiet hold: the same page."""
    for signal, table, col in (("host_share", self._hs, host_time.RAISED),
                               ("host_events", self._he, host_events.RAISED)):
        if len(table):
            raised = table[:, col]
            for i in np.flatnonzero(raised).tolist():
                out.append(Finding(now, now, signal, "slow_node", "unknown",
                                   Scope.of_node(host_time.node_of(self._hs_keys[i])),
                                   False, True, 0.0, {"step": self._last_step}, self.job,
                                   self.tenant, self.cluster))
            raised[:] = 0.0


def _host_rise(self, step: int, slots: np.ndarray, buf: _StepBuffer, host: np.ndarray,
               ts: float, out: list[Finding]) -> None:
    """Each node's host time in this job against its own past and the job's other nodes
    (detector.host_rise): a node risen, or calm again -- evidence for the correlator's
    rule over the node's jobs (detector.host_node), any size of job.  ``host``: the
    ranks' host times, at least 0 (:meth:`_check_host`'s, which computes them once)."""
    code = self._hr_code
    if (self._hr_code_at != (self._moves, self.restarts, id(self._hr_keys))
            or len(code) < len(self._rank_of)):
        code = self._host_rise_nodes()
        self._host_rise_left(code, step, ts, out)
    sm = buf.step_ms
    step_ms = sorted((sm[0], sm[len(sm) // 2], sm[-1]))[1]  # (all about alike)
    for i, up, at in host_rise.judge(self._hr, code[slots], host, step_ms, ts):
        out.append(Finding(
            ts, at, "host_rise", "slow_node", "unknown", Scope.of_node(self._hr_keys[i]),
            up, False, 0.5 if up else 0.0,
            {"step": step, **host_rise.evidence(self._hr[i], step_ms)} if up
            else {"step": step}, self.job, self.tenant, self.cluster))


def _host_rise_nodes(self) -> np.ndarray:
    """Each slot's node (detector.host_rise; new ones named, up to MAX_NODES)."""
    keys = self._hr_keys
    index = {k: i for i, k in enumerate(keys)}
    code = np.full(len(self._rank_of), -2, dtype=np.int64)
    for s, h in enumerate(self._hw[:len(self._rank_of)]):
        if h is None:
            continue
        i = index.get(h[0])
        if i is None and len(keys) < host_rise.MAX_NODES:
            i = index[h[0]] = len(keys)
            keys.append(h[0])
        if i is not None:
            code[s] = i
    self._hr = host_rise.grow(self._hr, len(keys))
    self._hr_code, self._hr_code_at = code, (self._moves, self.restarts, id(keys))
    return code


def _host_rise_left(self, code: np.ndarray, step: int, ts: float,
                    out: list[Finding]) -> None:
    """Nodes risen for this job that none of its ranks runs on any more (a rank moved off a
    node, the job stepping on elsewhere): calm for it, their runs ended.  A node's judge
    runs only on the job's steps there, so without this the rise stood until the job
    stopped, and the node's later trouble of one other job made two (host_node)."""
    table = self._hr
    if not len(table) or not table[:, host_rise.RAISED].any():
        return
    here = np.zeros(len(table), dtype=bool)
    mine = code[code >= 0]
    here[mine[mine < len(table)]] = True
    for i in np.flatnonzero((table[:, host_rise.RAISED] != 0.0) & ~here).tolist():
        out.append(Finding(ts, ts, "host_rise", "slow_node", "unknown",
                           Scope.of_node(self._hr_keys[i]), False, False, 0.0,
                           {"step": step, "left": True}, self.job, self.tenant,
                           self.cluster))
        host_rise.forget(table, i)


def _host_rise_withdraw(self, now: float, out: list[Finding]) -> None:
    """The job stopped stepping: its risen nodes are calm for it (their runs kept)."""
    if len(self._hr):
        raised = self._hr[:, host_rise.RAISED]
        for i in np.flatnonzero(raised).tolist():
            out.append(Finding(now, now, "host_rise", "slow_node", "unknown",
                               Scope.of_node(self._hr_keys[i]), False, False, 0.0,
                               {"step": self._last_step}, self.job, self.tenant,
                               self.cluster))
        raised[:] = 0.0


def _host_share_reset(self) -> None:
    """The job restarted: every unit learnt anew (its ranks may run elsewhere now)."""
    self._hs_keys = []
    self._hs = np.zeros((0, host_time.NCOLS))
    self._he = np.zeros((0, host_events.NCOLS))
    self._log_eps = {}


def _host_page_after(self, r: np.ndarray) -> np.ndarray:
    """Per slot of ``r``: how long a raised host_late run lasts before it is told again to
    be escalated (Correlator._host_lasting): ``host_node_page_s`` where two or more of the
    job's ranks on its node are raised (the host they share: a node's memory under
    pressure, its CPUs), ``host_page_s`` for a rank alone (its own loader or link)."""
    cfg = self.cfg
    after = np.full(len(r), cfg.host_page_s)
    hw = self._hw
    nodes = Counter(hw[s][0] for s in np.flatnonzero(self._host_rep).tolist()
                    if hw[s] is not None)
    shared = {n for n, k in nodes.items() if k >= 2}
    if shared:
        for i, s in enumerate(r.tolist()):
            if self._host_rep[s] and hw[s] is not None and hw[s][0] in shared:
                after[i] = cfg.host_node_page_s
    return after


def _reset_host(self, m: np.ndarray | None) -> None:
    """Forget the host-time runs of slots ``m`` and, for ranks on other hardware, their
    learned host offsets (None: every slot's runs, the job stopped or restarted)."""
    if m is None:
        self._host.reset(np.arange(len(self._host.score)))
        self._host_rep[:] = self._host_told[:] = self._lone_rep[:] = False
        self._host_sum[:] = self._host_tx[:] = 0.0
        self._host_n[:] = self._lone_streak[:] = 0
        self._host_recent[:] = 0.0
        return
    self._host.reset(m)
    self._host_rep[m] = self._host_told[m] = self._lone_rep[m] = False
    self._host_sum[m] = self._host_tx[m] = 0.0
    self._host_n[m] = self._lone_streak[m] = 0
    self._host_base[m] = self._host_recent[m] = 0.0
