"""Fuzz: 20,000 mutated records through the service's stages and through replay, none fatal.

Seeded (see ``replay/mutate.py`` for the mutations: deep nesting, integers past
2^63, NaN, wrong types, control characters, huge strings, year-2100
timestamps, truncated and non-UTF-8 bytes, extreme ranks, ...), interleaved
with valid telemetry so the engine has state to damage.  Zero exceptions
escape, every rejected record carries a reason, and resident memory stays
bounded.  ``bench/fuzz.py`` runs more, with other seeds.
"""

from __future__ import annotations

import contextlib
from pathlib import Path

from replay.fuzz import fuzz_replay, fuzz_stages

MUTATED = 20_000
RSS_BOUND_KIB = 200 * 1024  # the engine's state for two jobs of 16 ranks is < 1 MiB


def test_twenty_thousand_mutated_records_through_the_stages() -> None:
    r = fuzz_stages(MUTATED, seed=2026)
    assert r.mutated == MUTATED and r.valid >= MUTATED // 3
    assert r.escaped == [], r.escaped[:5]
    assert r.unexplained == 0
    assert r.internal == 0, [k for k in r.reasons if "internal" in k]
    # most mutations break the contract; the dead letters say which field and why
    assert r.dead >= MUTATED // 2, r.reasons.most_common(5)
    assert r.rss_growth_kib < RSS_BOUND_KIB, r.rss_growth_kib


def test_twenty_thousand_mutated_records_through_replay(tmp_path: Path) -> None:
    r = fuzz_replay(MUTATED, seed=11, workdir=tmp_path)
    assert r.escaped == [], r.escaped
    assert r.unexplained == 0
    assert r.internal == 0, [k for k in r.reasons if "engine error" in k]
    assert r.dead >= MUTATED // 2, r.reasons.most_common(5)
    assert r.rss_growth_kib < RSS_BOUND_KIB, r.rss_growth_kib


def test_records_agreeing_on_2100_do_not_move_a_live_partition() -> None:
    """Found by the fuzzer: three year-2100 records in a row made a 'real gap' in the service."""
    from detector.events import InvalidMessage
    from detector.monitors import Monitors
    from detector.testing import T0, YEAR_2100, thermal

    mon = Monitors(wall_clock=lambda: T0 + 60.0)
    mon.process(thermal(T0, "node-000", 0), [])
    for _ in range(5):
        try:
            mon.process(thermal(YEAR_2100, "node-000", 0), [])
        except InvalidMessage as exc:
            assert "ts_out_of_range" in str(exc)
    assert mon.clock == T0
    replayed = Monitors()  # a replayed log has no wall clock: an agreed jump is a real gap
    replayed.process(thermal(T0, "node-000", 0), [])
    for k in range(3):
        with contextlib.suppress(InvalidMessage):
            replayed.process(thermal(T0 + 7200.0 + k, "node-000", 0), [])
    assert replayed.clock == T0 + 7202.0
