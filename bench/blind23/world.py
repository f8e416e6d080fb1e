"""What blind23's clusters are made of: boards, real PAI step noise, the two topology texts.

Boards are per-GPU thermal and clock facts (public data sheets, rounded; `r_c_per_w` is die
minus inlet or coolant per watt at the board's cooling): an air-cooled H100 SXM, an H100 on a
liquid loop, an A100 SXM4 40 GB, an L40S (PCIe, air, 350 W, runs hot and at its power cap as a
matter of course). Step noise is real: chained windows of Alibaba PAI jobs 1 and 3's
idiosyncratic residuals (log time minus the sample's cross-worker median and the worker's own
median; the straggling workers left out), standardized per worker -- lag-1 ~0.6-0.8 kept.
"""

from __future__ import annotations

import csv
from dataclasses import dataclass
from pathlib import Path

import numpy as np

# the repository's unchanged copy of /work/shared/data/alibaba-pai-minibatch (a fresh clone has it)
PAI = Path(__file__).resolve().parent.parent / "data" / "alibaba-pai-minibatch"


@dataclass(frozen=True)
class Board:
    """One GPU model as its telemetry shows it."""
    name: str
    gpus: int
    idle_w: float
    busy_w: float          # drawn under a training load, before any cap
    limit_w: float         # the board's power limit (0x4 when reached)
    clock_mhz: float       # SM clock under load, uncapped, unthrottled
    idle_mhz: float
    r_c_per_w: float       # die over inlet / coolant per watt
    sw_thermal_c: float    # 0x20 above this
    hw_thermal_c: float    # 0x40 above this
    mem_over_die_c: float
    nvlink: bool


H100_AIR = Board("H100-SXM5-80GB", 8, 72.0, 640.0, 700.0, 1980.0, 345.0, 0.058, 87.0, 92.0,
                 5.0, True)
H100_LIQUID = Board("H100-SXM5-80GB-liquid", 8, 68.0, 645.0, 700.0, 1980.0, 345.0, 0.040, 87.0,
                    92.0, 6.0, True)
A100 = Board("A100-SXM4-40GB", 8, 55.0, 385.0, 400.0, 1410.0, 210.0, 0.085, 85.0, 90.0, 4.0,
             True)
L40S = Board("L40S", 4, 36.0, 362.0, 350.0, 2520.0, 210.0, 0.150, 87.0, 92.0, 0.0, False)


def _residuals(job: int, drop: set[int]) -> list[np.ndarray]:
    by: dict[int, dict[int, float]] = {}
    with open(PAI / f"job_{job}_norm.csv", newline="") as fh:
        for row in csv.DictReader(fh):
            by.setdefault(int(row["worker"]), {})[int(row["time"])] = float(row["batch_time_norm"])
    times = sorted(set.intersection(*(set(d) for d in by.values())))
    logs = np.log(np.maximum(np.array([[by[w][t] for t in times] for w in sorted(by)]), 1.0))
    res = logs - np.median(logs, axis=0)
    res -= np.median(res, axis=1, keepdims=True)
    out = []
    for w, r in enumerate(res):
        if w not in drop:
            out.append((r - r.mean()) / r.std())
    return out


_POOL: list[np.ndarray] | None = None


def pai_pool() -> list[np.ndarray]:
    """Standardized residual series of PAI jobs 1 (worker 6, the straggler, left out) and 3
    (workers 6 and 7, the stragglers, left out)."""
    global _POOL
    if _POOL is None:
        _POOL = _residuals(1, {6}) + _residuals(3, {6, 7})
    return _POOL


def pai_noise(rng: np.random.Generator, n: int) -> np.ndarray:
    """n steps of one rank's standardized noise: chained 40-120-sample windows of real
    residuals (each window from a random worker and offset)."""
    pool = pai_pool()
    out: list[np.ndarray] = []
    have = 0
    while have < n:
        series = pool[int(rng.integers(len(pool)))]
        w = int(rng.integers(40, 121))
        start = int(rng.integers(0, len(series) - w))
        out.append(series[start:start + w])
        have += w
    return np.concatenate(out)[:n]


FLEET_TOPOLOGY = """\
# mixed-fleet: three generations in one cluster (faultline topology)
Topology=mixed-fleet Version=1
NodeSet=h100-[00-07] Gpus=8 Nics=mlx5_[0-7]
NodeSet=a100-[00-07] Gpus=8 Nics=mlx5_[0-3]
NodeSet=l40s-[00-03] Gpus=4 Nics=mlx5_[0-1]
Rack=rack-[0-4] Nodes=h100-[00-07],a100-[00-07],l40s-[00-03]
SwitchName=leaf-h100 Nodes=h100-[00-07]
SwitchName=leaf-a100 Nodes=a100-[00-07]
SwitchName=leaf-l40s Nodes=l40s-[00-03]
SwitchName=spine-[0-1] Switches=leaf-h100,leaf-a100,leaf-l40s
"""

LOOP_TOPOLOGY = """\
# topology.conf -- liquid-cooled pod (tree plugin); racks and CDUs are not Slurm's business
SwitchName=leaf1 Nodes=gpu[01-08] LinkSpeed=400
SwitchName=leaf2 Nodes=gpu[09-16] LinkSpeed=400
SwitchName=spine Switches=leaf[1-2]
"""
