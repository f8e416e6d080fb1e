"""Replays blind38 logs with faultline and scores them by DESIGN's rule (blind12's runner).

    python -m bench.blind38.measure DIR --alerts FRESHDIR [--no-run] [--json F]
"""

from bench.blind12.measure import main, replay

__all__ = ["main", "replay"]

if __name__ == "__main__":
    raise SystemExit(main())
