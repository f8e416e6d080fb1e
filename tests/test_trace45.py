"""trace45 (round 45): what moved unseen in round 44.

blind31 tune's new false page (vlm-s0, v-04 GPU 2 escalated slow_node/unknown; not on round
43's aadda6a) bisected to noise44's fleet bar (aa59387, JobMonitor._fleet_held): a TP group's
ranks wait for one another inside compute, so their runs are one run, but the bar reads each
rank's own mean -- the runs began a step or two apart -- and the first over it was told alone.
The job wanders (its vision stage's data mix), so the held mates were taken back with the
first one's ``node_wide`` (JobMonitor._hold_wandering), and the correlator escalated GPU 2 at
its GPU 22 s after GPU 0's NVLink isolation; its mates, told beside it a step later, joined
that isolation.  Now a held run beside a mate told a verdict on the same step is told with it
(JobMonitor._beside_told's ``now``).  The case: bench/blind31/cases/G9-*.
"""

from __future__ import annotations

import msgspec
import numpy as np
import orjson
import pytest

from detector.correlate import Correlator
from detector.events import STEP
from detector.findings import decode_message
from detector.pipeline.correlator import CorrelatorPartition
from detector.pipeline.source import DeadLetter, Emit, SourcePartition, watermarks
from detector.testing import T0, parallel_step
from replay.runner import replay_log
from tests import blindcases as bc

G9 = bc.cases_of("blind31") / "G9-nvlink-tp-group-under-the-fleet-bar.jsonl.gz"


def test_a_tp_group_over_the_fleet_bar_is_told_whole_and_joins_its_nvlink_page(
        monkeypatch: pytest.MonkeyPatch) -> None:
    told: list[tuple[float, int | None, int | None]] = []  # (ts, gpu, node_wide) of v-04's
    orig = Correlator.on_finding

    def hook(self: Correlator, f, out: list) -> None:  # type: ignore[no-untyped-def]
        if f.signal == "slow_rank" and f.active and f.verdict and f.scope.node == "v-04":
            told.append((f.ts, f.scope.gpu, f.evidence.get("node_wide")))
        orig(self, f, out)

    monkeypatch.setattr(Correlator, "on_finding", hook)
    res = replay_log(G9)
    first = min(ts for ts, _, _ in told)
    # the group's eight ranks told on one step, each as one of eight (main: GPU 2 at 691.3 s
    # alone, no node_wide; the other seven 2.4 s later)
    assert sorted(g for ts, g, _ in told if ts == first) == list(range(8)), told
    assert {w for ts, _, w in told if ts == first} == {8}
    fired = [(a.topic, a.cause, a.scope.key) for a in res.alerts
             if a.status == "firing" and a.scope.node == "v-04"]
    assert fired == [("alerts.isolation", "nvlink", "gpu:v-04/0")]


# -- a slow rank's place (stage44's tp_rank / pp_rank) malformed ------------------------------
# On the step records (telemetry) and on the findings topic (a worker's slow_rank finding,
# untrusted like telemetry): every malformed value is refused with a reason and counted, the
# records and messages around it taken; none crashes a stage or changes an alert.

# (JSON text: 2^64 and NaN are no values a JSON encoder writes; rank 13's place is tp 1, stage 1)
BAD = [b"-1", b"16777216", b"18446744073709551616", b"1.5", b"1.0", b'"1"', b"true", b"[1]",
       b'{"a":1}', b"NaN", b"1e400"]
_BAD_IDS = ["negative", "limit", "2^64", "float", "whole-float", "string", "bool", "list",
            "dict", "nan", "inf"]


def _tp_steps() -> list[bytes]:
    """TP 4 x PP 2 x DP 4 on node-000..003 (detector.testing.parallel_step), rank 13 (node-001
    GPU 5, tp 1, stage 1, replica 1) 1.3x from step 60: step records as a producer writes them."""
    rng = np.random.default_rng(4506)
    out = []
    for s in range(90):
        c = 700.0 * rng.lognormal(0.0, 0.01, 32)
        if s >= 60:
            c[13] *= 1.3
        out += [orjson.dumps(msgspec.to_builtins(e)) for e in parallel_step(s, c, tp=4, pp=2)]
    return out


def _at_rank_13(values: list[bytes], step: int) -> int:
    return next(i for i, v in enumerate(values)
                if (r := orjson.loads(v))["rank"] == 13 and r["step"] == step)


def _source(values: list[bytes]) -> tuple[SourcePartition, list[Emit], list[DeadLetter]]:
    src = SourcePartition(STEP, 0, 1, wall_clock=lambda: T0 + 1000.0)
    emits: list[Emit] = []
    dead: list[DeadLetter] = []
    src.process([(i, b"job-1", v, None) for i, v in enumerate(values)], T0, emits, dead)
    src.caught_up = True
    return src, [*emits, watermarks([src], T0 + 1000.0, 5.0)], dead


def _alerts(src: SourcePartition, emits: list[Emit], forged: list[bytes]
            ) -> tuple[CorrelatorPartition, list[tuple[str, str, float]]]:
    corr = CorrelatorPartition(0, expected=[src.source], now=T0 + 1000.0)
    for offset, raw in enumerate([*forged, *(e.value for e in emits)]):
        corr.on_message(offset, raw, T0 + 1000.0)
    out: list = []
    corr.release(T0 + 1000.0, out)
    return corr, [(a.status, a.dedup_key, a.detected_ts) for a in out]


def _slow_told(emits: list[Emit]) -> list[tuple]:
    return [(f["ts"], f["scope"]["node"], f["scope"]["gpu"], f["tp_rank"], f["pp_rank"])
            for e in emits if (m := orjson.loads(e.value))["type"] == "finding"
            and (f := m["finding"])["signal"] == "slow_rank"]


@pytest.mark.parametrize("field", ["tp_rank", "pp_rank"])
@pytest.mark.parametrize("bad", BAD, ids=_BAD_IDS)
def test_a_step_record_with_a_malformed_place_is_dead_lettered(field: str, bad: bytes) -> None:
    values = _tp_steps()
    _, clean, dead = _source(values)
    assert dead == [] and _slow_told(clean)
    at = _at_rank_13(values, 70)
    values[at] = values[at].replace(f'"{field}":1'.encode(), f'"{field}":'.encode() + bad)
    _, emits, dead = _source(values)
    assert [d.offset for d in dead] == [at] and field in dead[0].reason, dead
    assert _slow_told(emits) == _slow_told(clean)  # (the rank's next steps tell it as before)


@pytest.mark.parametrize("field", ["tp_rank", "pp_rank"])
def test_a_step_record_with_its_place_half_told_is_dead_lettered(field: str) -> None:
    # (null with its two mates given: DESIGN's rule, all three or none)
    values = _tp_steps()
    at = _at_rank_13(values, 70)
    values[at] = values[at].replace(f'"{field}":1'.encode(), f'"{field}":null'.encode())
    _, _, dead = _source(values)
    assert [d.offset for d in dead] == [at] and "all three or none" in dead[0].reason, dead


def _forged_rank(emits: list[Emit], field: str, bad: bytes) -> bytes:
    """The stream's first slow_rank finding (rank 13), re-sent under its source with an
    earlier id and ``field`` written ``bad``."""
    msg = next(m for e in emits if (m := orjson.loads(e.value))["type"] == "finding"
               and m["finding"]["signal"] == "slow_rank" and m["finding"]["active"])
    assert (msg["finding"]["tp_rank"], msg["finding"]["pp_rank"]) == (1, 1)
    msg["id"] = [-1, 0]
    raw = orjson.dumps(msg)
    assert raw.count(f'"{field}":1'.encode()) == 1
    return raw.replace(f'"{field}":1'.encode(), f'"{field}":'.encode() + bad)


@pytest.mark.parametrize("field", ["tp_rank", "pp_rank"])
@pytest.mark.parametrize("bad", BAD, ids=_BAD_IDS)
def test_a_findings_message_with_a_malformed_place_is_refused(field: str, bad: bytes) -> None:
    src, emits, _ = _source(_tp_steps())
    _, clean = _alerts(src, emits, [])
    assert [k for s, k, _ in clean if s == "firing"] == ["fl:esc:slow_node:gpu:node-001/5"]
    raw = _forged_rank(emits, field, bad)
    with pytest.raises(ValueError, match=f"{field}|not JSON"):  # (NaN: no JSON)
        decode_message(raw, wall_s=T0 + 1000.0)
    corr, got = _alerts(src, emits, [raw])
    assert got == clean
    assert corr.invalid + corr.errors == 1


@pytest.mark.parametrize("changes", [{"tp_rank": None}, {"pp_rank": None}, {"rank": None}],
                         ids=["tp-null", "pp-null", "no-rank"])
def test_a_findings_message_with_its_place_half_told_is_refused(changes: dict) -> None:
    # (a finding of one stage made of none: trays' _same_group takes a finding with no stage
    # told -- one from before stage44 -- to be of every stage, so its partners are any)
    src, emits, _ = _source(_tp_steps())
    _, clean = _alerts(src, emits, [])
    msg = next(m for e in emits if (m := orjson.loads(e.value))["type"] == "finding"
               and m["finding"]["signal"] == "slow_rank" and m["finding"]["active"])
    msg["id"] = [-1, 0]
    msg["finding"].update(changes)
    with pytest.raises(ValueError, match="both or neither"):
        decode_message(orjson.dumps(msg), wall_s=T0 + 1000.0)
    corr, got = _alerts(src, emits, [orjson.dumps(msg)])
    assert got == clean and corr.invalid + corr.errors == 1
    # (neither, with its rank: a finding from before stage44, taken)
    msg["finding"].update(tp_rank=None, pp_rank=None, rank=13)
    assert decode_message(orjson.dumps(msg), wall_s=T0 + 1000.0).finding.tp_rank is None
