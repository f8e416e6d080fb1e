"""The state a node's GPUs share: their temperatures and median, a brake, a heat fault and a
SW power cap held by every busy GPU (detector.thermal judges each GPU against these)."""

from __future__ import annotations

from bisect import bisect_left, bisect_right


class NodeTemps:
    """Latest temperature of each GPU of one node, and their median refreshed once a second.

    GPUs of one node run the same job under the same airflow, so one GPU far hotter than
    its siblings has a cooling problem (a failed thermal interface, a blocked fan) well
    before it throttles; a load change moves all of them together.
    """

    __slots__ = ("temps", "median_c", "median_ts", "braking", "brake_gpus", "seen_cause",
                 "heating", "heat_gpus", "seen_count", "idle", "capping", "peers_ts", "peers",
                 "times", "pending")

    def __init__(self) -> None:
        self.temps: dict[int, float] = {}
        self.times: dict[int, float] = {}  # GPU -> time of its latest temperature (``temps``)
        self.pending: dict[int, list[float]] = {}  # GPU -> [ts, temp_c, excess before, state,
        #   hot_seen told before]: a GPU standing out against a median of mostly the previous
        #   poll, judged once most of its siblings' samples of its poll are in (state 0:
        #   not yet; 1: hot_seen told, -1: not standing out) -- GpuThermal._check_warm
        self.median_c = float("inf")
        self.median_ts = float("-inf")
        self.braking: set[int] = set()     # GPUs whose latest sample had a never-routine power
        #                                    reason with its clock down (0x80, 0x8 while cool)
        self.brake_gpus: set[int] = set()  # GPUs in the node's brake raised at node scope
        self.heating: dict[int, float] = {}  # GPU -> onset of its run of samples with a
        #                                      never-routine thermal reason
        self.heat_gpus: set[int] = set()   # GPUs in the node's thermal fault raised at node scope
        self.seen_cause = ""               # the node-wide throttle told as seen: "power" (every
        #                                    GPU braking), "thermal" (>= 2 heating) or "" (none)
        self.seen_count = 0                # GPUs it named (told again when more heat)
        self.idle: set[int] = set()        # GPUs whose latest sample was idle (0x1)
        self.capping: dict[int, float] = {}  # GPU -> onset of its run of samples with only a
        #                                      SW power cap set and the clock clock_drop down
        self.peers_ts = float("-inf")      # when ``peers`` was last counted (once a second)
        self.peers: list[float] = []       # onsets of the busy GPUs' caps, by time, when
        #                                    every busy GPU is capping ([] if one runs free)

    def forget(self, gpu: int) -> bool:
        """Drop a GPU no longer heard from; True when the node has none left."""
        self.temps.pop(gpu, None)
        self.times.pop(gpu, None)
        self.pending.pop(gpu, None)
        self.idle.discard(gpu)
        self.capping.pop(gpu, None)
        self.braking.discard(gpu)
        self.heating.pop(gpu, None)
        self.heat_gpus.discard(gpu)
        return not self.temps

    def node_fault_open(self) -> bool:
        """A node-scope throttle finding raised and not cleared (a brake or the node's heat)."""
        return bool(self.brake_gpus or self.heat_gpus)

    def seen_now(self) -> str:
        """The node-wide throttle the GPUs' latest samples show: "power", "thermal" or ""."""
        if self.braking and self.all_braking():
            return "power"
        return "thermal" if len(self.heating) >= 2 else ""

    def all_braking(self) -> bool:
        """Every GPU of the node (>= 2 known) has the brake on its latest sample.  The sizes
        first: on the usual sample (a GPU or two braking of many) it costs no pass over the
        node's GPUs, whose number the input decides (review, round 9: 78 µs a sample at
        4,000 GPUs on one node)."""
        b = self.braking
        return len(b) >= 2 and len(b) >= len(self.temps) and b.issuperset(self.temps)

    def cap_shared(self, onset: float, ts: float, window_s: float) -> int:
        """How many busy GPUs of the node (the asking one among them) are held by the same SW
        power cap as a GPU whose run of capped samples began at ``onset``: 0 unless every busy
        GPU's latest sample is capped (``capping``; idle GPUs, 0x1, have no load to cap), else
        those whose runs began within ``window_s`` of ``onset`` -- 0 again if fewer than two.
        A GPU capped on every loaded sample so far (no clock baseline: how deep, unknown) is
        under the cap, never alike.  A GPU capped alone among GPUs running free, or long
        before its siblings (already its own fault when a cap came for all), is judged on
        its own.  Counted once a second: a node's GPUs number what the input says, and every
        GPU under its cap asks."""
        if ts - self.peers_ts >= 1.0:
            self.peers_ts = ts
            capping, idle = self.capping, self.idle
            free = any(g not in capping and g not in idle for g in self.temps)
            self.peers = [] if free else sorted(t for g, t in capping.items() if g not in idle)
        onsets = self.peers
        alike = bisect_right(onsets, onset + window_s) - bisect_left(onsets, onset - window_s)
        return alike if alike >= 2 else 0

    def poll_median(self, ts: float, within_s: float) -> float | None:
        """The median temperature of the node's GPUs sampled since ``ts - within_s`` (the poll
        of a sample at ``ts``), or None while they are not yet most of the node's GPUs (or
        fewer than 4).  :meth:`reference` mixes polls: a GPU sampled early in its poll sees
        its siblings' samples of the previous one."""
        since = ts - within_s
        times = self.times
        same = [t for g, t in self.temps.items() if times.get(g, since - 1.0) >= since]
        if len(same) < 4 or 2 * len(same) <= len(self.temps):
            return None
        same.sort()
        return same[len(same) // 2]

    def reference(self, ts: float) -> float:
        if ts - self.median_ts >= 1.0:
            t = sorted(self.temps.values())
            self.median_c = t[len(t) // 2] if len(t) >= 4 else float("inf")
            self.median_ts = ts
        return self.median_c
