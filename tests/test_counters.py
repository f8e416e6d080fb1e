"""models.counters: the compiled delta_reader takes the deltas CounterDeltas.update takes."""

from __future__ import annotations

import random
from types import SimpleNamespace

import pytest

from detector.events import ECC_COUNTERS, NIC_COUNTERS
from models.counters import BLANK, MAX_COUNTS_PER_S, CounterDeltas, delta_reader


def _value(rng: random.Random, last: int | None) -> int | None:
    r = rng.random()
    if r < 0.05:
        return None                        # missing from this sample
    if r < 0.07:
        return BLANK + rng.randrange(0, 16)  # a DCGM blank a collector copied
    if r < 0.10:
        return rng.randrange(0, 5)         # a reset (or a small value after one)
    base = last if last is not None else rng.randrange(0, 1 << 40)
    if r < 0.55:
        return base                        # unchanged (the error counters)
    return base + rng.randrange(0, 1 << rng.choice((3, 20, 45)))  # moved, small or large


@pytest.mark.parametrize("fields", [NIC_COUNTERS, ECC_COUNTERS, ("one",)])
def test_delta_reader_matches_update(fields: tuple[str, ...]) -> None:
    rng = random.Random(1234)
    read = delta_reader(fields)
    for _ in range(200):                    # 200 devices, 60 samples each
        generic, compiled = CounterDeltas(len(fields)), CounterDeltas(len(fields))
        last: list[int | None] = [None] * len(fields)
        ts = 0.0
        for _ in range(60):
            # mostly fresh samples, some duplicates and late ones
            ts = ts + rng.choice((1.0, 1.0, 1.0, 0.0, -0.5))
            vals = [_value(rng, v) for v in last]
            rec = SimpleNamespace(**dict(zip(fields, vals, strict=True)))
            want = generic.update(ts, tuple(vals))
            got = read(compiled, ts, rec)
            assert got == want
            assert type(got) is type(want)
            assert (compiled._last, compiled._last_ts, compiled.resets, compiled.blanks,
                    compiled.implausible) == (generic._last, generic._last_ts, generic.resets,
                                              generic.blanks, generic.implausible)
            last = [v if v is not None else p for v, p in zip(vals, last, strict=True)]


def test_delta_reader_refuses_bad_field_names() -> None:
    with pytest.raises(ValueError):
        delta_reader(("ok", "x = 1; import os"))
    with pytest.raises(ValueError):
        delta_reader(())
    with pytest.raises(ValueError):
        delta_reader(("class",))


@pytest.mark.parametrize("compiled", [False, True])
def test_blank_and_impossible_jump_are_no_count(compiled: bool) -> None:
    """blind14 N1: DCGM's INT64 blank (9223372036854775792) copied into pcie_replay is no
    value, never a 9.2e18 increase; a jump no hardware counts in the interval is dropped with
    the baseline kept (so the next sample is no reset); the good counter beside either keeps
    its delta."""
    fields = ("pcie_replay", "sbe")
    read = delta_reader(fields)
    c = CounterDeltas(2)

    def take(ts: float, v: tuple[int | None, ...]) -> tuple[int, ...] | None:
        if compiled:
            return read(c, ts, SimpleNamespace(**dict(zip(fields, v, strict=True))))
        return c.update(ts, v)

    assert take(0.0, (7, 1)) == (0, 0)
    assert take(10.0, (9223372036854775792, 3)) == (0, 2)
    assert take(20.0, (8, 3)) == (1, 0)
    jump = 8 + int(10.0 * MAX_COUNTS_PER_S) + 1
    assert take(30.0, (jump, 4)) == (0, 1)
    assert take(40.0, (9, 4)) == (1, 0)
    assert (c.blanks, c.implausible, c.resets) == (1, 1, 0)
    # the most a counter can count in the interval is still a count
    assert take(50.0, (9 + int(10.0 * MAX_COUNTS_PER_S), 4)) == (int(10.0 * MAX_COUNTS_PER_S), 0)
