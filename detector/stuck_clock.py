"""One GPU stuck at a low clock with no clock-event reason, its rank slower: the GPU's (issue 10).

NVML's clock-event reasons name everything the driver holds a clock down for: idle (0x1),
application or locked clocks (0x2, "user-defined clocks"), power (0x4, 0x80), heat (0x20,
0x40), a hardware slowdown (0x8).  A busy GPU with none set runs, by the driver's word, as
fast as it can ("clocks are as high as possible").  One such GPU held CLOCK_HELD or more
below its own node's busy GPUs -- the same board, the same SKU, the same driver and
settings -- while they run free is held by something the driver does not report: its board,
its VBIOS, a clock generator stuck (blind23 C1: an H100 at 1590 MHz beside seven at 1965,
its rank ~20 % slower, after its node's driver upgrade).  DESIGN: a throttle is a
recommendation when the unit measurably hurts the job; no cause is named for a reason-less
clock loss, and this reads it as the GPU's (``gpu_hardware``), an isolation of the GPU.

Not this rule's (each stays the escalation it was, ``Correlator._held_clock``'s "held by a
setting", cause unknown):
- a node's GPUs all low alike (locked or application clocks left after a driver reload,
  blind10 K5; an upgrade that brings them back 15 MHz lower) -- no mate runs free;
- a GPU low whose rank is slow only with its node's others (``node_wide``: TP waiting inside
  the node) or with its replica's (blind15's stage GPU, ``_lone_clock``) -- the slowness is
  not shown to be this rank's own;
- a clock lower with no rank slower: evidence (``sm_clock``), no page;
- mates under a clock-event reason (a cap, heat): their clock is not the free one, and too
  few free mates left say nothing.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from detector.alerts import ISOLATION, Scope
from detector.findings import Finding
from detector.job_pace import _THROTTLED, held_below, median_clock

if TYPE_CHECKING:
    from detector.alerts import Alert
    from detector.correlate import Correlator, Problem

MATES = 3          # the node's other busy GPUs with a free clock told, at least
NODE_GPUS = 64     # GPU indices of a node looked at for its mates (a bound per decision)


def mates_clock(corr: Correlator, node: str, gpu: int) -> tuple[float, int] | None:
    """The median busy clock with no clock-event reason of ``node``'s other GPUs (not idle,
    not throttled now) and how many told it; None under MATES of them."""
    clocks = corr._clocks
    told = []
    for g in range(NODE_GPUS):
        if g == gpu:
            continue
        key = Scope.of_gpu(node, g).key
        c = clocks.get(key)
        if c is None or corr.gpu_idle(node, g) is True or _throttled(corr, key):
            continue
        told.append(c[0])
    return (median_clock(told), len(told)) if len(told) >= MATES else None


def _throttled(corr: Correlator, key: str) -> bool:
    signals = corr._device.get(key)
    return signals is not None and any(s in signals for s in _THROTTLED)


def held(corr: Correlator, f: Finding) -> dict | None:
    """The stuck clock under slow rank ``f``'s own GPU, with its node mates' (the page's
    ``sm_clock`` evidence); None when it is not this rule's."""
    node, gpu = f.scope.node, f.scope.gpu
    if (f.signal != "slow_rank" or f.scope.level != "gpu" or node is None or gpu is None
            or f.evidence.get("node_wide")):
        return None
    key = f.scope.key
    own = corr._clocks.get(key)
    if own is None or corr.gpu_idle(node, gpu) is True or _throttled(corr, key):
        return None
    mates = mates_clock(corr, node, gpu)
    if mates is None or not held_below(own[0], mates[0]):
        return None
    return {"sm_clock_mhz": own[0], "clock_told_ts": own[1], "node_mates_mhz": mates[0],
            "node_mates_told": mates[1], "throttle_reasons": "0x0"}


def page(corr: Correlator, f: Finding, now: float, out: list[Alert]) -> Problem | None:
    """Slow rank ``f``, alone on its GPU and due for a page, on a GPU whose clock is stuck
    (:func:`held`): isolated at the GPU, slow_node / gpu_hardware.  None when not so (the
    caller escalates as before)."""
    clock = held(corr, f)
    if clock is None:
        return None
    mhz, ref = clock["sm_clock_mhz"], clock["node_mates_mhz"]
    node, gpu = f.scope.node, f.scope.gpu
    because = (
        f"impact: rank {f.rank} {f.evidence.get('compute_ratio_to_peers')}x its peers' compute "
        f"while GPU {gpu} of {node} runs busy at {mhz:g} MHz with no clock-event reason, "
        f"{1.0 - mhz / ref:.0%} below its node's other GPUs (median {ref:g} MHz of "
        f"{clock['node_mates_told']}, free): the driver reports nothing holding it -- no "
        "power, heat or clock setting -- while its node's other GPUs run free: the GPU "
        "itself (its clock generator, VBIOS or board) holds it")
    p = corr._raise(ISOLATION, "slow_node", "gpu_hardware", f.scope, f, out, detected_ts=now,
                    extra={"recommended_because": because, "sm_clock": clock})
    corr._slow_wait.pop(f.scope.key, None)
    corr._supersede(f.scope, p, out)  # (an escalation of its slowness still open: this now)
    return p
