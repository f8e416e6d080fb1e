"""The per-sample hooks: what every telemetry record of a kind feeds beside its own unit.

A record goes to its unit's monitor (a GPU's thermal or health monitor, a node's NICs, a
job's steps) and then to the trackers that look across units: a GPU's record times for a
card that does not come back (:mod:`detector.gpu_missing`), a job's comm time against its
own past (:mod:`detector.job_comm`).  Both paths of a record -- one at a time
(:meth:`Monitors.process <detector.monitors.Monitors.process>`) and a batch's run of
records that make no finding (:func:`detector.quiet.quiet_run`) -- call the same hooks from
:data:`SAMPLE_HOOKS`, so a tracker added here is fed by both (round 20 wrote each call
twice, once a path).

A hook's ``note(mon, record, ts, findings)`` takes the record (``ts``: its node's own time,
before any offset Monitors takes its clock's error out with; the record's ``ts`` is the
fleet's); its ``quiet(mon, record)``, where the note may make a finding, says whether it
would not -- the batch path asks it first and ends its run where it says no.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, NamedTuple

from detector import gpu_missing, job_comm
from detector.events import EccSample, NicSample, StepSample, ThermalSample

if TYPE_CHECKING:
    from detector.findings import Finding
    from detector.monitors import Monitors


class SampleHook(NamedTuple):
    """One tracker fed by every record of a kind."""

    note: Callable[[Monitors, Any, float, list[Finding]], None]
    # whether ``note`` would make no finding of this record; None: it never makes one
    quiet: Callable[[Monitors, Any], bool] | None


# record type -> its hooks, in the order they are fed
SAMPLE_HOOKS: dict[type, tuple[SampleHook, ...]] = {
    StepSample: (SampleHook(job_comm.note, job_comm.quiet),),
    ThermalSample: (SampleHook(gpu_missing.note, None),),
    EccSample: (SampleHook(gpu_missing.note, None),),
    NicSample: (),
}
# What both paths read (looked up a record, so a hook put here reaches both): record type ->
# every hook's note; -> the quiet checks of those that may make a finding.
NOTES: dict[type, tuple[Callable[..., None], ...]] = {
    t: tuple(h.note for h in hooks) for t, hooks in SAMPLE_HOOKS.items()}
ASKS: dict[type, tuple[Callable[..., bool], ...]] = {
    t: tuple(h.quiet for h in hooks if h.quiet is not None) for t, hooks in SAMPLE_HOOKS.items()}
