"""blind3's corpus with its host-path faults stripped to their host time (room steps, round 12).

K2 and E5 (a node's host path slows) without their compute slowdown -- a node whose CPUs are
throttled, its GPUs untouched -- and K4 (a PCIe-downtrained GPU) replaying 0.02/s (1.2/min,
under DCGM's 8/min limit: a link that replays little).  Everything else, labels included, is
blind3's, seed for seed.  A stress variant for detector.steps' host-time signal, not a blind
corpus: written after the detector, knowing what it looks at.

    python -m bench.blind3_hostonly --out DIR --corpus --seeds 8..9
    python -m bench.blind3.measure DIR --alerts FRESH
"""

from __future__ import annotations

import sys

from bench.blind3 import faults, generate

_host_slow, _pcie_downtrained = faults.host_slow, faults.pcie_downtrained


def host_only(fl, f, node, t0, t1, compute, neither_share):  # noqa: ANN001, ANN201
    """blind3's host_slow, its compute factor 1.0: only the time in neither grows."""
    return _host_slow(fl, f, node, t0, t1, 1.0, neither_share)


def quiet_link(fl, f, node, gpu, t0, t1, neither_share, comm, replay_per_s):  # noqa: ANN001, ANN201
    """blind3's pcie_downtrained replaying 0.02/s instead of ~0.6/s."""
    return _pcie_downtrained(fl, f, node, gpu, t0, t1, neither_share, comm, 0.02)


faults.host_slow = host_only
faults.pcie_downtrained = quiet_link

if __name__ == "__main__":
    sys.exit(generate.main())
