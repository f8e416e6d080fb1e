"""The blind generators' one command line: ``--out DIR --seeds A..B --stories a,b --minutes M``.

blind12 and every later generator (not blind29, written apart this round) write one log a
(seed, story) through their own ``write(out, story, seed, minutes) -> Path``; this is the shell
around it that each of them once copied (perf38, round 38). A generator's ``main`` is

    def main(argv=None):
        return cli.main(argv, __doc__, STORIES, write)

with its own defaults as keywords.  The logs are the writer's alone: the shell only picks
which (seed, story) cells to write, seeds outer, and prints each log's path.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Iterable
from pathlib import Path

from replay.evaluation.corpus import parse_seeds


def main(argv: list[str] | None, doc: str, stories: Iterable[str],
         write: Callable[[Path, str, int, float | None], Path], *, seeds: str = "0..3",
         minutes: float | None = 15.0, done: bool = False) -> int:
    """Parse ``argv``, write every (seed, story) with ``write``; 0.

    ``doc``'s first line describes the command; ``stories`` are the default ``--stories``;
    ``minutes=None`` hands the writer ``None`` (its stories' own lengths) unless ``--minutes``
    is given; ``done`` leaves an empty ``DIR/.done`` once every log is written.

    >>> import tempfile
    >>> out = Path(tempfile.mkdtemp())
    >>> def write(out, story, seed, minutes):
    ...     return out / f"{story}-s{seed}-{minutes:g}.jsonl.gz"
    >>> _ = main(["--out", str(out), "--seeds", "1..2", "--minutes", "3"], "Demo.",
    ...          ["a", "b"], write, done=True)  # doctest: +ELLIPSIS
    /.../a-s1-3.jsonl.gz
    /.../b-s1-3.jsonl.gz
    /.../a-s2-3.jsonl.gz
    /.../b-s2-3.jsonl.gz
    >>> (out / ".done").exists()
    True
    """
    ap = argparse.ArgumentParser(description=doc.splitlines()[0])
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--seeds", default=seeds, help="A..B or A,B,C")
    ap.add_argument("--stories", default=",".join(stories))
    ap.add_argument("--minutes", type=float, default=minutes)
    args = ap.parse_args(argv)
    for seed in parse_seeds(args.seeds):
        for story in args.stories.split(","):
            print(write(args.out, story, seed, args.minutes))
    if done:
        (args.out / ".done").write_text("")
    return 0
