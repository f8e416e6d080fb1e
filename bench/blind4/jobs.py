"""Synchronous training attempts and their per-rank step records.

Every rank computes, then blocks in the step's collectives until the slowest rank
arrives: `step_ms` is shared (to a millisecond), `compute_ms` is the rank's own, and
`comm_ms` is what is left after the time in neither (data loading, checkpoint I/O).
"""

from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass, field


@dataclass
class Attempt:
    """One run of a job on a set of nodes, from `start_t` for `steps` steps (or until `stop_t`)."""

    job: str
    attempt: int
    nodes: list[str]
    tp: int
    pp: int
    dp: int
    start_t: float
    step0: int
    base_ms: float
    stop_t: float
    rank_fields: bool = True
    timing_fields: bool = True  # compute_ms / comm_ms reported
    loss_fields: bool = True
    checksum: bool = False  # param_checksum on optimizer steps
    accum: int = 1  # micro-steps logged as steps; the k-th holds the all-reduce
    eval_every: int = 0  # optimizer steps between evaluation passes
    eval_len: int = 0  # steps of one evaluation pass
    ckpt_every: int = 0  # optimizer steps between checkpoints
    ckpt_s: float = 0.0
    moe: bool = False  # expert imbalance: heavy-tailed per-rank extra compute
    warmup: int = 10  # steps until torch.compile / NCCL init settle
    stage_work: list[float] = field(default_factory=list)
    rank_off: list[float] = field(default_factory=list)
    comm_frac: float = 0.18
    gpus_per_node: int = 8
    resume: Attempt | None = None  # restart from this attempt's last checkpoint
    end_t: float = 0.0  # filled by run(): true time of the last step
    last_ckpt_step: int = 0  # filled by run()

    @property
    def world(self) -> int:
        return self.tp * self.pp * self.dp

    def place(self, rank: int) -> tuple[str, int, int, int, int]:
        """(node, gpu, tp_rank, pp_rank, dp_rank) of a global rank: TP fastest, then DP, then PP."""
        tp_rank = rank % self.tp
        dp_rank = (rank // self.tp) % self.dp
        pp_rank = rank // (self.tp * self.dp)
        return (
            self.nodes[rank // self.gpus_per_node],
            rank % self.gpus_per_node,
            tp_rank,
            pp_rank,
            dp_rank,
        )


def checksum(job: str, attempt: int, step: int, tp_rank: int, pp_rank: int, salt: str = "") -> str:
    h = hashlib.blake2b(
        f"{job}|{attempt}|{step}|{tp_rank}|{pp_rank}|{salt}".encode(), digest_size=8
    )
    return h.hexdigest()


def run(att: Attempt, rng, faults, skew_of, emit) -> None:
    """Emit every step record of `att`; `emit(true_t, topic, value, node)`."""
    world = att.world
    if not att.stage_work:
        att.stage_work = [1.0] * att.pp
    if not att.rank_off:
        att.rank_off = [rng.gauss(0.0, 0.008) for _ in range(world)]
    places = [att.place(r) for r in range(world)]
    compute_base = att.base_ms * (1.0 - att.comm_frac - 0.02)
    t = att.start_t
    if att.resume is not None:
        att.step0 = att.resume.last_ckpt_step + 1
    step = att.step0
    idx = 0
    opt_idx = 0
    eval_left = 0
    bad_salt: dict[int, str] = {}
    while t < att.stop_t:
        opt_step = (idx % att.accum) == att.accum - 1 and eval_left == 0
        is_eval = eval_left > 0
        warm = 1.0
        if idx == 0:
            warm = rng.uniform(9.0, 14.0)  # compile + autotune + NCCL init
        elif idx < att.warmup:
            warm = 1.0 + 1.6 * math.exp(-3.0 * idx / att.warmup)
        ckpt = opt_step and att.ckpt_every and opt_idx > 0 and opt_idx % att.ckpt_every == 0
        comp = []
        neither = []
        touched = set()
        # A TP group runs at its slowest member's pace: the reporter times forward+backward
        # (Megatron's timer), which holds the TP all-reduces, so siblings' compute_ms grows too.
        fault_mult = [1.0] * world
        fault_add = [0.0] * world
        for r in range(world):
            node, gpu = places[r][:2]
            for f in faults:
                m, add = f.step_effect(att, r, node, gpu, step, t)
                if m != 1.0 or add:
                    fault_mult[r] *= m
                    fault_add[r] += add
                    touched.add(f)
        for g0 in range(0, world, att.tp):
            worst = max(fault_mult[g0 : g0 + att.tp])
            for r in range(g0, g0 + att.tp):
                fault_mult[r] = worst
        # Expert imbalance: the tokens a DP rank routes land unevenly on experts; the
        # whole TP group shares its tokens, so it shares the extra time. Heavy tail.
        moe = [
            1.0 + min(0.4, 0.02 * (rng.paretovariate(2.0) - 1.0)) for _ in range(world // att.tp)
        ]
        for r in range(world):
            node, gpu, tpr, ppr, dpr = places[r]
            c = compute_base * att.stage_work[ppr] * (1.0 + att.rank_off[r]) * warm
            if idx == 0:
                c *= 1.0 + rng.uniform(-0.04, 0.04)
            c *= 1.0 + rng.gauss(0.0, 0.012)
            if att.moe and not is_eval:
                c *= moe[r // att.tp]
            if is_eval:
                c *= 0.36
            elif opt_step:
                c *= 1.07  # optimizer step
            nt = att.base_ms * rng.uniform(0.008, 0.025)
            if ckpt:
                nt += att.ckpt_s * 1000.0 * rng.uniform(0.9, 1.1)
            c *= fault_mult[r]
            nt += fault_add[r]
            comp.append(c)
            neither.append(nt)
        comm_mult = 1.0
        for f in faults:
            m = f.comm_effect(att, step, t)
            if m != 1.0:
                comm_mult *= m
                touched.add(f)
        comm_min = att.base_ms * att.comm_frac * (0.25 if is_eval else 1.0) * comm_mult
        if opt_step:
            comm_min += att.base_ms * 0.45 * comm_mult  # gradient all-reduce
        slowest = max(c + n for c, n in zip(comp, neither, strict=True))
        step_ms = slowest + comm_min * rng.uniform(0.97, 1.03)
        t_end = t + step_ms / 1000.0
        if opt_step and att.checksum:
            for f in faults:
                bad = f.corrupt_rank(att, step, t)
                if bad is not None and bad not in bad_salt:
                    bad_salt[bad] = f.fault_id
        loss = 2.1 + 6.0 / math.sqrt(1.0 + step / 50.0)
        recs = []
        for r in range(world):
            node, gpu, tpr, ppr, dpr = places[r]
            s_ms = step_ms + rng.uniform(0.0, 0.6)
            v = {
                "ts": round(t_end + s_ms / 1000.0 - step_ms / 1000.0 + skew_of(node), 4),
                "job": att.job,
                "step": step,
                "rank": r,
                "node": node,
                "gpu": gpu,
                "step_ms": round(s_ms, 3),
            }
            if att.timing_fields:
                v["compute_ms"] = round(comp[r], 3)
                v["comm_ms"] = round(max(0.0, s_ms - comp[r] - neither[r]), 3)
            if att.rank_fields:
                v["tp_rank"], v["pp_rank"], v["dp_rank"] = tpr, ppr, dpr
            if att.loss_fields and ppr == att.pp - 1:
                v["loss"] = round(loss * (1.12 if is_eval else 1.0) + rng.gauss(0, 0.03), 4)
            if att.loss_fields and opt_step:
                v["grad_norm"] = round(abs(rng.gauss(1.0, 0.05)) * (1.0 + 0.2 * ppr), 4)
            if att.checksum and opt_step:
                salt = bad_salt.get(r, "")
                v["param_checksum"] = checksum(att.job, att.attempt, step, tpr, ppr, salt)
                if salt:
                    for f in faults:
                        if f.fault_id == salt:
                            touched.add(f)
            recs.append((t_end, v, node))
        for f in touched:
            for _, v, _ in recs:
                f.touch(v["ts"])
        for te, v, node in recs:
            emit(te, "telemetry.step", v, node)
        if ckpt:
            att.last_ckpt_step = step
        t = t_end + rng.uniform(0.002, 0.02)
        step += 1
        idx += 1
        if eval_left:
            eval_left -= 1
        elif opt_step:
            opt_idx += 1
            if att.eval_every and opt_idx % att.eval_every == 0:
                eval_left = att.eval_len
    att.end_t = t
