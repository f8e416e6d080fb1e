"""Importers of real history into incident logs (one module per source)."""

from __future__ import annotations

import csv
import itertools
from collections import Counter
from collections.abc import Iterator
from typing import Any


def csv_rows(reader: Iterator[Any], bad: Counter[str], first: int) -> Iterator[tuple[int, Any]]:
    """(line number, row) of a csv reader, from ``first``; a row csv cannot read (a field
    over its 128 KiB limit) is counted in ``bad`` with its reason and the next one read,
    where iterating the reader would raise out of the import."""
    for n in itertools.count(first):
        try:
            row = next(reader)
        except StopIteration:
            return
        except csv.Error as exc:
            bad[f"line {n}: {exc}"] += 1
            continue
        yield n, row
