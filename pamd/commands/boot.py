from __future__ import annotations

HELP = "print what an agent reads at session start: STATE, DNA, PRELOAD, MEMORY, tiers, within a budget"
EXAMPLE = """pamd boot > context.md
pamd boot --budget 200000 --json
pamd boot --at HEAD~5          # the context the agent had five commits ago
pamd boot --chars 9000         # at most 9,000 characters, saying what was left out"""


def add_arguments(p) -> None:
    p.add_argument("--budget", type=int, metavar="TOKENS", help="token budget (default [boot] budget, 500000)")
    p.add_argument("--at", metavar="COMMIT|DATE",
                   help="rebuild the boot context of an earlier commit; a DATE: the last commit whose time "
                        "(its Pamd-Now, else its commit date) is at or before it; no zone = UTC, "
                        "a date alone = the end of that day")
    p.add_argument("--chars", type=int, metavar="N",
                   help="print at most N characters of Markdown: the most useful first (STATE, DNA, "
                        "MEMORY.md, then detail), ending with what was left out and how to reach it")
    p.add_argument("--json", action="store_true")


def run(args) -> int:
    import sys

    from pamd.edge.brain import Brain
    from pamd.edge.history import TreeView
    from pamd.errors import PamdError
    from pamd.myelin.boot import build

    if args.budget is not None and args.budget <= 0:
        raise PamdError("--budget must be a positive number of tokens")
    if args.chars is not None and args.chars <= 0:
        raise PamdError("--chars must be a positive number of characters")
    brain = Brain.find(args.brain)
    brain.recover_for_reading()
    view = TreeView.at(brain, args.at)
    now = args.now if args.now_given else view.time()
    out = build(view.read, view.files(), view.config(), now, args.budget, max_chars=args.chars)
    sys.stdout.write(out.json() + "\n" if args.json else out.within())
    if out.conflicted:
        print(f"pamd: warning: {out.conflicted_note()}", file=sys.stderr)
    note = out.over_budget_note()
    if note:
        # Still printed whole, exit 0: an agent without its DNA is worse off than one over budget.
        print(f"pamd: warning: {note}; raise --budget or trim those files", file=sys.stderr)
    return 0
