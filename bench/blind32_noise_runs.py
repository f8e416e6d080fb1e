"""Where blind32's long noise runs come from: the samples of Alibaba PAI job 3 they are made of.

blind32 (``bench/blind32/noise.py``) chains 30-100-sample windows of job 3's workers, each
centred on its worker's median, scaled by its MAD, the window's mean taken out, the whole scaled
to sd 1 and clipped at 4.  Job 3's workers 6-9 run 1.15-1.3x the others from iteration ~2,200
to the trace's end (their samples from ~190 of 249: 5-9 MADs over their medians; Alibaba: job 3
"could have multiple stragglers"; faultline pages them on the trace, tests/test_alibaba_pages.py).
A window over that onset is a level step; clipped, a run of ~4 sigma.  This counts, in streams
drawn as blind32 draws them, the ``--steps``-step means at ``--at`` sigma or more, and how many
of them are mostly (over half their samples) of those workers' samples from ``--from``:

    python bench/blind32_noise_runs.py [--streams 400] [--length 600] [--steps 7] [--at 3.0]

``--replay A..B`` replays, for seeds A..B-1, a healthy blind32-like job (TP8 x PP2 x DP4 on 8
nodes, one stream a node at a 1 % CoV, 0.3 % rank jitter, 400 steps of 1.6 s) through the engine
twice: on the streams as drawn and on streams drawn without those samples (workers 6-9 cut at
``--from``), and prints the pages of each.

Measured (noise42, round 42): 190 of 190 at 3 sigma, 63 of 63 at 3.5 (blind32 F2's runs: ~4 %
at a 1 % CoV for 7-14 steps); ``--replay 0..48``: 9 node pages in 48 jobs as drawn, 0 in the
same 48 with the stragglers cut.
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.blind32 import noise  # noqa: E402

STRAGGLERS = (6, 7, 8, 9)


def traced_stream(rng: random.Random, n: int) -> tuple[list[float], list[tuple[int, int]]]:
    """``noise.stream``'s draw (the same steps, so the same values for a seed) with each
    sample's source: (worker, sample index)."""
    workers = noise._workers()
    raw: list[float] = []
    src: list[tuple[int, int]] = []
    while len(raw) < n:
        wi = rng.randrange(len(workers))
        w = workers[wi]
        k = rng.randint(30, 100)
        i = rng.randrange(0, len(w) - k)
        win = w[i:i + k]
        m = statistics.fmean(win)
        raw.extend(x - m for x in win)
        src.extend((wi, i + j) for j in range(k))
    raw, src = raw[:n], src[:n]
    sd = statistics.pstdev(raw) or 1.0
    return [max(-noise.CLIP, min(noise.CLIP, x / sd)) for x in raw], src


def _job(seed: int, cut: int | None, steps: int = 400, cov: float = 0.01) -> list:
    """A healthy blind32-like job's step records (``--replay``); ``cut``: workers 6-9's
    samples from it are left out of the noise."""
    import numpy as np

    from detector.testing import parallel_step
    workers = noise._workers()
    if cut is not None:
        workers = tuple(w[:cut] if i in STRAGGLERS else w for i, w in enumerate(workers))
    rng, g = random.Random(seed), np.random.default_rng(seed)
    streams = []
    for _ in range(8):
        raw: list[float] = []
        while len(raw) < steps:
            w = workers[rng.randrange(len(workers))]
            k = rng.randint(30, 100)
            i = rng.randrange(0, len(w) - k)
            m = statistics.fmean(w[i:i + k])
            raw.extend(x - m for x in w[i:i + k])
        sd = statistics.pstdev(raw[:steps]) or 1.0
        streams.append([max(-noise.CLIP, min(noise.CLIP, x / sd)) for x in raw[:steps]])
    node = np.array(streams)
    out = []
    for s in range(steps):
        f = np.repeat(1.0 + cov * node[:, s], 8) * (1.0 + 0.003 * g.standard_normal(64))
        out += parallel_step(s, 1500.0 * f, tp=8, pp=2, step_s=1.6)
    return out


def replay(seeds: range, cut: int) -> None:
    """``--replay``: each seed's pages (unit, step) on the streams whole and cut."""
    from detector.engine import Engine
    from detector.testing import T0, feed
    for name, c in (("as drawn", None), (f"cut at {cut}", cut)):
        pages = [[(a.scope.key, round((a.detected_ts - T0) / 1.6))
                  for a in feed(Engine(), _job(seed, c)) if a.status == "firing"]
                 for seed in seeds]
        print(f"{name}: {sum(map(len, pages))} pages in {len(seeds)} jobs "
              f"{[(seed, p) for seed, p in zip(seeds, pages, strict=True) if p]}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--streams", type=int, default=400)
    ap.add_argument("--length", type=int, default=600)
    ap.add_argument("--steps", type=int, default=7)
    ap.add_argument("--at", type=float, default=3.0)
    ap.add_argument("--from", dest="first", type=int, default=190)
    ap.add_argument("--replay", default=None, help="A..B: replay seeds A..B-1 (see above)")
    a = ap.parse_args()
    if a.replay:
        lo, hi = (int(x) for x in a.replay.split(".."))
        replay(range(lo, hi), a.first)
        return
    runs = ours = 0
    for seed in range(a.streams):
        xs, src = traced_stream(random.Random(seed), a.length)
        j = 0
        while j + a.steps <= len(xs):
            if statistics.fmean(xs[j:j + a.steps]) >= a.at:
                runs += 1
                ours += 2 * sum(w in STRAGGLERS and t >= a.first
                                for w, t in src[j:j + a.steps]) > a.steps
                j += a.steps
            else:
                j += 1
    print(f"{a.steps}-step means >= {a.at:g} sigma: {runs}; mostly of job 3's workers "
          f"{','.join(map(str, STRAGGLERS))} from their sample {a.first}: {ours}")


if __name__ == "__main__":
    main()
