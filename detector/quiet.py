"""The batch path: a run of records that provably make no finding, in one loop.

Most telemetry is a healthy GPU or port reporting that nothing happened, or one
rank's message of a step that still waits for the others.  Each unit's monitor
owns the rule for that: ``quiet(sample, cfg) -> bool``
(:meth:`GpuThermal.quiet <detector.thermal.GpuThermal.quiet>`,
:meth:`NodeNics.quiet <detector.network.NodeNics.quiet>`,
:meth:`GpuHealth.quiet <detector.gpu_health.GpuHealth.quiet>`) and a job's
``quiet(message)`` (:meth:`JobMonitor.quiet <detector.steps.JobMonitor.quiet>`)
take a record that provably makes no finding and say so, and are the first
thing the unit's ``update`` (the job's ``add``) does -- so the record path
(:meth:`Monitors.process`) and this loop run the same code; the trackers every record
feeds beside its unit are one hook list both call (:mod:`detector.sample_hooks`: a hook
that may make a finding is asked first).  What is left here
is what belongs to a batch: one loop over a fetched batch instead of a
:meth:`Monitors.process` call a record, the clock, the sweep deadline and the
counts kept in locals and stored once.

The run ends, *before* anything of the record has changed that the record path
would do differently, at the first record that is not a telemetry record (an
undecided message), is more than ``AHEAD_S`` ahead of the clock (the event-time
guard's, :meth:`Monitors._ahead`'s) or of a node taken at an offset, moves
the clock to ``until`` or past it (the in-process Engine's next correlator
release), needs a sweep that does more than move its own deadline (jobs to
expire, units to prune), belongs to a unit or job not seen before (heard) -- or, a step, to
a node name its stream's steps did not use as it is (detector.node_names: resolved or learnt
there) --, or that its unit's ``quiet`` or a hook does not take (for a step message: a step's first
message, one that completes its step, a late one, an expiry due).  The caller
sends that one through :meth:`Monitors.process` and calls again.
``tests/test_batch_samples.py`` runs random batches both ways and compares
findings and state.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from detector.events import EccSample, NicSample, StepSample, ThermalSample
from detector.monitors import _SWEEP_S, AHEAD_S, SKEW_S
from detector.sample_hooks import ASKS, NOTES

if TYPE_CHECKING:
    from detector.monitors import Monitors

_NEVER = float("-inf")
# quiet_run's bound on a record's lead over the clock: AHEAD_S less a margin far over the
# rounding of ``ts - clock`` (see there).
_AHEAD_BOUND_S = AHEAD_S - 1e-3


def quiet_run(mon: Monitors, evs: list[Any], i: int, until: float = float("inf")) -> int:
    """Take ``evs[i:]`` into ``mon`` while each record provably makes no finding.

    Returns the index of the first record not taken (``len(evs)`` when all
    were).  The records taken changed the state as :meth:`Monitors.process`
    would have, made no finding and no heard/forgotten entry; the clock stays
    below ``until``.
    """
    n = len(evs)
    clock = mon.clock
    if i >= n or mon._jump or mon.unconfirmed or mon._maker is not None or clock >= until \
            or mon._cand is not None or mon._vote is not None:
        return i
    cfg = mon.cfg
    thermal_units = mon._thermal
    nic_units = mon._nics
    ecc_units = mon._ecc
    jobs = mon._jobs
    spill: list[Any] = []  # the hooks' findings: none (each one that may make one was asked)
    # Each kind's per-sample hooks (detector.sample_hooks, as Monitors.process feeds them):
    # those that may make a finding asked first (the unit's quiet takes the record), then fed.
    # (subscripts, not a generator: this runs for every run of a batch)
    ask_step, ask_nic, ask_thermal, ask_ecc = (
        ASKS[StepSample], ASKS[NicSample], ASKS[ThermalSample], ASKS[EccSample])
    feed_step, feed_nic, feed_thermal, feed_ecc = (
        NOTES[StepSample], NOTES[NicSample], NOTES[ThermalSample], NOTES[EccSample])
    # A kind with one hook (each but NIC's) has it called, not looped over: no iterator a record.
    note_step = feed_step[0] if len(feed_step) == 1 else None
    note_thermal = feed_thermal[0] if len(feed_thermal) == 1 else None
    note_ecc = feed_ecc[0] if len(feed_ecc) == 1 else None
    skew = mon._skew  # nodes whose records are taken at an offset (Monitors._deskew)
    # A step's name must be one its stream's steps used, as it is (detector.node_names: not
    # another form of a node's name); a sample's unit is keyed by its node's own name already.
    step_names = mon._names.steps
    next_sweep = mon._next_sweep
    # A sweep with no job to expire and no prune due only moves its own deadline.
    next_prune = -_NEVER if not jobs else _NEVER
    if mon._next_prune < next_prune:
        next_prune = mon._next_prune
    start = i
    n_thermal = n_nic = n_ecc = n_step = 0
    # A record at or past ``ahead`` ends the run: ``until``, or short of AHEAD_S past the clock
    # -- which moves on in the run, so the bound is set again at each sweep deadline (every
    # _SWEEP_S).  Short of it: with the margin, ts >= ahead holds for every ts the record path
    # takes ahead (ts - clock > AHEAD_S as the floats round), and a record the stale bound
    # ends the run at goes through that path, which takes it as this loop would have.
    # (One comparison a record where two subtractions and three were: callgrind, cpu17.)
    ahead = min(clock + _AHEAD_BOUND_S, until)
    for i in range(i, n):  # noqa: B020 - i is the index returned
        e = evs[i]
        t = type(e)
        try:
            ts = e.ts
        except AttributeError:
            break  # None: a message decided on its own
        if skew and e.node in skew:
            break
        if ts > clock:
            if ts >= ahead:
                break  # (far ahead: the event-time guard's; ahead: Monitors._ahead's)
        elif ts < clock - SKEW_S:
            break  # (far behind: Monitors._behind's)
        if ts >= next_sweep and (ts if ts > clock else clock) >= next_prune:
            break
        # A unit's monitor by subscript (a KeyError: its first sample, which is heard).
        if t is ThermalSample:
            try:
                gpu = thermal_units[(e.node, e.gpu)]
            except KeyError:
                break
            if (ask_thermal and not _asked(ask_thermal, mon, e)) or not gpu.quiet(e, cfg):
                break
            if note_thermal is not None:
                note_thermal(mon, e, ts, spill)
            else:
                for note in feed_thermal:
                    note(mon, e, ts, spill)
            n_thermal += 1
        elif t is NicSample:
            try:
                nics = nic_units[e.node]
            except KeyError:
                break
            if (ask_nic and not _asked(ask_nic, mon, e)) or not nics.quiet(e, cfg):
                break
            for note in feed_nic:
                note(mon, e, ts, spill)
            n_nic += 1
        elif t is StepSample:
            try:
                job = jobs[e.job]
            except KeyError:
                break  # a new job
            if e.node not in step_names:
                break  # a name to resolve or learn (Monitors.process)
            for ask in ask_step:  # (_asked, inline: one call less a step record)
                if not ask(mon, e):
                    break
            else:
                ask = None
            if ask is not None or not job.quiet(e):
                break
            if note_step is not None:
                note_step(mon, e, ts, spill)
            else:
                for note in feed_step:
                    note(mon, e, ts, spill)
            n_step += 1
        elif t is EccSample:
            try:
                health = ecc_units[(e.node, e.gpu)]
            except KeyError:
                break
            if (ask_ecc and not _asked(ask_ecc, mon, e)) or not health.quiet(e, cfg):
                break
            if note_ecc is not None:
                note_ecc(mon, e, ts, spill)
            else:
                for note in feed_ecc:
                    note(mon, e, ts, spill)
            n_ecc += 1
        else:
            break
        if ts > clock:
            clock = ts
        if ts >= next_sweep:
            next_sweep = clock + _SWEEP_S
            ahead = min(clock + _AHEAD_BOUND_S, until)
    else:
        i = n
    if i > start:
        mon.clock = clock
        mon._next_sweep = next_sweep
        mon._n_thermal += n_thermal
        mon._n_nic += n_nic
        mon._n_ecc += n_ecc
        mon._n_step += n_step
    return i



def _asked(checks: tuple[Any, ...], mon: Monitors, e: Any) -> bool:
    """Whether every hook of the record's kind that may make a finding would make none."""
    for quiet in checks:  # noqa: SIM110 - a loop: all() would build a generator a record
        if not quiet(mon, e):
            return False
    return True
