"""The fault kinds blind2 injects, each a `Fault` with the hooks it needs.

Numbers are my own, from the physics and operators' practice:
- a port that stops answering kills NCCL after its IB retries (~30 s), the job
  restarts from its checkpoint minutes later, without the node if it is broken;
- a thermal-interface failure heats one GPU by ~25 C over two minutes; past
  ~87 C the driver slows it (0x20 SW thermal, then 0x40 HW thermal), clocks
  fall and the rank's compute stretches in proportion;
- a flaky PSU shelf asserts the power brake (0x80 with 0x8) on every GPU of a
  tray for tens of seconds, clocks at ~40 %;
- an NVSwitch tray failing in an NVL72 rack raises NVLink replay/recovery/CRC
  counts on every GPU of the rack and XID 74 on some, until the fabric manager
  takes the tray out: the rack then runs with 8/9 of its NVLink bandwidth.
"""

from __future__ import annotations

import hashlib

from .model import Fault, Job


def _bump(rec: dict, key: str, n: int) -> None:
    if n and rec.get(key) is not None:
        rec[key] += n


class NodeNicsDown(Fault):
    """Every compute port of one node down (NIC/PCIe power): params nics, fabric."""

    def nic(self, rec, node, nic, t0, t1):
        if nic not in self.params["nics"] or t1 < self.onset:
            return
        rec["link_state"] = "down"
        rec["rate_gbps"] = 10.0 if self.params["fabric"] == "ib" else None
        if t0 < self.onset <= t1:
            _bump(rec, "link_downed", 1)


class SwitchDown(Fault):
    """A leaf down for a while: params ports = {(node, nic)}, fabric."""

    def nic(self, rec, node, nic, t0, t1):
        if (node, nic) not in self.params["ports"]:
            return
        if t0 < self.onset <= t1:
            _bump(rec, "link_downed", 1)
        if self.onset <= t1 < self.until:
            rec["link_state"] = "down"
            rec["rate_gbps"] = 10.0 if self.params["fabric"] == "ib" else None


class DegradedLink(Fault):
    """A port trained at half width from before the log; its job's collectives wait on it."""

    def nic(self, rec, node, nic, t0, t1):
        if nic != self.params["nic"]:
            return
        rec["rate_gbps"] = self.params["rate_gbps"]
        busy = self.params["busy"](node, t1)
        if busy and rec.get("xmit_wait") is not None:
            rec["xmit_wait"] += int((t1 - t0) * 2.6e7)   # ~40 % of ticks waiting
        if busy and rec.get("np_cnp_sent") is not None:
            rec["rp_cnp_handled"] += int((t1 - t0) * 900)

    def comm_factor(self, job, t):
        return self.params["comm"] if job in self.jobs else 1.0


class FlappingPort(Fault):
    """A port whose cable/transceiver fails on and off: symbol-error bursts, short flaps."""

    def _flaps(self):
        return self.params["flaps"]          # list of (down_at, down_s)

    def nic(self, rec, node, nic, t0, t1):
        if nic != self.params["nic"]:
            return
        for down_at, down_s in self._flaps():
            burst0 = down_at - 25.0
            lo, hi = max(t0, burst0), min(t1, down_at)
            if hi > lo:
                _bump(rec, "symbol_errors", int((hi - lo) * 45))
                _bump(rec, "rcv_errors", int((hi - lo) * 3))
            if t0 < down_at <= t1:
                _bump(rec, "link_downed", 1)
            if down_at <= t1 < down_at + down_s:
                rec["link_state"] = "down"
                rec["rate_gbps"] = 10.0 if self.params["fabric"] == "ib" else None

    def stall_s(self, job, t0, t1):
        if job not in self.jobs:
            return 0.0
        return sum(s + 1.5 for d, s in self._flaps() if t0 < d + s <= t1)


SLOWDOWN_C = 85.0


class ThermalRamp(Fault):
    """One GPU's thermal interface fails: it heats, then the driver slows it."""

    def _p(self, t):
        if t < self.onset or t >= self.until:
            return 0.0
        return min(1.0, (t - self.onset) / self.params["ramp_s"])

    def _loss(self, t):
        """Share of clock lost to thermal slowdown at t: none below the slowdown
        temperature (~85 C), `max_loss` at the top of the ramp."""
        base, rise = self.params["base_c"], self.params["rise_c"]
        over = base + self._p(t) * rise - SLOWDOWN_C
        return max(0.0, over) / (base + rise - SLOWDOWN_C) * self.params["max_loss"]

    def _hit(self, node, gpu):
        return node == self.params["node"] and gpu == self.params["gpu"]

    def gpu_factor(self, node, gpu, t):
        if not self._hit(node, gpu) or not self.params["busy"](node, t):
            return 1.0
        return 1.0 / (1.0 - self._loss(t))

    def thermal(self, rec, node, gpu, t):
        if not self._hit(node, gpu) or not self.params["busy"](node, t):
            return
        p = self._p(t)
        if p <= 0.0:
            return
        rec["gpu_temp_c"] = min(95, rec["gpu_temp_c"] + round(p * self.params["rise_c"]))
        rec["mem_temp_c"] = min(99, rec["mem_temp_c"] + round(p * 0.7 * self.params["rise_c"]))
        loss = self._loss(t)
        if loss > 0.0:
            rec["throttle"] = (rec["throttle"] & ~0x4) | 0x20 | (0x40 if loss > 0.12 else 0)
            rec["sm_clock_mhz"] = round(rec["sm_clock_mhz"] * (1.0 - loss) / 15) * 15
            rec["power_w"] = round(rec["power_w"] * (1.0 - 0.8 * loss), 3)


class PowerBrakeBursts(Fault):
    """A tray's PSU shelf asserts the power brake on and off: every GPU of the node."""

    def _on(self, t):
        return any(s <= t < s + d for s, d in self.params["bursts"])

    def gpu_factor(self, node, gpu, t):
        return 2.3 if node == self.params["node"] and self._on(t) else 1.0

    def thermal(self, rec, node, gpu, t):
        if node != self.params["node"] or not self._on(t):
            return
        rec["throttle"] = (rec["throttle"] & ~0x4) | 0x80 | 0x8
        rec["sm_clock_mhz"] = round(rec["sm_clock_mhz"] * 0.42 / 15) * 15
        rec["power_w"] = round(rec["power_w"] * 0.45, 3)


class SlowGpu(Fault):
    """A GPU slower than its peers: params node, gpu (None: every GPU), factor."""

    def gpu_factor(self, node, gpu, t):
        if node != self.params["node"] or t < self.onset or t >= self.until:
            return 1.0
        if self.params.get("gpu") is not None and gpu != self.params["gpu"]:
            return 1.0
        return self.params["factor"]


class ChecksumSdc(Fault):
    """One rank's parameters go wrong at an optimizer step and stay wrong."""

    def step(self, rec, job, rank):
        if (job.name in self.jobs and rec["node"] == self.params["node"]
                and rec["gpu"] == self.params["gpu"] and rec["ts"] >= self.onset
                and rec["ts"] < self.until and "param_checksum" in rec):
            rec["param_checksum"] = hashlib.blake2b(
                (rec["param_checksum"] + "flip").encode(), digest_size=8).hexdigest()


class GradNormSdc(Fault):
    """A GPU that corrupts its own gradient now and then: local grad_norm jumps on
    a few steps; the all-reduce hides it from every checksum."""

    def step(self, rec, job, rank):
        if (job.name in self.jobs and rec["node"] == self.params["node"]
                and rec["gpu"] == self.params["gpu"] and rec["step"] in self.params["steps"]
                and self.onset <= rec["ts"] < self.until):
            rec["grad_norm"] = round(rec["grad_norm"] * self.params["steps"][rec["step"]], 5)


class GpuXidFault(Fault):
    """A hardware XID on one GPU: DBE (48), fell off the bus (79), GSP (119), contained
    ECC (94). params: node, gpu, code, recovery, dbe (adds a DBE), remap (row remap
    pending after), gone (stops answering)."""

    def xids(self):
        fields = {}
        if self.params.get("dbe"):
            fields["dbe"] = 1
        out = [(self.onset, self.params["node"], self.params["gpu"], self.params["code"], fields)]
        for extra_dt, code in self.params.get("then", ()):
            out.append((self.onset + extra_dt, self.params["node"], self.params["gpu"], code, {}))
        return out

    def _hit(self, node, gpu):
        return node == self.params["node"] and gpu == self.params["gpu"]

    def gpu_gone(self, node, gpu, t):
        return self.params.get("gone", False) and self._hit(node, gpu) and t >= self.onset

    def ecc(self, rec, node, gpu, t0, t1):
        if not self._hit(node, gpu) or t1 < self.onset:
            return
        if t1 >= self.until:
            return
        if self.params.get("remap"):
            rec["row_remap_pending"] = True
        if self.params.get("recovery"):
            rec["recovery_action"] = self.params["recovery"]


class NvlinkErrors(Fault):
    """NVLink errors: params gpus = {(node, gpu)}, err_until, xid_gpus, comm (after
    err_until, for the jobs), burst_comm (while erring), slow_gpu_factor."""

    def _erring(self, t):
        return self.onset <= t < self.params["err_until"]

    def ecc(self, rec, node, gpu, t0, t1):
        if (node, gpu) not in self.params["gpus"]:
            return
        lo, hi = max(t0, self.onset), min(t1, self.params["err_until"])
        if hi <= lo:
            return
        dt = hi - lo
        rate = self.params["rate"]
        _bump(rec, "nvlink_crc_errors", int(dt * rate))
        _bump(rec, "nvlink_replay_errors", int(dt * rate * 0.3))
        _bump(rec, "nvlink_recovery_errors", max(1, int(dt * rate * 0.01)))

    def xids(self):
        return [(self.onset + dt, n, g, 74, {}) for dt, n, g in self.params["xid_gpus"]]

    def comm_factor(self, job, t):
        if job not in self.jobs or t < self.onset:
            return 1.0
        return self.params["burst_comm"] if self._erring(t) else self.params["comm"]

    def gpu_factor(self, node, gpu, t):
        f = self.params.get("slow_gpu_factor")
        if f and (node, gpu) in self.params["gpus"] and self._erring(t):
            return f
        return 1.0


def checksum(job: Job, attempt: int, tp: int, pp: int, step: int) -> str:
    key = f"{job.name}/{attempt}/{tp}/{pp}/{step}".encode()
    return hashlib.blake2b(key, digest_size=8).hexdigest()
