"""dark38 (issue 10): a node that dies mid-step is paged though its job re-forms at once.

A node's death stops every source of it at once and its job's step in flight never ends (the
collective waits for the dead rank, the other GPUs busy in NCCL); torchelastic then re-forms
the job without it, 10-40 s on.  revA37 F1: no rank names the node any more once the job
re-formed, and no stop may have been told, so the node had no job on it when judged -- never
paged (18 of 24 probe runs).  The job's re-form tells the nodes it left (liveness._reforms);
a node left after a stall that began at its last record, the job's GPUs busy through it, is
the node's loss (liveness._left_lost) -- also when the re-form dropped the top ranks and
moved none (the job's last node dead).  A death whose job's GPUs idle at once (blind7 G4) is
still paged, on the 240 s path; blind27 held churn-s6 (a VM reclaimed while its job saves,
dark 1.8 s after the job's last step -- a save's step, and the job went on from it) is not
(a strict xfail here until dark39).  Built on
tests/test_revA37.py's and tests/test_dark37.py's logs (tests/test_liveness.py's fleet: 8
nodes of two GPUs, a rank a GPU, 2 s steps).
"""

from __future__ import annotations

import pytest

from replay.runner import replay_log
from tests.test_dark37 import DARK, _reform, _steps
from tests.test_liveness import NODES, T0, firing, fleet, silent_pages, write
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
@pytest.mark.parametrize("pause", [10.0, 20.0])
def test_a_last_node_dead_mid_step_whose_job_shrinks_without_it_is_paged_in_time(
        tmp_path, interval: float, pause: float) -> None:
    """The job's last node dies mid-step and the job re-forms on the 7 others ``pause`` s on:
    the top ranks are dropped, no rank moves (no slot changes hardware) -- its re-form is the
    first step without them after a stall.  Paged within three intervals and 30 s (240 s on
    before: 8 of 8 probe runs at pause 10-20 s, seeds 2-3)."""
    last = NODES[-1]
    for seed in (2, 3):
        recs = fleet(seconds=1000, interval=interval, nic_interval=interval, job=False,
                     seed=seed, dead={last: (380.5, 1e9)})
        recs += _steps([(0.0, 380.0, NODES, 0), (380.0 + pause, 1000.0, NODES[:-1], 190)])
        recs.sort(key=lambda r: r["value"]["ts"])
        pages = silent_pages(replay_log(write(tmp_path, recs)).alerts)
        assert [(a.status, a.scope.key) for a in pages][:1] == [("firing", f"node:{last}")], seed
        assert pages[0].detected_ts < T0 + 380.0 + 3 * interval + 30.0, seed


@pytest.mark.parametrize("interval", [10.0, 30.0])
@pytest.mark.parametrize("swap", [True, False])
def test_a_node_dead_as_its_jobs_gpus_go_idle_then_re_formed_without_is_still_paged(
        tmp_path, interval: float, swap: bool) -> None:
    """blind7 G4's shape: node-003 dies 0.5-4 s after the job's last step, the other GPUs go
    idle at once (the workers gave up) and the job re-forms without it 70 s on: no rank waited
    busy, so not in seconds -- but the node's page on the 240 s path (a first cut that
    deferred a re-form after idle GPUs as a clean leave lost blind7 G4)."""
    for seed, dark_after in ((0, 0.5), (1, 4.0)):
        recs = _reform(dark_after=dark_after, interval=interval, swap=swap, seed=seed)
        pages = silent_pages(replay_log(write(tmp_path, recs)).alerts)
        assert [(a.status, a.scope.key) for a in pages][:1] == [("firing", f"node:{DARK}")], seed


def test_a_vm_reclaimed_while_its_job_saves_and_re_forms_without_it_is_not_paged(
        tmp_path) -> None:
    """blind27 held churn-s6 sp-02 (a strict xfail in round 38, fixed by dark39): a spot VM
    reclaimed with a 30 s notice while its job saves through the notice (its last step 13 s
    after the one before, its period 2 s) and re-forms without it, going on from that step:
    dark 1.8 s after the save's step, it left a job that saved for it -- no page
    (liveness._went_on_without reads the save, JobMonitor._moved_gap)."""
    stop, resume = 388.0, 450.0
    recs = fleet(seconds=1000, interval=10.0, nic_interval=10.0, job=False, seed=0,
                 dead={DARK: (stop + 1.8, 1e9)}, idle=(stop + 1.0, resume))
    after = [n for n in NODES if n != DARK]
    # steps every 2 s to 375 s, then a 13 s step with the save (ends at 388 s), then the re-form
    recs += _steps([(0.0, 376.0, NODES, 0), (387.0, 389.0, NODES, 188),
                    (resume, 1000.0, after, 189)])
    recs.sort(key=lambda r: r["value"]["ts"])
    assert firing(replay_log(write(tmp_path, recs)).alerts) == []


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
