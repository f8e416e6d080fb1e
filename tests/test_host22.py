"""Room host22, round 22: blind12 B2 (a rank's non-finite grads hidden by loss-scale skips)
and B3 (a CPU hog under every job of one node).

B2 (detector.overflow_source): under fp16 loss scaling an overflow on any rank makes every
rank skip the step (checksums unchanged); only the ranks whose local gradients were not finite
send a null ``grad_norm``.  Overflows come from random ranks; one rank the sole source again
and again, beyond chance among its peers, is its GPU: an sdc escalation at that GPU.
"""

from __future__ import annotations

import numpy as np

from detector.alerts import ESCALATION
from detector.engine import Engine
from detector.statecodec import decode_state, encode_state
from detector.steps import JobMonitor
from detector.testing import T0, feed, step
from detector.thresholds import Thresholds


def _fp16_job(sources, *, steps: int = 400, ranks: int = 16, tp: int = 1,
              checksums: bool = True, skips: bool = True) -> list:
    """A TP``tp`` x DP job of ``ranks`` ranks; ``sources(s)`` names the ranks whose local
    grads overflow on step ``s`` (null grad_norm); the step is skipped by every rank (its
    checksum unchanged) when ``skips``."""
    out, version = [], 0
    for s in range(steps):
        bad = set(sources(s))
        if not (bad and skips):
            version += 1
        for r in range(ranks):
            out.append(step(T0 + s + 0.001 * r, r, s, tp=r % tp, dp=r // tp,
                            grad_norm=None if r in bad else 1.0 + 0.01 * ((r * 7 + s) % 5),
                            checksum=f"c{version}-{r % tp}" if checksums else None))
    return out


def _sdc_pages(alerts: list) -> list[tuple[str, str, str, str]]:
    return [(a.status, a.topic, a.kind, a.scope.key) for a in alerts
            if a.kind == "sdc" and a.status == "firing"]


EVERY_9 = {40 + 9 * i for i in range(12)}  # rank 5's overflows: 1 step in 9 from step 40


def test_one_rank_the_sole_source_of_skipped_steps_is_its_gpus_sdc_escalation() -> None:
    # Fails on main 6362f74: nothing sent (blind12 B2).
    alerts = feed(Engine(), _fp16_job(lambda s: [5] if s in EVERY_9 else []))
    assert _sdc_pages(alerts) == [("firing", ESCALATION, "sdc", "gpu:node-000/5")]
    (a,) = [a for a in alerts if a.kind == "sdc"]
    sig = a.evidence["signals"][0]
    assert sig["signal"] == "overflow_source" and sig["rank"] == 5
    # 16 x P(Bin(k, 1/16) >= k) <= 1e-3 first at k = 4: the fourth skip
    assert sig["sole_null_steps"] == [40, 49, 58, 67] and a.onset_ts == T0 + 40 + 0.005


def test_overflows_at_random_ranks_page_nobody() -> None:
    # Routine: an overflow every ~20 steps, from a random rank (the data's tail) -- 20 sole
    # sources spread over 16 peers -- or from several ranks at once.
    rng = np.random.default_rng(3)
    plan = {s: sorted(set(rng.integers(0, 16, size=rng.choice([1, 1, 1, 3])).tolist()))
            for s in range(20, 400, 19)}
    alerts = feed(Engine(), _fp16_job(lambda s: plan.get(s, [])))
    assert _sdc_pages(alerts) == []


def test_a_whole_tensor_parallel_column_overflowing_pages_nobody() -> None:
    # TP4 x DP4: routine overflows null a whole TP column (4 ranks), step after step.
    alerts = feed(Engine(), _fp16_job(lambda s: [1, 5, 9, 13] if s in EVERY_9 else [], tp=4))
    assert _sdc_pages(alerts) == []


def test_a_null_grad_norm_without_a_skip_is_missing_not_an_overflow() -> None:
    # Rank 5's collector leaves grad_norm out now and then, the job steps on (checksums move):
    # DESIGN's missing value, no skip; and a job with no checksums tells no skip at all.
    plan = lambda s: [5] if s in EVERY_9 else []  # noqa: E731
    assert _sdc_pages(feed(Engine(), _fp16_job(plan, skips=False))) == []
    assert _sdc_pages(feed(Engine(), _fp16_job(plan, checksums=False))) == []


def test_a_one_gpu_jobs_overflows_have_no_peer_to_blame() -> None:
    alerts = feed(Engine(), _fp16_job(lambda s: [0] if s % 5 == 0 else [], ranks=1))
    assert _sdc_pages(alerts) == []


def test_overflow_sources_survive_a_snapshot() -> None:
    mon = JobMonitor("job-1", Thresholds())
    found: list = []
    events = _fp16_job(lambda s: [5] if s in EVERY_9 else [], steps=60)
    for e in events:
        mon.add(e, found)
    back = decode_state(encode_state(mon))
    back.check_restored()
    assert back._overflow.events == mon._overflow.events and back._overflow.seq > 0


# -- B3: a CPU hog under every job of one node (detector.host_rise, detector.host_node) ------

FLEET = [("j-a", "node-0", 1), ("j-b", "node-0", 2), ("j-c", "node-1", 1), ("j-d", "node-1", 2),
         ("j-e", "node-2", 1), ("j-f", "node-2", 4), ("j-g", "node-3", 2), ("j-h", "node-3", 1)]


def _fleet(extra_ms, *, seconds: int = 300, seed: int = 0) -> list:
    """Eight unrelated jobs of 1-4 GPUs, two on each of four nodes, each at its own pace
    (0.6-1.0 s steps, 20-40 ms in neither); ``extra_ms(job, node, t)`` is added to a step's
    time in neither (a host's trouble)."""
    rng = np.random.default_rng(seed)
    events = []
    for k, (job, node, n) in enumerate(FLEET):
        compute, other = 500.0 + 60.0 * k, 20.0 + 2.5 * k
        t, s = T0 + 0.1 * k, 0
        while t < T0 + seconds:
            extra = extra_ms(job, node, t - T0)
            c = compute * (1 + 0.02 * rng.standard_normal(n))
            o = other * rng.uniform(0.8, 1.2, n) + extra
            step_ms = float((c + o).max()) + 60.0
            for r in range(n):
                events.append(step(t + 0.001 * r, r, s, job=job, node=node, gpu=k % 2 * 4 + r,
                                   step_ms=round(step_ms, 2), compute_ms=round(float(c[r]), 2),
                                   comm_ms=round(step_ms - float(c[r] + o[r]), 2)))
            t += step_ms / 1000.0
            s += 1
    return sorted(events, key=lambda e: e.ts)


def _node_pages(alerts: list) -> list[tuple[str, str, str]]:
    return [(a.topic, a.cause, a.scope.key) for a in alerts
            if a.status == "firing" and a.kind == "slow_node"]


def test_every_job_on_one_node_slowed_by_its_host_is_the_nodes_escalation() -> None:
    # Fails on main 6362f74: nothing sent (blind12 B3).  From 120 s something on node-2 takes
    # CPU: both its jobs (1 and 4 GPUs) spend +250 ms a step in neither.
    alerts = feed(Engine(), _fleet(lambda j, n, t: 250.0 if n == "node-2" and t >= 120 else 0))
    assert _node_pages(alerts) == [(ESCALATION, "unknown", "node:node-2")]
    (a,) = [a for a in alerts if a.scope.key == "node:node-2"]
    assert T0 + 120 <= a.onset_ts <= T0 + 122 and a.detected_ts - a.onset_ts < 60
    sig = a.evidence["signals"][0]
    assert sig["signal"] == "host_node" and sig["jobs_risen"] == 2
    assert sig["other_nodes_busy"] == 3 and sig["other_nodes_risen"] == 0


def test_a_stall_on_every_node_at_once_pages_nobody() -> None:
    # A shared file system stalls every job's loader on every node: no node is the cause.
    alerts = feed(Engine(), _fleet(lambda j, n, t: 250.0 if t >= 120 else 0))
    assert _node_pages(alerts) == []


def test_one_jobs_own_input_slowing_pages_nobody() -> None:
    # One job's loader slows (its data, its pipeline); its node mate is fine.
    alerts = feed(Engine(), _fleet(lambda j, n, t: 250.0 if j == "j-f" and t >= 120 else 0))
    assert _node_pages(alerts) == []


def test_a_checkpoint_of_two_jobs_on_one_node_pages_nobody() -> None:
    # Both jobs of node-2 save a checkpoint at once (8 s in neither, one step each), twice.
    alerts = feed(Engine(), _fleet(lambda j, n, t: 8000.0 if n == "node-2" and (
        100 <= t < 101 or 200 <= t < 201) else 0))
    assert _node_pages(alerts) == []


def test_host_rises_survive_a_snapshot() -> None:
    from detector import host_node
    from detector.monitors import Monitors
    from detector.pipeline.correlator import CorrelatorPartition

    mon, part = Monitors(), CorrelatorPartition(0)
    found: list = []
    for e in _fleet(lambda j, n, t: 250.0 if n == "node-2" and t >= 120 else 0, seconds=140):
        mon.process(e, found)
    for f in found:
        part.correlator.on_finding(f, [])
    rises = part.correlator._host_rise
    assert sorted(rises.get("node-2", {})) == ["j-e", "j-f"] and host_node.check(rises)
    back = decode_state(encode_state(part.correlator))
    assert back._host_rise == rises
    job = mon._jobs["j-f"]
    again = decode_state(encode_state(job))
    again.check_restored()
    assert again._hr_keys == ["node-2"] and np.array_equal(again._hr, job._hr, equal_nan=True)
