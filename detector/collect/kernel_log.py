"""XIDs from the kernel log: every one, with its own time, mapped to a GPU index by PCI bus id.

The NVIDIA driver logs ``NVRM: Xid (PCI:0000:3b:00): 79, pid=1234, name=python,
GPU has fallen off the bus.``; dcgm-exporter's ``pci_bus_id`` label gives the
GPU index of that bus.  Sources: ``journal`` (``journalctl -k -f -o json``),
``dmesg`` (``dmesg -w``), or a file that is followed like ``tail -F``.

>>> parse_xid("[ 1234.5] NVRM: Xid (PCI:0000:3b:00): 79, pid=1234, name=python, GPU has "
...           "fallen off the bus.")
((0, 59, 0), 79)
>>> parse_xid("NVRM: Xid (PCI:0000:3b:00): 79, pid='<unknown>', name=<unknown>, ...")
((0, 59, 0), 79)
>>> parse_xid("usb 1-1: new device") is None
True
"""

from __future__ import annotations

import os
import re
import subprocess
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from typing import IO

import orjson

from detector.collect.dcgm import XID_LIMIT, pci_key

# A code below XID_LIMIT has at most 8 digits; a longer number is no XID line (and int()
# of one over 4,300 digits would raise in the reading thread).
_XID = re.compile(r"NVRM: Xid \(PCI:([0-9a-fA-F:.]+)\): ([0-9]{1,8})(?![0-9])")

# A printk line is at most ~1 KiB, journald's LineMax 48 KiB: a followed file that goes
# longer without a newline is not a log, and what it holds is not kept.
MAX_LINE_BYTES = 64 << 10


def parse_xid(line: str) -> tuple[tuple[int, int, int], int] | None:
    """(PCI key, XID code) of a driver XID line, or None."""
    m = _XID.search(line)
    if m is None:
        return None
    key = pci_key(m.group(1))
    code = int(m.group(2))
    if key is None or code >= XID_LIMIT:
        return None
    return key, code


class KernelXids:
    """Follows one kernel-log source on a thread; :meth:`drain` hands over what it saw.

    Lines are read from the moment it starts (history is the importers' job).
    Holds at most ``limit`` unread XIDs; more are dropped and counted.
    """

    def __init__(self, source: str, *, clock: Callable[[], float] = time.time,
                 limit: int = 10_000) -> None:
        self.source = source
        self._clock = clock
        self._queue: deque[tuple[float, tuple[int, int, int], int]] = deque()
        self._limit = limit
        self.dropped = 0
        self.lines = 0
        self.overlong = 0  # lines of a followed file over MAX_LINE_BYTES, skipped
        self.error: str | None = None
        self._stop = threading.Event()
        self._proc: subprocess.Popen[bytes] | None = None
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._run, name="kernel-log", daemon=True)
        self._thread.start()
        self._ready.wait(5)

    def drain(self) -> list[tuple[float, tuple[int, int, int], int]]:
        """(ts, pci key, xid) seen since the last call, in log order."""
        out = []
        while self._queue:
            out.append(self._queue.popleft())
        return out

    def close(self) -> None:
        self._stop.set()
        if self._proc is not None and self._proc.poll() is None:
            self._proc.terminate()
            try:
                self._proc.wait(5)
            except subprocess.TimeoutExpired:
                self._proc.kill()
        self._thread.join(5)

    # -- the reading thread ------------------------------------------------------------------

    def _run(self) -> None:
        try:
            for ts, line in self._lines():
                self.lines += 1
                hit = parse_xid(line)
                if hit is None:
                    continue
                if len(self._queue) >= self._limit:
                    self.dropped += 1
                    continue
                self._queue.append((ts, hit[0], hit[1]))
        except Exception as exc:  # a source that fails is reported, never raised into the agent
            self.error = f"{self.source}: {exc}"
        finally:
            self._ready.set()

    def _lines(self) -> Iterator[tuple[float, str]]:
        if self.source == "journal":
            yield from self._journal()
        elif self.source == "dmesg":
            yield from self._command(["dmesg", "--follow-new", "--notime"])
        else:
            yield from self._follow(self.source)

    def _command(self, argv: list[str]) -> Iterator[tuple[float, str]]:
        self._proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        self._ready.set()
        assert self._proc.stdout is not None
        for raw in self._proc.stdout:
            if self._stop.is_set():
                return
            yield self._clock(), raw.decode(errors="replace")
        if not self._stop.is_set():
            raise RuntimeError(f"{argv[0]} exited with {self._proc.wait()}")

    def _journal(self) -> Iterator[tuple[float, str]]:
        for _, raw in self._command(["journalctl", "-k", "-f", "-n", "0", "-o", "json"]):
            try:
                obj = orjson.loads(raw)
                msg = obj.get("MESSAGE")
                ts = int(obj.get("__REALTIME_TIMESTAMP")) / 1e6
            except (orjson.JSONDecodeError, TypeError, ValueError, AttributeError):
                continue
            if isinstance(msg, str):
                yield ts, msg

    def _follow(self, path: str) -> Iterator[tuple[float, str]]:
        """Lines appended to ``path`` from now on; survives rotation (a new inode) like tail -F."""
        f: IO[bytes] | None = None
        inode = None
        pending = b""
        skip = False  # inside a line over MAX_LINE_BYTES, until its newline
        try:
            while not self._stop.is_set():
                if f is None:
                    try:
                        f = open(path, "rb")  # noqa: SIM115 - closed below
                        st = os.fstat(f.fileno())
                        inode = st.st_ino
                        if not self._ready.is_set():
                            f.seek(0, os.SEEK_END)  # start: only what comes next
                    except OSError:
                        f = None
                    self._ready.set()
                    if f is None:
                        self._stop.wait(0.2)
                        continue
                chunk = f.read(65536)
                if chunk:
                    pending += chunk
                    *lines, pending = pending.split(b"\n")
                    if skip and lines:  # the newline that ends an overlong line: its tail
                        del lines[0]
                        skip = False
                    if skip or len(pending) > MAX_LINE_BYTES:  # not a log line: not held
                        if not skip:
                            self.overlong += 1
                        pending, skip = b"", True
                    now = self._clock()
                    for raw in lines:
                        yield now, raw.decode(errors="replace")
                    continue
                try:
                    st = os.stat(path)
                    rotated = st.st_ino != inode or st.st_size < f.tell()
                except OSError:
                    rotated = True
                if rotated:
                    f.close()
                    f = None
                    continue
                self._stop.wait(0.1)
        finally:
            if f is not None:
                f.close()
