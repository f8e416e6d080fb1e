"""Fuzz throughput and findings: many mutated records through the stages and replay, per seed.

    python bench/fuzz.py [--records 200000] [--seeds 1,2,3] [--replay]

Prints, per seed, records/s, dead letters, what escaped (must be nothing),
the top rejection reasons and the growth of resident memory.  Exits 1 if
anything escaped or a rejection had no reason.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from replay.fuzz import FuzzResult, fuzz_replay, fuzz_stages  # noqa: E402


def show(name: str, seed: int, r: FuzzResult) -> bool:
    total = r.mutated + r.valid
    print(f"{name} seed {seed}: {r.mutated:,} mutated + {r.valid:,} valid in {r.seconds:.1f} s "
          f"({r.cpu_seconds:.1f} s CPU) = {total / r.cpu_seconds:,.0f} records per CPU-second "
          f"(mutation included); {r.dead:,} rejected, {r.unexplained} "
          f"without a reason, {r.internal} engine errors, {len(r.escaped)} escaped, "
          f"{r.alerts} alerts, state {r.state_bytes:,} B, RSS "
          f"+{r.rss_growth_kib / 1024:.0f} MiB")
    for reason, n in r.reasons.most_common(6):
        print(f"    {n:7,}  {reason}")
    for ops, exc in r.escaped[:10]:
        print(f"    ESCAPED {'+'.join(ops)}: {exc}")
    return not r.escaped and not r.unexplained and not r.internal


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--records", type=int, default=200_000, help="mutated records per seed")
    ap.add_argument("--seeds", default="1,2,3")
    ap.add_argument("--replay", action="store_true", help="also through replay")
    args = ap.parse_args()
    ok = True
    for seed in (int(s) for s in args.seeds.split(",")):
        ok &= show("stages", seed, fuzz_stages(args.records, seed))
        if args.replay:
            with tempfile.TemporaryDirectory(prefix="state-fuzz-") as tmp:
                ok &= show("replay", seed, fuzz_replay(args.records, seed, Path(tmp)))
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
