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


def _group_medians(values: np.ndarray, groups: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Median of ``values`` per group, broadcast back to each element, and group sizes."""
    order = np.lexsort((values, groups))
    g = groups[order]
    v = values[order]
    starts = np.flatnonzero(np.r_[True, g[1:] != g[:-1]])
    counts = np.diff(np.r_[starts, len(g)])
    lo = v[starts + (counts - 1) // 2]
    hi = v[starts + counts // 2]
    per_group = (lo + hi) * 0.5
    # Map each sorted element back to its group's statistics, then undo the sort.
    idx = np.repeat(np.arange(len(starts)), counts)
    med = np.empty_like(values, dtype=float)
    size = np.empty(len(values), dtype=np.int64)
    med[order] = per_group[idx]
    size[order] = counts[idx]
    return med, size


def group_median_scale(values: np.ndarray, groups: np.ndarray) -> tuple[np.ndarray, np.ndarray,
                                                                         np.ndarray]:
    """Per element: its group's median, its group's robust scale (1.4826·MAD), its group's size."""
    if len(values) == 0:
        empty = np.empty(0)
        return empty, empty, np.empty(0, dtype=np.int64)
    med, size = _group_medians(values, groups)
    mad, _ = _group_medians(np.abs(values - med), groups)
    return med, mad * MAD_TO_SIGMA, size
