"""Per-GPU hardware health from ``telemetry.ecc``: XID events, ECC, row remapping, NVLink, PCIe.

Hardware verdicts are decided on the sample that carries them (the target is
one second of event time; here it is zero): an XID from the catalogue's
hardware set, a double-bit error, a row remap pending (XID 63 or the flag), a
row-remap failure, a recovery action NVML asks for.  A row remap pending is the
mildest of them: the memory stays correct until the GPU's next reset activates
the remap, so its page asks for that reset at the job's end (detector.playbook),
and any other verdict on the GPU names the action instead (detector.correlate).
Rates (single-bit bursts, NVLink and PCIe errors) use decaying
counts so a lone correctable error is never a fault.  A single-bit (corrected) error
rate is evidence, not a verdict (:meth:`GpuHealth._sbe_grounds`): ECC corrected them, and
neither NVIDIA's catalogue (XID 92 "high SBE rate": IGNORE) nor DCGM's memory health
watch (DBEs, pending retirements, retired pages past the limit, row-remap failures) acts
on a rate; with a row remap pending or failed, or retired pages past the limit, it is.
A rate *climbing* by multiples in minutes is HBM failing (:meth:`GpuHealth._sbe_climbing`):
a verdict of its own, before the driver's XID 92.
A GPU reset — counters falling back, or NVML's recovery action returning to ``none`` —
is reported so latched hardware problems on that GPU can resolve.
"""

from __future__ import annotations

import math
from typing import Any

from detector.alerts import Scope
from detector.events import ECC_COUNTERS, RECOVERY_ACTIONS, EccSample
from detector.findings import Finding
from detector.statecodec import is_bool, is_count, is_finite, is_time
from detector.thresholds import Thresholds
from detector.xid import REMAP_PENDING_XID, lookup
from models.counters import CounterDeltas, delta_reader
from models.decay import DecayingCount
from models.rising import RisingRate

_RESETS_BEFORE_INSPECTION = 2  # gpud's DefaultRebootThreshold
_SBE_ALONE = ("corrected single-bit errors alone: evidence, not a verdict (no DBE, remap or "
              "retired pages past the limit)")

# Order of the counters CounterDeltas tracks for one GPU.
_SBE, _DBE, _RET_SBE, _RET_DBE, _PCIE, _NVL_CRC, _NVL_REPLAY, _NVL_RECOVERY = range(8)
_read_deltas = delta_reader(ECC_COUNTERS)
# GpuHealth.quiet reads the counters by position: a change of the tuple must be seen there.
assert ECC_COUNTERS == (
    "sbe_volatile", "dbe_volatile", "retired_pages_sbe", "retired_pages_dbe", "pcie_replay",
    "nvlink_crc_errors", "nvlink_replay_errors", "nvlink_recovery_errors")


class GpuHealth:
    """Hardware state of one GPU."""

    __slots__ = ("scope", "_counters", "_sbe", "_nvlink", "_pcie", "_active", "_xids",
                 "_remap_pending", "_remap_failure", "_recovery", "_retired_sbe", "_last_error",
                 "_resets_since", "_faulted", "_pcie_long", "_pcie_samples", "_sbe_evidence",
                 "_nvl_replay_ts", "_sbe_ts", "_sbe_rise", "_sbe_climbed")

    def __init__(self, node: str, gpu: int, cfg: Thresholds) -> None:
        self.scope = Scope.of_gpu(node, gpu)
        self._counters = CounterDeltas(8)
        self._sbe = DecayingCount(cfg.sbe_half_life_s)
        self._nvlink = DecayingCount(cfg.nvlink_half_life_s)
        self._pcie = DecayingCount(cfg.pcie_half_life_s)
        self._pcie_long = DecayingCount(cfg.pcie_rate_half_life_s)     # replays, over minutes
        self._pcie_samples = DecayingCount(cfg.pcie_rate_half_life_s)  # samples with replays
        self._active: set[str] = set()            # rate signals currently raised
        self._last_error: dict[str, float] = {}   # rate signal -> ts of its last increment
        self._resets_since: dict[int, int] = {}   # hardware XID -> GPU resets since it came
        self._xids: list[tuple[float, int]] = []  # recent (ts, xid), to drop duplicates
        self._remap_pending = False
        self._remap_failure = False
        self._recovery = "none"
        self._retired_sbe = 0
        self._faulted = False  # raised a hardware verdict since the last reset
        self._sbe_evidence = False  # sbe_burst raised as evidence only (no verdict yet)
        self._nvl_replay_ts = -math.inf  # last NVLink replay or recovery error counted
        self._sbe_ts = -math.inf  # last sample that read the SBE counter
        self._sbe_rise: RisingRate | None = None  # its rate, once it counted an error
        self._sbe_climbed = False  # paged the rate climbing since the last reset

    @property
    def last_ts(self) -> float:
        """Time of the newest sample of this GPU."""
        return self._counters.last_ts

    def has_open_fault(self) -> bool:
        """Whether something raised here may still be open (so the monitor is kept longer).

        A latched hardware problem waits for this GPU's reset, which only this
        monitor can see (its counters drop): forgetting it early would leave the
        problem firing for ever.
        """
        return (self._faulted or bool(self._active) or self._remap_pending
                or self._remap_failure or self._recovery != "none")

    def _emit(self, out: list[Finding], s: EccSample, signal: str, cause: str, *,
              verdict: bool = True, active: bool = True, severity: float = 0.9,
              evidence: dict[str, Any] | None = None, onset: float | None = None) -> None:
        if active and verdict:
            self._faulted = True
        out.append(Finding(s.ts, s.ts if onset is None else onset, signal, "hardware", cause,
                           self.scope, active, verdict, severity, evidence or {},
                           None, s.tenant, s.cluster))

    def quiet(self, s: EccSample, cfg: Thresholds) -> bool:
        """Take the healthy sample: True when ``s`` was applied and could make no finding.

        The common case of :meth:`update`, which calls it first; the batch path of samples
        (detector.quiet) calls it alone.  It takes a late or duplicate sample without an XID
        (nothing to do) and one with no XID, no rate raised, no corrected-error run open, no
        error counted, no counter missing or fallen back, retired pages short of the limit,
        no remap flag newly set and no recovery action changed: the counters' baseline moves
        on.  False changes nothing.
        """
        if s.xid is not None:
            return False
        counters = self._counters
        ts = s.ts
        if ts <= counters._last_ts:
            return True  # late or duplicate
        if self._active:
            return False
        rise = self._sbe_rise
        if rise is not None and rise.running:
            return False  # (a corrected-error run counts its quiet polls too: _sbe_climbing)
        # The counters by position (ECC_COUNTERS' order: _SBE .. _NVL_RECOVERY).
        b0, b1, b2, b3, b4, b5, b6, b7 = counters._last
        r: Any = s  # (a counter may be None: the comparisons' TypeError tells)
        v0, v1, v2, v3 = r.sbe_volatile, r.dbe_volatile, r.retired_pages_sbe, \
            r.retired_pages_dbe
        v4, v5, v6, v7 = r.pcie_replay, r.nvlink_crc_errors, r.nvlink_replay_errors, \
            r.nvlink_recovery_errors
        try:
            if not (v2 >= b2 and v0 == b0 and v1 == b1 and v3 == b3 and v4 == b4
                    and v5 == b5 and v6 == b6 and v7 == b7 and v0 is not None
                    and v1 is not None and v3 is not None and v4 is not None
                    and v5 is not None and v6 is not None and v7 is not None
                    and not self._retired_sbe < cfg.retired_sbe_pages <= v2):
                return False  # an error counted, a reset, retired pages past the limit
        except TypeError:
            return False  # a counter missing, now or before
        failure = s.row_remap_failure
        pending = s.row_remap_pending
        if (failure and not self._remap_failure) or (pending and not self._remap_pending) or (
                pending is False and self._remap_pending):
            return False  # (a pending remap cleared: the GPU's reset, revB32 3)
        action = s.recovery_action
        if action is not None and action != self._recovery:
            return False  # a recovery action asked for, or one back to none (a reset)
        counters._last_ts = ts
        counters._last = [v0, v1, v2, v3, v4, v5, v6, v7]
        self._sbe_ts = ts
        self._retired_sbe = v2
        if failure is not None:
            self._remap_failure = failure
        if pending is not None:
            self._remap_pending = pending
        return True

    def update(self, s: EccSample, cfg: Thresholds, out: list[Finding]) -> None:
        if self.quiet(s, cfg):
            return
        # The general path: a sample that may raise or clear a signal.  It decides every
        # sample alike, quiet or not (tests/test_batch_samples.py runs it alone as quiet's
        # reference).
        remap = s.xid == REMAP_PENDING_XID
        if s.xid is not None and not remap:
            self._on_xid(s, out)
        resets = self._counters.resets
        deltas = _read_deltas(self._counters, s.ts, s)
        if deltas is None:
            if remap:
                self._on_xid(s, out)
            return  # late or duplicate sample: its XID still counts, its counters do not
        if s.sbe_volatile is not None:
            # (before the burst's rate: a climb found now is the burst's grounds too)
            rise = self._sbe_rise
            if deltas[_SBE] or (rise is not None and rise.running):
                self._sbe_climbing(s, deltas[_SBE], cfg, out)
            self._sbe_ts = s.ts
        self._on_counters(s, deltas, cfg, out)
        # A pending remap clears only at the GPU reset that activates it (NVIDIA's row
        # remapping): that reset, even when it moves no counter (volatile counters at 0 or not
        # sent) -- else the reset_gpu page it asked for stayed open (revB32 3).
        remapped = (self._remap_pending and s.row_remap_pending is False
                    and not s.row_remap_failure)
        self._on_flags(s, out)
        if remap:
            # (after the sample's counters: a DBE the same sample counts opens the page with
            # its own action, the remap joins it -- blind5's XID 63 sample carries the DBE)
            self._on_xid(s, out)
        if self._counters.resets != resets or remapped or (
                s.recovery_action == "none" and self._recovery != "none"):
            self._gpu_reset(s, out)
        if s.recovery_action is not None:
            self._recovery = s.recovery_action
        if self._sbe_evidence and "sbe_burst" in self._active:
            grounds = self._sbe_grounds(s, cfg)
            if grounds is not None:  # the rate raised as evidence now has its grounds
                self._sbe_evidence = False
                self._emit(out, s, "sbe_burst", "gpu_memory", severity=0.8, evidence={
                    "recent_errors": round(self._sbe.value(s.ts), 1),
                    "limit": cfg.sbe_burst, "rests_on": grounds})

    def _sbe_grounds(self, s: EccSample, cfg: Thresholds) -> str | None:
        """What makes this GPU's single-bit error rate a verdict, said as such, or None.

        Corrected errors are what ECC is for: a rate of them alone is evidence (blind6 F2:
        0.5-1.8 corrected errors/s for minutes on a healthy MIG GPU, no DBE, no XID, no
        remap, no slowdown, isolated in every log).  NVIDIA's catalogue marks even XID 92
        ("high SBE rate") IGNORE / CONTACT_SUPPORT; DCGM's memory health watch fails a GPU on
        volatile DBEs, retired pages past its limit and row-remap failures, warns on pending
        retirements, and has no SBE-rate check.  The rate counts beside memory that needs
        a reset or is running out of spares: a row remap pending (the failing row stays in
        use until the reset) or failed, retired pages past ``retired_sbe_pages``.  (DBEs and
        XIDs 48/64/94/95 are verdicts of their own; a slow rank on the GPU is the
        correlator's.)
        """
        failure = self._remap_failure if s.row_remap_failure is None else s.row_remap_failure
        pending = self._remap_pending if s.row_remap_pending is None else s.row_remap_pending
        if self._sbe_climbed:
            return "corrected single-bit errors climbing by multiples (sbe_rising)"
        if failure:
            return "corrected single-bit errors with a row-remap failure"
        if pending:
            return "corrected single-bit errors with a row remap pending (needs a GPU reset)"
        if self._retired_sbe >= cfg.retired_sbe_pages:
            return (f"corrected single-bit errors with {self._retired_sbe} retired pages "
                    f"(limit {cfg.retired_sbe_pages})")
        return None

    def _sbe_climbing(self, s: EccSample, n: int, cfg: Thresholds, out: list[Finding]) -> None:
        """Page the GPU (``sbe_rising``: hardware/gpu_memory, a verdict) when its corrected
        errors climb by multiples in minutes (models.rising, thresholds.sbe_rise_*).

        Reads ``sbe_volatile`` poll by poll (``n`` errors since the last sample that read it).
        An HBM stack failing corrects ever more errors as its weak cells multiply, until the
        driver reports XID 92 ("high single-bit error rate") and remaps the rows (XID 63):
        blind26 tenants ``sbe-*``, +15-200 a 60 s poll, XID 92 150-240 s in, paged only then
        (138-205 s); blind20's SBEs a row 3 -> 400 in 5 min.  DCGM has no SBE-rate check and
        the catalogue's XID 92 is IGNORE alone: corrected errors are what ECC is for.  So the
        rate alone pages nothing -- a steady trickle for weeks, a lone error, one burst, a
        storm at a steady rate (blind6's healthy MIG GPU, 0.5-2 a second for minutes, even
        when its first poll caught only its start), a rate that falls back; what pages is the
        climb: in bins of a minute's polls cut at the counter's changes, the run's first
        (partial) bin left out, three bins holding ``sbe_burst`` (100) errors each 1.25x and
        a Poisson standard error above the one before (two rises in a row: one is a steady
        storm's noise one time in six -- revA36 F2), the last three above the first, and ten
        times the GPU's own rate before (an hour's half-life).  At 60 s polls that is the
        fourth poll of the climb, 180 s after its first changed row.  The
        driver's XID 92 and 63 after it are the same GPU's hardware problem (one dedup key:
        one incident, one page).  Latched like an XID until the GPU's reset.  (Not compared
        with the node's or the fleet's GPUs: no corpus shows SBEs climbing on many GPUs at
        once, and a node's eight climbing together would still be eight failing stacks.)
        """
        rise = self._sbe_rise
        if rise is None:
            rise = self._sbe_rise = RisingRate(
                cfg.sbe_rise_bin_s, cfg.sbe_rise_bins, cfg.sbe_burst, cfg.sbe_rise_step,
                cfg.sbe_rise_step_z, cfg.sbe_rise_z, cfg.sbe_history_half_life_s,
                cfg.sbe_rise_history)
        if not math.isfinite(self._sbe_ts):
            return  # (no reading before this one: no span to count over)
        seen = rise.add(self._sbe_ts, s.ts, n)
        if seen is None or self._sbe_climbed:
            return
        self._sbe_climbed = True
        rates = " -> ".join(f"{r:g}" for r in seen["per_min"])
        self._emit(out, s, "sbe_rising", "gpu_memory", severity=0.85, onset=rise.onset_ts,
                   evidence={**seen, "recommended_because": (
                       f"corrected (single-bit) ECC errors climbing: {rates} a minute over "
                       f"the last {len(seen['per_min'])} bins, from "
                       f"{seen['before_per_min']:g} a minute before -- an HBM stack failing "
                       "ever faster (what precedes the driver's XID 92 and row remaps); "
                       "drain the GPU, reset it, and run `dcgmi diag -r 3` before returning "
                       "it")})

    def _on_xid(self, s: EccSample, out: list[Finding]) -> None:
        event = (s.ts, s.xid)
        if event in self._xids:
            return  # the same XID event delivered twice
        self._xids.append(event)  # type: ignore[arg-type]
        del self._xids[:-8]
        info = lookup(s.xid)  # type: ignore[arg-type]
        self._emit(out, s, "xid" if info.hardware else "app_xid", info.cause,
                   verdict=info.hardware, severity=0.95 if info.hardware else 0.3,
                   evidence={"xid": s.xid, "meaning": info.meaning})
        if not info.hardware or info.code == REMAP_PENDING_XID:
            # (a reset is a pending remap's remedy, and a later XID 63 a new row -- bank
            # exhaustion is XID 64's and the failure flag's: no inspection for it, revB32 2)
            return
        resets = self._resets_since.setdefault(info.code, 0)
        if resets >= _RESETS_BEFORE_INSPECTION:
            # As gpud does: the same hardware XID after two resets is not going to be fixed
            # by a third.  A human sends the GPU to hardware inspection.
            out.append(Finding(
                s.ts, s.ts, "repeat_xid", "hardware", info.cause, self.scope, True, True, 0.95,
                {"xid": info.code, "meaning": info.meaning, "resets_since_first": resets},
                None, s.tenant, s.cluster, escalate=True))

    def _on_counters(self, s: EccSample, d: tuple[int, ...], cfg: Thresholds,
                     out: list[Finding]) -> None:
        if d[_DBE] or d[_RET_DBE]:
            self._emit(out, s, "dbe", "gpu_memory", evidence={
                "dbe_volatile_increase": d[_DBE], "retired_pages_dbe_increase": d[_RET_DBE]})
        if s.retired_pages_sbe is not None:
            was = self._retired_sbe
            self._retired_sbe = s.retired_pages_sbe
            if was < cfg.retired_sbe_pages <= s.retired_pages_sbe:
                self._emit(out, s, "retired_pages", "gpu_memory", severity=0.7, evidence={
                    "retired_pages_sbe": s.retired_pages_sbe, "limit": cfg.retired_sbe_pages})
        # Each rate only with something new or raised (the common case is neither: no call,
        # no evidence dict built).
        active = self._active
        if d[_SBE] or "sbe_burst" in active:
            grounds = self._sbe_grounds(s, cfg)
            raised = "sbe_burst" in active
            self._rate(out, s, cfg, "sbe_burst", "gpu_memory", self._sbe, d[_SBE],
                       cfg.sbe_burst, {"sbe_increase": d[_SBE], "rests_on": grounds or _SBE_ALONE},
                       verdict=grounds is not None)
            if not raised and "sbe_burst" in active:
                self._sbe_evidence = grounds is None
        nvl = d[_NVL_CRC] + d[_NVL_REPLAY] + d[_NVL_RECOVERY]
        if nvl or "nvlink_errors" in active:
            self._rate(out, s, cfg, "nvlink_errors", "nvlink", self._nvlink, nvl,
                       cfg.nvlink_errors, {"crc": d[_NVL_CRC], "replay": d[_NVL_REPLAY],
                                           "recovery": d[_NVL_RECOVERY]},
                       self._nvl_replayed(s.ts, nvl, d[_NVL_REPLAY] + d[_NVL_RECOVERY], cfg))
        if d[_PCIE] or "pcie_replay" in active or "pcie_seen" in active:
            level = self._rate(out, s, cfg, "pcie_replay", "gpu_hardware", self._pcie,
                               d[_PCIE], cfg.pcie_replays, {"pcie_replay_increase": d[_PCIE]},
                               self._pcie_rate(s.ts, d[_PCIE], cfg))
            self._pcie_seen(out, s, d[_PCIE], cfg, level)

    def _pcie_seen(self, out: list[Finding], s: EccSample, n: int, cfg: Thresholds,
                   level: float | None) -> None:
        """Raise ``pcie_seen`` -- evidence, never a verdict -- once the replays counted with
        ``pcie_half_life_s`` reach ``pcie_evidence`` (DCGM's PCIe health limit, 8 a minute,
        within about a minute); clear it after ``hw_quiet_s`` without a replay.

        The verdicts above need 100 replays within a minute or a rate held for six samples
        (minutes at DCGM's 30 s); a PCIe switch replaying 15-60 a poll under two GPUs, their
        ranks late by their host path, was escalated ``unknown`` long before either (blind20
        P1).  This is what the correlator weighs a slow rank -- or its node's TP group --
        against at its first judgement (Correlator._pcie_impact); on its own it pages nobody:
        healthy GPUs trickle 0-20 replays an hour, one or two a poll.  ``level``: the count
        as :meth:`_rate` left it at ``s.ts`` (None: it counted nothing, ``n`` is 0)."""
        active = self._active
        if "pcie_seen" not in active:
            if n and level is None:  # (not so: _rate counts every replay)
                level = self._pcie.value(s.ts)
            if n and level is not None and level >= cfg.pcie_evidence:
                active.add("pcie_seen")
                self._emit(out, s, "pcie_seen", "gpu_hardware", verdict=False, severity=0.5,
                           evidence={"pcie_replay_increase": n,
                                     "recent_errors": round(level, 1),
                                     "limit": cfg.pcie_evidence})
        elif not n and s.ts - self._last_error.get("pcie_replay", s.ts) >= cfg.hw_quiet_s:
            active.discard("pcie_seen")
            self._emit(out, s, "pcie_seen", "gpu_hardware", active=False, verdict=False,
                       severity=0.0)

    def _pcie_rate(self, ts: float, n: int, cfg: Thresholds) -> dict[str, Any] | None:
        """Evidence of a PCIe replay rate held for minutes (thresholds.pcie_rate_per_min),
        or None.

        A link trained down (width or speed) replays on every sample while the GPU is busy,
        10-60 a minute: under the burst rule's 100 within ~a minute for ever (blind3 B4:
        ~38/min, 0 of 8 found), far over the 0-20 an hour healthy GPUs trickle.  Both counts
        decay over ``pcie_rate_half_life_s``: the rate they estimate (the decayed count over
        its mean life, a lower bound while it builds up) must pass the limit, and the replays
        have come on ``pcie_rate_samples`` samples (a lone burst is no rate).
        """
        half = cfg.pcie_rate_half_life_s
        level = self._pcie_long.add(ts, n)
        seen = self._pcie_samples.add(ts, 1.0 if n else 0.0)
        per_min = level * math.log(2) / half * 60.0  # (the rate's estimate; a lower bound)
        if per_min < cfg.pcie_rate_per_min or seen < cfg.pcie_rate_samples:
            return None
        return {"replays_lately": round(level, 1), "replays_per_min": round(per_min, 1),
                "replay_samples_lately": round(seen, 1),
                "rule": f"PCIe replays over {cfg.pcie_rate_per_min:g}/min (DCGM's PCIe health "
                        f"limit), counted decaying with a {half:g} s half-life"}

    def _nvl_replayed(self, ts: float, n: int, link: int,
                      cfg: Thresholds) -> dict[str, Any] | None:
        """Evidence that the link layer retransmits, or None: replays or recoveries counted
        within ``nvlink_half_life_s`` and ``nvlink_replayed`` errors lately.

        DCGM's NVLink health watch fails a GPU on a single replay or recovery error in a
        minute (CRC errors alone only warn below 100/s); one lone error is no fault here, so
        the replays must come with errors recurring.
        """
        if link:
            self._nvl_replay_ts = ts
        if ts - self._nvl_replay_ts > cfg.nvlink_half_life_s:
            return None
        level = self._nvlink.value(ts) + n
        if level < cfg.nvlink_replayed:
            return None
        return {"rule": f"NVLink replays or recoveries with {cfg.nvlink_replayed:g}+ errors "
                        f"lately (DCGM's NVLink health watch fails on a replay)"}

    def _rate(self, out: list[Finding], s: EccSample, cfg: Thresholds, signal: str, cause: str,
              count: DecayingCount, n: int, limit: float, evidence: dict[str, Any],
              held: dict[str, Any] | None = None, verdict: bool = True) -> float | None:
        """Raise at ``limit`` recent errors, or with ``held`` (evidence of a rate held for
        minutes, :meth:`_pcie_rate`); clear after ``hw_quiet_s`` without a new one.  Not
        ``verdict``: raised as evidence only (a single-bit error rate alone).  Returns the
        count at ``s.ts`` as it leaves it (0 when cleared), None when it counted nothing."""
        if n:
            self._last_error[signal] = s.ts
        elif signal not in self._active:
            return None  # nothing new and nothing raised: the common case
        level = count.add(s.ts, n)
        if signal not in self._active:
            if level >= limit or held is not None:
                self._active.add(signal)
                self._emit(out, s, signal, cause, severity=0.8 if verdict else 0.4,
                           verdict=verdict,
                           evidence={**evidence, "recent_errors": round(level, 1), "limit": limit,
                                     **(held or {})})
        elif s.ts - self._last_error.get(signal, s.ts) >= cfg.hw_quiet_s:
            count.reset()
            if signal == "pcie_replay":
                self._pcie_long.reset()
                self._pcie_samples.reset()
            self._active.discard(signal)
            self._emit(out, s, signal, cause, active=False, severity=0.0)
            return 0.0
        return level

    def _on_flags(self, s: EccSample, out: list[Finding]) -> None:
        if s.row_remap_failure and not self._remap_failure:
            self._emit(out, s, "row_remap_failure", "gpu_memory", severity=0.95)
        if s.row_remap_failure is not None:
            self._remap_failure = s.row_remap_failure
        if s.row_remap_pending and not self._remap_pending:
            # A remap waits for the next reset (XID 63 says so too, when the collector sends
            # it): the memory is correct until then, and the page asks for that reset at the
            # job's end -- blind22 R1: left as evidence, the GPU was paged only at its SBE
            # burst, 113-319 s after its XID 63.
            self._emit(out, s, "row_remap_pending", "gpu_memory", severity=0.9, evidence={
                "row_remap_pending": True,
                "needs": "a GPU reset to activate the remap (row remap pending)"})
        if s.row_remap_pending is not None:
            self._remap_pending = s.row_remap_pending
        ra = s.recovery_action
        if ra is not None and ra != "none" and ra != self._recovery:
            self._emit(out, s, "recovery_action", "gpu_hardware", severity=0.9,
                       evidence={"recovery_action": ra})

    def _gpu_reset(self, s: EccSample, out: list[Finding]) -> None:
        for code in self._resets_since:
            self._resets_since[code] += 1
        self._active.clear()
        self._remap_pending = False
        self._faulted = False
        self._sbe_evidence = False
        self._sbe_climbed = False
        self._sbe_rise = None
        self._emit(out, s, "gpu_reset", "gpu_hardware", active=False, verdict=False,
                   severity=0.0, evidence={"counter_resets": self._counters.resets})


def _decaying(x: object) -> bool:
    return type(x) is DecayingCount and x.restored_ok()


# Each field's check on snapshot restore (Monitors.check_restored): the codec rebuilds a
# GpuHealth from fields of any type, and none was checked (svc39: a forged string in
# ``_recovery``, a ``_retired_sbe`` of -1, a counter baseline past the blank restored as they
# were).  Held to what the live code keeps: its counters' baselines (CounterDeltas), decaying
# counts, XIDs seen (the last 8, each (ts, code)), a recovery action DESIGN names, times finite
# (-inf: none yet), counts from 0, its SBE rate's bins (RisingRate.restored_ok; hard40: type only).
FIELDS = {
    "scope": lambda x: type(x) is Scope and x.level == "gpu",
    "_counters": lambda x: type(x) is CounterDeltas and x.restored_ok(len(ECC_COUNTERS)),
    "_sbe": _decaying, "_nvlink": _decaying, "_pcie": _decaying, "_pcie_long": _decaying,
    "_pcie_samples": _decaying,
    "_active": lambda x: type(x) is set and all(type(k) is str for k in x),
    "_xids": lambda x: type(x) is list and len(x) <= 8 and all(
        type(e) is tuple and len(e) == 2 and is_finite(e[0]) and is_count(e[1]) for e in x),
    "_remap_pending": is_bool, "_remap_failure": is_bool,
    "_recovery": lambda x: x in RECOVERY_ACTIONS, "_retired_sbe": is_count,
    "_last_error": lambda x: type(x) is dict and all(
        type(k) is str and is_finite(t) for k, t in x.items()),
    "_resets_since": lambda x: type(x) is dict and all(
        is_count(k) and is_count(n) for k, n in x.items()),
    "_faulted": is_bool, "_sbe_evidence": is_bool, "_nvl_replay_ts": is_time,
    "_sbe_ts": is_time,
    "_sbe_rise": lambda x: x is None or type(x) is RisingRate and x.restored_ok(),
    "_sbe_climbed": is_bool,
}
assert set(FIELDS) == set(GpuHealth.__slots__)
