"""blind17 (round 26): the generator is deterministic, every record keeps DESIGN's input contract
except the skewed hosts' `ts` (on purpose, and only theirs), every label is a valid DESIGN label
that spans records of its unit, and a small log replays through `faultline replay` (exit status
only: the detector's answers are measured by bench/blind17/measure.py, not pinned here). The
checker is blind12's."""

from __future__ import annotations

import json

import pytest

from bench.blind17 import generate
from bench.blind17.measure import replay
from bench.blind17.stories import FQDN
from tests.test_blind12_generate import _breaches, _label_breaches, _records


def _skewed(log) -> set[str]:
    fx = json.loads(log.with_name(log.name.replace(".jsonl.gz", ".effects.json")).read_text())
    return {e["scope"]["node"] for e in fx if e["effect"].startswith("clock-")}


@pytest.mark.parametrize("story", ["clocks", "names"])
def test_generator_is_deterministic_and_keeps_the_contract(story, tmp_path):
    logs = [generate.write(tmp_path / d, story, 5, minutes=6.0) for d in ("one", "two")]
    assert logs[0].read_bytes() == logs[1].read_bytes()
    recs = _records(logs[0])
    skewed = _skewed(logs[0])
    assert len(skewed) == (2 if story == "clocks" else 0)
    # only the skewed hosts' rows break the 5 s disorder bound, and they do
    straight = [r for r in recs if r["value"].get("node") not in skewed]
    assert _breaches(straight) == []
    assert bool(_breaches(recs)) == bool(skewed)
    assert _label_breaches(recs) == []
    labels = {r["value"]["fault_id"] for r in recs if r["topic"] == "labels"}
    assert len(labels) == (3 if story == "clocks" else 4)


def test_the_xid_after_the_clock_step_is_older_than_what_its_host_sent(tmp_path):
    """The shape the clocks story exists for: the host ran 12-25 s ahead, chrony stepped it
    back, and its XID 92 row carries a ts over 5 s older than rows the host already sent."""
    recs = _records(generate.write(tmp_path, "clocks", 3))
    lab = next(r["value"] for r in recs if r["topic"] == "labels"
               and r["value"]["fault_id"] == "late-xid92")
    node = lab["scope"]["node"]
    i = next(i for i, r in enumerate(recs) if r["value"].get("xid") == 92)
    before = max(r["value"]["ts"] for r in recs[1:i] if r["value"].get("node") == node)
    assert recs[i]["value"]["ts"] == lab["start_ts"]
    assert before - lab["start_ts"] > 5.0


def test_names_restart_and_fqdn(tmp_path):
    """The names story: gn05-09's DCGM rows carry the FQDN, their step rows the short name;
    the elastic restart repeats step numbers with other checksums under the same job id."""
    recs = _records(generate.write(tmp_path, "names", 2))
    th = {r["value"]["node"] for r in recs if r["topic"] == "telemetry.thermal"}
    st = {r["value"]["node"] for r in recs if r["topic"] == "telemetry.step"}
    assert "gn06" + FQDN in th and "gn06" not in th and "gn06" in st
    sums: dict = {}
    for r in recs:
        v = r["value"]
        if r["topic"] == "telemetry.step" and v["job"] == "el-n" and "param_checksum" in v:
            sums.setdefault((v["step"], v["tp_rank"]), set()).add(v["param_checksum"])
    assert any(len(s) == 2 for s in sums.values())


def test_seeds_differ(tmp_path):
    a, b = (_records(generate.write(tmp_path, "names", k, minutes=3.0)) for k in (1, 2))
    assert [r["value"] for r in a if r["topic"] == "labels"] != [
        r["value"] for r in b if r["topic"] == "labels"]


def test_a_small_log_replays(tmp_path):
    """`faultline replay` exits 0 on a 3-minute log (blind12's runner; the score is not read)."""
    replay(generate.write(tmp_path, "clocks", 6, minutes=3.0), tmp_path / "alerts.jsonl")
