"""Probe runs of a node's slow page narrowed to its GPU beside a moving MoE expert (moe36).

Counts, over tests/moejob.py's job (64 ranks, TP 2, moe31's expert moving every 20-35 steps),
the units paged on node-005 and the pages narrowed (``narrowed_from``,
detector.correlate.narrow):

- ``ending``: round 35's 72-run probe (branch moe35a, /tmp/moe35/endprobe.py) -- a host fault
  (node-005's 8 ranks, or a NUMA half: GPUs 0-3) +4/+6/+10 % from step 170 that ends at step
  230 or 260, seeds 3520-3525: its node, never narrowed (the prototype named the expert's
  healthy GPU in 3 of 72; a NUMA half at +4 % pages a GPU of it in 4, before the node --
  pre-existing, not this probe's concern);
- ``blip``: a GPU's fault (rank 43 +8 % for good from 170) with two mates +8 % for 8 steps at
  its start (moe34 (a)): paged at the node, narrowed to gpu:node-005/3;
- ``lasting``: the host faults that do not end: their node, never narrowed.

    PYTHONPATH=. python bench/moe_narrow.py [--seeds 3520:3526] [--only ending]
"""

from __future__ import annotations

import argparse
import collections

from detector.engine import Engine
from detector.testing import feed
from tests.moejob import MOVES, moe_job

NODE5 = tuple(range(40, 48))
HALVES = {"node": NODE5, "numa": NODE5[:4]}
SIZES = (0.04, 0.06, 0.10)


def outcome(slow: tuple, seed: int, want: str) -> tuple[str, list[str], list[str]]:
    """Run the job; (ok / narrowed / other, node-005's units paged, units narrowed to)."""
    alerts = feed(Engine(), moe_job(seed=seed, hot=MOVES, slow=slow))
    keys = sorted({a.scope.key for a in alerts if a.status == "firing"
                   and "node-005" in a.scope.key})
    narrowed = sorted({a.scope.key for a in alerts if "narrowed_from" in a.evidence})
    if want == "gpu":
        ok = narrowed == ["gpu:node-005/3"] and keys == ["gpu:node-005/3", "node:node-005"]
    else:
        ok = keys == ["node:node-005"] and not narrowed
    return ("ok" if ok else "narrowed" if narrowed else "other"), keys, narrowed


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", default="3520:3526", help="first:end (end excluded)")
    ap.add_argument("--only", choices=("ending", "blip", "lasting"))
    args = ap.parse_args()
    a, b = (int(x) for x in args.seeds.split(":"))
    res: collections.Counter[tuple[str, str]] = collections.Counter()
    for seed in range(a, b):
        runs: list[tuple[str, tuple, str]] = []
        if args.only in (None, "ending"):
            runs += [(f"ending {name} +{x:.0%} to {end}",
                      tuple((170, end, r, x) for r in ranks), "node")
                     for name, ranks in HALVES.items() for x in SIZES for end in (230, 260)]
        if args.only in (None, "lasting"):
            runs += [(f"lasting {name} +{x:.0%}", tuple((170, 10**6, r, x) for r in ranks),
                      "node") for name, ranks in HALVES.items() for x in SIZES]
        if args.only in (None, "blip"):
            blip = ((168, 176, 40, 0.08), (168, 176, 41, 0.08))
            runs.append(("blip", ((170, 10**6, 43, 0.08), *blip), "gpu"))
        for name, slow, want in runs:
            out, keys, narrowed = outcome(slow, seed, want)
            res[name.split(" ")[0], out] += 1
            print(seed, name, out, keys, narrowed, flush=True)
    for k in sorted(res):
        print(*k, res[k])


if __name__ == "__main__":
    main()
