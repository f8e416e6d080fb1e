"""A TP group's partners are its TP group, not its pipeline (stage44, round 44; issue 10).

tray43's detector/correlate/trays.py decides a TP group spanning nodes together: it gathered a
slow rank's "group" on other nodes by job, replica and pace (the same deviation within 3
steps), for a finding carried no ``tp_rank``/``pp_rank``.  In a pipeline every stage waits for
the slowest, so a stage's slow GPU paces its replica's other stages alike (Megatron's timer
holds the p2p waits in ``compute_ms``): they were taken for its TP partners, and its decision
waited for every stage's GPUs' rows -- blind15's stage-gpu-clock paged 22.5-31.4 s after onset
(11.1-11.8 s before tray43).  A slow rank's finding now carries its ``tp_rank`` and
``pp_rank`` (the step records' fields), and a TP group is one job, replica and stage.
"""

from __future__ import annotations

import math

import numpy as np
import orjson

from bench.blind15.measure import replay
from detector.alerts import Scope
from detector.correlate import Correlator
from detector.correlate.trays import _same_group
from detector.findings import Finding, decode_message, finding_of
from detector.steps import JobMonitor
from detector.testing import T0, step
from detector.thresholds import Thresholds
from tests import blindcases as bc

CASES = bc.cases_of("blind15")


def _job(tp: int, pp: int, dp: int, *, slow: int, steps: int = 160, seed: int = 440201,
         placed: bool = True) -> list:
    """A TP x PP x DP job on 8-GPU nodes (a TP group on one node); rank ``slow`` computes
    1.25x from step 80.  ``placed``: the records carry tp/pp/dp_rank (else pure DP)."""
    rng = np.random.default_rng(seed)
    n = tp * pp * dp
    events = []
    for s in range(steps):
        compute = 1000.0 * rng.lognormal(0.0, 0.01, n)
        if s >= 80:
            compute[slow] *= 1.25
        for r in range(n):
            where = dict(tp=r % tp, pp=(r // tp) % pp, dp=r // (tp * pp)) if placed else {}
            events.append(step(T0 + 1.5 * s + 0.001 * r, r, s, job="pp-job", node=f"n{r // 8}",
                               gpu=r % 8, step_ms=1400.0, compute_ms=round(float(compute[r]), 2),
                               **where))
    return events


def _slow_findings(events: list) -> list[Finding]:
    mon = JobMonitor("pp-job", Thresholds())
    out: list[Finding] = []
    for e in events:
        mon.add(e, out)
    mon.expire(math.inf, out)
    return [f for f in out if f.signal == "slow_rank" and f.active]


def test_a_slow_rank_finding_carries_its_tp_and_pp_rank() -> None:
    # TP 4 x PP 2 x DP 4: rank 29 is tp 1, stage 1, replica 3 (the records' own fields).
    found = _slow_findings(_job(4, 2, 4, slow=29))
    assert found and {(f.rank, f.tp_rank, f.pp_rank, f.dp_rank) for f in found} == {
        (29, 1, 1, 3)}, found
    # No place told: pure data parallelism (DESIGN: tp_rank = pp_rank = 0, dp_rank = rank).
    found = _slow_findings(_job(4, 2, 4, slow=13, placed=False))
    assert found and {(f.rank, f.tp_rank, f.pp_rank, f.dp_rank) for f in found} == {
        (13, 0, 0, 13)}, found


def test_a_findings_message_carries_the_place() -> None:
    f = Finding(T0 + 9.0, T0, "slow_rank", "slow_node", "unknown", Scope.of_gpu("n3", 5), True,
                True, 0.9, {"step": 12}, "pp-job", None, None, 29, 1, False, 5, 3)
    msg = decode_message(orjson.dumps({"type": "finding", "source": "s", "id": [1, 0],
                                       "tag": f.ts, "finding": f.to_dict()}), wall_s=T0 + 60)
    got = finding_of(msg.finding)
    assert got == f and (got.tp_rank, got.pp_rank) == (5, 3)


def _rank(node: str, gpu: int, dp: int, pp: int | None, tp: int | None) -> Finding:
    return Finding(T0 + 9.0, T0 + 5.0, "slow_rank", "slow_node", "unknown",
                   Scope.of_gpu(node, gpu), True, True, 0.9,
                   {"step": 40, "compute_ratio_to_peers": 1.09, "mean_ratio_over_run": 1.09},
                   "tp-job", None, None, 8 * gpu, dp, False, tp, pp)


def test_only_the_same_stage_of_the_replica_is_a_tp_partner() -> None:
    # A TP 8 group over trays t-06 and t-07 (replica 1, stage 1); t-04's ranks are stage 0 of
    # the same replica, slowed alike by the pipeline (its p2p waits in compute_ms): not its group.
    c = Correlator(Thresholds())
    f = _rank("t-06", 1, 1, 1, 1)
    mates = {"t-07": _rank("t-07", 0, 1, 1, 4), "t-04": _rank("t-04", 0, 1, 0, 0),
             "t-08": _rank("t-08", 0, 2, 1, 0)}
    for g in mates.values():
        c._device[g.scope.key] = {"slow_rank": g}
    partners, pipe = c._tp_partners(f)
    assert [g.scope.node for g in partners] == ["t-07"]
    assert [g.scope.node for g in pipe] == ["t-04"]  # (its pipeline mate)
    # A finding from before stage44 (no stage told) is taken to be of any stage (pace decides).
    old = f._replace(tp_rank=None, pp_rank=None)
    partners, pipe = c._tp_partners(old)
    assert sorted(g.scope.node for g in partners) == ["t-04", "t-07"] and not pipe
    assert _same_group(f, mates["t-07"]) and not _same_group(f, mates["t-08"])


def _caught_in(name: str, tmp_path) -> list[float]:
    sc = replay(CASES / f"{name}.jsonl.gz", tmp_path / f"{name}.alerts.jsonl")
    assert sc["faults"] and all(f["caught"] and f["cause_ok"] for f in sc["faults"]), sc
    assert all(p["caught"] for p in sc["problems"]), sc["problems"]
    return [f["latency_s"] for f in sc["faults"]]


def test_a_pipeline_stages_held_gpu_clock_is_paged_without_waiting_for_the_other_stages(
        tmp_path) -> None:
    # blind15's cuts of tune pipe-s1 / pipe-s3 (TP 4 x PP 4 x DP 4, the TP groups on one node):
    # one GPU's clock held 14 %, its replica's 3 other stages paced alike.  Paged on main
    # fd92f53 at 31.3 / 28.0 s (tray43's partners: the other stages, a wait for all their
    # GPUs' rows); 10.9 / 8.8 s here (11.1-11.8 s before tray43).
    for name in ("O2-stage-gpu-replica-escalated", "O2b-stage-gpu-replica-read-as-batch"):
        assert max(_caught_in(name, tmp_path)) <= 15.0, name
