"""The ``faultline`` command: thin argument handling around the library; the only place that exits.

Each subcommand lives in its own module of this package and registers its
parsers through ``register(sub) -> {name: run}``; this module only assembles
them.  Every flag can also come from an environment variable (named in
``--help``).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence

from detector.cli import (
    audit_cmd,
    collect_cmd,
    dev_cmd,
    import_cmd,
    pager_cmd,
    replay_cmd,
    replay_tools_cmd,
    report_cmd,
    serve_cmd,
)
from detector.cli.common import EXIT_USAGE, format_alert
from detector.topology import TopologyError

__all__ = ["build_parser", "format_alert", "main"]

# In the order `faultline --help` lists them.
_MODULES = (replay_cmd, replay_tools_cmd, report_cmd, serve_cmd, pager_cmd, collect_cmd,
            import_cmd, audit_cmd, dev_cmd)


def _parser_and_commands() -> tuple[argparse.ArgumentParser,
                                    dict[str, Callable[[argparse.Namespace], int]]]:
    parser = argparse.ArgumentParser(
        prog="faultline", description="Streaming detection of slow GPU nodes and silent data "
        "corruption in training clusters.")
    sub = parser.add_subparsers(dest="command", required=True)
    commands: dict[str, Callable[[argparse.Namespace], int]] = {}
    for module in _MODULES:
        commands.update(module.register(sub))
    return parser, commands


def build_parser() -> argparse.ArgumentParser:
    return _parser_and_commands()[0]


def main(argv: Sequence[str] | None = None) -> int:
    parser, commands = _parser_and_commands()
    args = parser.parse_args(argv)
    try:
        return commands[args.command](args)
    except (ValueError, TopologyError, FileNotFoundError) as exc:
        print(f"faultline {args.command}: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        # `faultline replay ... | head`: the reader left; not an error.
        sys.stderr.close()
        return 0


if __name__ == "__main__":
    sys.exit(main())
