"""The lead's end-of-round review of round 32 (revA32, revB32): mends, each failing first."""

from __future__ import annotations

import pytest

from detector.engine import Engine
from detector.statecodec import UNSIGNED, SnapshotRefused
from tests.test_defer32 import _slow_pages, _two_clusters


def _restored_with(forge) -> list | None:
    """test_defer32's two-cluster case, snapshotted at 1,300 s, its run-on forged by ``forge``;
    the quiet cluster's slow-node pages after the restore (None: the snapshot refused)."""
    evs = _two_clusters()
    eng = Engine(home_cluster="east")
    got: list = []
    cut = next(k for k, e in enumerate(evs) if e.ts >= 1_300.0)
    for k, e in enumerate(evs):
        if k == cut:
            st = UNSIGNED.decode(eng.snapshot(), "engine")
            forge(st["source"]["run_on"])
            try:
                eng = Engine.restore(UNSIGNED.encode(st, "engine"), home_cluster="east")
            except SnapshotRefused:
                return None
        got += eng.process(e)
    return _slow_pages(got)


def _far_look(ro: list) -> None:
    ro[0] = 1e18


def _far_still(ro: list) -> None:
    ro[1] = [[c, a, 1e18] for c, a, _ in ro[1]]


@pytest.mark.parametrize("forge", [_far_look, _far_still])
def test_a_run_on_past_the_partitions_clock_is_refused(forge) -> None:
    """revA32 1: a next look (or a "still since") far past the partition's clock was taken, and
    the quiet cluster's page never resolved (uninterrupted: resolved at 2101)."""
    assert _restored_with(forge) is None


def test_an_honest_run_on_still_restores() -> None:
    whole = Engine(home_cluster="east")
    want: list = []
    for e in _two_clusters():
        want += whole.process(e)
    assert _restored_with(lambda ro: None) == _slow_pages(want)


def test_a_restored_deferrals_job_rows_are_the_rows_it_writes() -> None:
    """revA32 4: a deferral's job rows go verbatim into the page's evidence; only a job's name,
    its ranks and its last step's time are taken (was: any dict naming a job)."""
    from detector import liveness
    from detector.correlate import Correlator
    from detector.findings import Finding
    from detector.thresholds import Thresholds
    from tests.test_life31 import DARK
    from tests.test_liveness import T0
    corr = Correlator(Thresholds())
    g = Finding(T0, T0, "silent", "unattributed", "unknown", liveness.Scope.of_node(DARK),
                True, False, 0.9, {"topic": "ecc", "last_ts": T0})

    def with_jobs(jobs: list) -> bool:
        corr._silent = {DARK: {"ecc": g, liveness._JUDGED: g,
                               liveness._DEFER: g._replace(evidence={"jobs": jobs})}}
        return liveness.check_corr_restored(corr)

    assert with_jobs([{"job": "job-1", "ranks": 2, "last_step_ts": T0}, {"job": "job-2",
                                                                          "ranks": 8}])
    for bad in ({"job": "job-1", "note": "x" * 10_000}, {"job": "job-1", "ranks": "2"},
                {"job": "job-1", "last_step_ts": float("nan")}, {"job": "j" * 300}):
        assert not with_jobs([bad]), bad


def test_an_honest_silent_map_at_its_bound_plus_the_jobs_keys_restores() -> None:
    """revA32 3: MAX_NODES silent nodes, then a job's stop (its keys are made regardless):
    an honest correlator's _silent was refused at restore."""
    from detector import liveness
    from detector.correlate import Correlator
    from detector.thresholds import Thresholds
    corr = Correlator(Thresholds())
    corr._silent = dict.fromkeys((f"n{k}" for k in range(liveness.MAX_NODES)), {})
    corr._silent[liveness._STOPS] = {}
    corr._silent[liveness._ABSENT] = {}
    assert liveness.check_corr_restored(corr)


def test_a_second_row_remap_after_resets_is_no_inspection_escalation() -> None:
    """revB32 2: XID 63 became a hardware XID (remap32), so gpud's rule -- the same hardware XID
    after two resets goes to hardware inspection -- took a GPU remapping a second row an hour
    later (its reset activating the first remap, one routine reset) to "inspection ... then
    RMA".  A reset is 63's remedy and a later 63 a new row (bank exhaustion is XID 64 / the
    failure flag's, drained at once): the new 63 is its own reset_gpu page, no escalation."""
    from detector.testing import T0, ecc, feed
    node, gpu = "sx11", 4

    def every(t0: float, t1: float, **kw) -> list:
        return [ecc(T0 + t0 + 30.0 * k, node, gpu, **kw) for k in range(int((t1 - t0) // 30) + 1)]

    evs = [*every(0, 60, sbe=2), ecc(T0 + 75, node, gpu, sbe=2, xid=63),
           *every(90, 300, sbe=2, pending=True), *every(330, 600),
           *every(630, 900, sbe=1), *every(930, 1200), *every(1230, 3600, sbe=1),
           ecc(T0 + 3615, node, gpu, sbe=1, xid=63), *every(3630, 3900, sbe=1, pending=True)]
    alerts = feed(Engine(), evs)
    late = [a for a in alerts if a.status == "firing" and a.detected_ts >= T0 + 3615]
    assert late and all(a.action is not None and a.action.name == "reset_gpu" for a in late), [
        (a.kind, a.action.name if a.action else None) for a in late]


def test_a_nodes_forged_nic_waits_are_refused_and_honest_ones_restore() -> None:
    """revB32 5: NodeNics._retrains (link32) and _downs were snapshotted but never checked at
    restore: a forged one passed and failed the node's next NIC sample."""
    from detector.monitors import Monitors
    from detector.statecodec import decode_state, encode_state
    from tests.test_link32 import W1, fabric
    recs = fabric(20, retrain=W1, seed=1)  # (the retrained port sampled before a sibling)
    mon, found, waited = Monitors(), [], 0
    for s in recs:
        mon.process(s, found)
        if any(n._retrains or n._downs for n in mon._nics.values()):
            waited += 1
            decode_state(encode_state(mon)).check_restored()  # (honest: taken)
    assert waited
    nics = mon._nics["hgx001"]
    for field, forged in (("_retrains", [["x", 1, 2, 3]]), ("_retrains", [1, 1, 1]),
                          ("_retrains", "abc"), ("_downs", [[1.0, 2.0, set()]]),
                          ("_downs", [None] * 40)):
        honest = getattr(nics, field)
        setattr(nics, field, forged)
        with pytest.raises(SnapshotRefused):
            decode_state(encode_state(mon)).check_restored()
        setattr(nics, field, honest)


# revB32 1: tie32 narrows a DP-2 tie's job page to the judged GPU by re-firing the same
# dedup_key (scope gpu, cause gpu_hardware, action investigate as before).  Alertmanager heard it
# (its labels change), but storm control (on by default for PagerDuty and webhooks) let a re-fire
# of a sent key through only when its action widened, and the sinks' ledger skipped a trigger of
# a triggered key: PagerDuty and webhook users got the job page and never the judged GPU.  Now
# the re-fire says the unit it leaves (evidence scope_was), which both gates take as news.
def test_the_narrowing_of_a_tie_to_its_gpu_reaches_storm_controlled_sinks() -> None:
    import tests.test_sdc19 as sdc19
    from detector.alerts import FiredAlert
    from detector.pager.config import StormConfig
    from detector.pager.storm import StormControl
    from detector.testing import feed
    fired = [FiredAlert.from_record(a.topic, a.to_dict())
             for a in feed(Engine(), sdc19._job(4, 2, 140, bad=1)) if a.kind == "sdc"]
    assert [a.scope.key for a in fired if a.status == "firing"][-1] == "gpu:node-000/1"
    storm = StormControl("pd", StormConfig(), now=0.0)
    sent = []
    for k, a in enumerate(fired):
        sent += storm.offer(a, "critical", None, now=1.0 + 20 * k)
        sent += storm.due(16.0 + 20 * k)
    assert "gpu:node-000/1" in [n.alert.scope.key for n in sent
                                if n.event == "trigger" and n.alert is not None]


@pytest.mark.parametrize("xid63", [False, True])
def test_a_remap_page_resolves_when_the_reset_clears_the_flag(xid63: bool) -> None:
    """revB32 3: a pending remap's reset_gpu page resolved only when volatile counters fell
    back (a reset) -- with them at 0 or not sent, the reset the page asked for cleared the flag
    and the page stayed open for good.  The flag clears only at that reset: it is one."""
    from detector.testing import T0, ecc, feed
    node, gpu = "sx11", 4

    def every(t0: float, t1: float, **kw) -> list:
        return [ecc(T0 + t0 + 30.0 * k, node, gpu, **kw) for k in range(int((t1 - t0) // 30) + 1)]

    evs = [*every(0, 60), *([ecc(T0 + 75, node, gpu, xid=63)] if xid63 else []),
           *every(90, 300, pending=True), *every(330, 3600, pending=False)]
    got = [(a.status, a.scope.key, round(a.detected_ts - T0))
           for a in feed(Engine(), evs, finish=False)]
    assert [g[:2] for g in got] == [("firing", f"gpu:{node}/{gpu}"),
                                    ("resolved", f"gpu:{node}/{gpu}")], got
    assert got[1][2] >= 330


def _tie_alerts() -> list:
    import tests.test_sdc19 as sdc19
    from detector.alerts import FiredAlert
    from detector.testing import feed
    return [FiredAlert.from_record(a.topic, a.to_dict())
            for a in feed(Engine(), sdc19._job(4, 2, 140, bad=1)) if a.kind == "sdc"]


@pytest.mark.parametrize("kind", ["pagerduty", "webhook"])
def test_a_ledger_sink_delivers_the_narrowing_once(kind: str, tmp_path) -> None:
    """revB32 1, the sinks' half (storm control off): the narrowed re-fire is posted -- to
    PagerDuty under a key of its own, the job's key resolved -- and its redelivery is not."""
    import json
    import threading
    from pathlib import Path

    from prometheus_client import CollectorRegistry

    from detector.metrics import PagerMetrics
    from detector.pager.config import PagerConfig
    from detector.pager.notification import Notification
    from detector.pager.sinks import make_sink
    from detector.pager.testing import Receiver
    fired = [a for a in _tie_alerts() if a.status == "firing"]
    assert [a.scope.key for a in fired] == ["job:job-1", "gpu:node-000/1"]
    with Receiver() as rx:
        sink = {"type": kind, "url": rx.url + ("/v2/enqueue" if kind == "pagerduty" else "/hook"),
                "timeout_s": 2.0, "backoff_initial_s": 0.01, "backoff_max_s": 0.02,
                "retry_for_s": 0.1, "storm": {"enabled": False}}
        if kind == "pagerduty":
            sink["routing_key"] = "k" * 32
        cfg = PagerConfig.from_dict({"sinks": {"s": sink}, "state_dir": str(tmp_path),
                                     "deadletter_file": str(tmp_path / "d.jsonl")}, env={})
        s = make_sink(cfg.sinks["s"], PagerMetrics(CollectorRegistry(), cfg.sinks),
                      state_dir=Path(tmp_path), stop=threading.Event())
        outs = [s.deliver(Notification("s", "trigger", a.dedup_key, "critical", a))
                for a in (*fired, fired[-1])]
        assert [o.delivered and not o.skipped for o in outs] == [True, True, False]
        bodies = [json.loads(r.body) for r in rx.requests]
    if kind == "pagerduty":
        assert [(b["event_action"], b["dedup_key"]) for b in bodies] == [
            ("trigger", "fl:esc:sdc:job:job-1"),
            ("trigger", "fl:esc:sdc:job:job-1@gpu:node-000/1"),
            ("resolve", "fl:esc:sdc:job:job-1")]
        assert bodies[1]["payload"]["summary"].startswith(
            "NOW AT gpu:node-000/1 (was job:job-1):")
    else:
        assert len(bodies) == 2 and bodies[1]["scope_was"] == "job:job-1"
        assert bodies[1]["title"].startswith("NOW AT gpu:node-000/1 (was job:job-1):")


@pytest.mark.parametrize("bad", [123, ["job:job-1"], {"a": 1}, "x" * 300, None])
def test_a_malformed_scope_was_from_the_alerts_topic_is_no_news(bad) -> None:
    """``scope_was`` is read from an alert's evidence (bytes off the alerts topic): anything
    but a short string is ignored -- no re-trigger, no crash."""
    import tests.test_sdc19 as sdc19
    from detector.alerts import FiredAlert
    from detector.pager import widening
    from detector.testing import feed
    narrowed = [a for a in feed(Engine(), sdc19._job(4, 2, 140, bad=1))
                if a.kind == "sdc" and a.status == "firing"][-1]
    d = narrowed.to_dict()
    assert widening.news(FiredAlert.from_record(narrowed.topic, d))
    d["evidence"]["scope_was"] = bad
    a = FiredAlert.from_record(narrowed.topic, d)
    assert widening.scope_was(a) == "" and not widening.rescoped(a) and not widening.news(a)
