"""Calibrated confidence: per alert family and the deployment condition that explains the doubt.

An alert's ``confidence`` should be the share of such alerts that are real.
The detectors give a raw score (``evidence.raw_confidence``); the shipped
table (:mod:`detector.calibration_table`, written by
``python bench/calibrate.py fit TUNING_CORPUS --write``; never edited by hand)
maps it to a calibrated one with a piecewise-linear curve through (raw score,
confidence) knots, fitted on a tuning corpus.

What makes an alert doubtful is sometimes not its family but the deployment
it comes from: a NIC isolation from a cluster faultline has no topology for
cannot tell a bad cable from a failed leaf, the same NIC isolation with a
topology can.  So the table is keyed by family *and*, where the tuning corpus
showed that it matters, one condition (:data:`CONDITIONS`):

- ``topology``: ``full`` (the topology lists each node's NICs), ``nodes``
  (switch membership by node only, as a Slurm ``topology.conf`` gives it),
  ``none`` (no topology);
- ``interval``: the thermal sampling interval of the alert's node, in the
  buckets ``1`` (<= 2 s), ``10`` (<= 15 s), ``30`` (longer), ``unknown``.

A lookup tries the family under the alert's value of each condition, then the
family alone, then gives the raw score back (a family the corpus never saw); a
raw score below the curve's lowest knot (a score the corpus never showed for
the family, such as a two-candidate checksum vote's 0.5) is never raised.
Alerts carry their conditions in ``evidence.conditions`` beside
``evidence.raw_confidence``, so a new table can be fitted from alerts alone.
The engine reads the table with a few comparisons; scikit-learn fits it and
is never imported here.

>>> table = {("isolation", "network", "nic", "topology=none"): ((0.0,), (0.3,)),
...          ("isolation", "network", "nic", ""): ((0.5, 0.9), (0.8, 0.96))}
>>> confidence("alerts.isolation", "network", "nic", 0.9, {"topology": "none"}, table)
0.3
>>> confidence("alerts.isolation", "network", "nic", 0.7, {"topology": "full"}, table)
0.88
>>> confidence("alerts.isolation", "no", "such", 0.42, {}, table)
0.42
>>> confidence("alerts.isolation", "network", "nic", 0.4, {"topology": "full"}, table)
0.4
>>> conditions(None, 30.0), conditions(None, None)["interval"]
({'topology': 'none', 'interval': '30'}, 'unknown')
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Mapping
from typing import TYPE_CHECKING

from detector.calibration_table import CURVES

if TYPE_CHECKING:
    from detector.topology import Topology

Curve = tuple[tuple[float, ...], tuple[float, ...]]
Table = Mapping[tuple[str, str, str, str], Curve]

CONDITIONS = ("topology", "interval")  # the order a lookup tries them in


def topology_condition(topology: Topology | None) -> str:
    """``full``, ``nodes`` or ``none``: how much of the fabric the topology describes."""
    if topology is None:
        return "none"
    nodes = topology.nodes()
    if topology.format == "slurm" or not nodes or not topology.nics_of(nodes[0]):
        return "nodes"
    return "full"


def interval_condition(interval_s: float | None) -> str:
    """The thermal sampling interval's bucket: ``1``, ``10``, ``30`` or ``unknown``."""
    if interval_s is None or not interval_s > 0:
        return "unknown"
    if interval_s <= 2.0:
        return "1"
    return "10" if interval_s <= 15.0 else "30"


def conditions(topology: Topology | str | None, interval_s: float | None) -> dict[str, str]:
    """The alert's deployment conditions, as ``evidence.conditions`` carries them."""
    topo = topology if isinstance(topology, str) else topology_condition(topology)
    return {"topology": topo, "interval": interval_condition(interval_s)}


def confidence(topic: str, kind: str, cause: str, raw: float,
               conds: Mapping[str, str] | None = None, table: Table | None = None) -> float:
    """Calibrated confidence of an alert of this family, under these conditions."""
    curves = CURVES if table is None else table
    family = (topic.rsplit(".", 1)[-1], kind, cause)
    curve = None
    for name in CONDITIONS:
        value = (conds or {}).get(name)
        if value is not None:
            curve = curves.get((*family, f"{name}={value}"))
            if curve is not None:
                break
    if curve is None:
        curve = curves.get((*family, ""))
    if curve is None:
        return raw
    xs, ys = curve
    i = bisect_right(xs, raw)
    if i == 0:
        # Below every raw score the corpus showed for the family: no evidence for it, and a
        # curve is monotone, so it may lower the score to the curve's floor, never raise it.
        return min(raw, ys[0])
    if i == len(xs):
        return ys[-1]
    x0, x1, y0, y1 = xs[i - 1], xs[i], ys[i - 1], ys[i]
    return y0 + (y1 - y0) * (raw - x0) / (x1 - x0)
