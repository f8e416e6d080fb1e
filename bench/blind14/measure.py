"""Replays blind14 logs with faultline and scores them by DESIGN's rule (blind11's score.py).

    python -m bench.blind14.measure DIR --alerts FRESHDIR [--no-run] [--json F]

blind12's runner, imported (one copy): one `faultline replay LOG --alerts-out ... --quiet` a
log, then recall, precision, attribution and median latency overall, per kind and per fault,
every miss, wrong cause and false positive, and the routine shapes of the log's
`.effects.json` on a false positive's node or job within 60 s of it.
"""

from bench.blind12.measure import main, replay

__all__ = ["main", "replay"]

if __name__ == "__main__":
    raise SystemExit(main())
