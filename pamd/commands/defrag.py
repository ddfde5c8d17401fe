from __future__ import annotations

import sys

HELP = "the nightly job: compact's moves, then L2->L3 one-liners and L3->MEMORY.md; one commit"
DESCRIPTION = """the nightly job, one commit: first what `pamd compact` does (aged L0 entries into
L1/L2 summaries, trash dropped, L1 -> L2), then L2 -> L3 topic one-liners and
L3 -> MEMORY.md, and daily notes archived. Every entry goes to the tier its age
calls for, so raw entries days old can go from L0 to L3 or MEMORY.md in this run."""
EXAMPLE = """pamd defrag
pamd defrag --plan
pamd defrag --branch defrag/2026-11-30   # commit on a branch for a pull request"""


def add_arguments(p) -> None:
    p.add_argument("--plan", "--dry-run", dest="plan", action="store_true",
                   help="print the plan and write nothing")
    p.add_argument("--branch", metavar="NAME",
                   help="commit on a new branch NAME (from HEAD) instead (with --plan: no branch, no commit)")


def run(args) -> int:
    from pamd.commands import compact

    if args.branch and not args.plan:  # --plan writes nothing, on a branch or not
        from pamd.consolidate.branch import defrag_on_branch
        from pamd.consolidate.compaction import summarizer_notes, unrecorded_spend
        from pamd.edge.brain import Brain

        brain = Brain.find(args.brain)
        out = defrag_on_branch(brain, args.branch, args.now)
        if out.sha is None:
            print("nothing to defrag; no branch made")
        else:
            print(out.message.split("\n", 1)[0] + f" ({out.sha[:8]} on {args.branch})")
        for note in [*summarizer_notes(out), unrecorded_spend(out)]:
            if note:
                print(f"pamd: warning: {note}", file=sys.stderr)
        return 0
    return compact.run(args, mode="defrag")
