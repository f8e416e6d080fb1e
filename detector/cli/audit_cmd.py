"""``faultline audit verify FILE``: check a hash-chained audit file (see :mod:`detector.audit`)."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable

from detector.cli.common import EXIT_UNREADABLE


def register(sub: argparse._SubParsersAction) -> dict[str, Callable[[argparse.Namespace], int]]:
    p = sub.add_parser(
        "audit", help="check an audit file: no entry edited, dropped or reordered",
        description="The service (audit_file) and the pager ([pager] audit_file) append every "
        "alert they emit and every notification delivered or dead-lettered to a hash-chained "
        "audit file. 'faultline audit verify FILE' checks every entry's hash and the chain; "
        "exit 0 when intact, 1 naming each broken line otherwise.")
    verbs = p.add_subparsers(dest="audit_command", required=True)
    v = verbs.add_parser("verify", help="verify the chain of an audit file")
    v.add_argument("file", help="the audit file (JSON lines)")
    v.add_argument("--key-env", default="FAULTLINE_AUDIT_KEY", metavar="VAR",
                   help="environment variable holding the HMAC key the writer used, if any "
                   "[default FAULTLINE_AUDIT_KEY]")
    return {"audit": _run}


def _run(args: argparse.Namespace) -> int:
    from detector.audit import verify

    key = os.environ.get(args.key_env)
    verdict = verify(args.file, key=key.encode() if key else None)
    for problem in verdict.problems:
        print(f"{args.file}: {problem}", file=sys.stderr)
    if not verdict.ok:
        print(f"{args.file}: BROKEN: {len(verdict.problems)} problem(s) in {verdict.entries} "
              f"entries", file=sys.stderr)
        return EXIT_UNREADABLE
    print(f"{args.file}: intact: {verdict.entries} entries, head {verdict.head}")
    return 0
