"""hsdp47 (round 47): blind37's findings under hybrid-sharded data parallelism.

F4 -- a link down told at once when its node's other ports were read up in the same scrape.
A collector stamps one scrape of a node's ports with one ``ts`` and its rows come in any order:
blind37's flapping port sent its down row first and its 7 siblings, up, with the same ``ts``;
none was *after* it, so the switch window decided, 13.5 s later (DESIGN: a link down within
1 s).  A sibling read up at the down's instant (before or after its row) says the leaf is up,
as one read a second later does (detector.network NodeNics._up_already, _up_beside)."""

from __future__ import annotations

from detector.engine import Engine
from detector.network import NodeNics
from detector.testing import T0, feed, nic
from detector.thresholds import Thresholds
from detector.topology import Topology

# blind37's shape: each node's 8 ports face its leaf by the file (no Nics= on the switch).
STATED = Topology.from_text("""Topology=stated Version=1
NodeSet=node-[000-007] Gpus=8 Nics=mlx5_[0-7]
SwitchName=leaf[0-1] Nodes=node-[000-007]
SwitchName=spine0 Switches=leaf[0-1]
""")
# The same nodes as a Slurm topology.conf: "every NIC faces the leaf" is an assumption.
SLURM = Topology.from_text("""SwitchName=leaf0 Nodes=node-[000-003]
SwitchName=leaf1 Nodes=node-[004-007]
SwitchName=spine0 Switches=leaf[0-1]
""")


def _scrape(down_at: int | None, *, first: int = 3, bounced: bool = False,
            stamp: float = 0.0) -> list:
    """One node's 8 ports scraped every 10 s for 20 scrapes, every row of a scrape at one
    ``ts`` (the down port's row ``first`` in its scrape's order); mlx5_3 down at scrape
    ``down_at`` with link_downed +1 (``bounced``: its siblings' link_downed moves in that
    scrape too); ``stamp``: the siblings' rows that many seconds off the down port's."""
    out = []
    for i in range(20):
        ts = T0 + 10.0 * i
        rows = []
        for k in range(8):
            down = k == 3 and i == down_at
            flaps = int(down_at is not None and i >= down_at and (k == 3 or bounced))
            tx = i * 25 * 10**9
            rows.append(nic(ts + (0.0 if k == 3 else stamp), "n1", f"mlx5_{k}", tx=tx, rx=tx,
                            link_downed=flaps, up=not down))
        rows.insert(first, rows.pop(3))
        out.extend(rows)
    return out


def _told(rows: list) -> list:
    node, out, cfg = NodeNics("n1"), [], Thresholds()
    for r in rows:
        node.update(r, cfg, out)
    return [f for f in out if f.signal == "link_up_beside"]


def test_siblings_up_in_the_down_ports_scrape_are_told_at_once_before_or_after_its_row() -> None:
    for first in (0, 3, 7):  # the down row first, amid, last in its scrape
        told = _told(_scrape(10, first=first))
        assert sorted(f.evidence["nic"] for f in told) == [
            f"mlx5_{k}" for k in range(8) if k != 3], first
        assert {f.scope.key for f in told} == {"nic:n1/mlx5_3:1"}
        assert {f.ts for f in told} == {T0 + 100.0}
        assert {f.evidence["since_down_s"] for f in told} == {0.0}


def test_control_siblings_that_bounced_in_the_scrape_or_were_read_before_it_say_nothing() -> None:
    # Their link_downed moved too (their switch bouncing its ports?): no word it is up --
    # until their next scrape (as before).
    assert min(f.evidence["since_down_s"] for f in _told(_scrape(10, first=7, bounced=True))
               ) == 10.0
    # Read 0.5 s before the down sample: the leaf may have failed since -- told only at
    # their next scrape, 9.5 s after it (as before).
    late = _told(_scrape(10, first=7, stamp=-0.5))
    assert late and min(f.evidence["since_down_s"] for f in late) == 9.5


def _pages(topology, rows: list) -> list:
    return [(a.kind, a.cause, a.scope.key, round(a.detected_ts - a.onset_ts, 3))
            for a in feed(Engine(topology=topology), rows)
            if a.status == "firing"]


def test_a_link_down_beside_its_scrapes_siblings_up_is_paged_at_its_sample() -> None:
    rows = [r._replace(node="node-005") for r in _scrape(10, first=0)]
    assert _pages(STATED, rows) == [("network", "nic", "nic:node-005/mlx5_3:1", 0.0)]


def test_control_on_a_slurm_topology_the_window_still_decides() -> None:
    rows = [r._replace(node="node-005") for r in _scrape(10, first=0)]
    (page,) = _pages(SLURM, rows)
    assert page[:3] == ("network", "nic", "nic:node-005/mlx5_3:1") and page[3] > 10.0


def _bounce(*, all_ports: bool = False, first: int = 3) -> list:
    """node-005's 8 ports scraped every 10 s (one ``ts`` a scrape): mlx5_3 (``all_ports``:
    every port) bounced between scrapes 9 and 10 -- link_downed +1 and 200 symbol errors on
    scrape 10, the link up again -- its row ``first`` in its scrape."""
    out = []
    for i in range(20):
        rows = []
        for k in range(8):
            hit = (all_ports or k == 3) and i >= 10
            tx = i * 25 * 10**9
            rows.append(nic(T0 + 10.0 * i, "node-005", f"mlx5_{k}", tx=tx, rx=tx,
                            errors=200 if hit else 0, link_downed=int(hit)))
        rows.insert(first, rows.pop(3))
        out.extend(rows)
    return out


def test_a_bounce_between_samples_beside_its_scrapes_siblings_clean_is_paged_at_its_sample(
        ) -> None:
    # (blind37's other flaps: link_downed +1 and symbol errors, the link up again on the row --
    # paged 13.5 s later by the switch window; its 7 siblings, clean in its scrape, say the leaf
    # did not bounce)
    for first in (0, 7):
        assert _pages(STATED, _bounce(first=first)) == [
            ("network", "nic", "nic:node-005/mlx5_3:1", 0.0)], first
    # On a Slurm file the window decides, as for a link down.
    (page,) = _pages(SLURM, _bounce())
    assert page[:3] == ("network", "nic", "nic:node-005/mlx5_3:1") and page[3] > 10.0


def test_control_every_port_of_the_node_bounced_in_the_scrape_is_not_one_ports_at_once() -> None:
    # Each port's siblings bounced with it: no word that their leaf is up; the window decides.
    pages = _pages(STATED, _bounce(all_ports=True))
    assert pages and all(p[3] > 10.0 for p in pages)
