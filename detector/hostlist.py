"""Slurm hostlist expressions: ``node-[000-003,007]`` to names and back.

Semantics follow Slurm's hostlist parser: a bracket holds a comma list of
numbers and ``lo-hi`` ranges, the width of ``lo`` is kept as zero padding
(``[08-10]`` gives ``08 09 10``, ``[8-10]`` gives ``8 9 10``), top-level
commas separate expressions, and a name may carry several bracket groups,
the first varying slowest (``rail[0-1]-leaf[0-1]`` gives rail0-leaf0,
rail0-leaf1, rail1-leaf0, rail1-leaf1). Order is kept and duplicates are
not removed: callers decide whether a repeat is an error.

>>> expand_hostlist("node-[000-002,007],gpu-a[1-2]")
['node-000', 'node-001', 'node-002', 'node-007', 'gpu-a1', 'gpu-a2']
>>> compress_hostlist(['node-000', 'node-001', 'node-002', 'node-007', 'gpu-a1'])
'node-[000-002,007],gpu-a1'
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterable

__all__ = ["MAX_NAMES", "TooManyNames", "compress_hostlist", "expand_hostlist"]

# A typo such as node[0-9999999] must fail fast instead of eating memory.
MAX_NAMES = 1_000_000


class TooManyNames(ValueError):
    """An expression that names more than its limit allows (raised before they are made)."""

_NUMBER = re.compile(r"[0-9]+")
_LAST_NUMBER = re.compile(r"^(.*?)([0-9]+)([^0-9]*)$")


def expand_hostlist(text: str, limit: int | None = None) -> list[str]:
    """Expand a hostlist expression into the names it stands for, in order.

    At most ``limit`` names (default :data:`MAX_NAMES`); more raise ValueError
    before they are made.  Raises ValueError saying what is wrong with the expression.

    >>> expand_hostlist("rail[0-1]-leaf[0-1]")
    ['rail0-leaf0', 'rail0-leaf1', 'rail1-leaf0', 'rail1-leaf1']
    >>> expand_hostlist("node[8-10]")
    ['node8', 'node9', 'node10']
    >>> expand_hostlist("node[3-1]")
    Traceback (most recent call last):
    ...
    ValueError: range '3-1' in 'node[3-1]' runs backwards
    >>> expand_hostlist("n[0-9][0-9]", limit=50)
    Traceback (most recent call last):
    ...
    detector.hostlist.TooManyNames: 'n[0-9][0-9]' expands to more than 50 names
    """
    limit = MAX_NAMES if limit is None else limit
    names: list[str] = []
    for item in _split_top_level(text):
        pieces: list[list[str]] = []
        count = 1  # names this item makes so far
        rest = item
        while rest:
            literal, bracket, rest = rest.partition("[")
            if "]" in literal:
                raise ValueError(f"unmatched ']' in {item!r}")
            if literal:
                pieces.append([literal])
            if not bracket:
                break
            group, closed, rest = rest.partition("]")
            if not closed or "[" in group:
                raise ValueError(f"unmatched '[' in {item!r}")
            # each group is bounded by what is left of the limit given the groups before it,
            # so no group is ever expanded past it (node[0-999999][0-999999]...)
            choices = _expand_group(group, item, (limit - len(names)) // count)
            if choices is None:
                raise TooManyNames(f"{text!r} expands to more than {limit:,} names")
            count *= len(choices)
            pieces.append(choices)
        if len(names) + count > limit:
            raise TooManyNames(f"{text!r} expands to more than {limit:,} names")
        names.extend("".join(parts) for parts in itertools.product(*pieces))
    return names


def compress_hostlist(names: Iterable[str]) -> str:
    """Write names as a short hostlist expression that expands back to them.

    Only the last number of each name is folded into ranges, and order is
    kept, so ``expand_hostlist(compress_hostlist(xs)) == list(xs)``.

    >>> compress_hostlist(["node9", "node10", "node12"])
    'node[9-10,12]'
    """
    # One block per run of names sharing prefix and suffix: [prefix, suffix, ranges],
    # a range being [low digits as written, high number]; None prefix for a name
    # without digits.
    blocks: list[tuple[str | None, str, list[list]]] = []
    for name in names:
        if not name or any(c in name for c in "[],"):
            raise ValueError(f"cannot write {name!r} in a hostlist")
        match = _LAST_NUMBER.match(name)
        if match is None:
            blocks.append((None, name, []))
            continue
        prefix, digits, suffix = match.groups()
        number = int(digits)
        if blocks and blocks[-1][0] == prefix and blocks[-1][1] == suffix:
            ranges = blocks[-1][2]
            low, high = ranges[-1]
            if number == high + 1 and str(number).zfill(len(low)) == digits:
                ranges[-1][1] = number
            else:
                ranges.append([digits, number])
        else:
            blocks.append((prefix, suffix, [[digits, number]]))
    parts = []
    for prefix, suffix, ranges in blocks:
        if prefix is None:
            parts.append(suffix)
            continue
        spans = [
            low if int(low) == high else f"{low}-{str(high).zfill(len(low))}"
            for low, high in ranges
        ]
        if len(spans) == 1 and "-" not in spans[0]:
            parts.append(f"{prefix}{spans[0]}{suffix}")
        else:
            parts.append(f"{prefix}[{','.join(spans)}]{suffix}")
    return ",".join(parts)


def _split_top_level(text: str) -> list[str]:
    """Split on the commas that are not inside brackets."""
    items, depth, start = [], 0, 0
    for i, char in enumerate(text):
        if char == "[":
            depth += 1
        elif char == "]":
            depth -= 1
        elif char == "," and depth == 0:
            items.append(text[start:i])
            start = i + 1
    items.append(text[start:])
    if any(not item for item in items):
        raise ValueError(f"empty name in {text!r}")
    return items


def _expand_group(group: str, item: str, room: int) -> list[str] | None:
    """Expand the inside of one bracket, keeping the zero padding of each low bound;
    None when it holds more than ``room`` numbers."""
    out: list[str] = []
    for span in group.split(","):
        low, dash, high = span.partition("-")
        if not _NUMBER.fullmatch(low) or (dash and not _NUMBER.fullmatch(high)):
            raise ValueError(f"bad range {span!r} in {item!r}: expected N or N-M")
        if not dash:
            if len(out) >= room:
                return None
            out.append(low)
            continue
        first, last = int(low), int(high)
        if last < first:
            raise ValueError(f"range {span!r} in {item!r} runs backwards")
        if len(out) + last - first + 1 > room:
            return None
        out.extend(str(n).zfill(len(low)) for n in range(first, last + 1))
    return out
