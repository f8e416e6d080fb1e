"""bench/engine_compiled.py: the compiled arm it measures is compiled, or it says so and stops.

The script's one way to mislead is to time a tree whose modules did not build (cythonize
missing a module, a build that wrote its .so elsewhere): the "compiled" figure would be the
plain one again and read as "compiling buys nothing".  It checks each module's ``__file__``
in the built tree; these tests hand it a cythonize that builds nothing.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from bench import engine_compiled


def test_a_tree_whose_modules_did_not_compile_is_refused(tmp_path: Path) -> None:
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("")
    (tmp_path / "pkg" / "hot.py").write_text("X = 1\n")
    (tmp_path / "cold.py").write_text("Y = 2\n")
    fake = tmp_path / "cythonize"
    fake.write_text(f"#!{sys.executable}\n")  # builds nothing, exits 0
    fake.chmod(0o755)
    with pytest.raises(SystemExit, match=r"\['pkg\.hot', 'cold'\]"):
        engine_compiled.compile_tree(tmp_path, str(fake), ["pkg/hot.py", "cold.py"], False)


def test_the_hot_modules_exist() -> None:
    root = Path(engine_compiled.__file__).resolve().parent.parent
    for path in engine_compiled.HOT:
        assert (root / path).is_file(), path  # (a module moved: the script's list is stale)
