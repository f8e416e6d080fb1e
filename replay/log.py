"""Incident logs: JSON Lines (optionally gzip) of ``{"topic": ..., "value": {...}}`` records.

Reading is streaming (a log may hold millions of records) and never stops at
a bad line: the line's problem is reported as an ``InvalidRecord`` and the
next line is read.  A line over ``MAX_LINE_BYTES`` is one of those, read past
without being held.

>>> import tempfile, os
>>> path = os.path.join(tempfile.mkdtemp(), "x.jsonl.gz")
>>> write_records(path, [{"topic": "labels", "value": {"a": 1}}])
1
>>> [(r.topic, r.value) for r in read_records(path)]
[('labels', {'a': 1})]
"""

from __future__ import annotations

import gzip
import os
import zlib
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import IO, Any, NamedTuple

import orjson

from detector.pipeline.clusters import check_home
from detector.topology import Topology, TopologyError

SUFFIXES = (".jsonl", ".jsonl.gz", ".json.gz", ".ndjson")
TOPOLOGY_TOPIC = "topology"  # a log's first record may carry its cluster's topology
# A line is held in memory while it is parsed, and a gzip stream expands ~1,000-fold: a
# longer line is refused unread.  4x the decoder's message limit (1 MiB), room for a
# topology record that lists 60,000 nodes one a line.
MAX_LINE_BYTES = 4 << 20


class Record(NamedTuple):
    """One line of a log: its topic, its parsed value, and its line number."""

    topic: str
    value: Any
    line: int


class InvalidRecord(NamedTuple):
    """A line that is not a record; ``reason`` says why.

    ``damaged`` marks the end of a file that cannot be read further (a truncated or
    corrupt gzip stream): the records before it stand, nothing after it is read.
    """

    reason: str
    raw: bytes
    line: int
    damaged: bool = False


def log_files(paths: Iterable[str | os.PathLike[str]]) -> list[Path]:
    """The log files named, with folders expanded to their logs (sorted, recursively)."""
    out: list[Path] = []
    for p in map(Path, paths):
        if p.is_dir():
            out.extend(sorted(f for f in p.rglob("*") if f.is_file()
                              and f.name.endswith(SUFFIXES)))
        elif p.is_file():
            out.append(p)
        else:
            raise FileNotFoundError(f"no such log file or folder: {p}")
    return out


def open_log(path: str | os.PathLike[str]) -> IO[bytes]:
    """Open a log for reading bytes, gunzipping when the content (not the name) says gzip."""
    with open(path, "rb") as f:
        magic = f.read(2)
    if magic == b"\x1f\x8b":
        return gzip.open(path, "rb")
    return open(path, "rb")  # noqa: SIM115 - returned to the caller


def read_records(path: str | os.PathLike[str]) -> Iterator[Record | InvalidRecord]:
    """Every line of one log, as a Record or an InvalidRecord, in file order.

    A compressed stream that breaks off (a copy cut short, a corrupt block) ends the
    iteration with one ``InvalidRecord(damaged=True)`` saying where, never a traceback.
    """
    with open_log(path) as f:
        n = 0
        try:
            readline = f.readline
            while line := readline(MAX_LINE_BYTES + 1):
                n += 1
                if len(line) > MAX_LINE_BYTES and line[-1:] != b"\n":
                    while (rest := readline(1 << 16)) and rest[-1:] != b"\n":
                        pass  # the rest of the line is read past, never held
                    yield InvalidRecord(f"line {n}: longer than {MAX_LINE_BYTES:,} bytes",
                                        line[:1024], n)
                    continue
                if not line.strip():
                    continue
                try:
                    obj = orjson.loads(line)
                except orjson.JSONDecodeError as exc:
                    yield InvalidRecord(f"line {n}: not valid JSON: {exc}", line, n)
                    continue
                if (type(obj) is not dict or type(obj.get("topic")) is not str
                        or "value" not in obj):
                    yield InvalidRecord(f"line {n}: not a {{topic, value}} record", line, n)
                    continue
                yield Record(obj["topic"], obj["value"], n)
        except EOFError:
            yield InvalidRecord(f"truncated: the gzip stream ends early, after line {n}", b"",
                                n + 1, damaged=True)
        except (OSError, zlib.error) as exc:
            yield InvalidRecord(f"corrupt gzip data after line {n}: {exc}", b"", n + 1,
                                damaged=True)


def write_records(path: str | os.PathLike[str], records: Iterable[dict[str, Any]]) -> int:
    """Write records as JSON Lines (gzip when the name ends in .gz); returns how many."""
    n = 0
    raw = open(path, "wb")  # noqa: SIM115
    out: IO[bytes] = gzip.GzipFile(fileobj=raw, mode="wb", mtime=0) if str(path).endswith(
        ".gz") else raw
    try:
        for rec in records:
            out.write(orjson.dumps(rec))
            out.write(b"\n")
            n += 1
    finally:
        out.close()
        raw.close()
    return n


def log_topology(path: str | os.PathLike[str]) -> Topology | None:
    """The topology a log carries as its first record (DESIGN.md), or None when it has none.

    Only the first record is looked at: a recorder writes the topology at the head.
    A topology record that does not parse raises :class:`TopologyError` naming the log.
    """
    return log_head(path)[0]


class LogHead(NamedTuple):
    """The topology records at a log's head (:func:`log_head`)."""

    topology: Topology | None            # the first one's: the home cluster's
    cluster: str | None                  # its own ``cluster``: the home cluster, if it says
    others: dict[str, Topology]          # the ones after it, each naming its ``cluster``


def log_head(path: str | os.PathLike[str]) -> LogHead:
    """:func:`log_topology`, with the record's own ``cluster`` -- the `cluster` value of the
    records that topology describes (DESIGN's common optional field, on the topology record
    too; home28) -- and the other clusters' topologies: topology records right after it, each
    with its ``cluster``.  A record that does not parse, a ``cluster`` that is no `cluster`
    value, or a later record without one (or naming a cluster twice) raises TopologyError."""
    head = LogHead(None, None, {})
    for rec in read_records(path):
        if not (isinstance(rec, Record) and rec.topic == TOPOLOGY_TOPIC):
            break
        where = f"{path} (topology record)"
        value = rec.value if isinstance(rec.value, dict) else {}
        text, fmt = value.get("text"), value.get("format")
        if not isinstance(text, str) or fmt not in ("faultline", "slurm"):
            raise TopologyError(where, rec.line, None,
                                "needs 'format' (faultline or slurm) and 'text'")
        cluster = value.get("cluster")
        if cluster is not None or head.topology is not None:
            try:
                check_home(cluster)
            except ValueError as exc:
                raise TopologyError(where, rec.line, "cluster", str(exc)) from None
        if head.topology is not None and (cluster == head.cluster or cluster in head.others):
            raise TopologyError(where, rec.line, "cluster", f"{cluster!r}: a second topology")
        topo = Topology.from_text(text, source=where, fmt=fmt)
        if head.topology is None:
            head = LogHead(topo, cluster, {})
        else:
            head.others[cluster] = topo
    return head
