"""DCGM thermal / ECC / XID samples and NIC port samples of one node.

Two collectors: dcgm-exporter scraped every 30 s (DCGM integers for temperatures and
clocks, every ECC counter enabled, XIDs turned into events on the next scrape), and a
site's own 1 s NVML collector (floats, no `mem_temp_c`, no retired-page or NVLink
counters: optional fields it never wired). Counters count from the node's last boot; a
node whose ECC mode was switched off at a reboot reports its ECC counters as null.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass

from bench.blind5.fleet import GpuTrace, Node


@dataclass(frozen=True)
class Xid:
    """An XID event and what it leaves in the ECC state."""

    node: str
    gpu: int
    t: float
    xid: int
    fid: str
    dbe: int = 0
    remap_pending: bool = False
    recovery: str | None = None


@dataclass(frozen=True)
class NicEvent:
    """A port's trouble: error bursts (`rates` per second) or a link down window."""

    node: str
    nic: str
    t0: float
    t1: float
    fid: str
    rates: tuple[tuple[str, float], ...] = ()
    down: bool = False


def _samples(node: Node, every: float, t0: float, seconds: int):
    t = t0 + node.phase % every
    while t < t0 + seconds:
        if not node.is_down(t):
            yield t
        t += every


def _poisson(rng: random.Random, lam: float) -> int:
    if lam <= 0:
        return 0
    if lam > 30:
        return max(0, int(round(rng.gauss(lam, math.sqrt(lam)))))
    k, p, limit = 0, 1.0, math.exp(-lam)
    while True:
        p *= rng.random()
        if p <= limit:
            return k
        k += 1


def emit_thermal(rng, node: Node, traces: dict[tuple[str, int], GpuTrace], t0, seconds, out):
    exporter = node.collector == "dcgm-exporter"
    for t in _samples(node, node.dcgm_s, t0, seconds):
        i = int(t - t0)
        for g in range(node.gpus):
            tr = traces[(node.name, g)]
            v = {"ts": round(t + node.clock_off_s + rng.uniform(0, 0.05), 3),
                 "node": node.name, "gpu": g}
            if exporter:
                v.update(gpu_temp_c=int(round(tr.temp[i])), mem_temp_c=int(round(tr.mem_temp[i])),
                         power_w=round(tr.power[i], 3), sm_clock_mhz=int(round(tr.clock[i])),
                         throttle=tr.throttle[i])
            else:
                v.update(gpu_temp_c=round(tr.temp[i], 1), power_w=round(tr.power[i], 1),
                         sm_clock_mhz=float(round(tr.clock[i])), throttle=tr.throttle[i])
            out.append((t, "telemetry.thermal", v, tr.touch[i], node.name))


def emit_ecc(rng, node: Node, xids: list[Xid], t0, seconds, out):
    exporter = node.collector == "dcgm-exporter"
    mine = sorted((x for x in xids if x.node == node.name), key=lambda x: x.t)
    state = {g: {"sbe": 0, "dbe": 0, "pcie": 0, "boot": None, "pending": False,
                 "recovery": "none", "fids": frozenset()} for g in range(node.gpus)}
    samples = list(_samples(node, node.ecc_s, t0, seconds))
    prev = t0 - node.ecc_s
    for t in samples:
        boot = node.boot_of(t)
        for g in range(node.gpus):
            st = state[g]
            if st["boot"] != boot:  # a reboot: volatile counters and states start again
                st.update(sbe=0, dbe=0, pcie=0, boot=boot, pending=False, recovery="none",
                          fids=frozenset())
            st["sbe"] += _poisson(rng, node.sbe_rate[g] * (t - prev))
            st["pcie"] += _poisson(rng, 0.002 * (t - prev) if node.is_busy(g, t) else 0.0)
        # XID events in (prev, t]: the collector sends each as its own sample (exporter:
        # on this scrape, with the scrape's time; NVML collector: at the event's time).
        for x in mine:
            if prev < x.t <= t:
                st = state[x.gpu]
                st["dbe"] += x.dbe
                st["pending"] = st["pending"] or x.remap_pending
                if x.recovery:
                    st["recovery"] = x.recovery
                st["fids"] = st["fids"] | {x.fid}
                ts = t if exporter else x.t
                v = _ecc_value(node, x.gpu, ts, st, exporter)
                v["xid"] = x.xid
                out.append((ts, "telemetry.ecc", v, frozenset({x.fid}), node.name))
        for g in range(node.gpus):
            st = state[g]
            v = _ecc_value(node, g, t, st, exporter)
            fids = st["fids"] if (st["pending"] or st["recovery"] != "none" or st["dbe"]) \
                else frozenset()
            out.append((t, "telemetry.ecc", v, fids, node.name))
        prev = t


def _ecc_value(node: Node, g: int, t: float, st: dict, exporter: bool) -> dict:
    ecc_on = node.ecc_off_from is None or t < node.ecc_off_from
    v = {"ts": round(t + node.clock_off_s, 3), "node": node.name, "gpu": g,
         "sbe_volatile": st["sbe"] if ecc_on else None,
         "dbe_volatile": st["dbe"] if ecc_on else None,
         "row_remap_pending": st["pending"], "row_remap_failure": False, "xid": None,
         "recovery_action": st["recovery"]}
    if exporter:
        v.update(retired_pages_sbe=0, retired_pages_dbe=0, pcie_replay=st["pcie"],
                 nvlink_crc_errors=0, nvlink_replay_errors=0, nvlink_recovery_errors=0)
    return v


NIC_COUNTERS_IB = ("symbol_errors", "link_downed", "rcv_errors", "xmit_discards", "xmit_wait")
NIC_COUNTERS_ROCE = ("out_of_sequence", "packet_seq_err", "np_cnp_sent", "rp_cnp_handled")


def emit_nic(rng, node: Node, events: list[NicEvent], roce: bool, t0, seconds, out):
    mine = [e for e in events if e.node == node.name]
    names = NIC_COUNTERS_IB + (NIC_COUNTERS_ROCE if roce else ())
    state = {nic: {"boot": None, **{c: 0 for c in names + ("tx", "rx")}} for nic in node.nics}
    samples = list(_samples(node, node.nic_s, t0, seconds))
    prev = t0 - node.nic_s
    first_after_boot = set()
    for t in samples:
        boot = node.boot_of(t)
        busy = node.is_busy(0, t)
        for nic in node.nics:
            st = state[nic]
            if st["boot"] != boot:
                st.update({c: 0 for c in names + ("tx", "rx")})
                st["boot"] = boot
                if boot > t0:
                    first_after_boot.add(nic)
            dt = t - prev
            rate = rng.uniform(9.5e9, 12.5e9) if busy else rng.uniform(1e5, 3e6)
            st["tx"] += int(rate * dt)
            st["rx"] += int(rate * dt * rng.uniform(0.98, 1.02))
            if busy:
                st["xmit_wait"] += int(rng.uniform(1e4, 2e5) * dt)
                if roce:
                    cnp = _poisson(rng, 30 * dt)
                    st["np_cnp_sent"] += cnp
                    st["rp_cnp_handled"] += _poisson(rng, 30 * dt)
            if rng.random() < dt / 3000:  # a stray error now and then on a healthy port
                st["symbol_errors"] += 1
            fids: set[str] = set()
            down = False
            for e in mine:
                if e.nic != nic:
                    continue
                a, b = max(prev, e.t0), min(t, e.t1)
                if e.down:
                    if e.t0 <= t < e.t1:
                        down = True
                        fids.add(e.fid)
                    if prev < e.t0 <= t:
                        st["link_downed"] += 1
                        fids.add(e.fid)
                elif b > a:
                    for c, r in e.rates:
                        if c in st:
                            n = _poisson(rng, r * (b - a))
                            if n:
                                st[c] += n
                                fids.add(e.fid)
            training = nic in first_after_boot and node.nics.index(nic) % 4 == 1
            first_after_boot.discard(nic)
            v = {"ts": round(t + node.clock_off_s + rng.uniform(0, 0.05), 3),
                 "node": node.name, "nic": nic, "port": 1,
                 "link_state": "down" if (down or training) else "up",
                 "rate_gbps": 400.0, "tx_bytes": st["tx"], "rx_bytes": st["rx"]}
            v.update({c: st[c] for c in names})
            out.append((t, "telemetry.nic", v, frozenset(fids), node.name))
        prev = t
