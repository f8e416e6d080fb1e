"""xf31 (round 31): the thirtieth reporting corpus's overlap case and review30 6 (issue 10).

1. scenario-overlap-s3002-f01: node-003/6 at a SW power cap (0x4) 28.9 % below its own baseline
   clock (1980 MHz, its samples before the fault), no sibling capped, its rank's mean ratio over
   its 4-step run 1.4326 against its stage's peers (baseline 1.0012).  The clock explains
   1/(1 - 0.289) = 1.4065x; the impact rule (Correlator._power_impact) allowed 2 points more,
   1.4265x, so the rank was escalated slow_node/unknown at +6.4 s and isolated power by the
   sustained rule at +10 s.  The NVLink fault on node-007/4 9.5 s earlier is not why (the
   simulator's NVLink fault slows the job's comm, not any rank's compute): the rank's first 4
   steps ran 1.437, 1.418, 1.421, 1.480x its stage's peers -- step noise (sigma 1.4 % a step)
   on a slowdown the clock explains.  The noise is a factor of the step time, so the allowance
   is one too: 2 %, or 3 standard errors of the run's mean when they are more.
"""

from __future__ import annotations

import math
from typing import Any

import msgspec
import pytest

from detector.alerts import ESCALATION, ISOLATION
from detector.engine import Engine
from detector.monitors import Monitors
from detector.statecodec import SnapshotRefused, decode_state, encode_state
from detector.testing import T0, feed, healthy_job

DROP = 0.289  # the overlap case's clock loss


def _fired(slower: float, seed: int, monkeypatch: pytest.MonkeyPatch) -> list:
    """test_pcap29's two nodes, node-000/4 at 0x4 DROP below 1980 MHz for the slowdown's
    steps (no routine dip, every other GPU free), its rank ``slower`` with step noise
    ``seed``."""
    import tests.test_pcap29 as pcap29
    monkeypatch.setattr(pcap29, "DROP", DROP)
    steps = list(healthy_job(steps=pcap29.STEPS, slow={pcap29.RANK: slower},
                             slow_from=pcap29.SLOW_FROM, slow_to=pcap29.SLOW_TO, seed=seed))
    events = sorted(steps + pcap29._polls(routine_dip=False), key=lambda e: e.ts)
    return [a for a in feed(Engine(), events) if a.status == "firing"]


def test_a_deep_cap_whose_rank_is_within_the_step_noise_of_its_clock_is_paged_power(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # seed 4, x1.44: the run's mean 1.4331 over 4 steps (sigma 0.0145) -- 1.9 % over the
    # 1.4065 the clock explains, as the overlap case's 1.4309 was 1.7 % over it.
    fired = _fired(1.44, 4, monkeypatch)
    assert fired, "the capped GPU's slow rank was never paged"
    first = fired[0]
    assert (first.topic, first.kind, first.cause, first.scope.key) == (
        ISOLATION, "slow_node", "power", "gpu:node-000/4"), fired
    assert not [a for a in fired if a.topic == ESCALATION], fired
    assert first.detected_ts - (T0 + 300) < 5.0  # the impact rule, not the sustain


def test_a_rank_well_past_what_its_cap_explains_is_still_escalated_first(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # x1.55 under the same cap: 10 % past the clock's 1.4065, something else is wrong.
    fired = _fired(1.55, 4, monkeypatch)
    assert fired and (fired[0].topic, fired[0].cause) == (ESCALATION, "unknown"), fired
    ruled = fired[0].evidence["ruled_out"]
    assert any(r.startswith("not ruled out: throttle reasons 0x4") for r in ruled), ruled


# -- 2. review30 6: a checksum tie broken by one step's grad norm -----------------------------
#
# In a job whose replicas are pairs (DP 2) a checksum split has no majority; sdc19's tiebreak
# named the rank whose own grad norm jumped on the split step while its peer's stayed ordinary.
# One step is no proof: the other replica trains on its own batch (a hard one moves its norm
# once) and one forged step record can move any.  The split is now held and judged again on
# the job's next steps' grad norms against both ranks' levels from before it (sdc.TIE_STEPS).

def _sdc_job(**kw: Any) -> list:
    import tests.test_sdc19 as sdc19
    return sdc19._job(4, 2, 140, **kw)


def _sdc_fired(events: list) -> list[tuple[str, str, str]]:
    return [(a.scope.key, a.cause, a.evidence["signals"][0]["signal"])
            for a in feed(Engine(), events) if a.status == "firing"]


def test_one_forged_grad_norm_on_the_split_step_names_no_innocent_gpu() -> None:
    # blind19 R1's shape (TP4 x DP2), rank 1's copy corrupted at step 60 with no grad norm
    # change (a flip that moves no norm), and one step record of its peer, rank 5, forged x1.4
    # on the split step: main named GPU 5 gpu_hardware and nothing revisited it.
    events = [msgspec.structs.replace(e, grad_norm=e.grad_norm * 1.4)
              if e.step == 60 and e.rank == 5 else e
              for e in _sdc_job(bad=1, bad_grad=False)]
    fired = _sdc_fired(events)
    assert ("gpu:node-000/5", "gpu_hardware", "checksum_mismatch") not in fired, fired
    assert fired == [("job:job-1", "unknown", "checksum_pair")], fired


def test_the_tie_undone_later_is_the_jobs_from_the_first_split() -> None:
    # The corrupted rank's norm x1.3 on the split step only (from 61 its own again): the lean
    # is undone on step 61 -- the job's tie, its onset the first split's.
    events = [msgspec.structs.replace(e, grad_norm=e.grad_norm / 1.3)
              if e.rank == 1 and e.step > 60 else e for e in _sdc_job(bad=1)]
    alerts = [a for a in feed(Engine(), events) if a.status == "firing"]
    assert [(a.scope.key, a.cause) for a in alerts] == [("job:job-1", "unknown")], alerts
    assert alerts[0].onset_ts == T0 + 60 + 1e-4 * 1
    assert alerts[0].detected_ts == T0 + 61 + 1e-4 * 7


def test_copies_that_agree_again_before_the_split_is_judged_are_still_paged() -> None:
    # Checksums every step, the split on step 60 alone (the copies agree again at 61, the
    # norm still x1.3): held, never judged through -- still paged, as the job's tie.
    events = [msgspec.structs.replace(e, param_checksum=f"c{e.step}-{e.rank % 4}")
              if e.rank == 1 and e.step > 60 else e for e in _sdc_job(bad=1, every=1)]
    fired = _sdc_fired(events)
    assert fired == [("job:job-1", "unknown", "checksum_pair")], fired


def test_a_split_held_without_grad_norms_after_it_is_the_jobs_tie() -> None:
    # No grad norm from step 61 on (a collector that stopped sending them): nothing can judge
    # the lean -- the job's tie at the next split step, not a split held for ever.
    events = [msgspec.structs.replace(e, grad_norm=None) if e.step > 60 else e
              for e in _sdc_job(bad=1)]
    alerts = [a for a in feed(Engine(), events) if a.status == "firing"]
    assert [(a.scope.key, a.cause) for a in alerts] == [("job:job-1", "unknown")], alerts
    assert alerts[0].detected_ts == T0 + 70 + 1e-4 * 7


def test_a_worker_restored_mid_hold_names_the_gpu_as_one_that_never_stopped() -> None:
    events = _sdc_job(bad=1)
    cut = 61 * 8 + 4
    a = Monitors()
    found: list = []
    for e in events[:cut]:
        a.process(e, found)
    assert any(m._tie_lean for m in a._jobs.values())  # (held across the snapshot)
    b = decode_state(encode_state(a))
    b.check_restored()  # (a well-formed held tiebreak restores)
    for e in events[cut:]:
        b.process(e, found)
    got = [(f.signal, f.rank, f.evidence["step"], f.evidence.get("judged_to_step"))
           for f in found if f.kind == "sdc" and f.active]
    assert got == [("checksum_mismatch", 1, 60, 62)]


@pytest.mark.parametrize("lean", [
    [T0, 0, 5, 0.1, 0.1, 0.01, 0.01, 60, "a", "b"],           # no step held
    [T0, 1, 5, 0.1, 0.1, 0.0, 0.01, 60, "a", "b"],            # a spread of zero
    [math.nan, 1, 5, 0.1, 0.1, 0.01, 0.01, 60, "a", "b"],     # no onset
    [T0, 1, 5, 0.1, 0.1, 0.01, 0.01, 60, "a", None],          # no checksum
    [T0, 1, 5, 0.1, 0.1, 0.01, 0.01, 60, "a"],                # short
    "lean"])
def test_a_forged_held_tiebreak_is_refused_at_restore(lean: Any) -> None:
    a = Monitors()
    found: list = []
    for e in _sdc_job(bad=1)[:61 * 8 + 4]:
        a.process(e, found)
    for m in a._jobs.values():
        m._tie_lean = {1: lean}
    with pytest.raises(SnapshotRefused):
        decode_state(encode_state(a)).check_restored()
