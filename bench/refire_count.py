"""Counts a pager's re-fires: one ``dedup_key`` firing, resolving and firing again (issue 10).

    python -m bench.refire_count CORPUS:ALERTS [CORPUS:ALERTS ...] [--list]

CORPUS is a folder of labelled logs (``NAME.jsonl.gz``), ALERTS the folder a blind measure
wrote their alerts to (``NAME.alerts.jsonl``).  A pager de-duplicating by key sees a
firing message after a resolved one of that key as a new page: a human is paged again.
Each such re-fire is printed in one of three classes:

- ``same fault``: a firing message before the resolution and the re-fire catch one label
  (DESIGN's catch: the unit, ``detected_ts`` in [start_ts, end_ts + 60 s]) -- one fault's
  episode paged twice, the shape issue 10 forbids;
- ``no label``: the re-fire catches no label (a false page again, or a fault's tail);
- ``another fault``: the re-fire catches a label the earlier firing did not -- a second
  fault of the unit, paged as such (wanted).

``ended_before`` / ``superseded_by`` / quiet: the resolution's reason (its evidence keys).
Beside them, ``echo keys``: a key whose first firing message catches only faults another key
of the log, firing then, already caught -- one fault paged under two keys (blind30 held
canary-s7: node c-12 escalated while its GPU 1's escalation stood for the same slow GPU).
DESIGN's rule counts neither a re-fire nor an echo against precision.

Prints one line a corpus: logs, keys paged, re-fires and their three classes, echo keys.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from bench.blind11.score import alerts_of, catches, labels_of

_REASONS = ("ended_before", "superseded_by", "withdrawn", "clocks_back")


def refires(labels: list[dict], alerts: list[tuple[str, dict]]) -> list[dict]:
    """Every firing message of a key whose last message was a resolution, classed (a firing
    message re-sent while firing is no new page)."""
    seen: dict[tuple[str, str], list[dict]] = {}
    out = []
    for topic, a in alerts:
        msgs = seen.setdefault((topic, str(a.get("dedup_key"))), [])
        if a.get("status") == "firing" and msgs and msgs[-1].get("status") == "resolved":
            last = msgs[-1]
            before = [m for m in msgs if m.get("status") == "firing"]
            now = {i for i, lab in enumerate(labels) if catches(topic, a, lab)}
            then = {i for i, lab in enumerate(labels) for m in before if catches(topic, m, lab)}
            ev = last.get("evidence") or {}
            out.append({
                "key": a.get("dedup_key"), "topic": topic,
                "resolved_ts": last.get("detected_ts"), "fired_ts": a.get("detected_ts"),
                "why": next((r for r in _REASONS if r in ev), "quiet"),
                "class": ("same fault" if now & then else "another fault" if now
                          else "no label")})
        msgs.append(a)
    return out


def echoes(labels: list[dict], alerts: list[tuple[str, dict]]) -> list[dict]:
    """Every key whose first firing message catches only faults another key, firing then
    (not resolved), already caught: one fault paged twice under two keys, which DESIGN's
    rule counts as no false positive (both catch it)."""
    open_: dict[tuple[str, str], set[int]] = {}  # (topic, key) -> faults it caught, firing
    site: dict[str, object] = {}  # key -> its alerts' cluster
    out = []
    # (an escalation superseded by the isolation its cause, learned later, raised -- or any
    # page resolved ``superseded_by`` the new key -- is a hand-over, not an echo)
    handed = {(str(a.get("evidence", {}).get("superseded_by")), str(a.get("dedup_key")))
              for _, a in alerts if a.get("status") == "resolved"}
    for topic, a in alerts:
        k = (topic, str(a.get("dedup_key")))
        site[k[1]] = a.get("cluster")
        if a.get("status") != "firing":
            open_.pop(k, None)
            continue
        now = {i for i, lab in enumerate(labels) if catches(topic, a, lab)}
        if k not in open_:
            # (labels name no cluster: two sites' same host name is not one unit -- blind18)
            held = set().union(*(v for kk, v in open_.items()
                                 if kk != k and (k[1], kk[1]) not in handed
                                 and site.get(kk[1]) == site[k[1]]))
            if now and now <= held:
                out.append({"key": a.get("dedup_key"), "topic": topic,
                            "fired_ts": a.get("detected_ts"),
                            "faults": sorted(labels[i]["fault_id"] for i in now)})
            open_[k] = set()
        open_[k] |= now
    return out


def count(corpus: Path, alerts: Path) -> tuple[dict, list[dict]]:
    logs = sorted(corpus.glob("*.jsonl*"))
    logs = [p for p in logs if not p.name.endswith(".alerts.jsonl")]
    rows: list[dict] = []
    keys = 0
    for log in logs:
        name = log.name.split(".jsonl")[0]
        al = alerts_of(alerts / f"{name}.alerts.jsonl")
        keys += len({(tp, a.get("dedup_key")) for tp, a in al if a.get("status") == "firing"})
        labels = labels_of(log)
        rows += [{"log": name, **r} for r in refires(labels, al)]
        rows += [{"log": name, "class": "echo", **r} for r in echoes(labels, al)]
    tally = {"logs": len(logs), "keys": keys, "refires": sum(r["class"] != "echo" for r in rows)}
    for c in ("same fault", "no label", "another fault", "echo"):
        tally[c] = sum(r["class"] == c for r in rows)
    return tally, rows


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("pairs", nargs="+", help="CORPUS:ALERTS folder pairs")
    ap.add_argument("--list", action="store_true", help="print every re-fire")
    args = ap.parse_args(argv)
    for pair in args.pairs:
        corpus, _, alerts = pair.partition(":")
        if not alerts:
            print(f"{pair}: want CORPUS:ALERTS", file=sys.stderr)
            return 2
        tally, rows = count(Path(corpus), Path(alerts))
        print(f"{corpus}  logs {tally['logs']}  keys {tally['keys']}  re-fires "
              f"{tally['refires']}: same fault {tally['same fault']}, no label "
              f"{tally['no label']}, another fault {tally['another fault']}; "
              f"echo keys {tally['echo']}")
        if args.list:
            for r in rows:
                if r["class"] == "echo":
                    print(f"  {r['log']}  {r['key']}  fired {r['fired_ts']:.1f}  echo of "
                          f"{','.join(r['faults'])} (already paged under another key)")
                else:
                    print(f"  {r['log']}  {r['key']}  resolved {r['resolved_ts']:.1f} "
                          f"({r['why']})  fired {r['fired_ts']:.1f}  {r['class']}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
