"""Incident logs: reading and writing, the labelled simulator, scoring, bundled incidents."""
