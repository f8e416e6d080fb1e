"""Incident logs: reading and writing, the labelled-incident simulator, scoring, bundled incidents."""
