"""therm33 (round 33): one node-wide thermal fault, one page (blind23 D1; issue 10).

A node whose cooling fails (its coolant flow restricted, its fan, its rack's CDU) heats all its
GPUs together; the first to reach its slowdown point shows 0x20 a poll -- or a few scrape slots
-- before its mates, and its slow rank was paged at that GPU, the node's page following 0-48 s
later: two pages for one fault (5 of blind23's 20 node thermal faults tune).  A GPU that
throttles thermally while its mates are warm with it (it is not ``hot_delta_c`` above their
median: detector.thermal's ``node_warm``) holds its slow rank's page up to ``impact_onset_s``
from its first throttling sample (at least its node's next poll): its mates throttling
meanwhile make it the node's page (Correlator._heat_held, _heat_joined); a GPU hot
against cool mates is its own and is paged at once, as before.
"""

from __future__ import annotations

import numpy as np

from detector.alerts import ISOLATION, Alert
from detector.engine import Engine
from detector.testing import T0, feed, step, thermal
from detector.thresholds import Thresholds

INTERVAL = 30.0   # dcgm-exporter's default
STEP_S = 2.0
CLOCK = 1980.0


def firing(alerts: list[Alert]) -> list[tuple[str, str, str, str]]:
    return [(a.topic, a.kind, a.cause, a.scope.key) for a in alerts if a.status == "firing"]


def _clock(k: int, first: int | None) -> float:
    """A throttling GPU's clock on poll ``k`` (its reason from poll ``first``)."""
    if first is None or k < first:
        return CLOCK
    return CLOCK * (1.0 - min(0.35, 0.12 * (k - first + 1)))


def cooling(first: dict[int, int], *, heat_from: int | None = 4, polls: int = 16,
            order: tuple[int, ...] = (7, 0, 1, 2, 3, 4, 5, 6), mate_rise_c: float = 8.0,
            interval: float = INTERVAL, seed: int = 3) -> list:
    """node-000's GPUs (ranks 0-7 of a 16-rank data-parallel job; node-001 runs ranks 8-15
    cool), sampled every ``interval`` s in ``order``.  From poll ``heat_from`` the node's
    cooling fails (None: it never does): every GPU warms ``mate_rise_c`` a poll from 60 C
    toward 86 C.  GPU g of ``first`` throttles (0x20, 88 C and up, its clock 12 % lower each
    poll down to 35 %)
    from poll first[g]; its rank's compute follows its clock from half an interval before
    that poll's sample (the clock falls between samples)."""
    rng = np.random.default_rng(seed)
    out: list = []

    def temp(k: int, g: int) -> float:
        f = first.get(g)
        if f is not None and k >= f:
            return 88.0 + 0.5 * (k - f)
        if heat_from is None or k < heat_from:
            return 60.0 + 0.3 * g
        return min(86.0, 60.0 + 0.3 * g + mate_rise_c * (k - heat_from + 1))

    for k in range(polls):
        t = T0 + k * interval
        for i, g in enumerate(order):
            throttling = first.get(g) is not None and k >= first[g]
            out.append(thermal(t + 0.01 * i, "node-000", g, temp_c=temp(k, g),
                               clock_mhz=_clock(k, first.get(g)),
                               throttle=0x20 if throttling else 0, power_w=650.0))
            out.append(thermal(t + 0.2 + 0.01 * i, "node-001", g, temp_c=60.0 + 0.3 * g,
                               power_w=650.0))
    out += job_steps(first, polls, interval, rng)
    out.sort(key=lambda e: e.ts)
    return out


def job_steps(first: dict[int, int], polls: int, interval: float, rng) -> list:
    """The 16-rank job's steps over ``polls`` polls: rank g's compute follows its GPU's clock
    (``_clock``) from half an interval before poll first[g]'s sample."""
    out = []
    for s in range(int(polls * interval / STEP_S)):
        end = T0 + 1.0 + s * STEP_S
        k = int((end + 0.5 * interval - T0) // interval)  # the next sample's poll
        compute = 700.0 * rng.lognormal(0.0, 0.015, 16)
        for g, f in first.items():
            compute[g] *= CLOCK / _clock(k, f)
        step_ms = float(compute.max()) + 250.0
        for r in range(16):
            out.append(step(end + 0.001 * r, r, s, step_ms=round(step_ms, 2),
                            compute_ms=round(float(compute[r]), 2)))
    return out


NODE = (ISOLATION, "slow_node", "thermal", "node:node-000")


def _first_sample(poll: int, interval: float = INTERVAL) -> float:
    return T0 + poll * interval


def _held_until(since: float, interval: float = INTERVAL) -> float:
    """The latest a GPU throttling beside warm mates since ``since`` waits for them."""
    cfg = Thresholds()
    return since + max(cfg.impact_onset_s, interval) + 0.25 * interval + 1.0


# -- D1: the node's cooling, its first GPU a scrape slot or a poll ahead ----------------------


def test_a_node_heating_as_one_is_one_node_page_when_its_first_gpu_leads_in_the_scrape():
    # blind23 D1 (loop s0 gpu13): GPU 7 sampled first shows 0x20 with GPUs 1 and 6 on the same
    # poll a few slots later, its rank found slow 10 s before; on main GPU 7 was paged at
    # once, the node in the same second -- two pages for one restricted coolant flow.
    alerts = feed(Engine(), cooling({7: 8, 1: 8, 6: 8, 4: 9, 5: 9, 0: 10}), finish=False)
    assert firing(alerts) == [NODE]
    assert alerts[0].detected_ts <= _first_sample(9)  # (the poll that showed it, at most the next)


def test_a_node_heating_at_different_rates_is_one_node_page_a_poll_later():
    # blind23 D1 (loop s1 gpu02, s3 gpu04 and gpu15): the GPU nearest the restriction throttles
    # a poll before its mates, warm within a few degrees of it; its rank is slow meanwhile.
    # On main: GPU 7 paged, the node 30-48 s later.
    alerts = feed(Engine(), cooling({7: 8, 0: 9, 2: 9, 4: 9}), finish=False)
    assert firing(alerts) == [NODE]
    assert alerts[0].detected_ts <= _first_sample(9) + 1.0  # (the mates' poll)


def test_a_fan_failing_at_10_s_is_one_node_page_when_its_nearest_gpu_leads_by_30_s():
    # blind23 D1 (fleet s0 l40s-00, an L40S fan at 10 s): GPU 2 throttles 3 samples before
    # GPU 0, its rank found slow on the third; on main GPU 2 paged, the node 9 s later.
    alerts = feed(Engine(), cooling({7: 30, 0: 33, 3: 34}, heat_from=20, polls=50,
                                    mate_rise_c=2.5, interval=10.0), finish=False)
    assert firing(alerts) == [NODE]
    assert alerts[0].detected_ts <= _first_sample(33, 10.0) + 1.0


# -- guards: a GPU's own thermal fault keeps its page ------------------------------------------


def test_a_gpu_hot_alone_on_a_cool_node_is_paged_at_its_gpu_as_before():
    # (a failed thermal interface: 88 C at 0x20 beside mates at 60 C -- its own fault, never
    # held for its node)
    alerts = feed(Engine(), cooling({3: 8}, heat_from=None), finish=False)
    assert firing(alerts) == [(ISOLATION, "slow_node", "thermal", "gpu:node-000/3")]
    assert alerts[0].detected_ts == _first_sample(8) + 0.01 * 4  # its first 0x20 sample


def test_a_gpu_throttling_alone_beside_warm_mates_is_paged_at_its_gpu_a_minute_later_at_most():
    # The node warm (its mates at 86 C, none throttling): GPU 3's rank waits for them, and the
    # polls of the next minute show GPU 3 alone -- its page, at its GPU.
    for interval in (10.0, 30.0):
        alerts = feed(Engine(), cooling({3: 8}, heat_from=4, interval=interval), finish=False)
        assert firing(alerts) == [(ISOLATION, "slow_node", "thermal", "gpu:node-000/3")]
        first = _first_sample(8, interval) + 0.01 * 4
        assert first < alerts[0].detected_ts <= _held_until(first, interval), interval


def test_a_gpu_fault_then_minutes_later_its_nodes_cooling_is_two_pages():
    # GPU 3 hot alone on a cool node (paged at once); five minutes later the node's cooling
    # fails and the others throttle: a second fault, its own page -- the GPU's page stands.
    events = cooling({3: 4, 7: 14, 0: 14, 1: 14, 5: 15}, heat_from=11, polls=20)
    alerts = feed(Engine(), events, finish=False)
    assert firing(alerts) == [(ISOLATION, "slow_node", "thermal", "gpu:node-000/3"), NODE]
    assert alerts[0].detected_ts == _first_sample(4) + 0.01 * 4
