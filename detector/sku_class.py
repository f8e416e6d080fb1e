"""Classes of nodes in one job: whole nodes that compute alike slower than the job's typical
rank from the job's start -- another GPU model, another memory configuration -- not a fault.

A job placed on two SKUs (H200 and H100 SXM: one board, one power limit, one clock; the H200's
faster HBM makes a step's memory-bound share faster) has the slower SKU's ranks a few % slower
on every step from its first (blind11 L1: 5 H200 + 3 H100 nodes, the H100 ranks 1.04-1.10x,
paged as slow nodes in every log).  DESIGN has no field naming a GPU's model, so the class is
read from timing alone: at the first look at a rank's long mean (``JobMonitor._check_sustained``),
the nodes every rank of which stands out alike, under ``max_offset``, and at least
``min_nodes`` of them within each other's noise, are a class.  From then on a rank is judged
against its class's median, and the job's typical rank is taken with each class's offset
taken out (so a rank of the faster class slowed to the slower one's pace -- blind11 L2 --
stands out of its own class instead of moving the job's median).

The limit, by construction: ONE node slow from the start cannot be told from a class of one
by timing, and is a fault (issue 10's ``slow_from_start``); two or more whole nodes slower
alike from the start by less than ``max_offset`` are taken as a class and page nobody unless
they change.  Gross slowness from the start (the gross prior, 30 % and more) is judged before
any class is read.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Sequence

import numpy as np

MIN_NODES = 2              # a class is at least this many whole nodes alike
MAX_OFFSET = math.log1p(0.15)  # no class is this much slower than the job's typical rank
MIN_OFFSET = math.log1p(0.025)  # nor less (Thresholds.slow_min_effect: under it none pages)
_STAND_Z = 2.0             # every rank of a member node this many standard errors out
_ALIKE_Z = 3.0             # member nodes' means within this many standard errors of a gap


def find(nodes: Sequence[str | None], over: np.ndarray, se: np.ndarray, first: np.ndarray,
         first_se: np.ndarray, free: np.ndarray, known: dict[int, tuple[float, float]], *,
         min_nodes: int = MIN_NODES, max_offset: float = MAX_OFFSET) -> dict[str, int]:
    """Node -> class (a key of ``known``, or a new one numbered from ``max(known) + 1``) for
    the nodes that join or form a class now.

    ``nodes`` names each rank's node (None: not known), ``over`` its long mean over the job's
    typical rank (log ratio) and ``se`` that mean's standard error; ``first`` and
    ``first_se`` the same at the rank's first look (from the job's start); ``free``: looked
    at and in no class yet (a node is a candidate only if every rank of it is: whole nodes).
    ``known``: the classes so far -> (offset, its standard error).  A candidate node has
    every rank ``_STAND_Z`` standard errors out, over ``MIN_OFFSET``, under ``max_offset``,
    and where it was at its first look (nearer there than to the typical rank, and within
    ``_ALIKE_Z`` standard errors of it: slow from the start, not slowed since -- the means
    are noisy, and a rank that slowed after its first look must not hide in a class);
    candidates and known classes sorted by level are chained while the gap between neighbours
    is within ``_ALIKE_Z`` standard errors of both; a chain with a known class joins it, one
    of ``min_nodes`` candidates or more is a new class."""
    by_node: dict[str, list[int]] = defaultdict(list)
    for i, n in enumerate(nodes):
        if n is not None:
            by_node[n].append(i)
    cand: list[tuple[float, float, str, int]] = [
        (off, e, "", k) for k, (off, e) in known.items()]
    for n, idx in by_node.items():
        ix = np.asarray(idx)
        o, s = over[ix], se[ix]
        if not (bool(np.all(free[ix])) and bool(np.all(o >= np.maximum(_STAND_Z * s, MIN_OFFSET)))
                and bool(np.all(o <= max_offset))):
            continue
        mo, ms = float(np.median(o)), float(np.median(s))
        f = float(np.median(first[ix]))
        if f >= 0.5 * mo and mo - f <= _ALIKE_Z * math.hypot(ms, float(np.median(first_se[ix]))):
            cand.append((mo, ms, n, -1))
    cand.sort()
    out: dict[str, int] = {}
    chain: list[tuple[float, float, str, int]] = []
    nxt = max(known, default=-1) + 1
    for c in cand + [(math.inf, 0.0, "", -1)]:
        if chain and c[0] - chain[-1][0] > _ALIKE_Z * math.hypot(c[1], chain[-1][1]):
            ks = [x[3] for x in chain if x[3] >= 0]
            members = [x[2] for x in chain if x[3] < 0]
            if ks or len(members) >= min_nodes:
                out.update((n, ks[0] if ks else nxt) for n in members)
                nxt += 0 if ks else 1
            chain = []
        chain.append(c)
    return out


def joins(over: float, se: float, first: float, first_se: float, offset: float,
          offset_se: float) -> bool:
    """Whether a rank new on a node whose ranks are a class's (a worker added to the job, or
    moved there) is of that class: where it stands now (``over``, ``se``) and where it stood
    at its first look (``first``, ``first_se``) both within ``_ALIKE_Z`` standard errors of
    the class's ``offset`` -- at its node mates' pace from its first step, not slowed since.

    >>> joins(0.11, 0.01, 0.11, 0.01, 0.12, 0.01), joins(0.30, 0.01, 0.11, 0.01, 0.12, 0.01)
    (True, False)
    """
    return (abs(over - offset) <= _ALIKE_Z * math.hypot(se, offset_se)
            and abs(first - offset) <= _ALIKE_Z * math.hypot(first_se, offset_se))


def offsets(cls: np.ndarray, over: np.ndarray, se: np.ndarray, ready: np.ndarray,
            max_offset: float = MAX_OFFSET) -> tuple[np.ndarray, dict[int, tuple[float, float]]]:
    """Each rank's class offset (log): its class's lower median ``over`` among its ready
    ranks, clipped to [0, max_offset]; 0 for a rank in no class (``cls`` -1); and the classes
    -> (offset, its standard error: the median rank's).  The lower median: in a class of two
    nodes the faster one's, so one of the two slowing is judged against the other, not
    against the mean of the two (half its slowdown)."""
    off = np.zeros(len(cls))
    known: dict[int, tuple[float, float]] = {}
    for k in np.unique(cls[cls >= 0]).tolist():
        mine = cls == k
        sel = mine & ready
        if np.count_nonzero(sel):
            v = np.sort(over[sel])[(np.count_nonzero(sel) - 1) // 2]
            off[mine] = v = min(max(float(v), 0.0), max_offset)
            known[k] = (v, float(np.median(se[sel])))
    return off, known
