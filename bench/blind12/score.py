"""DESIGN's scoring rule for blind12: the same rule blind11 wrote down (one copy, not two).

A firing alert catches a label when its `detected_ts` lies in [start_ts, end_ts + 60 s] and its
scope is the label's unit, or the node holding a gpu / nic label; an unattributable label is
caught only by an escalation; a problem (topic, dedup_key) catching nothing is a false positive.
"""

from bench.blind11.score import alerts_of, catches, labels_of, on_unit, score

__all__ = ["alerts_of", "catches", "labels_of", "on_unit", "score"]
