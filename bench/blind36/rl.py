"""blind36's RL post-training jobs (GRPO-style): rollout generation, reward scoring, training,
weight sync -- and how each maps onto DESIGN's step records.

Generation is decode-bound and a batch ends when its **longest answer** ends: response lengths
are lognormal a prompt, so a batch's time is the maximum of its draws (capped at the run's
``max_new_tokens``) x the time of one decode step. That is where RL's step-time noise comes from:
one engine's (or one replica's) batch of long answers makes its generation long with no fault.

``Disagg`` -- separate pools. A trainer job (TP8 x DP4) and a rollout job of TP2 inference
engines. Iteration i: the trainer broadcasts its weights to the engines (the **weight sync**, a
collective over the fabric: every trainer and engine rank blocked in it), the engines generate
round i while the trainer trains on round i-1 (one-step off-policy), the trainer waits for round
i-1's rewards when it is ahead, the next sync waits for the slower side. Records:
  - trainer: one a rank an optimizer step (K=3 an iteration); the first step of an iteration
    holds the wait for the engines and the sync (``comm_ms``: blocked in the broadcast) and the
    rollout wait (in neither);
  - rollout engines: one a rank a **round** (``step`` = the round, which is the weight version it
    generates with): from the sync's start to the engine's last token; ``comm_ms`` = the sync
    (+ for a TP partner, the time it waited on the slower GPU of the pair), ``compute_ms`` =
    prefill + decode. An engine idle between rounds is between steps (no record);
    ``param_checksum`` = the synced weights (every engine's shard agrees), no loss or grad_norm.

``Hybrid`` -- colocated (the same 64 GPUs switch phase, TP8 x DP8 in both). One record a rank an
iteration (one optimizer step an iteration): ``compute_ms`` = the rank's own generation +
training compute, ``comm_ms`` = its waits in collectives (the rollout all-gather waiting for the
slowest replica's generation, the TP group waiting for its slowest GPU, the gradient all-reduce),
the rest (resharding between engine and trainer layouts, reward scoring, a save) in neither.

Both: training compute x real PAI jitter (blind33's ``noise.stream``, 1.2 % CoV); GRPO's loss is
a clipped surrogate around zero (it changes sign, routine); ``grad_norm`` the rank's local norm;
``param_checksum`` after the optimizer step, every DP peer agrees.
"""

from __future__ import annotations

import hashlib
import math
import random
from dataclasses import dataclass, field

from bench.blind33.noise import stream
from bench.blind36.world import HBM_TAU_S, LIMIT_W, Burst, Ecc, Gpu, Log


@dataclass(frozen=True)
class Rank:
    rank: int
    node: str
    gpu: int
    tp: int
    dp: int


def longest(rng: random.Random, n: int, median: float, sigma: float, cap: int) -> int:
    """The longest of ``n`` answers (lognormal tokens), capped at ``cap`` (truncated)."""
    return min(cap, int(max(median * math.exp(sigma * rng.gauss(0, 1)) for _ in range(n))))


def _checksum(*parts) -> str:
    return hashlib.blake2b("|".join(map(str, parts)).encode(), digest_size=8).hexdigest()


@dataclass
class Gen:
    """Generation settings (a run's sampling config and the curriculum that changes it)."""

    prompts: int                      # answers a batch (an engine's or a replica's)
    median_tok: float
    sigma: float
    cap: int
    tok_ms: float                     # one decode step of the batch
    prefill_s: float
    raise_at: float = math.inf        # curriculum: from here longer answers allowed
    raise_x: float = 1.0
    raise_cap: int = 0
    long_p: float = 0.04              # a batch of hard prompts (its answers x long_x)
    long_x: tuple[float, float] = (1.8, 2.6)

    def tokens(self, rng: random.Random, t: float) -> tuple[int, bool]:
        late = t >= self.raise_at
        med = self.median_tok * (self.raise_x if late else 1.0)
        hard = rng.random() < self.long_p
        if hard:
            med *= rng.uniform(*self.long_x)
        return longest(rng, self.prompts, med, self.sigma, self.raise_cap if late else
                       self.cap), hard


def _step(log: Log, job: str, cluster: str, tenant: str, r: Rank, s: int, ts: float,
          step_ms: float, compute_ms: float, comm_ms: float, **extra) -> None:
    v = {"ts": round(ts, 3), "job": job, "step": s, "rank": r.rank, "node": r.node,
         "gpu": r.gpu, "step_ms": round(step_ms, 2), "compute_ms": round(compute_ms, 2),
         "comm_ms": round(comm_ms, 2), "tp_rank": r.tp, "pp_rank": 0, "dp_rank": r.dp}
    v.update(extra)
    v.update({"cluster": cluster, "tenant": tenant})
    log.add("telemetry.step", v)


@dataclass
class Disagg:
    """Separate trainer and rollout pools; the faults and routine shapes the story sets."""

    cluster: str
    tenant: str
    trainer: list[Rank]
    engines: list[tuple[Rank, Rank]]
    gpus: dict[tuple[str, int], Gpu]
    gen: Gen
    train_s: float
    k_steps: int = 3
    sync_s: tuple[float, float] = (1.9, 2.4)
    save: tuple[int, float] | None = None           # trainer step, seconds of save
    # faults
    slow_gen: tuple[str, int, float, float] | None = None   # node, gpu, from, decode x
    bad_port: tuple[str, int, float, float] | None = None   # node, nic, from, sync x
    xid: tuple[str, int, float, float] | None = None        # node, gpu, at, restart s
    ecc: dict[tuple, Ecc] = field(default_factory=dict)
    bursts: dict[tuple[str, int], list[Burst]] = field(default_factory=dict)
    stamps: dict[str, list[tuple[float, int, str, int]]] = field(default_factory=dict)
    round_at: dict[int, float] = field(default_factory=dict)   # round -> its generation start

    def run(self, log: Log, rng: random.Random, t0: float, t_end: float) -> None:
        trainer_nodes = sorted({r.node for r in self.trainer})
        engine_nodes = sorted({r.node for e in self.engines for r in e})
        n_train = int((t_end - t0) / self.train_s) + 8
        jitter = [stream(rng, n_train) for _ in self.trainer]
        level = [1.0 + rng.uniform(-0.004, 0.004) for _ in self.trainer]
        gen_level = [1.0 + rng.uniform(-0.005, 0.005) for _ in self.engines]
        down_until = -math.inf
        xid_done = False
        s = 0                                    # trainer's optimizer step
        prev_end = t0                            # trainer's last step end
        rollout_ready = t0 - 1.0                 # round i-1's rewards
        S = t0
        i = 0
        loss_mu = 0.0
        done = False
        while t_end > S and not done:
            W = rng.uniform(*self.sync_s) * (1.0 + 0.03 * rng.gauss(0, 1))
            sym = rcv = 0
            if self.bad_port and self.bad_port[2] <= S:
                W *= self.bad_port[3] * rng.uniform(0.9, 1.1)
                sym, rcv = rng.randrange(300, 3000), rng.randrange(5, 60)
            rate = 3.2e9 * 2.2 / W
            for node in trainer_nodes + engine_nodes:
                for k in range(8):
                    bad = self.bad_port and (node, k) == self.bad_port[:2] and sym
                    self.bursts.setdefault((node, k), []).append(
                        Burst(S, S + W, rate, sym if bad else 0, rcv if bad else 0))
            for g in self._gpus_of(trainer_nodes + engine_nodes):
                g.run(S, S + W, "sync", 165.0, 0.3)
            # -- the rollout round i
            E0 = S + W
            self.round_at[i] = E0
            finish = []
            for e, pair in enumerate(self.engines):
                if down_until > E0 and any((r.node, r.gpu) == self.xid[:2] for r in pair):
                    continue
                tok, hard = self.gen.tokens(rng, E0)
                if hard:
                    log.effect("long-answers", {"job": "grpo-gen", "dp_rank": e}, E0, E0 + 30)
                P = self.gen.prefill_s * rng.uniform(0.92, 1.08) * gen_level[e]
                D = tok * self.gen.tok_ms / 1000.0 * gen_level[e] * (1 + 0.01 * rng.gauss(0, 1))
                busy = {}
                for r in pair:
                    p, d = P, D
                    if self.slow_gen and (r.node, r.gpu) == self.slow_gen[:2] and (
                            self.slow_gen[2] <= E0):
                        p, d = P * 1.03, D * self.slow_gen[3]
                    busy[r] = (p, d)
                pace = max(p + d for p, d in busy.values())
                F = E0 + pace + 0.04
                crashed = None
                if self.xid and not xid_done and any((r.node, r.gpu) == self.xid[:2]
                                                     for r in pair) and self.xid[2] < F:
                    crashed = max(self.xid[2], E0 + 0.5)
                    xid_done = True
                    self.ecc[self.xid[:2]] = Ecc(dbe_at=crashed, xids=[(crashed, 94)])
                    self.xid = (*self.xid[:2], crashed, self.xid[3])
                    down_until = crashed + self.xid[3]
                for r in pair:
                    p, d = busy[r]
                    g = self.gpus[(r.node, r.gpu)]
                    end = crashed if crashed else E0 + p + d
                    g.run(E0, min(end, E0 + p), "prefill", 610.0, 0.6)
                    g.run(E0 + p, end, "decode", 375.0 + rng.uniform(-10, 10), 1.0)
                    if not crashed and t_end > F:
                        ts = F + rng.uniform(0.0005, 0.004)
                        self._stamp("gen", ts, i, r)
                        _step(log, "grpo-gen", self.cluster, self.tenant, r, i, ts,
                              (F - S) * 1000.0, (p + d) * 1000.0, (W + pace - p - d) * 1000.0,
                              param_checksum=_checksum("grpo-gen", r.tp, i))
                if not crashed:
                    finish.append(F)
            R = max(finish) if finish else E0
            # -- the trainer's iteration i (on round i-1's rollouts)
            A = max(S + W, rollout_ready)
            for k in range(self.k_steps):
                begin = A if k == 0 else prev_end
                comp = [self.train_s * level[j] * (1.0 + 0.012 * jitter[j][s % n_train])
                        for j in range(len(self.trainer))]
                slowest = max(comp)
                ar = rng.uniform(0.42, 0.5)
                save = self.save[1] if self.save and self.save[0] == s else 0.0
                if save:
                    log.effect("checkpoint-save", {"job": "grpo-train"}, begin, begin + save)
                loader = 0.025
                end = begin + save + loader + slowest + ar
                if end > t_end:
                    done = True
                    break
                loss_mu = 0.9 * loss_mu + 0.1 * rng.gauss(0, 0.012)
                norm0 = 0.32 * (1.0 + 0.8 * math.exp(-s / 40.0))
                for j, r in enumerate(self.trainer):
                    g = self.gpus[(r.node, r.gpu)]
                    c0 = begin + save + loader
                    g.run(c0, c0 + comp[j], "train", 700.0, 0.75)
                    g.run(c0 + comp[j], end, "allreduce", 300.0, 0.4)
                    # the first step of an iteration waited in the broadcast for the engines
                    # and in the sync itself; its rollout wait (A - S - W) is in neither part
                    wait_in_sync = (S + W - prev_end) * 1000.0 if k == 0 else 0.0
                    step_ms = (end - (prev_end if k == 0 else begin)) * 1000.0
                    comm = wait_in_sync + (slowest - comp[j] + ar) * 1000.0
                    ts = end + rng.uniform(0.0005, 0.004)
                    self._stamp("train", ts, s, r)
                    _step(log, "grpo-train", self.cluster, self.tenant, r, s, ts, step_ms,
                          comp[j] * 1000.0, comm,
                          loss=round(loss_mu + 0.006 * rng.gauss(0, 1) + 0.001 * r.dp, 5),
                          grad_norm=round(norm0 * math.exp(0.07 * rng.gauss(0, 1)), 4),
                          param_checksum=_checksum("grpo-train", r.tp, s))
                for node in trainer_nodes:
                    for q in range(8):
                        self.bursts.setdefault((node, q), []).append(
                            Burst(end - ar, end, 2.6e10))
                prev_end = end
                s += 1
            rollout_ready = R + rng.uniform(1.0, 2.2)          # reward scoring (CPU)
            S = max(prev_end, R)
            i += 1

    def _gpus_of(self, nodes: list[str]) -> list[Gpu]:
        return [g for (n, _), g in sorted(self.gpus.items()) if n in nodes]

    def _stamp(self, kind: str, ts: float, s: int, r: Rank) -> None:
        self.stamps.setdefault(kind, []).append((ts, s, r.node, r.gpu))


@dataclass
class Hybrid:
    """Colocated: every GPU generates, then trains; the faults and shapes the story sets."""

    cluster: str
    tenant: str
    ranks: list[Rank]
    gpus: dict[tuple[str, int], Gpu]
    gen: Gen
    train_s: float
    resample_p: float = 0.08          # dynamic sampling: a second generation round
    save: tuple[int, float] | None = None
    slow: tuple[str, int, float, float] | None = None       # node, gpu, from, x (both phases)
    hot: tuple[str, int, float] | None = None               # node, gpu, from (HBM cooling)
    capped: tuple[str, int, float, float] | None = None     # node, gpu, from, limit W
    hot_x: float = 0.72                                     # decode rate while 0x40
    bursts: dict[tuple[str, int], list[Burst]] = field(default_factory=dict)
    stamps: list[tuple[float, int, str, int]] = field(default_factory=list)
    starts: dict[int, float] = field(default_factory=dict)     # iteration -> its start
    throttled: list[tuple[float, float]] = field(default_factory=list)

    def _decode(self, g: Gpu, t: float, d: float, rng: random.Random) -> float:
        """Append ``g``'s decode of ``d`` s of work from ``t``; its time (slowed if its HBM
        reaches 95 C: HW thermal slowdown, 0x40)."""
        temp = g.mem_at(t)
        inf = g.mem_inf(1.0, t)
        power = 375.0 + rng.uniform(-10, 10)
        if inf <= 95.0:
            g.run(t, t + d, "decode", power, 1.0)
            return d
        t_hot = 0.0 if temp >= 95.0 else HBM_TAU_S * math.log((inf - temp) / (inf - 95.0))
        if d <= t_hot:
            g.run(t, t + d, "decode", power, 1.0)
            return d
        slow = t_hot + (d - t_hot) / self.hot_x
        g.run(t, t + t_hot, "decode", power, 1.0)
        g.run(t + t_hot, t + slow, "decode-hot", power * 0.8, 1.0, 1350.0, 0x40, 95.5)
        self.throttled.append((t + t_hot, t + slow))
        return slow

    def run(self, log: Log, rng: random.Random, t0: float, t_end: float) -> None:
        nodes = sorted({r.node for r in self.ranks})
        n_it = int((t_end - t0) / 10.0) + 8
        jitter = [stream(rng, n_it) for _ in self.ranks]
        level = [1.0 + rng.uniform(-0.004, 0.004) for _ in self.ranks]
        t, s = t0, 0
        loss_mu = 0.0
        while True:
            self.starts[s] = t
            reshard = rng.uniform(0.8, 1.2)
            g0 = t + reshard
            rounds = 2 if rng.random() < self.resample_p else 1
            busy: dict[Rank, float] = {}
            ends: dict[Rank, float] = {}
            # each replica's batch (its TP group generates it together)
            work = {}
            for d in sorted({r.dp for r in self.ranks}):
                P = self.gen.prefill_s * rng.uniform(0.92, 1.08)
                D = 0.0
                for _ in range(rounds):
                    tok, hard = self.gen.tokens(rng, g0)
                    if hard:
                        log.effect("long-answers", {"job": "grpo-hybrid", "dp_rank": d}, g0,
                                   g0 + 60)
                    D += tok * self.gen.tok_ms / 1000.0 * (1 + 0.01 * rng.gauss(0, 1))
                work[d] = (P * rounds, D)
            if rounds == 2:
                log.effect("dynamic-resampling", {"job": "grpo-hybrid"}, g0, g0 + 90)
            for r in self.ranks:
                g = self.gpus[(r.node, r.gpu)]
                g.run(t, g0, "reshard", 210.0, 0.3)
                P, D = work[r.dp]
                x = self.slow[3] if self.slow and (r.node, r.gpu) == self.slow[:2] and (
                    t >= self.slow[2]) else 1.0
                capped = self.capped and (r.node, r.gpu) == self.capped[:2] and (
                    t >= self.capped[2])
                p = P * x * (1.12 if capped else 1.0)
                g.run(g0, g0 + p, "prefill", min(610.0, self.capped[3]) if capped else 610.0,
                      0.6, *((1680.0, 0x4) if capped else ()))
                d = self._decode(g, g0 + p, D * x, rng)
                busy[r] = p + d
                ends[r] = g0 + p + d
            pace = {d: max(busy[r] for r in self.ranks if r.dp == d) for d in work}
            G = max(pace.values())
            score = rng.uniform(1.5, 2.5)
            back = rng.uniform(1.0, 1.5)
            save = self.save[1] if self.save and self.save[0] == s else 0.0
            if save:
                log.effect("checkpoint-save", {"job": "grpo-hybrid"}, g0 + G, g0 + G + save)
            c0 = g0 + G + score + back + 0.03
            comp = []
            for j, r in enumerate(self.ranks):
                c = self.train_s * level[j] * (1.0 + 0.012 * jitter[j][s % n_it])
                if self.slow and (r.node, r.gpu) == self.slow[:2] and t >= self.slow[2]:
                    c *= self.slow[3]
                if self.capped and (r.node, r.gpu) == self.capped[:2] and t >= self.capped[2]:
                    c *= 1.0 + (LIMIT_W - self.capped[3]) / LIMIT_W * 0.75
                comp.append(c)
            slowest = max(comp)
            ar = rng.uniform(0.7, 0.8)
            end = c0 + slowest + ar + save
            if end > t_end:
                break
            loss_mu = 0.85 * loss_mu + 0.15 * rng.gauss(0, 0.015)
            norm0 = 0.5 * (1.0 + 0.6 * math.exp(-s / 15.0))
            for j, r in enumerate(self.ranks):
                g = self.gpus[(r.node, r.gpu)]
                g.run(ends[r], g0 + G, "wait", 130.0, 0.15)
                g.run(g0 + G, c0, "score", 150.0, 0.2)
                capped = self.capped and (r.node, r.gpu) == self.capped[:2] and (
                    t >= self.capped[2])
                g.run(c0, c0 + comp[j], "train", self.capped[3] if capped else 700.0, 0.75,
                      *((1620.0, 0x4) if capped else ()))
                g.run(c0 + comp[j], end, "allreduce", 300.0, 0.4)
                step_ms = (end - t) * 1000.0
                compute = (busy[r] + comp[j]) * 1000.0
                comm = (G - busy[r] + slowest - comp[j] + ar) * 1000.0
                ts = end + rng.uniform(0.0005, 0.004)
                self.stamps.append((ts, s, r.node, r.gpu))
                _step(log, "grpo-hybrid", self.cluster, self.tenant, r, s, ts, step_ms,
                      compute, comm,
                      loss=round(loss_mu + 0.008 * rng.gauss(0, 1), 5),
                      grad_norm=round(norm0 * math.exp(0.07 * rng.gauss(0, 1)), 4),
                      param_checksum=_checksum("grpo-hybrid", r.tp, s))
            for node in nodes:
                for q in range(8):
                    self.bursts.setdefault((node, q), []).append(Burst(end - ar, end, 3.0e10))
            t = end
            s += 1

