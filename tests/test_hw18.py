"""hw18 (round 18): NVLink trouble on most GPUs of one node at once is its baseboard -- one node
isolation, not a GPU isolation each (blind8 H3) -- while one GPU's NVLink fault is still paged
at its GPU within DESIGN's second."""

from __future__ import annotations

from detector.alerts import ISOLATION, Alert
from detector.correlate import BOARD_WINDOW_S
from detector.engine import Engine
from detector.testing import T0, ecc, feed

NODE = "hgx-01"


def firing(alerts: list[Alert]) -> list[tuple[str, str, str, str]]:
    return [(a.topic, a.kind, a.cause, a.scope.key) for a in alerts if a.status == "firing"]


def baseline(gpus: range = range(8), ts: float = T0) -> list:
    return [ecc(ts + 0.01 * g, NODE, g, sbe=3) for g in gpus]


def xids(at: dict[int, float]) -> list:
    """XID 74 on GPU g at T0 + 10 + at[g], in event-time order."""
    return sorted((ecc(T0 + 10.0 + dt, NODE, g, sbe=3, xid=74) for g, dt in at.items()),
                  key=lambda e: e.ts)


def tail(ts: float) -> list:
    """Records of another node after the window, so timers due by then fire."""
    return [ecc(ts + i, "other", 0) for i in range(3)]


def test_xid_74_on_every_gpu_of_a_node_within_a_second_is_one_node_isolation() -> None:
    # Before hw18: 8 GPU isolations (reset_gpu), the node never named (blind8 H3).
    spread = {0: 0.0, 1: 0.08, 2: 0.8, 3: 0.1, 4: 0.19, 5: 0.95, 6: 1.0, 7: 0.09}
    alerts = feed(Engine(), baseline() + xids(spread) + tail(T0 + 20))
    assert firing(alerts) == [(ISOLATION, "hardware", "nvlink", f"node:{NODE}")]
    a = alerts[0]
    assert a.action.name == "drain_node" and a.action.requires_approval
    assert a.detection_latency_s <= 1.0 and a.detected_ts == T0 + 10.0 + BOARD_WINDOW_S
    assert a.evidence["gpus"] == [0, 1, 2, 3, 4, 7]  # (the ones in its window; 5, 6 join it)
    units = {s["unit"] for s in a.evidence["signals"]}
    assert {f"gpu:{NODE}/{g}" for g in (0, 1, 3, 4, 7)} <= units


def test_one_gpus_xid_74_is_its_gpu_within_a_second() -> None:
    alerts = feed(Engine(), baseline() + xids({5: 0.0}) + tail(T0 + 20))
    assert firing(alerts) == [(ISOLATION, "hardware", "nvlink", f"gpu:{NODE}/5")]
    assert alerts[0].detection_latency_s <= 1.0


def test_two_gpus_at_once_are_their_baseboard_but_not_two_gpus_apart() -> None:
    # On an NVSwitch board two GPUs have no link between them but through its switches.
    alerts = feed(Engine(), baseline() + xids({2: 0.0, 6: 0.3}) + tail(T0 + 20))
    assert firing(alerts) == [(ISOLATION, "hardware", "nvlink", f"node:{NODE}")]
    # ... but a GPU's NVLink fault a minute after another's is its own.
    alerts = feed(Engine(), baseline() + xids({2: 0.0, 6: 60.0}) + tail(T0 + 80))
    assert firing(alerts) == [(ISOLATION, "hardware", "nvlink", f"gpu:{NODE}/2"),
                              (ISOLATION, "hardware", "nvlink", f"gpu:{NODE}/6")]


def test_mates_joining_after_the_window_upgrade_the_pages_to_the_node() -> None:
    # One GPU in the first window is paged alone; four more 1.5 s later are the board: the
    # node fires and the GPU page resolves into it (one incident open).
    alerts = feed(Engine(), baseline() + xids({0: 0.0, 2: 1.5, 3: 1.6, 4: 1.7, 5: 1.8})
                  + tail(T0 + 20) + tail(T0 + 80))
    fired = firing(alerts)
    assert fired == [(ISOLATION, "hardware", "nvlink", f"gpu:{NODE}/0"),
                     (ISOLATION, "hardware", "nvlink", f"node:{NODE}")]
    resolved = {a.scope.key for a in alerts if a.status == "resolved"}
    assert resolved == {f"gpu:{NODE}/0"}
    node = [a for a in alerts if a.scope.key == f"node:{NODE}"][0]
    assert node.evidence["gpus"] == [0, 2, 3, 4, 5]


def test_the_node_page_resolves_once_its_gpus_are_reset() -> None:
    events = baseline() + xids({g: 0.05 * g for g in range(8)}) + tail(T0 + 20)
    # A node reboot: every GPU's counters fall back to zero.
    events += [ecc(T0 + 100 + 0.01 * g, NODE, g, sbe=0) for g in range(4)]
    alerts = feed(Engine(), events + tail(T0 + 200))
    assert [a.status for a in alerts] == ["firing"]  # (half its GPUs reset: still firing)
    events += [ecc(T0 + 300 + 0.01 * g, NODE, g, sbe=0) for g in range(4, 8)]
    alerts = feed(Engine(), events + tail(T0 + 400))
    assert [(a.status, a.scope.key) for a in alerts] == [("firing", f"node:{NODE}"),
                                                        ("resolved", f"node:{NODE}")]


def test_a_held_window_survives_a_snapshot() -> None:
    eng = Engine()
    first = feed(eng, baseline() + xids({0: 0.0, 1: 0.1, 2: 0.2}), finish=False)
    assert firing(first) == []  # (held for the window)
    eng2 = Engine.restore(eng.snapshot())
    alerts = feed(eng2, xids({3: 0.3}) + tail(T0 + 20))
    assert firing(alerts) == [(ISOLATION, "hardware", "nvlink", f"node:{NODE}")]


def test_a_link_erring_for_long_is_its_gpus_own_beside_another_gpus_xid() -> None:
    # GPU 1's NVLink error rate raised long ago (its GPU page) does not make GPU 6's XID 74
    # ten minutes later a board fault.
    events = baseline() + [ecc(T0 + 10.0 + 30 * i, NODE, 1, sbe=3, nvlink=(400 * i, 120 * i, 0))
                           for i in range(1, 25)]
    events = sorted(events + xids({6: 600.0}), key=lambda e: e.ts) + tail(T0 + 800)
    assert firing(feed(Engine(), events)) == [
        (ISOLATION, "hardware", "nvlink", f"gpu:{NODE}/1"),
        (ISOLATION, "hardware", "nvlink", f"gpu:{NODE}/6")]
