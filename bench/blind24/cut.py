"""Cuts a reproducer out of a blind24 log (blind11's cutter: window, nodes, jobs, topics, labels).

    python -m bench.blind24.cut LOG OUT --from S --to S [--nodes a,b] [--jobs j] \
        [--topics telemetry.step,...] [--labels fault-id,...]
"""

from bench.blind11.cut import cut, main

__all__ = ["cut", "main"]

if __name__ == "__main__":
    raise SystemExit(main())
