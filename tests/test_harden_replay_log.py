"""Adversarial review (room harden, round 8): an incident log is a file a user hands over.

The rule (replay/log.py, README "Using it"): reading never stops at a bad line --
its problem is counted and the next line is read -- and a replay never ends in
a traceback.  These are shapes the fuzzer (tests/test_fuzz.py) does not make:
labels whose fields have the wrong type, and one line far over the message
limit (a gzip stream expands 1,000-fold, so a small file holds a huge line).
Each runs :func:`replay.runner.replay_log`, what ``faultline replay`` runs per log.
"""

from __future__ import annotations

import gzip
import tracemalloc
from pathlib import Path
from typing import Any

import pytest

from replay.log import InvalidRecord, read_records, write_records
from replay.runner import replay_log

T0 = 1767225600.0
LABEL = {"fault_id": "f1", "kind": "hardware", "cause": "gpu_memory",
         "scope": {"level": "gpu", "node": "n0", "gpu": 0}, "start_ts": T0,
         "end_ts": T0 + 10.0, "attributable": True}


def _log(tmp: Path, labels: list[dict[str, Any]]) -> Path:
    path = tmp / "incident.jsonl.gz"
    recs: list[dict[str, Any]] = [
        {"topic": "telemetry.ecc", "value": {"ts": T0 + i, "node": "n0", "gpu": 0,
                                             "dbe_volatile": int(i >= 3)}}
        for i in range(6)]
    recs += [{"topic": "labels", "value": v} for v in labels]
    write_records(path, recs)
    return path


# -- pins --------------------------------------------------------------------------------

@pytest.mark.parametrize("changes", [
    {"scope": {"level": "gpu", "node": "n0", "gpu": "0"}}, {"scope": None},
    {"kind": "cosmic_ray"}, {"start_ts": "yesterday"},
    {"scope": {"level": "node", "node": ["n0"]}}, {"end_ts": T0 - 100.0},
], ids=lambda c: ",".join(c))
def test_a_bad_label_is_counted_or_scored_and_the_replay_ends(changes: dict[str, Any],
                                                             tmp_path: Path) -> None:
    res = replay_log(_log(tmp_path, [{**LABEL, **changes}, LABEL]))
    assert [a.dedup_key for a in res.fired()] == ["fl:iso:hardware:gpu:n0/0"]
    card = res.scorecard()
    assert sum(r.caught for r in card.rows) == 1  # the good label is caught


# -- findings ----------------------------------------------------------------------------

@pytest.mark.parametrize("changes", [{"start_ts": None}, {"end_ts": [1]},
                                     {"start_ts": {"t": 1}}], ids=lambda c: ",".join(c))
def test_a_label_with_a_null_time_does_not_end_the_replay(changes: dict[str, Any],
                                                          tmp_path: Path) -> None:
    res = replay_log(_log(tmp_path, [{**LABEL, **changes}, LABEL]))
    assert sum(res.invalid.values()) == 1
    assert sum(r.caught for r in res.scorecard().rows) == 1


@pytest.mark.parametrize("changes", [{"attributable": "false"}, {"start_ts": "nan"},
                                     {"end_ts": "inf"}], ids=lambda c: ",".join(c))
def test_a_label_field_of_the_wrong_type_is_counted_not_coerced(changes: dict[str, Any],
                                                               tmp_path: Path) -> None:
    res = replay_log(_log(tmp_path, [{**LABEL, "fault_id": "bad", **changes}, LABEL]))
    assert [lab.fault_id for lab in res.labels] == ["f1"]
    assert sum(res.invalid.values()) == 1


def test_one_huge_line_is_refused_without_being_held_in_memory(tmp_path: Path) -> None:
    path = tmp_path / "bomb.jsonl.gz"
    line = b'{"topic": "telemetry.ecc", "value": "' + b"x" * (64 << 20) + b'"}\n'
    good = b'{"topic": "labels", "value": {"a": 1}}\n'
    path.write_bytes(gzip.compress(line + good, compresslevel=1))
    assert path.stat().st_size < 1 << 20
    tracemalloc.start()
    try:
        got = list(read_records(path))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 16 << 20, f"peak {peak / 2**20:.0f} MiB reading one line"
    assert not isinstance(got[-1], InvalidRecord) and got[-1].topic == "labels"
