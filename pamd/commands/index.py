"""pamd index: build or refresh the search index in .pamd/ from the tree."""

from __future__ import annotations

import argparse
import sys

HELP = "build or refresh the search index (.pamd/index) from the brain's files"
EXAMPLE = """
pamd index            # embed only what changed since the last index
pamd index --rebuild  # start from empty (cached vectors are reused)
"""


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--rebuild", action="store_true", help="drop the index and build it again")
    p.add_argument("-q", "--quiet", action="store_true", help="print nothing on success")


def run(args: argparse.Namespace) -> int:
    from pamd.edge.brain import Brain
    from pamd.recall import api

    brain = Brain.find(args.brain)
    tty = sys.stderr.isatty() and not args.quiet

    def progress(done: int, total: int) -> None:
        if tty:
            print(f"\rembedding {done}/{total}", end="", file=sys.stderr, flush=True)

    rep = api.index(brain, force=args.rebuild, progress=progress)
    if tty and rep.embedded:
        print(file=sys.stderr)
    if not args.quiet:
        print(rep)
    return 0
