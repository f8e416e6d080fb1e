"""One rank the lone source of a job's skipped steps, again and again: its GPU computes inf/NaN.

Under fp16 mixed precision a dynamic loss scaler (Megatron ``--fp16``, apex and torch.amp's
GradScaler) all-reduces ``found_inf``: when any rank's local gradients hold an inf or a NaN,
*every* rank skips the optimizer step and the scale halves.  Nobody's parameters change, so
the checksums agree; the loss barely moves; only the ranks whose local gradients were not
finite report a ``grad_norm`` of ``null`` (DESIGN: null is missing -- and JSON has no inf).
An overflow is routine: the scale is raised until one comes, and which rank's batch reaches
fp16's range first is the data's tail -- a random rank, or a whole tensor-parallel column.
A GPU that computes wrong is one rank, the sole source, step after step (REFERENCE 4: NaN/Inf
is ~1 % of SDC outcomes, and Megatron's rerun machine starts from a non-finite result).

So a *skipped step* is a decided step on which some ranks sent no ``grad_norm``, some did,
and every rank's ``param_checksum`` (the null ranks' told) is the one it had on the step
before, in a job whose checksums moved on its latest step with every grad norm (no update: a
skip, not a field the collector left out -- a job without checksums, or whose checksums are
not refreshed each step, tells no skip and is not judged: detector.steps' _check_overflow).
A rank is a suspect when it was the **sole** null rank on ``k`` of the job's last
``n`` skipped steps and ``k`` is beyond chance: were each skip's source any one of the rank's
peers alike (its peer group's size ``D``: a tensor-parallel shard may overflow more than
another, a replica may not), ``P(X >= k)``, ``X ~ Binomial(n, 1 / D)``, times the job's ranks
(any of them could have been the one), at most ``ALPHA``, and ``k >= MIN_SOLE``.  A group of
one peer (a one-GPU job, tensor parallelism alone) has no chance to compare with: not judged.

The suspect's GPU is escalated ``sdc``/``unknown`` (no telemetry names a cause; a human reruns
a skipped step elsewhere and runs the GPU's diagnostics), resolved after ``WINDOW_STEPS``
decided steps in which it was the sole source no more.

>>> src = OverflowSource()
>>> pages = []
>>> for n in range(1, 6):                        # rank 5 of 8 (one peer group) alone null
...     pages += src.skipped(100 * n, [5], 8, 8, 10.0 * n)
>>> [(p[0], p[1]) for p in pages]                # 8 x P(Bin(3, 1/8) >= 3) = 0.016 is chance
[(5, 10.0)]
"""

from __future__ import annotations

import math
from typing import Any

from detector.sdc import binomial_tail

MIN_SOLE = 3          # sole-source skips before a rank can be a suspect
ALPHA = 1e-3          # chance of its count, were the sources any peer alike, times the ranks
WINDOW_STEPS = 2048   # decided steps the skips are counted over; as many quiet resolve a page
EVENTS_KEPT = 64      # skipped steps remembered (the oldest go first)
FLAGGED_KEPT = 16     # suspects paged at once
SEVERITY = 0.6        # as a replica's repeated loss outliers (detector.sdc)


class OverflowSource:
    """A job's skipped steps and their sources (the job monitor's ``_overflow``): plain data.

    ``seq`` counts the job's decided steps; ``events`` the latest skipped steps as
    ``[seq, sole rank (-1: several null), ts, step]``; ``flagged`` the suspects paged,
    ``rank -> [onset ts, seq of its latest sole skip]``.
    """

    __slots__ = ("seq", "events", "flagged")

    def __init__(self) -> None:
        self.seq = 0
        self.events: list[list[float]] = []
        self.flagged: dict[int, list[float]] = {}

    def expired(self) -> list[int]:
        """The suspects whose window passed with no sole skip (to be resolved); the caller
        counts ``seq`` a decided step."""
        if not self.flagged:
            return []
        gone = [r for r, v in self.flagged.items() if self.seq - v[1] >= WINDOW_STEPS]
        for r in gone:
            del self.flagged[r]
        return gone

    def skipped(self, step: int, null_ranks: list[int], peers: int, ranks: int, ts: float
                ) -> list[tuple[int, float, int, float]]:
        """A skipped step (the latest decided one): its null ranks, the sole one's peer group
        size and the job's ranks.  Returns the new suspects as (rank, onset ts, skips
        counted, chance)."""
        seq = self.seq
        sole = null_ranks[0] if len(null_ranks) == 1 else -1
        events = self.events
        events.append([seq, sole, ts, step])
        while events and (seq - events[0][0] >= WINDOW_STEPS or len(events) > EVENTS_KEPT):
            del events[0]
        if sole < 0:
            return []
        if sole in self.flagged:
            self.flagged[sole][1] = seq
            return []
        mine = [e for e in events if e[1] == sole]
        if len(mine) < MIN_SOLE or peers < 2 or len(self.flagged) >= FLAGGED_KEPT:
            return []
        chance = ranks * binomial_tail(len(mine), len(events), 1.0 / peers)
        if chance > ALPHA:
            return []
        self.flagged[sole] = [mine[0][2], seq]
        return [(sole, mine[0][2], len(events), chance)]

    def sole_steps(self, rank: int) -> list[int]:
        """The steps ``rank`` was the sole null rank on, of those remembered."""
        return [int(e[3]) for e in self.events if e[1] == rank]


def check(src: Any) -> bool:
    """Whether a restored :class:`OverflowSource` has this module's shapes and bounds."""
    return (type(src) is OverflowSource and type(src.seq) is int
            and type(src.events) is list and len(src.events) <= EVENTS_KEPT + 1
            and all(type(e) is list and len(e) == 4
                    and all(type(x) in (int, float) and math.isfinite(x) for x in e)
                    for e in src.events)
            and type(src.flagged) is dict and len(src.flagged) <= FLAGGED_KEPT
            and all(type(k) is int and type(v) is list and len(v) == 2
                    and all(type(x) in (int, float) and math.isfinite(x) for x in v)
                    for k, v in src.flagged.items()))


def evidence(rank: int, node: str, gpu: int, sole: list[int], counted: int, peers: int,
             ranks: int, chance: float) -> dict[str, Any]:
    """What a suspect's finding says."""
    return {
        "rank": rank, "signal": "overflow_source", "sole_null_steps": sole[-16:],
        "sole_skips": len(sole), "skips_counted": counted, "peers": peers,
        "ranks_compared": ranks, "chance": float(f"{chance:.2g}"),
        "window_steps": WINDOW_STEPS, "attributable": False,
        "note": (f"rank {rank} was the only rank with a non-finite (null) local grad norm on "
                 f"{len(sole)} of the job's last {counted} skipped steps (every rank skipped "
                 "them: checksums unchanged); loss-scale overflows come from the data's tail "
                 f"at any of its {peers} peers, the same GPU again and again is its hardware"),
        "next_diagnostic": (
            f"rerun step {sole[-1]} of rank {rank} on another GPU (Megatron rerun state "
            f"machine): an inf the rerun does not reproduce is GPU {gpu} on {node}; then "
            f"`dcgmi diag -r 4 -i {gpu}` on {node}"),
    }
