"""pamd index: build or refresh the search index in .pamd/ from the tree."""

from __future__ import annotations

import argparse
import os
import sys
import time

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


class Progress:
    """A progress bar on a terminal's stderr, for a step still running after PAMD_PROGRESS_AFTER
    seconds (default 2); nothing when stderr is not a terminal (a pipe, a hook, a log)."""

    WIDTH = 24
    phases = True  # also told of steps before embedding (recall.store.changes)

    def __init__(self, quiet: bool = False, what: str = "embedding") -> None:
        self.on = sys.stderr.isatty() and not quiet
        self.what = what
        self.shown = False
        try:
            self.after = float(os.environ.get("PAMD_PROGRESS_AFTER", "2"))
        except ValueError:
            self.after = 2.0
        self.t0 = time.monotonic()

    def __call__(self, done: int, total: int, what: str | None = None) -> None:
        if not self.on:
            return
        took = time.monotonic() - self.t0
        if took < self.after and not self.shown:
            return
        from pamd.core.visible import raw

        fill = round(self.WIDTH * done / total) if total else self.WIDTH
        bar = "#" * fill + "-" * (self.WIDTH - fill)
        # its own CR redraws the line: past the stream that shows stored text's escaped
        print(f"\r{what or self.what} [{bar}] {done}/{total} {took:.0f} s\033[K", end="", file=raw(sys.stderr),
              flush=True)
        self.shown = True

    def done(self) -> None:
        if self.shown:
            print(file=sys.stderr)
