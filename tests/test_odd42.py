"""odd42 (round 42, issue 10): healthy pages from a lighter phase and from a released node.

A port's Gb/s is its GPUs' demand: one job's demand falling moves all of its ports together --
its own to a tenth, one it shares with another job to a half (nic41 F1, tests/test_nic41.py).
A port that falls beside a mate that sank with it fell with its job (detector.network's
``mates_sank``); with no GPU-to-NIC map its verdict stands only once a job of its node waits in
its collectives (correlate.ports._jobs_wait).

A save moves bytes: a node whose NIC ports went quiet with its job's stop and reported on so
for minutes was idle, not saving -- released after a preemption, it crashed nothing of the job
requeued from an older checkpoint (revA40 F1, tests/test_revA40.py; liveness._idle_past_stop).
"""

from __future__ import annotations

import pytest

from detector.engine import Engine
from detector.liveness import _nic_idle
from detector.monitors import Monitors
from detector.testing import T0, feed, nic
from tests.test_dark39 import DARK, STOP, _save_then_dark
from tests.test_nic41 import _waiting
from tests.test_revA39 import _topo
from tests.test_revA40 import _dark_pages, _two_jobs


def _fired(events, topo: str) -> list[tuple[str, str, str]]:
    return [(a.topic.split(".")[1], a.cause, a.scope.key)
            for a in feed(Engine(topology=_topo(topo, 4)), events) if a.status == "firing"]


def _b_light(own: float, shared: float):
    def gbps(n: str, k: int, t: int) -> float:  # (job b's ports: the shared mlx5_2, its mlx5_3)
        return 100.0 if t < 300 else (100.0, 100.0, shared, own)[k]
    return gbps


@pytest.mark.parametrize("poll", [2, 30])
def test_a_lighter_phase_to_a_fifth_pages_nothing(poll: int) -> None:
    # nic41 F1's shape at other depths: b's own port to a fifth, the shared one to 60 Gb/s
    # (a's GPU 4 at 50, b's GPU 5 at a fifth of 50), b stepping on at its pace (Slurm).
    events = _two_jobs({"a": (range(5), 0, 600), "b": (range(5, 8), 0, 600)},
                       _b_light(20.0, 60.0), poll=poll)
    assert _fired(events, "slurm") == []


@pytest.mark.parametrize("poll", [2, 10])
def test_guard_the_lighter_phase_shape_with_the_jobs_waiting_pages_the_leaf(poll: int) -> None:
    # The same ports (b's own to a tenth, the shared one to 55) while both jobs' steps take
    # 1.4 times as long in their collectives: their ports carry less than they ask -- the
    # leaf's, as before the change.
    events = _waiting(_two_jobs({"a": (range(5), 0, 600), "b": (range(5, 8), 0, 600)},
                                _b_light(10.0, 55.0), poll=poll))
    assert _fired(events, "slurm") == [("isolation", "switch", "switch:leaf1")]


def test_guard_a_port_falling_alone_on_a_shared_node_is_paged() -> None:
    # Only b's own mlx5_3 falls (100 -> 10) on n1, its shared mlx5_2 and a's ports at their
    # level: no mate sank with it -- the port's (revA39 F2's rule, with no map).
    def gbps(n: str, k: int, t: int) -> float:
        return 10.0 if (n, k) == ("n1", 3) and t >= 300 else 100.0
    events = _two_jobs({"a": (range(5), 0, 600), "b": (range(5, 8), 0, 600)}, gbps)
    assert _fired(events, "slurm") == [("isolation", "nic", "nic:n1/mlx5_3:1")]


def test_guard_a_node_dark_after_a_long_save_is_still_its_jobs_crash(tmp_path) -> None:
    # revA40 F1's timeline with the node's NICs moving the save's bytes to its end (dark 60 s
    # after the job's last step, the job requeued 100 steps behind without it at 600 s): it
    # died in the save -- paged (as before the change).
    recs = _save_then_dark(interval=10.0, dark_at=STOP + 60.0, resume=600.0, back=100,
                           seconds=1400.0)
    assert [k for k, _ in _dark_pages(tmp_path, recs)][:1] == ["node:node-003"]


@pytest.mark.parametrize("into", [8.0, 15.0])
def test_guard_a_node_dead_early_in_a_preemption_is_still_paged(tmp_path, into: float) -> None:
    # NICs quiet from the stop but the node dark within two of their intervals (and 30 s) of
    # it: too soon to say it sat idle -- the dark39 rule stands (a crash in the stop).
    recs = _save_then_dark(interval=10.0, dark_at=STOP + into, resume=450.0, back=100,
                           saving=False)
    assert [k for k, _ in _dark_pages(tmp_path, recs)][:1] == ["node:node-003"]


def test_a_dark_nodes_nic_silence_names_when_its_ports_went_quiet() -> None:
    # (the evidence the correlator reads: its NIC ports quiet from the poll after the stop)
    recs = _save_then_dark(interval=10.0, dark_at=STOP + 60.0, resume=600.0, back=100,
                           seconds=1400.0, saving=False)
    mon, out = Monitors(), []
    for r in recs:
        v = r["value"]
        if r["topic"] == "telemetry.nic" and v["node"] == DARK:
            mon.process(nic(v["ts"], v["node"], v["nic"], tx=v["tx_bytes"], rx=v["rx_bytes"]),
                        out)
    idle = _nic_idle(mon, DARK)
    assert idle is not None and T0 + STOP <= idle <= T0 + STOP + 15.0
