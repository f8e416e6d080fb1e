"""blind22's world: real PAI noise, the two clusters' topology texts, an H100 board's
power, clock and temperature, and a port's healthy counter rates.

The rank jitter is PAI job 2's idiosyncratic residuals (each worker's log time minus the
step's cross-worker median and the worker's own median: what is left when the job's pace and
a worker's constant offset are taken out), chained in windows of 40-120 samples and scaled to
the story's spread. Job 2 only: Alibaba notes stragglers in jobs 1, 3 and 4, which would plant
unlabelled slow ranks in healthy ones (blind21's lesson, read in BENCHMARKS.md).
"""

from __future__ import annotations

import csv
import functools
from pathlib import Path

import numpy as np

DATA = Path(__file__).resolve().parent.parent / "data" / "alibaba-pai-minibatch"

FABRIC_TOPOLOGY = """\
# hgx fabric as the site's Slurm has it (tree plugin): two leaves, one logical spine tier
SwitchName=leaf1 Nodes=hgx[001-008] LinkSpeed=400
SwitchName=leaf2 Nodes=hgx[009-016] LinkSpeed=400
SwitchName=spine Switches=leaf[1-2]
"""

SCHED_TOPOLOGY = """\
Topology=sched-16 Version=1
# 16 HGX H100, RoCE 400G, one NIC a GPU, classic leaves (every NIC faces its node's leaf)
NodeSet=sx[01-16] Gpus=8 Nics=mlx5_[0-7]
Rack=rack-[1-4] Nodes=sx[01-16]
SwitchName=leaf-[1-2] Nodes=sx[01-16]
SwitchName=spine-1 Switches=leaf-[1-2]
"""


@functools.cache
def _residuals() -> tuple[np.ndarray, ...]:
    """PAI job 2: each worker's residual series (log time - step median - worker median)."""
    by: dict[int, dict[int, float]] = {}
    with open(DATA / "job_2_norm.csv", encoding="utf-8") as fh:
        for row in csv.DictReader(fh):
            by.setdefault(int(row["worker"]), {})[int(row["time"])] = float(
                row["batch_time_norm"])
    steps = sorted(set.intersection(*(set(v) for v in by.values())))
    mat = np.log(np.array([[by[w][s] for s in steps] for w in sorted(by)]))
    mat = mat - np.median(mat, axis=0, keepdims=True)
    mat = mat - np.median(mat, axis=1, keepdims=True)
    return tuple(row / row.std() for row in mat)


def jitter(rng: np.random.Generator, n: int, sigma: float) -> np.ndarray:
    """One rank's log-jitter for ``n`` steps: chained windows of PAI job 2 residuals, std
    ``sigma``, each window's sign drawn (their lag-1 autocorrelation, ~0.5-0.8, kept)."""
    pool = _residuals()
    out: list[np.ndarray] = []
    have = 0
    while have < n:
        row = pool[int(rng.integers(len(pool)))]
        ln = int(rng.integers(40, 121))
        a = int(rng.integers(0, len(row) - ln))
        out.append(row[a:a + ln] * (1.0 if rng.random() < 0.5 else -1.0))
        have += ln
    x = np.concatenate(out)[:n]
    return sigma * (x - x.mean())


# -- an H100 SXM board -----------------------------------------------------------------------

IDLE_W = (62.0, 74.0)
BUSY_W = (575.0, 660.0)
BUSY_MHZ = 1980.0
IDLE_MHZ = 345.0
R_C_PER_W = 0.052        # die over inlet, C per W (steady state)
TAU_S = 40.0             # thermal lag


def settle_power(load: np.ndarray, idle_w: np.ndarray, busy_w: np.ndarray) -> np.ndarray:
    """Per-second power of each GPU from its load (0 idle .. 1 busy)."""
    return idle_w[..., None] + (busy_w - idle_w)[..., None] * load


def lagged(x: np.ndarray, tau_s: float = TAU_S) -> np.ndarray:
    """First-order lag along the last axis (1 s a sample)."""
    out = np.empty_like(x)
    a = 1.0 / tau_s
    acc = x[..., 0].copy()
    for i in range(x.shape[-1]):
        acc += a * (x[..., i] - acc)
        out[..., i] = acc
    return out


def clock_of(load: float, rng: np.random.Generator) -> float:
    if load < 0.05:
        return IDLE_MHZ
    if load < 0.5:
        return float(rng.choice([1410.0, 1755.0, 1980.0]))
    return BUSY_MHZ - float(rng.choice([0.0, 0.0, 0.0, 15.0, 30.0]))


# -- a port ----------------------------------------------------------------------------------

def hexsum(*parts: object) -> str:
    """A parameter checksum as a framework prints one (16 hex digits)."""
    import hashlib
    return hashlib.blake2b("|".join(map(str, parts)).encode(), digest_size=8).hexdigest()
