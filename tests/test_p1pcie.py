"""p1pcie (round 30): blind20 P1 -- a PCIe switch under two GPUs paged as three alerts.

A PCIe switch on an HGX baseboard replaying under two GPUs (their PCIe replay counters rising
15-60 a 30 s poll, their ranks late by their host path, the node's TP mates waiting for them
inside their compute) was escalated at the node slow_node/unknown 11-112 s after its onset,
then each GPU isolated on its replay rate 1-4 min later, not joined (blind20 board logs: cause
wrong 8 of 8, 16 GPU-page false positives).  Now (detector.gpu_health ``pcie_seen``, the
correlator's ``_pcie_impact`` / ``_pcie_page``): replays at DCGM's rate (``pcie_evidence``
within about a minute) on a GPU whose rank, or whose node's TP group, is slow attribute the
slowness at its first judgement (hardware/gpu_hardware); two or more GPUs of the node with
replays are one node page, their later GPU verdicts joined into it; a node's group slow beside
ranks of its replica that keep pace waits for the node's next ECC poll before a human is paged.
One GPU replaying stays a GPU page; a trickle of replays pages nobody.
"""

from __future__ import annotations

import numpy as np

from detector.alerts import ESCALATION, ISOLATION
from detector.engine import Engine
from detector.testing import T0, ecc, feed, step, thermal

NODES = 3
SLOW_FROM = 100       # the fault's first step (step s ends at T0 + s)
STEPS = 330


def _run(replaying: set[int], *, ecc_phase: float, per_poll: int = 25,
         trickle: dict[int, list[float]] | None = None, slow: bool = True,
         reset_at: int | None = None, every: bool = False, ecc_every: float = 30.0) -> list:
    """A TP8 x DP3 job on node-000..002 (node n is replica n), 1 s steps; every GPU's thermal
    telemetry every 10 s (clean) and its ECC counters every ``ecc_every`` s at ``ecc_phase``.  From
    SLOW_FROM node-000's GPUs ``replaying`` replay ``per_poll`` a poll; their ranks are late by
    their host path (+100 ms a step in neither compute nor collectives), and their TP mates on
    node-000 wait for them inside their compute (x1.06) -- ``slow``: else nothing slows.
    ``trickle``: GPU of node-001 -> times (s after T0) of one replay each.  ``reset_at``: the
    fault ends at that step, the replaying GPUs reset (their counters back to 0) on the next
    poll.  ``every``: resolved messages too."""
    rng = np.random.default_rng(30)
    events: list = []
    for s in range(STEPS):
        compute = 700.0 * rng.lognormal(0.0, 0.012, 8 * NODES)
        host = 20.0 + rng.normal(0.0, 1.0, 8 * NODES)
        if slow and s >= SLOW_FROM and (reset_at is None or s < reset_at):
            for g in range(8):
                if g in replaying:
                    host[g] += 100.0
                else:
                    compute[g] *= 1.06
        step_ms = round(float((compute + host).max()) + 200.0, 2)
        for r in range(8 * NODES):
            events.append(step(T0 + s + 0.001 * r, r, s, step_ms=step_ms,
                               compute_ms=round(float(compute[r]), 2),
                               comm_ms=round(step_ms - float(compute[r]) - float(host[r]), 2),
                               tp=r % 8, pp=0, dp=r // 8))
    counts = {(n, g): 0 for n in range(NODES) for g in range(8)}
    for k in range(STEPS // 10 + 1):
        ts = T0 + 5.2 + 10.0 * k
        events += [thermal(ts, f"node-{n:03d}", g) for n in range(NODES) for g in range(8)]
    for k in range(int(STEPS // ecc_every) + 1):
        ts = T0 + ecc_phase + ecc_every * k
        for n in range(NODES):
            for g in range(8):
                if n == 0 and g in replaying and reset_at is not None and ts > T0 + reset_at:
                    counts[n, g] = 0  # (the GPU reset)
                elif n == 0 and g in replaying and ts > T0 + SLOW_FROM:
                    counts[n, g] += per_poll + g if per_poll else 0  # (not quite alike)
                if n == 1 and trickle and g in trickle:
                    counts[n, g] = sum(1 for t in trickle[g] if T0 + t <= ts)
                events.append(ecc(ts, f"node-{n:03d}", g, pcie=counts[n, g]))
    events.sort(key=lambda e: e.ts)
    return [a for a in feed(Engine(), events, finish=False) if every or a.status == "firing"]


def _pages(alerts: list) -> list[tuple[str, str, str, str, float]]:
    return [(a.topic, a.kind, a.cause, a.scope.key, round(a.detected_ts - T0, 1))
            for a in alerts]


def _problems(alerts: list) -> set[str]:
    return {a.dedup_key for a in alerts}


def test_two_gpus_replaying_their_poll_after_the_judgement_are_one_node_page_first() -> None:
    # The slow group is found ~105 s; node-000's first poll showing replays comes at 112 s.
    pages = _pages(_run({2, 3}, ecc_phase=22.0))
    assert pages, "the PCIe switch was paged nowhere"
    assert pages[0][:4] == (ISOLATION, "hardware", "gpu_hardware", "node:node-000"), pages
    assert pages[0][4] <= 112.0 + 2.0, pages  # (at the poll that shows the replays)
    assert not [p for p in pages if p[2] == "unknown"], pages
    assert not [p for p in pages if p[3].startswith("gpu:")], pages
    assert {p[3] for p in pages} == {"node:node-000"}, pages


def test_two_gpus_replaying_before_the_judgement_are_attributed_at_it() -> None:
    # Replays shown on the poll at 101 s, before the slow group is found.
    alerts = _run({2, 3}, ecc_phase=11.0)
    pages = _pages(alerts)
    assert pages and pages[0][:4] == (ISOLATION, "hardware", "gpu_hardware", "node:node-000"), \
        pages
    assert pages[0][4] < 112.0, pages
    assert _problems(alerts) == {"fl:iso:hardware:node:node-000"}, pages
    page = alerts[0]
    assert page.evidence["gpus"] == [2, 3], page.evidence
    assert page.action.name == "drain_node", page.action


def test_one_gpu_replaying_is_a_gpu_page_at_the_first_judgement() -> None:
    pages = _pages(_run({5}, ecc_phase=22.0))
    assert pages, "the replaying GPU was paged nowhere"
    assert pages[0][:4] == (ISOLATION, "hardware", "gpu_hardware", "gpu:node-000/5"), pages
    assert not [p for p in pages if p[2] == "unknown"], pages
    assert {p[3] for p in pages} == {"gpu:node-000/5"}, pages


def test_a_trickle_of_replays_pages_nobody() -> None:
    trickle = {1: [40.0, 130.0, 131.0, 250.0], 6: [70.0, 200.0]}
    assert _pages(_run(set(), ecc_phase=11.0, trickle=trickle, slow=False)) == []


def test_a_trickle_on_a_slow_node_names_no_hardware() -> None:
    # node-000's ranks slow for a reason no telemetry names, a trickle of replays on node-001
    # (not replaying enough on node-000 either): no hardware page, the escalation as before.
    trickle = {1: [40.0, 130.0, 131.0, 250.0]}
    pages = _pages(_run({4}, ecc_phase=11.0, per_poll=0, trickle=trickle))
    assert not [p for p in pages if p[1] == "hardware"], pages
    assert pages and pages[0][0] == ESCALATION, pages


def test_the_node_page_resolves_once_its_gpus_are_reset_and_its_ranks_back() -> None:
    alerts = _run({2, 3}, ecc_phase=11.0, reset_at=200, every=True)
    said = [(a.status, a.dedup_key) for a in alerts]
    assert said[0] == ("firing", "fl:iso:hardware:node:node-000"), said
    assert ("resolved", "fl:iso:hardware:node:node-000") in said, said
    assert {k for _, k in said} == {"fl:iso:hardware:node:node-000"}, said


def test_a_node_escalated_before_its_poll_is_superseded_by_the_attributed_page() -> None:
    # ECC every 60 s: the poll showing the replays (150 s) comes after the hold for it ends.
    alerts = _run({2, 3}, ecc_phase=30.0, ecc_every=60.0, every=True)
    said = [(a.status, a.dedup_key, round(a.detected_ts - T0, 1)) for a in alerts]
    esc, node = "fl:esc:slow_node:node:node-000", "fl:iso:hardware:node:node-000"
    assert [k for st, k, _ in said if st == "firing"][:2] == [esc, node], said
    page = next(a for a in alerts if a.dedup_key == node)
    assert round(page.detected_ts - T0, 1) <= 150.0 + 1.0, said
    gone = [a for a in alerts if a.dedup_key == esc and a.status == "resolved"]
    assert gone and gone[0].detected_ts <= page.detected_ts + 0.01, said
    assert gone[0].evidence.get("superseded_by") == node, gone[0].evidence
    assert not [k for _, k, _ in said if k.startswith("fl:iso:hardware:gpu")], said
