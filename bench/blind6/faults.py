"""The labelled faults (and unlabelled healthy events) of blind6, as hooks into the samplers.

A hook returns None (sample unchanged), True (changed: the label spans it) or "drop" (the
sample does not exist). A label's `start_ts`/`end_ts` are the node-clock stamps of the first
and last records its hooks changed -- DESIGN's "first record the fault changes".
"""

from __future__ import annotations

import math


class Fault:
    labelled = True

    def __init__(self, fault_id: str, kind: str, cause: str, scope: dict,
                 attributable: bool = True) -> None:
        self.fault_id, self.kind, self.cause, self.scope = fault_id, kind, cause, scope
        self.attributable = attributable
        self.first = math.inf
        self.last = -math.inf
        self.extra: list = []     # records the fault adds (XID events): (true_t, topic, value)

    def touch(self, ts: float) -> None:
        self.first = min(self.first, ts)
        self.last = max(self.last, ts)

    # hooks -------------------------------------------------------------------------------
    def compute(self, job: str, rank: int, node: str, gpu: int, t: float) -> float:
        return 1.0

    def step_record(self, job: str, rank: int, v: dict) -> None:
        return None

    def thermal(self, node, gpu: int, t: float, v: dict):
        return None

    def ecc(self, node, gpu: int, t: float, v: dict):
        return None

    def nic(self, node, nic: str, t: float, v: dict):
        return None

    def label(self) -> dict:
        return {"fault_id": self.fault_id, "kind": self.kind, "cause": self.cause,
                "scope": self.scope, "start_ts": round(self.first, 3),
                "end_ts": round(self.last, 3), "attributable": self.attributable}

    def xid_event(self, node, gpu: int, t: float, xid: int, **fields) -> None:
        """A kernel-log XID: its own ECC message at the event's time."""
        v = {"ts": round(node.clock(t), 3), "node": node.name, "gpu": gpu, "xid": xid, **fields}
        self.extra.append((t, "telemetry.ecc", v))
        self.touch(v["ts"])


def gpu_scope(node: str, gpu: int) -> dict:
    return {"level": "gpu", "node": node, "gpu": gpu}


class SlowGpu(Fault):
    """A GPU computing `factor` slower from t0 on, nothing in its telemetry says why."""

    def __init__(self, fid: str, node: str, gpu: int, t0: float, factor: float) -> None:
        super().__init__(fid, "slow_node", "unknown", gpu_scope(node, gpu), attributable=False)
        self.node, self.gpu, self.t0, self.factor = node, gpu, t0, factor
        self._hit: set = set()

    def compute(self, job, rank, node, gpu, t):
        if node == self.node and gpu == self.gpu and t >= self.t0:
            self._hit.add((job, rank))
            return self.factor
        self._hit.discard((job, rank))
        return 1.0

    def step_record(self, job, rank, v):
        if (job, rank) in self._hit:
            self.touch(v["ts"])


class NvlinkCrc(Fault):
    """NVLink CRC errors on one GPU's links, growing slowly (a degrading connector or
    NVSwitch tray): rate r0 * e^((t - t0) / tau) per second, capped; link-level replays
    follow, a recovery now and then; the TP all-reduces over the link slow a little."""

    def __init__(self, fid, node, gpu, t0, r0, tau, rmax):
        super().__init__(fid, "hardware", "nvlink", gpu_scope(node, gpu))
        self.node, self.gpu, self.t0, self.r0, self.tau, self.rmax = node, gpu, t0, r0, tau, rmax
        self._hit: set = set()

    def rate(self, t: float) -> float:
        return 0.0 if t < self.t0 else min(self.rmax, self.r0 * math.exp((t - self.t0) / self.tau))

    def count(self, t: float) -> float:
        if t < self.t0:
            return 0.0
        t_cap = self.t0 + self.tau * math.log(self.rmax / self.r0)
        if t <= t_cap:
            return self.r0 * self.tau * (math.exp((t - self.t0) / self.tau) - 1.0)
        return self.count(t_cap) + self.rmax * (t - t_cap)

    def compute(self, job, rank, node, gpu, t):
        f = 1.0 + min(0.08, self.rate(t) / 250.0)
        if node == self.node and gpu == self.gpu and f > 1.01:
            self._hit.add((job, rank))
            return f
        self._hit.discard((job, rank))
        return 1.0

    def step_record(self, job, rank, v):
        if (job, rank) in self._hit:
            self.touch(v["ts"])

    def ecc(self, node, gpu, t, v):
        if node.name != self.node or gpu != self.gpu:
            return None
        n = int(self.count(t))
        if n < 1:
            return None
        v["nvlink_crc_errors"] += n
        v["nvlink_replay_errors"] += n // 12
        v["nvlink_recovery_errors"] += n // 3000
        return True


class Xid94Mig(Fault):
    """A contained ECC error (XID 94) in one MIG instance of an A100: only that instance's
    application dies; DBE +1, a row remap pending until the GPU is reset -- which the
    operator holds off while the other instance's job runs. dcgm-exporter reports the XID on
    its next poll; XID 63 (the remap event) in the same interval goes out as its own message."""

    def __init__(self, fid, node, gpu, t_x):
        super().__init__(fid, "hardware", "gpu_memory", gpu_scope(node, gpu))
        self.node, self.gpu, self.t_x = node, gpu, t_x
        self._sent = False

    def ecc(self, node, gpu, t, v):
        if node.name != self.node or gpu != self.gpu or t < self.t_x:
            return None
        v["dbe_volatile"] += 1
        v["row_remap_pending"] = True
        if not self._sent:
            self._sent = True
            v["xid"] = 94
            self.extra.append((t + 0.001, "telemetry.ecc", dict(v, xid=63)))
        return True


class SbeStorm(Fault):
    """Healthy: a burst of correctable (SBE) errors on one GPU, corrected, no XID, no remap."""
    labelled = False

    def __init__(self, node, gpu, t0, t1, per_s):
        super().__init__("sbe-storm", "", "", {})
        self.node, self.gpu, self.t0, self.t1, self.per_s = node, gpu, t0, t1, per_s

    def ecc(self, node, gpu, t, v):
        if node.name == self.node and gpu == self.gpu and t > self.t0:
            v["sbe_volatile"] += int(self.per_s * (min(t, self.t1) - self.t0))
        return None


class HcaHang(Fault):
    """An HCA firmware hang: the port stays up but its counters freeze (nothing moves); the
    mlx5 health poller resets the device after `hang_s`: the link goes down for `down_s`,
    comes back with its counters from zero and link_downed 1. Every job over it dies."""

    COUNTERS = ("tx_bytes", "rx_bytes", "xmit_wait", "symbol_errors", "rcv_errors",
                "xmit_discards", "link_downed")

    def __init__(self, fid, node, nic, t_h, hang_s, down_s):
        super().__init__(fid, "network", "nic", {"level": "nic", "node": node, "nic": nic,
                                                 "port": 1})
        self.node, self.nic_name, self.t_h = node, nic, t_h
        self.t_r, self.t_up = t_h + hang_s, t_h + hang_s + down_s
        self._frozen: dict | None = None
        self._base: dict | None = None
        self._after = False

    def nic(self, node, nic, t, v):
        if node.name != self.node or nic != self.nic_name:
            return None
        if t < self.t_h:
            self._frozen = {c: v[c] for c in self.COUNTERS}
            return None
        if t < self.t_r:
            v.update(self._frozen)
            return True
        if self._base is None:
            self._base = {c: v[c] for c in self.COUNTERS}
        for c in self.COUNTERS:
            v[c] -= self._base[c]
        v["link_downed"] = 1
        v["symbol_errors"] += 2
        if t < self.t_up:
            v["link_state"] = "down"
            for c in ("tx_bytes", "rx_bytes", "xmit_wait"):
                v[c] = 0
            return True
        if not self._after:     # the first sample back up closes the episode
            self._after = True
            return True
        return None


class GspHang(Fault):
    """The GPU's GSP firmware stops answering: the GPU hangs (its power falls to idle-ish,
    its job's steps stop), XID 119 after the RPC timeout, XID 120 seconds later; NVML asks
    for a GPU reset until the operator does it."""

    def __init__(self, fid, node, gpu, t_h, t_119, t_120, t_reset):
        super().__init__(fid, "hardware", "gpu_hardware", gpu_scope(node, gpu))
        self.node, self.gpu, self.t_h, self.t_119, self.t_reset = node, gpu, t_h, t_119, t_reset
        self.t_120 = t_120
        self._emitted = False
        self._after = {"thermal": False, "ecc": False}

    def _mine(self, node, gpu):
        return node.name == self.node and gpu == self.gpu

    def thermal(self, node, gpu, t, v):
        if not self._mine(node, gpu) or t < self.t_h:
            return None
        if t < self.t_reset:
            v["power_w"] = round(88.0 + (t % 7.0), 2)   # hung: engines stopped, clocks held
            v["throttle"] = 0
            return True
        return None

    def ecc(self, node, gpu, t, v):
        if not self._mine(node, gpu):
            return None
        if not self._emitted:
            self._emitted = True
            self.xid_event(node, gpu, self.t_119, 119)
            self.xid_event(node, gpu, self.t_120, 120)
        if self.t_119 <= t < self.t_reset:
            v["recovery_action"] = "gpu_reset"
            return True
        if t >= self.t_reset:
            v["sbe_volatile"] = 0      # volatile counters restart with the reset
            if not self._after["ecc"]:
                self._after["ecc"] = True
                return True
        return None


class OffBus(Fault):
    """XID 79: the GPU falls off the PCIe bus. DCGM cannot reach it (no samples), its job
    dies; after a reset it is back, its volatile counters from zero."""

    def __init__(self, fid, node, gpu, t_x, t_reset):
        super().__init__(fid, "hardware", "gpu_hardware", gpu_scope(node, gpu))
        self.node, self.gpu, self.t_x, self.t_reset = node, gpu, t_x, t_reset
        self._emitted = False
        self._back = {"thermal": False, "ecc": False}

    def _hook(self, which, node, gpu, t, v):
        if node.name != self.node or gpu != self.gpu or t < self.t_x:
            return None
        if t < self.t_reset:
            return "drop"
        if which == "ecc":
            v["sbe_volatile"] = 0
            v["pcie_replay"] = 0
        if not self._back[which]:
            self._back[which] = True
            return True
        return None

    def thermal(self, node, gpu, t, v):
        return self._hook("thermal", node, gpu, t, v)

    def ecc(self, node, gpu, t, v):
        if not self._emitted and node.name == self.node and gpu == self.gpu:
            self._emitted = True
            self.xid_event(node, gpu, self.t_x, 79)
        return self._hook("ecc", node, gpu, t, v)


class PcieDegraded(Fault):
    """A GPU's PCIe link retraining under load (a marginal riser): replays climb while the
    GPU is busy, and its host-device copies -- inside its compute time -- take longer."""

    def __init__(self, fid, node, gpu, factor, replay_per_s):
        super().__init__(fid, "slow_node", "gpu_hardware", gpu_scope(node, gpu))
        self.node, self.gpu, self.factor, self.per_s = node, gpu, factor, replay_per_s
        self._hit: set = set()
        self._n = 0.0
        self._prev: float | None = None

    def compute(self, job, rank, node, gpu, t):
        if node == self.node and gpu == self.gpu:
            self._hit.add((job, rank))
            return self.factor
        return 1.0

    def step_record(self, job, rank, v):
        if (job, rank) in self._hit and v["node"] == self.node and v["gpu"] == self.gpu:
            self.touch(v["ts"])

    def ecc(self, node, gpu, t, v):
        if node.name != self.node or gpu != self.gpu:
            return None
        if self._prev is not None:
            self._n += self.per_s * node.util(gpu, t) * (t - self._prev)
        self._prev = t
        if self._n >= 1:
            v["pcie_replay"] += int(self._n)
            return True
        return None


class Sdc(Fault):
    """Silent corruption on one rank from `step0`: its parameters drift from its replicas'
    (the checksum differs from then on; the corrupting step's local grad norm x3-4)."""

    def __init__(self, fid, job, rank, node, gpu, step0, scope):
        super().__init__(fid, "sdc", "unknown", scope, attributable=False)
        self.job, self.rank, self.step0 = job, rank, step0
        self.node, self.gpu = node, gpu

    def step_record(self, job, rank, v):
        if job != self.job or rank != self.rank or v["step"] < self.step0:
            return
        if v["step"] == self.step0:
            v["grad_norm"] = round(v["grad_norm"] * 3.6, 4)
        if "param_checksum" in v:
            v["param_checksum"] = v["param_checksum"][::-1]
        self.touch(v["ts"])
