"""Labelled faults of bench/blind4 as hooks into the step, DCGM and NIC emitters.

A fault's label spans the event times (node clock) of the first and last record
its hooks changed; `touch(ts)` is called by the emitters for each such record.
"""

from __future__ import annotations

import zlib


class Fault:
    """Base: a label and hooks that change nothing."""

    def __init__(self, fault_id: str, kind: str, cause: str, scope: dict, attributable: bool):
        self.fault_id = fault_id
        self.kind = kind
        self.cause = cause
        self.scope = scope
        self.attributable = attributable
        self.first_ts: float | None = None
        self.last_ts: float | None = None

    def touch(self, ts: float) -> None:
        if self.first_ts is None or ts < self.first_ts:
            self.first_ts = ts
        if self.last_ts is None or ts > self.last_ts:
            self.last_ts = ts

    def label(self) -> dict | None:
        if self.first_ts is None:
            return None
        return {
            "fault_id": self.fault_id,
            "kind": self.kind,
            "cause": self.cause,
            "scope": self.scope,
            "start_ts": round(self.first_ts, 4),
            "end_ts": round(self.last_ts, 4),
            "attributable": self.attributable,
        }

    # hooks ---------------------------------------------------------------
    def step_effect(self, att, rank, node, gpu, step, t):  # -> (compute mult, neither add ms)
        return 1.0, 0.0

    def comm_effect(self, att, step, t):  # -> collective time multiplier
        return 1.0

    def corrupt_rank(self, att, step, t):  # -> rank whose params diverge
        return None

    def gpu_load(self, node, gpu, t):  # -> board power multiplier
        return 1.0

    def gpu_gone(self, node, gpu, t):  # -> DCGM cannot read the GPU
        return False

    def ecc(self, node, gpu, t, dt, inc, rec):  # -> changed?
        return False

    def nic(self, node, nic, t, dt, inc, rec):  # -> changed?
        return False

    def xids(self):  # -> [(node, gpu, t, xid, fields)]
        return []


def _on(att, node_names) -> bool:
    return any(n in node_names for n in att.nodes)


class IntermittentStraggler(Fault):
    """One GPU slow 20-40 s every few minutes (a firmware or host daemon cycle); no telemetry."""

    def __init__(self, fid, node, gpu, bursts, mult):
        super().__init__(
            fid, "slow_node", "unknown", {"level": "gpu", "node": node, "gpu": gpu}, False
        )
        self.node, self.gpu, self.bursts, self.mult = node, gpu, bursts, mult

    def step_effect(self, att, rank, node, gpu, step, t):
        if node == self.node and gpu == self.gpu and any(a <= t < b for a, b in self.bursts):
            return self.mult, 0.0
        return 1.0, 0.0


class SlowGpu(Fault):
    """A GPU slower than its peers whenever it computes (a bad spare); nothing in telemetry."""

    def __init__(self, fid, node, gpu, mult):
        super().__init__(
            fid, "slow_node", "unknown", {"level": "gpu", "node": node, "gpu": gpu}, False
        )
        self.node, self.gpu, self.mult = node, gpu, mult

    def step_effect(self, att, rank, node, gpu, step, t):
        if node == self.node and gpu == self.gpu:
            return self.mult, 0.0
        return 1.0, 0.0


class NvlinkTpGroup(Fault):
    """NVLink errors on one GPU (XID 74, CRC/replay counters): every rank of its TP group slows."""

    def __init__(self, fid, node, gpu, t0, t1, mult, xid_ts):
        super().__init__(
            fid, "hardware", "nvlink", {"level": "gpu", "node": node, "gpu": gpu}, True
        )
        self.node, self.gpu, self.t0, self.t1, self.mult, self.xid_ts = (
            node,
            gpu,
            t0,
            t1,
            mult,
            xid_ts,
        )

    def step_effect(self, att, rank, node, gpu, step, t):
        # TP8 inside one node: the group's all-reduces ride the sick links, so all 8 wait.
        if node == self.node and self.t0 <= t < self.t1:
            return self.mult, 0.0
        return 1.0, 0.0

    def ecc(self, node, gpu, t, dt, inc, rec):
        if node != self.node or gpu != self.gpu or not (self.t0 <= t < self.t1 + dt):
            return False
        span = min(t, self.t1) - max(t - dt, self.t0)
        if span <= 0:
            return False
        inc["nvlink_crc_errors"] += int(40 * span)
        inc["nvlink_replay_errors"] += int(6 * span)
        inc["nvlink_recovery_errors"] += 1 if zlib.crc32(f"{t}".encode()) % 3 == 0 else 0
        return True

    def xids(self):
        return [(self.node, self.gpu, ts, 74, {}) for ts in self.xid_ts]


class HostCpuThrottle(Fault):
    """The host's CPUs held at a low P-state (BMC power cap / PROCHOT): every rank of the node
    launches kernels late, so compute stretches alike on all 8; GPUs draw less, clocks normal."""

    def __init__(self, fid, node, t0, t1, mult):
        super().__init__(fid, "slow_node", "unknown", {"level": "node", "node": node}, False)
        self.node, self.t0, self.t1, self.mult = node, t0, t1, mult

    def step_effect(self, att, rank, node, gpu, step, t):
        if node == self.node and self.t0 <= t < self.t1:
            return self.mult, 0.0
        return 1.0, 0.0

    def gpu_load(self, node, gpu, t):
        if node == self.node and self.t0 <= t < self.t1:
            return 1.0 / self.mult
        return 1.0


class PauseStorm(Fault):
    """One RoCE NIC stops draining its receive queue and floods PFC pauses: the leaf stops
    sending to every port behind it, so every node of the leaf waits (xmit_wait), the jobs
    there crawl, and the storming port's received bytes collapse."""

    def __init__(self, fid, node, nic, t0, t1, leaf_nodes, comm_mult):
        super().__init__(
            fid, "network", "nic", {"level": "nic", "node": node, "nic": nic, "port": 1}, True
        )
        self.node, self.storm_nic, self.t0, self.t1 = node, nic, t0, t1
        self.leaf_nodes, self.comm_mult = set(leaf_nodes), comm_mult

    def _overlap(self, t, dt):
        return min(t, self.t1) - max(t - dt, self.t0)

    def comm_effect(self, att, step, t):
        if self.t0 <= t < self.t1 and _on(att, self.leaf_nodes):
            return self.comm_mult
        return 1.0

    def nic(self, node, nic, t, dt, inc, rec):
        span = self._overlap(t, dt)
        if span <= 0 or node not in self.leaf_nodes:
            return False
        f = span / dt
        if node == self.node and nic == self.storm_nic:
            inc["rx_bytes"] = int(inc["rx_bytes"] * (1 - 0.97 * f))
            inc["tx_bytes"] = int(inc["tx_bytes"] * (1 - 0.6 * f))
            inc["tx_prio3_pause"] += int(span * 14000)  # ~ one pause quantum per 70 us
            return True
        inc["xmit_wait"] += int(span * 2.5e7)  # ticks paused by the leaf
        inc["tx_bytes"] = int(inc["tx_bytes"] * (1 - 0.5 * f))
        inc["rx_prio3_pause"] += int(span * 300)
        return True


class SpinePartial(Fault):
    """A pod spine with failing ports: flows ECMP-hashed through them drop packets, so the
    RoCE ports of every leaf below see retransmits (out-of-sequence, sequence errors) and the
    jobs crossing leaves slow; traffic inside a leaf is untouched."""

    def __init__(self, fid, spine, under_nodes, t0, t1, comm_mult, seed):
        super().__init__(fid, "network", "switch", {"level": "switch", "switch": spine}, True)
        self.under, self.t0, self.t1, self.comm_mult, self.seed = (
            set(under_nodes),
            t0,
            t1,
            comm_mult,
            seed,
        )

    def comm_effect(self, att, step, t):
        if self.t0 <= t < self.t1 and _on(att, self.under):
            return self.comm_mult
        return 1.0

    def nic(self, node, nic, t, dt, inc, rec):
        span = min(t, self.t1) - max(t - dt, self.t0)
        if span <= 0 or node not in self.under:
            return False
        hashed = zlib.crc32(f"{self.seed}|{node}|{nic}".encode()) % 100
        if hashed < 45:  # this port's flows use the bad ports
            rate = 15 + hashed
            inc["out_of_sequence"] += int(rate * span)
            inc["packet_seq_err"] += int(rate * 0.3 * span)
        inc["np_cnp_sent"] += int(400 * span)
        inc["xmit_wait"] += int(2.0e6 * span)
        return True


class LeafFlaps(Fault):
    """A leaf with a failing line card: the ports of several of its nodes drop twice for a
    few seconds (link_downed +1, symbol errors) and the collectives crossing them stall."""

    def __init__(self, fid, leaf, nodes, flaps, stall_ms):
        super().__init__(fid, "network", "switch", {"level": "switch", "switch": leaf}, True)
        self.nodes, self.flaps, self.stall_ms = set(nodes), flaps, stall_ms

    def comm_effect(self, att, step, t):
        # A collective crossing a port that is retraining waits for it (NCCL retries).
        if _on(att, self.nodes) and any(a - 1.0 <= t < b for a, b in self.flaps):
            return 1.0 + self.stall_ms / (att.base_ms * att.comm_frac)
        return 1.0

    def nic(self, node, nic, t, dt, inc, rec):
        if node not in self.nodes:
            return False
        changed = False
        for a, b in self.flaps:
            if t - dt < a <= t:
                inc["link_downed"] += 1
                inc["symbol_errors"] += 30 + (zlib.crc32(f"{node}{nic}{a}".encode()) % 200)
                changed = True
            if a <= t < b:
                rec["link_state"] = "down"
                changed = True
        return changed


class GpuResetReturn(Fault):
    """Uncontained ECC (XID 95 + 154): the job dies, the GPU is reset and comes back under
    the same name, volatile counters at 0, healthy."""

    def __init__(self, fid, node, gpu, t0, back_t):
        super().__init__(
            fid, "hardware", "gpu_memory", {"level": "gpu", "node": node, "gpu": gpu}, True
        )
        self.node, self.gpu, self.t0, self.back_t = node, gpu, t0, back_t

    def xids(self):
        return [
            (self.node, self.gpu, self.t0, 95, {"dbe_volatile": 1, "recovery_action": "gpu_reset"}),
            (
                self.node,
                self.gpu,
                self.t0 + 0.4,
                154,
                {"dbe_volatile": 1, "recovery_action": "gpu_reset"},
            ),
        ]

    def gpu_gone(self, node, gpu, t):
        return node == self.node and gpu == self.gpu and self.t0 + 20.0 <= t < self.back_t

    def ecc(self, node, gpu, t, dt, inc, rec):
        if node == self.node and gpu == self.gpu and self.t0 <= t < self.t0 + 20.0:
            inc["dbe_volatile"] += 1 if t - dt < self.t0 else 0
            rec["recovery_action"] = "gpu_reset"
            return True
        return False

    def resets(self, node, gpu, t):
        return node == self.node and gpu == self.gpu and t >= self.back_t


class SdcChecksum(Fault):
    """A rank's parameters diverge from its peers' at `from_t` (wrong math on one GPU); with a
    DP-2 job there is no majority and the label is the job."""

    def __init__(self, fid, job, rank, node, gpu, from_t, tie):
        scope = {"level": "job", "job": job} if tie else {"level": "gpu", "node": node, "gpu": gpu}
        super().__init__(fid, "sdc", "unknown" if tie else "gpu_hardware", scope, not tie)
        self.job, self.rank, self.from_t = job, rank, from_t

    def corrupt_rank(self, att, step, t):
        if att.job == self.job and t >= self.from_t:
            return self.rank
        return None
