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
CORE = sorted(p for p in [*DETECTOR.glob("*.py"), *DETECTOR.glob("pipeline/*.py"),
                          *DETECTOR.glob("correlate/*.py"), *DETECTOR.glob("steps/*.py")]
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


@pytest.mark.parametrize(("mixin", "owner"), [("detector.part_window", "detector.correlate"),
                                              ("detector.step_numerics", "detector.steps")])
def test_a_mixin_does_not_import_the_module_of_its_class(mixin: str, owner: str) -> None:
    # detector/part_window.py holds correlate.Correlator's shared-part windows, and
    # detector/step_numerics.py steps.JobMonitor's numeric-fault checks (mixins the class's
    # module imports): importing that module back from the mixin would be a cycle.
    code = f"import sys, {mixin}; print({owner!r} in sys.modules)"
    run = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True,
                         check=True)
    assert run.stdout.strip() == "False"


def runtime_imports(path: Path) -> set[str]:
    """The modules ``path`` imports when it runs (``if TYPE_CHECKING:`` blocks left out)."""
    tree = ast.parse(path.read_text(), str(path))
    skip = set()
    for node in ast.walk(tree):
        if (isinstance(node, ast.If) and isinstance(node.test, ast.Name)
                and node.test.id == "TYPE_CHECKING"):
            skip.update(id(n) for n in ast.walk(node))
    names: set[str] = set()
    for node in ast.walk(tree):
        if id(node) in skip:
            continue
        if isinstance(node, ast.Import):
            names.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
    return names


@pytest.mark.parametrize(("package", "owner"), [("correlate", "correlator"), ("steps", "job")])
def test_a_concern_module_imports_neither_its_package_nor_its_class(package: str,
                                                                    owner: str) -> None:
    # detector/correlate/ and detector/steps/ are one class each (Correlator in correlator.py,
    # JobMonitor in job.py) whose methods are functions of a module a concern, bound in its
    # class body, and common.py, what several of them read: a concern importing the package
    # (its __init__ imports every module) or the class's module back would be a cycle, and
    # common.py imports none of its siblings.
    pkg = f"detector.{package}"
    for path in sorted((DETECTOR / package).glob("*.py")):
        if path.stem in ("__init__", owner):
            continue
        got = runtime_imports(path)
        assert pkg not in got and f"{pkg}.{owner}" not in got, path.name
        if path.stem == "common":
            assert not [n for n in got if n.startswith(pkg + ".")], path.name
        else:
            assert not [n for n in got if n.startswith(pkg + ".")
                        and n != f"{pkg}.common"], path.name
