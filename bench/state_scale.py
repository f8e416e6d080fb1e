"""Engine state and memory at scale: bytes per GPU tracked at 1,000, 10,000 and 100,000 GPUs.

The simulator is too slow at 100,000 GPUs, so this feeds the engine
synthetic healthy telemetry, time-compressed (``--seconds`` of event time,
as fast as the engine takes it): nodes of 8 GPUs and 8 NIC ports, at 1 Hz a
thermal sample per GPU and a counter sample per port, an ECC sample per GPU
every 5 s, and one step message per rank per second from jobs of
``--job-gpus`` ranks (TP 8 x PP 2 x the rest data parallel; ``0``: one job
of every GPU).  Values are noisy around healthy levels, counters grow as
counters do.  Each size runs in a fresh process, so its resident memory is
its own; the figures are the engine's snapshot state (uncompressed) (what a snapshot
writes, divided by GPUs tracked) and the process's RSS before and after.

    python bench/state_scale.py [--gpus 1000,10000,100000] [--seconds 60] [--job-gpus 128]
"""

from __future__ import annotations

import argparse
import gc
import json
import subprocess
import sys
import time
from itertools import starmap
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from detector.engine import Engine  # noqa: E402
from detector.events import EccSample, NicSample, StepSample, ThermalSample  # noqa: E402
from detector.statecodec import raw_size  # noqa: E402

GPUS_PER_NODE = 8
T0 = 1767225600.0


def rss_kib() -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


class Cluster:
    """Identities and running counters of a synthetic cluster, one second at a time."""

    def __init__(self, gpus: int, job_gpus: int, seed: int = 1) -> None:
        self.rng = np.random.default_rng(seed)
        self.nodes = gpus // GPUS_PER_NODE
        self.gpus = self.nodes * GPUS_PER_NODE
        node_names = [f"node-{i:06d}" for i in range(self.nodes)]
        self.gpu_node = [n for n in node_names for _ in range(GPUS_PER_NODE)]
        self.gpu_index = list(range(GPUS_PER_NODE)) * self.nodes
        self.port_node = self.gpu_node  # one NIC port per GPU (rail-optimised)
        self.port_nic = [f"mlx5_{g}" for g in self.gpu_index]
        per_job = job_gpus or self.gpus
        ranks = np.arange(self.gpus) % per_job
        self.job = [f"job-{i // per_job}" for i in range(self.gpus)]
        self.rank = ranks.tolist()
        self.tp = (ranks % 8).tolist()
        self.pp = ((ranks // 8) % 2).tolist()
        self.dp = (ranks // 16).tolist()
        self.tx = self.rng.integers(10**12, 10**13, self.gpus)
        self.rx = self.tx.copy()
        self.xmit_wait = np.zeros(self.gpus, dtype=np.int64)
        self.step = 1000

    def second(self, t: float, lo: int, hi: int) -> list[Any]:
        """Every record of GPUs [lo, hi) in one second of event time, in time order."""
        n, rng = hi - lo, self.rng
        sl = slice(lo, hi)
        node, gpu = self.gpu_node[sl], self.gpu_index[sl]
        ones, zeros, nones = [1] * n, [0] * n, [None] * n
        cl, te = ["c"] * n, ["t"] * n
        out: list[Any] = []
        # steps end at t + 0.9 s, ranks a few ms apart
        compute = 700.0 * rng.lognormal(0.0, 0.015, n)
        step_ms = round(float(compute.max()) + 250.0, 2)
        ts = (t + 0.9 + 0.002 * rng.random(n)).tolist()
        out += starmap(StepSample, zip(
            ts, self.job[sl], [self.step] * n, self.rank[sl], node, gpu, [step_ms] * n,
            np.round(compute, 2).tolist(), [250.0] * n, self.tp[sl], self.pp[sl], self.dp[sl],
            [2.5] * n, rng.lognormal(0.0, 0.05, n).tolist(), ["a1b2c3d4"] * n, cl, te, strict=True))
        # thermal at t + 0.2 s
        ts = (t + 0.2 + 0.01 * rng.random(n)).tolist()
        out += starmap(ThermalSample, zip(
            ts, node, gpu, np.round(65 + rng.normal(0, 1.5, n), 1).tolist(), nones,
            np.round(650 + rng.normal(0, 10, n), 1).tolist(),
            (1980.0 - rng.integers(0, 8, n)).tolist(), zeros, cl, te, strict=True))
        # NIC counters at t + 0.5 s
        self.tx[sl] += rng.integers(40 * 10**9, 50 * 10**9, n)
        self.rx[sl] += rng.integers(40 * 10**9, 50 * 10**9, n)
        self.xmit_wait[sl] += rng.integers(0, 1000, n)
        ts = (t + 0.5 + 0.01 * rng.random(n)).tolist()
        out += starmap(NicSample, zip(
            ts, node, self.port_nic[sl], ones, ["up"] * n, [400.0] * n, self.tx[sl].tolist(),
            self.rx[sl].tolist(), zeros, zeros, zeros, zeros, self.xmit_wait[sl].tolist(),
            zeros, zeros, zeros, zeros, cl, te, strict=True))
        if int(t - T0) % 5 == 0:  # ECC every 5 s
            ts = (t + 0.7 + 0.01 * rng.random(n)).tolist()
            out += starmap(EccSample, zip(
                ts, node, gpu, zeros, zeros, zeros, zeros, [False] * n, [False] * n, nones,
                zeros, zeros, zeros, zeros, ["none"] * n, cl, te, strict=True))
        out.sort(key=lambda r: r.ts)
        return out


# GPUs generated at once: the records of one second of 8,192 GPUs are a few MB, so the
# generator's own memory does not blur the engine's.  Records are in time order within a
# chunk; from one chunk to the next event time steps back by under a second, which the
# engine takes as the slightly late, out-of-order input it is built for (5 s allowed).
CHUNK = 8192


def one(gpus: int, seconds: int, job_gpus: int) -> dict[str, Any]:
    gc.collect()
    rss0 = rss_kib()
    cluster = Cluster(gpus, job_gpus)
    eng = Engine()
    events = alerts = 0
    gen_s = 0.0
    t_start = time.process_time()
    for s in range(seconds):
        for lo in range(0, cluster.gpus, CHUNK):
            g0 = time.process_time()
            recs = cluster.second(T0 + s, lo, min(lo + CHUNK, cluster.gpus))
            gen_s += time.process_time() - g0
            for r in recs:
                alerts += len(eng.process(r))
            events += len(recs)
            del recs
        cluster.step += 1
    cpu = time.process_time() - t_start - gen_s
    del cluster
    gc.collect()
    rss1 = rss_kib()
    snap = eng.snapshot()
    tracked = eng.monitors.tracked_gpus()
    state = raw_size(snap)
    return {"gpus": gpus, "tracked_gpus": tracked, "seconds": seconds, "job_gpus": job_gpus,
            "events": events, "alerts": alerts, "engine_cpu_s": cpu,
            "events_per_cpu_s": events / cpu if cpu else 0.0,
            "state_bytes": state, "state_bytes_per_gpu": state / max(tracked, 1),
            "snapshot_bytes": len(snap), "rss_before_kib": rss0, "rss_after_kib": rss1,
            "rss_per_gpu_bytes": 1024 * (rss1 - rss0) / max(tracked, 1)}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--gpus", default="1000,10000,100000")
    ap.add_argument("--seconds", type=int, default=60, help="event time fed per GPU")
    ap.add_argument("--job-gpus", type=int, default=128, help="ranks per job; 0: one job")
    ap.add_argument("--one", type=int, default=None, help=argparse.SUPPRESS)
    ap.add_argument("--json", default=None, help="also write the results here")
    args = ap.parse_args()
    if args.one is not None:
        print(json.dumps(one(args.one, args.seconds, args.job_gpus)))
        return 0
    results = []
    print("| GPUs | job size | events fed | state B/GPU (raw) | snapshot (zlib) MiB | "
          "RSS before MiB | RSS after MiB | RSS growth B/GPU | engine events/CPU-s |")
    print("|---|---|---|---|---|---|---|---|---|")
    for gpus in map(int, args.gpus.split(",")):
        out = subprocess.run([sys.executable, __file__, "--one", str(gpus), "--seconds",
                              str(args.seconds), "--job-gpus", str(args.job_gpus)],
                             capture_output=True, text=True)
        if out.returncode:
            sys.stderr.write(out.stderr)
            return out.returncode
        r = json.loads(out.stdout.strip().splitlines()[-1])
        results.append(r)
        job = f"{args.job_gpus:,}" if args.job_gpus else "all"
        print(f"| {r['tracked_gpus']:,} | {job} | {r['events']:,} | "
              f"{r['state_bytes_per_gpu']:,.0f} | {r['snapshot_bytes'] / 2**20:,.1f} | "
              f"{r['rss_before_kib'] / 1024:,.0f} | {r['rss_after_kib'] / 1024:,.0f} | "
              f"{r['rss_per_gpu_bytes']:,.0f} | {r['events_per_cpu_s']:,.0f} |", flush=True)
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
