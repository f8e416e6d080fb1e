"""What compiling the worker's hot modules would buy (issue 14), measured before anyone builds it.

Two trees of the committed HEAD (``git archive``) in a scratch directory: ``plain``, and
``compiled`` -- the same files with the modules of the worker's quiet paths (cpu31's bytecode
map, BENCHMARKS "cpu31, round 31") compiled UNCHANGED by Cython 3 in pure-Python mode
(``cythonize -i`` on the .py files: no .pyx twin, no source edit) -- then, in each tree in
turn, bench/engine_callgrind.py ``--worker`` (instructions per worker event: decode, the
partitions' monitors, the findings codec, the correlator; PYTHONHASHSEED=0):

    pip install cython            # into any venv of this interpreter: not a faultline dependency
    python bench/engine_compiled.py [--cythonize PATH] [--typed] [--modules a.py,b.py]
                                    [--prefix 20000] [--throughput N] [--keep DIR]
                                    [--prototype] [--nic]

``--typed`` lets Cython read the annotations as C types (its default; ``float`` becomes a C
double: a behaviour change to audit); without it the annotations are ignored
(``annotation_typing=False``), the compiled modules' semantics are the plain ones.
``--throughput N`` adds N interleaved rounds of bench/pipeline_throughput.py (plain,
compiled, plain, ...; process CPU time) and prints the compiled/plain events/s ratio.
``--prototype`` (round 33): the compiled tree also gets the augmenting ``.pxd`` files of
bench/engine_pxd/ beside their modules (by default only those modules are compiled): the
NIC path's classes as C structs with typed fields, NodeNics.quiet a C method -- the .py
files unchanged; each class a .pxd declares is checked to be an extension type after the
build (a .pxd Cython did not apply leaves a plain class: the figure would be the untyped
one).  ``--nic`` adds engine_callgrind's ``--nic`` line (the NIC path alone) to each arm.
The scratch trees are removed unless ``--keep``.  Figures: BENCHMARKS "cpu32", "fast33".
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PXD = ROOT / "bench" / "engine_pxd"  # the prototype's augmenting .pxd files, by module path

# The quiet paths of cpu31's map (~60 % of the worker's bytecodes) and what they call a record.
HOT = ("detector/network.py", "detector/quiet.py", "detector/thermal.py",
       "detector/gpu_missing.py", "detector/job_comm.py", "detector/decoding.py",
       "detector/node_temps.py", "detector/gpu_health.py", "detector/findings.py",
       "detector/sample_hooks.py", "models/counters.py", "models/decay.py")


def tree(dest: Path) -> Path:
    """HEAD's committed files under ``dest``."""
    dest.mkdir(parents=True)
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", "HEAD"], check=True,
                             capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", str(dest)], input=archive, check=True)
    return dest


def compile_tree(dest: Path, cythonize: str, modules: list[str], typed: bool) -> float:
    """Compile ``modules`` of ``dest`` in place; the build's wall seconds."""
    opts = [] if typed else ["-X", "annotation_typing=False"]
    t0 = time.monotonic()
    subprocess.run([cythonize, "-i", "-3", *opts, *modules], cwd=dest, check=True,
                   capture_output=True)
    secs = time.monotonic() - t0
    names = [m.removesuffix(".py").replace("/", ".") for m in modules]
    check = ("import importlib, sys\n"
             "bad = [m for m in sys.argv[1:] if not importlib.import_module(m)"
             ".__file__.endswith('.so')]\n"
             "print(' '.join(bad))")
    bad = subprocess.run([sys.executable, "-c", check, *names], cwd=dest, check=True,
                         env={**os.environ, "PYTHONPATH": str(dest)}, capture_output=True,
                         text=True).stdout.split()
    if bad:
        raise SystemExit(f"not imported from a compiled module: {bad}")
    return secs


def prototype_files() -> dict[str, Path]:
    """The prototype's .py modules (relative paths) -> their augmenting .pxd files."""
    return {str(f.relative_to(PXD).with_suffix(".py")): f for f in sorted(PXD.rglob("*.pxd"))}


def augment(dest: Path, pxds: dict[str, Path]) -> None:
    """Put each .pxd beside its module in ``dest``."""
    for module, pxd in pxds.items():
        if not (dest / module).is_file():
            raise SystemExit(f"{pxd} augments {module}, which is not in the tree")
        shutil.copyfile(pxd, (dest / module).with_suffix(".pxd"))


def check_cclasses(dest: Path, pxds: dict[str, Path]) -> list[str]:
    """The classes the .pxd files declare (``cdef class NAME``), each checked to be an
    extension type in the built ``dest`` (not a heap type: Python's own classes are);
    raises SystemExit naming those that are not."""
    want = [(m.removesuffix(".py").replace("/", "."), name)
            for m, pxd in pxds.items()
            for name in re.findall(r"^cdef class (\w+)", pxd.read_text(), re.M)]
    check = ("import importlib, sys\n"
             "HEAP = 1 << 9  # Py_TPFLAGS_HEAPTYPE\n"
             "args = sys.argv[1:]\n"
             "bad = [f'{m}.{c}' for m, c in zip(args[::2], args[1::2])\n"
             "       if getattr(importlib.import_module(m), c).__flags__ & HEAP]\n"
             "print(' '.join(bad))")
    bad = subprocess.run([sys.executable, "-c", check, *[x for mc in want for x in mc]],
                         cwd=dest, check=True, env={**os.environ, "PYTHONPATH": str(dest)},
                         capture_output=True, text=True).stdout.split()
    if bad:
        raise SystemExit(f"not a C struct class (its .pxd did not apply): {bad}")
    return [f"{m}.{c}" for m, c in want]


def instructions(dest: Path, prefix: int, mode: str = "--worker") -> str:
    """engine_callgrind's line in ``mode`` (--worker, --nic), run in ``dest``."""
    run = subprocess.run([sys.executable, "bench/engine_callgrind.py", mode,
                          "--prefix", str(prefix)], cwd=dest,
                         env={**os.environ, "PYTHONHASHSEED": "0", "PYTHONPATH": str(dest)},
                         check=True, capture_output=True, text=True)
    return run.stdout.strip().splitlines()[-1]


def throughput(dest: Path) -> float:
    """pipeline_throughput.py's pipeline-worker events/s, one repeat, run in ``dest``."""
    run = subprocess.run([sys.executable, "bench/pipeline_throughput.py", "--repeat", "1"],
                         cwd=dest, env={**os.environ, "PYTHONPATH": str(dest)}, check=True,
                         capture_output=True, text=True)
    m = re.search(r"pipeline worker\s+([\d,]+) events/s", run.stdout)
    assert m is not None, run.stdout
    return float(m.group(1).replace(",", ""))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cythonize", default=shutil.which("cythonize") or "cythonize",
                    help="the cythonize script of a venv of this interpreter")
    ap.add_argument("--typed", action="store_true", help="annotations as C types")
    ap.add_argument("--modules", default=None, help="comma-separated .py paths (default: "
                    "the hot modules, or with --prototype those bench/engine_pxd augments)")
    ap.add_argument("--prototype", action="store_true", help="the compiled tree augmented "
                    "by bench/engine_pxd's .pxd files (C struct classes)")
    ap.add_argument("--nic", action="store_true", help="also engine_callgrind --nic in each")
    ap.add_argument("--prefix", type=int, default=20000, help="engine_callgrind's records")
    ap.add_argument("--throughput", type=int, default=0, metavar="N",
                    help="N interleaved rounds of pipeline_throughput.py")
    ap.add_argument("--keep", default=None, help="scratch directory to keep")
    args = ap.parse_args()
    scratch = Path(args.keep or tempfile.mkdtemp(prefix="engine-compiled-"))
    try:
        plain = tree(scratch / "plain")
        compiled = tree(scratch / "compiled")
        pxds = prototype_files() if args.prototype else {}
        modules = args.modules.split(",") if args.modules else list(pxds or HOT)
        augment(compiled, pxds)
        secs = compile_tree(compiled, args.cythonize, modules, args.typed)
        print(f"build: {secs:.0f} s wall ({len(modules)} modules, "
              f"{'typed' if args.typed else 'annotation_typing=False'}"
              f"{', prototype .pxd' if pxds else ''})")
        if pxds:
            print(f"C struct classes: {', '.join(check_cclasses(compiled, pxds))}")
        for name, dest in (("plain", plain), ("compiled", compiled)):
            print(f"{name:>9}: {instructions(dest, args.prefix)}")
            if args.nic:
                print(f"{name:>9}: {instructions(dest, args.prefix, '--nic')}")
        if args.throughput:
            rates: dict[str, list[float]] = {"plain": [], "compiled": []}
            for _ in range(args.throughput):
                for name, dest in (("plain", plain), ("compiled", compiled)):
                    rates[name].append(throughput(dest))
            best = {k: max(v) for k, v in rates.items()}
            print(f"pipeline worker, best of {args.throughput}: plain {best['plain']:,.0f} "
                  f"ev/s, compiled {best['compiled']:,.0f} ev/s = "
                  f"{best['compiled'] / best['plain']:.3f}")
    finally:
        if not args.keep:
            shutil.rmtree(scratch, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
