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

from models.numpy_c import count_nonzero

# MAD of a normal sample times this is its standard deviation.
MAD_TO_SIGMA = 1.4826
_NAN = float("nan")
_INT64, _FLOAT64 = np.dtype(np.int64), np.dtype(np.float64)


def median(values: np.ndarray, scratch: bool = False) -> float:
    """``float(np.median(values))`` of a 1-d float array, the same value at a tenth the cost.

    np.median is Python around a partition and a mean (~60 µs on a step's 128 ranks,
    several times a step); this is one sort.  Same result bit for bit: the middle value,
    or the two middle ones summed from 0.0 and halved (as np.mean computes it); NaN when
    any value is NaN (sorted last) or there are none.

    ``scratch``: ``values`` is the caller's temporary (1-d, contiguous), sorted in place
    instead of a copy.

    >>> median(np.array([3.0, 1.0, 2.0, 10.0])), median(np.array([2.0, np.nan, 1.0]))
    (2.5, nan)
    """
    n = len(values)
    if n == 0:
        return _NAN
    v = values if scratch else values.copy()  # (np.sort is this behind a Python wrapper)
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
    """Groups as the rows of one array: ``values[perm]`` holds a group a row, its members in
    their input order; ``back`` is each element's row.  Groups of one size ``k``: ``lo`` and
    ``hi`` are a row's middle element(s) once sorted.  Groups of different sizes (``k`` 0):
    each row is padded at its end with the index ``len(values)`` -- a NaN there
    (:func:`sorted_rows`), which sorts after every value -- and ``lo``, ``hi``, ``counts``
    are per row, ``at`` the rows' numbers (for picking one element a row)."""

    __slots__ = ("perm", "back", "k", "lo", "hi", "counts", "at")

    def __init__(self, perm: np.ndarray, back: np.ndarray, k: int,
                 counts: np.ndarray | None = None) -> None:
        self.perm, self.back, self.k = perm.reshape(-1, k) if k else perm, back, k
        self.counts = counts
        if counts is None:
            self.lo, self.hi = (k - 1) // 2, k // 2  # a row's middle element(s), sorted
        else:
            self.lo, self.hi = (counts - 1) // 2, counts // 2
            self.at = np.arange(len(counts))


# The layouts of the last few calls (groups' bytes -> rows, or None: groups too unequal to
# pad): a step asks for the same grouping of its ranks several times (compute times, gradient
# norms), each call with new values.  Not state: a cache that no result depends on.
_LAYOUTS: dict[bytes, _Rows | None] = {}
_LAYOUTS_KEPT = 16
_ROW_OF: dict[tuple[int, int], np.ndarray] = {}  # (n, k) -> each sorted element's row
_PAD_LIMIT = 2  # groups of different sizes as padded rows up to this many cells an element


def _rows(groups: np.ndarray, cache: dict[bytes, _Rows | None] = _LAYOUTS) -> _Rows | None:
    """The groups as rows (padded when their sizes differ), or None when padding would take
    more than ``_PAD_LIMIT`` cells an element (one big group and many small ones)."""
    key = groups.tobytes()
    try:
        return cache[key]
    except KeyError:
        pass
    n = len(groups)
    perm = groups.argsort(kind="stable")  # (np.argsort: this method behind a Python wrapper)
    g = groups[perm]
    k = int(g.searchsorted(g[0], side="right"))  # the first group's size
    rows = None
    gg = g.reshape(-1, k) if n % k == 0 else None  # sorted: a row is one group when its ends
    #                                                are equal and no group runs on into the next
    if gg is not None and not (count_nonzero(gg[:, 0] != gg[:, -1])
                               or count_nonzero(gg[1:, 0] == gg[:-1, -1])):
        row_of = _ROW_OF.get((n, k))
        if row_of is None:
            if len(_ROW_OF) >= _LAYOUTS_KEPT:
                _ROW_OF.clear()
            row_of = _ROW_OF[(n, k)] = np.arange(n) // k
        back = np.empty(n, dtype=np.intp)
        back[perm] = row_of
        rows = _Rows(perm, back, k)
    else:
        first, starts, counts = _runs(g)
        width = int(counts.max())
        if len(starts) * width <= _PAD_LIMIT * n:
            run = first.cumsum() - 1  # each sorted element's row, and its place in the row
            padded = np.full((len(starts), width), n, dtype=np.intp)
            padded[run, np.arange(n) - starts[run]] = perm
            back = np.empty(n, dtype=np.intp)
            back[perm] = run
            rows = _Rows(padded, back, 0, counts)
    _keep(cache, key, rows)
    return rows


def _keep(cache: dict[bytes, _Rows | None], key: bytes, rows: _Rows | None) -> None:
    if len(cache) >= _LAYOUTS_KEPT:
        del cache[next(iter(cache))]
    cache[key] = rows


def learn_layout(groups: np.ndarray, order: np.ndarray, fixed: dict[bytes, _Rows | None]
                 ) -> tuple[np.ndarray, _Rows | None] | None:
    """Find the layout of int64 ``groups`` (for :func:`group_stats` and the others to take
    from their cache) through a fixed order of its elements: ``order[:n]`` lists the
    elements' positions in that order (``n`` of them; ``order[n] == n``), ``fixed`` is the
    caller's cache of layouts in that order.

    A job's ranks report in a new order every step, so a step's groups are new bytes to
    :func:`_rows` every time; by slot (the order) they are the same every step: that layout
    is found once and kept (in ``fixed``, the job's), and mapped to this step's order --
    each row's positions, sorted (padding, ``n``, stays last) -- it is exactly the layout
    :func:`_rows` computes (a row's members in input order), at half the numpy calls.
    Returns the groups in that order and their rows (for :func:`derive_layout`), or None
    when the step's layout was known already.
    """
    key = groups.tobytes()
    if key in _LAYOUTS:
        return None
    n = len(groups)
    placed = order[:n]
    in_order = groups[placed]
    by_order = _rows(in_order, fixed)
    rows = None
    if by_order is not None:
        perm = order[by_order.perm]
        perm.sort(axis=1)
        back = np.empty(n, dtype=np.intp)
        back[placed] = by_order.back
        rows = _Rows(perm, back, by_order.k, by_order.counts)
    _keep(_LAYOUTS, key, rows)
    return in_order, by_order


def derive_layout(groups: np.ndarray, slots: np.ndarray,
                  whole: tuple[np.ndarray, _Rows | None]) -> None:
    """Find the layout of int64 ``groups`` of a step that holds some of a job's elements --
    ``slots``, distinct places in the job's fixed order -- from ``whole``, the job's groups
    in that order and their rows (:func:`learn_layout` of a step that held them all; every
    slot is one of its places).

    A step missing a straggler misses another one each time, so its layout is new bytes
    every time; with the job's rows each row keeps the members present -- their positions,
    sorted, with the absent ones padding its end -- which are the rows :func:`_rows` finds
    (padded to the whole group's width, which changes no median: padding sorts last).
    Nothing is found here when a rank's group is not the one it had (or a whole group is
    absent): :func:`_rows` then finds the layout as usual.
    """
    key = groups.tobytes()
    if key in _LAYOUTS:
        return
    in_order, by_order = whole
    if by_order is None or count_nonzero(in_order[slots] != groups):
        return
    n = len(groups)
    pos = np.full(len(in_order) + 1, n, dtype=np.intp)  # (the job's padding too: absent)
    pos[slots] = np.arange(n)
    perm = pos[by_order.perm]
    perm.sort(axis=1)
    counts = np.add.reduce(perm < n, axis=1)
    if count_nonzero(counts == 0):
        return
    back = by_order.back[slots]
    if count_nonzero(counts != counts[0]):
        rows = _Rows(perm, back, 0, counts)
    else:  # (the groups one size again: each lost as many)
        k = int(counts[0])
        rows = _Rows(perm[:, :k], back, k)
    _keep(_LAYOUTS, key, rows)


def layout(groups: np.ndarray) -> _Rows | None:
    """The rows of int64 ``groups`` (from the cache, as :func:`sorted_rows` uses them), or
    None when there are none (no elements, other dtypes, groups too unequal to pad)."""
    if not len(groups) or groups.dtype is not _INT64:
        return None
    return _rows(groups)


def sorted_rows(values: np.ndarray, groups: np.ndarray
                ) -> tuple[np.ndarray, np.ndarray, _Rows] | None:
    """The groups as sorted rows: ``(v, mid, rows)``, ``v`` each group's values sorted (a row
    each, a new array; a padded row's NaNs last), ``mid`` each row's median, ``rows`` the
    layout (``mid[rows.back]`` is each element's group median, ``rows.k`` the groups'
    common size, 0 when they differ); None for other than int64 groups of float64 values,
    or groups too unequal to pad.

    Stable sorts of each group's members in input order: a row holds its group's values in
    exactly the order the general path's lexsort (:func:`_general`) gives them, and each
    median picks the same elements (ties, ``-0.0`` against ``0.0`` and NaN included).

    A caller that wants a statistic of the groups' medians or of the deviations from them
    over the whole step takes it here, from one row per group, instead of from the arrays
    expanded to every element: for groups of one size a median over the expanded array
    (each row's value repeated ``k`` times) is the median of the rows' values, bit for bit.
    """
    if not len(values) or groups.dtype is not _INT64 or values.dtype is not _FLOAT64:
        return None
    rows = _rows(groups)
    if rows is None:
        return None
    if rows.k:
        v = values[rows.perm]
        v.sort(axis=1, kind="stable")
        return v, (v[:, rows.lo] + v[:, rows.hi]) * 0.5, rows
    v = np.concatenate((values, _PAD))[rows.perm]
    v.sort(axis=1, kind="stable")
    return v, (v[rows.at, rows.lo] + v[rows.at, rows.hi]) * 0.5, rows


_PAD = np.array([_NAN])


def row_deviations(v: np.ndarray, mid: np.ndarray) -> np.ndarray:
    """``|v - mid|`` row by row, in place in ``v`` (of :func:`sorted_rows`), which it returns."""
    np.subtract(v, mid[:, None], out=v)
    return np.abs(v, out=v)


def row_mads(v: np.ndarray, mid: np.ndarray, rows: _Rows) -> np.ndarray:
    """Each row's MAD (median absolute deviation from ``mid``) of :func:`sorted_rows`'
    output; ``v`` is overwritten.  The deviations are taken in the sorted rows: each row
    holds the same values as its group's deviations in input order (``|x - median|`` has no
    -0.0; a padded row's NaNs stay last), so its sort is the same."""
    v = row_deviations(v, mid)
    v.sort(axis=1, kind="stable")
    if rows.k:
        return (v[:, rows.lo] + v[:, rows.hi]) * 0.5
    return (v[rows.at, rows.lo] + v[rows.at, rows.hi]) * 0.5


def row_sizes(rows: _Rows, n: int) -> np.ndarray:
    """Each element's group size (int64, a new array)."""
    if rows.k:
        return np.full(n, rows.k, dtype=np.int64)
    return rows.counts[rows.back]


def row_stats(sr: tuple[np.ndarray, np.ndarray, _Rows]
              ) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
    """:func:`group_stats` of :func:`sorted_rows`' output (whose ``v`` it overwrites)."""
    v, mid, rows = sr
    back = rows.back
    mad = row_mads(v, mid, rows)[back]
    return mid[back], mad * MAD_TO_SIGMA, row_sizes(rows, len(back)), rows.k


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

    Groups are sorted as the rows of one array (:class:`_Rows`, :func:`sorted_rows`;
    padded when their sizes differ): a third of the numpy calls of the general path below,
    and no lexsort.  Both are stable sorts by group, then value, so a row holds its group's
    values in exactly the order the general path's lexsort gives them, and each median
    picks the same elements (ties, ``-0.0`` against ``0.0`` and NaN included): the same
    result bit for bit (tests/test_peer_stats.py compares the two).
    """
    n = len(values)
    if n == 0:
        empty = np.empty(0)
        return empty, empty, np.empty(0, dtype=np.int64), 0
    sr = sorted_rows(values, groups)
    if sr is not None:
        return row_stats(sr)
    med, scale, size = _general(values, groups)
    return med, scale, size, 0


def group_median(values: np.ndarray, groups: np.ndarray) -> tuple[np.ndarray, np.ndarray, int]:
    """:func:`group_stats` without the scale: per element its group's median and size, and
    the groups' common size (0: not one size) -- half the work when no MAD is wanted."""
    sr = sorted_rows(values, groups)
    if sr is not None:
        _, mid, rows = sr
        return mid[rows.back], row_sizes(rows, len(values)), rows.k
    med, _, size, k = group_stats(values, groups)
    return med, size, k


def _runs(g: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Of sorted groups ``g`` (not empty): whether each element starts a run of one group,
    where each run starts and how long it is (int64)."""
    first = np.empty(len(g), dtype=bool)
    first[0] = True
    np.not_equal(g[1:], g[:-1], out=first[1:])
    starts = first.nonzero()[0]
    counts = np.empty(len(starts), dtype=np.int64)
    np.subtract(starts[1:], starts[:-1], out=counts[:-1])
    counts[-1] = len(g) - starts[-1]
    return first, starts, counts


def _general(values: np.ndarray, groups: np.ndarray) -> tuple[np.ndarray, np.ndarray,
                                                               np.ndarray]:
    """:func:`group_median_scale` for groups of any sizes."""
    n = len(values)
    # Sorted by group (then value), the groups are runs: where each starts, how long it is,
    # and each sorted element's run.  The same runs serve the medians and the MADs.  (No
    # np.r_ / np.diff / np.repeat: each is Python-level numpy around one C call, and this
    # runs several times per training step on arrays of a job's ~100 ranks.)
    order = np.lexsort((values, groups))
    first, starts, counts = _runs(groups[order])
    lo = starts + (counts - 1) // 2  # each run's middle element(s)
    hi = starts + counts // 2
    back = np.empty(n, dtype=np.intp)  # each element's run, in the input's order
    back[order] = first.cumsum() - 1
    med = _group_medians(values, order, lo, hi)[back].astype(float, copy=False)
    dev = np.abs(values - med)
    mad = _group_medians(dev, np.lexsort((dev, groups)), lo, hi)[back]
    return med, mad * MAD_TO_SIGMA, counts[back].astype(np.int64, copy=False)
