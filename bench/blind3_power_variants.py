"""power14, round 14: blind3's extremes story (its fleet model: V-f curve, per-GPU demand,
temperatures) with one more power event per seed, labelled.

(A) one node of the S job (TP8 x PP2 x DP4 on gn005-012, the job's other 7 nodes running
free) capped 700 -> 450 W by its BMC for 5 minutes -- a node fault, scope node; (B) inside the
story's own rack-0 cap (healthy), GPU 3 of gn001 held at 300 W, far deeper than its siblings
at 500 W -- scope gpu.

    python bench/blind3_power_variants.py OUT 20,21
    python -m bench.blind3.measure OUT --alerts FRESH
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.blind3 import faults as fx  # noqa: E402
from bench.blind3 import generate  # noqa: E402
from bench.blind3.model import Fault  # noqa: E402
from bench.blind3.story import extremes  # noqa: E402


def main(out: Path, seeds: list[int]) -> None:
    out.mkdir(parents=True, exist_ok=True)
    for seed in seeds:
        for variant in ("A", "B"):
            story = extremes(seed)
            fl = story.fleet
            t_base = generate.T_BASE + seed * 86_400.0 + 43_200.0
            if variant == "A":
                node = f"gn{6 + seed % 6:03d}"
                t0, span = 500.0 + 37.0 * (seed % 5), 300.0
                fx.power_cap(fl, {node}, t0, t0 + span, 450.0)
                f = Fault(f"psu-{node}", "slow_node", "power", {"level": "node", "node": node})
            else:
                rack = fl.power_cap[-1]  # the story's rack-0 cap: from its first second on
                t0, span = float(next(t for t in range(1800)
                                      if rack("gn001", 0, float(t)) is not None)), 180.0

                def deep(nd: str, g: int, t: float, t0: float = t0) -> float | None:
                    return 300.0 if (nd, g) == ("gn001", 3) and t0 <= t < t0 + 180.0 else None

                fl.power_cap.append(deep)
                f = Fault("deep-gn001-3", "slow_node", "power",
                          {"level": "gpu", "node": "gn001", "gpu": 3})
            f.first, f.last = t_base + t0, t_base + t0 + span
            story.faults.append(f)
            path = out / f"extremes{variant}-s{seed}.jsonl.gz"
            n, k = generate.write(path, story, seed)
            print(f"{path}: {n} records, {k} labels")


if __name__ == "__main__":
    main(Path(sys.argv[1]), [int(x) for x in sys.argv[2].split(",")])
