"""rack22 (round 22): a power or thermal brake on most trays of one NVLink domain at once is
the domain's fault -- one isolation at ``domain`` scope, not one ``drain_node`` per tray whose
samples happened to fall in the brake (blind12 B1); two trays braking of eighteen stay two
trays' own (detector.domain_brake)."""

from __future__ import annotations

from detector.alerts import ISOLATION, Alert
from detector.engine import Engine
from detector.testing import T0, feed, thermal
from detector.topology import Topology

TRAYS = [f"gb-a{i:02d}" for i in range(1, 19)] + [f"gb-b{i:02d}" for i in range(1, 19)]

PROJECT = Topology.from_text("""
Topology=two-racks
NodeSet=gb-a[01-18],gb-b[01-18] Gpus=4 Nics=mlx5_[0-3]
Rack=rack-a,rack-b Nodes=gb-a[01-18],gb-b[01-18]
Domain=nvl72-a,nvl72-b Nodes=gb-a[01-18],gb-b[01-18]
SwitchName=leaf0 Nodes=gb-a[01-18],gb-b[01-18]
""")

SLURM = Topology.from_text("""
BlockName=nvl72-a Nodes=gb-a[01-18]
BlockName=nvl72-b Nodes=gb-b[01-18]
BlockSizes=18
""", fmt="slurm")

RACKS_ONLY = Topology.from_text("""
Topology=two-racks
NodeSet=gb-a[01-18],gb-b[01-18] Gpus=4 Nics=mlx5_[0-3]
Rack=rack-a,rack-b Nodes=gb-a[01-18],gb-b[01-18]
SwitchName=leaf0 Nodes=gb-a[01-18],gb-b[01-18]
""")

START, END = 120.0, 420.0  # the brake, s after T0


def rack_brake(braked: set[str], *, bursts: bool = True, minutes: float = 8.0,
               end: float = END, burst_s: float = 5.0) -> list:
    """Thermal samples every 10 s (each tray at its own phase) of 36 trays x 4 GPUs; the
    ``braked`` trays show the power brake (0x88, SM clock 1.1 GHz) together
    -- in ``burst_s`` bursts every 12 s (``bursts``), else all along -- from START to ``end``."""
    out = []
    for n, node in enumerate(TRAYS):
        phase = 0.27 * n
        t = phase
        while t < minutes * 60.0:
            on = node in braked and START <= t < end and (
                not bursts or (t - START) % 12.0 < burst_s)
            for g in range(4):
                out.append(thermal(T0 + t + 0.01 * g, node, g, temp_c=55.0,
                                   clock_mhz=1100.0 if on else 1980.0,
                                   throttle=0x88 if on else 0, power_w=450.0 if on else 900.0))
            t += 10.0
    return sorted(out, key=lambda e: e.ts)


def firing(alerts: list[Alert]) -> list[tuple[str, str, str, str]]:
    return [(a.topic, a.kind, a.cause, a.scope.key) for a in alerts if a.status == "firing"]


RACK_B = {n for n in TRAYS if n.startswith("gb-b")}


def test_a_braked_nvlink_domain_is_one_page_not_one_per_tray() -> None:
    # Before: one slow_node/power drain_node per tray whose three samples fell in bursts.
    alerts = feed(Engine(topology=PROJECT), rack_brake(RACK_B))
    assert firing(alerts) == [(ISOLATION, "slow_node", "power", "domain:nvl72-b")]
    page = alerts[0]
    assert page.action.name == "check_rack_power"
    assert page.evidence["nodes_heard_from"] == 18
    assert 6 <= page.evidence["nodes_affected"] <= 18  # (a third of 18, the rule)
    assert set(page.evidence["affected_nodes"]) <= RACK_B
    assert page.job is None and page.tenant is None
    assert page.granularity.gpus == 72


def test_a_slurm_block_is_the_domain_too() -> None:
    alerts = feed(Engine(topology=SLURM), rack_brake(RACK_B, bursts=False))
    assert firing(alerts) == [(ISOLATION, "slow_node", "power", "domain:nvl72-b")]


def test_two_braked_trays_of_eighteen_are_two_node_pages() -> None:
    two = {"gb-b03", "gb-b11"}
    alerts = feed(Engine(topology=PROJECT), rack_brake(two, bursts=False))
    assert sorted(firing(alerts)) == [(ISOLATION, "slow_node", "power", f"node:{n}")
                                      for n in sorted(two)]
    assert {a.action.name for a in alerts if a.status == "firing"} == {"drain_node"}


def test_without_a_domain_in_the_topology_each_tray_is_its_own() -> None:
    # DESIGN has no rack scope: with racks only, nothing to widen to (blind3's rack cooling).
    alerts = feed(Engine(topology=RACKS_ONLY), rack_brake(RACK_B, bursts=False))
    assert len(firing(alerts)) == 18
    assert {s for *_, s in firing(alerts)} == {f"node:{n}" for n in RACK_B}


def test_a_tray_paged_before_its_domain_braked_is_superseded_by_the_domain() -> None:
    # gb-b05 brakes alone from 40 s (its own page), then the whole rack from 120 s.
    events = [e for e in rack_brake(RACK_B, bursts=False)
              if not (e.node == "gb-b05" and 40.0 <= e.ts - T0 < START)]
    early = []
    for t in range(40, int(START), 10):
        for g in range(4):
            early.append(thermal(T0 + t + 0.27 * 22 + 0.01 * g, "gb-b05", g, temp_c=55.0,
                                 clock_mhz=1100.0, throttle=0x88, power_w=450.0))
    alerts = feed(Engine(topology=PROJECT), sorted(events + early, key=lambda e: e.ts))
    got = [(a.status, a.scope.key) for a in alerts]
    assert got[:3] == [("firing", "node:gb-b05"), ("firing", "domain:nvl72-b"),
                       ("resolved", "node:gb-b05")]
    assert alerts[2].evidence["superseded_by"] == alerts[1].dedup_key
    assert alerts[1].evidence["supersedes"] == [alerts[0].dedup_key]


def test_a_domains_cooling_failing_is_one_thermal_page_at_the_domain() -> None:
    # A CDU failing: every GPU of rack b's trays hot and throttling thermally (0x40) at once.
    events = []
    for n, node in enumerate(TRAYS):
        for k in range(48):
            t = 0.27 * n + 10.0 * k
            hot = node in RACK_B and START <= t < END
            for g in range(4):
                events.append(thermal(T0 + t + 0.01 * g, node, g, temp_c=92.0 if hot else 55.0,
                                      clock_mhz=1300.0 if hot else 1980.0,
                                      throttle=0x40 if hot else 0))
    alerts = feed(Engine(topology=PROJECT), sorted(events, key=lambda e: e.ts))
    assert firing(alerts) == [(ISOLATION, "slow_node", "thermal", "domain:nvl72-b")]
    assert alerts[0].action.name == "check_rack_cooling"


def test_a_domain_braking_in_bursts_no_trays_samples_catch_three_times_running_is_paged(
        ) -> None:
    # 4 s bursts every 12 s, samples every 10 s: a tray's samples move 2 s back through the
    # brake's period each time, so none falls in a burst three times in a row and no tray
    # reaches its own verdict.  Before: no page at all; now the domain once a third of its
    # trays braked over two sampling intervals.
    events = rack_brake(RACK_B, burst_s=4.0)
    alerts = feed(Engine(topology=PROJECT), events)
    assert firing(alerts) == [(ISOLATION, "slow_node", "power", "domain:nvl72-b")]
    first_braked = min(e.ts for e in events if e.throttle)
    assert alerts[0].detected_ts - first_braked <= 3 * 10.0 + 1.0  # (three samples' span)


def test_one_short_brake_across_a_domain_is_no_page() -> None:
    # One 5 s burst on every tray of rack b: never-routine, but not sustained.
    assert firing(feed(Engine(topology=PROJECT), rack_brake(RACK_B, end=START + 5.0))) == []
