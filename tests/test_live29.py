"""live29 (round 29, issue 10): review29 finding 1 -- a node dying in its job's checkpoint save
is paged 252 s late (b19fix) -- stays open: at the judgement the telemetry does not tell it from
blind19 O1's drain.  This file pins the drain shape that rules out the discriminator review29
suggested, so that a fix for finding 1 cannot bring O1's false page back.

The suggestion: a drained node's own GPUs were told idle before its last record; a node dying
under its job last told them busy.  blind19 corp2 tune ops-s2 (op08, job ft-o) says otherwise:
op08's last thermal sample is 1.0 s before the job's last step, busy (681 W, 1967 MHz, 0x0);
its next (15 s interval) never comes -- dark 10-25 s after the stop, no idle sample between.
Its peers (op05/06/07/09) idle 0-60 s after the stop, are busy from 60 s, step again at 70.5 s
(the same job id, the step count going on).  review29's save (tests/test_review29.py finding 1):
the dead node's last sample 1.5 s before the last step, busy; peers idle 30 s, then busy, no
step.  The same records up to the judgement except the idle spell's length (60 vs 30 s here,
40-70 s in O1's generator) and steps that come only later.  The suggested rule
(`_LayoutView.waiting` dropping b19fix's busy-since-the-stop condition when the quiet node's
GPUs of the job were last told busy) passes finding 1 and re-fires O1 on ops-s2 (op08 paged
65 s after the stop, 2 alert records added) and on the test below.
"""

from __future__ import annotations

import pytest

from replay.runner import replay_log
from tests.test_b19fix import drained
from tests.test_liveness import silent_pages, write


@pytest.mark.parametrize("dark", [402.0, 405.0])
@pytest.mark.parametrize("requeue", [440.0, 460.0])
def test_a_node_dark_before_its_idle_sample_after_a_drain_is_not_paged(tmp_path, dark,
                                                                       requeue) -> None:
    """blind19 ops-s2's op08: the job stopped at 400 s, DEAD's last thermal sample (398.5 s)
    told its GPUs busy, it went dark at ``dark`` before its next one and is back at 530 s; the
    job is requeued on the other nodes at ``requeue``.  No page (main: none; with the
    'last told busy' rule: paged 43-67 s after it went dark)."""
    log = write(tmp_path, drained(requeue, dark=(dark, 530.0)))
    assert silent_pages(replay_log(log).alerts) == []
