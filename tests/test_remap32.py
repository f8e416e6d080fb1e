"""A row remap pending -- XID 63 or the ``row_remap_pending`` flag -- is a GPU page at once,
with the mildest remedy: reset the GPU at the job's end (room remap32, round 32; blind22 R1).

NVIDIA's row-remapping docs: the flag means the remap happens at the next GPU reset, and the
running and new work stays correct until then (error containment, dynamic page blacklisting);
the XID catalogue's IGNORE for 63 says the same of the running work.  DESIGN lists 63 among
the XIDs to act on.  So the page comes on the event (DESIGN: hardware <= 1 s), names the
GPU, cause ``gpu_memory``, and asks for a reset when the job ends -- not a drain.  Anything
worse on the GPU (a DBE, XID 48/94/95, a remap failure or XID 64) names its own action and
the page fires again with it; a remap seen under an open worse page never narrows it.
Before: XID 63 was an application XID (evidence), the flag evidence too, and blind22's
remap GPUs were paged only at their corrected-error burst, 113-319 s after the first XID 63.
"""

from __future__ import annotations

from detector.alerts import ISOLATION, Scope
from detector.correlate import REMAP_INSTANT_S
from detector.engine import Engine
from detector.playbook import action_for
from detector.testing import T0, ecc, feed

NODE, GPU = "sx11", 4


def _firing(alerts):
    return [a for a in alerts if a.status == "firing"]


def _quiet(t0: float, t1: float, every: float = 30.0, **kw):
    """The GPU's periodic samples from ``t0`` to ``t1`` (seconds after T0)."""
    out, t = [], t0
    while t <= t1:
        out.append(ecc(T0 + t, NODE, GPU, **kw))
        t += every
    return out


def test_xid_63_is_paged_at_once_as_a_reset_at_the_jobs_end() -> None:
    # blind22 R1's order: the XID 63 event 19 s after a sample without the flag, the flag on
    # the next poll.  Failed on main c8371d9: nothing fired (63 was an application XID).
    events = [*_quiet(0.0, 150.0), ecc(T0 + 169.4, NODE, GPU, xid=63),
              *_quiet(180.0, 400.0, pending=True)]
    fired = _firing(feed(Engine(), events))
    assert [(a.topic, a.kind, a.cause, a.scope.key) for a in fired] == [
        (ISOLATION, "hardware", "gpu_memory", f"gpu:{NODE}/{GPU}")]
    a = fired[0]
    # (its instant waited out for a worse verdict of the same ts: rail33, round 33)
    assert a.detected_ts == T0 + 169.4 + REMAP_INSTANT_S
    assert a.detection_latency_s == REMAP_INSTANT_S
    assert a.action.name == "reset_gpu" and a.action.requires_approval
    assert "job finish" in a.action.detail and "row remap is pending" in \
        a.action.detail


def test_the_flag_without_its_xid_is_the_same_page() -> None:
    # A collector that polls DCGM's XID gauge can miss the 63: the flag says the same.
    # Failed on main: the flag alone was evidence, never a page.
    events = [*_quiet(0.0, 90.0), *_quiet(120.0, 300.0, pending=True)]
    fired = _firing(feed(Engine(), events))
    assert [(a.kind, a.cause, a.scope.key, a.action.name, a.detected_ts) for a in fired] == [
        ("hardware", "gpu_memory", f"gpu:{NODE}/{GPU}", "reset_gpu",
         T0 + 120.0 + REMAP_INSTANT_S)]


def test_a_remap_failure_after_the_63_fires_the_page_again_as_a_drain() -> None:
    # R1's end: XID 64 and the failure flag under the open remap page -- urgent now.
    events = [*_quiet(0.0, 60.0), ecc(T0 + 75.0, NODE, GPU, xid=63),
              *_quiet(90.0, 180.0, pending=True),
              ecc(T0 + 195.0, NODE, GPU, pending=True, failure=True, xid=64),
              *_quiet(210.0, 300.0, pending=True, failure=True)]
    fired = _firing(feed(Engine(), events))
    assert [(a.action.name, a.detected_ts) for a in fired] == [
        ("reset_gpu", T0 + 75.0 + REMAP_INSTANT_S), ("drain_gpu", T0 + 195.0)]
    assert len({a.dedup_key for a in fired}) == 1


def test_a_dbe_counted_without_its_xid_widens_the_remap_page() -> None:
    # Not an XID but a verdict of its own: the reset at the job's end is no longer enough.
    events = [*_quiet(0.0, 60.0), ecc(T0 + 75.0, NODE, GPU, xid=63),
              *_quiet(90.0, 150.0, pending=True),
              *_quiet(180.0, 240.0, pending=True, dbe=1, retired_dbe=1)]
    fired = _firing(feed(Engine(), events))
    assert [(a.action.name, a.detected_ts) for a in fired] == [
        ("reset_gpu", T0 + 75.0 + REMAP_INSTANT_S), ("drain_gpu", T0 + 180.0)]


def test_a_remap_under_an_open_dbe_page_never_narrows_it() -> None:
    # The simulator's and blind2/5/18/19's shape: XID 48 with its DBE, then 63 / the flag.
    events = [*_quiet(0.0, 60.0), ecc(T0 + 75.0, NODE, GPU, dbe=1, retired_dbe=1, xid=48),
              ecc(T0 + 75.4, NODE, GPU, dbe=1, retired_dbe=1, xid=63),
              *_quiet(90.0, 300.0, pending=True, dbe=1, retired_dbe=1)]
    alerts = feed(Engine(), events)
    assert [(a.action.name, a.detected_ts) for a in _firing(alerts)] == [
        ("drain_gpu", T0 + 75.0)]
    assert {a.action.name for a in alerts} == {"drain_gpu"}


def test_an_sbe_burst_resting_on_the_pending_remap_keeps_its_reset() -> None:
    # Corrected errors climbing on the GPU with its remap pending (R1's middle): the burst
    # rests on the pending remap, which its reset clears; no second page.
    burst = [ecc(T0 + 90.0 + 30.0 * i, NODE, GPU, sbe=40 * (i + 1), pending=True)
             for i in range(12)]
    events = [*_quiet(0.0, 60.0), ecc(T0 + 75.0, NODE, GPU, xid=63), *burst]
    assert [(a.action.name, a.detected_ts) for a in _firing(feed(Engine(), events))] == [
        ("reset_gpu", T0 + 75.0 + REMAP_INSTANT_S)]
    # (without the XID: the flag's page, the same action)
    assert [(a.action.name, a.detected_ts) for a in _firing(feed(Engine(), [
        *_quiet(0.0, 60.0), *burst]))] == [("reset_gpu", T0 + 90.0 + REMAP_INSTANT_S)]


def test_the_gpu_reset_that_activates_the_remap_resolves_the_page() -> None:
    events = [*_quiet(0.0, 60.0, sbe=3), ecc(T0 + 75.0, NODE, GPU, sbe=3, xid=63),
              *_quiet(90.0, 150.0, sbe=3, pending=True),
              *_quiet(180.0, 400.0)]  # the reset: counters back to 0, the flag clear
    alerts = feed(Engine(), events)
    assert [a.status for a in alerts] == ["firing", "resolved"]


def test_the_playbook_says_reset_at_the_jobs_end_only_for_a_gpu_memory_remap() -> None:
    gpu = Scope.of_gpu(NODE, GPU)
    assert action_for("hardware", "gpu_memory", gpu, xid=63).name == "reset_gpu"
    assert action_for("hardware", "gpu_memory", gpu, xid=64).name == "drain_gpu"
    assert action_for("hardware", "gpu_memory", gpu).name == "drain_gpu"
    assert action_for("hardware", "gpu_memory", gpu, xid=63,
                      recovery_action="drain_and_reset").name == "drain_node"


def test_a_63_on_the_sample_that_counts_a_dbe_is_one_drain_page() -> None:
    # blind5's shape: the XID 63 record carries the DBE count, the flag and NVML's reset; its
    # XID 48 follows at the same instant.  Paged reset_gpu then drain_gpu at the same time
    # before the remap was handled after the sample's counters.
    events = [*_quiet(0.0, 60.0),
              ecc(T0 + 75.0, NODE, GPU, dbe=1, pending=True, xid=63, recovery="gpu_reset"),
              ecc(T0 + 75.0, NODE, GPU, dbe=1, xid=48, recovery="gpu_reset"),
              *_quiet(90.0, 200.0, dbe=1, pending=True, recovery="gpu_reset")]
    alerts = feed(Engine(), events)
    assert [(a.action.name, a.detected_ts) for a in _firing(alerts)] == [
        ("drain_gpu", T0 + 75.0)]
