"""tie32 (round 32): a DP-2 checksum tie paged at its split, named at the GPU once judged.

revA31 1 / 3 / 6 (= review30 6).  In a job of two data-parallel replicas a checksum split is a
1-vs-1 tie.  sdc19 (round 29) named the rank whose own grad norm jumped on the split step --
one step's steer (review30 6: the innocent replica's x1.4 named its GPU for good).  xf31
(round 31) held the split for the next steps' judgement and paged nothing meanwhile, so a job
that crashed on its corrupted weights, ended, or sent no more grad norms within two steps was
never paged (revA31 1; reverted on 73cb34b).  Now the tie is the job's page on the split step
(DESIGN: "SDC checksum mismatch: the same step"), and when the next steps' grad norms judge
it (detector.sdc.still_off, TIE_STEPS judged steps in a row) the same page -- one dedup_key --
fires again narrowed to the GPU (detector.correlate ``_sdc_tie``).  The held tie
(JobMonitor._tie_lean) is bounded field by field at restore (revA31 6, detector.sdc.lean_ok).
"""

from __future__ import annotations

import math
from typing import Any

import msgspec
import pytest

from detector.alerts import ESCALATION, Label, Scope
from detector.engine import Engine
from detector.monitors import Monitors
from detector.statecodec import SnapshotRefused, decode_state, encode_state
from detector.testing import T0, ecc, feed
from replay.scoring import score

SPLIT = T0 + 60 + 1e-4 * 7  # the split step decided (its last rank's record, TP4 x DP2)


def _job(**kw: Any) -> list:
    """sdc19's TP4 x DP2 job on node-000 (rank = dp * 4 + tp, GPU = rank), 1 s steps, checksums
    every 10 steps; ``bad``'s copy corrupted at step 60 (its grad norm x1.3 unless
    ``bad_grad=False``)."""
    import tests.test_sdc19 as sdc19
    return sdc19._job(4, 2, kw.pop("steps", 140), **kw)


def _sdc(alerts: list) -> list[tuple[str, str, str, str]]:
    return [(a.status, a.dedup_key, a.scope.key, a.cause) for a in alerts if a.kind == "sdc"]


def _spiked(events: list, rank: int, steps: range, by: float) -> list:
    return [msgspec.structs.replace(e, grad_norm=e.grad_norm * by)
            if e.rank == rank and e.step in steps else e for e in events]


# -- revA31 1: paged at the split, whatever comes after -------------------------------------


@pytest.mark.parametrize("end", [60, 61, 62])
def test_a_job_that_crashes_after_its_split_was_paged_at_the_split(end: int) -> None:
    # revA31's probe: rank 1's copy corrupted at step 60, the job's last step ``end`` (it
    # crashed on the corruption), another node's ECC records moving the clock for 10 min.
    evs = [e for e in _job(bad=1) if e.step <= end]
    eng = Engine()
    alerts = feed(eng, evs)
    last = max(e.ts for e in evs)
    alerts += feed(eng, [ecc(last + 10.0 * k, "node-009", 0) for k in range(1, 60)])
    fired = [a for a in alerts if a.kind == "sdc" and a.status == "firing"]
    assert fired and fired[0].scope.key == "job:job-1", alerts
    assert fired[0].detected_ts == SPLIT and fired[0].topic == ESCALATION
    assert "no majority" in fired[0].evidence["signals"][0]["note"]
    # Step 62 judges it (the norm off on 60, 61, 62): the same page named at the GPU.
    named = [(a.dedup_key, a.scope.key, a.cause) for a in fired[1:]]
    assert named == ([("fl:esc:sdc:job:job-1", "gpu:node-000/1", "gpu_hardware")]
                     if end >= 62 else []), alerts


def test_a_split_with_no_grad_norms_after_it_is_paged_at_the_split() -> None:
    # A collector that stops sending grad norms after the split: nothing can judge it, the
    # job's page stands from the split step (xf31 paged it only at the next split, +10 s).
    events = [msgspec.structs.replace(e, grad_norm=None) if e.step > 60 else e
              for e in _job(bad=1)]
    fired = [a for a in feed(Engine(), events) if a.status == "firing"]
    assert [(a.scope.key, a.cause, a.detected_ts) for a in fired] == [
        ("job:job-1", "unknown", SPLIT)], fired


# -- review30 6: the steer ---------------------------------------------------------------------


def test_one_steps_spike_on_the_innocent_replica_names_no_gpu() -> None:
    # Rank 1's copy corrupted with no norm change, its peer rank 5's norm x1.4 on the split
    # step alone (its own hard batch, or one forged record): main named GPU 5 at once.
    fired = _sdc(feed(Engine(), _spiked(_job(bad=1, bad_grad=False), 5, range(60, 61), 1.4)))
    assert fired == [("firing", "fl:esc:sdc:job:job-1", "job:job-1", "unknown")], fired


def test_the_corrupted_replica_is_named_though_the_innocent_one_moved_on_the_split() -> None:
    # Rank 1's norm x1.3 from the split on, rank 5's x1.4 on the split step alone: neither
    # leans on the split (main: the job's tie only -- or, with rank 1 ordinary, GPU 5); the
    # next three steps judge rank 1 -- its GPU named, never GPU 5.
    alerts = feed(Engine(), _spiked(_job(bad=1), 5, range(60, 61), 1.4))
    fired = [a for a in alerts if a.status == "firing"]
    assert [(a.dedup_key, a.scope.key, a.cause) for a in fired] == [
        ("fl:esc:sdc:job:job-1", "job:job-1", "unknown"),
        ("fl:esc:sdc:job:job-1", "gpu:node-000/1", "gpu_hardware")], fired
    assert fired[1].detected_ts == T0 + 63 + 1e-4 * 7
    ev = fired[1].evidence["signals"][-1]
    assert (ev["signal"], ev["rank"], ev["peer_rank"], ev["step"]) == ("checksum_mismatch", 1, 5,
                                                                        60)
    assert fired[1].onset_ts == T0 + 60 + 1e-4 * 1  # (the split's)


def test_a_jump_on_the_split_step_alone_is_not_judged_through() -> None:
    # The corrupted rank's norm x1.3 on the split step only: the run ends on step 61 -- the
    # job's page stays, paged on the split.
    events = [msgspec.structs.replace(e, grad_norm=e.grad_norm / 1.3)
              if e.rank == 1 and e.step > 60 else e for e in _job(bad=1)]
    fired = _sdc(feed(Engine(), events))
    assert fired == [("firing", "fl:esc:sdc:job:job-1", "job:job-1", "unknown")], fired


# -- one incident: narrowed, resolved once, widened back for a new tie -------------------------


def test_the_judged_tie_is_one_incident_resolved_once() -> None:
    # Checksums every step; rank 1's copy agrees again from step 90 (restored from its peer):
    # the page -- the job's, narrowed to GPU 1 on step 62 -- resolves once, as GPU 1's.
    events = [msgspec.structs.replace(e, param_checksum=f"c{e.step}-{e.rank % 4}")
              if e.rank == 1 and e.step >= 90 else e for e in _job(bad=1, every=1, steps=200)]
    got = _sdc(feed(Engine(), events))
    assert got == [("firing", "fl:esc:sdc:job:job-1", "job:job-1", "unknown"),
                   ("firing", "fl:esc:sdc:job:job-1", "gpu:node-000/1", "gpu_hardware"),
                   ("resolved", "fl:esc:sdc:job:job-1", "gpu:node-000/1", "gpu_hardware")], got


def test_a_new_tie_under_a_named_page_widens_it_back_to_the_job() -> None:
    # GPU 1 named on step 62; rank 2's copy splits from rank 6's on step 90 (another pair, no
    # grad norm change): the open page -- the job's incident -- fires again at the job.
    events = [msgspec.structs.replace(e, param_checksum=f"y{e.step}")
              if e.rank == 2 and e.step >= 90 and e.param_checksum else e
              for e in _job(bad=1, steps=140)]
    got = _sdc(feed(Engine(), events))
    assert got == [("firing", "fl:esc:sdc:job:job-1", "job:job-1", "unknown"),
                   ("firing", "fl:esc:sdc:job:job-1", "gpu:node-000/1", "gpu_hardware"),
                   ("firing", "fl:esc:sdc:job:job-1", "job:job-1", "unknown")], got


def test_the_narrowed_page_scores_as_the_gpus_catch_and_no_false_positive() -> None:
    # DESIGN's rule (replay.scoring, bench.blind11.score): a problem is (topic, dedup_key),
    # a false positive only when none of its firing messages catches.  The job-scope message
    # catches no GPU label; its re-fire at the GPU does -- one catch, latency the judgement's.
    alerts = [a for a in feed(Engine(), _job(bad=1)) if a.kind == "sdc"]
    label = Label("dp2", "sdc", "gpu_hardware", Scope.of_gpu("node-000", 1), T0 + 60.0,
                  T0 + 140.0, True)
    card = score([label], alerts)
    assert card.total.false_positives == 0 and card.total.problems == 1
    result = card.faults[0]
    assert result.caught and result.attributed
    assert result.latency_s == pytest.approx(2.0007, abs=1e-3)


def test_a_tie_never_judged_scores_as_a_false_positive_and_a_miss() -> None:
    # The same rule's other side, said plainly: the job is not the GPU label's unit, so a tie
    # that is never judged (the job crashed on the split) is a miss and a false positive --
    # DESIGN's scoring asks the fault's level, while its escalations carry the smallest
    # scope the evidence localizes (one of two GPUs: the job).
    alerts = [a for a in feed(Engine(), [e for e in _job(bad=1) if e.step <= 60])
              if a.kind == "sdc"]
    label = Label("dp2", "sdc", "gpu_hardware", Scope.of_gpu("node-000", 1), T0 + 60.0,
                  T0 + 140.0, True)
    card = score([label], alerts)
    assert card.total.false_positives == 1 and not card.faults[0].caught


# -- revA31 6: the held tie bounded at restore ---------------------------------------------------


def _held(cut_step: int = 61) -> Monitors:
    a = Monitors()
    found: list = []
    for e in _job(bad=1)[:(cut_step + 1) * 8]:
        a.process(e, found)
    return a


def test_a_worker_restored_mid_judgement_names_the_gpu_as_one_that_never_stopped() -> None:
    events = _job(bad=1)
    cut = 61 * 8 + 4
    a = Monitors()
    found: list = []
    for e in events[:cut]:
        a.process(e, found)
    assert any(m._tie_lean for m in a._jobs.values())
    b = decode_state(encode_state(a))
    b.check_restored()  # (a well-formed held tie restores)
    for e in events[cut:]:
        b.process(e, found)
    got = [(f.signal, f.rank, f.evidence["step"], f.evidence.get("judged_on_step"))
           for f in found if f.kind == "sdc" and f.active]
    assert got == [("checksum_pair", None, 60, None), ("checksum_mismatch", 1, 60, 62)]


@pytest.mark.parametrize("lean", [
    [T0 + 60, 1, 5, 0.1, 0.1, 0.01, 0.01, 2 ** 62, 1],         # a split step past the job's
    [T0 + 60, 1, 5, 0.1, 0.1, 0.01, 0.01, -1, 1],              # ... before its first
    [math.inf, 1, 5, 0.1, 0.1, 0.01, 0.01, 60, 1],             # an onset never
    [T0 + 1e6, 1, 5, 0.1, 0.1, 0.01, 0.01, 60, 1],             # ... past the clock
    [math.nan, 1, 5, 0.1, 0.1, 0.01, 0.01, 60, 1],             # ... none
    [T0 + 60, 1, 1, 0.1, 0.1, 0.01, 0.01, 60, 1],              # its own peer
    [T0 + 60, 3, 5, 0.1, 0.1, 0.01, 0.01, 60, 3],              # a run that named it already
    [T0 + 60, -1, 5, 0.1, 0.1, 0.01, 0.01, 60, 1],             # a run below none
    [T0 + 60, 1, 5, math.nan, 0.1, 0.01, 0.01, 60, 1],         # no level
    [T0 + 60, 1, 5, 0.1, 0.1, 0.0, 0.01, 60, 1],               # a spread of zero
    [T0 + 60, 1, 5, 0.1, 0.1, 0.01, 0.01, 60, 1 << 40],        # judged past any window
    [T0 + 60, 1, 5, 0.1, 0.1, 0.01, 0.01, 60],                 # short
    [T0 + 60, 1.0, 5, 0.1, 0.1, 0.01, 0.01, 60, 1],            # a run not counted
    "lean"])
def test_a_forged_held_tie_is_refused_at_restore(lean: Any) -> None:
    a = _held()
    for m in a._jobs.values():
        m._tie_lean = {1: lean}
    with pytest.raises(SnapshotRefused):
        decode_state(encode_state(a)).check_restored()


def test_more_held_ties_than_ranks_are_refused_at_restore() -> None:
    a = _held()
    for m in a._jobs.values():
        m._tie_lean = {k: [T0 + 60, 1, k + 1, 0.1, 0.1, 0.01, 0.01, 60, 1] for k in range(9)}
    with pytest.raises(SnapshotRefused):
        decode_state(encode_state(a)).check_restored()


def test_the_bounds_take_what_the_monitor_holds() -> None:
    a = _held()
    leans = [m._tie_lean for m in a._jobs.values() if m._tie_lean]
    assert leans and all(v[1] == 2 and v[7] == 60 and v[8] == 2 for v in leans[0].values())
    decode_state(encode_state(a)).check_restored()


def test_a_restart_from_a_checkpoint_drops_the_held_tie_and_keeps_its_page() -> None:
    # The job restarts from step 40 right after the split (the usual answer to SDC): the held
    # tie's step numbers now repeat -- dropped (a snapshot then restores), the page stays.
    events = [e for e in _job(bad=1) if e.step <= 61]
    again = [msgspec.structs.replace(e, ts=e.ts + 30.0, step=e.step - 22,
                                     param_checksum=None)
             for e in _job(bad=None) if 62 <= e.step < 70]
    eng = Engine()
    alerts = feed(eng, events + again)
    assert _sdc(alerts)[:1] == [("firing", "fl:esc:sdc:job:job-1", "job:job-1", "unknown")]
    mons = Monitors()
    found: list = []
    for e in events + again:
        mons.process(e, found)
    assert not any(m._tie_lean for m in mons._jobs.values())
    decode_state(encode_state(mons)).check_restored()
