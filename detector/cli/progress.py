"""Progress bars for long commands, on a terminal only (tqdm); silent in CI and when piped.

Library code never draws anything: it takes an ``on_progress(done)`` callback
(``done`` = units finished so far, a running total).  A command wraps its call in
:func:`progress`, which hands back such a callback.

>>> import io
>>> with progress("replay", total=10, stream=io.StringIO()) as update:
...     update(4); update(10)
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TextIO


def wanted(stream: TextIO) -> bool:
    """Draw only for a person: a terminal, not CI, not ``FAULTLINE_PROGRESS=0``."""
    if os.environ.get("FAULTLINE_PROGRESS", "").lower() in ("0", "no", "false", "off"):
        return False
    if os.environ.get("CI"):
        return False
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


@contextmanager
def progress(desc: str, *, total: float | None = None, unit: str = "events",
             stream: TextIO | None = None) -> Iterator[Callable[[float], None]]:
    """A callback taking the running total done; a bar on ``stream`` (stderr) when wanted."""
    out = stream if stream is not None else sys.stderr
    if not wanted(out):
        yield lambda done: None
        return
    from tqdm import tqdm

    bar = tqdm(total=total, desc=desc, unit=unit, unit_scale=True, file=out, leave=False,
               dynamic_ncols=True, mininterval=0.5)
    last = 0.0

    def update(done: float) -> None:
        nonlocal last
        if done > last:
            bar.update(done - last)
            last = done

    try:
        yield update
    finally:
        bar.close()
