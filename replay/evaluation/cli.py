"""Flags and entry point of ``faultline evaluate`` (the CLI module only registers them)."""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from replay.evaluation.ettr import EttrModel

REPORTED = "REPORTED"  # in a reporting corpus: when it was evaluated


def _env(name: str, default: str | None = None) -> str | None:
    return os.environ.get(name, default)


def configure_parser(p: argparse.ArgumentParser) -> None:
    """Flags of ``faultline evaluate``."""
    from replay.evaluation.corpus import SCALES
    from replay.evaluation.matrix import MATRIX_SCALES

    p.add_argument("corpus", nargs="?", default=None,
                   help="corpus folder (with corpus.json) to evaluate")
    b = p.add_argument_group("building a corpus")
    b.add_argument("--build", metavar="DIR", default=None,
                   help="write a new corpus here with the simulator instead of evaluating one")
    b.add_argument("--seeds", default=_env("FAULTLINE_EVAL_SEEDS"), metavar="A..B",
                   help="seeds, one per log (A..B inclusive, or A,B,C); keep the tuning and "
                   "the reporting corpus on disjoint ranges [env FAULTLINE_EVAL_SEEDS]")
    b.add_argument("--scale", choices=[*sorted(SCALES), "healthy", *MATRIX_SCALES],
                   default=_env("FAULTLINE_EVAL_SCALE", "small"),
                   help="small: 5 logs, ~40 faults, minutes; full: 17 logs, >= 200 faults; "
                   "healthy: 4 fault-free 256-GPU logs (3 h, 3 h, 3 h, 1 h: ~107 GPU-days a "
                   "seed), for false isolations "
                   "per 1,000 GPU-days; matrix: one cell per value of each simulate --axis, with "
                   "every seed (27 cells x 64 GPUs x 20 min a seed); matrix-tiny: the same "
                   "cells, 16 GPUs, 5 min (tests) [env FAULTLINE_EVAL_SCALE]")
    b.add_argument("--reporting", action="store_true",
                   help="mark the corpus as the reporting corpus: evaluated once, after tuning "
                   "(a second evaluation needs --again)")
    p.add_argument("--workers", type=int, default=int(_env("FAULTLINE_EVAL_WORKERS", "2") or 2),
                   help="parallel processes for building and replaying (default 2) "
                   "[env FAULTLINE_EVAL_WORKERS]")
    e = p.add_argument_group("evaluating a corpus")
    e.add_argument("--topology-map", action="append", default=[], metavar="NAME=FILE",
                   help="where the topology a log names lives (by topology name or the path "
                   "in corpus.json); repeat or comma-separate")
    e.add_argument("--html", metavar="OUT", default=None,
                   help="also write the result as one self-contained HTML page with latency "
                   "distributions (needs the optional extra 'report': matplotlib)")
    e.add_argument("--json", metavar="OUT", default=None,
                   help="also write everything machine-readable to this file")
    e.add_argument("--no-baselines", action="store_true",
                   help="faultline only (about half the time; for a tuning loop)")
    e.add_argument("--again", action="store_true",
                   help="evaluate a reporting corpus that was evaluated before (say so when "
                   "you quote its figures)")
    m = p.add_argument_group("ETTR model (printed with the result)")
    d = EttrModel()
    m.add_argument("--job-gpus", type=int, default=d.job_gpus,
                   help=f"job size the Llama 3 fault rate is scaled to (default {d.job_gpus})")
    m.add_argument("--checkpoint-min", type=float, default=d.checkpoint_interval_s / 60,
                   help="checkpoint interval, minutes (default %(default)g)")
    m.add_argument("--restart-min", type=float, default=d.restart_s / 60,
                   help="restart cost, minutes (default %(default)g)")
    m.add_argument("--isolation-min", type=float, default=d.isolation_s / 60,
                   help="isolation time after a detection, minutes (default %(default)g)")
    m.add_argument("--notice-min", type=float, default=d.notice_s / 60,
                   help="until someone notices a missed fail-slow or SDC fault, minutes "
                   "(default %(default)g)")
    m.add_argument("--repeat-p", type=float, default=d.repeat_p,
                   help="chance a missed fail-stop unit crashes the restarted job again "
                   "(default %(default)g)")
    m.add_argument("--no-fp-cost", action="store_true",
                   help="leave the cost of false isolations out of ETTR")


def parse_topology_map(items: list[str]) -> dict[str, str]:
    out: dict[str, str] = {}
    for item in items:
        for part in item.split(","):
            if not part.strip():
                continue
            name, sep, path = part.partition("=")
            if not sep or not name.strip() or not path.strip():
                raise ValueError(f"--topology-map: expected NAME=FILE, got {part!r}")
            out[name.strip()] = path.strip()
    return out


def model_from(args: argparse.Namespace) -> EttrModel:
    for flag in ("checkpoint_min", "restart_min", "isolation_min", "notice_min"):
        if not getattr(args, flag) >= 0:
            raise ValueError(f"--{flag.replace('_', '-')} must be >= 0")
    if not 0 <= args.repeat_p <= 1:
        raise ValueError("--repeat-p must be within 0..1")
    if args.job_gpus < 1:
        raise ValueError("--job-gpus must be >= 1")
    return EttrModel(checkpoint_interval_s=60 * args.checkpoint_min,
                     restart_s=60 * args.restart_min, isolation_s=60 * args.isolation_min,
                     notice_s=60 * args.notice_min, repeat_p=args.repeat_p,
                     job_gpus=args.job_gpus, count_false_isolations=not args.no_fp_cost)


@contextmanager
def _progress(desc: str) -> Iterator[Callable[[str], None]]:
    """One line per log when piped (CI logs); a bar counting the logs on a terminal."""
    from detector.cli.progress import progress, wanted

    with progress(desc, unit="logs") as update:
        done = 0
        bar = wanted(sys.stderr)

        def line(text: str) -> None:
            nonlocal done
            done += 1
            if bar:
                update(done)
            else:
                print(text, file=sys.stderr, flush=True)

        yield line


def run(args: argparse.Namespace) -> int:
    """``faultline evaluate``: build a corpus, or evaluate one and print the table."""
    from replay.evaluation.corpus import SCALES, build_pairs, parse_seeds, read_manifest
    from replay.evaluation.evaluate import evaluate_corpus
    from replay.evaluation.matrix import MATRIX_SCALES, healthy_recipes, matrix_pairs

    if args.workers < 1:
        raise ValueError("--workers must be >= 1")
    if args.build:
        if args.corpus:
            raise ValueError("give --build DIR or a corpus to evaluate, not both")
        if not args.seeds:
            raise ValueError("--build needs --seeds A..B (one seed per log)")
        seeds = parse_seeds(args.seeds)
        purpose = "reporting" if args.reporting else "tuning"
        if args.scale in MATRIX_SCALES:  # every cell with every seed
            pairs = matrix_pairs(args.scale, seeds)
        else:
            recipes = healthy_recipes() if args.scale == "healthy" else SCALES[args.scale]
            if len(seeds) < len(recipes):
                raise ValueError(f"the {args.scale} corpus has {len(recipes)} logs and needs "
                                 f"as many seeds; got {len(seeds)}")
            if len(set(seeds)) != len(seeds):
                raise ValueError("seeds repeat")
            pairs = list(zip(recipes, seeds, strict=False))
        t0 = time.perf_counter()
        print(f"building the {args.scale} {purpose} corpus ({len(pairs)} logs) in {args.build} "
              f"with {args.workers} worker(s)", flush=True)
        with _progress("build") as note:
            man = build_pairs(args.build, pairs, scale=args.scale, workers=args.workers,
                              progress=note, purpose=purpose)
        faults = sum(len(e["faults"]) for e in man["logs"])
        kinds = sorted({f["kind"] for e in man["logs"] for f in e["faults"]})
        records = sum(e["records"] for e in man["logs"])
        print(f"wrote {len(man['logs'])} logs ({records:,} records, {faults} faults of "
              f"{len(kinds)} kinds) and {Path(args.build) / 'corpus.json'} in "
              f"{time.perf_counter() - t0:.0f} s; evaluate with `faultline evaluate "
              f"{args.build}`")
        return 0
    if not args.corpus:
        raise ValueError("name a corpus folder to evaluate, or --build DIR --seeds A..B")
    stamp = Path(args.corpus) / REPORTED
    reporting = read_manifest(args.corpus).get("purpose") == "reporting"
    if reporting and stamp.exists() and not args.again:
        raise ValueError(f"{args.corpus} is a reporting corpus and was evaluated already "
                         f"({stamp.read_text().strip()}); tune on a tuning corpus, or pass "
                         "--again and say so with the figures")
    with _progress("evaluate") as note:
        ev = evaluate_corpus(args.corpus, topology_map=parse_topology_map(args.topology_map),
                             workers=args.workers, baselines=not args.no_baselines,
                             model=model_from(args), progress=note)
    print(ev.format(), flush=True)
    if reporting:
        previous = stamp.read_text() if stamp.exists() else ""
        when = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        stamp.write_text(previous + f"evaluated {when} in {ev.seconds:.0f} s\n")
    if args.json:
        Path(args.json).write_text(json.dumps(ev.to_dict(), indent=1) + "\n")
        print(f"wrote {args.json}")
    if args.html:
        from replay.report.evaluation import render_evaluation
        Path(args.html).write_text(render_evaluation(ev), encoding="utf-8")
        print(f"wrote {args.html}")
    return 0
