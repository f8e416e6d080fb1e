"""Room d1cap, round 31: a site's power cap on many nodes at once is no node's fault (blind21 D1).

blind21's facility story: a demand-response event lowers every GPU's limit on one row to
~500 W, each node's BMC within 25 s, for 12-15 min -- 0x4 on every busy GPU there, clocks
6-11 % down (each GPU's depth following its own demand), every job on the row slower; where
the row cuts a job its capped nodes' ranks are slower than the rest.  faultline paged each
capped node whose ranks fell behind as ``slow_node/power`` "the node's power limit, one node
fault" (18 isolations in blind21's tune + held logs).  A limit lowered on most busy GPUs of
several nodes within a minute is a facility action (demand response, a rack's PDU budget, a
scheduler's power capping): isolating one node does not help.  What stays a node's fault: a
cap ``cap_clock_drop`` deeper than the others' (its own), a power brake (0x80) on one node,
a rank slow alone under the shared cap (power round 12), a node capped while every other node
runs free.  Two nodes capped together in a 16-node fleet: a shared limit, as the sustained-cap
rule (``Correlator._node_cap``) has read it since blind5 (nobody paged).
"""

from __future__ import annotations

import numpy as np

from detector.alerts import ISOLATION
from detector.engine import Engine
from detector.testing import T0, feed, parallel_step, thermal

STEPS = 420
CAP_FROM, CAP_TO = 100.0, 360.0   # s after T0: the cap's window (each node's own start below)


def _run(caps: dict[int, tuple[float, ...]], *, nodes: int = 8,
         brake: tuple[int, float, float] | None = None) -> list:
    """A TP8 job on ``nodes`` nodes (one replica a node), 1 s steps; every GPU sampled every
    10 s at its node's phase.  ``caps``: node -> (its BMC's start, s after CAP_FROM; mean
    clock drop[; its end, s after T0]): 0x4 at ~500 W from then to CAP_TO (or its end), each
    GPU's drop the mean +- 2.5 points
    (its own demand), its rank's compute x (1 - drop) ** -0.85.  ``brake``: (node, from,
    to) -- 0x80 on all its GPUs (plus 0x4 if capped), the clock and its ranks halved."""
    rng = np.random.default_rng(31)
    drops = {n: np.clip(mean + rng.uniform(-0.025, 0.025, 8), 0.05, None)
             for n, (_, mean, *_) in caps.items()}

    def state(n: int, g: int, t: float) -> tuple[int, float]:
        bits, drop = 0, 0.0
        if n in caps and CAP_FROM + caps[n][0] <= t < (caps[n][2:] or (CAP_TO,))[0]:
            bits, drop = 0x4, float(drops[n][g])
        if brake is not None and n == brake[0] and brake[1] <= t < brake[2]:
            bits, drop = bits | 0x80, 0.5
        return bits, drop

    events: list = []
    for s in range(STEPS):
        compute = 700.0 * rng.lognormal(0.0, 0.012, 8 * nodes)
        for r in range(8 * nodes):
            drop = state(r // 8, r % 8, float(s))[1]
            compute[r] *= (1.0 - drop) ** -0.85
        events += parallel_step(s, compute, tp=8, pp=1)
    for k in range(STEPS // 10):
        for n in range(nodes):
            ts = T0 + 3.4 + 0.7 * n + 10.0 * k
            for g in range(8):
                bits, drop = state(n, g, ts - T0)
                events.append(thermal(ts + 0.003 * g, f"node-{n:03d}", g, throttle=bits,
                                      clock_mhz=round(1980.0 * (1.0 - drop)),
                                      power_w=500.0 if bits else 660.0))
    events.sort(key=lambda e: e.ts)
    return [a for a in feed(Engine(), events) if a.status == "firing"]


def _pages(alerts: list) -> list[tuple[str, str, str, str]]:
    return [(a.topic, a.kind, a.cause, a.scope.key) for a in alerts]


ROW = {2: (0.0, 0.085), 3: (7.0, 0.08), 4: (13.0, 0.09), 5: (21.0, 0.085)}


def test_a_row_cap_cutting_a_job_pages_nobody() -> None:
    # Four of the job's eight nodes capped within 21 s, each GPU's depth its own (5.5-11.5 %):
    # their ranks 5-10 % behind the four free replicas.  Main: a node power isolation each.
    assert _pages(_run(ROW)) == []


def test_a_node_s_own_deeper_cap_beside_the_row_is_still_paged() -> None:
    # node-007 capped 25 % in the same minute -- 16 points deeper than the row: its own limit.
    fired = _pages(_run(ROW | {7: (9.0, 0.25)}))
    assert fired == [(ISOLATION, "slow_node", "power", "node:node-007")], fired


def test_a_power_brake_on_one_node_of_the_row_is_still_paged() -> None:
    # blind21 G2 inside the row (odd seeds): node-003's supply braking (0x84) for a minute.
    fired = _pages(_run(ROW, brake=(3, 200.0, 260.0)))
    assert fired == [(ISOLATION, "slow_node", "power", "node:node-003")], fired


def test_two_nodes_capped_together_in_a_16_node_fleet_are_a_shared_limit() -> None:
    # Decided: two nodes' BMCs lowering every GPU's limit within seconds, alike, is one
    # limit (a rack's PDU budget, a scheduler's cap) -- two PSUs failing in the same minute
    # is not what an operator would bet on -- nobody paged, as _node_cap reads it.
    assert _pages(_run({4: (0.0, 0.085), 11: (5.0, 0.085)}, nodes=16)) == []


def test_one_node_capped_while_the_fleet_runs_free_is_its_own_limit() -> None:
    # The control: node-004 alone capped, fifteen nodes free -- one node page, after the
    # minute in which another node's cap would have made it a shared limit.
    alerts = _run({4: (0.0, 0.085)}, nodes=16)
    assert _pages(alerts) == [(ISOLATION, "slow_node", "power", "node:node-004")]
    assert alerts[0].detected_ts - (T0 + CAP_FROM) < 90.0
