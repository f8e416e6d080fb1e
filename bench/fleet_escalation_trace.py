"""Trace one healthy-fleet log's slow-rank statistics for one GPU, step by step (diagnosis).

Runs one log of :mod:`replay.evaluation.fleet` (its variant, scale, fleet seed, log seed)
through a fresh engine exactly as ``run_log`` does, with ``JobMonitor._check_slow``
instrumented in process (a copy of its source with three recording lines; what it
decides is unchanged) and keeps per step, for the rank on ``--gpu``: its deviation from
its DP peers (d), from its replica mates (own), z_own, z_rep, the z the CUSUM got, the
score, the learned bias and cap; and the job's replica/rank spread ratio and regime.
The simulator's per-GPU speed (``StepGen.base``) gives the rank's true offset.  Prints
what fired, the rank's true offset, what warm-up learned, how the learned bias moved
in each regime, and the steps of the run that alarmed.

    nice -n 10 python bench/fleet_escalation_trace.py --variant dp4-10s --scale 1.25 \
        --fleet-seed 85000 --seed 85001 --gpu node-003/1

What-ifs (this process only): ``--exit-ratio 3`` (no hysteresis: the regime as it was
before ``replica_noise_exit`` landed), ``--reset-on-switch``.

(The fleet run ``healthy_fleet.py --seed 80000`` gives its sixth variant, dp4-10s, the
seeds 85000+: ``fleet_tasks([variant], scale, 85000)`` yields the same logs.)
"""

from __future__ import annotations

import argparse
import dataclasses
import inspect
import math
import textwrap
from typing import Any

import numpy as np

import detector.steps as steps
import replay.sim.model as model
from replay.evaluation.fleet import fleet_tasks, run_log

REC: list[dict[str, Any]] = []
GEN: list[Any] = []
MON: list[Any] = []


def _instrument() -> None:
    out = []
    for ln in textwrap.dedent(inspect.getsource(steps.JobMonitor._check_slow)).splitlines():
        out.append(ln)
        s, ind = ln.strip(), ln[: len(ln) - len(ln.lstrip())]
        if s.startswith("mates, imbalanced = self._replica_common("):
            out.append(ind + "_REC_M(self, r, d, mates, imbalanced, ts)")
        elif s.startswith("z = np.where(one, (z_own + z_rep)"):
            out.append(ind + "_REC_A(self, r, own, z_own, z_rep, one)")
        elif s.startswith("_, cleared = self._slow.update("):
            out.append(ind + "_REC_Z(self, r, z)")
    if len(out) != len(inspect.getsource(steps.JobMonitor._check_slow).splitlines()) + 3:
        raise SystemExit("JobMonitor._check_slow changed: the recording lines found no place")
    ns = steps.JobMonitor._check_slow.__globals__  # (its module's)
    ns["_REC_M"], ns["_REC_A"], ns["_REC_Z"] = _rec_m, _rec_a, _rec_z
    exec(compile("\n".join(out), steps.__file__, "exec"), ns)  # noqa: S102 (a diagnosis copy)
    steps.JobMonitor._check_slow = ns["_check_slow"]
    init = model.StepGen.__init__

    def keep(self: Any, *a: Any, **k: Any) -> None:
        init(self, *a, **k)
        GEN.append(self)
    model.StepGen.__init__ = keep


def _what_if(exit_ratio: float, reset: bool) -> None:
    """Counterfactuals, patched in this process only: the imbalance regime left only below
    ``exit_ratio`` (``replica_noise_exit``; 0: as shipped, 3: no hysteresis, as before
    it landed), and every rank's slow-rank score zeroed when the regime switches
    (``reset``)."""
    orig = steps.JobMonitor._replica_common

    def regime(self: Any, d: Any, buf: Any, ok: Any, comparable: Any) -> Any:
        if exit_ratio > 0.0 and self.cfg.replica_noise_exit != exit_ratio:
            self.cfg = dataclasses.replace(self.cfg, replica_noise_exit=exit_ratio)
        was = self._imbalanced
        common, imbalanced = orig(self, d, buf, ok, comparable)
        if common is None:
            return common, imbalanced
        if reset and was != imbalanced and len(self._slow.score):
            live = np.flatnonzero(~self._slow.alarmed)
            self._slow.reset(live)
            self._run_sum[live], self._run_n[live] = 0.0, 0
        return common, imbalanced
    steps.JobMonitor._replica_common = regime


def _rec_m(self: Any, r: Any, d: Any, mates: Any, imbalanced: bool, ts: Any) -> None:
    MON[:] = [self]
    REC.append({"ts": float(np.median(ts)), "r": r.copy(), "d": d.copy(),
                "mates": None if mates is None else mates.copy(), "imb": bool(imbalanced),
                "ratio": float(self._replica_noise),
                "base_before": self._base[r].copy(), "cap": self._cap[r].copy()})


def _rec_a(self: Any, r: Any, own: Any, z_own: Any, z_rep: Any, one: Any) -> None:
    REC[-1].update(own=own.copy(), z_own=np.asarray(z_own).copy(),
                   z_rep=np.asarray(z_rep).copy(), one=np.asarray(one).copy())


def _rec_z(self: Any, r: Any, z: Any) -> None:
    REC[-1].update(z=z.copy(), score=self._slow.score[r].copy(), base=self._base[r].copy())


def report(res: dict[str, Any], node: str, gpu: int) -> None:
    g, mon = GEN[0], MON[0]
    const = g.const  # (rank, node, gpu, tp, pp, dp)
    rank, _, _, tp, pp, dp = next(c for c in const if c[1] == node and c[2] == gpu)
    slot = mon._rank_of.index(rank)
    rep_of = np.array([const[x][5] for x in mon._rank_of])
    lb = np.log(g.base)
    peers = [c[0] for c in const if c[3] == tp and c[4] == pp and c[0] != rank]
    mates = [c[0] for c in const if c[4] == pp and c[5] == dp]
    print(res["problems"])
    print(f"{node}/{gpu}: rank {rank} (tp {tp}, pp {pp}, dp {dp}); replica {dp} on nodes",
          sorted({c[1] for c in const if c[5] == dp}))
    print("true speed (simulator): log offset vs its 3 DP peers",
          [round(float(lb[rank] - lb[p]), 4) for p in peers],
          f"; vs its replica's stage median {lb[rank] - np.median(lb[mates]):+.4f}")

    def at(rec: dict[str, Any], key: str) -> float:
        i = np.flatnonzero(rec["r"] == slot)
        v = rec.get(key)
        return float("nan") if v is None or i.size == 0 else float(np.asarray(v)[i[0]])

    ts = np.array([x["ts"] for x in REC]) - REC[0]["ts"]
    imb = np.array([x["imb"] for x in REC])
    ratio = np.array([x["ratio"] for x in REC])
    own, d = np.array([at(x, "own") for x in REC]), np.array([at(x, "d") for x in REC])
    b0 = np.array([at(x, "base_before") for x in REC])
    b1 = np.array([at(x, "base") if "base" in x else at(x, "base_before") for x in REC])
    score = np.array([at(x, "score") for x in REC])
    w = mon.cfg.warmup_steps + 1
    print(f"warm-up ({w} steps): imbalance recognised from step {int(np.argmax(imb))}, learned "
          f"start offset {mon.start_offsets.get(rank, 0.0)}, base {b1[w - 1]:.4f}, "
          f"cap {at(REC[w], 'cap'):.4f}")
    print(f"after warm-up: {len(REC) - w} steps, {int((~imb[w:]).sum())} not imbalanced, "
          f"{int((imb[w:] != imb[w - 1:-1]).sum())} regime switches; ratio 5/50/95 % "
          f"{np.round(np.percentile(ratio[w:], [5, 50, 95]), 2).tolist()}, min "
          f"{ratio[w:].min():.2f} (threshold {mon.cfg.replica_noise_ratio})")
    out = ~imb[w:]
    print(f"rank's own (imbalanced steps) mean {np.nanmean(own[w:][imb[w:]]):.4f}; its d "
          f"(not imbalanced) mean {np.nanmean(d[w:][out]) if out.any() else math.nan:.4f}")
    hit = np.flatnonzero(score >= mon.cfg.slow_h)
    if not hit.size:
        print(f"the rank's CUSUM never reached {mon.cfg.slow_h}: highest {np.nanmax(score):.2f}"
              f" at {ts[int(np.nanargmax(score))]:.0f} s")
        return
    k = int(hit[0])
    start = k
    while start > 0 and score[start - 1] > 0:
        start -= 1
    delta = b1 - b0
    for a, b in ((w, k), (max(w, k - 340), k)):
        m = ~imb[a:b]
        print(f"base {b0[a]:.4f} at {ts[a]:.0f} s -> {b0[b]:.4f} at {ts[b]:.0f} s: "
              f"{np.nansum(delta[a:b][m]):+.4f} on {int(m.sum())} not-imbalanced steps, "
              f"{np.nansum(delta[a:b][~m]):+.4f} on imbalanced ones")
    print(f"alarm at {ts[k]:.0f} s (score {score[k]:.2f}); the run from {ts[start]:.0f} s, "
          f"{k - start + 1} steps, mean d {np.nanmean(d[start:k + 1]):+.4f}")
    print("   t    imb ratio      d  replica      own    base  z_own  z_rep    z   score  "
          "replica's rank (1 = slowest)")
    for i in range(max(0, start - 3), min(len(REC), k + 2)):
        x = REC[i]
        j = int(np.flatnonzero(x["r"] == slot)[0])
        m = x["mates"]
        med = {q: float(np.median(m[rep_of[x["r"]] == q])) for q in range(4)} \
            if m is not None else {}
        place = sorted(med, key=lambda q: -med[q]).index(dp) + 1 if med else 0
        print(f"{ts[i]:6.0f}  {int(x['imb'])}  {x['ratio']:4.2f} {d[i]:+.4f} "
              f"{(m[j] if m is not None else math.nan):+.4f} {own[i]:+.4f} {b0[i]:.4f} "
              f"{at(x, 'z_own'):+.2f} {at(x, 'z_rep'):+.2f} {at(x, 'z'):+.2f} {score[i]:6.2f}"
              f"  {place}")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--variant", default="dp4-10s")
    ap.add_argument("--scale", type=float, default=1.25)
    ap.add_argument("--fleet-seed", type=int, default=85000)
    ap.add_argument("--seed", type=int, default=85001)
    ap.add_argument("--gpu", default="node-003/1")
    ap.add_argument("--exit-ratio", type=float, default=0.0,
                    help="what-if: leave the imbalance regime only below this ratio "
                    "(3: no hysteresis)")
    ap.add_argument("--reset-on-switch", action="store_true",
                    help="what-if: zero the slow-rank scores when the regime switches")
    a = ap.parse_args()
    if a.exit_ratio > 0.0 or a.reset_on_switch:
        _what_if(a.exit_ratio, a.reset_on_switch)
    _instrument()
    task = next(t for t in fleet_tasks([a.variant], a.scale, a.fleet_seed) if t[1] == a.seed)
    res = run_log(task)
    node, gpu = a.gpu.rsplit("/", 1)
    report(res, node, int(gpu))


if __name__ == "__main__":
    main()
