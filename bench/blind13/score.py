"""DESIGN's scoring rule for blind13: the one copy blind11 wrote down (not a second)."""

from bench.blind11.score import alerts_of, catches, labels_of, on_unit, score

__all__ = ["alerts_of", "catches", "labels_of", "on_unit", "score"]
