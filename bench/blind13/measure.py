"""Replays blind13 logs with faultline and scores them by DESIGN's rule (blind12's harness).

    python -m bench.blind13.measure DIR --alerts FRESHDIR [--no-run] [--json F]

One `faultline replay` a log (the topology rides in the log); recall, precision, attribution
and median latency overall, per kind and per fault; every miss, wrong cause and false
positive, each false positive with the routine shapes of `.effects.json` near it.
"""

from bench.blind12.measure import main, replay

__all__ = ["main", "replay"]

if __name__ == "__main__":
    raise SystemExit(main())
