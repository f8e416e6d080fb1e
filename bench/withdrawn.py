"""Pages resolved within a minute of firing: how many, by which path, how long after firing.

A page the correlator takes back seconds after it fired (superseded by a coarser unit,
withdrawn as a site's power cap or a rail's retrain) reaches a direct PagerDuty sink as a
trigger and a resolve -- a human woken for nothing -- unless the pager holds it
(``[pager.sinks.NAME.storm] hold_s``).  This reads alert files (``faultline replay LOG
--alerts-out F``: what ``bench.blindN.measure --alerts DIR`` writes) and prints:

1. per corpus: firing pages (episodes of a topic + dedup_key) and those resolved within
   ``--within`` seconds (60) of firing;
2. by path (the resolved message's ``superseded_by`` / ``withdrawn`` /
   ``resolved_because``, or none): count, kind/cause, and seconds from firing to resolve
   (event time: the pager reads the resolve about that much later);
3. for each hold: the withdrawn pages it keeps from PagerDuty -- with the hold alone and
   with the hold plus storm control's ``group_wait_s`` (10) for a page that opens its group
   -- and the pages it delays, splitting off the pages never held: hardware events' and
   those no withdrawal path takes back (:func:`detector.pager.hold.held`).

    python bench/withdrawn.py ALERT_DIR... [--within 60] [--holds 10,20,30,45,60]
    python bench/withdrawn.py --replay CORPUS --alerts FRESHDIR   # replay a corpus first
    python bench/withdrawn.py --latency [--rounds 20]   # the pager's added latency, held or not
    python bench/withdrawn.py --probes 8   # the rooms' probes of the paths (tests/ builds them)

An ALERT_DIR holds ``*.alerts.jsonl`` files, or folders of them (one per corpus).
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import subprocess
import sys
import time
from collections import Counter, defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from detector.alerts import FiredAlert  # noqa: E402
from detector.pager.hold import held  # noqa: E402

BINS = (0.0, 5.0, 10.0, 20.0, 30.0, 45.0, 60.0)


@dataclass
class Episode:
    """One page: a problem's first firing message until its resolve."""

    corpus: str
    log: str
    topic: str
    key: str
    kind: str
    cause: str
    level: str
    fired_ts: float
    held: bool                     # the pager's hold applies to it
    resolved_after_s: float | None = None
    path: str = ""


def path_of(evidence: dict[str, Any]) -> str:
    """Which way the correlator resolved a page, from its resolved message's evidence."""
    if "superseded_by" in evidence:
        return "superseded (Correlator._superseded)"
    if "withdrawn" in evidence:
        return "rail retrain (PartWindows._retake_retrain)"
    why = evidence.get("resolved_because")
    if isinstance(why, str):
        if why.startswith("withdrawn: SW power caps"):
            return "site cap (Correlator._withdraw_for_site)"
        return "resolved_because: " + re.sub(r"\S*\d\S*", "#", why)[:60]
    return "quiet (no reason given)"


def episodes(path: Path, corpus: str) -> list[Episode]:
    """The pages of one alert file, each paired with the resolve that ended it."""
    out: list[Episode] = []
    open_: dict[tuple[str, str], Episode] = {}
    for line in path.read_text().splitlines():
        if not line.strip():
            continue
        rec = json.loads(line)
        a = FiredAlert.from_record(rec["topic"], rec["value"])
        k = (a.topic, a.dedup_key)
        if a.status == "firing":
            if k not in open_:
                e = Episode(corpus, path.name.removesuffix(".alerts.jsonl"), a.topic,
                            a.dedup_key, a.kind, a.cause, a.scope.level, a.detected_ts,
                            held(a))
                open_[k] = e
                out.append(e)
            elif not held(a):
                open_[k].held = False  # a re-fire with a hardware event is let go at once
        else:
            e = open_.pop(k, None)
            if e is not None:
                e.resolved_after_s = a.detected_ts - e.fired_ts
                e.path = path_of(a.evidence if isinstance(a.evidence, dict) else {})
    return out


def alert_files(d: Path) -> dict[str, list[Path]]:
    """Alert files by corpus: ``d`` itself, or each folder below it that holds some."""
    here = sorted(d.glob("*.alerts.jsonl"))
    if here:
        return {d.name: here}
    return {sub.name: files for sub in sorted(p for p in d.iterdir() if p.is_dir())
            if (files := sorted(sub.glob("*.alerts.jsonl")))}


def _q(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * len(xs)))]


def _dist(xs: list[float]) -> str:
    if not xs:
        return "-"
    return (f"min {min(xs):5.1f}  median {statistics.median(xs):5.1f}  p90 {_q(xs, 0.9):5.1f}"
            f"  max {max(xs):5.1f}")


def _bins(xs: list[float]) -> str:
    edges = list(zip(BINS, BINS[1:], strict=False))
    counts = [sum(1 for x in xs if lo <= x < hi) for lo, hi in edges]
    counts[-1] += sum(1 for x in xs if x == BINS[-1])
    return "  ".join(f"[{lo:g},{hi:g}):{n}" for (lo, hi), n in zip(edges, counts, strict=True))


def report(eps: list[Episode], within: float, holds: list[float], group_wait: float) -> str:
    lines: list[str] = []
    quick = [e for e in eps if e.resolved_after_s is not None and e.resolved_after_s <= within]
    by_corpus: dict[str, list[Episode]] = defaultdict(list)
    for e in eps:
        by_corpus[e.corpus].append(e)
    lines.append(f"{'corpus':<12} {'logs':>4} {'pages':>6} {f'resolved <= {within:g}s':>16}"
                 f" {'of which withdrawn':>19}")
    for corpus, es in by_corpus.items():
        q = [e for e in es if e.resolved_after_s is not None and e.resolved_after_s <= within]
        w = [e for e in q if not e.path.startswith("quiet")]
        lines.append(f"{corpus:<12} {len({e.log for e in es}):>4} {len(es):>6} {len(q):>16}"
                     f" {len(w):>19}")
    lines.append(f"{'all':<12} {len({(e.corpus, e.log) for e in eps}):>4} {len(eps):>6} "
                 f"{len(quick):>16} {sum(not e.path.startswith('quiet') for e in quick):>19}")
    lines.append("")
    lines.append(f"resolved within {within:g} s, by path (seconds from firing to resolve, "
                 "event time):")
    by_path: dict[str, list[Episode]] = defaultdict(list)
    for e in quick:
        by_path[e.path].append(e)
    for path, es in sorted(by_path.items(), key=lambda kv: -len(kv[1])):
        xs = [e.resolved_after_s or 0.0 for e in es]
        kinds = Counter(f"{e.topic.removeprefix('alerts.')[:3]} {e.kind}/{e.cause}@{e.level}"
                        for e in es)
        hw = sum(not e.held for e in es)
        lines.append(f"  {path}: {len(es)} ({hw} never held: hardware events' or no "
                     "withdrawal path)")
        lines.append(f"      {_dist(xs)}")
        lines.append(f"      {_bins(xs)}")
        lines.append("      " + ", ".join(f"{n} {k}" for k, n in kinds.most_common(8)))
        corpora = Counter(e.corpus for e in es)
        lines.append("      in " + ", ".join(f"{c} {n}" for c, n in corpora.most_common()))
    lines.append("")
    withdrawn = [e for e in quick if not e.path.startswith("quiet")]
    lines.append("what a hold keeps from PagerDuty (W: withdrawn pages, superseded / site cap / "
                 "rail retrain; Q: other pages resolved within the minute) and what it delays:")
    lines.append(f"  {'hold_s':>6} {'W kept':>7} {'W kept +gw':>10} {'Q kept +gw':>10} "
                 f"{'W not held':>11} {'pages delayed':>13} {'pages not held':>17}")
    n_held = sum(e.held for e in eps)
    for h in holds:
        kept = sum(e.held and (e.resolved_after_s or 0.0) < h for e in withdrawn)
        kept_gw = sum(e.held and (e.resolved_after_s or 0.0) < h + group_wait for e in withdrawn)
        q_gw = sum(e.held and (e.resolved_after_s or 0.0) < h + group_wait for e in quick
                   if e.path.startswith("quiet"))
        hw = sum(not e.held for e in withdrawn)
        lines.append(f"  {h:>6g} {kept:>3}/{len(withdrawn):<3} {kept_gw:>6}/{len(withdrawn):<3} "
                     f"{q_gw:>6}/{len(quick) - len(withdrawn):<3} {hw:>11} "
                     f"{n_held if h > 0 else 0:>6} by {h:g} s {len(eps) - n_held:>17}")
    lines.append(f"  (+gw: a page that opens its storm group waits group_wait_s = {group_wait:g} "
                 "s more, and a resolve then still clears it; a page joining a pending group "
                 "waits less)")
    return "\n".join(lines)


def episodes_of(alerts: list[Any], corpus: str, log: str) -> list[Episode]:
    """:func:`episodes` of alert messages in hand (the engine's, in order)."""
    import tempfile
    with tempfile.NamedTemporaryFile("w", suffix=".alerts.jsonl", delete=False) as f:
        for a in alerts:
            f.write(json.dumps({"topic": a.topic, "value": a.to_dict()}) + "\n")
    path = Path(f.name)
    try:
        out = episodes(path, corpus)
    finally:
        path.unlink()
    for e in out:
        e.log = log
    return out


# -- the shapes the withdrawals were written for -----------------------------------------


def probes(seeds: int) -> list[Episode]:
    """The rooms' own probes of the withdrawing paths, swept (tests/ builds them):

    - rail (rail33/railfix33, tests/test_rail33.py ``phased``): mlx5_2 of hgx001-008
      retrained 400 -> 200 Gb/s at one instant, 16 nodes polled every 10 s or 30 s at random
      per-node phases (``seeds`` draws), a Slurm file (leaf per node) or no topology;
    - site cap (cap33, tests/test_d1cap.py ``_run``): node-004 capped first, three more
      nodes 45-58 s after it (a BMC loop reaching its second node late), 16 nodes.
    """
    import tests.test_d1cap as d1cap
    from detector.engine import Engine
    from detector.testing import feed
    from tests.test_rail33 import SLURM, phased

    out: list[Episode] = []
    for poll in (10.0, 30.0):
        for name, topo in (("slurm", SLURM), ("none", None)):
            for seed in range(seeds):
                retrain = {(f"hgx{n:03d}", "mlx5_2"): (300.3, 200.0) for n in range(1, 9)}
                alerts = feed(Engine(topology=topo), phased(poll, int(900 / poll), retrain,
                                                            seed=3450 + seed))
                out += episodes_of(alerts, f"rail {poll:g}s {name}", f"seed {3450 + seed}")
    seen: list[Any] = []
    plain = d1cap.feed

    def keep(*a: Any, **k: Any) -> list[Any]:
        seen[:] = list(plain(*a, **k))
        return seen

    d1cap.feed = keep
    try:
        for first in (45.0, 48.0, 51.0, 54.0):
            caps = {4: (0.0, 0.085), 11: (first, 0.085), 7: (first + 5.0, 0.085),
                    2: (first + 7.0, 0.085)}
            d1cap._run(caps, nodes=16)
            out += episodes_of([a for a in seen if a.topic != "finding"], "site cap",
                               f"others at +{first:g} s")
    finally:
        d1cap.feed = plain
    return out


# -- replaying a corpus ------------------------------------------------------------------


def replay_corpus(corpus: Path, out: Path) -> None:
    """``faultline replay LOG --alerts-out OUT/NAME.alerts.jsonl --quiet`` for every log."""
    out.mkdir(parents=True, exist_ok=True)
    logs = sorted(corpus.glob("*.jsonl.gz")) or sorted((corpus / "logs").glob("*.jsonl.gz"))
    for log in logs:
        name = log.name.removesuffix(".jsonl.gz")
        subprocess.run([sys.executable, "-m", "detector.cli", "replay", str(log),
                        "--alerts-out", str(out / f"{name}.alerts.jsonl"), "--quiet"],
                       check=True, stdout=subprocess.DEVNULL, cwd=ROOT)


# -- the pager's added latency -----------------------------------------------------------


def latency(rounds: int, hold_s: float) -> str:
    """Wall time from ``Pager.submit`` to the PagerDuty double's receipt, for a held page
    (a slow node) and a hardware event's (an XID), on two real pagers in one run -- one
    with the hold, one with ``hold_s = 0`` (main's behaviour) -- each submit made to both,
    the kinds interleaved; each pager's loop ticks every 50 ms as ``faultline pager``'s
    does.  group_wait_s = 0 on both, so what differs is the hold alone.  Not a test: a
    figure for BENCHMARKS.md."""
    import tempfile
    import threading

    from prometheus_client import CollectorRegistry

    from detector.alerts import ESCALATION
    from detector.metrics import PagerMetrics
    from detector.pager.config import PagerConfig
    from detector.pager.core import FileDeadLetters, Pager
    from detector.pager.testing import Receiver, alert, validate_pagerduty_event

    key = "R0ut1ngKeyR0ut1ngKeyR0ut1ngKey00"
    arms = {"hold": hold_s, "no hold": 0.0}
    sent: dict[str, tuple[str, float]] = {}           # dedup_key -> (what, submitted at)
    got: dict[tuple[str, str], float] = {}            # (arm, dedup_key) -> received at
    stop = threading.Event()
    with tempfile.TemporaryDirectory() as tmp:
        rxs = {arm: Receiver(default=202, validate=validate_pagerduty_event) for arm in arms}
        pagers: dict[str, Pager] = {}
        for arm, h in arms.items():
            cfg = PagerConfig.from_dict({
                "sinks": {"pagerduty": {
                    "url": rxs[arm].url + "/v2/enqueue", "routing_key": key,
                    "storm": {"hold_s": h, "group_wait_s": 0.0, "group_interval_s": 0.0,
                              "burst": 10 * rounds, "per_minute": 60.0 * rounds,
                              "group_by": ["cluster", "kind", "cause", "node"]}}},
                "deadletter_file": f"{tmp}/{arm}-dead.jsonl",
                "state_dir": f"{tmp}/{arm}-state"}, env={})
            pagers[arm] = Pager(cfg, PagerMetrics(CollectorRegistry(), cfg.sinks),
                                FileDeadLetters(f"{tmp}/{arm}-dead.jsonl"))
            pagers[arm].start()

        def loop() -> None:
            while not stop.is_set():
                for p in pagers.values():
                    p.tick()
                time.sleep(0.05)

        threading.Thread(target=loop, daemon=True).start()
        for i in range(rounds):
            slow = alert(f"node-{i:03d}", kind="slow_node", cause="power", level="node",
                         evidence={"signals": [{"signal": "slow_rank"}]})
            xid = alert(f"node-{i:03d}", topic=ESCALATION, kind="hardware",
                        cause="gpu_hardware", level="gpu", gpu=1,
                        evidence={"signals": [{"signal": "xid", "xid": 79}]})
            for what, a in (("held", slow), ("hardware", xid)):
                sent[a.dedup_key] = (what, time.monotonic())
                for p in pagers.values():
                    p.submit(a, None)
        deadline = time.monotonic() + hold_s + 60.0
        while len(got) < len(sent) * len(arms) and time.monotonic() < deadline:
            for arm, rx in rxs.items():
                for b in rx.bodies(202):
                    if (arm, b["dedup_key"]) not in got:
                        got[(arm, b["dedup_key"])] = time.monotonic()
            time.sleep(0.01)
        stop.set()
        for arm in arms:
            pagers[arm].close(5)
            rxs[arm].close()
    rows = []
    for what in ("held", "hardware"):
        for arm in arms:
            xs = [got[(arm, k)] - t0 for k, (w, t0) in sent.items()
                  if w == what and (arm, k) in got]
            rows.append(f"  {what:<9} {arm:<8} {len(xs):>3} delivered, submit -> PagerDuty "
                        f"median {statistics.median(xs):.3f} s, max {max(xs):.3f} s" if xs
                        else f"  {what:<9} {arm:<8} none delivered")
    return (f"the pager's added latency: hold_s = {hold_s:g} against 0, group_wait_s = 0, "
            f"{rounds} rounds (poll 50 ms, receipt polled every 10 ms):\n" + "\n".join(rows))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("dirs", nargs="*", type=Path, help="alert folders (or folders of them)")
    ap.add_argument("--within", type=float, default=60.0)
    ap.add_argument("--holds", default="0,5,10,15,20,25,30,45,60")
    ap.add_argument("--group-wait", type=float, default=10.0,
                    help="storm control's group_wait_s (default 10, the pager's default)")
    ap.add_argument("--replay", type=Path, help="a corpus folder to replay first")
    ap.add_argument("--alerts", type=Path, help="a fresh folder for --replay's alert files")
    ap.add_argument("--latency", action="store_true", help="measure the pager's added latency")
    ap.add_argument("--probes", type=int, metavar="SEEDS", default=0,
                    help="also the rooms' probes of the withdrawing paths, SEEDS phase draws")
    ap.add_argument("--rounds", type=int, default=20)
    ap.add_argument("--hold-s", type=float, default=None,
                    help="--latency: the hold (default: the pager's)")
    args = ap.parse_args(argv)
    if args.latency:
        from detector.pager.config import StormConfig
        print(latency(args.rounds, StormConfig().hold_s if args.hold_s is None
                      else args.hold_s))
        return 0
    dirs = list(args.dirs)
    if args.replay is not None:
        if args.alerts is None:
            ap.error("--replay needs --alerts FRESHDIR")
        replay_corpus(args.replay, args.alerts)
        dirs.append(args.alerts)
    if not dirs and not args.probes:
        ap.error("give alert folders, or --replay CORPUS --alerts DIR, --probes N or --latency")
    eps: list[Episode] = probes(args.probes) if args.probes else []
    for d in dirs:
        for corpus, files in alert_files(d).items():
            for f in files:
                eps.extend(episodes(f, corpus))
    holds = [float(x) for x in args.holds.split(",") if x]
    print(report(eps, args.within, holds, args.group_wait))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
