"""Round 33's prototype of the NIC path as C struct classes (bench/engine_compiled.py
--prototype, bench/engine_pxd/) and the NIC path's yardstick (bench/engine_callgrind.py --nic).

The prototype's ways to mislead: a "typed" arm whose .pxd Cython did not apply (the classes
stay Python's: the figure is the untyped one, read as "typed fields buy nothing"), and a .pxd
that no longer lists a class's fields (a field added to ``_Port`` and not to the .pxd: the
compiled class has no slot for it and the prototype fails, or measures another class).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from bench import engine_callgrind, engine_compiled
from detector.network import NodeNics, _Port
from models.counters import CounterDeltas


def _declared(pxd: Path, cls: str) -> set[str]:
    """The field names of ``cdef class cls`` in ``pxd`` (its ``cdef public TYPE a, b`` lines)."""
    body = re.search(rf"^cdef class {cls}:\n((?:[ \t]+.*\n|\n)*)", pxd.read_text(), re.M)
    assert body is not None, f"{cls} not in {pxd}"
    names: set[str] = set()
    for line in body.group(1).splitlines():
        m = re.match(r"\s+cdef public \w+ (.*)$", line)
        if m:
            names.update(n.strip() for n in m.group(1).split(","))
    return names


@pytest.mark.parametrize(("module", "cls"), [
    ("detector/network.py", _Port), ("detector/network.py", NodeNics),
    ("models/counters.py", CounterDeltas)])
def test_the_pxd_lists_every_field_of_its_class(module: str, cls: type) -> None:
    pxd = engine_compiled.prototype_files()[module]
    assert _declared(pxd, cls.__name__) == set(cls.__slots__)


def test_a_tree_whose_classes_are_not_c_structs_is_refused(tmp_path: Path) -> None:
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("")
    (tmp_path / "pkg" / "hot.py").write_text("class Port:\n    __slots__ = ('a',)\n")
    pxd = tmp_path / "hot.pxd"
    pxd.write_text("cdef class Port:\n    cdef public double a\n")
    with pytest.raises(SystemExit, match=r"\['pkg\.hot\.Port'\]"):
        engine_compiled.check_cclasses(tmp_path, {"pkg/hot.py": pxd})


def test_an_extension_type_passes_the_check(tmp_path: Path) -> None:
    """(The check's other side, with a C type the interpreter has: the harness does not refuse
    every tree.)"""
    (tmp_path / "ext.py").write_text("from collections import deque as Ring\n")
    pxd = tmp_path / "ext.pxd"
    pxd.write_text("cdef class Ring:\n    pass\n")
    assert engine_compiled.check_cclasses(tmp_path, {"ext.py": pxd}) == ["ext.Ring"]


def test_a_pxd_beside_a_missing_module_is_refused(tmp_path: Path) -> None:
    pxd = tmp_path / "gone.pxd"
    pxd.write_text("cdef class X:\n    pass\n")
    with pytest.raises(SystemExit, match="not in the tree"):
        engine_compiled.augment(tmp_path, {"detector/gone.py": pxd})


def test_the_nic_yardstick_feeds_every_nic_sample_of_the_prefix() -> None:
    """--nic counts per NIC sample: the samples it feeds are the prefix's NIC records."""
    import orjson

    from bench.engine_throughput import DEFAULT_LOG
    from detector.events import NIC, TELEMETRY_TOPICS
    from replay.log import open_log

    prefix, nic = 3000, 0
    telemetry = set(TELEMETRY_TOPICS)
    with open_log(DEFAULT_LOG) as f:
        seen = 0
        for line in f:
            rec = orjson.loads(line)
            if rec["topic"] in telemetry:
                seen += 1
                if seen > prefix:
                    break
                nic += rec["topic"] == NIC
    assert nic > 0
    assert engine_callgrind.nic_passes(1, prefix) == nic


def test_the_prototype_is_no_part_of_the_package() -> None:
    """Python never reads a .pxd: none sits beside the detector's own modules."""
    root = Path(engine_compiled.__file__).resolve().parent.parent
    stray = [p for d in ("detector", "models") for p in (root / d).rglob("*.pxd")]
    assert stray == [], stray
