"""Room sdc19, round 29: blind19 R1 and R2 -- SDC attributed to the unit of hardware that holds it.

R1: two replicas whose checksums split (a TP4 x DP2 job: 1:1, no majority) were always one job
escalation, although the corrupted rank's own gradient norm jumps on the very step its checksum
leaves its peer's.  That jump -- against the rank's own history, beyond its replica's move that
step, over its peer's, while the peer's stays ordinary -- is independent evidence on the same
step: it names the GPU (escalated as a vote's loser is, the split and the grad norm its
evidence).  With nothing to break the tie (both norms ordinary, both jumped, a batch moving the
whole replica) the job escalation stays: nothing is guessed.
"""

from __future__ import annotations

import numpy as np

from detector.alerts import ESCALATION
from detector.engine import Engine
from detector.monitors import Monitors
from detector.statecodec import decode_state, encode_state
from detector.testing import T0, feed, step


def _job(tp: int, dp: int, steps: int, *, bad: int | None = None, onset: int = 60,
         jump: float = 1.3, bad_grad: bool = True, replica_jump: float = 1.0,
         peer_jump: float = 1.0, every: int = 10, seed: int = 29) -> list:
    """A TP ``tp`` x DP ``dp`` job on one node (rank = dp_rank * tp + tp_rank), 1 s steps,
    checksums every ``every`` steps.  Each replica's grad norms move with its batch (a
    shared factor, ~5 %) and each shard a little on its own (~1 %).  Rank ``bad``'s copy of
    its weights is corrupted at step ``onset``: its checksum differs from its peer's from then
    on, its grad norm x``jump`` (when ``bad_grad``).  ``replica_jump``: the bad rank's whole
    replica's grad norms times that on the onset step (a hard batch); ``peer_jump``: its
    peer's grad norm times that from the onset on."""
    rng = np.random.default_rng(seed)
    level = 1.0 + 0.1 * np.arange(tp)
    out = []
    for s in range(steps):
        batch = rng.lognormal(0.0, 0.05, dp)
        own = rng.lognormal(0.0, 0.01, tp * dp)
        for r in range(tp * dp):
            t, d = r % tp, r // tp
            g = float(level[t] * batch[d] * own[r])
            ck = f"c{s}-{t}" if s % every == 0 else None
            if bad is not None and s >= onset:
                if r == bad:
                    g *= jump if bad_grad else 1.0
                    ck = f"x{s}-{t}" if ck is not None else None
                elif r % tp == bad % tp:
                    g *= peer_jump
                if s == onset and d == bad // tp:
                    g *= replica_jump
            out.append(step(T0 + s + 1e-4 * r, r, s, node="node-000", gpu=r, tp=t, dp=d,
                            grad_norm=g, loss=2.0 * float(batch[d]), checksum=ck))
    return out


def _firing(events: list) -> list[tuple[str, str, str, str, str]]:
    return [(a.topic, a.kind, a.cause, a.scope.key, a.evidence["signals"][0]["signal"])
            for a in feed(Engine(), events) if a.status == "firing"]


def test_the_rank_whose_grad_norm_jumps_on_the_split_step_names_its_gpu() -> None:
    # blind19 R1's shape: TP4 x DP2, rank 1's copy corrupted at step 60 (a checksum step), its
    # grad norm x1.3 from then.  On main bb06987 one job escalation ("rank 1 vs rank 5").
    alerts = [a for a in feed(Engine(), _job(4, 2, 120, bad=1)) if a.status == "firing"]
    assert [(a.topic, a.kind, a.cause, a.scope.key) for a in alerts] == [
        (ESCALATION, "sdc", "gpu_hardware", "gpu:node-000/1")]
    ev = alerts[0].evidence["signals"][0]
    assert ev["signal"] == "checksum_mismatch" and ev["step"] == 60
    assert ev["replicas_compared"] == 2 and ev["peer_rank"] == 5
    assert ev["grad_norm_jump"] > 1.2 and ev["grad_norm_jump_z"] >= 5.0
    assert abs(ev["peer_grad_norm_z"]) <= 2.0
    assert alerts[0].detected_ts == T0 + 60 + 1e-4 * 7  # (the split's own step)


def test_a_two_rank_job_names_its_gpu_the_same_way() -> None:
    # TP1 x DP2: a job of two ranks, no replica mates to take a batch's move off -- the
    # rank's own history and its peer's alone.
    alerts = _firing(_job(1, 2, 120, bad=0, jump=1.4))
    assert alerts == [(ESCALATION, "sdc", "gpu_hardware", "gpu:node-000/0", "checksum_mismatch")]


def test_both_grad_norms_ordinary_the_job_escalation_stays() -> None:
    # The checksum split alone: no tiebreak, so no GPU is guessed.
    alerts = _firing(_job(4, 2, 120, bad=1, bad_grad=False))
    assert alerts == [(ESCALATION, "sdc", "unknown", "job:job-1", "checksum_pair")]


def test_a_jump_shared_by_the_replica_is_its_batch_not_the_gpu() -> None:
    # The corrupted rank's grad norm unchanged, but a hard batch moves its whole replica x1.5
    # on the split step: the rank's norm jumped against its history and its peer's, as its
    # three mates' did -- the batch's, not its own.
    alerts = _firing(_job(4, 2, 120, bad=1, bad_grad=False, replica_jump=1.5))
    assert alerts == [(ESCALATION, "sdc", "unknown", "job:job-1", "checksum_pair")]


def test_both_candidates_jumped_the_job_escalation_stays() -> None:
    alerts = _firing(_job(4, 2, 120, bad=1, peer_jump=1.3))
    assert alerts == [(ESCALATION, "sdc", "unknown", "job:job-1", "checksum_pair")]


def test_a_tie_open_before_stays_the_jobs() -> None:
    # The split first seen with both norms ordinary (a job tie); a jump 20 steps later is
    # not the split's step: the tie stays one job escalation, no GPU page beside it.
    events = [e for e in _job(4, 2, 120, bad=1, bad_grad=False)]
    jumped = [e._replace(grad_norm=e.grad_norm * 1.4) if e.rank == 1 and e.step >= 80 else e
              for e in events]
    assert _firing(jumped) == [(ESCALATION, "sdc", "unknown", "job:job-1", "checksum_pair")]


def test_a_restored_worker_keeps_each_ranks_history() -> None:
    # The histories are state: a worker restored from a snapshot taken at step 40 breaks the
    # tie at step 60 as the one that never stopped.
    events = _job(4, 2, 120, bad=1)
    cut = 40 * 8
    a = Monitors()
    found: list = []
    for e in events[:cut]:
        a.process(e, found)
    b = decode_state(encode_state(a))
    for e in events[cut:]:
        b.process(e, found)
    b.advance(b.clock + 30.0, found)
    got = [(f.signal, f.rank, f.evidence["step"]) for f in found
           if f.kind == "sdc" and f.active]
    assert got == [("checksum_mismatch", 1, 60)]
