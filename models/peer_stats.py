"""Robust comparison of each member of a peer group with its peers, a whole step at a time.

Ranks doing identical work (same job, tensor- and pipeline-parallel position)
should take the same time; a straggler is measured as its ratio to the peer
median, and the spread of the group as its MAD, so one slow rank moves neither.
Work is vectorised over every peer group of a step with two sorts, instead of
a Python loop per group.

>>> import numpy as np
>>> values = np.array([100.0, 101.0, 99.0, 130.0, 50.0, 51.0, 49.0])
>>> groups = np.array([0, 0, 0, 0, 1, 1, 1])
>>> med, scale, size = group_median_scale(values, groups)
>>> med.tolist(), size.tolist()
([100.5, 100.5, 100.5, 100.5, 50.0, 50.0, 50.0], [4, 4, 4, 4, 3, 3, 3])
>>> np.round(scale, 3).tolist()
[1.483, 1.483, 1.483, 1.483, 1.483, 1.483, 1.483]
"""

from __future__ import annotations

import numpy as np

# MAD of a normal sample times this is its standard deviation.
MAD_TO_SIGMA = 1.4826
_NAN = float("nan")
_INT64, _FLOAT64 = np.dtype(np.int64), np.dtype(np.float64)


def median(values: np.ndarray) -> float:
    """``float(np.median(values))`` of a 1-d float array, the same value at a tenth the cost.

    np.median is Python around a partition and a mean (~60 µs on a step's 128 ranks,
    several times a step); this is one sort.  Same result bit for bit: the middle value,
    or the two middle ones summed from 0.0 and halved (as np.mean computes it); NaN when
    any value is NaN (sorted last) or there are none.

    >>> median(np.array([3.0, 1.0, 2.0, 10.0])), median(np.array([2.0, np.nan, 1.0]))
    (2.5, nan)
    """
    n = len(values)
    if n == 0:
        return _NAN
    v = values.copy()  # (np.sort is this behind a Python wrapper)
    v.sort()
    if v.item(n - 1) != v.item(n - 1):
        return _NAN
    h = n >> 1
    # np.mean sums from 0.0 (so a -0.0 comes out +0.0), then divides by the count.
    if n & 1:
        return 0.0 + v.item(h)
    return (0.0 + v.item(h - 1) + v.item(h)) * 0.5


def _group_medians(values: np.ndarray, order: np.ndarray, lo: np.ndarray, hi: np.ndarray
                   ) -> np.ndarray:
    """Median of ``values`` per group: ``order`` sorts them by group, then value; ``lo`` and
    ``hi`` are where each group's middle one or two are in that order."""
    v = values[order]
    return (v[lo] + v[hi]) * 0.5


class _Rows:
    """Groups of one size ``k``, as rows: ``values[perm].reshape(-1, k)`` holds a group a row,
    its members in their input order; ``back`` is each element's row."""

    __slots__ = ("perm", "back", "k", "lo", "hi")

    def __init__(self, perm: np.ndarray, back: np.ndarray, k: int) -> None:
        self.perm, self.back, self.k = perm, back, k
        self.lo, self.hi = (k - 1) // 2, k // 2  # a row's middle element(s), sorted


# The layouts of the last few calls (groups' bytes -> rows, or None: groups of different
# sizes): a step asks for the same grouping of its ranks several times (compute times,
# gradient norms), each call with new values.  Not state: a cache that no result depends on.
_LAYOUTS: dict[bytes, _Rows | None] = {}
_LAYOUTS_KEPT = 16
_ROW_OF: dict[tuple[int, int], np.ndarray] = {}  # (n, k) -> each sorted element's row


def _rows(groups: np.ndarray) -> _Rows | None:
    """The groups as rows of one size, or None when their sizes differ."""
    key = groups.tobytes()
    try:
        return _LAYOUTS[key]
    except KeyError:
        pass
    n = len(groups)
    perm = np.argsort(groups, kind="stable")
    g = groups[perm]
    k = int(g.searchsorted(g[0], side="right"))  # the first group's size
    rows = None
    if n % k == 0:
        gg = g.reshape(-1, k)  # sorted: a row is one group when its ends are equal and no
        #                        group runs on into the next row
        if (gg[:, 0] == gg[:, -1]).all() and (gg[1:, 0] != gg[:-1, -1]).all():
            row_of = _ROW_OF.get((n, k))
            if row_of is None:
                if len(_ROW_OF) >= _LAYOUTS_KEPT:
                    _ROW_OF.clear()
                row_of = _ROW_OF[(n, k)] = np.arange(n) // k
            back = np.empty(n, dtype=np.intp)
            back[perm] = row_of
            rows = _Rows(perm, back, k)
    if len(_LAYOUTS) >= _LAYOUTS_KEPT:
        del _LAYOUTS[next(iter(_LAYOUTS))]
    _LAYOUTS[key] = rows
    return rows


def group_median_scale(values: np.ndarray, groups: np.ndarray) -> tuple[np.ndarray, np.ndarray,
                                                                         np.ndarray]:
    """Per element: its group's median, its group's robust scale (1.4826·MAD), its group's size.

    (:func:`group_stats` without the common size.)
    """
    med, scale, size, _ = group_stats(values, groups)
    return med, scale, size


def group_stats(values: np.ndarray, groups: np.ndarray
                ) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
    """:func:`group_median_scale`, and the groups' common size (0: not one size), so a
    caller can test every group's size with one int comparison instead of an array's.

    Groups all of one size (a job's peer groups, replicas) are sorted as the rows of one
    array (:class:`_Rows`): a third of the numpy calls of the general path below.  Both are
    stable sorts by group, then value, so a row holds its group's values in exactly the
    order the general path's lexsort gives them, and each median picks the same elements
    (ties, ``-0.0`` against ``0.0`` and NaN included): the same result bit for bit
    (tests/test_peer_stats.py compares the two).
    """
    n = len(values)
    if n == 0:
        empty = np.empty(0)
        return empty, empty, np.empty(0, dtype=np.int64), 0
    rows = _rows(groups) if groups.dtype is _INT64 and values.dtype is _FLOAT64 else None
    if rows is not None:
        perm, back, k, lo, hi = rows.perm, rows.back, rows.k, rows.lo, rows.hi
        v = values[perm].reshape(-1, k)
        v.sort(axis=1, kind="stable")
        med = ((v[:, lo] + v[:, hi]) * 0.5)[back]
        dev = np.abs(values - med)
        w = dev[perm].reshape(-1, k)
        w.sort(axis=1, kind="stable")
        mad = ((w[:, lo] + w[:, hi]) * 0.5)[back]
        return med, mad * MAD_TO_SIGMA, np.full(n, k, dtype=np.int64), k
    med, scale, size = _general(values, groups)
    return med, scale, size, 0


def _general(values: np.ndarray, groups: np.ndarray) -> tuple[np.ndarray, np.ndarray,
                                                               np.ndarray]:
    """:func:`group_median_scale` for groups of any sizes."""
    n = len(values)
    # Sorted by group (then value), the groups are runs: where each starts, how long it is,
    # and each sorted element's run.  The same runs serve the medians and the MADs.  (No
    # np.r_ / np.diff / np.repeat: each is Python-level numpy around one C call, and this
    # runs several times per training step on arrays of a job's ~100 ranks.)
    order = np.lexsort((values, groups))
    g = groups[order]
    first = np.empty(n, dtype=bool)  # the sorted element starts a run
    first[0] = True
    np.not_equal(g[1:], g[:-1], out=first[1:])
    starts = first.nonzero()[0]
    counts = np.empty(len(starts), dtype=np.intp)
    np.subtract(starts[1:], starts[:-1], out=counts[:-1])
    counts[-1] = n - starts[-1]
    lo = starts + (counts - 1) // 2  # each run's middle element(s)
    hi = starts + counts // 2
    back = np.empty(n, dtype=np.intp)  # each element's run, in the input's order
    back[order] = first.cumsum() - 1
    med = _group_medians(values, order, lo, hi)[back].astype(float, copy=False)
    dev = np.abs(values - med)
    mad = _group_medians(dev, np.lexsort((dev, groups)), lo, hi)[back]
    return med, mad * MAD_TO_SIGMA, counts[back].astype(np.int64, copy=False)
