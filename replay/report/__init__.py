"""``faultline report``: an incident log (and its alerts) as one self-contained HTML page.

- :mod:`replay.report.series` reads the telemetry an alert's plot needs, in one pass;
- :mod:`replay.report.plots` draws with matplotlib into inline SVG (reusable: the
  evaluation's HTML tables use its latency plots);
- :mod:`replay.report.cost` is what the incident cost in training's own units;
- :mod:`replay.report.page` puts it together.

matplotlib is the optional extra ``report`` (``pip install 'faultline[report]'``).
"""
