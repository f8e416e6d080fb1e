"""The ``faultline`` command (see :mod:`detector.cli.main`)."""

from detector.cli.main import build_parser, format_alert, main

__all__ = ["build_parser", "format_alert", "main"]
