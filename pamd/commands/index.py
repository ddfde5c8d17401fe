"""pamd index: build or refresh the search index in .pamd/ from the tree."""

from __future__ import annotations

import argparse
import sys

HELP = "build or refresh the search index (.pamd/index) from the brain's files"
EXAMPLE = """
pamd index            # embed only what changed since the last index
pamd index --rebuild  # start from empty (cached vectors and summaries' leaves are reused;
                      # summaries cached with no leaves are read from history again)
rm .pamd/deep.sqlite  # then pamd index --rebuild: every summary's leaves read from history again
"""


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--rebuild", action="store_true", help="drop the index and build it again; summaries cached with no"
                   " raw leaves are read from history again")
    p.add_argument("-q", "--quiet", action="store_true", help="print nothing on success")


def run(args: argparse.Namespace) -> int:
    from pamd.core.console import Progress
    from pamd.edge.brain import Brain
    from pamd.recall import api
    from pamd.recall.store.report import conflicted_note

    brain = Brain.find(args.brain)
    progress = Progress(quiet=args.quiet)
    try:
        rep = api.index(brain, force=args.rebuild, progress=progress)
    finally:
        progress.done()
    if not args.quiet:
        print(rep)
    note = conflicted_note(rep.conflicted)
    if note:
        print(f"pamd: warning: {note}", file=sys.stderr)
    return 0
