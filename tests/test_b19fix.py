"""b19fix (round 28, issue 10): a node drained off its job, then dark for its upgrade, is no
"silent node, job stalled" page (blind19 O1).

The scheduler stops the job (SIGTERM: it saves and exits, every GPU of it idles), the node goes
dark 10-25 s later for its rolling driver upgrade, and the job is requeued 40-70 s after its
stop -- on the job's other nodes too, so their GPUs are busy again when the correlator judges
the quiet node.  Main took those GPUs for the job's ranks spinning in the collective for a
lost peer (detector.liveness._lost) and paged the node 57 s after it went quiet, with the job
"stalled" (3 of 4 tune, 1 of 4 held blind19 ops logs).  A GPU waiting for a lost peer is busy
*without a break since the job's last step*; one whose busy run began after it idled in
between: its job stopped, and what runs there now is new work (the requeue).  A node dying
under its running job still pages within seconds (silent19, dark20, live26).
"""

from __future__ import annotations

import pytest

from detector import liveness
from replay.runner import replay_log
from tests.test_dark20 import service
from tests.test_liveness import NODES, T0, firing, fleet, silent_pages, write
from tests.test_silent19 import by_ts, steps

DEAD = "node-003"
OTHERS = [n for n in NODES if n != DEAD]


def drained(requeue: float, dark: tuple[float, float] = (412.0, 530.0)) -> list[dict]:
    """job-1 on every node is stopped at 400 s (its GPUs idle); DEAD goes dark over ``dark``
    (its upgrade's reboot); job-1 is requeued on the other 7 nodes at ``requeue`` s: their
    GPUs busy again from then (loading its checkpoint), its first step done 30 s later;
    DEAD's GPUs stay idle once back."""
    recs = []
    for r in fleet(seconds=900, dead={DEAD: dark}, job=False):
        v = r["value"]
        if r["topic"] == "telemetry.thermal" and v["ts"] >= T0 + 400 and (
                v["node"] == DEAD or v["ts"] < T0 + requeue):
            v.update(power_w=90.0, sm_clock_mhz=345.0, throttle=1)
        recs.append(r)
    recs += steps("job-1", NODES, 0, 400) + steps("job-1", OTHERS, requeue + 30, 900, step0=150)
    return by_ts(recs)


@pytest.mark.parametrize("requeue", [440.0, 470.0])
def test_a_node_drained_off_its_job_and_rebooted_is_not_paged(tmp_path, requeue):
    """DEAD goes dark 12 s after its job was stopped and is back 118 s later; the job is
    requeued on the other nodes 40 or 70 s after its stop, before the quiet node is judged
    -- no page (main: 'silent node, job stalled', firing until the end of the log)."""
    log = write(tmp_path, drained(requeue))
    assert silent_pages(replay_log(log).alerts) == []


def test_the_service_does_not_page_the_drained_node_either(tmp_path):
    """The service's correlator judges from every partition's layouts, stops and busy GPUs:
    the same answer (main: paged too)."""
    log = write(tmp_path, drained(440.0))
    assert firing(service(log).alerts) == []


def test_a_node_lost_under_its_running_job_is_still_paged_in_seconds(tmp_path):
    """The guard: DEAD dies at 400 s under the running job, whose other ranks spin busy in the
    collective, then the job is re-formed on the other 7 nodes 60 s later (its GPUs busy
    throughout: no idle between) -- paged within 35 s, naming the job that stalled."""
    recs = fleet(seconds=900, dead={DEAD: (400.0, 1e9)}, job=False)
    recs += steps("job-1", NODES, 0, 400) + steps("job-1", OTHERS, 460, 900, step0=150)
    pages = silent_pages(replay_log(write(tmp_path, by_ts(recs))).alerts)
    assert [(a.status, a.scope.key) for a in pages] == [("firing", f"node:{DEAD}")]
    assert pages[0].detected_ts - (T0 + 400) <= 35
    assert [j["job"] for j in pages[0].evidence["jobs_on_node"]] == ["job-1"]


def test_a_drained_node_that_never_comes_back_is_left_to_the_slow_path(tmp_path):
    """Drained and requeued the same way, DEAD never returns: no page in seconds (the job
    did not stall on it); the 240 s bound decides, as for any node dark under no job."""
    res = replay_log(write(tmp_path, drained(440.0, dark=(412.0, 1e9))))
    assert all(a.detected_ts - a.onset_ts >= liveness.SILENT_MIN_S
               for a in silent_pages(res.alerts))
