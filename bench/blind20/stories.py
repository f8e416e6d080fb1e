"""blind20's two stories, every choice drawn from the seed.

- ``fabric``: 16 HGX H100 on a RoCE fabric that Slurm's ``topology.conf`` describes (two
  leaves, one spine). A job starts on a node whose NIC trained at PCIe x8; a port flaps under
  another job; a shared file system stalls every job's checkpoint at once.
- ``board``: 12 HGX H100 on InfiniBand (faultline topology, racks of 4). A PCIe switch on one
  baseboard replays on its two GPUs; one GPU's HBM storms with corrected errors until a row
  remap is pending; a rack loses its rear-door cooling while another rack's aisle runs warm.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass

from bench.blind20.sim import Job, Shapes, Sim

Label = dict


@dataclass
class Story:
    topology: dict
    labels: list[Label]
    effects: list[dict]
    records: list[tuple[float, int, str, dict]]


def _windows(rng: random.Random, t0: float, t1: float, gap: tuple, dur: tuple) -> list:
    out, t = [], t0
    while t < t1:
        d = rng.uniform(*dur)
        out.append((t, min(t + d, t1)))
        t += d + rng.uniform(*gap)
    return out


def _label(fid, kind, cause, scope, span, attributable=True) -> Label:
    return {"fault_id": fid, "kind": kind, "cause": cause, "scope": scope,
            "start_ts": round(span[0], 3), "end_ts": round(span[1], 3),
            "attributable": attributable}


def _effect(name, scope, t0, t1) -> dict:
    return {"effect": name, "scope": scope, "start_ts": round(t0, 3), "end_ts": round(t1, 3)}


# -- fabric ------------------------------------------------------------------------------------

class FabricShapes(Shapes):
    def __init__(self, rng, t0, seconds, x8, flap, stall, sbe):
        self.rng, self.x8, self.flap, self.stall, self.sbe = rng, x8, flap, stall, sbe
        self.x8_factor = rng.uniform(1.3, 1.6)

    def comm_factor(self, job, t):
        if job.name == self.x8["job"]:     # a ring runs at its slowest rail's pace
            return self.x8_factor, {"nic-pcie-x8"}
        return 1.0, set()

    def stall_s(self, job, t0, t1):
        if job.name != self.flap["job"]:
            return 0.0, set()
        for a, b in self.flap["windows"]:
            if a < t1 and b > t0:          # the QPs retry until the link is back
                return (b - a) + self.rng.uniform(0.5, 1.5), {"port-flap"}
        return 0.0, set()

    def save_factor(self, t):
        a, b, f = self.stall
        return f if a <= t < b else 1.0

    def link_down(self, node, nic, t):
        if (node, nic) != (self.flap["node"], self.flap["nic"]):
            return False
        return any(a <= t < b for a, b in self.flap["windows"])

    def nic_tick(self, node, nic, port, busy, t, rng):
        tags = set()
        x8 = self.x8
        if busy and nic == x8["nic"] and node in x8["nodes"]:
            if node == x8["node"]:         # its queue at the leaf marks ECN: it sends CNPs
                port["np_cnp_sent"] += int(rng.uniform(1500, 5000))
                port["xmit_wait"] += int(rng.uniform(1e4, 8e4))
            else:                          # the senders to it slow down and wait
                port["rp_cnp_handled"] += int(rng.uniform(500, 2500))
                port["xmit_wait"] += int(rng.uniform(3e6, 9e6))
            tags.add("nic-pcie-x8")
        if (node, nic) == (self.flap["node"], self.flap["nic"]):
            for a, b in self.flap["windows"]:
                if a <= t < a + 1.0:
                    port["link_downed"] += 1
                    port["symbol_errors"] += int(rng.uniform(20, 300))
                    port["rcv_errors"] += int(rng.uniform(2, 20))
                    tags.add("port-flap")
                elif a + 1.0 <= t < b or b <= t < b + 3.0:   # training, then the lanes settling
                    if rng.random() < 0.5:
                        port["symbol_errors"] += rng.randrange(1, 12)
                    tags.add("port-flap")
        return tags

    def ecc_step(self, node, gpu, ecc, t, rng):
        if (node, gpu) == self.sbe and rng.random() < 0.09:
            ecc["sbe_volatile"] += 1       # a corrected bit now and then: routine
        return [], set()


def fabric(rng: random.Random, t0: float, seconds: float) -> Story:
    nodes = [f"fb{i:02d}" for i in range(1, 17)]
    spare = rng.choice(["fb13", "fb14", "fb15", "fb16"])
    c_nodes = [n for n in ("fb13", "fb14", "fb15", "fb16") if n != spare]
    jobs = [
        Job("llm-a", "research", ["fb01", "fb02", "fb03", "fb04", "fb09", "fb10", "fb11", "fb12"],
            8, 2, 4, [rng.uniform(1300, 1400), rng.uniform(1380, 1480)], rng.uniform(220, 300),
            rng.uniform(15, 30), t0 + rng.uniform(0, 5), rng.uniform(60, 110),
            rng.uniform(200, 260), rng.uniform(7000, 10000)),
        Job("ft-b", "product", ["fb05", "fb06", "fb07", "fb08"], 8, 1, 4,
            [rng.uniform(900, 1000)], rng.uniform(150, 200), rng.uniform(20, 40),
            t0 + rng.uniform(0, 5), rng.uniform(50, 90), rng.uniform(180, 240),
            rng.uniform(5000, 8000), 20),
        Job("ft-c", "product", c_nodes, 8, 1, 3, [rng.uniform(1100, 1200)],
            rng.uniform(180, 240), rng.uniform(20, 40),
            t0 + seconds * rng.uniform(0.22, 0.35), rng.uniform(50, 90), rng.uniform(180, 240),
            rng.uniform(5000, 8000)),
    ]
    x8 = {"job": "ft-c", "nodes": c_nodes, "node": rng.choice(c_nodes),
          "nic": f"mlx5_{rng.randrange(8)}"}
    f_node, f_nic = rng.choice(jobs[1].nodes), f"mlx5_{rng.randrange(8)}"
    f_on = t0 + seconds * rng.uniform(0.3, 0.5)
    flap = {"job": "ft-b", "node": f_node, "nic": f_nic,
            "windows": _windows(rng, f_on, t0 + seconds - 20, (30, 90), (2, 6))}
    s0 = t0 + seconds * rng.uniform(0.55, 0.66)
    stall = (s0, s0 + rng.uniform(300, 360), rng.uniform(3.5, 6.0))
    sbe = (rng.choice(nodes), rng.randrange(8))
    sh = FabricShapes(rng, t0, seconds, x8, flap, stall, sbe)
    sim = Sim(rng, nodes, jobs, sh, t0, seconds, roce=True)
    sim.run()
    sp = sim.spans
    labels = [
        _label("nic-pcie-x8", "network", "nic",
               {"level": "nic", "node": x8["node"], "nic": x8["nic"], "port": 1},
               sp["nic-pcie-x8"]),
        _label("port-flap", "network", "nic",
               {"level": "nic", "node": f_node, "nic": f_nic, "port": 1}, sp["port-flap"]),
    ]
    effects = [
        _effect("storage-stall-saves", {"job": j.name}, stall[0], stall[1]) for j in jobs] + [
        _effect("sbe-trickle", {"node": sbe[0], "gpu": sbe[1]}, t0, t0 + seconds),
        _effect("dcqcn-baseline-cnps", {"job": "llm-a"}, t0, t0 + seconds),
        _effect("cold-start", {"job": "ft-c"}, jobs[2].start_ts, jobs[2].start_ts + 15),
        _effect("flap-collateral-steps", {"job": "ft-b"}, f_on, t0 + seconds),
    ]
    text = ("# Slurm topology.conf (tree plugin): two RoCE leaves under one spine\n"
            "SwitchName=leaf1 Nodes=fb[01-08] LinkSpeed=400\n"
            "SwitchName=leaf2 Nodes=fb[09-16] LinkSpeed=400\n"
            "SwitchName=spine1 Switches=leaf[1-2]\n")
    return Story({"format": "slurm", "text": text}, labels, effects, sim.recs)


# -- board -------------------------------------------------------------------------------------

class BoardShapes(Shapes):
    def __init__(self, rng, seconds, pcie, storm, rack, aisle, trickle):
        self.rng, self.pcie, self.storm = rng, pcie, storm
        self.rack, self.aisle, self.trickle = rack, aisle, trickle

    def inlet_c(self, node, t):
        base = 23.0                        # one room, one supply temperature
        r = self.rack
        if node in r["nodes"] and t >= r["on"]:
            base += r["rise"] * min(1.0, (t - r["on"]) / r["ramp"])
        a = self.aisle
        if node in a["nodes"] and a["on"] <= t < a["off"] + 90:
            up = min(1.0, (t - a["on"]) / 60.0)
            down = 1.0 if t < a["off"] else max(0.0, 1.0 - (t - a["off"]) / 90.0)
            base += a["rise"] * min(up, down)
        return base

    def thermal_tags(self, node, t):
        r = self.rack
        if node in r["busy"] and t >= r["on"]:
            return {f"rack-cooling-{node}"}
        return set()

    def host_late(self, job, node, t):
        p = self.pcie
        if node == p["node"] and t >= p["on"]:
            return p["late"], p["gpus"], {"pcie-switch-pair"}
        return 0.0, (), set()

    def ecc_step(self, node, gpu, ecc, t, rng):
        p, s = self.pcie, self.storm
        xids, tags = [], set()
        if node == p["node"] and gpu in p["gpus"] and t >= p["on"]:
            ecc["pcie_replay"] += int(rng.uniform(10, 60))
            tags.add("pcie-switch-pair")
        if (node, gpu) == (s["node"], s["gpu"]) and t >= s["on"]:
            x = min(1.0, (t - s["on"]) / 300.0)
            ecc["sbe_volatile"] += int(3 * math.exp(math.log(130) * x) * rng.uniform(0.7, 1.3))
            tags.add("sbe-storm-remap")
            for code, when in s["xids"]:
                if t - 30.0 < when <= t:
                    xids.append((when, code))
                    if code == 63:
                        ecc["row_remap_pending"] = True
                        ecc["recovery_action"] = "gpu_reset"
                    if code == 64:
                        ecc["row_remap_failure"] = True
        if (node, gpu) == self.trickle and rng.random() < 0.1:
            ecc["sbe_volatile"] += 1
        return xids, tags


def board(rng: random.Random, t0: float, seconds: float, seed: int) -> Story:
    nodes = [f"bd{i:02d}" for i in range(1, 13)]
    jobs = [
        Job("pt-a", "research", ["bd01", "bd02", "bd03", "bd04"], 8, 2, 2,
            [rng.uniform(1450, 1550), rng.uniform(1520, 1620)], rng.uniform(200, 260),
            rng.uniform(15, 30), t0 + rng.uniform(0, 5), rng.uniform(60, 100),
            rng.uniform(200, 260), rng.uniform(7000, 10000)),
        Job("pt-b", "research", ["bd05", "bd06", "bd07", "bd08"], 8, 1, 4,
            [rng.uniform(950, 1050)], rng.uniform(150, 200), rng.uniform(20, 40),
            t0 + rng.uniform(0, 5), rng.uniform(50, 90), rng.uniform(180, 240),
            rng.uniform(5000, 8000), 20),
        Job("ft-c", "product", ["bd09", "bd10", "bd11"], 8, 1, 3, [rng.uniform(1100, 1200)],
            rng.uniform(180, 240), rng.uniform(20, 40), t0 + seconds * rng.uniform(0.02, 0.05),
            rng.uniform(50, 90), rng.uniform(180, 240), rng.uniform(5000, 8000)),
    ]
    pair = rng.randrange(4)
    pcie = {"node": rng.choice(jobs[0].nodes), "gpus": (2 * pair, 2 * pair + 1),
            "on": t0 + seconds * rng.uniform(0.25, 0.45), "late": rng.uniform(0.04, 0.09)}
    s_on = t0 + seconds * rng.uniform(0.15, 0.3)
    x92, xids = s_on + rng.uniform(120, 240), []
    pend = s_on + rng.uniform(300, 420)
    while x92 < t0 + seconds - 30:
        xids.append((92, x92))
        x92 += rng.uniform(60, 150)
    xids.append((63, pend))
    if seed % 2:
        xids.append((64, pend + rng.uniform(30, 90)))
    storm = {"node": rng.choice(jobs[1].nodes), "gpu": rng.randrange(8), "on": s_on,
             "xids": sorted(xids, key=lambda x: x[1])}
    rack = {"nodes": ["bd09", "bd10", "bd11", "bd12"], "busy": ["bd09", "bd10", "bd11"],
            "on": t0 + seconds * rng.uniform(0.45, 0.6), "ramp": rng.uniform(240, 360),
            "rise": rng.uniform(24, 30)}
    a_on = t0 + seconds * rng.uniform(0.12, 0.25)
    aisle = {"nodes": ["bd05", "bd06", "bd07", "bd08"], "on": a_on,
             "off": a_on + 60 + rng.uniform(300, 420), "rise": rng.uniform(6, 9)}
    trickle = (rng.choice(nodes), rng.randrange(8))
    sh = BoardShapes(rng, seconds, pcie, storm, rack, aisle, trickle)
    sim = Sim(rng, nodes, jobs, sh, t0, seconds, roce=False)
    sim.run()
    sp = sim.spans
    labels = [
        _label("pcie-switch-pair", "hardware", "gpu_hardware",
               {"level": "node", "node": pcie["node"]}, sp["pcie-switch-pair"]),
        _label("sbe-storm-remap", "hardware", "gpu_memory",
               {"level": "gpu", "node": storm["node"], "gpu": storm["gpu"]},
               sp["sbe-storm-remap"]),
    ] + [_label(f"rack-cooling-{n}", "slow_node", "thermal", {"level": "node", "node": n},
                sp[f"rack-cooling-{n}"]) for n in rack["busy"]]
    effects = [
        _effect("warm-aisle", {"node": n}, aisle["on"], aisle["off"] + 90)
        for n in aisle["nodes"]] + [
        _effect("rack-cooling-idle-node", {"node": "bd12"}, rack["on"], t0 + seconds),
        _effect("sbe-trickle", {"node": trickle[0], "gpu": trickle[1]}, t0, t0 + seconds),
        _effect("pipeline-stage-imbalance", {"job": "pt-a"}, t0, t0 + seconds),
    ]
    text = ("Topology=board Version=1\n"
            "NodeSet=bd[01-12] Gpus=8 Nics=mlx5_[0-7]\n"
            "Rack=rack-[1-3] Nodes=bd[01-12]\n"
            "SwitchName=leaf-[1-2] Nodes=bd[01-12]\n"
            "SwitchName=spine-1 Switches=leaf-[1-2]\n")
    return Story({"format": "faultline", "text": text}, labels, effects, sim.recs)


STORIES = {"fabric": lambda rng, t0, s, seed: fabric(rng, t0, s), "board": board}
