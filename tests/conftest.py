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
    # Each xdist worker starts its own broker at its first broker test, so two JVMs may start
    # at once; on a loaded 2-core box (load 28, nice 10) two took over broker.py's 90 s.
    with _load_broker_module().KafkaBroker(start_timeout_s=240.0) as broker:
        yield broker.bootstrap


# -- a small incident for the service tests --------------------------------------------


def write_service_incident(path: Path, *, steps: int = 90, t0: float = 1767225600.0) -> Path:
    """A small hand-made incident log with one fault of each sort the service must carry.

    16 ranks of one data-parallel job on node-000 and node-001, thermal and NIC
    samples every second, ECC every 5 s, and four faults:
    an XID 79 on node-001 GPU 6 (t+21 s), a thermally throttled slow rank on
    node-000 GPU 3 (from step 30), a silent slow rank on node-001 GPU 4 (from
    step 50), and a NIC link going down on node-000 mlx5_1 (t+60 s).
    """
    import numpy as np

    from detector import testing as t
    from replay.log import write_records

    rng = np.random.default_rng(7)
    events: list[tuple[str, object]] = []
    nodes = ("node-000", "node-001")
    slow = {3: (30, 1.25), 12: (50, 1.2)}
    for s in range(steps):
        end = t0 + s
        compute = 700.0 * rng.lognormal(0.0, 0.015, 16)
        for r, (start, factor) in slow.items():
            if s >= start:
                compute[r] *= factor
        step_ms = round(float(compute.max()) + 250.0, 2)
        for r in range(16):
            events.append(("telemetry.step", t.step(end + 0.001 * r, r, s, step_ms=step_ms,
                                                     compute_ms=round(float(compute[r]), 2))))
        for n, node in enumerate(nodes):
            for g in range(8):
                hot = node == "node-000" and g == 3 and s >= 30
                events.append(("telemetry.thermal", t.thermal(
                    end + 0.2 + 0.01 * (8 * n + g), node, g, temp_c=91.0 if hot else 66.0,
                    clock_mhz=1500.0 if hot else 1980.0, throttle=0x40 if hot else 0)))
                if s % 5 == n:
                    xid = 79 if (node == "node-001" and g == 6 and s == 21) else None
                    events.append(("telemetry.ecc", t.ecc(end + 0.3 + 0.01 * g, node, g,
                                                          xid=xid)))
            for k in range(4):
                down = node == "node-000" and k == 1 and s >= 60
                traffic = 10**9 * s
                events.append(("telemetry.nic", t.nic(
                    end + 0.4 + 0.01 * k, node, f"mlx5_{k}", tx=0 if down else traffic,
                    rx=0 if down else traffic, link_downed=1 if down else 0, up=not down)))
    events.sort(key=lambda te: te[1].ts)  # type: ignore[attr-defined]
    write_records(path, ({"topic": topic, "value": {k: v for k, v in ev._asdict().items()
                                                     if v is not None}}
                         for topic, ev in events))
    return path


@pytest.fixture(scope="session")
def service_incident_log(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The incident log the service tests replay: FAULTLINE_SERVICE_TEST_LOG, or a small one.

    For example FAULTLINE_SERVICE_TEST_LOG=replay/incidents/h100-128-all-faults.jsonl.gz
    with FAULTLINE_SERVICE_TEST_TOPOLOGY=topologies/h100-128.topo.
    """
    chosen = os.environ.get("FAULTLINE_SERVICE_TEST_LOG")
    if chosen:
        return Path(chosen).resolve()
    return write_service_incident(tmp_path_factory.mktemp("incident") / "small.jsonl")


@pytest.fixture(scope="session")
def service_incident_topology() -> Path | None:
    """The topology of ``service_incident_log``: FAULTLINE_SERVICE_TEST_TOPOLOGY, or none."""
    chosen = os.environ.get("FAULTLINE_SERVICE_TEST_TOPOLOGY")
    return Path(chosen).resolve() if chosen else None


# -- the bundled incident, replayed in process once a session ------------------------------

BUNDLED_INCIDENT = Path(__file__).resolve().parent.parent / "replay" / "incidents" / \
    "h100-128-all-faults.jsonl.gz"
BUNDLED_TOPOLOGY = Path(__file__).resolve().parent.parent / "topologies" / "h100-128.topo"


@pytest.fixture(scope="session")
def bundled_incident_replay():  # noqa: ANN201 - replay.runner.LogResult, imported lazily
    """The in-process replay of the bundled incident (h100-128-all-faults on its topology).

    A minute or more of CPU on CI's two cores; test_replay_incidents and the service parity
    test compare against it, so it is made once a session (read it, never change it).
    """
    from detector.topology import Topology
    from replay.runner import replay_log

    return replay_log(BUNDLED_INCIDENT, topology=Topology.load(BUNDLED_TOPOLOGY))



# -- parallel runs (pytest-xdist) -------------------------------------------------------
#
# `make test` runs the suite on two worker processes (`-n 2 --dist loadgroup`; the Makefile's
# PYTEST_ARGS). Each test file is one unit of work, so a file's module-level caches and
# module fixtures are built once, on one worker; the heaviest file left (tests/durations.json,
# bench/suite_time.py) goes to the worker free first. A worker starts the Kafka broker at its
# first test needing it (kafka_bootstrap, once a worker session): two brokers at most.
# Without xdist (`make test PYTEST_ARGS=`) all of this is a no-op.
#
# Round 46 marked each test xdist_group(<its file>), and every broker test xdist_group("broker")
# to run them on one worker. Under pytest 9.2 no group was ever made: xdist's loadgroup renames
# `item._nodeid`, pytest 9.2 reads `item._id` (pytest-dev/pytest-xdist#1386), and the hook read
# option.dist, "no" on a worker -- every test was a unit of its own, both workers built the
# module caches of every file they shared. The broker tests stay apart by file, as they ran
# then: one serial unit of them (31.8 min at load 25, 10 % CPU) would be longer than half of
# the suite. So the units are decided here, by the controller's scheduler.

_DURATIONS = Path(__file__).resolve().parent / "durations.json"
_PER_TEST_S = 0.1  # a test of a file the table leaves out (most tests take 0.01-0.3 s)


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log):  # noqa: ANN001, ANN201 - xdist's
    if getattr(config.option, "dist", "no") != "loadgroup":
        return None
    return _file_scheduling(config, log)


def _unit_seconds() -> dict[str, float]:
    import json

    try:
        return {str(k): float(v) for k, v in json.loads(_DURATIONS.read_text()).items()}
    except (OSError, ValueError, AttributeError):
        return {}


def _file_scheduling(config: pytest.Config, log):  # noqa: ANN001, ANN202 - xdist's types
    from xdist.scheduler import LoadScopeScheduling

    class FileScheduling(LoadScopeScheduling):
        """A test file is a unit; the heaviest file left goes to the worker free first.

        A file weighs its seconds in tests/durations.json; a file missing there (lighter than
        the table's floor, or new) weighs _PER_TEST_S a test. The table only orders the work:
        a stale one costs minutes, never a test.
        """

        def __init__(self, config: pytest.Config, log=None) -> None:  # noqa: ANN001
            super().__init__(config, log)
            self._seconds = _unit_seconds()

        def _split_scope(self, nodeid: str) -> str:
            return nodeid.split("::", 1)[0]

        def _weight(self, scope: str) -> float:
            known = self._seconds.get(scope)
            return known if known is not None else _PER_TEST_S * len(self.workqueue[scope])

        def _assign_work_unit(self, node) -> None:  # noqa: ANN001
            heaviest = max(self.workqueue, key=self._weight)
            self.workqueue.move_to_end(heaviest, last=False)
            super()._assign_work_unit(node)

        def _reschedule(self, node) -> None:  # noqa: ANN001
            # xdist hands a worker its next unit when 2 of its tests are left; a worker holds
            # its last test until it has the next one (its teardown needs `nextitem`), so with
            # 1 left it is free: the heaviest unit goes to the worker free first, not to one
            # with two long tests still to run (a 4-file subset: 1,127 s against 578 s idle).
            if node.shutting_down:
                return
            if not self.workqueue:
                node.shutdown()
                return
            if self._pending_of(self.assigned_work[node]) <= 1:
                self._assign_work_unit(node)

    return FileScheduling(config, log)
