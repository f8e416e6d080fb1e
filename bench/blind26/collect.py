"""The collectors: dcgm-exporter every 30 s (thermal) and 60 s (ECC), node_exporter's InfiniBand
/ RoCE ports every 30 s, each node at its own phase; all of a node's GPUs in one scrape share its
time. A story's faults and routine shapes reach the rows through ``Hooks``.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass, field

from bench.blind26.sim import Activity
from bench.blind26.world import (
    ECC_S,
    NIC_S,
    THERMAL_S,
    Log,
    Node,
    advance_port,
    ecc_row,
    nic_row,
    thermal_row,
)


@dataclass
class Hooks:
    # (node, gpu) -> (fid, f(t) -> world.thermal_row's ``slow`` dict | None)
    thermal: dict = field(default_factory=dict)
    # (node, gpu) -> [(fid | None, f(t, gpu) -> dict of ECC fields changed | None)]
    ecc: dict = field(default_factory=dict)
    # (node, nic) -> [(fid | None, f(t, counters, dt) -> bool: changed)]
    nic: dict = field(default_factory=dict)
    # node -> [(a, b)]: dcgm-exporter not answering
    dcgm_down: dict = field(default_factory=dict)
    # f(node, t) -> inlet offset C
    inlet: list = field(default_factory=list)
    # node -> GB/s a port moves while its job is busy
    port_gbytes_s: Callable = lambda node: 9.0


def _down(h: Hooks, node: str, t: float) -> bool:
    return any(a <= t < b for a, b in h.dcgm_down.get(node, ()))


def collect(log: Log, rng: random.Random, nodes: dict[str, Node], act: Activity, h: Hooks,
            t0: float, t1: float, roce: bool) -> None:
    for n in nodes.values():
        t = t0 + n.dcgm_phase
        k = 0
        while t < t1:
            if not _down(h, n.name, t):
                inlet = n.inlet_c + sum(f(n.name, t) for f in h.inlet)
                state = act.state(n.name, t)
                for g in n.gpus:
                    hook = h.thermal.get((n.name, g.gpu))
                    slow = hook[1](t) if hook else None
                    v = thermal_row(rng, g, t, state, inlet, slow)
                    log.add("telemetry.thermal", v, [hook[0]] if slow and state == "busy"
                            else [])
                if k % int(ECC_S / THERMAL_S) == 0:
                    for g in n.gpus:
                        over, fids = {}, []
                        for fid, f in h.ecc.get((n.name, g.gpu), ()):
                            o = f(t, g)
                            if o is not None:
                                over.update(o)
                                fids.append(fid)
                        v = ecc_row(g, t)
                        v.update(over)
                        log.add("telemetry.ecc", v, fids)
            t += THERMAL_S
            k += 1
        t = t0 + n.nic_phase
        prev = t0 + n.nic_phase - NIC_S
        while t < t1:
            share = act.busy_share(n.name, prev, t)
            for nic in n.nics:
                c = n.ports[nic]
                advance_port(rng, c, share, t - prev, h.port_gbytes_s(n.name), roce)
                fids = [fid for fid, f in h.nic.get((n.name, nic), ()) if f(t, c, t - prev)]
                log.add("telemetry.nic", nic_row(n, nic, t), fids)
            prev, t = t, t + NIC_S
