"""Tuning reproducer: scenario=reboot, an intermittent grad-norm SDC starting in a checkpoint.

The eighth reporting corpus missed one intermittent ``sdc_gradnorm`` that started during a
checkpoint in the matrix cell ``scenario=reboot`` (BENCHMARKS.md).  ``--out DIR`` builds
that shape on tuning seeds: the cell's recipe from ``matrix_recipes('matrix')``, fault
shapes rotated by ``scenario_for(recipe, seed, 0)`` (index 0 makes the cell's sdc_gradnorm
intermittent), every seed of ``--seeds`` whose sdc_gradnorm starts inside a checkpoint.
``--trace DIR`` replays each log of such a corpus through the shipped detector and prints,
per log, whether the fault came after the job's restart, how many ranks each step was
evaluated with during the fault, and each of the fault's spikes: its step, seconds after
onset, the size of the rank's peer group that step, and whether the spike count took it.

    python bench/reboot_gradnorm.py --seeds 9400..9519 --out /tmp/reboot-cell
    faultline evaluate /tmp/reboot-cell --no-baselines --workers 1 --json X.json
    python bench/reboot_gradnorm.py --trace /tmp/reboot-cell
"""

from __future__ import annotations

import argparse
import contextlib
import gzip
import io
import json
import time
from concurrent.futures import ProcessPoolExecutor
from datetime import datetime
from pathlib import Path
from typing import Any

from replay.evaluation.corpus import FORMAT, _build_one, parse_seeds, scenario_for, write_manifest
from replay.evaluation.matrix import matrix_recipes

SPIKE = 2.5  # the simulated SDC multiplies a norm of ~0.5-1.5 by 5-50


def pick(recipe: Any, seeds: list[int]) -> list[int]:
    out = []
    for seed in seeds:
        sc, notes = scenario_for(recipe, seed, 0)
        for f, during in zip(sc.faults, notes["during_benign"], strict=True):
            if f.kind == "sdc_gradnorm" and f.shape == "intermittent" and during == "checkpoint":
                out.append(seed)
                print(f"seed {seed}: sdc_gradnorm {f.target} at {f.start_s:.1f} s for "
                      f"{f.duration_s:.1f} s, magnitude {f.magnitude:.3f}", flush=True)
    return out


def build(seeds: list[int], out: str, workers: int) -> None:
    recipe = next(r for r in matrix_recipes("matrix") if r.name == "scenario-reboot")
    chosen = pick(recipe, seeds)
    t0 = time.perf_counter()
    with ProcessPoolExecutor(max_workers=workers) as pool:
        logs = list(pool.map(_build_one, [(recipe, s, 0, out) for s in chosen]))
    write_manifest(out, {"format": FORMAT, "scale": "custom", "purpose": "tuning",
                         "seeds": chosen, "build_s": round(time.perf_counter() - t0, 1),
                         "logs": logs})
    print(f"{len(logs)} logs in {out} ({time.perf_counter() - t0:.0f} s)")


def _ts(x: Any) -> float:
    return float(x) if isinstance(x, (int, float)) else datetime.fromisoformat(
        x.replace("Z", "+00:00")).timestamp()


def trace(corpus: str) -> None:
    import detector.steps as steps
    from detector.cli.main import main

    st: dict[str, Any] = {}
    check, restart = steps.JobMonitor._check_grad, steps.JobMonitor._restart

    def traced_restart(self: Any) -> None:
        st["restart"] = self.clock
        restart(self)

    def traced_check(self: Any, step: int, slots: Any, groups: Any, ts: Any, grad: Any,
                     buf: Any, decided_ts: float, out: list[Any]) -> None:
        i = next((j for j, hw in enumerate(buf.hw) if hw == st["target"]), None)
        before = (float(self._spikes[slots[i]]) if i is not None
                  and slots[i] < len(self._spikes) else 0.0)
        check(self, step, slots, groups, ts, grad, buf, decided_ts, out)
        if not st["a"] - 2 <= decided_ts <= st["b"] + 5:
            return
        st["ranks"].add(len(buf.ranks))
        if i is not None and grad[i] > SPIKE:
            took = float(self._spikes[slots[i]]) > 0.99 * before + 0.5
            st["spikes"].append((step, round(decided_ts - st["a"], 1),
                                 int((groups == groups[i]).sum()), took))

    steps.JobMonitor._check_grad, steps.JobMonitor._restart = traced_check, traced_restart
    man = json.loads((Path(corpus) / "corpus.json").read_text())
    for log in man["logs"]:
        f = next(x for x in log["faults"] if x["kind"] == "sdc_gradnorm")
        path = str(Path(corpus) / log["file"])
        with gzip.open(path, "rt") as fh:
            lab = next(json.loads(line)["value"] for line in fh
                       if f["fault_id"] in line and '"labels"' in line)
        st.clear()
        st.update(target=(f["target"]["node"], f["target"]["gpu"]), ranks=set(), spikes=[],
                  a=_ts(lab["start_ts"]), b=_ts(lab["end_ts"]))
        with contextlib.redirect_stdout(io.StringIO()) as text:
            main(["replay", path, "--topology", log["topology"], "--quiet"])
        missed = f["fault_id"] in text.getvalue().partition("missed faults")[2]
        when = "after" if st.get("restart", float("inf")) < st["a"] else "before"
        print(f"s{log['seed']} m={f['magnitude']:.3f} labelled {st['b'] - st['a']:.0f} s, "
              f"{when} the restart; ranks per step {sorted(st['ranks'])}; spikes (step, s, "
              f"peers, counted) {st['spikes']}; {'MISSED' if missed else 'caught'}", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", default="9400..9519")
    ap.add_argument("--out", help="build the reproducer corpus here")
    ap.add_argument("--trace", help="trace the grad-norm SDC of each log of this corpus")
    ap.add_argument("--workers", type=int, default=2)
    a = ap.parse_args()
    if a.out:
        build(parse_seeds(a.seeds), a.out, a.workers)
    if a.trace:
        trace(a.trace)
    if not (a.out or a.trace):
        ap.error("give --out DIR and/or --trace DIR")


if __name__ == "__main__":
    main()
