"""Prometheus exposition text -> (name, labels, value) samples, with prometheus_client's parser.

Only the families asked for are handed to the parser: an exporter's page holds
hundreds of other series, and dropping their lines first is what keeps a
scrape cheap (see BENCHMARKS.md, collector CPU).

>>> text = '''# HELP DCGM_FI_DEV_GPU_TEMP GPU temperature (in C).
... # TYPE DCGM_FI_DEV_GPU_TEMP gauge
... DCGM_FI_DEV_GPU_TEMP{gpu="0",UUID="GPU-a"} 65
... DCGM_FI_DEV_FB_FREE{gpu="0",UUID="GPU-a"} 1000
... '''
>>> parse_samples(text, {"DCGM_FI_DEV_GPU_TEMP"})
[Sample(name='DCGM_FI_DEV_GPU_TEMP', labels={'gpu': '0', 'UUID': 'GPU-a'}, value=65.0)]
"""

from __future__ import annotations

from collections.abc import Collection
from typing import NamedTuple

from prometheus_client.parser import text_string_to_metric_families


class Sample(NamedTuple):
    name: str
    labels: dict[str, str]
    value: float


def _wanted_lines(text: str, names: Collection[str], prefixes: tuple[str, ...]) -> str:
    keep = []
    for line in text.splitlines():
        if not line:
            continue
        if line[0] == "#":
            parts = line.split(None, 3)
            name = parts[2] if len(parts) > 2 else ""
        else:
            cut = len(line)
            for sep in ("{", " "):
                i = line.find(sep)
                if 0 <= i < cut:
                    cut = i
            name = line[:cut]
        if name.startswith(prefixes) and (name in names or name.removesuffix("_total") in names
                                          or name + "_total" in names):
            keep.append(line)
    keep.append("")
    return "\n".join(keep)


def parse_samples(text: str, names: Collection[str]) -> list[Sample]:
    """The samples of the named metrics in an exposition page; raises ValueError on bad text."""
    prefixes = tuple({n.split("_", 1)[0] + "_" for n in names})
    out = []
    for family in text_string_to_metric_families(_wanted_lines(text, names, prefixes)):
        for s in family.samples:
            name = s.name
            if name not in names:
                # the parser adds `_total` to a counter named without it (dcgm-exporter's are)
                name = name.removesuffix("_total")
                if name not in names:
                    continue
            out.append(Sample(name, s.labels, float(s.value)))
    return out
