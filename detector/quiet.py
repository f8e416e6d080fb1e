"""The batch path of sample records: a run of healthy thermal, NIC and ECC samples in one loop.

Most telemetry is a healthy GPU or port reporting that nothing happened.  The
record path (:meth:`Monitors.process` -> ``GpuThermal.update`` /
``NodeNics.update`` / ``GpuHealth.update``) costs two Python calls and the
general checks on each of them; here one loop over a fetched batch takes every
record that *provably* makes no finding, and does to the state exactly what the
record path would: the same assignments, the same float operations in the same
order (river's ``EWMean`` estimator itself, the same counter subtractions and
throughput arithmetic).  The first record it cannot vouch for ends the run,
*before* anything of it that the record path would do differently has changed:
the caller sends that one through :meth:`Monitors.process` and calls again.

A record stops the run when it is not a sample (a step, an undecided message),
is far ahead of the clock (the event-time guard's), moves the clock to
``until`` or past it (the in-process Engine's next correlator release), needs a
sweep that does more than move its own deadline (jobs to expire, units to
prune), belongs to a unit not seen before (heard), or when anything in it could
raise or clear a signal: a sampling interval to tell, a throttle reason or a
hot GPU or a signal raised before (thermal); a counter missing, reset, or with
an error or a flap, a link down, a port slow against its siblings (NIC); an
XID, a counter missing, fallen back or moved, a remap or recovery flag, a rate
raised (ECC).  ``tests/test_batch_samples.py`` runs random batches both ways
and compares findings and state.

Two things are computed before the run can still end: a thermal sample's
temperature and the node's median refresh, and a NIC port's throughput and the
node's reference refresh.  Both are what the record path does first with the
same values, and what it does again on that record changes nothing (the same
value stored, the refresh not due at the same time), so ending there is safe.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from detector.events import (
    ECC_COUNTERS,
    MAX_AHEAD_S,
    NIC_COUNTERS,
    EccSample,
    NicSample,
    ThermalSample,
)
from detector.monitors import _SWEEP_S
from detector.thermal import PAUSE_S, SLOWDOWN_BITS

if TYPE_CHECKING:
    from detector.monitors import Monitors

_NEVER = float("-inf")

# The counters are read by position below; a change of either tuple must be seen here.
assert NIC_COUNTERS == (
    "tx_bytes", "rx_bytes", "symbol_errors", "link_downed", "rcv_errors", "xmit_discards",
    "xmit_wait", "out_of_sequence", "packet_seq_err", "np_cnp_sent", "rp_cnp_handled")
assert ECC_COUNTERS == (
    "sbe_volatile", "dbe_volatile", "retired_pages_sbe", "retired_pages_dbe", "pcie_replay",
    "nvlink_crc_errors", "nvlink_replay_errors", "nvlink_recovery_errors")


def quiet_run(mon: Monitors, evs: list[Any], i: int, until: float = float("inf")) -> int:
    """Take ``evs[i:]`` into ``mon`` while each record provably makes no finding.

    Returns the index of the first record not taken (``len(evs)`` when all
    were).  The records taken changed the state as :meth:`Monitors.process`
    would have, made no finding and no heard/forgotten entry; the clock stays
    below ``until``.
    """
    n = len(evs)
    clock = mon.clock
    if i >= n or mon._jump or clock >= until:
        return i
    cfg = mon.cfg
    thermal_units = mon._thermal
    nic_units = mon._nics
    ecc_units = mon._ecc
    next_sweep = mon._next_sweep
    # A sweep with no job to expire and no prune due only moves its own deadline.
    next_prune = -_NEVER if not mon._jobs else _NEVER
    if mon._next_prune < next_prune:
        next_prune = mon._next_prune
    learns = cfg.throttle_samples > 0
    hot_delta_c = cfg.hot_delta_c
    busy_gbps = cfg.nic_busy_gbps
    low_ratio = cfg.nic_throughput_ratio
    retired_limit = cfg.retired_sbe_pages
    pause_s = PAUSE_S
    start = i
    n_thermal = n_nic = n_ecc = 0
    while i < n:
        e = evs[i]
        t = type(e)
        try:
            ts = e.ts
        except AttributeError:
            break  # None: a message decoded on its own
        new_clock = clock
        if ts > clock:
            if ts - clock > MAX_AHEAD_S or ts >= until:
                break
            new_clock = ts
        if ts >= next_sweep and new_clock >= next_prune:
            break
        if t is ThermalSample:
            try:
                u = thermal_units[(e.node, e.gpu)]
            except KeyError:
                break
            last = u._last_ts
            if ts > last:
                gap = ts - last
                told = u._interval_s
                prev = u._prev_gap
                if (not (0.5 * told <= gap <= 2.0 * told) and 0.8 * prev <= gap <= 1.25 * prev
                        and gap < pause_s):
                    break  # a sampling interval to tell
                if not learns or (e.throttle or 0) & SLOWDOWN_BITS or u._active \
                        or u._cap_active or u._seen or u._minor:
                    break
                temp_c = e.gpu_temp_c
                if temp_c is not None:
                    if u._hot or u._hot_active:
                        break
                    node = u._node
                    node.temps[e.gpu] = temp_c
                    if ts - node.median_ts >= 1.0:
                        node.reference(ts)
                    if temp_c >= node.median_c + hot_delta_c:
                        break  # (what changed above, the record path does the same again)
                u._prev_gap = gap
                u._last_ts = ts
                sm_clock = e.sm_clock_mhz
                if sm_clock is not None:
                    u._clock._ewmean.update(sm_clock)
                u._heavy = (u._heavy if u._heavy < 0 else 0) - 1
                u._bad = 0
                u._good += 1
            n_thermal += 1
        elif t is NicSample:
            try:
                nics = nic_units[e.node]
                p = nics._ports[(e.nic, e.port)]
            except KeyError:
                break
            counters = p.counters
            if ts > counters._last_ts:
                prev_ts = p.last_ts
                if p.active or p.down or p.low or prev_ts == _NEVER or e.link_state == "down":
                    break
                b0, b1, b2, b3, b4, b5, b6, b7, b8, b9, b10 = counters._last
                v0, v1, v2, v3, v4 = e.tx_bytes, e.rx_bytes, e.symbol_errors, e.link_downed, \
                    e.rcv_errors
                v5, v6, v7, v8, v9, v10 = e.xmit_discards, e.xmit_wait, e.out_of_sequence, \
                    e.packet_seq_err, e.np_cnp_sent, e.rp_cnp_handled
                try:
                    if not (v0 >= b0 and v1 >= b1 and v5 >= b5 and v6 >= b6 and v9 >= b9
                            and v10 >= b10 and v2 == b2 and v3 == b3 and v4 == b4 and v7 == b7
                            and v8 == b8 and v2 is not None and v3 is not None
                            and v4 is not None and v7 is not None and v8 is not None):
                        break  # a reset, an error, a flap
                except TypeError:
                    break  # a counter missing, now or before
                dt = ts - prev_ts
                if dt > 0:
                    p.gbps = ((v0 - b0) + (v1 - b1)) * 8e-9 / dt
                if ts - nics._ref_ts >= 1.0:
                    nics._refresh_ref(ts)
                ref = nics._ref_gbps
                if ref >= busy_gbps and p.gbps < low_ratio * ref:  # type: ignore[operator]
                    break  # slow against its siblings (what changed above, see the docstring)
                counters._last_ts = ts
                counters._last = [v0, v1, v2, v3, v4, v5, v6, v7, v8, v9, v10]
                p.interval_s = dt
                p.last_ts = ts
            n_nic += 1
        elif t is EccSample:
            try:
                g = ecc_units[(e.node, e.gpu)]
            except KeyError:
                break
            if e.xid is not None:
                break
            counters = g._counters
            if ts > counters._last_ts:
                if g._active:
                    break
                b0, b1, b2, b3, b4, b5, b6, b7 = counters._last
                v0, v1, v2, v3 = e.sbe_volatile, e.dbe_volatile, e.retired_pages_sbe, \
                    e.retired_pages_dbe
                v4, v5, v6, v7 = e.pcie_replay, e.nvlink_crc_errors, e.nvlink_replay_errors, \
                    e.nvlink_recovery_errors
                try:
                    if not (v2 >= b2 and v0 == b0 and v1 == b1 and v3 == b3 and v4 == b4
                            and v5 == b5 and v6 == b6 and v7 == b7 and v0 is not None
                            and v1 is not None and v3 is not None and v4 is not None
                            and v5 is not None and v6 is not None and v7 is not None
                            and not g._retired_sbe < retired_limit <= v2):
                        break  # an error counted, a reset, retired pages past the limit
                except TypeError:
                    break
                failure = e.row_remap_failure
                pending = e.row_remap_pending
                if (failure and not g._remap_failure) or (pending and not g._remap_pending):
                    break
                action = e.recovery_action
                if action is not None and action != g._recovery:
                    break  # a recovery action asked for, or one back to none (a reset)
                counters._last_ts = ts
                counters._last = [v0, v1, v2, v3, v4, v5, v6, v7]
                g._retired_sbe = v2
                if failure is not None:
                    g._remap_failure = failure
                if pending is not None:
                    g._remap_pending = pending
            n_ecc += 1
        else:
            break
        clock = new_clock
        if ts >= next_sweep:
            next_sweep = clock + _SWEEP_S
        i += 1
    if i > start:
        mon.clock = clock
        mon._next_sweep = next_sweep
        mon._n_thermal += n_thermal
        mon._n_nic += n_nic
        mon._n_ecc += n_ecc
    return i
