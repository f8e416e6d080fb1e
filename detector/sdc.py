"""A checksum tie: two replicas that disagree, with no third to say which one is wrong.

Data-parallel replicas hold bitwise-identical parameters after every optimizer step, so a
``param_checksum`` that differs between them is silent data corruption somewhere in the
job.  With three or more replicas a strict majority names the wrong one, at once (its GPU
is isolated, detector.steps).  With two -- a DP-2 job, or a larger one down to two peers
-- nothing in the checksums tells which GPU computed wrong: neither GPU's scope surely
holds the fault, the job's does.  So the tie is **one** escalation at job scope (DESIGN's
smallest scope it can localize; blind4 D2: one page per candidate GPU was two pages, each
wrong half the time), naming both candidates, with the step that tells them apart: rerun
it on a third GPU (Megatron's rerun state machine) -- whichever replica's result the rerun
does not reproduce is the faulty GPU.

The tie ends when the two agree again for ``checksum_clear_steps`` steps, when a candidate
leaves the job, or when a majority decides it: after a rebalance, a third replica votes
and one candidate loses -- its GPU isolated (``checksum_mismatch``), the job page resolved
as answered, the other candidate cleared at once.  The state is the job monitor's
``_pair``: rank -> ``[onset_ts, agreeing steps, the other candidate's rank]``.
"""

from __future__ import annotations

from detector.alerts import Scope
from detector.findings import Finding

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
