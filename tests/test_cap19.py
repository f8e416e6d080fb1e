"""cap19 (round 29): blind19 R3 -- a node's power cap paged at one GPU first.

A BMC capping every GPU of a node (0x4 at ~500 W on all eight, the node's ranks slow alike) was
isolated at the GPU whose sample of the poll arrived first, its siblings' samples of the same
poll still on their way; the node's page came 20 s later and the GPU's stayed open (finer than
the fault: a false positive by DESIGN's scoring rule, which no later resolve can undo).  A
capped GPU whose rank is slow alike with its node's others now waits ``why_wait_s`` (the
allowed disorder) for its siblings' samples of that poll: a second GPU capped with it raises the
node's page at once (the same detected_ts as before); none, and the GPU is paged at the end of
the wait.  A rank slow alone on its capped GPU is paged at once, as before.
"""

from __future__ import annotations

import numpy as np
import pytest

from detector.alerts import ISOLATION
from detector.engine import Engine
from detector.testing import T0, feed, parallel_step, thermal
from detector.thresholds import Thresholds

SLOW_FROM = 100          # the slowdown's first step (step s ends at T0 + s)
PHASE = 3.4              # every node's samples at T0 + PHASE + 10 k
SAMPLE = 103.4           # the first sample after the slowdown began (its ranks found by then)
NODES = 3


def _run(capped: set[int], *, tp: int = 1, slow: set[int] | None = None,
         first: int = 4) -> list:
    """24 ranks on node-000..002, 1 s steps; the ranks on node-000's GPUs ``slow`` (default:
    ``capped``) 12 % slower from SLOW_FROM; every GPU sampled every 10 s, clean -- but
    node-000's ``capped`` GPUs from SAMPLE on at 0x4, ~500 W, the clock that explains 12 %.
    At SAMPLE node-000's poll arrives GPU ``first`` first, its siblings' samples 0.3 s of
    event time later, behind the next steps (records of one poll in any order within the
    allowed disorder, as on blind19's BMC nodes)."""
    slow = capped if slow is None else slow
    rng = np.random.default_rng(29)
    events: list = []
    late: list = []
    for s in range(200):
        compute = 700.0 * rng.lognormal(0.0, 0.015, 8 * NODES)
        if s >= SLOW_FROM:
            for g in slow:
                compute[g] *= 1.12
        events += parallel_step(s, compute, tp=tp, pp=1)
    for k in range(20):
        ts = T0 + PHASE + 10.0 * k
        for n in range(NODES):
            for g in range(8):
                cap = n == 0 and g in capped and ts >= T0 + SAMPLE
                ev = thermal(ts, f"node-{n:03d}", g, throttle=0x4 if cap else 0,
                             clock_mhz=1980.0 / 1.12 if cap else 1980.0,
                             power_w=500.0 if cap else 640.0)
                if n == 0 and g != first and ts == T0 + SAMPLE:
                    late.append(ev)
                else:
                    events.append(ev)
    events.sort(key=lambda e: e.ts)
    at = next(i for i, e in enumerate(events) if e.ts > T0 + SAMPLE + 0.3)
    events[at:at] = late
    return [a for a in feed(Engine(), events, finish=False) if a.status == "firing"]


def _pages(alerts: list) -> list[tuple[str, str, str, str, float]]:
    return [(a.topic, a.kind, a.cause, a.scope.key, round(a.detected_ts - T0, 1))
            for a in alerts]


def test_a_node_cap_is_paged_at_the_node_first_not_at_the_gpu_whose_sample_came_first() -> None:
    pages = _pages(_run(set(range(8))))
    assert pages, "the node's cap was paged nowhere"
    assert pages[0][:4] == (ISOLATION, "slow_node", "power", "node:node-000"), pages
    assert not [p for p in pages if p[3].startswith("gpu:")], pages
    # (d1cap, round 31: a cap on every GPU of a node is its own limit only once no other
    # node's cap began within impact_onset_s of it can still be seen -- the page waits for
    # that minute and the next sample after it, as the sustained-cap rule's does, where it
    # came on the cap's sample before: a site's cap reaches its nodes over seconds)
    cfg = Thresholds()
    assert pages[0][4] <= SAMPLE + cfg.impact_onset_s + 1.25 * 10.0 + 1.0 + 0.5, pages


def test_a_cap_on_one_gpu_its_rank_slow_alone_is_paged_at_that_gpu_at_once() -> None:
    pages = _pages(_run({4}))
    assert pages[0] == (ISOLATION, "slow_node", "power", "gpu:node-000/4", SAMPLE), pages
    assert len({p[3] for p in pages}) == 1, pages


def test_a_cap_on_one_gpu_of_a_tp8_node_is_paged_at_its_node_at_once() -> None:
    # TP inside the node: every rank of node-000 waits for GPU 4 in the TP all-reduce, so all
    # eight are slow alike; only GPU 4 is capped.  Its page is the node's (the step records
    # cannot single the GPU out: Correlator._gpu_unconfirmed).  (d1cap, round 31: after the
    # poll's other samples -- why_wait_s -- which tell whether the node's GPUs are capped
    # together, a site's cap that pages nobody: Correlator._fleet_explains; it was the GPU's
    # own sample before.)
    pages = _pages(_run({4}, tp=8, slow=set(range(8))))
    assert pages == [(ISOLATION, "slow_node", "power", "node:node-000",
                      SAMPLE + Thresholds().why_wait_s)], pages


def test_a_cap_on_one_gpu_beside_ranks_slow_alike_still_pages_that_gpu_once() -> None:
    # TP1, every rank of node-000 slow alike, only GPU 4 capped: the poll's other samples
    # show no cap, so the GPU is paged at the end of the wait, and its node's ranks slow
    # alike join its page rather than escalating the node before it.
    pages = _pages(_run({4}, slow=set(range(8))))
    assert [p[:4] for p in pages] == [(ISOLATION, "slow_node", "power", "gpu:node-000/4")], pages
    assert SAMPLE <= pages[0][4] <= SAMPLE + Thresholds().why_wait_s, pages


# -- a fired silent-node page resolves resolve_after_s after the node reports again ----------


def _dark(tmp_path, **kw) -> list:
    from replay.runner import replay_log
    from tests.test_liveness import fleet, silent_pages, write
    return silent_pages(replay_log(write(tmp_path, fleet(**kw))).alerts)


def test_a_silent_node_page_resolves_within_resolve_after_s_of_the_node_reporting_again(
        tmp_path) -> None:
    # node-003 dark 400-1000 s (its job stalled with it), then reporting on every topic: its
    # page resolves ~30 s after it is heard again -- not 600 s later, as a soft slow_node
    # signal's flap window would have it (an operator watching a rebooted node).
    pages = _dark(tmp_path, seconds=1800, dead={"node-003": (400, 1000)})
    assert [(a.status, a.scope.key) for a in pages] == [
        ("firing", "node:node-003"), ("resolved", "node:node-003")], pages
    back = pages[1].evidence["quiet_since_ts"]
    assert T0 + 1000 <= back <= T0 + 1000 + 30
    assert pages[1].detected_ts == pytest.approx(back + Thresholds().resolve_after_s, abs=0.01)
    assert "reported on" in pages[1].evidence["resolved_because"]


def test_a_silent_node_page_waits_until_the_node_reports_on_every_topic_it_went_silent_on(
        tmp_path) -> None:
    # Back on ecc and NIC at 1000 s, its thermal collector (dcgm-exporter) only at 1200 s:
    # not steady yet -- the page resolves resolve_after_s after its last topic is back.
    pages = _dark(tmp_path, seconds=1800, dead={"node-003": (400, 1000)},
                  quiet={"node-003": (1000, 1200, ("thermal",))})
    assert [(a.status, a.scope.key) for a in pages] == [
        ("firing", "node:node-003"), ("resolved", "node:node-003")], pages
    back = pages[1].evidence["quiet_since_ts"]
    assert back >= T0 + 1200
    assert pages[1].detected_ts == pytest.approx(back + Thresholds().resolve_after_s, abs=0.01)
    assert "thermal" in pages[1].evidence["resolved_because"]
