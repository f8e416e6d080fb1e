"""hang24 (round 24): a job let go after a silence of spinning GPUs -- the watchdog's kill read
at 30 s telemetry -- is no hung rank (blind2 tune's three false `unattributed` node pages).

A hung job's GPUs hold still from its last step on: its peers spin, its hung rank idles.  A GPU
of it busy after that and idle since was a spinning peer, let go; the job's GPUs still told busy
are only those sampled before the kill (a 30 s sample is up to 30 s old)."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest

from detector import hang
from detector.alerts import Scope
from detector.findings import Finding
from detector.liveness import stop_s
from detector.pipeline.correlator import CorrelatorPartition
from detector.statecodec import UNSIGNED, SnapshotRefused
from detector.testing import T0
from tests.test_hang23 import _replay

ROOT = Path(__file__).resolve().parent.parent
# blind2 tune superpod-slow-30-s01 (/tmp/blind2/corp/tune), [last - 90 s, last + 200 s] about
# eval-sweep's last step (last = 1793090446.73): eval-sweep's steps (32 ranks on su1-dgx13..16,
# 0.97 s steps) and the thermal samples (30 s) of su1-dgx13..16 and of su1-dgx07, su1-dgx09
# (whose samples set the source's scan times as the whole log's other records do).  An XID 13
# at `last` holds the job (every GPU spinning in NCCL) until the watchdog kills it 120 s on;
# su1-dgx13 is sampled 0.6 s after the kill (8 GPUs idle), su1-dgx14..16 not yet (busy, their
# samples 10-20 s old).  The look at 126.3 s read "24 GPUs busy, one node's 8 idle": main paged
# node:su1-dgx13 (the whole log: 125.9 s; s00 su1-dgx15, mixed-30-10 s01 su1-dgx16 the same).
KILL = ROOT / "tests" / "data" / "blind2-superpod-slow-30-s01-watchdog-kill.jsonl.gz"


def test_a_job_the_watchdog_killed_read_before_every_node_is_sampled_is_no_hang(
        tmp_path, monkeypatch):
    alerts, looks = _replay(KILL, tmp_path, monkeypatch)
    # The shape the rule reads was there (su1-dgx13's 8 GPUs idle, the other 24 told busy) ...
    assert ("eval-sweep", ("su1-dgx13", list(range(8)), 32)) in looks
    # ... but those 8 had spun 120 s after the job's last step: peers let go, not a hung rank.
    assert [a for a in alerts if a["kind"] == "unattributed"] == []


# -- the correlator told so (job_layout, gpus_busy, the job's silence) -------------------------

NODES = ("node-a", "node-b", "node-c", "node-d")
LAST = T0 + 100.0   # the job's last step
PERIOD = 1.0


def _job(told: list[tuple[float, str, list[int] | None]], look: float) -> tuple[Any, list]:
    """A 32-rank job on NODES (8 GPUs each, every GPU busy from T0) steps every second to LAST;
    then each node's GPUs as ``told`` ((ts, node, its idle GPUs; None: all idle)), the job's
    stop, and its source's look at ``look`` s of silence: the correlator and its alerts."""
    corr = CorrelatorPartition(0).correlator
    corr.seen = lambda node, topic: True
    corr._interval.update({n: (30.0, T0) for n in NODES})  # (DCGM every 30 s)
    out: list = []
    layout = [[8 * i + g, n, g, 8 * i + g] for i, n in enumerate(NODES) for g in range(8)]
    job = Scope.of_job("job-1")
    corr.on_finding(Finding(T0, T0, "job_layout", "slow_node", "unknown", job, True, False,
                            0.0, {"placement": layout}, "job-1"), out)
    events = [(T0, n, []) for n in NODES] + told
    for ts, node, idle in sorted(events, key=lambda e: e[0]):
        corr.on_finding(Finding(ts, ts, "gpus_busy", "slow_node", "power", Scope.of_node(node),
                                idle is not None, False, 0.0,
                                {} if idle is None else {"idle_gpus": idle}), out)
    ev = {"last_step_ts": LAST, "step_period_s": PERIOD}
    corr.on_finding(Finding(LAST + stop_s(PERIOD), LAST, "silent", "unattributed", "unknown",
                            job, True, False, 0.0, ev, "job-1"), out)
    corr.on_finding(Finding(LAST + look, LAST, "silent", "unattributed", "unknown", job, True,
                            False, 0.0, {**ev, "hang_s": hang.hang_s(PERIOD)}, "job-1"), out)
    corr.advance(LAST + look + 1.0, out)
    return corr, out


def _pages(out: list) -> list[tuple[str, str, str]]:
    return [(a.status, a.kind, a.scope.key) for a in out]


@pytest.mark.parametrize("idle", [None, [0, 1, 2, 3, 4, 5, 6]], ids=["node", "7-of-8"])
def test_gpus_that_spun_through_the_silence_then_idled_are_no_hung_rank(idle) -> None:
    # The watchdog kills the job 120 s after its last step; node-a is sampled 0.6 s after
    # (all its GPUs idle, or 7 of 8: the eighth's sample not yet), the other nodes' last
    # samples, busy, are older.  Before: a node (or 7 GPUs) of one node idle, 24 busy -- named.
    _, out = _job([(LAST + 120.6, "node-a", idle)], look=125.9)
    assert _pages(out) == []


def test_control_a_whole_node_hung_from_the_last_step_is_named() -> None:
    # Every rank of one host stuck (its data loaders on a hung mount): its GPUs idle from the
    # job's last step (sampled within 30 s), its peers on the other nodes spin: still named.
    _, out = _job([(LAST + 20.0, "node-a", None)], look=60.0)
    assert _pages(out) == [("firing", "unattributed", "node:node-a")]


def test_control_a_rank_idle_from_the_last_step_is_named_after_the_others_spun_on() -> None:
    # node-a/3 idles from its next sample after the last step (the hung rank), the others spin
    # on: named at the first look, its idle time within a step and 1.5 samples of the last.
    _, out = _job([(LAST + 29.0, "node-a", [3])], look=60.0)
    assert _pages(out) == [("firing", "unattributed", "gpu:node-a/3")]


def test_idle_since_keeps_a_gpu_s_time_through_its_node_s_calm_and_a_snapshot() -> None:
    corr, _ = _job([(LAST + 10.0, "node-a", [1]), (LAST + 40.0, "node-a", None),
                    (LAST + 70.0, "node-a", [1, 2])], look=80.0)
    # node-a/1 idle since +10 (told), node-a/2 since the node's calm at +40, /0 busy again
    assert [corr.idle_since("node-a", g) for g in (0, 1, 2)] == [None, LAST + 10.0, LAST + 40.0]
    assert corr.idle_since("node-b", 0) is None  # (busy)
    assert corr.idle_since("node-z", 0) is None  # (never told)
    part = CorrelatorPartition(0, now=T0)
    part.correlator = corr
    offset, blob = part.snapshot(UNSIGNED)
    back = CorrelatorPartition.restore(0, offset, blob, now=T0).correlator
    assert back._slept == corr._slept and back._calm == corr._calm
    # a node busy with idle GPUs the correlator never saw busy: idle since before it knew
    corr.on_finding(Finding(LAST + 90, LAST + 90, "gpus_busy", "slow_node", "power",
                            Scope.of_node("node-e"), True, False, 0.0, {"idle_gpus": [5]}), [])
    assert corr.idle_since("node-e", 5) == -math.inf


def test_a_calm_node_s_idle_times_are_forgotten_with_its_monitors() -> None:
    corr, _ = _job([(LAST + 10.0, "node-a", None)], look=60.0)
    assert "node-a" in corr._calm
    corr.seen = lambda node, topic: node != "node-a"
    corr.prune(LAST + 10.0 + corr.cfg.unit_idle_s + 1.0)
    assert "node-a" not in corr._calm and "node-a" not in corr._slept


@pytest.mark.parametrize(("attr", "value"), [
    ("_slept", {"node-a": {"x": 1.0}}), ("_slept", {"node-a": {1: math.inf}}),
    ("_slept", {"node-a": {g: 1.0 for g in range(65)}}), ("_slept", []),
    ("_calm", {"node-a": "x"}), ("_calm", {"node-a": math.nan}), ("_calm", [])],
    ids=lambda v: str(v)[:40])
def test_a_forged_idle_since_state_is_refused(attr: str, value: Any) -> None:
    corr, _ = _job([], look=60.0)
    part = CorrelatorPartition(0, now=T0)
    part.correlator = corr
    setattr(corr, attr, value)
    offset, blob = part.snapshot(UNSIGNED)
    with pytest.raises(SnapshotRefused) as exc:
        CorrelatorPartition.restore(0, offset, blob, now=T0)
    assert exc.value.reason == "malformed" and attr in str(exc.value)
