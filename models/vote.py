"""Majority vote over parameter checksums of replicas that must agree.

After the optimizer step every data-parallel replica holds the same
parameters, so their checksums must be equal; a replica that disagrees with a
strict majority computed something else — silent data corruption.  Without a
strict majority (two against two) the vote names nobody.

>>> majority_vote(["a1", "a1", "ff", "a1"])
('a1', [2])
>>> majority_vote(["a1", "a1", "a1"])
('a1', [])
>>> majority_vote(["a1", "ff"])
(None, [])
"""

from __future__ import annotations

from collections import Counter


def majority_vote(checksums: list[str]) -> tuple[str | None, list[int]]:
    """The strict-majority value and the indices that disagree with it."""
    if not checksums:
        return None, []
    first = checksums[0]
    if checksums.count(first) == len(checksums):  # (all agree: the common case, at C speed)
        return first, []
    value, count = Counter(checksums).most_common(1)[0]
    if 2 * count <= len(checksums):
        return None, []
    return value, [i for i, c in enumerate(checksums) if c != value]
