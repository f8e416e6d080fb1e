"""Per-GPU thermal and power throttling from ``telemetry.thermal``.

A throttle reason is evidence, not a verdict.  The baseline is a river
``EWMean`` of the SM clock while no slowdown reason is set and the GPU is not
idle (0x1: its clock parked, 345 MHz on an H100, which would make any clock
under load look undropped); what a reason turns into depends on whether it is
ever routine:

- **never routine** (0x8 HW slowdown, 0x20 SW thermal, 0x40 HW thermal, 0x80
  HW power brake): the clock ``hw_clock_drop`` below baseline for
  ``throttle_samples`` samples in a row is a recommendation on its own.  A GPU
  busy only ever at its power limit (0x4 on every loaded sample: no baseline)
  is judged against the clock its own SW cap held it at (``_cap_clock``), one
  under the reason from its first loaded sample against its siblings' clock
  under their cap -- either a floor under its free clock, since a cap only
  lowers it (blind19 O2: 0x8 at 1224 MHz under `dcgmi diag` on a GPU whose
  job had held it at 0x4 on 40 of 40 samples, its siblings at 1852, was
  evidence only, never a verdict; :meth:`GpuThermal._reference`).  A GPU's own thermal
  reason in bursts shorter than the sampling interval -- never ``throttle_samples`` in a
  row -- is sustained when seen with its clock down on as many samples within
  ``brake_repeat_s``, each half ``hot_delta_c`` over its node's median, none of its mates
  throttling (:meth:`GpuThermal._recurs`; blind24 T1: a jobless inference GPU);
- **0x4 SW power cap**: a GPU at its power limit is normal operation.  A
  clock ``clock_drop`` below baseline for ``throttle_samples`` samples is
  ``power_cap`` *evidence*: the correlator recommends isolation only if the
  GPU's rank is measurably slower than its peers meanwhile (impact).  On its
  own it is a recommendation only when the clock loss is sustained: held
  ``cap_clock_drop`` low for a decayed count of ``cap_samples`` samples
  (half-life ``cap_half_life_s``) — a power supply that cannot keep up.
  A smaller dip is ``throttle_minor``, which explains a rank a few percent
  slower than its peers as power management;

and the finding says which (``recommended_because``).

The sustained-cap rule judges a GPU against its peers under the same conditions, not
against its own baseline alone: a SW cap holding *every* busy GPU of the node (idle ones,
0x1, have no load to cap), begun within ``impact_onset_s`` of each other, is the node's or
its rack's power limit lowered -- facility power management, every rank slower alike --
and each GPU's sustained verdict is evidence (``not_recommended_because``), no page (blind3
B2: a rack capped 700 -> 500 W was one isolation per GPU).  A GPU capped while a sibling
runs free (no 0x4, or 0x4 since long before: routine capping at its own limit), long before
its siblings, or ``cap_clock_drop`` deeper than most of them, is judged alone as before; one
still held down once its siblings are back counts afresh, on its own; and a rank slower than
its peers under the shared cap is still its GPU's fault (the correlator's impact rule,
``power_cap``).  Which limit a node's shared cap is -- a rack's, or the node's own while
other nodes run free -- only the nodes compared say: the verdict carries
``gpus_under_cap`` and the correlator decides (``Correlator._node_cap``).

A never-routine *power* reason (0x80 HW power brake, 0x8 HW slowdown on a GPU that is not
hot) on two or more GPUs of a node at once (each one's latest sample: one sampling interval;
detector.node_temps.BRAKE_MIN_GPUS) is one node fault -- the node's power supply or board
asserting the brake, not GPUs failing together -- and its remedy drains the node: the first
GPU whose run reaches the verdict while two or more GPUs' latest samples show it raises one
``throttle`` finding at node scope, and each braking GPU's own verdict becomes evidence of it
(DESIGN's rule: a node fault reported as N GPU alerts is a miss and N false positives).  Idle
GPUs are not asked (a parked clock shows no brake: blind28 F3, seven GPUs of four tenants'
jobs braking beside an idle one, paged GPU by GPU when the rule asked for every GPU), nor is
SW power cap (0x4): policy, never a brake.

A never-routine *thermal* reason (0x20, 0x40, 0x8 on a hot GPU) on two or more GPUs of a node
at once is the node's cooling (its inlet air, a rack's cooling, its fans), not as many GPUs
failing: once a GPU has throttled ``throttle_samples`` samples in a row while another GPU's
latest sample throttles too, one ``throttle`` finding at node scope is raised, and every GPU
whose run reaches that length meanwhile is evidence of it (blind3 B3: a rack's inlet air
+14..28 C, 3-8 GPUs of each node at 0x20, was one GPU isolation per GPU).  "At once" is each
GPU's latest sample: one sampling interval, at 10 s as at 30 s.  A GPU that would reach its
verdict alone on a node that is hot as a whole (it is not ``hot_delta_c`` above its node's
median: its siblings are warm too) waits one more sample for them -- a rack's nodes heat
over a minute or so, and the first GPU's third sample can be its siblings' first.  A GPU
hot against cool siblings (a failed thermal interface) is its own fault and never waits.
The same holds for the one sample a slow rank is explained by (``throttle_seen``): a GPU's
thermal reason seen beside warm mates says so (``node_warm``, and ``throttling_since``: its
run's first sample), and the correlator holds its slow rank's page (and its verdict) up to
``impact_onset_s`` from then for its mates to join it -- one node page (Correlator._heat_held;
blind23 D1: the first GPU of a node whose coolant flow failed paged 0-48 s before its node).
Warm mates are ambiguous only while they may be heating: a node's cooling heats every GPU of
it, the mates climbing at an unchanged power, while one GPU's own cooling fault (a cracked HBM
pad, its thermal interface) leaves them level at their load.  Mates shown level -- their load
held ``steady_history_s``, their temperature settled at it and ``steady_rise_c`` or less above
it (NodeTemps.mates_steady) -- make it the GPU's own: no ``node_warm``, and a GPU told with it
is told again without it once they are (blind24 hbm: paged 68.5 s after its first 0x20 beside
mates level for minutes).  Mates with no history at their load (first heard busy, or loaded
anew), climbing, or levelled off after a climb within ``CALM_SPAN_S`` still hold it.  They are
judged on their samples of the GPU's first throttling poll or later -- a GPU scraped before
them waits for them (``NodeTemps.steady_wait``, :meth:`GpuThermal._settle_steady`) -- and
moving ``LEVEL_STEP_C`` a poll on average they are climbing, however little in all (revA35 2:
a node's cooling failing fast, +3 C a poll, paged its first GPU on its mates' level samples of
the poll before, then the node) -- over the polls since its run began, and short of a degree a
poll by ``LEVEL_Z`` standard errors of their own moves: a noisy sensor's one poll is no level
(revA36 F5: +1 C a 10 s poll under +-0.5-1 C of noise, NodeTemps.mates_steady).

Heat against the node's other GPUs (the same inlet air) is the other sign of a cooling fault:
``hot`` for ``hot_samples`` samples in a row.  It is evidence, as a throttle reason is
(DESIGN; issue 10): a GPU hot at its clock, with no clock-event reason and its rank at its
peers' pace, costs the job nothing yet -- a maintenance ticket for its thermal interface, not
a drain (blind14 N5: 83 C beside a 70 C median).  It is a recommendation on its own at
``hot_limit_c`` (past the GPU's maximum operating temperature: never routine) or with its
clock down (:func:`_hot_harm`), and the correlator recommends it when the GPU's rank is
slower than its peers (impact: ``Correlator._on_hot``).  Hot for its
power: a GPU's temperature is its inlet air plus its thermal resistance times its power,
lagged by its heat sink, so on a node whose GPUs carry unequal load (MIG slices, an inference
server beside training, ranks starting one by one) a busier GPU is warmer and no fault
(blind6 F1: two busy MIG slices at 360 W, 64 C, beside half-started GPUs at 49 C).  A GPU is
hot only when it is ``hot_delta_c`` over the node's median and over its mates' temperatures
moved to its power along the node's degrees per watt (``NodeTemps.for_power``; on an equally
loaded node the two are one), or at ``hot_gpu_c`` whatever its power.  A GPU
standing out before that (hot against the median, or half the margin up and warming faster
than its node) is ``hot_seen`` evidence, which holds a slow rank's page for the next sample
(:meth:`GpuThermal._check_warm`; not judged for power: one sample's wait, never a page).

Reasons (DCGM clock-event bits): 0x20 SW thermal and 0x40 HW thermal are
thermal; 0x4 SW power cap and 0x80 HW power brake are power; 0x8 HW slowdown
is thermal when the GPU is hot and power otherwise.
"""


from __future__ import annotations

import math

import msgspec
from river import stats

from detector import cadence
from detector.alerts import Scope
from detector.events import ThermalSample
from detector.findings import Finding
from detector.node_temps import (
    MAX_CLOCK_MHZ,
    MAX_POWER_W,
    OWN_BRAKES_MAX,
    TEMP_MAX_C,
    TEMP_MIN_C,
    NodeTemps,
    is_excess,
    is_mhz,
    is_reasons,
    is_temp,
)
from detector.statecodec import (
    is_bool,
    is_count,
    is_finite,
    is_signed_count,
    is_time,
    one_of,
    within,
)
from detector.thresholds import Thresholds
from detector.throttle import (
    APP_CLOCKS,
    CLOCK_RETELL,
    DEEP_CAP,
    GPU_IDLE,
    HW_POWER_BRAKE,
    HW_SLOWDOWN,
    MULTIPLE_LO,
    NO_REFERENCE,
    QUIET_BITS,
    SAME_INTERVAL_HI,
    SAME_INTERVAL_LO,
    SLOWDOWN_BITS,
    SW_POWER_CAP,
    brake_recurs,
    clock_finding,
    tell_clock,
    tells_interval,
    throttle_cause,
)
from detector.throttle import PAUSE_S as PAUSE_S  # (re-exported: the correlator's)
from models.decay import DecayingCount

# The most idle GPUs one ``gpus_busy`` finding names (a node's; an untrusted collector may
# report any number of GPU indices): the correlator takes a longer list as unknown.
MAX_IDLE_TOLD = 64

# Readings no GPU makes (review24): a temperature past any GPU's shutdown point (90-110 C) or
# below a cold aisle's, a board drawing more than any GPU's limit (B200 1 kW, a GB300 superchip
# 2.7 kW), an SM clock past any GPU's boost (under 3 GHz).  DCGM's blanks copied by a collector
# are all past them: INT32 0x7ffffff0 (a temperature, a clock), FP64 2**47 (power).  Such a
# value is no reading: taken as missing and counted (readable, GpuThermal.unread) -- a blank
# temperature read as 2e9 C was a thermal isolation of a healthy GPU; the sample's other
# fields stand (a GPU whose memory temperature is always blank keeps its throttle verdicts).
# (TEMP_MIN_C, TEMP_MAX_C, MAX_POWER_W and MAX_CLOCK_MHZ live in detector.node_temps: a
# restored NodeTemps is held to them too -- state38, svc39.)
# A GPU at HW slowdown (0x8) drawing under this share of its busy mates' median power has its
# draw down with its clock (GpuThermal._own_cause): not a draw too high.
DRAW_BELOW = 0.9
# A clock-event reason word with bits far above every reason NVML defines (0x1 idle .. 0x100
# display clock) is no bitmask a driver wrote: DCGM's INT32 / INT64 blank read as a mask sets
# 0x20, 0x40 and 0x80 -- every GPU with a 4 % clock dip under it was isolated "thermal".
MAX_THROTTLE = 1 << 16
# A poll of a GPU's brake that ends with one GPU's sample missing is in when this many GPUs
# free of any brake were in beside the braking one (GpuThermal._poll_in: a row lost is no
# brake of its; fewer free mates say too little of the node).
POLL_FREE_MIN = 2
# A GPU's application clocks (0x2) told alone wait for its mates' samples taken after its own
# or at most this long before it (one scrape of the node's GPUs): a setting made on the node
# between two of a poll's samples shows on the earlier ones a poll later (GpuThermal.update,
# ``brake_poll``; revA44 F4 on collectors querying the GPUs one by one).
APP_SCRAPE_S = 1.0


def readable(s: ThermalSample) -> tuple[ThermalSample, int]:
    """``s`` with the readings no GPU makes (see TEMP_MIN_C) taken as missing, and how many
    there were (``s`` itself when none).  (GpuThermal.quiet tests the same inline: it runs for
    every sample.)"""
    t, p, c, r = s.gpu_temp_c, s.power_w, s.sm_clock_mhz, s.throttle
    bad_t = t is not None and not TEMP_MIN_C <= t <= TEMP_MAX_C
    bad_p = p is not None and p > MAX_POWER_W
    bad_c = c is not None and c > MAX_CLOCK_MHZ
    bad_r = r is not None and r >= MAX_THROTTLE
    n = bad_t + bad_p + bad_c + bad_r
    if not n:
        return s, 0
    return (msgspec.structs.replace(s, gpu_temp_c=None if bad_t else t,
                                    power_w=None if bad_p else p,
                                    sm_clock_mhz=None if bad_c else c,
                                    throttle=None if bad_r else r), n)


__all__ = ["GpuThermal", "MAX_IDLE_TOLD", "NodeTemps", "PAUSE_S", "SAME_INTERVAL_HI",
           "SAME_INTERVAL_LO", "tells_interval", "throttle_cause"]


# Free busy mates a capped GPU's draw is compared with, at least (GpuThermal._below_mates): two,
# so that one mate's own lighter load is not the reference.
MATES_POWER_MIN = 2
# A GPU under a SW power cap (0x4 alone) drawing this share or more below the median of its
# node's busy GPUs free of any cap has a limit of its own below theirs (GpuThermal._below_mates;
# the correlator's _own_limit).  Free mates' draws wander 1-3 % sample to sample; a limit
# left low held blind32's GPUs 7-13 % below theirs.
LOW_LIMIT_SHARE = 0.05


def power_deficit(ev: dict) -> float:
    """How far below its free mates' draw a SW-capped GPU drew (``power_w`` against
    ``mates_power_w``, GpuThermal._below_mates), as a share; 0.0 when not told or not below."""
    own, mates = ev.get("power_w"), ev.get("mates_power_w")
    if type(own) not in (float, int) or type(mates) not in (float, int) or not (
            math.isfinite(own) and math.isfinite(mates)) or mates <= 0.0:
        return 0.0
    return max(0.0, 1.0 - own / mates)


class GpuThermal:
    """Throttle and cooling state of one GPU."""

    __slots__ = ("scope", "_clock", "_last_ts", "_bad", "_good", "_run_onset", "_active",
                 "_minor", "_node", "_hot", "_hot_onset", "_hot_active", "_cap", "_cap_onset",
                 "_heavy", "_heavy_onset", "_cap_active", "_interval_s", "_seen", "_prev_gap",
                 "_excess", "_warm", "_heat", "_quiet_bits", "_shared", "_beside",
                 "_clock_told", "_cap_clock", "_recur", "_recur_wait", "_recurred", "_warm_told",
                 "_low_told", "_brake", "_braked", "unread", "_grid", "_gap_lo", "_gap_hi",
                 "_routine")

    def __init__(self, node: str, gpu: int, cfg: Thresholds, node_temps: NodeTemps | None = None
                 ) -> None:
        self.scope = Scope.of_gpu(node, gpu)
        self._node = node_temps if node_temps is not None else NodeTemps()
        self._hot = 0
        self._hot_onset = 0.0
        self._hot_active = False
        self._excess = NO_REFERENCE  # degrees above the node's median on the last sample
        self._warm = 0  # 1: hot_seen told (standing out hot against its node), 0: not
        self._clock = stats.EWMean(fading_factor=cfg.clock_baseline_fading)
        self._last_ts = float("-inf")
        self._bad = 0
        self._good = 0
        self._run_onset = 0.0
        self._active = False
        self._minor = False  # a slowdown reason with a small clock dip: power management
        self._cap = DecayingCount(cfg.cap_half_life_s)  # samples held low by a SW power cap
        self._cap_onset = 0.0
        self._interval_s = 0.0  # sampling interval last reported to the correlator
        self._grid: list = []  # its rows' grid at that interval (detector.cadence; [] below
        #                        GRID_MIN_S or none told)
        self._gap_lo = self._gap_hi = 0.0  # the gaps a quiet sample may have (cadence.band)
        self._prev_gap = 0.0    # the gap before the latest sample (inf before the second)
        self._seen = 0          # the reasons told with a clock drop on the last sample (0: none)
        self._heavy = 0  # > 0: SW-power-cap samples in a row with a large dip; <= 0: since one
        self._heavy_onset = 0.0
        self._cap_active = False
        self._heat = 0  # > 0: samples in a row throttling thermally; < 0: samples since, while
        #                 the GPU is in its node's thermal fault (NodeTemps.heat_gpus)
        self._quiet_bits = 0  # what a sample's QUIET_BITS must be for quiet(): the latest's
        #                       GPU_IDLE (NodeTemps.idle), -1 while in NodeTemps.capping
        self._shared = False  # the throttle raised is a SW cap shared by the node's busy GPUs
        self._beside = False  # the hot run told as evidence only: a hotter sibling's, or not
        #                       harming yet (_check_hot, _hot_harm)
        self._clock_told = 0.0  # the busy clock with no reason last told (tell_clock), 0: none
        self._cap_clock = 0.0  # its busy clock under a SW power cap alone, averaged (0: none):
        #                        a never-routine reason's reference while it has no baseline
        self._recur: list[float] = []  # when its latest samples throttled thermally alone
        #   and hot against its mates (_recurs), within brake_repeat_s: throttle_samples at most
        self._recur_wait: list[float] = []  # [ts, temp, reasons] of a sample _recurs could
        #   not judge yet (its poll's other samples not in): judged on its next one
        self._recurred = False  # its throttle raised for recurring (_recurs): cleared once it
        #   has not recurred for brake_repeat_s
        self._warm_told = False  # its thermal reason told seen beside warm mates not shown
        #   steady (``node_warm``): told again once they are (_mates_shown_steady)
        self._low_told = False  # its minor SW cap told drawing LOW_LIMIT_SHARE below its free
        #                         mates (_below_mates): told once an episode
        self._brake: list[float] = []  # [reasons, clock, clock drop, power] of its latest
        #   sample with a never-routine power reason and its clock down (node.braking's)
        self._braked = False  # its throttle raised for its own brake recurring
        #   (_brakes_alone): cleared once it has not braked alone for brake_repeat_s
        self.unread = 0  # readings taken as missing: no GPU makes them (readable())
        self._routine = 0.0  # its busy clock under a SW power cap it shows on every loaded
        #   sample (no free-running baseline), from the samples not below it (0: none): what
        #   a minor cap's clock loss is measured against (_routine_drop)

    @property
    def last_ts(self) -> float:
        """Time of the newest sample of this GPU."""
        return self._last_ts

    @property
    def node_temps(self) -> NodeTemps:
        return self._node

    def has_open_fault(self) -> bool:
        """A throttle, heat or power-cap finding raised and not cleared."""
        return self._active or self._hot_active or self._cap_active

    def quiet(self, s: ThermalSample, cfg: Thresholds) -> bool:
        """Take the healthy sample: True when ``s`` was applied and could make no finding.

        The common case of :meth:`update`, which calls it first; the batch path of samples
        (detector.quiet) calls it alone.  It takes a late or duplicate sample (nothing to
        do) and one at the interval told last, with no slowdown reason, nothing raised and
        the GPU less than half the hot margin over its node's median: the clock baseline
        learns (unless the GPU idles), the runs count on.  False leaves
        the state for :meth:`update`'s general path, which does the same first: at most the
        node's temperature of this GPU stored and the node's median refreshed (again: the
        same value, a refresh no longer due at this ``ts``).
        """
        ts = s.ts
        last = self._last_ts
        if ts <= last:
            return True  # late or duplicate: state machines run on fresh samples only
        gap = ts - last
        if not (self._gap_lo <= gap <= self._gap_hi):
            return False  # maybe an interval to tell (tells_interval's first test), or a
            #              row off its grid (cadence.band)
        reasons = s.throttle or 0
        clock = s.sm_clock_mhz
        if reasons & QUIET_BITS != self._quiet_bits or self._active or self._cap_active \
                or self._seen or self._minor or self._warm or self._heat \
                or cfg.throttle_samples <= 0 or reasons >= MAX_THROTTLE \
                or (clock or 0.0) > MAX_CLOCK_MHZ or (s.power_w or 0.0) > MAX_POWER_W:
            return False  # (the last three and the temperature's: readable's, inline)
        if clock is not None and not reasons & GPU_IDLE:
            was = self._clock_told
            if was and abs(clock - was) >= CLOCK_RETELL * was:
                return False  # (a busy clock moved with no reason: told -- tell_clock)
        temp_c = s.gpu_temp_c
        if temp_c is not None:
            if self._hot or self._hot_active or not TEMP_MIN_C <= temp_c <= TEMP_MAX_C:
                return False
            node = self._node
            if node.pending or node.brake_poll or node.steady_wait:
                return False  # a sibling's sample to judge against (_check_warm), or one a
                #              GPU's brake (_poll_in) or its warm mates (_settle_steady) wait for
            excess = temp_c - node.take(s.gpu, temp_c, ts, s.power_w,
                                        1.0 - math.exp(-gap / cfg.thermal_tau_s),
                                        cfg.thermal_tau_s)
            if excess >= 0.5 * cfg.hot_delta_c:
                return False  # maybe warming faster than its node (_check_warm)
            self._excess = excess
        self._prev_gap = gap
        self._last_ts = ts
        if clock is not None and not reasons & GPU_IDLE:
            # river's own estimator, without EWMean.update's one-line Python frame around it
            # (a third of this path's cost; tests/test_engine_fastpaths.py pins it).
            self._clock._ewmean.update(clock)
        self._heavy = (self._heavy if self._heavy < 0 else 0) - 1  # (_power_cap's, no heavy)
        self._bad = 0
        self._good += 1
        return True

    def update(self, s: ThermalSample, cfg: Thresholds, out: list[Finding]) -> None:
        if self.quiet(s, cfg):
            return
        s, n = readable(s)
        self.unread += n
        # The general path: a sample that may raise or clear a signal.  It decides every
        # sample alike, quiet or not (tests/test_batch_samples.py runs it alone as quiet's
        # reference).
        ts = s.ts
        last = self._last_ts
        if ts <= last:
            return  # late or duplicate: state machines run on fresh samples only
        gap = ts - last
        prev = self._prev_gap
        self._prev_gap = gap
        if tells_interval(gap, self._interval_s, prev, MULTIPLE_LO):
            # How often this GPU is sampled, told once (and again if it changes a lot): at a
            # 10 or 30 s interval a slow rank is seen long before a throttle can be, and the
            # correlator waits one interval for it before paging a human.
            self._interval_s = gap
            self._grid = cadence.start(ts, gap, prev) if gap >= cadence.GRID_MIN_S else []
            self._gap_lo, self._gap_hi = cadence.band(gap, self._grid)
            out.append(Finding(ts, ts, "sampling", "slow_node", "unknown", self.scope, True,
                               False, 0.0, {"sample_interval_s": round(gap, 2)}, None,
                               s.tenant, s.cluster))
        elif self._grid and not self._gap_lo <= gap <= self._gap_hi and (
                told := cadence.retell(self._grid, self._interval_s, ts, gap)):
            # A row off the grid told (a collector's jitter, a cadence told from one gap):
            # told again, the phase this row, the interval its mean gap, with the jitter seen
            # -- a slow rank's wait for this GPU's next row ends after it (revA45 F3).  Only
            # a gap quiet() would not take: the two paths decide every sample alike.
            self._interval_s = told[0]
            self._gap_lo, self._gap_hi = cadence.band(told[0], self._grid)
            out.append(Finding(ts, ts, "sampling", "slow_node", "unknown", self.scope, True,
                               False, 0.0, {"sample_interval_s": told[0],
                                            "sample_jitter_s": told[1]}, None,
                               s.tenant, s.cluster))
        self._last_ts = ts
        temp_c = s.gpu_temp_c
        if temp_c is not None:
            node = self._node
            median = node.take(self.scope.gpu, temp_c, ts, s.power_w,  # type: ignore[arg-type]
                               1.0 - math.exp(-gap / cfg.thermal_tau_s), cfg.thermal_tau_s)
            if self._hot or self._hot_active or temp_c >= median + cfg.hot_delta_c:
                self._check_hot(s, temp_c, cfg, out)
            self._check_warm(s, temp_c, cfg, out)
            if node.pending:
                self._settle_warm(s, cfg, out)
            if node.steady_wait:
                self._settle_steady(s, cfg, out)
        bits = (s.throttle or 0) & SLOWDOWN_BITS
        clock = s.sm_clock_mhz
        base = self._clock.get()
        drop = 1.0 - clock / base if clock is not None and base > 0.0 else 0.0
        capped = heavy = False
        routine_drop = 0.0  # (a clock loss under a cap shown on every loaded sample: below)
        if bits != SW_POWER_CAP and self._node.cap_clocks:
            self._node.cap_clocks.pop(self.scope.gpu, None)  # type: ignore[arg-type]
        if not bits:
            if clock is not None and not self._active and not (s.throttle or 0) & (
                    GPU_IDLE | APP_CLOCKS):
                # (An idle GPU's parked clock is no baseline: five idle minutes at 345 MHz made
                # 1530 MHz under thermal slowdown no drop at all -- blind2 F4b.  Nor is a clock
                # its application clocks hold: blind33 F3, 1845 MHz learned as free.)
                if clock > base * (1.0 + cfg.clock_drop):
                    # A free clock this far above the baseline says the baseline is no free
                    # clock: learned from a parked clock whose sample lacked the idle bit (its
                    # job's first row, 345 MHz at 148 W), which the fading mean takes ~60
                    # samples to forget -- blind32 zb-s0: 1260 MHz against 1980 at the job's
                    # 17th sample, so z-08/3's cap to 1904 MHz read as no drop and no cap at
                    # all.  It starts again at this clock.
                    self._clock = stats.EWMean(fading_factor=cfg.clock_baseline_fading)
                self._clock.update(clock)
            bad = False
        elif bits & ~SW_POWER_CAP:
            bad = drop >= cfg.hw_clock_drop  # HW thermal/slowdown/brake, SW thermal: never routine
            if base <= 0.0 and clock is not None:
                ref = self._reference()[0]  # (no baseline: what its own cap or its
                bad = ref > 0.0 and 1.0 - clock / ref >= cfg.hw_clock_drop  # siblings' says)
        else:
            # A SW power cap is routine under load: a large dip is evidence (the correlator
            # asks whether the rank is slower), a long one a fault (a supply that can't keep up).
            bad = False
            heavy = drop >= cfg.clock_drop
            capped = drop >= cfg.cap_clock_drop
            if clock is not None and not (s.throttle or 0) & GPU_IDLE:
                was = self._cap_clock
                self._cap_clock = clock if was <= 0.0 else (
                    was + cfg.clock_baseline_fading * (clock - was))
                self._node.cap_clocks[self.scope.gpu] = clock  # type: ignore[index]
                if base <= 0.0:
                    routine_drop = self._routine_drop(clock, cfg)
            elif self._node.cap_clocks:
                self._node.cap_clocks.pop(self.scope.gpu, None)  # type: ignore[arg-type]
        if heavy or self._cap_active:
            self._power_cap(s, heavy, bits, drop, base, cfg, out)
        else:  # (_power_cap's common case, inline: this runs for every sample)
            self._heavy = (self._heavy if self._heavy < 0 else 0) - 1
        gpu: int = self.scope.gpu  # type: ignore[assignment]
        node = self._node
        idle = (s.throttle or 0) & GPU_IDLE
        if gpu not in node.gpus or (gpu in node.idle) != bool(idle):
            self._load_changed(s, gpu, bool(idle), out)
        if not bits and not idle and clock is not None:
            told = tell_clock(clock, self._clock_told)
            if told:
                self._clock_told = told
                out.append(clock_finding(s, self.scope))
        if heavy or (bits == SW_POWER_CAP and base <= 0.0):
            # Under a SW cap: how deep, unknown on a GPU capped on every loaded sample so far
            # (no clock baseline) -- under it all the same, not free, never alike (-inf).
            node.capping[gpu] = self._heavy_onset if heavy else NO_REFERENCE
            if heavy:
                node.cap_drop[gpu] = drop
            else:
                node.cap_drop.pop(gpu, None)
        elif node.capping:
            node.capping.pop(gpu, None)
            node.cap_drop.pop(gpu, None)
        if bits & SW_POWER_CAP:
            if gpu not in node.sw_cap:
                node.sw_cap[gpu] = s.ts
            self._quiet_bits = -1  # (its next sample updates the node's caps)
        else:
            if node.sw_cap:
                node.sw_cap.pop(gpu, None)
            self._quiet_bits = (s.throttle or 0) & (GPU_IDLE | APP_CLOCKS)
        # (Under a SW power cap too: a job's cap shows on its GPUs alike, one GPU's
        # application clocks on it alone -- blind33 F3's first sample after its slowdown, 0x6.)
        app = not bits & ~SW_POWER_CAP and not idle and bool((s.throttle or 0) & APP_CLOCKS)
        if app != (gpu in node.app_held):
            if app:
                node.app_held.add(gpu)
            else:
                node.app_held.discard(gpu)
        seen = ((drop >= cfg.hw_clock_drop or base <= 0.0) if bits & ~SW_POWER_CAP else
                bool(bits) and drop >= cfg.clock_drop or app and self._app_held())
        shown = bits | APP_CLOCKS if app and seen else bits  # (the reasons told holding it)
        # (A never-routine reason on a GPU with no clock baseline yet -- loaded straight from
        # idle into thermal slowdown -- is evidence by itself, as the brake's is below.)
        if (bad or (base <= 0.0 and bits & ~SW_POWER_CAP)) and bits & (
                HW_POWER_BRAKE | HW_SLOWDOWN) and self._cause(bits, s.gpu_temp_c, cfg) == "power":
            # (A GPU capped on every sample so far has no clock baseline to measure a drop
            # against: the reason alone says it, as it does on its siblings.)
            node.braking.add(gpu)  # type: ignore[arg-type]
            self._brake = [float(bits), clock or 0.0, round(drop, 3), s.power_w or 0.0]
        elif node.braking:
            node.braking.discard(gpu)  # type: ignore[arg-type]
        # (With the clock down, or with no baseline to measure it against: none yet, or one
        # below the clock -- learned at the idle clock; blind3 B3's rack had such GPUs at 0x24
        # and 87 C.  A clock trimmed 1 % under 0x20 is no more a node's fault than a GPU's:
        # review round 11.)
        heat = bool(bits & ~SW_POWER_CAP) and (
            bad or base <= 0.0 or drop <= -cfg.hw_clock_drop) and throttle_cause(
            bits, s.gpu_temp_c, cfg.hot_gpu_c) == "thermal"
        if heat or self._heat:
            self._node_heat(s, heat, bits, drop, cfg, out)
        seen_cause = node.seen_now() if node.braking or node.heating or node.app_held else ""
        if node.seen_cause != seen_cause or seen_cause and len(
                node.braking if seen_cause == "power" else node.heating
                if seen_cause == "thermal" else node.app_held) > node.seen_count:
            # The brake on two or more GPUs of the node at once (BRAKE_MIN_GPUS), or a thermal
            # reason on two or more (evidence, as throttle_seen is for a GPU): the correlator
            # takes a slow rank on any of them to the node.
            # (Told again as more GPUs brake or heat: the correlator takes to the node only the
            # slow ranks of GPUs it names -- a cool GPU's slow rank beside two hot ones, or
            # beside two braking, is its own.)
            # (Application clocks on two GPUs or more: one setting on the node, told as its
            # power -- the correlator names it the node's only while the job's other nodes
            # run free of such a setting; revA44 F4.)
            was, node.seen_cause = node.seen_cause, seen_cause
            gpus = (node.braking if seen_cause == "power" else node.heating
                    if seen_cause == "thermal" else node.app_held)
            node.seen_count = len(gpus) if seen_cause else 0
            clocks = seen_cause == "clocks"
            out.append(Finding(
                s.ts, s.ts, "throttle_seen", "slow_node",
                "power" if clocks or not seen_cause else seen_cause,
                Scope.of_node(self.scope.node), bool(seen_cause), False,  # type: ignore[arg-type]
                0.6 if seen_cause else 0.0,
                {"throttle_reasons": hex(APP_CLOCKS if clocks else bits),
                 "clock_drop": round(drop, 3), "gpus": sorted(gpus)} if seen_cause else {},
                None, s.tenant, s.cluster))
            if seen_cause == "power" and was != "power":
                self._brake_again(s, bits, cfg, out)
            elif was == "power" and node.brake_repeat:
                node.brake_repeat = False  # (the poll after a braked one: its brake let go)
                if not node.node_fault_open():
                    self._node_cleared(s, "power", out)
        told = (shown | DEEP_CAP if bits == SW_POWER_CAP and drop >= cfg.cap_clock_drop
                else shown) if seen else 0
        wait = node.steady_wait.pop(gpu, None) if node.steady_wait else None  # (its own
        #   sample: a wait for its poll's mates is over, judged or not -- _settle_steady)
        low = self._below_mates(s, bits) if seen and bits == SW_POWER_CAP and (
            told != self._seen or not self._low_told) else {}
        if told != self._seen or (told and power_deficit(low) >= LOW_LIMIT_SHARE):
            # (Told again, once, when its draw is first seen LOW_LIMIT_SHARE below its free
            # mates': its poll's earlier samples were capped too or not in yet -- a limit of its
            # own set low, correlate.power's _own_limit.)
            # One sample is evidence, not a verdict (that takes throttle_samples); with the
            # GPU's rank slower than its peers it explains the slowdown (for a SW power cap,
            # only as far as the clock loss does: see the correlator).  Told again when the
            # reasons change while seen: a routine SW cap (0x4) turning into thermal slowdown
            # (0x60) is a different explanation, and the correlator decides on the latest
            # (blind2 F4: a GPU capped on one sample, 84 C and 0x60 on the next, its slow
            # rank escalated 'unknown' against the stale 0x4).  And when a SW cap deepens
            # past cap_clock_drop: many nodes' caps deepening at once is facility power
            # management (the correlator's _facility_cap), told even on GPUs capped routinely.
            self._seen = told
            cause = ("power" if shown & APP_CLOCKS else self._cause(bits, s.gpu_temp_c, cfg)
                     ) if seen else "thermal"
            named = self._own_cause(cause, bits, s.power_w)
            told_ev = {"throttle_reasons": hex(shown), "clock_drop": round(drop, 3),
                       "gpu_temp_c": s.gpu_temp_c, **low} if seen else {}
            self._low_told = power_deficit(low) >= LOW_LIMIT_SHARE
            self._warm_told = False
            if seen and cause == "thermal" and self._waits_for_siblings(s, cfg, alone=False):
                # Its mates warm with it (not hot_delta_c below it) and not shown steady: its
                # node's cooling, maybe, their reasons a scrape slot or a few polls behind --
                # its slow rank's page waits for them a while from its run's first sample
                # (Correlator._heat_held; blind23 D1).
                told_ev["node_warm"] = True
                told_ev["throttling_since"] = round(
                    node.heating.get(gpu, s.ts), 3)  # type: ignore[arg-type]
                self._warm_told = True
                since = self._since(s)
                if not node.mates_in(gpu, s.ts, self._poll_s(), since):
                    # Its mates not heard on its poll yet (it was sampled before them): judged
                    # on their samples of it, as they come (_settle_steady).
                    node.steady_wait[gpu] = [s.ts, since, 0.0, float(bits), round(drop, 3),
                                             float(s.gpu_temp_c)]  # type: ignore[arg-type]
            elif seen and cause == "thermal":
                self._tell_steady(s, cfg, told_ev)
            out.append(Finding(
                s.ts, s.ts, "throttle_seen", "slow_node", named,
                self.scope, seen, False, 0.6 if seen else 0.0, told_ev, None, s.tenant,
                s.cluster))
            if seen and cause == "power" and (bits & (HW_POWER_BRAKE | HW_SLOWDOWN) or (
                    shown & APP_CLOCKS and node.seen_cause != "clocks")) and not (
                    node.node_braking()) and ts - node.brake_poll > self._poll_s():
                # (the correlator waits for the poll: _poll_in -- for application clocks,
                # whether its mates' samples show the same setting: the node's, revA44 F4.
                # Those are its mates' samples taken after its own or in its scrape
                # (APP_SCRAPE_S), not half an interval before, when the setting may not have
                # been made yet: the poll told as begun that much later.)
                within = self._poll_s()
                node.brake_poll = ts if bits & (HW_POWER_BRAKE | HW_SLOWDOWN) else (
                    ts + within - min(APP_SCRAPE_S, within))
        elif self._warm_told and seen and wait is not None and wait[2] > 0.0:
            self._warm_told = False  # (told steady on a sibling's sample: _settle_steady)
        elif self._warm_told and seen and len(node.heating) < 2 and (
                gpu not in node.heat_gpus) and self._mates_steady(s, cfg) is not None:
            # Told beside warm mates, which are now shown steady at their load: its own
            # heat -- told again, its slow rank's page no longer waiting for them (blind24
            # hbm: a cracked HBM pad's GPU throttling beside mates level at their load, paged
            # 68.5 s after its first 0x20 once the mates' history showed them so).
            self._warm_told = False
            told_ev = {"throttle_reasons": hex(bits), "clock_drop": round(drop, 3),
                       "gpu_temp_c": s.gpu_temp_c}
            self._tell_steady(s, cfg, told_ev)
            out.append(Finding(
                s.ts, s.ts, "throttle_seen", "slow_node", "thermal", self.scope, True, False,
                0.6, told_ev, None, s.tenant, s.cluster))
        if (self._bad == 1 and bits & HW_SLOWDOWN and not bits & (
                HW_POWER_BRAKE | SW_POWER_CAP) and gpu in node.braking
                and not node.node_braking() and ts - node.brake_poll > self._poll_s()):
            # (HW slowdown's second poll, still alone: the correlator holds its slow rank for
            # its siblings' samples of this poll too -- a board failing one GPU a poll.)
            node.brake_poll = ts
        if node.brake_poll:
            self._poll_in(s, cfg, out, last)
        if capped:
            if self._cap.value(s.ts) < 0.5:
                self._cap_onset = s.ts
            self._cap.add(s.ts, 1.0)
        if bad:
            if self._bad == 0:
                self._run_onset = s.ts
            self._bad += 1
            self._good = 0
            if self._recurred and self._bad >= cfg.throttle_samples:
                # Raised for recurring a sample or two into a run that is now as long as
                # any run raised: sustained in a row, so it ends as a run does, after
                # ``throttle_clear_samples`` clean samples -- not held ``brake_repeat_s``
                # past its last recurrence, a hold for bursts shorter than the sampling
                # interval (reporting corpus 36: GPU 2's heat, three runs of 3-11 1-s
                # samples, its second raised as recurring on its second sample, stood
                # 300 s after the GPU was back at its mates' temperature -- its node's page
                # still standing when another GPU's power brake came).
                self._recurred = False
        else:
            self._bad = 0
            if not capped:
                self._good += 1
        sustained = capped and self._cap.value(s.ts) >= self._cap_limit(cfg)
        recurring = self._recurs(s, bits if bad and heat else 0, cfg) if (
            bad and heat or self._recur_wait) else 0  # (the reasons it recurs with)
        if base <= 0.0 and bits == SW_POWER_CAP:
            drop = routine_drop  # (revA46 F12: _routine_drop)
        minor = (bool(bits) and not bad and not heavy and not sustained
                 and drop >= cfg.clock_drop / 5)
        low = self._below_mates(s, bits) if minor and (
            minor != self._minor or not self._low_told) else {}
        if minor != self._minor or (minor and power_deficit(low) >= LOW_LIMIT_SHARE):
            # Not a fault, but it explains a rank a few percent slower than its peers.  Told
            # again, once, when its draw is first seen LOW_LIMIT_SHARE below its free mates'
            # (its poll's earlier samples were capped or its mates' not in yet): a limit of
            # its own set low (correlate.power's _own_limit).
            self._minor = minor
            if minor:
                self._low_told = power_deficit(low) >= LOW_LIMIT_SHARE
            out.append(Finding(
                s.ts, s.ts, "throttle_minor", "slow_node",
                self._cause(bits, s.gpu_temp_c, cfg) if minor else "power",
                self.scope, minor, False, 0.2,
                {"throttle_reasons": hex(bits), "clock_drop": round(drop, 3), **low}
                if minor else {}, None, s.tenant, s.cluster))
        turn = self._brakes_alone(s, cfg) if not self._active else None
        braked = bool(turn)
        if not self._active and (self._bad >= cfg.throttle_samples or sustained or recurring
                                 or braked) and not (
                self._bad == cfg.throttle_samples and heat and self._waits_for_siblings(
                    s, cfg)):
            self._active = True
            self._good = 0
            if recurring and self._bad < cfg.throttle_samples:
                bits = recurring  # (on a sample judged late: the one it was judged for)
            else:
                recurring = 0
            self._recurred = bool(recurring)
            power_w = s.power_w
            if braked and not recurring and self._bad < cfg.throttle_samples and not sustained:
                # (Judged on a sample after its brake's, maybe: told as the brake's.)
                bits, clock, drop, power_w = int(self._brake[0]), *self._brake[1:]
            else:
                braked = False
            self._braked = braked
            polls, turn = turn if braked and turn else ([], [])
            never_routine = self._bad >= cfg.throttle_samples or recurring or braked
            onset = (self._recur[0] if recurring else polls[0] if braked else self._run_onset
                     if never_routine else self._cap_onset)
            under = ""
            if never_routine and base <= 0.0 and clock is not None:
                base, under = self._reference()
                drop = 1.0 - clock / base
            because = (f"never-routine thermal throttle reason recurring: its clock down "
                       f"{cfg.hw_clock_drop:.1%} or more on {len(self._recur)} samples within "
                       f"{cfg.brake_repeat_s:g} s, not in a row, each "
                       f"{0.5 * cfg.hot_delta_c:g} C or more above its node's median, none "
                       f"of its mates throttling: its own heat, sustained" if recurring else
                       f"never-routine power reason {hex(bits)} on {len(polls)} polls within "
                       f"{cfg.brake_repeat_s:g} s, each a burst of its own (no mate braking "
                       f"on its poll): its own power brake recurring, a burst seen standing "
                       f"for the bursts a {self._interval_s:g} s poll misses"
                       if braked and len(turn) == 1 else
                       f"never-routine power reason {hex(bits)} on {len(polls)} polls within "
                       f"{cfg.brake_repeat_s:g} s, GPUs {', '.join(map(str, turn))} of "
                       f"{self.scope.node} braking in turn, each alone on its poll: the "
                       f"node's power delivery braking them, not {len(turn)} GPU faults"
                       if braked else
                       f"never-routine throttle reason {hex(bits)}: clock {drop:.1%} below"
                       f"{under or ' baseline'} for {self._bad} samples" if never_routine else
                       f"SW power cap with clock loss sustained past the limit: >= "
                       f"{cfg.cap_clock_drop:.1%} below baseline on "
                       f"{self._cap.value(s.ts):.1f} recent samples (limit "
                       f"{self._cap_limit(cfg):.1f} at a {self._interval_s:g} s interval)")
            evidence = {"throttle_reasons": hex(bits), "sm_clock_mhz": clock,
                        "baseline_clock_mhz": round(base, 1), "clock_drop": round(drop, 3),
                        "gpu_temp_c": s.gpu_temp_c, "power_w": power_w,
                        "recommended_because": because}
            if under:
                evidence["baseline_under_cap"] = "own" if self._cap_clock > 0.0 else "siblings"
            cause = self._cause(bits, s.gpu_temp_c, cfg)
            own = True  # this GPU's verdict, or evidence of its node's brake
            if never_routine and (len(turn) > 1 or gpu in node.braking and (
                    node.brake_gpus or node.node_braking())):
                own = False
                if not node.brake_gpus:
                    gpus = turn if len(turn) > 1 else sorted(node.braking)
                    out.append(Finding(
                        s.ts, onset, "throttle", "slow_node", cause,
                        Scope.of_node(self.scope.node),  # type: ignore[arg-type]
                        True, True, min(0.95, 0.6 + drop * 2),
                        {**evidence, "gpus_braking": len(gpus), "gpus": gpus,
                         "recommended_because": (
                             f"never-routine power reason {hex(bits)} on {len(gpus)} GPUs "
                             f"of {self.scope.node} at once (GPUs "
                             f"{', '.join(map(str, gpus))}): one node fault (power supply or "
                             f"board), not {len(gpus)} GPU faults; {because}")},
                        None, s.tenant, s.cluster))
                node.brake_gpus.add(gpu)  # type: ignore[arg-type]
            elif gpu in node.heat_gpus:
                own = False  # evidence of its node's heat
            elif heat and self._waits_for_siblings(s, cfg, alone=False):
                evidence["node_warm"] = True  # its mates may throttle with it (_hold_heat)
            elif not never_routine:
                alike = node.cap_shared(gpu, self._heavy_onset, drop, s.ts, cfg.impact_onset_s,
                                        cfg.cap_clock_drop)
                evidence["gpus_under_cap"] = alike  # (the correlator compares the nodes:
                #   Correlator._node_cap; 1: the node's only busy GPU, its verdict unless
                #   another node's cap began with it)
                if alike > 1:
                    # The same cap on every busy GPU of the node, begun together: the node's
                    # or its rack's power limit lowered, not this GPU failing (blind3 B2) --
                    # or the node's own limit, when other nodes run free beside it.
                    own = False
                    self._shared = True
                    del evidence["recommended_because"]
                    evidence["not_recommended_because"] = (
                        f"the same SW power cap on every busy GPU of {self.scope.node} "
                        f"({alike}), begun within {cfg.impact_onset_s:.0f} s of each other: a "
                        f"node or rack power limit, not this GPU's fault; its rank slower than "
                        f"its peers, or its clock held down after theirs is back, would be "
                        f"({because})")
                elif not alike:
                    del evidence["gpus_under_cap"]
            out.append(Finding(s.ts, onset, "throttle", "slow_node",
                               self._own_cause(cause, bits, s.power_w) if own else cause,
                               self.scope, True,
                               own, min(0.95, 0.6 + drop * 2), evidence, None, s.tenant,
                               s.cluster))
        elif self._shared and (not heavy or not node.cap_shared(
                gpu, self._heavy_onset, drop, s.ts, cfg.impact_onset_s, cfg.cap_clock_drop)):
            # The node's cap no longer holds every busy GPU alike (or this one is back): the
            # shared cap is over.  A GPU still held down counts afresh, now on its own -- a
            # supply that cannot keep up is a clock loss sustained as an exception, and the
            # poll on which a cap lifts may find one GPU a sample behind its siblings.
            self._clear_throttle(s, out)
        elif self._active and self._good >= cfg.throttle_clear_samples and not (
                self._recurred and s.ts - self._recur[-1] <= cfg.brake_repeat_s) and not (
                self._braked and s.ts - self._braked_last(gpu) <= cfg.brake_repeat_s):
            self._clear_throttle(s, out)

    def _app_held(self) -> bool:
        """Whether a busy GPU's application clocks (0x2, no slowdown reason but the SW cap:
        NVML sets it when they limit the clock) hold it while most of its node's other busy
        GPUs run free of them: its clock a setting left on it alone, evidence that explains
        its slow rank (blind33 F3: the max-Q profile's application clocks left on one GPU
        after its job switched back to max-P, 1845 MHz beside mates at 1950, its TP group
        x1.08 -- escalated slow_node/unknown 8 of 8).  Not measured against its own
        baseline: held s6's GPU had learned 1,880 MHz (2 % over the held clock) under the
        job's cap.  A job's or a node's GPUs held alike are a clock policy (routine: no
        mate runs free)."""
        node = self._node
        return 2 * len(node.app_held) <= len(node.gpus) - len(node.idle)

    def _brakes_alone(self, s: ThermalSample, cfg: Thresholds
                      ) -> tuple[list[float], list[int]] | None:
        """Whether this GPU's own power brake recurs (throttle.brake_recurs): the polls it
        braked alone on (``NodeTemps.own_brakes``, recorded when each poll is in: _poll_in)
        and itself, or None -- never while its node's brake is seen or raised (that is the
        node's fault).

        GPUs of its node braking alone within ``brake_repeat_s`` of its latest such poll
        brake *in turn*: their polls counted together, and all of them named -- the node's
        power delivery (a supply or shelf braking the board's GPUs a few at a time), as two
        braking on one poll are (brake38's rule; revA44 F5: GPUs 3 and 5 braking on
        interleaved polls, never both on one, were a power page at each GPU).

        Judged on its samples from its latest braking one on: that poll is confirmed on its
        own sample (it came last) or on a mate's before its next, which is never the quiet
        path's (``_seen`` or ``brake_poll`` set)."""
        node = self._node
        gpu: int = self.scope.gpu  # type: ignore[assignment]
        own = node.own_brakes.get(gpu) if node.own_brakes else None
        if not (own and self._brake and not node.node_braking()
                and not node.node_fault_open()):
            return None
        window = cfg.brake_repeat_s
        turn = [g for g, polls in sorted(node.own_brakes.items())
                if g != gpu and polls and own[-1] - polls[-1] <= window
                and polls[-1] - own[-1] <= window]
        polls = sorted(t for g in [gpu, *turn] for t in node.own_brakes[g]) if turn else own
        if not brake_recurs(polls, s.ts, self._interval_s, cfg.throttle_samples, window):
            return None
        recent = [t for t in polls if s.ts - t <= window]
        return recent, sorted([gpu, *turn])

    def _braked_last(self, gpu: int) -> float:
        """The latest poll its raised brake stands on: its own, or, raised as its node's
        GPUs braking in turn (in ``brake_gpus``), any GPU's of the node braking alone."""
        node = self._node
        if gpu in node.brake_gpus:
            return max((p[-1] for p in node.own_brakes.values() if p), default=-math.inf)
        return node.own_brakes.get(gpu, [-math.inf])[-1]

    def _cause(self, bits: int, temp_c: float | None, cfg: Thresholds) -> str:
        """The cause a GPU's clock-event ``bits`` name (throttle_cause), except for HW power
        brake (0x80) on a GPU at ``hot_gpu_c`` or over while another GPU of its node throttles
        thermally: ``thermal``, the node's standing heat's, as 0x8 on a hot GPU is.

        A board asserts the brake for its supply, but a GPU that hot beside a heat already
        throttling its node names its cooling first: read as power it was paged so at 10 and
        30 s polls, where its brake's sample comes before its own heat verdict, and thermal at
        1 s polls, where the heat's came first -- the cause hung on the poll (revA37 F2: pure
        DP, GPU 2 at 90 C throttling 0x40, GPU 7 at 90 C braking 0x80).  Its findings say
        thermal and it joins no brake of the node's; nor does it count in the node's heat
        (detector.node_temps: ``heating``) -- its mates cool beside it, each hot GPU is its
        own, as at 1 s polls.  A cool GPU's 0x80 beside the heat stays power (return37: its
        board's, its own page)."""
        cause = throttle_cause(bits, temp_c, cfg.hot_gpu_c)
        if (cause != "power" or not bits & HW_POWER_BRAKE or bits & SW_POWER_CAP
                or temp_c is None or temp_c < cfg.hot_gpu_c):
            return cause
        heating = self._node.heating
        return "thermal" if len(heating) > (self.scope.gpu in heating) else cause

    def _own_cause(self, cause: str, bits: int, power_w: float | None) -> str:
        """The cause a GPU's own throttle names: ``cause`` (throttle_cause's), except for HW
        slowdown (0x8) with no other never-routine reason on a GPU that is not hot, at no
        power limit, none of its node's GPUs braking with it: ``gpu_hardware``.

        NVML's 0x8 is "temperature too high, external power brake, or power draw too high"
        (newer drivers report the first two apart as 0x40 / 0x80).  Heat is ruled out by its
        temperature (throttle_cause: under ``hot_gpu_c``); a node's supply or board braking
        sets it on the node's GPUs together (one of them braking beside it: ``power``, and
        every GPU of the node at once is the node's brake, raised at the node as before); a
        draw too high takes a load at the board's limit -- the GPU under its own SW power
        cap (0x4) on this sample or on every loaded sample so far, or most of its busy
        siblings under theirs now (blind19 O2: `dcgmi diag`'s targeted power) -- or its draw
        (``power_w``) not down below its busy mates' (DRAW_BELOW of their median): a GPU
        braking while it draws as hard as they do is its draw's excursion, a regulator holding
        its voltage down takes its power down with its clock (revA36 F3).  With none
        of these, one GPU slowed by its own hardware is left -- its voltage regulator, its
        board -- and its remedy is the GPU's (a reset, diagnostics, repair), not its power
        feed's (blind26 hwslow: a VRM fault, clock x0.78-0.84 and its power down with it,
        paged ``power``).  A cause only: the unit and the timing are the throttle's."""
        if cause != "power" or bits & (SW_POWER_CAP | HW_POWER_BRAKE) or not bits & HW_SLOWDOWN:
            return cause
        node = self._node
        gpu: int = self.scope.gpu  # type: ignore[assignment]
        if len(node.braking) > (gpu in node.braking):
            return cause  # (a sibling braking too: its node's supply or board, maybe)
        if self._clock.get() <= 0.0 and self._cap_clock > 0.0:
            return cause  # (busy only ever at its SW power cap: a load at its limit)
        busy = len(node.gpus) - len(node.idle) - (gpu not in node.idle)
        capped = len(node.sw_cap) - (gpu in node.sw_cap)
        if busy > 0 and 2 * capped > busy:
            return cause  # (its siblings' load at their limit: so is its own)
        idle = node.idle
        mates = sorted(p for g, p in node.raw.items() if g != gpu and g not in idle)
        if power_w is None or not mates or power_w >= DRAW_BELOW * mates[len(mates) // 2]:
            return cause  # (drawing as hard as its mates, or no draw to tell: power)
        return "gpu_hardware"

    def _recurs(self, s: ThermalSample, bits: int, cfg: Thresholds) -> int:
        """Whether a GPU's own thermal slowdown recurs: a sample throttling thermally with its
        clock down (``s``, its slowdown ``bits``; 0: not), none of its mates throttling
        thermally, and it half the hot margin (``hot_delta_c``) or more above its node's
        median is counted (``_recur``); ``throttle_samples`` such samples within
        ``brake_repeat_s`` recur: their latest's reasons (0: not).

        DESIGN: a never-routine reason sustained past a stated limit is a recommendation on
        its own.  A GPU throttling in bursts shorter than the sampling interval never shows
        ``throttle_samples`` samples in a row (blind24 T1: an inference server's GPU whose die
        heats too fast, 0x20 in 8 of its 25 30-s samples, its clock cut to 810-1350 MHz, up
        to 22 C over its seven mates under the same load, with no job and so no slow rank --
        never paged in 13 minutes); seen on as many samples within dcgm-exporter's 5-minute
        window for clock events (as the node's brake is: _brake_again), it is sustained.
        Its mates are the baseline: under the same load and air, not throttling and cooler,
        the heat is this GPU's -- a node whose cooling fails heats them with it (its heat:
        _node_heat), and a GPU warm with its mates is not counted.  The mates' samples of
        the same poll are the comparison (an inference node's load moves from poll to poll):
        a sample come before most of them is judged on the GPU's next sample, against the
        node's median then (refreshed on that poll's first sample: the earlier poll's)."""
        node = self._node
        gpu: int = self.scope.gpu  # type: ignore[assignment]
        margin = 0.5 * cfg.hot_delta_c
        counted: list[float] = []
        told = 0
        wait = self._recur_wait
        if wait:
            self._recur_wait = []
            if wait[1] - node.median_c >= margin:
                counted.append(wait[0])
                told = int(wait[2])
        temp_c = s.gpu_temp_c
        if bits and temp_c is not None and not node.heat_gpus and not any(
                g != gpu for g in node.heating):
            ref = node.poll_median(s.ts, self._poll_s())
            if ref is None:
                self._recur_wait = [s.ts, temp_c, float(bits)]
            elif temp_c - ref >= margin:
                counted.append(s.ts)
                told = bits
        if not counted:
            return 0
        recur = [t for t in self._recur if s.ts - t <= cfg.brake_repeat_s]
        recur.extend(counted)
        self._recur = recur[-cfg.throttle_samples:]
        return told if len(recur) >= cfg.throttle_samples else 0

    def recur_valid(self, cfg: Thresholds) -> str | None:
        """The first of the recurring rule's fields (_recurs) at odds with the rest or with
        ``cfg`` (None: sound) -- checked on restore after FIELDS (revB34 F3): it keeps
        ``throttle_samples`` counted samples at most, and a throttle raised for recurring is
        raised, on samples it counted."""
        if len(self._recur) > cfg.throttle_samples:
            return "_recur"
        if self._recurred and not (self._active and self._recur):
            return "_recurred"
        return None

    def _routine_drop(self, clock: float, cfg: Thresholds) -> float:
        """The clock loss of a busy GPU under a SW power cap alone that has shown it on every
        loaded sample (no free-running baseline), against the clock it holds under it
        routinely (``_routine``: a fading mean of its samples not ``clock_drop / 5`` below
        it, started afresh at a clock ``clock_drop`` above it); 0.0 on its first such sample.

        DESIGN: 0x4 at the board's limit is normal operation -- a fleet power limit (A100s
        at a site's limit, blind23's routine cap) shows it on every GPU at full clock.  Such
        a GPU had no clock to measure a cap's loss against, so a real cap's -3 % or -8 %
        under the same bit was never told (no ``throttle_minor``): a TP group it slowed was
        escalated unknown at its replica (revA46 F12, 7 of 7 TP2, 3 of 3 TP4/TP8; the same
        rows without the routine bit: power at the GPU).  Measured against its routine
        clock the loss is told as it is on a GPU that ran free -- evidence only (a minor
        cap, never ``heavy`` or sustained: a reference learnt under the reason is no free
        clock), which explains its rank's slowdown when the rank is slower than its peers."""
        ref = self._routine
        if ref <= 0.0 or clock > ref * (1.0 + cfg.clock_drop):
            self._routine = clock
            return 0.0
        drop = 1.0 - clock / ref
        if drop < cfg.clock_drop / 5:
            self._routine = ref + cfg.clock_baseline_fading * (clock - ref)
        return max(0.0, drop)

    def _reference(self) -> tuple[float, str]:
        """The clock a never-routine reason is measured against on a GPU with no baseline
        (busy only ever under a SW power cap, or from its first loaded sample under the
        reason), and the words that say so ((0.0, "") when there is none): the clock its own
        SW cap held it at, else the median of its siblings' under theirs on their latest
        samples (NodeTemps.sibling_cap_clock).  A cap only lowers a clock, so either is a
        floor under the clock the GPU runs free at: a drop below it is a drop (blind19 O2)."""
        if self._cap_clock > 0.0:
            return self._cap_clock, (" its clock under its own SW power cap (no free-running "
                                     "baseline: busy only ever at its limit)")
        ref, n = self._node.sibling_cap_clock(self.scope.gpu)  # type: ignore[arg-type]
        if ref <= 0.0:
            return 0.0, ""
        return ref, (f" the median clock of its {n} siblings under their SW power cap (no "
                     f"clock of its own: under the reason from its first loaded sample)")

    def _cap_limit(self, cfg: Thresholds) -> float:
        """The decayed count of capped samples that makes a SW cap's clock loss sustained:
        ``cap_samples``, or where the sampling interval ``dt`` makes that unreachable (the
        count of a GPU held down on every sample settles at 1 / (1 - 2**(-dt / half-life)):
        6.3 at dcgm-exporter's 30 s, review round 12 X1) 80 % of that -- the loss held on
        most samples for about 4.5 minutes (10 samples at 30 s, 15 at 20 s).  At 14 s or
        faster, ``cap_samples`` (~11 s at 1 Hz, ~140 s at 10 s)."""
        dt = self._interval_s
        if dt <= 0.0:
            return cfg.cap_samples
        return min(cfg.cap_samples, 0.8 / (1.0 - math.exp2(-dt / cfg.cap_half_life_s)))

    def _load_changed(self, s: ThermalSample, gpu: int, idle: bool, out: list[Finding]) -> None:
        """A GPU heard for the first time, or going idle (0x1) or loaded again: the node's idle
        set and when its load began (``NodeTemps.loaded``), and ``gpus_busy`` told when the
        node's having a busy GPU changes -- the correlator's view of which nodes run free
        beside one under a power cap (Correlator._node_cap) -- and, while it has one, when
        its idle GPUs change (``idle_gpus``): which of a job's GPUs wait busy for a lost peer
        where another job shares the node (detector.liveness._LayoutView)."""
        node = self._node
        was = gpu in node.idle
        node.gpus.add(gpu)
        if idle:
            node.idle.add(gpu)
        else:
            node.idle.discard(gpu)
            node.loaded[gpu] = s.ts
        busy = len(node.idle) < len(node.gpus)
        if busy != node.busy_told or (busy and was != idle):
            node.busy_told = busy
            out.append(Finding(s.ts, s.ts, "gpus_busy", "slow_node", "power",
                               Scope.of_node(self.scope.node),  # type: ignore[arg-type]
                               busy, False, 0.0,
                               {"idle_gpus": sorted(node.idle)[:MAX_IDLE_TOLD]} if busy
                               else {}, None, s.tenant, s.cluster))

    def _clear_throttle(self, s: ThermalSample, out: list[Finding]) -> None:
        """The GPU's throttle finding cleared (and its node's, when it was the last GPU of a
        node-wide brake)."""
        node = self._node
        gpu = self.scope.gpu
        self._active = False
        self._shared = False
        self._recurred = False
        self._braked = False
        self._cap.reset()
        if gpu in node.brake_gpus:
            node.brake_gpus.discard(gpu)  # type: ignore[arg-type]
            if not node.node_fault_open():  # the node's last braking GPU is back
                self._node_cleared(s, "power", out)
            own = False
        else:
            own = gpu not in node.heat_gpus
        out.append(Finding(s.ts, s.ts, "throttle", "slow_node", "thermal", self.scope, False,
                           own, 0.0, {}, None, s.tenant, s.cluster))

    def _waits_for_siblings(self, s: ThermalSample, cfg: Thresholds, alone: bool = True
                            ) -> bool:
        """Whether a GPU throttling thermally, alone on its node, waits one more sample before
        its own verdict: its siblings are warm too (it is not ``hot_delta_c`` above the node's
        median) and not shown steady at their load (:meth:`_mates_steady`), so they may be a
        sample or so from throttling with it -- one cooling fault.  (``alone=False``: warm
        siblings, whether or not another throttles already -- the verdict says so, and the
        correlator holds it for their samples of the same poll.)"""
        node = self._node
        temp_c = s.gpu_temp_c
        return ((len(node.heating) < 2 or not alone) and len(node.temps) >= 2
                and self.scope.gpu not in node.heat_gpus
                and temp_c is not None and temp_c < node.median_c + cfg.hot_delta_c
                and (len(node.heating) >= 2 or self._mates_steady(s, cfg) is None))

    def _mates_steady(self, s: ThermalSample, cfg: Thresholds) -> tuple[int, float] | None:
        """Its mates shown level at their load (NodeTemps.mates_steady): (how many, their
        largest rise), or None.  A node's cooling failing heats every GPU of it, the mates
        of the first to throttle climbing at an unchanged power; a GPU throttling beside
        mates that hold their temperature at their load for ``steady_history_s`` (two polls
        at least), half the hot margin or more below ``hot_gpu_c``, is its own fault -- its
        thermal interface, an HBM pad, its heat sink's fan -- and waits for them no longer
        (issue 10: blind24's hot HBM)."""
        return self._node.mates_steady(
            self.scope.gpu, s.ts, self._poll_s(),  # type: ignore[arg-type]
            max(cfg.steady_history_s, 2.0 * self._interval_s), cfg.steady_rise_c,
            cfg.hot_gpu_c - 0.5 * cfg.hot_delta_c, self._since(s))

    def _since(self, s: ThermalSample) -> float:
        """From when its mates' samples say how they stand beside its heat: the poll of the
        first sample of its run throttling thermally (half an interval before it), or of
        ``s``'s (revA35 2: their samples of the poll before may show them level while the
        node's cooling has just begun to fail)."""
        start = self._node.heating.get(self.scope.gpu, s.ts)  # type: ignore[arg-type]
        return min(start, s.ts) - self._poll_s()

    def _settle_steady(self, s: ThermalSample, cfg: Thresholds, out: list[Finding]) -> None:
        """Judge the GPUs whose thermal reason was told beside warm mates before those
        mates' samples of its poll came (``NodeTemps.steady_wait``), once three in four are
        in: shown level at their load (NodeTemps.mates_steady), the GPU's ``throttle_seen``
        is told again without ``node_warm`` -- its own heat, its slow rank's page no longer
        waiting -- as the GPU's own next sample would a whole interval later (blind24 hbm,
        revA35 10: paged at its first throttle's poll); not shown level, it waits as told.
        A poll that ends without them tells nothing (the GPU's next sample judges)."""
        node = self._node
        within = self._poll_s()
        history = max(cfg.steady_history_s, 2.0 * self._interval_s)
        for gpu, w in list(node.steady_wait.items()):
            if s.ts - w[0] > 4.0 * within:
                del node.steady_wait[gpu]  # (its own next sample missed: it judges anew)
                continue
            if w[2] or gpu == self.scope.gpu or not node.mates_in(gpu, s.ts, within, w[1]):
                continue
            steady = None if len(node.heating) >= 2 or gpu in node.heat_gpus else (
                node.mates_steady(gpu, s.ts, within, history, cfg.steady_rise_c,
                                  cfg.hot_gpu_c - 0.5 * cfg.hot_delta_c, w[1]))
            if steady is None:
                w[2] = -1.0
                continue
            w[2] = 1.0
            out.append(Finding(
                s.ts, s.ts, "throttle_seen", "slow_node", "thermal",
                Scope.of_gpu(self.scope.node, gpu), True, False, 0.6,  # type: ignore[arg-type]
                {"throttle_reasons": hex(int(w[3])), "clock_drop": w[4], "gpu_temp_c": w[5],
                 "mates_steady": steady[0], "mates_rise_c": round(steady[1], 1)},
                None, s.tenant, s.cluster))

    def _tell_steady(self, s: ThermalSample, cfg: Thresholds, ev: dict) -> None:
        """Say in ``ev`` that its mates are shown steady, when they are (the page's why)."""
        steady = self._mates_steady(s, cfg)
        if steady is not None:
            ev["mates_steady"] = steady[0]
            ev["mates_rise_c"] = round(steady[1], 1)

    def _node_heat(self, s: ThermalSample, heat: bool, bits: int, drop: float, cfg: Thresholds,
                   out: list[Finding]) -> None:
        """A sample of a GPU throttling thermally (``heat``), or of one that was: its node's
        thermal fault raised when it has throttled ``throttle_samples`` samples in a row with
        another GPU of the node throttling too, and cleared when its last GPU has not for
        ``throttle_clear_samples``."""
        node = self._node
        gpu: int = self.scope.gpu  # type: ignore[assignment]
        if not heat:
            node.heating.pop(gpu, None)
            if gpu not in node.heat_gpus:
                self._heat = 0
                return
            self._heat = min(self._heat, 0) - 1
            if -self._heat >= cfg.throttle_clear_samples:
                self._heat = 0
                node.heat_gpus.discard(gpu)
                if not node.node_fault_open():
                    self._node_cleared(s, "thermal", out)
            return
        self._heat = max(self._heat, 0) + 1
        if gpu not in node.heating:
            node.heating[gpu] = s.ts
        if (gpu in node.heat_gpus or self._heat < cfg.throttle_samples
                or len(node.heating) < 2):
            return
        if not node.node_fault_open():
            gpus = sorted(node.heating)
            temps = [node.temps.get(g) for g in gpus]
            median = node.median_c if node.median_c != float("inf") else None
            out.append(Finding(
                s.ts, min(node.heating.values()), "throttle", "slow_node", "thermal",
                Scope.of_node(self.scope.node),  # type: ignore[arg-type]
                True, True, min(0.95, 0.6 + max(drop, cfg.hw_clock_drop) * 2),
                {"throttle_reasons": hex(bits), "gpus_throttling": len(gpus),
                 "gpus_reporting": len(node.temps), "gpus": gpus, "gpus_temp_c": temps,
                 "node_median_c": median, "clock_drop": round(drop, 3),
                 "recommended_because": (
                     f"never-routine thermal reason ({hex(bits)}) on {len(gpus)} of "
                     f"{len(node.temps)} GPUs of {self.scope.node} at once (GPUs "
                     f"{', '.join(map(str, gpus))}): the node's cooling (its inlet air, its "
                     f"rack's cooling, its fans), not {len(gpus)} GPU faults; GPU {gpu} "
                     f"throttled for {self._heat} samples in a row")},
                None, s.tenant, s.cluster))
        node.heat_gpus.add(gpu)

    def _brake_again(self, s: ThermalSample, bits: int, cfg: Thresholds, out: list[Finding]
                     ) -> None:
        """The node's brake seen on a poll (two GPUs or more: a new run of them): when the
        last such run began within ``brake_repeat_s``, one ``throttle`` finding at node scope.

        A power supply or board that brakes in bursts shorter than the sampling interval
        never shows on ``throttle_samples`` samples in a row; at dcgm-exporter's 30 s a 6-14 s
        burst every 36-84 s falls in one poll in five or so (blind14 N3: gx-12's brake on 2
        polls of 15, its ranks 1.6x through every burst, nothing paged).  A HW power brake
        (0x80; 0x8 on a GPU that is not hot) on every GPU of a node at once is never routine
        (DESIGN), and seen twice within ``brake_repeat_s`` -- dcgm-exporter's own window for
        counting clock events -- it is sustained, not one sample's chance: a recommendation
        on its own, cleared on the next poll without it (the correlator holds the problem
        through its quiet time, and a brake seen again within the window returns to it)."""
        node = self._node
        last, node.brake_seen_ts = node.brake_seen_ts, s.ts
        if s.ts - last > cfg.brake_repeat_s or node.node_fault_open():
            return
        node.brake_repeat = True
        gpus = sorted(node.braking)
        out.append(Finding(
            s.ts, last, "throttle", "slow_node", "power",
            Scope.of_node(self.scope.node), True, True, 0.8,  # type: ignore[arg-type]
            {"throttle_reasons": hex(bits), "gpus_braking": len(gpus), "gpus": gpus,
             "brake_seen_ts": [round(last, 3), round(s.ts, 3)],
             "recommended_because": (
                 f"never-routine power reason {hex(bits)} on {len(gpus)} GPUs of "
                 f"{self.scope.node} on two polls {s.ts - last:.0f} s apart (limit "
                 f"{cfg.brake_repeat_s:g} s): its power supply or board braking in bursts "
                 f"the sampling interval catches now and then, not one sample's chance")},
            None, s.tenant, s.cluster))

    def _node_cleared(self, s: ThermalSample, cause: str, out: list[Finding]) -> None:
        """The node-scope throttle finding cleared: its last GPU is back at its clock."""
        out.append(Finding(s.ts, s.ts, "throttle", "slow_node", cause,
                           Scope.of_node(self.scope.node),  # type: ignore[arg-type]
                           False, True, 0.0, {}, None, s.tenant, s.cluster))

    def _power_cap(self, s: ThermalSample, heavy: bool, bits: int, drop: float, base: float,
                   cfg: Thresholds, out: list[Finding]) -> None:
        """Evidence of a SW power cap taking ``clock_drop`` or more: raised after
        ``throttle_samples`` such samples in a row, cleared after ``throttle_clear_samples``
        without."""
        if heavy:
            if self._heavy <= 0:
                self._heavy_onset = s.ts
                self._heavy = 0
            self._heavy += 1
            if self._heavy == cfg.throttle_samples and not self._cap_active:
                self._cap_active = True
                out.append(Finding(
                    s.ts, self._heavy_onset, "power_cap", "slow_node", "power", self.scope,
                    True, False, min(0.95, 0.6 + drop * 2),
                    {"throttle_reasons": hex(bits), "sm_clock_mhz": s.sm_clock_mhz,
                     "baseline_clock_mhz": round(base, 1), "clock_drop": round(drop, 3),
                     "gpu_temp_c": s.gpu_temp_c, "power_w": s.power_w,
                     **self._below_mates(s, bits)},
                    None, s.tenant, s.cluster))
            return
        self._heavy = min(self._heavy, 0) - 1  # negative: samples since the last heavy one
        if self._cap_active and -self._heavy >= cfg.throttle_clear_samples:
            self._cap_active = False
            out.append(Finding(s.ts, s.ts, "power_cap", "slow_node", "power", self.scope, False,
                               False, 0.0, {}, None, s.tenant, s.cluster))

    def _check_hot(self, s: ThermalSample, temp_c: float, cfg: Thresholds,
                   out: list[Finding]) -> None:
        """Hot against the node's median (the caller recorded ``temp_c`` and refreshed the
        median), or cooling down: a run counted, a finding raised or cleared."""
        node = self._node
        gpu: int = self.scope.gpu  # type: ignore[assignment]
        # Hot against its node, and for its power (NodeTemps.for_power: the median again
        # unless the node's load differs) -- or at its slowdown point whatever its power.
        hot = temp_c >= node.median_c + cfg.hot_delta_c and (
            temp_c >= cfg.hot_gpu_c
            or temp_c >= node.for_power(gpu, self._poll_s()) + cfg.hot_delta_c)
        if hot:
            if self._hot == 0:
                self._hot_onset = s.ts
            self._hot += 1
            node.hot.add(gpu)
        elif self._hot:
            self._hot = 0
            node.hot.discard(gpu)
        if hot and self._hot >= cfg.hot_samples and (not self._hot_active or self._beside):
            # A GPU hot beside a hotter sibling that is hot or throttling thermally too is
            # warmed by the same failing part (a fan module, its airflow): evidence of that
            # GPU's fault, not a second one -- until it throttles itself (then the node's
            # heat: _node_heat), or the sibling is no longer the hotter (blind5 E7: a fan
            # failing beside GPU 5, GPU 4 ~10 C up was a thermal isolation of its own).
            hotter = node.hotter_sibling(gpu)
            harm = _hot_harm(s, temp_c, self._clock.get(), cfg) if hotter is None else None
            if self._hot_active and harm is None:
                return  # (still evidence: told once)
            self._hot_active = True
            self._beside = harm is None
            evidence = {"gpu_temp_c": temp_c, "node_median_c": node.median_c,
                        "limit_above_median_c": cfg.hot_delta_c}
            if hotter is not None:
                evidence["hotter_gpu"] = hotter
                evidence["not_recommended_because"] = (
                    f"GPU {hotter} beside it is hotter ({node.temps.get(hotter)} C) and hot or "
                    f"throttling thermally itself: one cooling fault (a fan, the node's airflow) "
                    f"warming both, GPU {gpu} its evidence until it throttles itself")
            elif harm is None:
                # DESIGN (issue 10): a temperature is evidence.  A GPU hot against its node at
                # its full clock, no clock-event reason, below the temperature its firmware
                # starts to hold it at, costs the job nothing yet: a maintenance ticket (its
                # thermal interface, its heat sink), not a drain -- until its rank is slower
                # than its peers (the correlator's impact rule), the heat reaches hot_limit_c,
                # or its clock drops (blind14 N5: hx06/1 at 83 C beside a 70 C median, its
                # rank at its peers' pace, isolated with drain_node).
                evidence["not_recommended_because"] = (
                    f"{temp_c:g} C, {temp_c - node.median_c:.0f} C above its node's median, at "
                    f"its clock with no clock-event reason and below {cfg.hot_limit_c:g} C: "
                    f"evidence (its thermal interface or heat sink) until its rank is slower "
                    f"than its peers, its clock drops or it reaches {cfg.hot_limit_c:g} C")
            else:
                evidence["recommended_because"] = harm
            out.append(Finding(
                s.ts, self._hot_onset, "hot", "slow_node", "thermal", self.scope, True,
                harm is not None, 0.8 if harm is not None else 0.3, evidence, None, s.tenant,
                s.cluster))
        elif not hot and self._hot_active:
            self._hot_active = self._beside = False
            out.append(Finding(s.ts, s.ts, "hot", "slow_node", "thermal", self.scope, False, True,
                               0.0, {}, None, s.tenant, s.cluster))

    def _check_warm(self, s: ThermalSample, temp_c: float, cfg: Thresholds,
                    out: list[Finding]) -> None:
        """Evidence that a GPU stands out hot against its node (``hot_seen``): a reason for a
        slow rank's page to wait for the GPU's next sample, never a cause by itself.

        Temperature lags power.  When a job starts, a node's GPUs heat together for a minute
        or two, and one with a failing thermal interface first shows as *warming faster*:
        half the ``hot_delta_c`` margin over the node's median and a quarter of it more than
        on its last sample; then hot.  At DCGM's 30 s one sample is a long time, and
        ``hot_samples`` of them longer still, so a GPU standing out so (warming, or in a hot
        run that has not reached its verdict yet) holds its slow rank's escalation until
        the next sample says what it is: a thermal reason or the ``hot`` verdict (a cause),
        or the GPU back with its node (a human's).  Never more than that: one sample cannot
        tell a cooling fault from the node's own load step, because the node's median holds
        its other GPUs' samples of the *previous* poll until theirs of this one arrive, and
        the first GPUs sampled after a load step stand out by the whole node's rise (blind2
        superpod s02: 53 C against a stale 39 C, twice in a row during a job's warm-up, on a
        GPU slow for another reason).  The comparison stays with the node's own GPUs (the
        same inlet air): a rack's inlet gradient moves a node's GPUs together.
        """
        node = self._node
        gpu: int = self.scope.gpu  # type: ignore[assignment]
        if node.pending:
            told = node.pending.pop(gpu, None)
            if told is not None and told[3]:  # judged from a sibling's sample (_settle_warm)
                self._warm = int(told[3] > 0)
        excess = temp_c - node.median_c
        prev, self._excess = self._excess, excess
        standing = not self._hot_active and _stands_out(excess, prev, cfg)
        if standing:
            # Against the GPUs of its own poll only: the median may still hold most of its
            # siblings' previous samples (a load step heats the node as a whole, and the GPUs
            # sampled first would stand out by all of it).  Too few of them in yet: judged
            # when they are (_settle_warm), from a sibling's sample.
            ref = node.poll_median(s.ts, self._poll_s())
            if ref is None:
                node.pending[gpu] = [s.ts, temp_c, prev, 0, self._warm]
                return
            excess = self._excess = temp_c - ref
            standing = _stands_out(excess, prev, cfg)
        else:
            ref = node.median_c
        if not (standing or self._warm):
            return
        # Told again on every sample it stands out on: each is a reason to wait one more.
        self._warm = int(standing)
        out.append(_hot_seen(s, self.scope, standing, temp_c, ref, prev))

    def _poll_in(self, s: ThermalSample, cfg: Thresholds, out: list[Finding],
                 last: float) -> None:
        """Tell the correlator when the poll of a GPU's brake (``NodeTemps.brake_poll``) is in
        (``last``: this GPU's sample before ``s``).

        A power brake (0x80, or HW slowdown on a GPU that is not hot) is a reason a node's
        supply or board asserts on all its GPUs, so a slow rank on a GPU showing it waits for
        its siblings' samples of the same poll before it is paged at the GPU (the
        correlator's _throttle_impact) -- ``why_wait_s`` of the allowed disorder.  At
        dcgm-exporter's 30 s they come in the same scrape, with the same ts, right after it:
        the wait cost 3 steps on a third of the power faults of int30's seeds.  So once every
        GPU of the node has a sample of that poll (its temperature's time within half an
        interval of the brake's) and not every GPU brakes, ``poll_in`` says so, once.

        A poll that ends (a sample of the next one comes) with one GPU's sample missing --
        a collector's missed scrape -- is in all the same when at least two GPUs free of any
        brake were in beside the braking one and the missing one's latest sample was not
        braking: a row lost is no brake of its (revA44 F11: 5 % of the mates' rows lost at
        30 s polls, each poll missing one counted for nothing -- a GPU's own brake paged at
        810 s against 330 s).  Two or more missing (the scrape of a node late, a board
        resetting) tell nothing."""
        node = self._node
        first = node.brake_poll
        within = self._poll_s()
        lo = first - within
        times = node.times
        if s.ts > first + within:
            node.brake_poll = 0.0  # the next poll: whoever is not in was not in that one
            gpu = self.scope.gpu
            missing = [g for g in node.gpus
                       if (last if g == gpu else times.get(g, NO_REFERENCE)) < lo]
            if (len(missing) == 1 and missing[0] not in node.braking
                    and len(node.gpus) - len(node.braking) - 1 >= POLL_FREE_MIN):
                self._poll_done(s, first, cfg, out)
            return
        if any(times.get(g, NO_REFERENCE) < lo for g in node.gpus):
            return
        node.brake_poll = 0.0
        self._poll_done(s, first, cfg, out)

    def _poll_done(self, s: ThermalSample, first: float, cfg: Thresholds,
                   out: list[Finding]) -> None:
        """The poll of a GPU's brake begun at ``first`` is in (_poll_in): a GPU braking alone
        on it has a poll of its own brake's (``NodeTemps.own_brakes``); ``poll_in`` told."""
        node = self._node
        if node.node_braking():
            return  # (the node's brake is told: throttle_seen at node scope)
        if len(node.braking) == 1:  # (one GPU braking alone: a poll of its own brake's)
            alone = next(iter(node.braking))
            polls = [t for t in node.own_brakes.get(alone, ()) if first - t <= cfg.brake_repeat_s]
            polls.append(first)
            node.own_brakes[alone] = polls[-max(1, min(cfg.throttle_samples, OWN_BRAKES_MAX)):]
        out.append(Finding(
            s.ts, first, "poll_in", "slow_node", "power",
            Scope.of_node(self.scope.node),  # type: ignore[arg-type]
            True, False, 0.0, {"gpus": len(node.gpus), "gpus_braking": sorted(node.braking)},
            None, s.tenant, s.cluster))

    def _below_mates(self, s: ThermalSample, bits: int) -> dict[str, float]:
        """A SW power cap's sample (0x4 alone) beside what its node's other busy GPUs draw
        free of any cap: ``{"power_w", "mates_power_w"}`` (their median, sampled since its run
        of capped samples began), or {} when that is not known (no power, fewer than
        ``MATES_POWER_MIN`` such mates).

        Capped GPUs draw their limit and free ones less than theirs, so under one limit --
        the board's, a rack's or a site's cap -- a capped GPU draws as much as its free mates
        or more.  One capped *below* what its free mates draw has a lower limit than theirs:
        its own, set low (a power limit left at 460 W by a tool or a failed reset, blind32
        F1) -- the correlator's ``_own_limit`` reads it."""
        if bits != SW_POWER_CAP or s.power_w is None:
            return {}
        node, gpu = self._node, self.scope.gpu
        # Mates sampled free while it was capped (its run of 0x4 samples, from its poll on):
        # a cap reaching a row's GPUs on one poll finds the later-sampled mates' rows of the
        # poll before free, at their higher uncapped draw (blind21's demand-response caps).
        since = node.sw_cap.get(gpu, s.ts) - self._poll_s()  # type: ignore[arg-type]
        raw, times, idle, capped = node.raw, node.times, node.idle, node.sw_cap
        mates = sorted(w for g, w in raw.items() if g != gpu and g not in idle
                       and g not in capped and times.get(g, -math.inf) >= since)
        if len(mates) < MATES_POWER_MIN:
            return {}
        return {"power_w": float(s.power_w), "mates_power_w": mates[len(mates) // 2]}

    def _poll_s(self) -> float:
        """How far apart two samples of one poll of the node may be: half the interval."""
        return 0.5 * self._interval_s if self._interval_s > 0.0 else 0.5

    def _settle_warm(self, s: ThermalSample, cfg: Thresholds, out: list[Finding]) -> None:
        """Judge the node's GPUs waiting for their poll's samples (``NodeTemps.pending``)
        once most of them are in: ``hot_seen`` told (or cleared) for that GPU now.  A poll
        that ends without most of the node (a sibling silent) tells nothing."""
        node = self._node
        within = self._poll_s()
        for gpu, p in list(node.pending.items()):
            if p[3]:  # judged: waits for its GPU's next sample (two intervals at most: a
                if s.ts - p[0] > 4.0 * within:  # GPU gone quiet keeps no node off quiet())
                    del node.pending[gpu]
                continue
            ts, temp_c, prev, _, warm = p
            ref = node.poll_median(ts, within)
            if ref is None:
                if s.ts - ts > within:
                    del node.pending[gpu]
                continue
            standing = _stands_out(temp_c - ref, prev, cfg)
            p[3] = 1 if standing else -1
            if standing or warm:
                out.append(_hot_seen(s, Scope.of_gpu(self.scope.node, gpu),  # type: ignore[arg-type]
                                     standing, temp_c, ref, prev))


def _is_scope(x: object) -> bool:
    return type(x) is Scope and x.level == "gpu"


def _clock_baseline(x: object) -> bool:
    """A clock baseline: river's EWMean of clocks readable() keeps (0..MAX_CLOCK_MHZ)."""
    return type(x) is stats.EWMean and is_mhz(x.get())


# Each field's check on snapshot restore (Monitors.check_restored; review25: only ``unread``
# was checked -- review24's -- and a forged string in any other failed the GPU's next sample).
# svc39: each held to what the live code keeps, as NodeTemps' are (state38): times finite
# (-inf for ``_last_ts``, "none yet"), counts from 0 (``_heavy`` and ``_heat`` count down
# too), a flag one of its values, clocks within MAX_CLOCK_MHZ, ``_excess`` a temperature's
# span or -inf, the interval below PAUSE_S, the gap >= 0 (inf before the second sample), the
# reasons told a subset of the slowdown bits.  A forged ``_last_ts`` of +inf took every later
# sample as late (the GPU blind), a ``_bad`` of -10^9 held its throttle a billion samples, an
# infinite clock baseline read every clock as a 100 % drop, a zero half-life divided by zero.
_SEEN_BITS = SLOWDOWN_BITS | DEEP_CAP | APP_CLOCKS
_BRAKE_DROP, _BRAKE_W = within(0.0, 1.0), within(0.0, MAX_POWER_W)  # (a brake's drop: its
#   clock hw_clock_drop or more down, or 0.0 with no baseline to measure it against)
FIELDS = {
    "scope": _is_scope, "_clock": _clock_baseline,
    "_last_ts": is_time, "_bad": is_count, "_good": is_count, "_run_onset": is_finite,
    "_active": is_bool, "_minor": is_bool, "_node": lambda x: type(x) is NodeTemps,
    "_hot": is_count, "_hot_onset": is_finite, "_hot_active": is_bool,
    "_cap": lambda x: type(x) is DecayingCount and x.restored_ok(), "_cap_onset": is_finite,
    "_heavy": is_signed_count,
    "_heavy_onset": is_finite, "_cap_active": is_bool, "_interval_s": within(0.0, PAUSE_S),
    "_seen": lambda x: is_count(x) and not x & ~_SEEN_BITS,
    "_prev_gap": lambda x: type(x) in (float, int) and x >= 0,  # (NaN fails)
    "_excess": is_excess, "_warm": one_of(0, 1), "_heat": is_signed_count,
    "_quiet_bits": one_of(-1, 0, GPU_IDLE, APP_CLOCKS, GPU_IDLE | APP_CLOCKS),
    "_shared": is_bool, "_beside": is_bool,
    "_clock_told": is_mhz, "_cap_clock": is_mhz,
    "_recur": lambda x: type(x) is list and all(map(is_finite, x)) and x == sorted(x),
    "_recur_wait": lambda x: type(x) is list and (not x or len(x) == 3 and is_finite(
        x[0]) and is_temp(x[1]) and is_reasons(x[2]) and x[2] > 0),
    "_recurred": is_bool, "_warm_told": is_bool, "_low_told": is_bool,
    "_brake": lambda x: type(x) is list and (not x or len(x) == 4 and is_reasons(x[0]) and (
        x[0] > 0 and is_mhz(x[1]) and _BRAKE_DROP(x[2]) and _BRAKE_W(x[3]))),
    "_braked": is_bool,
    "unread": is_count,
    "_grid": cadence.check_restored,
    "_gap_lo": within(0.0, 2.0 * PAUSE_S), "_gap_hi": within(0.0, 2.0 * PAUSE_S),
    "_routine": is_mhz,
}
assert set(FIELDS) == set(GpuThermal.__slots__)


def _hot_harm(s: ThermalSample, temp_c: float, base: float, cfg: Thresholds) -> str | None:
    """Why a GPU hot against its node's others is a recommendation on its own, or None (then
    it is evidence): at ``hot_limit_c`` or above -- past the GPU's maximum operating
    temperature, a couple of degrees short of the firmware's slowdown: never routine -- or
    its SM clock ``hw_clock_drop`` below its baseline while busy -- unless the only reason
    set is the SW power cap (0x4) and the loss is under ``cap_clock_drop``: a board at its
    power limit trims its clock a few percent as routine (DESIGN), and the busiest GPU of a
    serving node, an MoE hot expert or a pipeline's last stage draws the most watts, runs the
    warmest at the same degrees per watt as its mates and sits at the cap -- hot for its load,
    not for its cooling (blind27 F1: 13 C over its node's median at 700 W beside mates at
    450-570 W, clock -1.5 % under 0x4, isolated thermal).  A cap holding it deeper is past
    routine capping, as the power-cap rule says.

    >>> cfg = Thresholds()
    >>> s = ThermalSample(0.0, "n", 1, 83.0, None, 600.0, 1980.0, 0)
    >>> _hot_harm(s, 83.0, 1980.0, cfg) is None
    True
    >>> _hot_harm(s, 85.0, 1980.0, cfg) is None
    True
    >>> _hot_harm(s, 88.0, 1980.0, cfg)
    'hot and at 88 C, at or above 87 C: never routine'
    >>> _hot_harm(ThermalSample(0.0, "n", 1, 83.0, None, 600.0, 1900.0, 0), 83.0, 1980.0, cfg)
    'hot with its clock 4.0% below its baseline (1980 MHz)'
    >>> _hot_harm(ThermalSample(0.0, "n", 1, 83.0, None, 700.0, 1900.0, 0x4), 83.0, 1980.0,
    ...           cfg) is None
    True
    """
    if temp_c >= cfg.hot_limit_c:
        return f"hot and at {temp_c:g} C, at or above {cfg.hot_limit_c:g} C: never routine"
    clock = s.sm_clock_mhz
    reasons = s.throttle or 0
    if clock is None or base <= 0.0 or reasons & GPU_IDLE:
        return None
    drop = 1.0 - clock / base
    if drop >= (cfg.cap_clock_drop if reasons & SLOWDOWN_BITS == SW_POWER_CAP
                else cfg.hw_clock_drop):
        return f"hot with its clock {drop:.1%} below its baseline ({base:.0f} MHz)"
    return None


def _stands_out(excess: float, prev: float, cfg: Thresholds) -> bool:
    """Hot against its node (``excess`` over the median), or half the margin up and warming
    a quarter of it faster than the node since the sample before (``prev``)."""
    half = 0.5 * cfg.hot_delta_c
    return excess >= cfg.hot_delta_c or (
        excess >= half and prev > NO_REFERENCE and excess - prev >= 0.5 * half)


def _hot_seen(s: ThermalSample, scope: Scope, standing: bool, temp_c: float, ref: float,
              prev: float) -> Finding:
    excess = temp_c - ref
    return Finding(
        s.ts, s.ts, "hot_seen", "slow_node", "thermal", scope, standing, False,
        0.3 if standing else 0.0,
        {"gpu_temp_c": temp_c, "node_median_c": ref, "above_median_c": round(excess, 1),
         "rise_over_median_c": round(excess - prev, 1) if prev > NO_REFERENCE else None}
        if standing else {}, None, s.tenant, s.cluster)
