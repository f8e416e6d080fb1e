"""Cuts a reproducer out of a blind26 log: blind24's cutter (blind11's window, nodes, jobs,
topics, labels; then only some (tp_rank, pp_rank) peer groups' steps and some nodes' samples --
a 4,096-rank job's cut stays small and keeps every peer of the rank).

    python -m bench.blind26.cut LOG OUT --from S --to S [--nodes a,b] [--jobs j] \
        [--topics telemetry.step,...] [--labels fault-id,...]
"""

from bench.blind24.cut import cut, main

__all__ = ["cut", "main"]

if __name__ == "__main__":
    raise SystemExit(main())
