"""key43 (round 43, issues 10 and 14): one unit, one key; alerts that stay inside their input.

1. A row naming no ``cluster`` (DESIGN makes it optional) of a node no row named yet is the
   home's -- the source's home monitors took it -- and its findings are keyed so: a tray's
   DCGM rows without ``cluster`` and its step records with it paged one PSU brake under
   ``fl:iso:...`` and ``fl:pw-b:iso:...`` (blind33 F6; CorrelatorPartition.cluster_of).
2. At the end of the input time runs on through the timers then waiting and what they arm up
   to the last of them (CorrelatorPartition.run_out): a slow rank excused by a cap still on
   at the end was looked at every 15 s for a day of event time and escalated then, a page
   stamped a day past the last record (blind33's cut F5 log).
"""

from __future__ import annotations

from msgspec.structs import replace

from detector.engine import Engine
from detector.testing import T0, ecc, feed, healthy_job, power_capped, thermal


def test_an_unnamed_row_of_a_node_its_steps_name_pages_under_their_cluster() -> None:
    """Fails before: fl:iso:hardware:gpu:node-000/3 (the XID row's own, no cluster) where
    the node's step records name east -- a second key once a step finding of it pages."""
    eng = Engine()
    steps = [replace(s, cluster="east") for s in healthy_job(ranks=8, steps=20)]
    rows = [thermal(T0 + k + 0.5, "node-000", g) for k in range(20) for g in range(8)]
    assert feed(eng, sorted([*steps, *rows], key=lambda e: e.ts), finish=False) == []
    alerts = eng.process(ecc(T0 + 20.5, "node-000", 3, xid=79))
    assert [(a.dedup_key, a.cluster) for a in alerts] == [
        ("fl:east:iso:hardware:gpu:node-000/3", "east")]


def test_a_stream_naming_no_cluster_keeps_unnamed_keys() -> None:
    eng = Engine()
    steps = list(healthy_job(ranks=8, steps=20))
    assert feed(eng, steps, finish=False) == []
    alerts = eng.process(ecc(T0 + 20.5, "node-000", 3, xid=79))
    assert [a.dedup_key for a in alerts] == ["fl:iso:hardware:gpu:node-000/3"]


def _capped_to_the_end(slowdown: float, drop: float) -> tuple[list, float]:
    """A 16-rank job whose rank 3 runs ``slowdown`` x from step 62, its GPU capped (0x4)
    ``drop`` below its clock from 55 s to the end of the input (120 s)."""
    job = healthy_job(steps=120, slow={3: slowdown}, slow_from=62)
    evs = sorted([*job, *power_capped(lambda t: drop if t >= 55 else 0.0)],
                 key=lambda e: e.ts)
    return evs, max(e.ts for e in evs)


def test_no_alert_is_stamped_a_day_past_the_end_of_its_input() -> None:
    """Fails before: gpu:node-000/3 escalated slow_node/unknown 87,190 s after the last
    record (a 3 % cap excuses a 5 % slower rank while it lasts: the end of the input is no
    end of the cap)."""
    evs, last = _capped_to_the_end(1.05, 0.03)
    alerts = feed(Engine(), evs)
    assert [a for a in alerts if a.detected_ts > last + 60.0] == []


def test_a_rank_the_cap_does_not_excuse_is_still_paged_inside_the_input() -> None:
    """Guard: the end of the input decides nothing it decided before."""
    evs, last = _capped_to_the_end(1.12, 0.03)
    alerts = feed(Engine(), evs)
    assert [(a.status, a.kind, a.scope.key) for a in alerts] == [
        ("firing", "slow_node", "gpu:node-000/3")]
    assert alerts[0].detected_ts <= last
