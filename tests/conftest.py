"""Shared pytest fixtures."""

from __future__ import annotations

import importlib.util
import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

_BROKER_PY = Path(__file__).resolve().parent.parent / "deploy" / "kafka" / "broker.py"


def _load_broker_module():
    # deploy/ is not a package: load broker.py by path, once.
    name = "faultline_deploy_kafka_broker"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, _BROKER_PY)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name]


@pytest.fixture(scope="session")
def kafka_bootstrap() -> Iterator[str]:
    """Bootstrap address of a real Kafka broker shared by the whole test session.

    Uses FAULTLINE_KAFKA_BOOTSTRAP when set; otherwise starts a single-node broker
    (deploy/kafka/broker.py) on first use and stops it when the session ends.
    """
    external = os.environ.get("FAULTLINE_KAFKA_BOOTSTRAP")
    if external:
        yield external
        return
    with _load_broker_module().KafkaBroker() as broker:
        yield broker.bootstrap
