"""DESIGN's scoring rule for blind38: blind11's copy of it (one copy, not two)."""

from bench.blind11.score import alerts_of, catches, labels_of, on_unit, score

__all__ = ["alerts_of", "catches", "labels_of", "on_unit", "score"]
