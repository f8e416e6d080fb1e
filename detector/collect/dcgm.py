"""dcgm-exporter readings: per-GPU values, the PCI bus -> GPU index map, XIDs turned into events.

dcgm-exporter labels every series with ``gpu`` (the index), ``UUID``,
``pci_bus_id`` (NVML's ``00000000:3B:00.0``), ``device``, ``modelName`` and
``Hostname``; ``DCGM_EXP_XID_ERRORS_COUNT`` adds ``xid`` and
``window_size_in_ms``.

>>> from detector.collect.exposition import Sample
>>> lbl = {"gpu": "2", "pci_bus_id": "00000000:3B:00.0", "Hostname": "n7"}
>>> r = read_dcgm([Sample("DCGM_FI_DEV_XID_ERRORS", lbl, 0.0)])
>>> r.gpus, r.pci, r.hostname
({2: {'DCGM_FI_DEV_XID_ERRORS': 0.0}}, {(0, 59, 0): 2}, 'n7')
>>> t = XidTracker()
>>> t.update(r)
[]
>>> t.update(read_dcgm([Sample("DCGM_FI_DEV_XID_ERRORS", lbl, 79.0)]))
[(2, 79)]
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field

from detector.collect.exposition import Sample
from detector.collect.fields import XID_COUNT, XID_LAST

_INF = float("inf")
_PCI = re.compile(r"(?:([0-9a-fA-F]{1,8}):)?([0-9a-fA-F]{1,2}):([0-9a-fA-F]{1,2})(?:\.[0-7])?$")
GPU_LIMIT = XID_LIMIT = 1 << 24  # the contract's bound on `gpu` and on `xid`


def pci_key(text: str) -> tuple[int, int, int] | None:
    """(domain, bus, device) of a PCI address in NVML's or the kernel's spelling.

    >>> pci_key("00000000:3B:00.0") == pci_key("0000:3b:00") == (0, 59, 0)
    True
    """
    m = _PCI.search(text.strip())
    if m is None:
        return None
    return int(m.group(1) or "0", 16), int(m.group(2), 16), int(m.group(3), 16)


def _xid(text: str) -> int | None:
    """An XID code label's value, or None when it is not a code the contract can carry."""
    if len(text) > 8 or not (text.isascii() and text.isdigit()):  # 8 digits hold 2^24
        return None
    code = int(text)
    return code if code < XID_LIMIT else None


@dataclass
class DcgmReadings:
    """One scrape of dcgm-exporter, by GPU index."""

    gpus: dict[int, dict[str, float]] = field(default_factory=dict)
    pci: dict[tuple[int, int, int], int] = field(default_factory=dict)
    xid_counts: dict[tuple[int, int], float] = field(default_factory=dict)  # (gpu, xid) -> n
    hostname: str | None = None
    skipped: int = 0  # series without a usable `gpu` label (MIG instances count once per GPU)
    bad_xids: int = 0  # XID series whose code or count no XID can have (left out)


def read_dcgm(samples: Iterable[Sample]) -> DcgmReadings:
    """Group dcgm-exporter samples by GPU index; a MIG instance's series are folded into its GPU."""
    r = DcgmReadings()
    for name, labels, value in samples:
        try:
            gpu = int(labels.get("gpu", ""))
        except ValueError:
            r.skipped += 1
            continue
        if not 0 <= gpu < GPU_LIMIT:
            r.skipped += 1
            continue
        if r.hostname is None:
            r.hostname = labels.get("Hostname") or labels.get("hostname") or None
        bus = labels.get("pci_bus_id")
        if bus:
            key = pci_key(bus)
            if key is not None:
                r.pci[key] = gpu
        if name == XID_COUNT:
            text = labels.get("xid", "")
            if not text:
                continue  # the zero series of a GPU without XIDs carries no `xid` label
            xid = _xid(text)
            if xid is None or not 0 <= value < _INF:
                r.bad_xids += 1
                continue
            r.xid_counts[(gpu, xid)] = r.xid_counts.get((gpu, xid), 0.0) + value
            continue
        if name == XID_LAST and not 0 <= value < XID_LIMIT:  # NaN, Inf: not a code
            r.bad_xids += 1
            continue
        r.gpus.setdefault(gpu, {}).setdefault(name, value)
    return r


class XidTracker:
    """Turns dcgm-exporter's XID series into events, one per XID that happened.

    ``DCGM_EXP_XID_ERRORS_COUNT`` (XIDs in a sliding window, per code) is used
    where a GPU has it: a rise of ``k`` is ``k`` events (a count that falls is the
    window sliding).  Otherwise ``DCGM_FI_DEV_XID_ERRORS``, a gauge holding the
    last code, gives an event when it changes to a non-zero code; the same code
    again is invisible there (DCGM's own limit: pass the kernel log for it).
    The first sight of a gauge is a baseline, not an event: it may be days old.
    The windowed count's first sight is reported: it is at most one window old.
    """

    def __init__(self) -> None:
        self._last: dict[int, int] = {}
        self._counts: dict[tuple[int, int], float] = {}
        self._counted_gpus: set[int] = set()

    def update(self, r: DcgmReadings) -> list[tuple[int, int]]:
        """The (gpu, xid) events since the previous scrape, in GPU order."""
        events: list[tuple[int, int]] = []
        counted = {gpu for gpu, _ in r.xid_counts}
        for (gpu, xid), n in sorted(r.xid_counts.items()):
            prev = self._counts.get((gpu, xid), 0.0)
            if n > prev:
                events.extend([(gpu, xid)] * min(int(n - prev), 1000))
        # a series that vanished has slid out of the window: forget it
        self._counts = dict(r.xid_counts)
        self._counted_gpus |= counted
        for gpu in sorted(r.gpus):
            v = r.gpus[gpu].get(XID_LAST)
            if v is None or v != v:
                continue
            code = int(v)
            prev_code = self._last.get(gpu)
            self._last[gpu] = code
            if gpu in self._counted_gpus:
                continue
            if prev_code is not None and code != prev_code and code > 0:
                events.append((gpu, code))
        return events
