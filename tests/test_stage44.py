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
from detector.engine import Engine
from detector.findings import Finding, decode_message, finding_of
from detector.steps import JobMonitor
from detector.testing import T0, feed, step, thermal
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


# -- a pipeline's stages paced by one stage's GPU (Megatron's timer: the p2p waits in compute_ms)
# TP 8 x PP 2 x DP 3 (48 ranks): on 4-GPU trays (a TP group over two trays, blind33's GB200)
# or on 8-GPU nodes (a TP group on one node, blind15's layout).  Group g = rank // 8 is replica
# g // 2, stage g % 2.  The fault: group 3's GPU 25 (replica 1, stage 1) from step 130; group
# 2 (replica 1, stage 0) paced alike.  Thermal rows every 10 s on each GPU's own phase.
TP, PP, DP = 8, 2, 3
N = TP * PP * DP
FAULT_RANK, STAGE_GROUP, PACED_GROUP = 25, 3, 2


def _pipeline(seed: int, per_node: int, shows: str, *, steps: int = 260,
              slow_from: int = 130, factor: float = 1.09) -> tuple[list, float]:
    """Events in event-time order, and the fault's start.  ``shows``: what the fault GPU's
    rows show -- "ramp" (0x4 at 90 % of its mates' draw, clock -8 %), "shallow" (0x4 at
    96.5 % of their draw, clock -3 %), "heat" (87 C, 0x20, clock -5 %) or "clock" (clock
    -10 %, no reason: blind15's stage-gpu-clock)."""
    rng = np.random.default_rng(seed)
    base = 1650.0 * np.where((np.arange(N) // TP) % PP == 1, 1.04, 1.0)
    slowed = (np.arange(N) // TP == STAGE_GROUP) | (np.arange(N) // TP == PACED_GROUP)
    events: list = []
    for s in range(steps):
        compute = base * rng.lognormal(0.0, 0.01, N // TP).repeat(TP) * rng.lognormal(
            0.0, 0.001, N)
        if s >= slow_from:
            compute[slowed] *= factor
        step_ms = float(compute.max()) + 320.0
        for r in range(N):
            events.append(step(T0 + 1.7 * s + 0.001 * r, r, s, job="tp-job",
                               node=f"t-{r // per_node:02d}", gpu=r % per_node,
                               step_ms=round(step_ms, 2), compute_ms=round(float(compute[r]), 2),
                               tp=r % TP, pp=(r // TP) % PP, dp=r // (TP * PP)))
    fault_ts = T0 + 1.7 * slow_from
    end = T0 + 1.7 * steps
    for r in range(N):
        node, gpu = f"t-{r // per_node:02d}", r % per_node
        t = T0 + rng.uniform(0.0, 10.0)
        while t < end:
            temp, clock, power, bits = 60.0 + rng.normal(0, 0.5), 2040.0, 1000.0, 0
            power += rng.normal(0.0, 8.0)
            if r == FAULT_RANK and t >= fault_ts:
                if shows == "ramp":
                    clock, power, bits = 2040.0 * 0.92, 0.9 * power, 0x4
                elif shows == "shallow":
                    clock, power, bits = 2040.0 * 0.97, 0.965 * power, 0x4
                elif shows == "heat":
                    temp, clock, bits = 87.0, 2040.0 * 0.95, 0x20
                else:
                    clock = 2040.0 * 0.90
            events.append(thermal(t, node, gpu, temp_c=temp, clock_mhz=clock, throttle=bits,
                                  power_w=power))
            t += 10.0
    return sorted(events, key=lambda e: e.ts), fault_ts


def _pages(events: list) -> list:
    return [a for a in feed(Engine(), events) if a.status == "firing"]


def test_a_stage_paced_by_a_held_gpu_joins_its_page() -> None:
    # On main fd92f53: 8 of these 12 logs paged the paced stage beside the GPU's page (its node
    # t-02 on 8-GPU nodes, 8.5-9.5 s; replica 1 on trays, 18.6 s) -- its ranks are slow alike
    # but not a TP group's (_alike) nor on a node showing why.
    for per_node, node in ((8, "t-03"), (4, "t-06")):
        for shows, cause in (("ramp", "power"), ("heat", "thermal")):
            for seed in range(3):
                pages = {(a.topic, a.cause, a.scope.key) for a in _pages(
                    _pipeline(440200 + seed, per_node, shows)[0])}
                assert pages == {("alerts.isolation", cause, f"node:{node}")}, (
                    per_node, shows, seed, pages)


def test_a_ramp_limited_a_little_on_a_paced_pipeline_is_its_tray() -> None:
    # tray43's "shallow" ramp (0x4, clock -3 %, ~3.5 % under its mates' draw: named by
    # elimination, trays._lone_reason) with the other stage paced alike: on main fd92f53 the
    # paced stage's group (trays t-04, t-05) escalated replica 1 in 2 of 3 (one of them the
    # only page); the held stage's ranks on t-07 found a step later at 1.060x against t-06's
    # 1.067-1.072x were no partners by lockstep (_alike), and the lone GPU was looked for on
    # the paced group's own trays only.
    for seed in range(3):
        pages = {(a.topic, a.cause, a.scope.key) for a in _pages(
            _pipeline(440200 + seed, 4, "shallow", factor=1.06)[0])}
        assert pages == {("alerts.isolation", "power", "node:t-06")}, (seed, pages)


def test_a_stage_gpu_clock_held_is_paged_at_its_gpu_within_its_rows() -> None:
    # No reason bit, one TP group on one node (blind15's stage-gpu-clock): the GPU's
    # escalation as soon as its node's row after the slowdown is in, not a wait for the
    # other stage's rows (tray43's partners by pace: 18.6 s on main for seed 440202).
    for seed in range(3):
        events, fault_ts = _pipeline(440200 + seed, 8, "clock")
        pages = _pages(events)
        assert {(a.topic, a.scope.key) for a in pages} == {
            ("alerts.escalation", "gpu:t-03/1")}, (seed, pages)
        assert pages[0].detected_ts - fault_ts <= 12.0, (seed, pages[0].detected_ts - fault_ts)
