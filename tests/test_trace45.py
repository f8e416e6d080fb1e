"""trace45 (round 45): what moved unseen in round 44.

blind31 tune's new false page (vlm-s0, v-04 GPU 2 escalated slow_node/unknown; not on round
43's aadda6a) bisected to noise44's fleet bar (aa59387, JobMonitor._fleet_held): a TP group's
ranks wait for one another inside compute, so their runs are one run, but the bar reads each
rank's own mean -- the runs began a step or two apart -- and the first over it was told alone.
The job wanders (its vision stage's data mix), so the held mates were taken back with the
first one's ``node_wide`` (JobMonitor._hold_wandering), and the correlator escalated GPU 2 at
its GPU 22 s after GPU 0's NVLink isolation; its mates, told beside it a step later, joined
that isolation.  Now a held run beside a mate told a verdict on the same step is told with it
(JobMonitor._beside_told's ``now``).  The case: bench/blind31/cases/G9-*.
"""

from __future__ import annotations

import pytest

from detector.correlate import Correlator
from replay.runner import replay_log
from tests import blindcases as bc

G9 = bc.cases_of("blind31") / "G9-nvlink-tp-group-under-the-fleet-bar.jsonl.gz"


def test_a_tp_group_over_the_fleet_bar_is_told_whole_and_joins_its_nvlink_page(
        monkeypatch: pytest.MonkeyPatch) -> None:
    told: list[tuple[float, int | None, int | None]] = []  # (ts, gpu, node_wide) of v-04's
    orig = Correlator.on_finding

    def hook(self: Correlator, f, out: list) -> None:  # type: ignore[no-untyped-def]
        if f.signal == "slow_rank" and f.active and f.verdict and f.scope.node == "v-04":
            told.append((f.ts, f.scope.gpu, f.evidence.get("node_wide")))
        orig(self, f, out)

    monkeypatch.setattr(Correlator, "on_finding", hook)
    res = replay_log(G9)
    first = min(ts for ts, _, _ in told)
    # the group's eight ranks told on one step, each as one of eight (main: GPU 2 at 691.3 s
    # alone, no node_wide; the other seven 2.4 s later)
    assert sorted(g for ts, g, _ in told if ts == first) == list(range(8)), told
    assert {w for ts, _, w in told if ts == first} == {8}
    fired = [(a.topic, a.cause, a.scope.key) for a in res.alerts
             if a.status == "firing" and a.scope.node == "v-04"]
    assert fired == [("alerts.isolation", "nvlink", "gpu:v-04/0")]
