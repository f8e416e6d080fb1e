"""Rebuilds bench/blind17/cases from the seed logs: generate the log, cut the reproducer.

    python -m bench.blind17.make_cases [--out bench/blind17/cases]

PLAN names, for each case, the story and seed it comes from and the cut (seconds after the
log's first record); tests/test_blind17_cases.py says what faultline does wrong in each.
"""

from __future__ import annotations

from pathlib import Path

from bench.blind11.make_cases import make
from bench.blind17.cut import cut
from bench.blind17.generate import write
from bench.blind17.stories import FQDN

PLAN: dict[str, tuple] = {
    # clocks seed 4: ck06 ran 19.9 s ahead; chrony stepped it back at ~349 s; its XID 92 (gpu 1)
    # at ~351 s true time
    "Q1-xid-after-clock-step-dated-early": ("clocks", 4, dict(
        t_from=0, t_to=420, nodes={"ck06", "ck01", "ck02"},
        labels={"late-xid92", "skewed-hot-gpu"})),
    # clocks seed 1: ck05 21.2 s ahead from the start, ck06 8.1 s behind; no fault in the cut
    "Q2-host-ahead-darkens-the-fleet": ("clocks", 1, dict(t_from=0, t_to=240, labels=set())),
    # names seed 0: gn06/4 hot from ~539 s, gn07/1 XID 74 at ~667 s; DCGM rows name the FQDN
    "N1-fqdn-named-dcgm-rows": ("names", 0, dict(
        t_from=420, t_to=780, nodes={n + s for n in ("gn05", "gn06", "gn07", "gn08")
                                     for s in ("", FQDN)},
        labels={"fqdn-hot-gpu", "fqdn-nvlink"})),
}


def main(argv: list[str] | None = None) -> int:
    return make(PLAN, write, cut, Path(__file__).parent / "cases", __doc__, argv)


if __name__ == "__main__":
    raise SystemExit(main())
