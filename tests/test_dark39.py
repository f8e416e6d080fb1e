"""dark39 (issue 10): a node lost during its job's save -- the restart's step number tells.

A job that stops stepping while a node still reports, then re-forms without that node, is a
planned leave when it goes on from where it stopped (a spot VM reclaimed after its job saved
for the notice: blind27 F3, held churn-s6) and a crash when it goes back to an older
checkpoint (the save in flight never finished: revA38 F6, 0 of 24 runs paged in 600 s, its
judgement deferred 45 min as a job's end).  So:

- a job back to an older checkpoint without the node (``steps_back`` on its re-form,
  liveness._back_without) keeps the node's page: the 240 s path pages it (a drained node
  rebooted under a requeued job -- b19fix -- is back within it), and a node deferred before
  the re-form is paged at the re-form (liveness._undefer);
- a job whose last step before the stop was a save (far over its period:
  ``JobMonitor._moved_gap``) and that re-formed going on from it left the node that went dark
  right after that step (liveness._went_on_without) -- a death in a routine step (blind7 G4)
  is still paged.

Built on tests/test_liveness.py's fleet (8 nodes of two GPUs, a rank a GPU, 2 s steps) and
tests/test_dark37.py's step spans.
"""

from __future__ import annotations

import pytest

from replay.runner import replay_log
from tests.test_dark37 import DARK, SPARE, _steps
from tests.test_liveness import NODES, T0, fleet, silent_pages, write

STOP = 380.0  # job-1's last step before its save ends at T0 + 379 s (step 189)


def _save_then_dark(*, interval: float, dark_at: float, resume: float, back: int,
                    swap: bool = False, seed: int = 0, seconds: float = 1000.0,
                    saving: bool = True) -> list[dict]:
    """job-1 steps on the 8 nodes until 380 s, then saves (every GPU idle, the NICs moving
    its bytes; not ``saving``: a preemption, the NICs quiet too) until ``resume``;
    node-003 goes dark at ``dark_at`` and never comes back; the job re-forms without it at
    ``resume`` -- onto node-008 (``swap``) or on the 7 others -- its step numbers ``back``
    steps behind its last (0: going on from it)."""
    nodes = NODES + [SPARE] if swap else NODES
    recs = fleet(seconds=seconds, interval=interval, nic_interval=interval, job=False,
                 seed=seed, nodes=nodes, dead={DARK: (dark_at, 1e9)}, idle=(STOP + 1.0, resume),
                 nic_idle=not saving)
    after = [n for n in NODES if n != DARK] + ([SPARE] if swap else [])
    last = int(STOP / 2)
    recs += _steps([(0.0, STOP, NODES, 0), (resume, seconds, after, last - back)])
    return sorted(recs, key=lambda r: r["value"]["ts"])


def _pages(tmp_path, recs: list[dict]) -> list[tuple[str, str, float]]:
    return [(a.status, a.scope.key, a.detected_ts - T0)
            for a in silent_pages(replay_log(write(tmp_path, recs)).alerts)]


@pytest.mark.parametrize(("interval", "into", "swap", "seed"), [
    (10.0, 8.0, False, 0), (10.0, 40.0, True, 1), (30.0, 8.0, True, 0), (30.0, 40.0, False, 1)])
def test_a_node_dead_in_its_jobs_save_whose_job_restarts_behind_is_paged_in_600_s(
        tmp_path, interval: float, into: float, swap: bool, seed: int) -> None:
    """revA38 F6 on the shapes its finding counted (10/30 s polls, spare or not, dead 8-40 s
    into the save): the node's page within 600 s of its death (0 of 24 before)."""
    dark_at = STOP + into
    pages = _pages(tmp_path, _save_then_dark(interval=interval, dark_at=dark_at, resume=450.0,
                                             back=100, swap=swap, seed=seed))
    assert [p[:2] for p in pages][:1] == [("firing", f"node:{DARK}")]
    assert pages[0][2] < dark_at + 600.0


@pytest.mark.parametrize("interval", [10.0, 30.0])
def test_a_deferred_node_is_paged_when_its_job_restarts_behind_without_it(
        tmp_path, interval: float) -> None:
    """The job re-forms 320 s after its stop, past the node's 240 s judgement (deferred then as
    a job's end: dark 50 s into the save): paged at the re-form, not 45 min on."""
    pages = _pages(tmp_path, _save_then_dark(interval=interval, dark_at=STOP + 50.0,
                                             resume=700.0, back=100, seconds=1200.0))
    assert [p[:2] for p in pages][:1] == [("firing", f"node:{DARK}")]
    assert 700.0 < pages[0][2] < 700.0 + 2 * interval + 30.0


@pytest.mark.parametrize(("interval", "resume"), [(10.0, 450.0), (30.0, 700.0)])
def test_guard_a_node_gone_in_its_jobs_save_whose_job_goes_on_from_it_is_not_paged(
        tmp_path, interval: float, resume: float) -> None:
    """The reclaim shape (blind27 F3): the same, but the job re-forms going on from the step
    it stopped at -- its save finished: no page in the log (deferred at most)."""
    pages = _pages(tmp_path, _save_then_dark(interval=interval, dark_at=STOP + 40.0,
                                             resume=resume, back=0, seconds=1200.0))
    assert pages == []


def _reclaimed_in_save(*, save_s: float, dark_after: float, back: int, seed: int,
                       interval: float = 10.0) -> list[dict]:
    """blind27 held churn-s6's shape: steps every 2 s to 376 s, then one step ``save_s`` long
    (the save for the reclaim notice), the VM dark ``dark_after`` s after it, and the job
    re-formed without it at 450 s, ``back`` steps behind the save's step (0: going on)."""
    end = 375.0 + save_s
    recs = fleet(seconds=1000, interval=interval, nic_interval=interval, job=False, seed=seed,
                 dead={DARK: (end + dark_after, 1e9)}, idle=(end + 1.0, 450.0))
    after = [n for n in NODES if n != DARK]
    recs += _steps([(0.0, 376.0, NODES, 0), (end - 1.0, end + 1.0, NODES, 188),
                    (450.0, 1000.0, after, 189 - back)])
    return sorted(recs, key=lambda r: r["value"]["ts"])


@pytest.mark.parametrize(("save_s", "dark_after", "seed"), [(11.0, 1.0, 1), (14.0, 3.0, 2)])
def test_a_vm_reclaimed_right_after_its_jobs_save_is_not_paged_unless_the_job_went_back(
        tmp_path, save_s: float, dark_after: float, seed: int) -> None:
    """churn-s6 on seeds and save lengths its test does not run: the job going on from its
    save left the VM (no page); the same job going back 60 steps crashed with it (paged)."""
    assert _pages(tmp_path, _reclaimed_in_save(save_s=save_s, dark_after=dark_after, back=0,
                                               seed=seed)) == []
    pages = _pages(tmp_path, _reclaimed_in_save(save_s=save_s, dark_after=dark_after, back=60,
                                                seed=seed))
    assert [p[:2] for p in pages][:1] == [("firing", f"node:{DARK}")]
