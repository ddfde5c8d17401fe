from __future__ import annotations

import sys

HELP = "run whatever is due once (compact, nightly defrag): for cron, CI or a hook"
EXAMPLE = "pamd run-due\n*/30 * * * *  cd ~/brain && pamd run-due   # crontab"


def add_arguments(p) -> None:
    p.add_argument("--list", action="store_true", help="only say what is due")


def run(args) -> int:
    from pamd.consolidate.schedule import ahead, due, run_due
    from pamd.edge.brain import Brain

    brain = Brain.find(args.brain)
    if late := ahead(brain, args.now, once=not args.list):
        print(f"pamd: warning: {late}", file=sys.stderr)
    if args.list:
        print(" ".join(due(brain, args.now)) or "nothing due")
        return 0
    done = run_due(brain, args.now)
    if not done:
        print("nothing due")
    for mode, sha, warnings in done:
        print(f"{mode}: {sha[:8] if sha else 'nothing to do'}")
        for warning in warnings:
            print(f"pamd: warning: {warning}", file=sys.stderr)
    if any(sha for _, sha, _ in done):
        from pamd.recall.refresh import after_commit

        note = after_commit(brain)
        if note:
            print(note)
    return 0
