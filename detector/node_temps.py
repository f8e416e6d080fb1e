"""The state a node's GPUs share: their temperatures and median, a brake, a heat fault and a
SW power cap held by every busy GPU (detector.thermal judges each GPU against these)."""

from __future__ import annotations

import sys
from bisect import bisect_left, bisect_right
from collections.abc import Callable
from typing import Any

from detector.events import INDEX_LIMIT
from detector.statecodec import (
    is_bool,
    is_count,
    is_finite,
    is_int_set,
    is_time,
    list_of,
    one_of,
    within,
)
from detector.throttle import NO_REFERENCE

# Readings no GPU makes (detector.thermal.readable takes them as missing, so NodeTemps never
# holds one; a restored NodeTemps is held to them: FIELDS): a temperature past any GPU's
# shutdown point or below a cold aisle's, a board drawing more than any GPU's limit.
TEMP_MIN_C, TEMP_MAX_C = -40.0, 150.0
MAX_POWER_W = 5000.0
MAX_CLOCK_MHZ = 10000.0  # (detector.thermal's comment says why; a restored clock is held to it)
# The most a mean square move (NodeTemps.noise) of temperatures within those bounds can be.
MAX_NOISE = (TEMP_MAX_C - TEMP_MIN_C) ** 2

# A GPU not sampled for this many of its node's polls is not waited for by a poll's median
# (NodeTemps.poll_median): a collector that lost one sample is still heard; one off the bus
# for a minute and a half at dcgm-exporter's 30 s is not.
HEARD_POLLS = 3

# A GPU's temperature is its inlet air plus its thermal resistance times its power (lagged by
# the heat sink: NodeTemps.power), so on a node whose GPUs carry unequal load (MIG slices, an
# inference server beside training, ranks starting one by one) temperature differs with the
# load.  Two GPUs' powers this far apart (x1.25: more than one model's board-to-board spread,
# 580-670 W at one load) tell the node's degrees per watt; a slope above MAX_C_PER_W (a
# passively cooled H100 PCIe ~0.13 C/W) is not air cooling but a fault among the mates.
LOAD_RATIO = 1.25
MAX_C_PER_W = 0.25
FIT_GPUS = 32  # more GPUs on one node than this: no fit (its pairs grow as n^2)
STEADY = 0.1   # a GPU whose power is within this share of its low-passed power holds its heat
# A GPU's level at its load (NodeTemps.calm): its temperature is compared with the one it had
# this long ago at most (half of it at least, once its load has held that long) -- a
# reference old enough to show a slow climb, young enough that a day's inlet drift is not one.
CALM_SPAN_S = 300.0
# A temperature still moving by more than this a sample within ``settle_s`` of its load's
# change is following that load (a temperature lags its power), not yet its level at it: an
# integer reading's step.
SETTLED_STEP_C = 1.0
# A GPU's mates moved this much on average since their previous samples are climbing, however
# little they have risen in all (NodeTemps.mates_steady): a node's cooling failing fast moves
# every GPU of it a degree or more a poll, while mates level at their load flicker about their
# integer reading (+1 on one, -1 or 0 on another: revA35 2).
LEVEL_STEP_C = 0.5
# Mates are judged level over the polls since the throttling GPU's run began, up to this many
# (NodeTemps.mates_steady): one poll's move of a noisy sensor (+-0.5-1 C a reading) cannot
# tell a node beginning to climb a degree a poll from one flickering about its level; three
# can (revA36 F5).
LEVEL_POLLS = 3
# How far (in standard errors of the mates' own moves, NodeTemps.noise) their rise must stay
# below the climb of a failing cooling (2 x LEVEL_STEP_C a poll) to show them level.
LEVEL_Z = 3.0
# GPUs of one node with a never-routine power reason (0x80 HW power brake; 0x8 HW slowdown on a
# GPU that is not hot) on their latest samples at once that make the brake the node's: two.
# Power brake is a signal the node's baseboard asserts (a power supply lost or failing, the
# BMC's brake line, a board regulator feeding several GPUs); a GPU's own part (its VRM, its
# board) slows that GPU alone, and two GPUs failing so independently within one poll does not
# happen as a routine shape -- the same count therm36's rule takes for the node's heat.  Idle
# GPUs (0x1, a parked clock) and GPUs running free are not asked: an idle GPU has no clock for a
# brake to take (blind28 F3: seven busy GPUs braking under four tenants' jobs, the eighth idle,
# read as seven GPU faults), and a board failing shows on one GPU after another (revA37 F3:
# 0x8 spreading one GPU a poll was 7 pages).  0x4 (SW power cap) is never a brake: a
# node-wide cap is power management (detector.correlate.power).
BRAKE_MIN_GPUS = 2
# The most polls of a GPU braking alone a snapshot may hold (NodeTemps.own_brakes keeps
# throttle_samples of them).
OWN_BRAKES_MAX = 64
# The weight of a sample's move in a GPU's mean square move while settled at its load
# (NodeTemps.noise): ~10 samples.
NOISE_SHARE = 0.1


class NodeTemps:
    """Latest temperature of each GPU of one node, and their median refreshed once a second.

    GPUs of one node share their inlet air, so one GPU far hotter than its siblings *at its
    power* has a cooling problem (a failed thermal interface, a blocked fan) well before it
    throttles; a load change moves all of them together, and a busier GPU is warmer by the
    node's degrees per watt (``for_power``).
    """

    __slots__ = ("temps", "median_c", "median_ts", "braking", "brake_gpus", "seen_cause",
                 "heating", "heat_gpus", "seen_count", "idle", "capping", "peers_ts", "peers",
                 "times", "pending", "gpus", "cap_drop", "sw_cap", "loaded", "busy_told",
                 "cap_depth", "cap_busy", "hot", "power", "fits", "raw", "brake_seen_ts",
                 "brake_repeat", "cap_clocks", "brake_poll", "calm", "back", "noise", "steady_wait",
                 "own_brakes", "app_held")

    def __init__(self) -> None:
        self.gpus: set[int] = set()  # every GPU heard from (temperature or not: DESIGN makes
        #                              gpu_temp_c optional -- review round 12 P3)
        self.temps: dict[int, float] = {}
        self.times: dict[int, float] = {}  # GPU -> time of its latest temperature (``temps``)
        self.back: dict[int, list[float]] = {}  # GPU -> its temperatures on the samples
        #   before its latest, LEVEL_POLLS at most, oldest first
        self.noise: dict[int, float] = {}  # GPU -> the mean square of its temperature's move
        #   sample to sample (weight NOISE_SHARE): its sensor's noise and its load's wander
        self.steady_wait: dict[int, list[float]] = {}  # GPU -> [ts, since, state, reasons,
        #   clock drop, temp_c]: its thermal reason told beside warm mates (``node_warm``)
        #   before their samples of its poll (from ``since`` on) were in -- its mates judged
        #   level or not on a sibling's sample once they are (GpuThermal._settle_steady;
        #   state 0: not yet, 1: told steady, -1: not shown steady)
        self.pending: dict[int, list[float]] = {}  # GPU -> [ts, temp_c, excess before, state,
        #   hot_seen told before]: a GPU standing out against a median of mostly the previous
        #   poll, judged once most of its siblings' samples of its poll are in (state 0:
        #   not yet; 1: hot_seen told, -1: not standing out) -- GpuThermal._check_warm
        self.median_c = float("inf")
        self.median_ts = float("-inf")
        self.braking: set[int] = set()     # GPUs whose latest sample had a never-routine power
        #                                    reason with its clock down (0x80, 0x8 while cool)
        self.brake_gpus: set[int] = set()  # GPUs in the node's brake raised at node scope
        self.brake_seen_ts = float("-inf")  # when the brake on every GPU was last seen anew
        self.brake_repeat = False          # the node's brake raised for being seen again
        #                                    within brake_repeat_s (GpuThermal._brake_again)
        self.brake_poll = 0.0  # the ts of a poll whose sample of a GPU told a brake while
        #   the node's others did not: its siblings' samples of that poll are watched for
        #   until every GPU's is in (GpuThermal._poll_in); 0.0: none
        self.own_brakes: dict[int, list[float]] = {}  # GPU -> the polls (their first sample's
        #   ts) it braked alone on, its mates' samples in and none braking, newest last:
        #   within brake_repeat_s, throttle_samples at most (GpuThermal._brakes_alone)
        self.app_held: set[int] = set()  # busy GPUs whose latest sample showed application
        #   clocks (0x2, throttle.APP_CLOCKS) and no slowdown reason
        self.heating: dict[int, float] = {}  # GPU -> onset of its run of samples with a
        #                                      never-routine thermal reason
        self.heat_gpus: set[int] = set()   # GPUs in the node's thermal fault raised at node scope
        self.hot: set[int] = set()         # GPUs hot against the node on their latest sample
        self.seen_cause = ""               # the node-wide throttle told as seen: "power" (every
        #                                    GPU braking), "thermal" (>= 2 heating), "clocks"
        #                                    (>= 2 held by application clocks) or "" (none)
        self.seen_count = 0                # GPUs it named (told again when more heat)
        self.idle: set[int] = set()        # GPUs whose latest sample was idle (0x1)
        self.capping: dict[int, float] = {}  # GPU -> onset of its run of samples with only a
        #                                      SW power cap set and the clock clock_drop down
        self.cap_drop: dict[int, float] = {}  # GPU in ``capping`` -> its latest clock drop
        self.sw_cap: dict[int, float] = {}  # GPU -> onset of its run of samples with 0x4 set,
        #                                     at any depth (a light stage under a rack cap)
        self.loaded: dict[int, float] = {}  # GPU -> when its load last began (its first
        #                                     sample, or its first after idle)
        self.busy_told = False             # a busy GPU on the node told (``gpus_busy``)
        self.peers_ts = float("-inf")      # when ``peers`` was last counted (once a second)
        self.peers: list[float] = []       # onsets of the busy GPUs' caps, by time, when
        #                                    every busy GPU is under the cap ([] if one runs free)
        self.cap_depth = 0.0               # the median clock drop of those GPUs (upper)
        self.cap_busy = 0                  # how many busy GPUs the node had then
        self.power: dict[int, float] = {}  # GPU -> its power low-passed with the heat sink's
        #                                    time constant (W): what its temperature follows
        self.fits: dict[int, float] = {}   # GPU -> its temperature expected at its power
        #                                    (for_power), until the median's next refresh
        self.raw: dict[int, float] = {}    # GPU -> its latest sample's power (W): within
        #                                    STEADY of ``power``, its temperature settled at it
        self.cap_clocks: dict[int, float] = {}  # GPU -> its clock on its latest sample, when
        #   that was busy under a SW power cap alone (0x4): the reference of a sibling with a
        #   never-routine reason and no clock of its own to judge it by (sibling_cap_clock)
        self.calm: dict[int, list[float]] = {}  # GPU -> [power, start, ts_a, temp_a, ts_b,
        #   temp_b, heat]: the draw its current run of samples began at, when the run began,
        #   two of the run's samples once its temperature settled, ``a`` CALM_SPAN_S / 2 to
        #   CALM_SPAN_S old once the run is (mates_steady), and its low-passed power (``power``)
        #   then.  The run holds while its draw is within STEADY of the first or its low-passed
        #   power within STEADY of the last: that sets the temperature (revA35 10)

    def forget(self, gpu: int) -> bool:
        """Drop a GPU no longer heard from; True when the node has none left."""
        self.gpus.discard(gpu)
        self.cap_drop.pop(gpu, None)
        self.cap_clocks.pop(gpu, None)
        self.sw_cap.pop(gpu, None)
        self.loaded.pop(gpu, None)
        self.temps.pop(gpu, None)
        self.times.pop(gpu, None)
        self.back.pop(gpu, None)
        self.noise.pop(gpu, None)
        self.steady_wait.pop(gpu, None)
        self.power.pop(gpu, None)
        self.fits.pop(gpu, None)
        self.raw.pop(gpu, None)
        self.calm.pop(gpu, None)
        self.pending.pop(gpu, None)
        self.idle.discard(gpu)
        self.capping.pop(gpu, None)
        self.braking.discard(gpu)
        self.own_brakes.pop(gpu, None)
        self.app_held.discard(gpu)
        self.heating.pop(gpu, None)
        self.heat_gpus.discard(gpu)
        self.hot.discard(gpu)
        return not self.gpus

    def hotter_sibling(self, gpu: int) -> int | None:
        """A GPU of the node hotter than ``gpu`` on their latest samples and itself hot against
        the node or throttling thermally: the part failing beside ``gpu`` (None: none)."""
        own = self.temps.get(gpu)
        if own is None:
            return None
        for g in sorted(self.hot | self.heating.keys()):
            if g != gpu and self.temps.get(g, own) > own:
                return g
        return None

    def sibling_cap_clock(self, gpu: int) -> tuple[float, int]:
        """The median clock of ``gpu``'s siblings busy under a SW power cap alone on their
        latest samples, and how many they are ((0.0, n) when fewer than two: one sibling's
        reading is no node's).  Asked only by a GPU with a never-routine reason and no clock
        of its own to judge it by (GpuThermal._reference): under `dcgmi diag`'s targeted
        power every GPU sits at its limit, and one that is held by HW slowdown from its first
        loaded sample has only its siblings' clock to say how far down it is."""
        clocks = sorted(c for g, c in self.cap_clocks.items() if g != gpu)
        if len(clocks) < 2:
            return 0.0, len(clocks)
        return clocks[len(clocks) // 2], len(clocks)

    def node_fault_open(self) -> bool:
        """A node-scope throttle finding raised and not cleared (a brake or the node's heat)."""
        return bool(self.brake_gpus or self.heat_gpus or self.brake_repeat)

    def seen_now(self) -> str:
        """The node-wide throttle the GPUs' latest samples show: "power", "thermal", "clocks"
        or "".  "clocks": application clocks (0x2) holding two busy GPUs or more -- one
        setting on the node (a power profile or a tool run on it), not a fault of each GPU
        (revA44 F4); whether it is the node's alone, the job's other nodes say (the
        correlator: ``_app_clocks_shared``)."""
        if len(self.braking) >= BRAKE_MIN_GPUS:
            return "power"
        if len(self.heating) >= 2:
            return "thermal"
        return "clocks" if len(self.app_held) >= 2 else ""

    def node_braking(self) -> bool:
        """``BRAKE_MIN_GPUS`` or more GPUs of the node have the brake on their latest samples:
        the node's supply or board braking (see BRAKE_MIN_GPUS)."""
        return len(self.braking) >= BRAKE_MIN_GPUS

    def cap_shared(self, gpu: int, onset: float, drop: float, ts: float, window_s: float,
                   margin: float) -> int:
        """How many busy GPUs of the node (the asking one among them) are held by the same SW
        power cap as ``gpu``, whose run of capped samples began at ``onset`` with its clock
        ``drop`` down now: 0 when it is judged on its own.

        0 unless every busy GPU (idle ones, 0x1, have no load to cap) is under the cap: its
        clock held down (``capping``), or 0x4 on its latest sample from a run begun with the
        others' (a lighter stage loses less clock under the same limit: review round 12 P5;
        0x4 since long before with no loss is routine capping at its own limit -- free).
        Then those whose runs began within ``window_s`` of ``onset`` -- or all of them for a
        GPU whose load began under the cap already held (its run begins when its load does:
        P4) -- unless its clock is held ``margin`` deeper than most of the node's GPUs under
        the cap (than their upper median drop: one model, one limit -- stages of unequal
        power density apart by up to ~9 points, P5; 18 points deeper is its own, P2).
        1: the node's only busy GPU, alone under the cap -- its peers are other nodes'
        (the correlator's _node_cap).  A GPU capped on every
        loaded sample so far (no clock baseline: how deep, unknown) is under the cap, never
        alike.  The node's summary is counted once a second: a node's GPUs number what the
        input says, and every GPU under its cap asks."""
        if ts - self.peers_ts >= 1.0:
            self.peers_ts = ts
            self._count_cap(window_s)
        onsets = self.peers
        if not onsets:
            return 0
        if len(onsets) >= 2 and drop > self.cap_depth + margin:
            return 0  # held far deeper than its siblings under the same limit
        if self.cap_busy == 1:
            return 1
        alike = bisect_right(onsets, onset + window_s) - bisect_left(onsets, onset - window_s)
        loaded = self.loaded.get(gpu, NO_REFERENCE)
        if alike < len(onsets) and onset - loaded <= window_s and bisect_left(
                onsets, loaded) - bisect_right(onsets, NO_REFERENCE) >= len(onsets) - 1:
            alike = len(onsets)  # loaded under a cap every other busy GPU was already under
        return alike if alike >= 2 else 0

    def _count_cap(self, window_s: float) -> None:
        """``peers``, ``cap_depth`` and ``cap_busy`` from the GPUs' latest samples."""
        capping, idle, sw = self.capping, self.idle, self.sw_cap
        busy = [g for g in self.gpus if g not in idle]
        known = [t for g, t in capping.items() if g not in idle and t > NO_REFERENCE]
        first = min(known) - window_s if known else NO_REFERENCE
        if any(g not in capping and (g not in sw or sw[g] < first) for g in busy) \
                or not any(g in capping for g in busy):
            self.peers = []
            return
        self.peers = sorted(capping.get(g, NO_REFERENCE) for g in busy)
        drops = sorted(self.cap_drop[g] for g in busy if g in self.cap_drop)
        self.cap_depth = drops[len(drops) // 2] if drops else 0.0
        self.cap_busy = len(busy)

    def poll_median(self, ts: float, within_s: float) -> float | None:
        """The median temperature of the node's busy GPUs sampled since ``ts - within_s`` (the
        poll of a sample at ``ts``), or None while they are not yet most of the busy GPUs heard
        within ``HEARD_POLLS`` polls (or fewer than 3).  :meth:`reference` mixes polls: a GPU
        sampled early in its poll sees its siblings' samples of the previous one.

        A GPU silent for longer (off the bus, a blank DCGM field) is no longer the node's to
        wait for: a 4-GPU tray with one GPU silent judges with the other three (review13 T1:
        a GPU warming 8 C over its siblings never judged, its slow rank escalated 'unknown'
        a minute and a half before its thermal isolation).  Three is the fewest whose median
        is a sibling's reading whichever one of them is warming."""
        since = ts - within_s
        heard_since = ts - 2.0 * HEARD_POLLS * within_s  # (within_s is half an interval)
        times, idle = self.times, self.idle
        same = []
        heard = 0
        for g, t in self.temps.items():
            at = times.get(g, heard_since - 1.0)
            if at >= heard_since and g not in idle:
                heard += 1
                if at >= since:
                    same.append(t)
        if len(same) < 3 or 2 * len(same) <= heard:
            return None
        same.sort()
        return same[len(same) // 2]

    def reference(self, ts: float) -> float:
        if ts - self.median_ts >= 1.0:
            # Busy GPUs only: an idle GPU (0x1) draws a tenth of the power, so a busy one
            # beside idle siblings is not hot against them (thermal13).
            idle = self.idle
            t = sorted([v for g, v in self.temps.items() if g not in idle] if idle
                       else self.temps.values())
            self.median_c = t[len(t) // 2] if len(t) >= 4 else float("inf")
            self.median_ts = ts
            if self.fits:
                self.fits.clear()
        return self.median_c

    def take(self, gpu: int, temp_c: float, ts: float, power_w: float | None,
             share: float, settle_s: float) -> float:
        """A GPU's sample: its temperature, its time and its power taken into its heat --
        ``share`` (1 - e^(-gap/tau)) of the way from the last to ``power_w``, its first sample
        (or one after a gap of no power) as is -- and into its level at its load (``calm``:
        its temperature followed for ``settle_s`` after its load changed); the node's median
        refreshed once a second.  Returns that median (:meth:`reference`)."""
        temps, times = self.temps, self.times
        # (subscripts, not dict.get's calls: a GPU's every sample after its first comes here,
        # its entries there -- perf37)
        try:
            was = temps[gpu]
            fresh = times[gpu] != ts  # (a sample taken again -- GpuThermal.quiet's, then
            #                          update's general path -- is not a sample before)
        except KeyError:
            was = temps.get(gpu, temp_c)
            fresh = False
        if fresh:
            try:  # (by subscript: setdefault made and dropped a list a sample)
                back = self.back[gpu]
            except KeyError:
                back = self.back[gpu] = []
            back.append(was)
            if len(back) > LEVEL_POLLS:
                del back[0]
        temps[gpu] = temp_c
        times[gpu] = ts
        power = self.power
        if power_w is None:
            power.pop(gpu, None)
            self.raw.pop(gpu, None)
            self.calm.pop(gpu, None)
        else:
            try:
                p = power[gpu]
            except KeyError:
                heat = power[gpu] = power_w
            else:
                heat = power[gpu] = p + (power_w - p) * share
            self.raw[gpu] = power_w
            try:
                c = self.calm[gpu]
            except KeyError:
                c = None
            if c is None or (abs(power_w - c[0]) > STEADY * c[0]
                             and abs(heat - c[6]) > STEADY * c[6]):
                # (A load anew: its draw and its heat both moved.  A draw wandering poll to
                # poll about one level -- routine capping, a job's phases -- leaves the heat
                # where it was, and the temperature with it: revA35 10.)
                self.calm[gpu] = [power_w, ts, ts, temp_c, ts, temp_c, heat]
            elif ts - c[1] < settle_s and abs(temp_c - was) > SETTLED_STEP_C:
                c[2], c[3], c[4], c[5] = ts, temp_c, ts, temp_c  # (still following its load)
            else:
                if fresh:  # (settled at its load: its moves are its sensor's and its air's)
                    sq = (temp_c - was) ** 2
                    noise = self.noise
                    try:
                        v = noise[gpu]
                    except KeyError:
                        noise[gpu] = sq
                    else:
                        noise[gpu] = v + NOISE_SHARE * (sq - v)
                if ts - c[4] >= 0.5 * CALM_SPAN_S:
                    c[2], c[3], c[4], c[5] = c[4], c[5], ts, temp_c
        return self.reference(ts) if ts - self.median_ts >= 1.0 else self.median_c

    def _steady(self, gpu: int) -> bool:
        """Whether ``gpu``'s latest power is within STEADY of its lagged power (its temperature
        settled at it)."""
        p = self.power.get(gpu)
        return p is not None and abs(self.raw[gpu] - p) <= STEADY * p

    def mates_in(self, gpu: int, ts: float, within_s: float, since: float) -> bool:
        """Whether three in four of ``gpu``'s busy mates heard within ``HEARD_POLLS`` polls
        (``within_s``: half an interval) have a sample taken at ``since`` or later -- of its
        poll, when ``since`` is half an interval before its sample (mates_steady's)."""
        times, idle = self.times, self.idle
        heard_since = ts - 2.0 * HEARD_POLLS * within_s
        heard = fresh = 0
        for g in self.temps:
            at = times.get(g, heard_since - 1.0)
            if g == gpu or g in idle or at < heard_since:
                continue
            heard += 1
            fresh += at >= since
        return 4 * fresh >= 3 * heard

    def mates_steady(self, gpu: int, ts: float, within_s: float, history_s: float,
                     rise_c: float, below_c: float, since: float) -> tuple[int, float] | None:
        """Whether ``gpu``'s busy mates are shown to stay where their load puts them: (how many,
        their largest rise) when at least two of them, and three in four of those heard within
        ``HEARD_POLLS`` polls (``within_s``: half an interval), have held their load (``calm``:
        their draw, or their low-passed power, within STEADY) for ``history_s`` or more, their
        temperature settled at it for half that, and are ``rise_c`` or less above it
        (``calm``'s older sample: CALM_SPAN_S / 2 to CALM_SPAN_S old once the run is that
        long), and none is more or at ``below_c`` or above (near its own slowdown point: a node
        at its cooling's limit, its mates a sample from throttling however level they sat);
        None when not shown.  Only a mate's sample taken at ``since`` or later counts (the
        poll of ``gpu``'s first throttling sample, or later: :meth:`mates_in`), and the mates
        counted must not be climbing: over the polls since ``since`` (its run's first poll
        counts one; LEVEL_POLLS at most) they must have moved less than ``LEVEL_STEP_C`` a poll
        on average, and ``LEVEL_Z`` standard errors of their own moves (``noise``) less than a
        failing cooling's degree a poll.  A node's cooling failing fast heats every GPU of it
        a few degrees a poll, and the first GPU to throttle is sampled before its mates on the
        poll they begin to climb -- their previous samples show them level (revA35 2: the GPU
        paged, then the node); at a degree a poll under a sensor's +-0.5-1 C noise one poll's
        move may show them level (revA36 F5: the GPU paged, then the node, 3 of 12 seeds), two
        or three polls' rise does not.  Mates flickering about an integer reading show their
        level at the first poll as before; noisy ones take a poll or two more.

        A node's cooling failing (its coolant flow, its fans, its inlet air) heats every GPU
        of it, the mates of the first to throttle climbing at an unchanged power; a fault of
        one GPU's own cooling (its thermal interface, an HBM pad, its heat sink's fan) heats
        that GPU alone, its mates level at their load.  A mate whose load changed lately
        (its temperature still following its power) or that reports no power is no evidence
        either way -- a GPU first heard already busy has no history yet (blind23 D1 cut
        10 s before the fault: its mates climbing from their first samples)."""
        times, idle, calm, back, noise = self.times, self.idle, self.calm, self.back, self.noise
        heard_since = ts - 2.0 * HEARD_POLLS * within_s
        steady = heard = polls = 0
        top = moved = var = 0.0
        for g, t in self.temps.items():
            at = times.get(g, heard_since - 1.0)
            if g == gpu or g in idle or at < heard_since:
                continue
            heard += 1
            c = calm.get(g)
            if c is None or at < since:
                continue
            rise = t - min(c[3], c[5])
            if rise > rise_c or t >= below_c:
                return None  # a mate climbing at its load: the node's heat, maybe
            if at - c[1] >= history_s and at - c[2] >= 0.5 * history_s:
                steady += 1
                top = max(top, rise)
                before = back.get(g)
                # (its samples since the run's first poll -- one on that poll, and one more a
                # poll; within_s is half an interval -- and since it settled at its load: a
                # load's step is no climb, its settling over once level -- blind24 hbm)
                n = min(len(before or ()), LEVEL_POLLS,
                        1 + int((at - since) / (2.0 * within_s)),
                        int((at - c[2]) / (2.0 * within_s) + 0.5))
                if n > 0:
                    moved += t - before[-n]
                    polls += n
                    var += noise.get(g, 0.0)
        if steady < 2 or 4 * steady < 3 * heard or moved >= LEVEL_STEP_C * max(polls, steady) \
                or moved + LEVEL_Z * var ** 0.5 >= 2.0 * LEVEL_STEP_C * polls > 0:
            return None
        return steady, top

    def for_power(self, gpu: int, within_s: float) -> float:
        """The temperature ``gpu`` would have with its node's other busy GPUs' cooling at its
        own power: the median over the busy GPUs (``gpu`` among them, as in ``median_c``) of
        their temperature moved along the node's degrees per watt to ``gpu``'s power.

        The slope is the median over pairs of its mates at unequal load, idle ones among them
        (Theil-Sen, without ``gpu``: a failing GPU that alone draws more must not explain its
        own heat), clamped to 0..MAX_C_PER_W.  A pair is two samples of one poll (``within_s``
        apart at most), or the older of them of a GPU holding its power (``_steady``): a GPU
        sampled after a load step beside one not sampled yet is a poll apart, not a load
        apart -- the whole node heating together counts no slope (blind2 superpod: a thermal
        fault beginning with its job's load step was found a sample later); an idle GPU's
        sample of the last poll is still its temperature.
        ``median_c`` when its mates' loads are alike (no pair: the rule of an equally loaded
        node, unchanged), when ``gpu``'s power is unknown, or on a node of more than FIT_GPUS
        GPUs.  Cached until the median's next refresh."""
        ref = self.fits.get(gpu)
        if ref is None:
            ref = self.fits[gpu] = self._fit(gpu, within_s)
        return ref

    def _fit(self, gpu: int, within_s: float) -> float:
        median, power, times, steady = self.median_c, self.power, self.times, self._steady
        own = power.get(gpu)
        if own is None or median == float("inf"):
            return median
        # Idle GPUs (0x1) tell the slope as well as busy ones -- the same air, a tenth of the
        # power -- and are no reference for a busy GPU's temperature (``median_c``).
        pts = [(power[g], t, times.get(g, 0.0), g) for g, t in self.temps.items() if g in power]
        if len(pts) > FIT_GPUS:
            return median
        slopes = []
        for a, (pa, ta, sa, ga) in enumerate(pts):
            if ga == gpu:
                continue
            for pb, tb, sb, gb in pts[a + 1:]:
                if gb != gpu and (pa >= LOAD_RATIO * pb or pb >= LOAD_RATIO * pa) and (
                        abs(sa - sb) <= within_s or steady(gb if sb < sa else ga)):
                    slopes.append((ta - tb) / (pa - pb))
        if len(slopes) < 2:
            return median
        slopes.sort()
        c_per_w = min(slopes[len(slopes) // 2], MAX_C_PER_W)
        if c_per_w <= 0.0:
            return median
        idle = self.idle
        moved = sorted(t + c_per_w * (own - p) for p, t, _, g in pts if g not in idle)
        return moved[len(moved) // 2] if len(moved) >= 4 else median


def _gpu(g: object) -> bool:
    """A GPU index within the decoder's bound (DESIGN's ``gpu``: 0 <= gpu < INDEX_LIMIT)."""
    return type(g) is int and 0 <= g < INDEX_LIMIT


def _gpus(x: object) -> bool:
    """A set of GPU indices (_gpu)."""
    return is_int_set(x) and all(map(_gpu, x))  # type: ignore[arg-type]


def _per_gpu(ok: Callable[[Any], bool]) -> Callable[[Any], bool]:
    """A dict from GPU indices (_gpu) to values ``ok`` takes."""
    return lambda x: type(x) is dict and all(_gpu(g) and ok(v) for g, v in x.items())


_watts = within(0.0, MAX_POWER_W)
is_temp = within(TEMP_MIN_C, TEMP_MAX_C)  # (a temperature readable() keeps)
is_mhz = within(0.0, MAX_CLOCK_MHZ)       # (a clock readable() keeps)
# A clock's share below its baseline (1 - clock / baseline): at most all of it.
_drop = within(-sys.float_info.max, 1.0)
# A temperature less another (above the node's median): within the readable span.
_above = within(TEMP_MIN_C - TEMP_MAX_C, TEMP_MAX_C - TEMP_MIN_C)
_FIT_C = MAX_C_PER_W * MAX_POWER_W  # (for_power moves a temperature this far at most)


def is_excess(x: Any) -> bool:
    """Degrees above a node's median (GpuThermal._excess): within the readable span, or
    NO_REFERENCE (-inf: no median yet)."""
    return x == NO_REFERENCE or _above(x)


def is_reasons(x: Any) -> bool:
    """A clock-event reason word as kept (a float in ``steady_wait``, an int elsewhere): a whole
    number from 0 below MAX_THROTTLE's 2^16 (readable() takes a larger one as missing)."""
    return type(x) in (float, int) and 0 <= x < 1 << 16 and x == int(x)


# Each field's check on snapshot restore (Monitors.check_restored): the codec rebuilds a
# NodeTemps from fields of any type, and a forged one failed the node's next sample (a list
# for ``braking``, a string for ``median_ts``, a pending entry short of its five numbers) --
# review25; therm24's two fields were review24's.  A reading is held to the bounds the live
# code keeps (state38: a forged ``noise`` of 1e308 or inf restored and hid every climb of the
# mates, a negative one read them level; an infinite ``back`` or temperature, a GPU index past
# the decoder's bound restored as well): temperatures and their moves within readable()'s
# range, powers from 0 to its limit, sample times finite, every GPU an index DESIGN allows.
# svc39: the rest likewise -- an onset is an event time (finite; -inf where the live code
# keeps "none yet": ``capping``'s uncounted depth, ``median_ts``, ``peers_ts``,
# ``brake_seen_ts``), the median a temperature or +inf (fewer than four GPUs), ``fits`` a
# temperature moved along at most MAX_C_PER_W over the power range (or the median's +inf),
# a clock drop at most 1, clocks within MAX_CLOCK_MHZ, a state flag one of its values,
# counts from 0, ``peers`` sorted (cap_shared bisects it): a forged 1e308 median read every
# GPU cool, an onset of +inf held a cap's run unborn, a state of 7 judged no wait.
FIELDS = {
    "gpus": _gpus, "temps": _per_gpu(is_temp), "times": _per_gpu(is_finite),
    "pending": _per_gpu(list_of(is_finite, is_temp, is_excess, one_of(-1, 0, 1), one_of(0, 1))),
    "median_c": lambda x: x == float("inf") or is_temp(x), "median_ts": is_time,
    "braking": _gpus, "brake_gpus": _gpus, "brake_seen_ts": is_time, "brake_repeat": is_bool,
    "heating": _per_gpu(is_finite), "heat_gpus": _gpus, "hot": _gpus,
    "seen_cause": lambda x: x in ("", "power", "thermal", "clocks"), "seen_count": is_count,
    "idle": _gpus, "capping": _per_gpu(is_time), "cap_drop": _per_gpu(_drop),
    "sw_cap": _per_gpu(is_finite), "loaded": _per_gpu(is_finite), "busy_told": is_bool,
    "peers_ts": is_time,
    "peers": lambda x: type(x) is list and all(map(is_time, x)) and x == sorted(x),
    "cap_depth": _drop, "cap_busy": is_count, "power": _per_gpu(_watts),
    "fits": _per_gpu(lambda v: v == float("inf") or within(
        TEMP_MIN_C - _FIT_C, TEMP_MAX_C + _FIT_C)(v)),
    "raw": _per_gpu(_watts), "cap_clocks": _per_gpu(is_mhz), "brake_poll": is_finite,
    "back": _per_gpu(lambda b: type(b) is list and len(b) <= LEVEL_POLLS and all(map(is_temp, b))),
    "noise": _per_gpu(within(0.0, MAX_NOISE)),
    "steady_wait": _per_gpu(list_of(is_finite, is_finite, one_of(-1.0, 0.0, 1.0), is_reasons, _drop,
                                     is_temp)),
    "calm": _per_gpu(list_of(_watts, is_finite, is_finite, is_temp, is_finite, is_temp, _watts)),
    "app_held": _gpus,
    "own_brakes": _per_gpu(lambda x: type(x) is list and len(x) <= OWN_BRAKES_MAX and all(
        map(is_finite, x)) and x == sorted(x)),
}
assert set(FIELDS) == set(NodeTemps.__slots__)
