"""The architecture, enforced: a pure core, I/O at the edges (STYLE.md habits 1 and 2).

Every import of a module is read from its source (function-level imports
too), so a lazy import cannot slip past.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DETECTOR = ROOT / "detector"

# The metrics endpoint is the core's one adapter (Prometheus), kept beside the
# metrics it defines; it is imported only by the service and the pager.
CORE_ADAPTERS = {"metrics.py"}
CORE = sorted(p for p in [*DETECTOR.glob("*.py"), *DETECTOR.glob("pipeline/*.py")]
              if p.name not in CORE_ADAPTERS)
MODELS = sorted((ROOT / "models").glob("*.py"))
FORBIDDEN_IN_CORE = ("faust", "mode", "aiokafka", "confluent_kafka", "kafka", "prometheus_client",
                     "http", "urllib", "aiohttp", "requests", "httpx", "socket", "replay",
                     "detector.service", "detector.pager", "detector.cli", "detector.collect",
                     "detector.metrics")


def imports(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            names.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
    return names


def offending(path: Path, forbidden: tuple[str, ...]) -> list[str]:
    return sorted(n for n in imports(path)
                  if any(n == f or n.startswith(f + ".") for f in forbidden))


@pytest.mark.parametrize("path", CORE + MODELS, ids=lambda p: str(p.relative_to(ROOT)))
def test_the_core_imports_no_kafka_faust_http_prometheus_or_replay(path: Path) -> None:
    assert offending(path, FORBIDDEN_IN_CORE) == []


@pytest.mark.parametrize("path", sorted((DETECTOR / "pager").glob("*.py")),
                         ids=lambda p: p.name)
def test_the_pager_does_not_import_the_service(path: Path) -> None:
    assert offending(path, ("detector.service", "faust", "replay")) == []


@pytest.mark.parametrize("path", sorted((DETECTOR / "service").glob("*.py")),
                         ids=lambda p: p.name)
def test_the_service_does_not_import_replay_or_the_pager(path: Path) -> None:
    assert offending(path, ("replay", "detector.pager")) == []


def test_the_check_sees_a_lazy_import(tmp_path: Path) -> None:
    src = tmp_path / "x.py"
    src.write_text("def f():\n    from confluent_kafka import Producer\n    import replay.log\n")
    assert offending(src, FORBIDDEN_IN_CORE) == ["confluent_kafka", "replay.log"]


def test_the_correlators_part_windows_do_not_import_the_correlator() -> None:
    # detector/part_window.py holds correlate.Correlator's shared-part windows (a mixin the
    # Correlator's module imports): importing detector.correlate from it would be a cycle.
    code = "import sys, detector.part_window; print('detector.correlate' in sys.modules)"
    run = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True,
                         check=True)
    assert run.stdout.strip() == "False"
