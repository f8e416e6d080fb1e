"""Split detector/correlate.py (Correlator) and detector/steps.py (JobMonitor) into packages by
concern -- moves only, re-applied mechanically to whatever main is (issue 14; room split35).

    python split.py TREE            # rewrites TREE/detector/{correlate,steps}.py into packages

Each class becomes the composition of mixins, one module a concern; the module-level names go
to the one module whose code alone uses them, else to the package's ``common``; the package's
``__init__`` re-exports every name the old module defined (and the imported modules other code
reads through it), so ``from detector.steps import _tail_light`` and ``steps.math`` keep
working.  Methods are assigned by a table of breakpoints in source order (a method nobody named
goes with the one above it: printed, to read) and a few overrides.  Text is copied verbatim
(comments above a statement move with it); imports are made from what each module reads, then
``ruff --fix`` (F401, I001) trims and sorts them.
"""

from __future__ import annotations

import ast
import builtins
import io
import re
import subprocess
import sys
import textwrap
import tokenize
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent


@dataclass
class Concern:
    module: str           # file name in the package, without .py
    cls: str              # the mixin's class name ('' for the core class's module)
    doc: str              # the module's docstring (what it owns)
    line: str = ""        # the mixin's docstring



@dataclass
class Spec:
    old: str                          # detector/steps.py
    pkg: str                          # detector.steps
    cls: str                          # JobMonitor
    core: str                         # the module holding the composed class
    core_doc: str
    common_doc: str
    init_doc_extra: str               # appended to the old module docstring in __init__
    concerns: list[Concern]
    breaks: list[tuple[str, str]]     # (method, module) in source order: from it on
    overrides: dict[str, str]         # method or module-level name -> module
    ext_names: list[str] = field(default_factory=list)


BOUND = True  # the concerns' methods: functions bound in the class body (False: mixins)
BOUND_HEAD = """
    # Its other methods, a module a concern (see {pkg}/__init__.py): functions of those
    # modules bound here -- one class, one MRO, every lookup as when they stood here.
"""
BASE = ""  # --base REV: print the methods not in REV's class (new since the table was made)


def _base_methods(root: Path, spec: Spec) -> set[str]:
    src = subprocess.run(["git", "show", f"{BASE}:{spec.old}"], cwd=root, check=True,
                         capture_output=True, text=True).stdout
    for node in ast.parse(src).body:
        if isinstance(node, ast.ClassDef) and node.name == spec.cls:
            return {m.name for m in node.body if isinstance(m, ast.FunctionDef)}
    raise SystemExit(f"no class {spec.cls} in {BASE}:{spec.old}")


def _read_through(root: Path, spec: Spec) -> set[str]:
    """Names other code imports from the old module, or reads off it as an attribute."""
    short = spec.pkg.rsplit(".", 1)[1]
    names: set[str] = set()
    files = subprocess.run(["git", "ls-files", "*.py"], cwd=root, check=True,
                           capture_output=True, text=True).stdout.split()
    frm = re.compile(rf"from {re.escape(spec.pkg)} import \(?([^)\n]*(?:\n[^)]*)?)\)?")
    attr = re.compile(rf"\b(?:{short}|{short}_mod|st)\.([A-Za-z_]\w*)")
    for f in files:
        if f == spec.old:
            continue
        text = (root / f).read_text()
        for m in frm.finditer(text):
            for part in m.group(1).replace("\n", ",").split(","):
                part = part.split("#")[0].strip()
                if part:
                    names.add(part.split(" as ")[0].strip())
        if spec.pkg in text or f"import {short}" in text:
            names |= set(attr.findall(text))
    return names


def _read(path: Path) -> str:
    return path.read_text()


REWRITTEN: list[str] = []  # test files whose patches were moved (their imports trimmed)
READERS: dict[tuple[str, str], list[str]] = {}  # (package, name) -> modules reading it
COMMENT_COL: dict[int, int] = {}  # line (1-based) -> column of a comment after code on it


def _comment_cols(src: str) -> None:
    COMMENT_COL.clear()
    code_lines = set()
    for tok in tokenize.generate_tokens(io.StringIO(src).readline):
        if tok.type == tokenize.COMMENT:
            if tok.start[0] in code_lines:
                COMMENT_COL[tok.start[0]] = tok.start[1]
        elif tok.type not in (tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT):
            code_lines.add(tok.start[0])


def _dedent_method(text: str, node: ast.FunctionDef) -> str:
    """A method's text (its comments and decorators too) as a module's function: four spaces
    less on every line but the continuation lines of a string -- the docstring's excepted,
    whose text ``inspect.cleandoc`` reads alike either way."""
    keep: set[int] = set()  # 0-based lines of text inside a string, left as they stand
    doc = ast.get_docstring(node, clean=False) is not None and node.body[0]
    base = min([node.lineno, *[d.lineno for d in node.decorator_list]])
    offset = text.count("\n", 0, len(text)) - (node.end_lineno - base + 1)  # comment lines
    for tok in tokenize.generate_tokens(io.StringIO(text).readline):
        if tok.type == tokenize.STRING and tok.end[0] > tok.start[0]:
            is_doc = doc and tok.start[0] - 1 - offset == doc.lineno - base
            if not is_doc:
                keep.update(range(tok.start[0], tok.end[0]))  # (its lines after the first)
    out = []
    for i, line in enumerate(text.splitlines(keepends=True)):
        if i in keep:
            out.append(line)
        elif line.strip() == "":
            out.append("\n")
        elif line.startswith("    "):
            out.append(line[4:])
        else:
            raise SystemExit(f"{node.name}: line {i} is not indented: {line!r}")
    return "".join(out)


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip())


def _segments(lines: list[str], body: list[ast.stmt], prev_end: int
              ) -> list[tuple[ast.stmt, str, int]]:
    """Each statement's text with the comments above it (down to the one before it), and the
    blank lines that stood above that.  Comment lines right under a statement ending in a
    comment, indented deeper than it, continue that comment: they stay with it."""
    out: list[tuple[ast.stmt, str, int]] = []
    prev_node = None
    for node in body:
        start = min([node.lineno, *[d.lineno for d in getattr(node, "decorator_list", [])]])
        end = prev_end
        col = COMMENT_COL.get(prev_end)  # (the previous statement's trailing comment)
        if prev_node is not None and col is not None:
            ind = _indent(lines[prev_node.lineno - 1])
            while end + 1 < start and lines[end].lstrip().startswith("#"):
                c = lines[end].lstrip()[1:]
                text_col = _indent(lines[end]) + 1 + len(c) - len(c.lstrip())
                if not (_indent(lines[end]) > ind or text_col > col):
                    break
                end += 1
            if end > prev_end:  # (the previous statement's comment continued)
                pn, pt, pb = out[-1]
                out[-1] = (pn, pt + "".join(lines[prev_end:end]), pb)
        first = end + 1
        blank = 0
        while first < start and lines[first - 1].strip() == "":
            first += 1
            blank += 1
        out.append((node, "".join(lines[first - 1:node.end_lineno]), blank))
        prev_end, prev_node = node.end_lineno, node
    return out


def _loads(node: ast.AST | list[ast.stmt]) -> set[str]:
    if isinstance(node, list):
        return set().union(*map(_loads, node))
    names = set()
    for n in ast.walk(node):
        if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load):
            names.add(n.id)
    return names


def _bound(node: ast.stmt | list[ast.stmt]) -> list[str]:
    if isinstance(node, list):
        return [n for x in node for n in _bound(x)]
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return [node.name]
    if isinstance(node, ast.Assign):
        out = []
        for t in node.targets:
            out += [n.id for n in ast.walk(t) if isinstance(n, ast.Name)]
        return out
    if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
        return [node.target.id]
    raise SystemExit(f"unexpected top-level statement at line {node.lineno}: {ast.dump(node)[:80]}")


def _import_lines(node: ast.stmt) -> dict[str, str]:
    """name bound -> the import statement binding it alone."""
    out = {}
    if isinstance(node, ast.Import):
        for a in node.names:
            if a.asname:
                out[a.asname] = f"import {a.name} as {a.asname}"
            else:
                top = a.name.split(".")[0]
                out[top] = f"import {a.name}"
    else:
        assert isinstance(node, ast.ImportFrom) and node.level == 0, ast.dump(node)
        for a in node.names:
            bound = a.asname or a.name
            alias = f" as {a.asname}" if a.asname else ""
            out[bound] = f"from {node.module} import {a.name}{alias}"
    return out


def split(root: Path, spec: Spec) -> list[str]:
    path = root / spec.old
    src = _read(path)
    lines = src.splitlines(keepends=True)
    tree = ast.parse(src)
    _comment_cols(src)
    notes: list[str] = []
    body = list(tree.body)
    doc = ast.get_docstring(tree, clean=False)
    assert doc is not None and isinstance(body[0], ast.Expr)
    doc_node = body.pop(0)
    assert isinstance(body[0], ast.ImportFrom) and body[0].module == "__future__"
    body.pop(0)
    imports: dict[str, str] = {}
    tc_imports: dict[str, str] = {}
    defs: list[tuple[ast.stmt, str]] = []
    # id(unit) -> (its first and last statements' places, the blank lines above it)
    seq: dict[int, tuple[int, int, int]] = {}
    klass: ast.ClassDef | None = None
    prev_end = doc_node.end_lineno
    rest = []
    for node in body:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            imports.update(_import_lines(node))
            prev_end = node.end_lineno
        elif (isinstance(node, ast.If) and isinstance(node.test, ast.Name)
              and node.test.id == "TYPE_CHECKING"):
            for sub in node.body:
                tc_imports.update(_import_lines(sub))
            prev_end = node.end_lineno
        else:
            rest.append(node)
    segs = _segments(lines, rest, prev_end)
    for idx, (node, text, blank) in enumerate(segs):
        if isinstance(node, ast.ClassDef) and node.name == spec.cls:
            klass = node
        else:
            last = defs[-1][0] if defs else None
            if (isinstance(node, ast.Assign | ast.AnnAssign) and blank == 0
                    and not text.startswith("#")
                    and isinstance(last, list) and seq[id(last)][1] == idx - 1):
                # (a constant right under another with no comment of its own is of the
                # comment above them: one unit, placed together)
                last.append(node)
                defs[-1] = (last, defs[-1][1] + text)
                seq[id(last)] = (seq[id(last)][0], idx, seq[id(last)][2])
                continue
            unit = [node] if isinstance(node, ast.Assign | ast.AnnAssign) else node
            defs.append((unit, text))
            seq[id(unit)] = (idx, idx, blank)
    assert klass is not None
    tail = "".join(lines[segs[-1][0].end_lineno:]).strip()  # (continuations: see _segments)
    tail = "\n".join(x for x in tail.splitlines() if not x.lstrip().startswith("#"))
    assert tail == "", f"text after the last statement: {tail[:80]!r}"

    # -- the class body: methods to concerns -----------------------------------------------
    head_end = klass.body[0].lineno - 1  # (class line(s) end above the first body statement)
    header = "".join(lines[klass.lineno - 1:head_end])
    kbody = _segments(lines, klass.body, head_end)
    ktext = next(t for n, t, _ in segs if n is klass)
    kprefix = ktext[:ktext.index(header)]  # (comments above the class statement)
    bases = [ast.unparse(b) for b in klass.bases]
    modules = [c.module for c in spec.concerns]
    known = _base_methods(root, spec) if BASE else None
    cur = spec.core
    breaks = dict(spec.breaks)
    for m, _ in spec.breaks:
        if not any(isinstance(n, ast.FunctionDef) and n.name == m for n, _, _ in kbody):
            raise SystemExit(f"{spec.old}: breakpoint method {m} is gone: update the table")
    placed: dict[str, list[tuple[ast.stmt, str]]] = {m: [] for m in [spec.core, *modules]}
    kseq: dict[int, tuple[int, int]] = {}
    method_home: dict[str, str] = {}
    for idx, (node, text, blank) in enumerate(kbody):
        kseq[id(node)] = (idx, blank)
        if isinstance(node, ast.FunctionDef):
            if node.name in breaks:
                cur = breaks[node.name]
            home = spec.overrides.get(node.name, cur)
            if known is not None and node.name not in known:
                notes.append(f"{spec.cls}.{node.name}: not in the table, with its neighbour "
                             f"-> {home}")
            method_home[node.name] = home
            placed[home].append((node, text))
        else:
            placed[spec.core].append((node, text))
    if not placed[spec.core][0][1].lstrip().startswith(('"""', "'''")):
        raise SystemExit("the class has no docstring first")

    # -- module-level definitions: to the one module that alone reads them ----------------
    def_names: dict[str, int] = {}
    for i, (node, _) in enumerate(defs):
        for n in _bound(node):
            def_names[n] = i
    users: list[set[str]] = [set() for _ in defs]   # modules whose methods read def i
    def_users: list[set[int]] = [set() for _ in defs]
    for mod, items in placed.items():
        for node, _ in items:
            for n in _loads(node):
                if n in def_names:
                    users[def_names[n]].add(mod)
    for i, (node, _) in enumerate(defs):
        for n in _loads(node):
            j = def_names.get(n)
            if j is not None and j != i:
                def_users[j].add(i)
    home_of: dict[int, str] = {}
    for i, (node, _) in enumerate(defs):
        for n in _bound(node):
            if n in spec.overrides:
                home_of[i] = spec.overrides[n]
    changed = True
    while changed:
        changed = False
        for i in range(len(defs)):
            if i in home_of:
                continue
            if any(j not in home_of for j in def_users[i]):
                continue
            us = users[i] | {home_of[j] for j in def_users[i]}
            home_of[i] = next(iter(us)) if len(us) == 1 else "common"
            changed = True
    for i in range(len(defs)):
        home_of.setdefault(i, "common")  # (read by a cycle of definitions)
    # A name bound by an import is never called through LOAD_METHOD (CPython 3.11's compiler,
    # is_import_originated): ``_TAIL_EDGES.searchsorted(x)`` imported would make a bound method
    # each call.  A definition whose methods are called lives where they are called.
    called: dict[str, set[str]] = {}
    for mod, items in placed.items():
        for node, _ in items:
            for n in ast.walk(node):
                if (isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)
                        and isinstance(n.func.value, ast.Name) and n.func.value.id in def_names):
                    called.setdefault(n.func.value.id, set()).add(mod)
    for i, (node, _) in enumerate(defs):
        for n in _bound(node):
            where = called.get(n, set())
            mods = where | {home_of[j] for j in def_users[i] if home_of[j] not in where}
            if where and home_of[i] not in where:
                if len(where) != 1 or not all(
                        m in where or m == spec.core for m in users[i] | mods):
                    notes.append(f"{spec.pkg}: {n}'s methods are called in {sorted(where)}, "
                                 f"it is read in {sorted(users[i] | mods)}: imported there, "
                                 "a bound method a call (LOAD_ATTR, not LOAD_METHOD)")
                    continue
                home_of[i] = next(iter(where))
                notes.append(f"{spec.pkg}: {n} kept in {home_of[i]}, where its methods are "
                             "called")
    name_home = {n: home_of[i] for n, i in def_names.items()}

    # -- write the modules ------------------------------------------------------------------
    pkg_dir = root / spec.old.removesuffix(".py")
    pkg_dir.mkdir()
    core_mod = f"{spec.pkg}.{spec.core}"
    all_mods = ["common", spec.core, *modules]
    texts: dict[str, str] = {}
    for mod in all_mods:
        mydefs = [(node, text) for i, (node, text) in enumerate(defs) if home_of[i] == mod]
        mine = placed.get(mod, [])
        if mod == "common":
            mdoc = spec.common_doc
        elif mod == spec.core:
            mdoc = spec.core_doc
        else:
            mdoc = next(c.doc for c in spec.concerns if c.module == mod)
        reads: set[str] = set()
        for node, _ in mydefs + mine:
            reads |= _loads(node)
        if mod == spec.core:
            reads |= {n for b in klass.bases for n in _loads(b)}
        bound_here = {n for node, _ in mydefs for n in _bound(node)}
        for n in reads:
            if n in name_home:
                READERS.setdefault((spec.pkg, n), []).append(mod)
        imp, tc = [], []
        for n in sorted(reads - bound_here):
            if n in imports:
                imp.append(imports[n])
            elif n in tc_imports:
                tc.append(tc_imports[n])
            elif n in name_home:
                imp.append(f"from {spec.pkg}.{name_home[n]} import {n}")
            elif n == spec.cls and mod != spec.core:
                tc.append(f"from {core_mod} import {spec.cls}")
            elif n == spec.cls or hasattr(builtins, n):
                pass
            # else: a local name (ruff's F821 would tell a missing one)
        if mod == "common":
            bad = [i for i in imp if any(f"{spec.pkg}.{m} " in i for m in all_mods)]
            assert not bad, f"common would import a concern module: {bad}"
        if mod == spec.core and not BOUND:
            imp += [f"from {spec.pkg}.{m} import {c.cls}" for m, c in
                    ((c.module, c) for c in spec.concerns)]
        end = "\n" if "\n" in mdoc else ""
        out = [f'"""{mdoc}{end}"""\n\nfrom __future__ import annotations\n\n']
        if tc:
            imp.append("from typing import TYPE_CHECKING")
        out.append("\n".join(sorted(set(imp))) + "\n")
        if tc:
            out.append("\nif TYPE_CHECKING:\n" + "".join(f"    {t}\n" for t in sorted(set(tc))))
        prev = None
        for node, text in mydefs:
            idx, _, blank = seq[id(node)]
            if prev is not None and seq[id(prev)][1] == idx - 1:
                gap = "\n" * blank  # (next to each other before: as they stood)
            elif isinstance(node, (ast.FunctionDef, ast.ClassDef)) or isinstance(
                    prev, (ast.FunctionDef, ast.ClassDef)) or prev is None:
                gap = "\n\n"
            else:
                gap = "\n"
            if prev is None:
                gap = "\n\n"  # (under the imports)
            out.append(gap + text)
            prev = node
        if mod == spec.core:
            newbases = bases if BOUND else [c.cls for c in spec.concerns] + bases
            pad = " " * len(f"class {spec.cls}(")
            wrapped = textwrap.fill(", ".join(newbases) + "):", width=99,
                                    initial_indent=f"class {spec.cls}(",
                                    subsequent_indent=pad, break_on_hyphens=False)
            head = header.replace(f"class {spec.cls}({', '.join(bases)}):", wrapped)
            assert head != header or not bases or BOUND, f"class header not rewritten: {header!r}"
            out.append("\n\n\n" + kprefix + head)
            prev = None
            for node, text in mine:
                idx, blank = kseq[id(node)]
                adjacent = prev is not None and kseq[id(prev)][0] == idx - 1
                out.append(("" if prev is None else "\n" * blank if adjacent else "\n") + text)
                prev = node
            if BOUND:
                out.append(BOUND_HEAD.format(pkg=spec.pkg.replace(".", "/")))
                for c in spec.concerns:
                    names = sorted(node.name for node, _ in placed[c.module])
                    out.append(f"    from {spec.pkg}.{c.module} import (\n"
                               + "".join(f"        {n},\n" for n in names) + "    )\n")
        elif mine and BOUND:
            for node, text in mine:
                out.append("\n\n" + _dedent_method(text, node))
        elif mine:
            cdoc = next(c for c in spec.concerns if c.module == mod)
            out.append(f"\n\n\nclass {cdoc.cls}:\n    \"\"\"{cdoc.line} (a mixin of "
                       f"{spec.pkg}.{spec.cls}).\"\"\"\n")
            prev = None
            for node, text in mine:
                idx, blank = kseq[id(node)]
                adjacent = prev is not None and kseq[id(prev)][0] == idx - 1
                out.append(("\n" * blank if adjacent else "\n") + text)
                prev = node
        texts[mod] = "".join(out).rstrip("\n") + "\n"
        (pkg_dir / f"{mod}.py").write_text(texts[mod])

    # -- the package: the old docstring, then every old name again -------------------------
    old_doc = "".join(lines[doc_node.lineno - 1:doc_node.end_lineno])
    assert old_doc.rstrip().endswith('"""')
    init = [old_doc.rstrip()[:-3].rstrip("\n") + "\n\n" + spec.init_doc_extra.rstrip("\n")
            + '\n"""\n\n# ruff: noqa: F401\n'
            + "# (every name the old module defined, for whoever imports it from here)\n\n"]
    by_mod: dict[str, list[str]] = {}
    for n, m in name_home.items():
        by_mod.setdefault(m, []).append(n)
    by_mod.setdefault(spec.core, []).append(spec.cls)
    for m in all_mods:
        names = sorted(set(by_mod.get(m, [])))
        if names:
            init.append(f"from {spec.pkg}.{m} import (\n"
                        + "".join(f"    {n},\n" for n in names) + ")\n")
    for n in sorted(set(spec.ext_names) | (_read_through(root, spec) & set(imports))):
        if n in imports:
            stmt = imports[n]
            init.append(stmt + "\n")
        else:
            raise SystemExit(f"{spec.old}: {n} is read through the module but not imported")
    (pkg_dir / "__init__.py").write_text("".join(init))
    subprocess.run(["git", "rm", "-q", spec.old], cwd=root, check=True)
    for mod in ["__init__", *all_mods]:
        notes.append(f"{spec.pkg}.{mod}: "
                     f"{len((pkg_dir / f'{mod}.py').read_text().splitlines())} lines")
    return notes


def fix_readers(root: Path, specs: list[Spec]) -> list[str]:
    """Tests and benchmarks that patch a module-level name of the old module: patch it where
    it is read now (one module, or say so); the two harnesses that reach into its globals."""
    notes = []
    pat = re.compile(r'monkeypatch\.setattr\((\w+), "(\w+)"')
    files = subprocess.run(["git", "ls-files", "tests/*.py", "bench/*.py"], cwd=root,
                           check=True, capture_output=True, text=True).stdout.split()
    for f in files:
        text = (root / f).read_text()
        new = text
        for m in pat.finditer(text):
            alias, name = m.groups()
            for spec in specs:
                short = spec.pkg.rsplit(".", 1)[1]
                if not re.search(rf"(import {short}\b|import {re.escape(spec.pkg)})"
                                 rf"(\s+as\s+{alias}\b|$)", text, re.M):
                    continue
                if not re.search(rf"import {re.escape(spec.pkg)} as {alias}\b|"
                                 rf"from detector import {short} as {alias}\b|"
                                 rf"from detector import {short}\b", text):
                    continue
                if alias not in (short, "st", f"{short}_mod"):
                    continue
                mods = READERS.get((spec.pkg, name))
                if mods is None:
                    continue
                if len(set(mods)) != 1:
                    raise SystemExit(f"{f}: {name} is read in {sorted(set(mods))}: patch each")
                new = new.replace(m.group(0),
                                  f'monkeypatch.setattr("{spec.pkg}.{mods[0]}.{name}"')
                notes.append(f"{f}: {alias}.{name} patched in {spec.pkg}.{mods[0]}")
        if new != text:
            (root / f).write_text(new)
            REWRITTEN.append(f)
    for f, old, rep in (
        ("bench/steps_callgrind.py", "        for mod in (peer_stats, st):\n",
         "        for mod in (peer_stats, *[m for n, m in sys.modules.items()\n"
         "                                  if n.startswith(\"detector.steps\")]):\n"),
        ("bench/fleet_escalation_trace.py", "    ns = vars(steps)\n",
         "    ns = steps.JobMonitor._check_slow.__globals__  # (its module's)\n"),
        ("README.md", "the monitors (`steps.py` -- its numeric-fault checks",
         "the monitors (`steps/`, the job monitor, a module a concern -- its numeric-fault "
         "checks"),
        ("README.md", "the correlator (`correlate.py`; its shared-part windows",
         "the correlator (`correlate/`, a module a concern; its shared-part windows"),
        ("README.md", "(EP twins, `detector/steps.py`)", "(EP twins, `detector/steps/twins.py`)"),
    ):
        text = (root / f).read_text()
        if text.count(old) != 1:
            raise SystemExit(f"{f}: {old.strip()!r} not found once: update the fix-up")
        (root / f).write_text(text.replace(old, rep))
        notes.append(f"{f}: {old.strip()!r} -> the split's modules")
    layering = root / "tests" / "test_layering.py"
    text = layering.read_text()
    old = 'CORE = sorted(p for p in [*DETECTOR.glob("*.py"), *DETECTOR.glob("pipeline/*.py")]\n'
    new = ('CORE = sorted(p for p in [*DETECTOR.glob("*.py"), *DETECTOR.glob("pipeline/*.py"),\n'
           '                          *DETECTOR.glob("correlate/*.py"), '
           '*DETECTOR.glob("steps/*.py")]\n')
    if text.count(old) != 1:
        raise SystemExit("tests/test_layering.py: CORE's line changed: update the fix-up")
    layering.write_text(text.replace(old, new) + LAYERING_TEST)
    notes.append("tests/test_layering.py: the packages in CORE; their concern modules checked")
    return notes


LAYERING_TEST = '''

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
'''


# -- the tables ----------------------------------------------------------------------------

STEPS = Spec(
    old="detector/steps.py", pkg="detector.steps", cls="JobMonitor", core="job",
    core_doc=(
        "A job's monitor: its steps gathered by number, decided whole, and evaluated.\n\n"
        ":class:`JobMonitor` owns a job's state (made in ``__init__``, snapshot whole by\n"
        "detector.statecodec, checked by :meth:`~JobMonitor.check_restored`), takes its step\n"
        "messages (``quiet``, ``add``, ``expire``, late ones, restarts) and runs each decided "
        "step\n"
        "through :meth:`~JobMonitor._evaluate`; the judgement of the step is in the concern\n"
        "modules (listed in detector/steps/__init__.py), whose functions its class body binds\n"
        "as its methods."),
    common_doc=(
        "What several of a job monitor's concerns share: the step buffer, numpy helpers and\n"
        "constants read in more than one module of detector.steps."),
    init_doc_extra=(
        "Where things are: a module a concern, its functions the JobMonitor's methods (bound in\n"
        "its class body, detector/steps/job.py), their state the JobMonitor's (made in its\n"
        "``__init__``):\n\n"
        "- ``job``: :class:`JobMonitor` -- its state, the step messages in, restarts, a step's\n"
        "  evaluation;\n"
        "- ``ranks``: slots, ranks moved to other hardware, learned start offsets;\n"
        "- ``slow``: the step CUSUMs and the slow-rank rules' judgement of one step;\n"
        "- ``holds``: slow ranks taken back on the step they were found (events, places);\n"
        "- ``noise``: the job's noise -- wandering, lag-1, its tail, cold starts;\n"
        "- ``twins``: a rank against its twins, and jobs of two ranks;\n"
        "- ``replicas``: replica-wide slowness, and a replica slow against the other;\n"
        "- ``rules``: warm-up, burst, recurring and sustained stragglers;\n"
        "- ``host``: a rank or a node late by its host path;\n"
        "- ``common``: the step buffer and what several of these read;\n"
        "- detector.step_numerics: gradient norms, overflows and checksums (SDC)."),
    concerns=[
        Concern("ranks", "RankSlots",
                "A job's slots: ranks given a slot, moved to other hardware, gone and back.\n\n"
                "Per-rank state lives in numpy arrays by slot; a rank that moves to other\n"
                "hardware starts afresh (or takes back its learned start offset), and the\n"
                "slots of ranks that left are given back.",
                line="A job's slots and its ranks' hardware"),
        Concern("slow", "SlowJudgement",
                "A step's slow ranks: the CUSUMs on each rank's deviation from its peers and\n"
                "the rules' judgement of the step (node alike, runs grown, persistent).",
                line="A step's slow ranks judged"),
        Concern("holds", "SlowHolds",
                "Slow ranks taken back on the step they were found: a job-wide event, a place\n"
                "slow on other nodes too, a wandering or shared slowness.",
                line="Slow ranks taken back"),
        Concern("noise", "JobNoise",
                "A job's noise: wandering slowness (MoE routing), its lag-1, its tail, cold\n"
                "starts and the warm-up prior.",
                line="A job's noise"),
        Concern("twins", "Twins",
                "A rank judged against its twins (peers whose deviation moves with its own),\n"
                "and jobs of two ranks.",
                line="A rank against its twins"),
        Concern("replicas", "Replicas",
                "Replicas: each rank's replica-wide deviation, replicas on one node, and a job of\n"
                "two replicas one of which computes slower (``replica_split``).",
                line="Replica-wide slowness"),
        Concern("rules", "SlowRules",
                "Stragglers no CUSUM sees: warm-up gross steps, bursts, recurring outliers,\n"
                "sustained shifts.",
                line="Stragglers by rule"),
        Concern("host", "HostTime",
                "A rank late by its host path (``host_late``), a node carrying its job's host\n"
                "time (detector.host_time), its host time risen (detector.host_rise).",
                line="Host-path lateness"),
    ],
    breaks=[("_parked", "job"), ("_grow", "ranks"), ("_finding", "job"),
            ("_check_slow", "slow"), ("_hold_after_event", "holds"), ("_node_alarmed", "slow"),
            ("_alarmed_without_places", "holds"), ("_node_slow", "slow"),
            ("_visiting", "holds"), ("_check_slow_rules", "slow"),
            ("_wander_update", "noise"), ("_rule_finding", "slow"),
            ("_hold_wandering", "holds"), ("_check_pair", "twins"), ("_hold_shared", "holds"),
            ("_cold_steps", "noise"), ("_reset_slow", "slow"), ("_ar_step", "noise"),
            ("_persistent", "slow"), ("_replica_common", "replicas"),
            ("_note_offsets", "ranks"), ("_gross_prior", "rules"), ("_check_host", "host"),
            ("_replica_elsewhere", "replicas")],
    overrides={"replica_split": "replicas"},
    ext_names=["math"],
)

CORRELATE = Spec(
    old="detector/correlate.py", pkg="detector.correlate", cls="Correlator", core="correlator",
    core_doc=(
        "The correlator: its state, its entry points (findings in, timers, prune) and the\n"
        "idle/busy GPUs its sources tell.\n\n"
        ":class:`Correlator` owns every piece of state (made in ``__init__``, snapshot whole by\n"
        "detector.statecodec) and routes each finding in :meth:`~Correlator.on_finding`; what\n"
        "it decides is in the concern modules (listed in detector/correlate/__init__.py),\n"
        "whose functions its class body binds as its methods."),
    common_doc=(
        "What several of the correlator's concerns share: :class:`Problem` and the helpers and\n"
        "constants read in more than one module of detector.correlate."),
    init_doc_extra=(
        "Where things are: a module a concern, its functions the Correlator's methods (bound in\n"
        "its class body, detector/correlate/correlator.py), their state the Correlator's (made\n"
        "in its ``__init__``):\n\n"
        "- ``correlator``: :class:`Correlator` -- its state, entry points, timers, prune, the\n"
        "  busy/idle GPUs told;\n"
        "- ``problems``: problems raised, joined, resolved; their alerts;\n"
        "- ``slow``: a slow rank's explanation, wait and escalation; host-time slowness;\n"
        "- ``thermal``: throttles and heat -- a slow rank's brake, a node's cooling;\n"
        "- ``power``: SW power caps -- routine, a node's, a site's;\n"
        "- ``explain``: a new isolation taking over the slow ranks it explains;\n"
        "- ``hardware``: a GPU failing job after job, NVLink baseboards, PCIe replays;\n"
        "- ``common``: :class:`Problem` and what several of these read;\n"
        "- detector.part_window: shared-part windows (a switch, a domain)."),
    concerns=[
        Concern("problems", "Problems",
                "Problems: one per (topic, kind, unit) -- raised, joined by evidence,\n"
                "resolved after quiet or at once, and the alerts they make.",
                line="Problems and their alerts"),
        Concern("slow", "SlowRanks",
                "Slow ranks: the explanation a slow rank finds on its GPU or node, its wait for\n"
                "one, and its escalation when none comes; a rank or node late by its host.",
                line="Slow ranks explained or escalated"),
        Concern("thermal", "Throttles",
                "Throttles and heat: a never-routine brake under a slow rank, a GPU's thermal\n"
                "verdict held for its node's mates, a rack's cooling, bursts of slow steps.",
                line="Throttles and heat"),
        Concern("power", "PowerCaps",
                "SW power caps: routine capping, a node capped alone, a site's cap wave, and\n"
                "the power a slow rank's GPU lost.",
                line="SW power caps"),
        Concern("explain", "Explaining",
                "A new isolation takes over what it explains: slow ranks waiting or escalated\n"
                "on its unit are resolved into it.",
                line="Isolations taking over"),
        Concern("hardware", "HardwarePages",
                "Hardware pages: a GPU failing job after job (detector.lemon), an NVLink\n"
                "baseboard, PCIe replays on a node's GPUs.",
                line="Hardware pages"),
    ],
    breaks=[("__init__", "correlator"), ("dedup_key", "problems"), ("_explanation", "slow"),
            ("_node_throttle", "thermal"), ("_raise_verdict", "problems"),
            ("_hold_heat", "thermal"), ("_on_slow", "slow"), ("_throttle_impact", "thermal"),
            ("_on_power_cap", "power"), ("_warming", "thermal"),
            ("_explain_waiting", "explain"), ("_slow_due", "slow"), ("_cadence", "problems"),
            ("_lemon_strike", "hardware")],
    overrides={"check_power_restored": "power"},
    ext_names=[],
)


def main() -> int:
    global BASE
    args = sys.argv[1:]
    if args[:1] == ["--base"]:
        BASE, args = args[1], args[2:]
    root = Path(args[0]).resolve()
    notes = []
    for spec in (STEPS, CORRELATE):
        notes += split(root, spec)
    notes += fix_readers(root, [STEPS, CORRELATE])
    files = [str(p) for p in sorted((root / "detector" / "steps").glob("*.py"))
             + sorted((root / "detector" / "correlate").glob("*.py"))]
    ruff = [sys.executable, "-m", "ruff"]
    subprocess.run([*ruff, "check", "-q", "--fix", "--select", "F401,I001", *files],
                   cwd=root, check=False)
    subprocess.run([*ruff, "check", "-q", "--fix", "--select", "I001", *files],
                   cwd=root, check=False)
    if REWRITTEN:
        subprocess.run([*ruff, "check", "-q", "--fix", "--select", "F401,I001", *REWRITTEN],
                       cwd=root, check=False)
    subprocess.run(["git", "add", "-A", "detector/steps", "detector/correlate", "tests", "bench",
                    "README.md"], cwd=root, check=True)
    print("\n".join(notes))
    changed = subprocess.run(["git", "diff", "--cached", "--name-only", "--diff-filter=AM"],
                             cwd=root, check=True, capture_output=True, text=True).stdout.split()
    res = subprocess.run([*ruff, "check", *[c for c in changed if c.endswith(".py")]], cwd=root)
    return res.returncode


if __name__ == "__main__":
    sys.exit(main())
