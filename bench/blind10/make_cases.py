"""Rebuilds bench/blind10/cases/ from the seed logs (20 min each, regenerated here).

    python -m bench.blind10.make_cases [--only NAME]

Each case: (story, seed, from_s, to_s, jobs, nodes, labels) -- seconds from the log's first
record, the jobs whose step records stay, the nodes whose telemetry stays, the labels kept.
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

from bench.blind10 import generate
from bench.blind10.cut import cut

CASES = Path(__file__).resolve().parent / "cases"
PLAN = {
    # the NVMe node's loader stalls in 1/5-1/3 of the steps, 0.4-2.8 s each, all in neither
    "K1-nvme-stalls-unseen": ("life", 0, 850, 1200, {"pt-life"}, {"hgx-a06"},
                              {"nvme-stalls"}),
    # ranks 4-7 of hgx-b12 bound to the wrong socket in a TP4 x PP4 x DP2 job
    "K2-numa-bind-unseen": ("zero3", 0, 230, 560, {"pp-int"}, {"hgx-b10", "hgx-b11",
                                                               "hgx-b12", "hgx-b13"},
                            {"numa-bind"}),
    # async checkpoint at step 50: each node's write-back 3-7 % slower until its own write ends
    "K3-async-ckpt-writeback-pages": ("life", 6, 0, 300, {"pt-life"}, set(), set()),
    # the PCIe storm GPU: isolated for pcie_replay, then escalated again as slow_node/unknown
    "K4-aer-second-page": ("zero3", 2, 100, 400, {"ft-zero3"}, {"hgx-b05"}, {"aer-xid79"}),
    # hgx-a03 back from the driver reload with its clocks locked at 1440 MHz, throttle 0
    "K5-locked-clocks-unnamed": ("life", 6, 590, 850, {"pt-life"},
                                 {"hgx-a01", "hgx-a02", "hgx-a03"}, {"locked-clocks"}),
    # XID 79 on the GPU already isolated for its PCIe replays
    "K6-xid79-under-open-isolation": ("zero3", 0, 150, 470, {"ft-zero3"}, {"hgx-b06"},
                                      {"aer-xid79"}),
    # (ali23, from the held seed 7 where the lead found it) hgx-a01's write-back after the
    # step-145 snapshot: 3-7 % for 10 steps, held as one, ended, then paged as the hold let go
    "K7-writeback-paged-after-hold": ("life", 7, 0, 920, {"pt-life"}, {"hgx-a01"},
                                      {"locked-clocks", "nvme-stalls"}),
}


def build(name: str, tmp: Path) -> Path:
    story, seed, a, b, jobs, nodes, labels = PLAN[name]
    log = tmp / f"{story}-s{seed}.jsonl.gz"
    if not log.exists():
        generate.write(tmp, story, seed)
    return cut(log, CASES / f"{name}.jsonl.gz", a, b, nodes, jobs, labels)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", default=None)
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        for name in PLAN:
            if args.only in (None, name):
                print(build(name, Path(tmp)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
