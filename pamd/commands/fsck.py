"""pamd fsck: verify a brain's invariants; each problem as path:line."""

from __future__ import annotations

import json

HELP = "verify the brain: format, unique ids, provenance through history, recalls, ledger, no message twice, index"
EXAMPLE = """
pamd fsck
pamd fsck --skip index     # ignore a stale search index
pamd fsck --deep --json    # look every provenance id up through git history
"""


def add_arguments(p) -> None:
    p.add_argument(
        "--skip",
        action="append",
        default=[],
        metavar="CHECK",
        help="skip a check (conflicts, format, provenance, recalls, ledger, twice, synapse, index)",
    )
    p.add_argument(
        "--deep", action="store_true", help="locate every provenance id one by one (slower)"
    )
    p.add_argument("--json", action="store_true", help="problems as JSON")


def run(args) -> int:
    from pamd.core.words import plural
    from pamd.edge.brain import Brain
    from pamd.ops.fsck import fsck

    brain = Brain.find(args.brain)
    _prune_worktrees(brain)
    found = fsck(brain, tuple(args.skip), args.deep)
    problems = [p for ps in found.values() for p in ps]
    if args.json:
        print(
            json.dumps(
                {
                    name: [{"path": p.path, "line": p.line, "message": p.message} for p in ps]
                    for name, ps in found.items()
                },
                indent=2,
            )
        )
    else:
        for p in problems:
            print(p)
        print(
            ("brain ok: " if not problems else f"{plural(len(problems), 'problem')}; checked: ")
            + ", ".join(found)
        )
    return 1 if problems else 0


def _prune_worktrees(brain) -> None:
    """Worktrees a killed `defrag --branch` left: removed (said on stderr) if no run holds the lock."""
    from pamd.edge.lock import Lock
    from pamd.errors import PamdError

    try:
        with Lock(brain.state_dir / "lock", wait=False):
            brain.prune_worktrees()
    except PamdError:  # a run holds the lock (it may be that defrag --branch): leave them be
        pass
    except OSError:  # a read-only brain (a CI checkout, a mounted clone): fsck only reads
        pass
