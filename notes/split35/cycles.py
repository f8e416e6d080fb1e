"""Import cycles among a tree's modules (detector/, models/): the imports a module runs at its
top level and in its class bodies (not under ``if TYPE_CHECKING:``, not inside functions), a
package's ``__init__`` standing for the package; prints each cycle (a strongly connected set).

    python cycles.py TREE [--parents]    # --parents: a submodule imports its packages first
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path


def graph(root: Path, parents: bool) -> dict[str, set[str]]:
    mods = {}
    for p in sorted(root.glob("detector/**/*.py")) + sorted(root.glob("models/*.py")):
        rel = p.relative_to(root).with_suffix("")
        mods[".".join(rel.parts[:-1] if rel.name == "__init__" else rel.parts)] = p
    edges: dict[str, set[str]] = {m: set() for m in mods}
    for m, p in mods.items():
        tree = ast.parse(p.read_text())
        body = list(tree.body)
        body += [n for c in tree.body if isinstance(c, ast.ClassDef) for n in c.body]
        for node in body:
            names = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
            for n in names:
                while n and n not in mods:
                    n = n.rpartition(".")[0]
                if n and n != m:
                    edges[m].add(n)
        parts = m.split(".") if parents else []
        for k in range(1, len(parts)):
            if ".".join(parts[:k]) in mods:
                edges[m].add(".".join(parts[:k]))
    return edges


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Tarjan's strongly connected components of more than one module."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    out: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in edges[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while not comp or comp[-1] != v:
                comp.append(stack.pop())
            if len(comp) > 1:
                out.append(sorted(comp))

    sys.setrecursionlimit(10_000)
    for v in edges:
        if v not in index:
            visit(v)
    return out


def main() -> int:
    edges = graph(Path(sys.argv[1]), "--parents" in sys.argv)
    found = cycles(edges)
    print(f"{len(edges)} modules, {len(found)} cycles")
    for c in found:
        print("  ", " ".join(c))
    return 0


if __name__ == "__main__":
    sys.exit(main())
