"""path23's one path for a node lost under its job, without its two regressions (issue 14).

1. The correlator judged a node lost in seconds whenever its ``quiet`` findings were still
   held -- also at the 240 s silence of one topic, long after the source's window: by then a
   job's other node could have left the fleet too, "dark with it", and the job was taken for
   lost with this node (tests/test_state_bounds.py's churning fleet: 15 unattributed
   escalations in 32 h).  A source judged a node in seconds only within FAST_WINDOW_S of its
   fast bound (round 22's ``_fast``); the correlator now does the same.
2. A service's one-topic partition names a node "dark with" a quiet node for one record of
   that topic missed: a 30 s ECC poll read in bursts does that to healthy nodes at every
   scan, and a lone dead node's page waited FAST_WAIT_S for them (+25 s on blind9's
   nvl72/ops-hgx).  A node is awaited when named on two of the quiet node's topics (or on
   its only one).
"""

from __future__ import annotations

import pytest

from detector import liveness
from detector.alerts import Alert, Scope
from detector.correlate import Correlator
from detector.findings import Finding
from detector.thresholds import Thresholds
from tests.test_liveness import T0, TIERS

INTERVAL = {"thermal": 10.0, "ecc": 30.0}


def _quiet(node: str, what: str, ts: float, named: list[str] | None = None,
           last: float = 400.0) -> Finding:
    """A source's word that ``node`` (last record at ``last``) is quiet on ``what`` at
    ``ts``, naming the nodes it saw go dark with it."""
    every = INTERVAL[what]
    ev = {"quiet": what, "last_ts": T0 + last, "interval_s": every,
          "bound_s": liveness.fast_s(every), "quiet_s": ts - last, "nodes_heard_since": 5}
    if named:
        ev["dark_with"] = named
    return Finding(T0 + ts, T0 + last, "silent", "unattributed", "unknown",
                   Scope.of_node(node), True, False, 0.9, ev)


def _silence(node: str, what: str, ts: float, last: float = 400.0) -> Finding:
    """The 240 s path's silence of ``node`` on ``what``."""
    every = INTERVAL[what]
    ev = {"topic": what, "last_ts": T0 + last, "interval_s": every,
          "bound_s": liveness.bound_s(every), "nodes_heard_since": 5}
    return Finding(T0 + ts, T0 + last, "silent", "unattributed", "unknown",
                   Scope.of_node(node), True, False, 0.9, ev)


def _job(corr: Correlator, out: list[Alert], nodes: list[str], idle: list[int]) -> None:
    """job-1, one rank on GPU 0 of each of ``nodes``; the last node's ``idle`` GPUs."""
    corr.on_finding(Finding(T0, T0, "job_layout", "slow_node", "unknown",
                            Scope.of_job("job-1"), True, False, 0.0, {"placement": [
                                [k, n, 0, k] for k, n in enumerate(nodes)]}, "job-1"), out)
    corr.on_finding(Finding(T0, T0, "gpus_busy", "slow_node", "power",
                            Scope.of_node(nodes[-1]), True, False, 0.0, {"idle_gpus": idle}),
                    out)


def _stop(corr: Correlator, out: list[Alert], ts: float) -> None:
    corr.on_finding(Finding(T0 + ts, T0 + 399, "silent", "unattributed", "unknown",
                            Scope.of_job("job-1"), True, False, 0.0,
                            {"last_step_ts": T0 + 399, "step_period_s": 2.0}, "job-1"), out)


@pytest.mark.parametrize("named_on", [("ecc",), ("ecc", "thermal")])
def test_a_lone_node_is_not_held_for_a_node_one_topic_of_it_names(named_on):
    """node-016 dies under job-1 (its other rank on node-000, busy); told quiet on thermal
    and ECC, the ECC partition naming node-017 of its leaf (a poll's record of it missed):
    paged at once, alone.  Named on both topics, node-017 is awaited (no page yet)."""
    corr = Correlator(Thresholds(), TIERS)
    out: list[Alert] = []
    _job(corr, out, ["node-016", "node-000"], [])
    # Told at 432 s: both topics quiet past their own interval (ECC's 30 s) -- since live35
    # (31bae4c) a node is dark in seconds only when every quiet topic has missed a row
    # (at 422 s its ECC was 22 s quiet, its next poll not yet due: no page).
    for what in ("thermal", "ecc"):
        corr.on_finding(_quiet("node-016", what, 432.0,
                               ["node-017"] if what in named_on else None), out)
    _stop(corr, out, 432.0)
    if named_on == ("ecc",):
        assert [(a.scope.key, a.detected_ts - T0) for a in out] == [("node:node-016", 432.0)]
        assert out[0].evidence["jobs_on_node"][0]["job"] == "job-1"
    else:
        assert out == [] and liveness._WAIT in corr._silent["node-016"]


def test_a_node_past_its_quiet_window_is_left_to_the_240_s_bound():
    """job-1 ends on node-016 and node-000 at 399 s, node-000's GPU going idle (no job
    lost); node-016 leaves the fleet (told quiet at 422 s), node-000 leaves later (quiet at
    622 s).  At node-016's 240 s silence on thermal (ECC still told quiet) its job's other
    node is dark too -- but that is no node lost under its job: no page in seconds (before:
    an unattributed page, the churning fleet's)."""
    corr = Correlator(Thresholds(), TIERS)
    out: list[Alert] = []
    _job(corr, out, ["node-016", "node-000"], [0])
    _stop(corr, out, 405.0)
    for what in ("thermal", "ecc"):
        corr.on_finding(_quiet("node-016", what, 422.0), out)
    assert out == [] and liveness._WAIT not in corr._silent["node-016"]
    for what in ("thermal", "ecc"):
        corr.on_finding(_quiet("node-000", what, 622.0, last=600.0), out)
    corr.on_finding(_silence("node-016", "thermal", 640.0), out)
    assert out == []
    assert liveness._WAIT not in corr._silent["node-016"]
