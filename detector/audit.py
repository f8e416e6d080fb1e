"""A hash-chained, append-only audit file: every alert emitted, every notification's fate.

Each line is one JSON entry::

    {"seq": 7, "ts": 1767225600.123, "kind": "alert", "record": {...},
     "prev": "<hash of entry 6>", "hash": "<hash of this entry>"}

``hash`` is SHA-256 (or HMAC-SHA-256 when a key is set) over ``prev`` and the
entry's canonical JSON (sorted keys, without ``hash``); the first entry's
``prev`` is 64 zeros.  So an edited entry no longer matches its hash, and a
dropped, inserted or reordered one breaks the chain (``prev`` and ``seq``)
at that point: :func:`verify` (``faultline audit verify FILE``) names the
line.  What a chain alone cannot show is a cut at the end; the writer logs
its ``seq`` and head hash when it closes, and with a key nobody without it can
rewrite the chain from an edit onwards.

A writer reopening its file continues the chain from the last entry (a torn
last line, from a crash in mid-write, is reported and left: ``verify`` shows
it).  Appends are serialized by a lock and flushed to the OS at once;
``fsync=True`` also forces them to the disk.

>>> import tempfile
>>> path = Path(tempfile.mkdtemp()) / "audit.jsonl"
>>> with AuditLog(path) as log:
...     _ = log.append("alert", {"dedup_key": "fl:a", "status": "firing"})
...     _ = log.append("delivered", {"sink": "pd", "dedup_key": "fl:a"})
>>> verify(path).ok
True
>>> first, second = path.read_text().splitlines()
>>> _ = path.write_text(second + "\\n" + first + "\\n")  # reordered
>>> [p.split(":")[0] for p in verify(path).problems]
['line 1', 'line 2']
"""

from __future__ import annotations

import hashlib
import hmac
import logging
import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

log = logging.getLogger(__name__)

GENESIS = "0" * 64
_KEYS = {"seq", "ts", "kind", "record", "prev", "hash"}


def _digest(prev: str, body: bytes, key: bytes | None) -> str:
    data = prev.encode() + b"\n" + body
    if key is not None:
        return hmac.new(key, data, hashlib.sha256).hexdigest()
    return hashlib.sha256(data).hexdigest()


def _canonical(entry: dict[str, Any]) -> bytes:
    return orjson.dumps({k: v for k, v in entry.items() if k != "hash"},
                        option=orjson.OPT_SORT_KEYS, default=str)


class AuditLog:
    """Appends chained entries to one file; safe to share between threads."""

    def __init__(self, path: str | os.PathLike[str], *, key: bytes | None = None,
                 fsync: bool = False, wall: Callable[[], float] = time.time) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.key = key
        self.fsync = fsync
        self.wall = wall
        self._lock = threading.Lock()
        self.seq, self.head = self._tail()
        self._file = open(self.path, "ab")  # noqa: SIM115 - closed in close()
        if self._file.tell() > 0:
            with open(self.path, "rb") as f:
                f.seek(-1, os.SEEK_END)
                if f.read(1) != b"\n":  # a torn last line: keep it apart from what follows
                    self._file.write(b"\n")

    def _tail(self) -> tuple[int, str]:
        """The last whole entry's seq and hash (0 and the genesis for a new file)."""
        try:
            with open(self.path, "rb") as f:
                f.seek(0, os.SEEK_END)
                size = f.tell()
                f.seek(max(0, size - (1 << 20)))
                lines = f.read().splitlines()
        except FileNotFoundError:
            return 0, GENESIS
        for raw in reversed(lines):
            try:
                entry = orjson.loads(raw)
                return int(entry["seq"]), str(entry["hash"])
            except (orjson.JSONDecodeError, KeyError, TypeError, ValueError):
                log.error("audit file %s: an unreadable last line (a torn write?); the chain "
                          "goes on from the entry before it", self.path)
        return 0, GENESIS

    def append(self, kind: str, record: dict[str, Any]) -> str:
        """Append one entry; returns its hash."""
        with self._lock:
            entry: dict[str, Any] = {"seq": self.seq + 1, "ts": round(self.wall(), 6),
                                     "kind": kind, "record": record, "prev": self.head}
            body = _canonical(entry)
            entry["hash"] = _digest(self.head, body, self.key)
            self._file.write(orjson.dumps(entry, option=orjson.OPT_SORT_KEYS, default=str)
                             + b"\n")
            self._file.flush()
            if self.fsync:
                os.fsync(self._file.fileno())
            self.seq += 1
            self.head = entry["hash"]
            return self.head

    def close(self) -> None:
        with self._lock:
            if not self._file.closed:
                self._file.close()
                log.info("audit file %s: %d entries, head %s", self.path, self.seq, self.head)

    def __enter__(self) -> AuditLog:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


@dataclass
class Verdict:
    """What :func:`verify` found: the entries read and every problem, by line."""

    entries: int = 0
    head: str = GENESIS
    problems: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems


def verify(path: str | os.PathLike[str], *, key: bytes | None = None,
           max_problems: int = 100) -> Verdict:
    """Check every entry's hash and the chain between them."""
    v = Verdict()
    prev, seq = GENESIS, 0
    with open(path, "rb") as f:
        for n, raw in enumerate(f, 1):
            if len(v.problems) >= max_problems:
                v.problems.append(f"line {n}: stopped after {max_problems} problems")
                break
            try:
                entry = orjson.loads(raw)
                if not isinstance(entry, dict) or set(entry) != _KEYS:
                    raise ValueError(f"fields {sorted(_KEYS)} expected")
                stated = str(entry["hash"])
                this_seq = int(entry["seq"])
            except (orjson.JSONDecodeError, ValueError, TypeError) as exc:
                v.problems.append(f"line {n}: not an audit entry ({exc})")
                continue
            v.entries += 1
            if not hmac.compare_digest(_digest(str(entry["prev"]), _canonical(entry), key),
                                       stated):
                v.problems.append(f"line {n}: entry {this_seq} was altered (its hash does not "
                                  f"match its content)")
            if entry["prev"] != prev or this_seq != seq + 1:
                v.problems.append(f"line {n}: entry {this_seq} does not follow entry {seq} "
                                  f"(an entry dropped, inserted or moved before it)")
            prev, seq = stated, this_seq
    v.head = prev
    return v


class _AuditingOutput:
    """A producer that also appends every alert it is given to the audit file."""

    def __init__(self, out: Any, audit: AuditLog, topics: dict[str, str]) -> None:
        self._out = out
        self._audit = audit
        self._contract = {real: contract for contract, real in topics.items()}

    def produce(self, topic: str, value: bytes | None, key: bytes | None = None,
                partition: int | None = None, headers: Any = None) -> None:
        self._out.produce(topic, value, key, partition, headers)
        contract = self._contract.get(topic)
        if contract is not None and value is not None:
            self._audit.append("alert", {"topic": contract, "alert": orjson.loads(value)})

    def close(self) -> None:
        try:
            close = getattr(self._out, "close", None)
            if close is not None:
                close()
        finally:
            self._audit.close()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._out, name)


def audited(out: Any, settings: Any, topics: dict[str, str]) -> Any:
    """``out`` itself, or ``out`` auditing what it produces to ``topics`` (contract name ->
    real topic) when ``settings.audit_file`` is set."""
    path = getattr(settings, "audit_file", None)
    if not path:
        return out
    key = getattr(settings, "audit_key", None)
    return _AuditingOutput(out, AuditLog(path, key=key.reveal().encode() if key else None),
                           topics)
