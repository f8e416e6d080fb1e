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
