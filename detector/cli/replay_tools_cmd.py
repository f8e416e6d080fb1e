"""``faultline simulate`` and ``faultline evaluate``: labelled logs and the evaluation suite."""

from __future__ import annotations

import argparse
from collections.abc import Callable


def register(sub: argparse._SubParsersAction) -> dict[str, Callable[[argparse.Namespace], int]]:
    _add_simulate(sub)
    _add_evaluate(sub)
    return {"simulate": _run_simulate, "evaluate": _run_evaluate}


def _add_simulate(sub: argparse._SubParsersAction) -> None:
    from replay.sim import simulate
    p = sub.add_parser("simulate", help="write a labelled incident log",
                       description="Simulate a synchronous training job on a topology with "
                       "injected faults and benign events; write a labelled incident log.")
    simulate.configure_parser(p)


def _run_simulate(args: argparse.Namespace) -> int:
    from replay.sim import simulate
    return simulate.run(args)


def _add_evaluate(sub: argparse._SubParsersAction) -> None:
    from replay.evaluation import cli as eval_cli
    p = sub.add_parser(
        "evaluate", help="build a labelled corpus, or score faultline and baselines on one",
        description="With --build DIR --seeds A..B: simulate a corpus of labelled incident "
        "logs (several topologies, every fault kind, healthy logs) and its corpus.json. "
        "With a corpus folder: replay every log through faultline and the baselines "
        "(Prometheus rules on DCGM metrics, NVIDIA-straggler-style scores), score them, and "
        "print one table with false alarms per 1,000 GPU-days and an ETTR estimate.")
    eval_cli.configure_parser(p)


def _run_evaluate(args: argparse.Namespace) -> int:
    from replay.evaluation import cli as eval_cli
    return eval_cli.run(args)
