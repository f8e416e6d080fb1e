"""DESIGN's scoring rule for blind14: the rule blind11 wrote down, imported (one copy)."""

from bench.blind11.score import alerts_of, catches, labels_of, on_unit, score

__all__ = ["alerts_of", "catches", "labels_of", "on_unit", "score"]
