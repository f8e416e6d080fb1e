"""Moves only: every function of the split packages is the old one's code, every name it reads
resolves to what the old module's did, every old name is still there.

    PYTHONPATH=TREE python verify_moves.py TREE REV     # REV: the commit before the split

For detector.steps and detector.correlate: the old module (``git show REV:detector/X.py``) is
run as a module of its own; then
1. each attribute of the old class's ``__dict__`` is found on the new class (through its MRO)
   and is the same: functions (plain, static, properties) by their code -- bytecode, names,
   constants (nested code too), flags, defaults -- line numbers aside; other values by ==;
2. the new class has no attribute the old one did not, but what its mixins add (``__doc__``,
   ``__module__``...), and resolves every name of the old class's bases as the old one did;
3. every global each of those functions reads (LOAD_GLOBAL) is bound in its new module to the
   object the old module bound (the same object; for the old module's own definitions, the
   same code or an equal value);
4. every module-level name of the old module is an attribute of the new package, alike;
5. the snapshot schema (detector.statecodec.schema_fingerprint) is the one REV's tree gives
   (checked by the caller: printed).
"""

from __future__ import annotations

import ast
import dis
import importlib
import inspect
import subprocess
import sys
import types
from pathlib import Path
from typing import Any

import numpy as np

PAIRS: dict[int, Any] = {}  # id(old class) -> the new class made of it
MIXIN_EXTRA = {"__module__", "__doc__", "__dict__", "__weakref__", "__qualname__",
               "__firstlineno__", "__static_attributes__"}


NOTES: list[str] = []


def _same_but_bound_methods(a: types.CodeType, b: types.CodeType, where: str) -> bool:
    """The one difference CPython 3.11's compiler makes of a name that became an import:
    ``name.meth()`` through LOAD_ATTR (a bound method a call), not LOAD_METHOD."""
    ia, ib = list(dis.get_instructions(a)), list(dis.get_instructions(b))
    if len(ia) != len(ib):
        return False
    for k, (x, y) in enumerate(zip(ia, ib, strict=True)):
        if x.opname == y.opname and x.argval == y.argval and (
                x.arg == y.arg or x.opname == "LOAD_GLOBAL"):
            continue
        if (x.opname, y.opname) == ("LOAD_METHOD", "LOAD_ATTR") and x.argval == y.argval:
            NOTES.append(f"{where}: {ia[k - 1].argval}.{x.argval}() a bound method a call")
            continue
        return False
    return True


def same_code(a: types.CodeType, b: types.CodeType, where: str) -> None:
    if a.co_code != b.co_code and not _same_but_bound_methods(a, b, where):
        raise AssertionError(f"{where}: co_code differs")
    for attr in ("co_names", "co_varnames", "co_freevars", "co_cellvars",
                 "co_flags", "co_argcount", "co_kwonlyargcount", "co_posonlyargcount",
                 "co_exceptiontable", "co_name"):
        if getattr(a, attr) != getattr(b, attr):
            raise AssertionError(f"{where}: {attr} differs")
    if len(a.co_consts) != len(b.co_consts):
        raise AssertionError(f"{where}: constants differ")
    for k, (x, y) in enumerate(zip(a.co_consts, b.co_consts, strict=True)):
        if k == 0 and isinstance(x, str) and isinstance(y, str) and x != y and \
                inspect.cleandoc(x) == inspect.cleandoc(y):
            continue  # (a docstring indented less, a method's now a module's function)
        if isinstance(x, types.CodeType):
            same_code(x, y, f"{where}.{x.co_name}")
        elif type(x) is not type(y) or (x != y and not (x != x and y != y)):
            raise AssertionError(f"{where}: constant {x!r} != {y!r}")


def same_value(old: Any, new: Any, where: str, old_mod: types.ModuleType,
               seen: set[tuple[int, int]]) -> None:
    """``new`` stands for ``old``: the same object, or the old module's own definition made
    again (same code, equal value)."""
    if old is new:
        return
    if id(old) in PAIRS:
        assert PAIRS[id(old)] is new, f"{where}: not the class made of the old one"
        return
    if (id(old), id(new)) in seen:
        return
    seen.add((id(old), id(new)))
    if isinstance(old, staticmethod | classmethod):
        assert type(new) is type(old), where
        same_value(old.__func__, new.__func__, where, old_mod, seen)
    elif isinstance(old, property):
        assert type(new) is property, where
        for part in ("fget", "fset", "fdel"):
            o, n = getattr(old, part), getattr(new, part)
            assert (o is None) == (n is None), f"{where}.{part}"
            if o is not None:
                same_value(o, n, f"{where}.{part}", old_mod, seen)
    elif isinstance(old, types.FunctionType):
        assert isinstance(new, types.FunctionType), where
        same_code(old.__code__, new.__code__, where)
        assert old.__defaults__ == new.__defaults__, f"{where}: defaults"
        assert old.__kwdefaults__ == new.__kwdefaults__, f"{where}: kw defaults"
        assert inspect.cleandoc(old.__doc__ or "") == inspect.cleandoc(new.__doc__ or ""), \
            f"{where}: docstring"
        same_globals(old, new, where, old_mod, seen)
    elif isinstance(old, type) and old.__module__ == old_mod.__name__:
        assert isinstance(new, type) and new.__name__ == old.__name__, where
        for k, v in vars(old).items():
            if k in ("__module__", "__dict__", "__weakref__"):
                continue
            same_value(v, vars(new)[k], f"{where}.{k}", old_mod, seen)
    elif isinstance(old, types.MemberDescriptorType | types.GetSetDescriptorType):
        assert type(new) is type(old) and new.__name__ == old.__name__, where
    elif isinstance(old, np.ndarray):
        assert isinstance(new, np.ndarray) and old.dtype == new.dtype
        assert np.array_equal(old, new, equal_nan=True), where
    elif isinstance(old, dict) and isinstance(new, dict):
        assert old.keys() == new.keys(), where
        for k in old:
            same_value(old[k], new[k], f"{where}[{k!r}]", old_mod, seen)
    elif isinstance(old, list | tuple) and type(new) is type(old):
        assert len(old) == len(new), where
        for i, (x, y) in enumerate(zip(old, new, strict=True)):
            same_value(x, y, f"{where}[{i}]", old_mod, seen)
    else:
        assert type(old) is type(new), f"{where}: {type(old)} vs {type(new)}"
        assert old == new or (old != old and new != new), f"{where}: {old!r} != {new!r}"


def same_globals(old: types.FunctionType, new: types.FunctionType, where: str,
                 old_mod: types.ModuleType, seen: set[tuple[int, int]]) -> None:
    def globals_read(code: types.CodeType) -> set[str]:
        names = {i.argval for i in dis.get_instructions(code)
                 if i.opname in ("LOAD_GLOBAL", "STORE_GLOBAL", "DELETE_GLOBAL")}
        for c in code.co_consts:
            if isinstance(c, types.CodeType):
                names |= globals_read(c)
        return names
    for name in sorted(globals_read(old.__code__)):
        o_has, n_has = name in old.__globals__, name in new.__globals__
        if not o_has:
            assert not n_has, f"{where}: reads {name}, a builtin before, bound now"
            continue
        assert n_has, f"{where}: reads {name}, not bound in {new.__module__}"
        same_value(old.__globals__[name], new.__globals__[name], f"{where}:{name}", old_mod,
                   seen)


def check(pkg: str, old_src: str, cls: str) -> int:
    old_mod = types.ModuleType(f"_old_{pkg.replace('.', '_')}")
    old_mod.__file__ = f"<old {pkg}>"
    sys.modules[old_mod.__name__] = old_mod
    exec(compile(old_src, old_mod.__file__, "exec"), old_mod.__dict__)
    new_pkg = importlib.import_module(pkg)
    assert hasattr(new_pkg, "__path__"), f"{pkg} is no package: not split"
    seen: set[tuple[int, int]] = set()
    old_cls, new_cls = getattr(old_mod, cls), getattr(new_pkg, cls)
    PAIRS[id(old_cls)] = new_cls
    n = 0
    # 1. every attribute of the old class, found on the new one alike
    for k, v in vars(old_cls).items():
        if k in ("__module__", "__dict__", "__weakref__"):
            continue
        for c in new_cls.__mro__:
            if k in vars(c):
                same_value(v, vars(c)[k], f"{cls}.{k}", old_mod, seen)
                n += 1
                break
        else:
            raise AssertionError(f"{cls}.{k} is gone")
    # 2. nothing added; the old bases' names resolve as before
    old_bases = set(old_cls.__mro__[1:])
    for c in new_cls.__mro__:
        if c in old_bases or c is new_cls:
            continue
        extra = set(vars(c)) - set(vars(old_cls)) - MIXIN_EXTRA
        assert not extra, f"{c.__name__} adds {sorted(extra)}"
    for base in old_cls.__mro__[1:]:
        for k in vars(base):
            if k in MIXIN_EXTRA or k.startswith("__"):
                continue
            old_at = next(c for c in old_cls.__mro__ if k in vars(c))
            new_at = next(c for c in new_cls.__mro__ if k in vars(c))
            assert (old_at is old_cls) == (new_at not in old_bases) and (
                old_at is new_at or old_at is old_cls), f"{cls}.{k} resolves elsewhere"
    # the same class: its own names and its MRO's classes as before (no mixins between)
    assert [c.__name__ for c in new_cls.__mro__] == [c.__name__ for c in old_cls.__mro__], \
        f"{cls}'s MRO differs"
    assert set(vars(new_cls)) - MIXIN_EXTRA == set(vars(old_cls)) - MIXIN_EXTRA, \
        f"{cls}'s own names differ"
    # 4. every module-level name of the old module is on the package, alike
    defined = set()
    for node in ast.parse(old_src).body:
        if isinstance(node, ast.FunctionDef | ast.ClassDef):
            defined.add(node.name)
        elif isinstance(node, ast.Assign | ast.AnnAssign):
            for t in node.targets if isinstance(node, ast.Assign) else [node.target]:
                defined |= {n.id for n in ast.walk(t) if isinstance(n, ast.Name)}
    for k, v in vars(old_mod).items():
        if k.startswith("__") and k.endswith("__"):
            continue
        if k not in defined and not hasattr(new_pkg, k):
            continue  # (an import of the old module's that no one reads through it)
        assert hasattr(new_pkg, k), f"{pkg}.{k} is gone"
        same_value(v, getattr(new_pkg, k), f"{pkg}.{k}", old_mod, seen)
        n += 1
    # 3. the functions of the new modules that are not the old ones' (none should be)
    for name, mod in sorted(sys.modules.items()):
        if not name.startswith(pkg + "."):
            continue
        for k, v in vars(mod).items():
            if isinstance(v, types.FunctionType) and v.__module__ == name:
                old = getattr(old_mod, k, None)
                if old is None:
                    old = vars(old_cls).get(k)
                    if isinstance(old, staticmethod):
                        old = old.__func__
                assert old is not None, f"{name}.{k} is new"
            if isinstance(v, type) and v.__module__ == name:
                for m, f in vars(v).items():
                    if isinstance(f, types.FunctionType | staticmethod | property):
                        assert m in vars(old_cls) or hasattr(old_mod, v.__name__), \
                            f"{name}.{v.__name__}.{m} is new"
    return n


def main() -> int:
    tree, rev = Path(sys.argv[1]), sys.argv[2]
    total = 0
    for pkg, path, cls in (("detector.steps", "detector/steps.py", "JobMonitor"),
                           ("detector.correlate", "detector/correlate.py", "Correlator")):
        src = subprocess.run(["git", "show", f"{rev}:{path}"], cwd=tree, check=True,
                             capture_output=True, text=True).stdout
        k = check(pkg, src, cls)
        print(f"{pkg}: {k} names checked: the old {path}'s code, bound alike")
        total += k
    from detector.statecodec import schema_fingerprint
    print(f"snapshot schema {schema_fingerprint()}")
    print("\n".join(sorted(set(NOTES))))
    return 0


if __name__ == "__main__":
    sys.exit(main())
