"""InfiniBand / RoCE ports: from node_exporter's infiniband collector or the sysfs tree itself.

Both give, per (device, port), the readings :func:`detector.collect.fields.nic_record`
turns into ``telemetry.nic``.  Counters pass as the hardware reports them; a
reset or a wrap is the engine's business.  sysfs is read directly when the
exporter is too old for RoCE ``hw_counters`` (node_exporter < 1.8) or absent.

>>> from detector.collect.exposition import Sample
>>> ports = ports_from_node_exporter([Sample("node_infiniband_link_downed_total",
...                                          {"device": "mlx5_1", "port": "1"}, 3.0)])
>>> ports
{('mlx5_1', 1): {'node_infiniband_link_downed_total': 3.0}}
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

from detector.collect.exposition import Sample
from detector.collect.fields import (
    COUNTER_MAX,
    IB_RATE,
    IB_STATE,
    NODE_EXPORTER_NIC,
    SYSFS_COUNTERS,
)

PORT_LIMIT = 1 << 24
NAME_LIMIT = 256

Ports = dict[tuple[str, int], dict[str, float]]


def _port(text: str) -> int | None:
    try:
        p = int(text)
    except ValueError:
        return None
    return p if 0 <= p < PORT_LIMIT else None


def ports_from_node_exporter(samples: Iterable[Sample]) -> Ports:
    """node_exporter ``node_infiniband_*`` samples grouped by (device, port)."""
    out: Ports = {}
    for name, labels, value in samples:
        dev, port = labels.get("device", ""), _port(labels.get("port", ""))
        if not dev or len(dev) > NAME_LIMIT or port is None:
            continue
        out.setdefault((dev, port), {})[name] = value
    return out


def _read_int(path: Path) -> int | None:
    try:
        text = path.read_text().strip()
    except OSError:
        return None
    try:
        return int(text.split(":", 1)[0].split()[0])
    except (ValueError, IndexError):
        return None


def _rate_bytes_per_s(path: Path) -> float | None:
    # "400 Gb/sec (4X NDR)"
    try:
        first = path.read_text().split()[0]
        return float(first) * 1e9 / 8
    except (OSError, ValueError, IndexError):
        return None


def ports_from_sysfs(sysfs: str | os.PathLike[str]) -> Ports:
    """Every port under ``<sysfs>/class/infiniband``, as node_exporter metric names.

    ``sysfs`` is the mount point (``/sys``), as node_exporter's ``--path.sysfs``.
    A counter file that cannot be read (some need privileges) is left out.
    """
    root = Path(sysfs) / "class" / "infiniband"
    out: Ports = {}
    try:
        devices = sorted(os.listdir(root))
    except OSError:
        return out
    for dev in devices:
        if len(dev) > NAME_LIMIT:
            continue
        try:
            port_names = sorted(os.listdir(root / dev / "ports"))
        except OSError:
            continue
        for pn in port_names:
            port = _port(pn)
            if port is None:
                continue
            base = root / dev / "ports" / pn
            values: dict[str, float] = {}
            state = _read_int(base / "state")
            if state is not None:
                values[IB_STATE] = float(state)
            rate = _rate_bytes_per_s(base / "rate")
            if rate is not None:
                values[IB_RATE] = rate
            for fld, (folder, fname, scale) in SYSFS_COUNTERS.items():
                v = _read_int(base / folder / fname)
                if v is not None:
                    values[NODE_EXPORTER_NIC[fld]] = float(min(v * scale, COUNTER_MAX))
            out[(dev, port)] = values
    return out


def merge_ports(primary: Ports, extra: Ports) -> Ports:
    """``primary``'s readings, with what only ``extra`` has (e.g. sysfs hw_counters) added."""
    out = {k: dict(v) for k, v in primary.items()}
    for k, v in extra.items():
        have = out.setdefault(k, {})
        for name, value in v.items():
            have.setdefault(name, value)
    return out
