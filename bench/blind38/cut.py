"""Cuts a reproducer out of a blind38 log: blind24's cutter (blind11's window, nodes, jobs,
topics, labels; then only some peer groups' steps and some nodes' samples).

    python -m bench.blind38.cut LOG OUT --from S --to S [--nodes a,b] [--jobs j] \
        [--topics telemetry.step,...] [--labels fault-id,...]
"""

from bench.blind24.cut import cut, main

__all__ = ["cut", "main"]

if __name__ == "__main__":
    raise SystemExit(main())
