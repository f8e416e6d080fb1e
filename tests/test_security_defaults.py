"""/metrics listens on loopback unless told otherwise, for both commands."""

from __future__ import annotations

import socket

from prometheus_client import CollectorRegistry

from detector.metrics import serve_metrics
from detector.pager.config import PagerConfig
from detector.settings import Settings


def _reachable(addr: str, port: int) -> bool:
    try:
        with socket.create_connection((addr, port), timeout=1):
            return True
    except OSError:
        return False


def _own_address() -> str | None:
    """A non-loopback address of this host, if it has one."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        try:
            s.connect(("192.0.2.1", 9))  # TEST-NET: nothing is sent
            addr = s.getsockname()[0]
        except OSError:
            return None
    return None if addr.startswith("127.") else addr


def test_metrics_bind_loopback_by_default() -> None:
    assert Settings.load(env={}).metrics_addr == "127.0.0.1"
    cfg = PagerConfig.from_dict({"sinks": {"alertmanager": {"url": "http://127.0.0.1:1"}}},
                                env={})
    assert cfg.metrics_addr == "127.0.0.1"
    with serve_metrics(CollectorRegistry(), 0) as server:
        assert _reachable("127.0.0.1", server.port)
        other = _own_address()
        if other is not None:
            assert not _reachable(other, server.port)
    assert Settings.load(env={"FAULTLINE_METRICS_ADDR": "0.0.0.0"}).metrics_addr == "0.0.0.0"
