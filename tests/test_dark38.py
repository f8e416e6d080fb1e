"""dark38 (issue 10): a node that dies mid-step is paged though its job re-forms at once.

A node's death stops every source of it at once and its job's step in flight never ends (the
collective waits for the dead rank, the other GPUs busy in NCCL); torchelastic then re-forms
the job without it, 10-40 s on.  revA37 F1: no rank names the node any more once the job
re-formed, and no stop may have been told, so the node had no job on it when judged -- never
paged (18 of 24 probe runs).  The job's re-form tells the nodes it left (liveness._reforms);
a node left after a stall that began at its last record, the job's GPUs busy through it, is
the node's loss (liveness._left_lost).  Beside it the graceful shape (blind27 held churn-s6):
a spot VM reclaimed with a notice, its job saving (every GPU idle) and re-forming without it,
the VM dark 0.5-4 s after the job's last step -- the job left the node: no page (its judgement
deferred as a job's end is).  Built on tests/test_revA37.py's and tests/test_dark37.py's logs
(tests/test_liveness.py's fleet: 8 nodes of two GPUs, a rank a GPU, 2 s steps).
"""

from __future__ import annotations

import pytest

from replay.runner import replay_log
from tests.test_dark37 import DARK, _reform
from tests.test_liveness import T0, firing, silent_pages, write
from tests.test_revA37 import _fast_reform
from tests.test_service_stages import InMemoryCluster


@pytest.mark.parametrize(("interval", "swap", "pause", "back"), [
    (10.0, False, 10.0, 0), (10.0, True, 20.0, 100), (30.0, True, 10.0, 0),
    (30.0, False, 40.0, 100)])
def test_a_node_dead_mid_step_whose_job_re_forms_at_once_is_paged_in_time(
        tmp_path, interval: float, swap: bool, pause: float, back: int) -> None:
    """revA37 F1 on seeds its test does not run: re-formed ``pause`` s after the death onto a
    spare (``swap``) or on the 7 others, step numbers going on or ``back`` to a checkpoint --
    the node's page, within three of its intervals and 30 s of its death."""
    for seed in (2, 3):
        recs = _fast_reform(interval=interval, swap=swap, seed=seed, pause=pause, back=back)
        pages = silent_pages(replay_log(write(tmp_path, recs)).alerts)
        assert [(a.status, a.scope.key) for a in pages][:1] == [("firing", f"node:{DARK}")], seed
        assert pages[0].detected_ts < T0 + 380.0 + 3 * interval + 30.0, seed
        assert pages[0].evidence["jobs_on_node"][0]["job"] == "job-1"


@pytest.mark.parametrize("interval", [10.0, 30.0])
@pytest.mark.parametrize("swap", [True, False])
def test_a_vm_reclaimed_as_its_job_saves_and_re_forms_without_it_is_not_paged(
        tmp_path, interval: float, swap: bool) -> None:
    """blind27 held churn-s6's shape: the job saves (every GPU idle) and re-forms without
    node-003 70 s on; node-003 goes dark 0.5-4 s after the job's last step -- by timing a
    death in the step in flight, but no rank waited for it.  No page (paged 240 s on before:
    24 of 24)."""
    for seed, dark_after in ((0, 0.5), (1, 1.9), (2, 4.0)):
        recs = _reform(dark_after=dark_after, interval=interval, swap=swap, seed=seed)
        assert firing(replay_log(write(tmp_path, recs)).alerts) == [], (seed, dark_after)


def test_the_service_pages_a_node_dead_mid_step_whose_job_re_forms_as_the_replay_does(
        tmp_path) -> None:
    """Split stages (a source per topic-partition, findings through a topic, one correlator):
    the re-form is told by the job's step partition, the node's quiet by its telemetry
    partitions -- the same page as the in-process replay."""
    log = write(tmp_path, _fast_reform(interval=10.0, swap=True, seed=2, pause=10.0))
    want = [(a.dedup_key, a.status) for a in silent_pages(replay_log(log).alerts)]
    assert want[:1] == [(f"fl:esc:unattributed:node:{DARK}", "firing")]
    svc = InMemoryCluster(log, seed=1)
    svc.run()
    assert [(a.dedup_key, a.status) for a in silent_pages(svc.alerts)] == want
