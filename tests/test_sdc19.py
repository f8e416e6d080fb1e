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
    return [(a.topic, a.kind, a.cause, a.scope.key, a.evidence["signals"][-1]["signal"])
            for a in feed(Engine(), events) if a.status == "firing"]


def test_the_rank_whose_grad_norm_jumps_on_the_split_step_names_its_gpu() -> None:
    # blind19 R1's shape: TP4 x DP2, rank 1's copy corrupted at step 60 (a checksum step), its
    # grad norm x1.3 from then.  On main bb06987 one job escalation ("rank 1 vs rank 5").
    # tie32 (round 32): the job's page on the split step, then -- its norm still off on steps
    # 61 and 62 -- the same page (one dedup_key) fired again narrowed to the GPU.
    alerts = [a for a in feed(Engine(), _job(4, 2, 120, bad=1)) if a.status == "firing"]
    assert [(a.topic, a.kind, a.cause, a.scope.key) for a in alerts] == [
        (ESCALATION, "sdc", "unknown", "job:job-1"),
        (ESCALATION, "sdc", "gpu_hardware", "gpu:node-000/1")]
    assert alerts[0].dedup_key == alerts[1].dedup_key
    ev = alerts[1].evidence["signals"][-1]
    assert ev["signal"] == "checksum_mismatch" and ev["step"] == 60
    assert ev["replicas_compared"] == 2 and ev["peer_rank"] == 5
    assert ev["grad_norm_jump"] > 1.2 and ev["grad_norm_jump_z"] >= 5.0
    assert alerts[0].detected_ts == T0 + 60 + 1e-4 * 7  # (the split's own step)
    assert alerts[1].detected_ts == T0 + 62 + 1e-4 * 7  # (judged on two more steps)


def test_a_two_rank_job_names_its_gpu_the_same_way() -> None:
    # TP1 x DP2: a job of two ranks, no replica mates to take a batch's move off -- the
    # rank's own history and its peer's alone.
    alerts = _firing(_job(1, 2, 120, bad=0, jump=1.4))
    assert alerts == [(ESCALATION, "sdc", "unknown", "job:job-1", "checksum_pair"),
                      (ESCALATION, "sdc", "gpu_hardware", "gpu:node-000/0", "checksum_mismatch")]


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
    assert got == [("checksum_pair", None, 60), ("checksum_mismatch", 1, 60)]


# -- R2: a one-GPU replica's SDC, paged once ------------------------------------------------
#
# With TP1 a replica is one GPU.  Its repeated SDC spikes were escalated at the GPU for its grad
# norm (grad_outlier), then 53-127 s later again at the replica for its loss (loss_outlier): a
# second page -- a new dedup_key -- for the same hardware.  The replica's finding now joins the
# GPU's open SDC page as evidence; a replica of several GPUs, or one with no GPU page open, is
# raised at the replica as before.


def _corr_run(dp_of_rank: dict[int, int], events: list[tuple[str, int, float, bool]]
              ) -> list:
    """A correlator told the job's placement (rank -> its replica, rank r on GPU r of
    node-000), then ``events``: (signal, rank or replica, ts, active) -- grad_outlier at the
    rank's GPU, loss_outlier at the replica.  Returns its alerts."""
    from detector.alerts import Scope
    from detector.correlate import Correlator
    from detector.findings import Finding
    from detector.thresholds import Thresholds

    corr = Correlator(Thresholds())
    out: list = []
    place = [[r, "node-000", r, d] for r, d in sorted(dp_of_rank.items())]
    corr.on_finding(Finding(T0, T0, "job_layout", "slow_node", "unknown", Scope.of_job("job-1"),
                            True, False, 0.0, {"placement": place}, "job-1"), out)
    for signal, who, ts, active in events:
        if signal == "grad_outlier":
            f = Finding(T0 + ts, T0 + ts - 30, signal, "sdc", "unknown",
                        Scope.of_gpu("node-000", who), active, True, 0.6 if active else 0.0,
                        {"rank": who}, "job-1", None, None, who, dp_of_rank[who])
        else:
            f = Finding(T0 + ts, T0 + ts - 60, signal, "sdc", "unknown",
                        Scope.of_replica("job-1", who), active, True, 0.6 if active else 0.0,
                        {"replica": who}, "job-1", None, None, None, who)
        corr.on_finding(f, out)
        corr.advance(T0 + ts, out)
    corr.advance(T0 + 5000.0, out)
    return out


def test_a_one_gpu_replicas_loss_page_joins_its_gpus_open_page() -> None:
    # TP1 x DP8: replica 3 is GPU 3.  Its grad norm paged first (GPU), its loss 90 s later:
    # one problem, one dedup_key, the loss outliers its evidence.  On main bb06987 a second
    # page at replica:job-1/3.
    alerts = _corr_run({r: r for r in range(8)}, [
        ("grad_outlier", 3, 100.0, True), ("loss_outlier", 3, 190.0, True),
        ("grad_outlier", 3, 300.0, False), ("loss_outlier", 3, 400.0, False)])
    firing = [a for a in alerts if a.status == "firing"]
    assert [(a.kind, a.scope.key) for a in firing] == [("sdc", "gpu:node-000/3")]
    assert {a.dedup_key for a in alerts} == {firing[0].dedup_key}
    last = alerts[-1]
    assert last.status == "resolved"
    assert [e["signal"] for e in last.evidence["signals"]] == ["grad_outlier", "loss_outlier"]


def test_the_joined_page_stays_open_while_the_replicas_loss_does() -> None:
    # The grad norm's finding clears at 300 s, the loss's at 900 s: the one page resolves
    # after the last, not after the first.
    alerts = _corr_run({r: r for r in range(8)}, [
        ("grad_outlier", 3, 100.0, True), ("loss_outlier", 3, 190.0, True),
        ("grad_outlier", 3, 300.0, False), ("loss_outlier", 3, 900.0, False)])
    resolved = [a for a in alerts if a.status == "resolved"]
    assert len(resolved) == 1 and resolved[0].detected_ts > T0 + 900.0


def test_a_replica_of_several_gpus_keeps_its_own_page() -> None:
    # TP2 x DP4: replica 1 is GPUs 2 and 3; a grad-norm page at GPU 3 and the replica's loss
    # page are two units (the loss does not say which of its GPUs): two pages, as before.
    alerts = _corr_run({r: r // 2 for r in range(8)}, [
        ("grad_outlier", 3, 100.0, True), ("loss_outlier", 1, 190.0, True)])
    assert [a.scope.key for a in alerts if a.status == "firing"] == [
        "gpu:node-000/3", "replica:job-1/1"]


def test_a_one_gpu_replica_with_no_gpu_page_open_is_paged_at_the_replica() -> None:
    alerts = _corr_run({r: r for r in range(8)}, [
        ("grad_outlier", 5, 100.0, True), ("loss_outlier", 3, 190.0, True)])
    assert [a.scope.key for a in alerts if a.status == "firing"] == [
        "gpu:node-000/5", "replica:job-1/3"]
