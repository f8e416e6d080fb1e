"""numpy's C functions behind two of its Python wrappers, for the calls a step makes dozens of
times on arrays of a job's ranks.

``np.count_nonzero(a)`` is a Python function (numpy/_core/numeric.py) behind an
``__array_function__`` dispatcher that, with no ``axis``, returns
``multiarray.count_nonzero(a)``; ``ndarray.clip(lo, hi)`` is a Python function
(numpy/_core/_methods.py ``_clip``) that, for float arrays and both bounds given, returns the
``clip`` ufunc's ``um.clip(a, lo, hi, out=...)``.  Called here directly they are the same
functions on the same arguments -- the same values, bit for bit -- without the wrappers'
frames: callgrind, 128 elements, 2026-12-07 (perf44): ``np.count_nonzero`` 3,236
instructions a call against 1,015; ``ndarray.clip(lo, hi, out=)`` 10,692 against 7,664.
A step's evaluation makes ~50 of the first and ~8 of the second (perf42, perf44).

``clip`` here is for float arrays only (``_clip`` treats Python int bounds of int arrays
apart); ``count_nonzero`` takes no ``axis`` (``np.count_nonzero``'s other path).
tests/test_perf44.py checks both against the wrappers and that the wrappers still call them.
"""

from __future__ import annotations

import numpy as np

try:
    from numpy._core.multiarray import count_nonzero
    from numpy._core.umath import clip
except ImportError:  # (another numpy's layout: the wrappers, the same values)
    count_nonzero = np.count_nonzero
    clip = np.clip

__all__ = ["clip", "count_nonzero"]
