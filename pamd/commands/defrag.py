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
    from pamd.consolidate.branch import defrag_on_branch
    from pamd.consolidate.compaction import plan_report, result_line, run_warnings
    from pamd.consolidate.compaction import run as run_compaction
    from pamd.edge.brain import Brain
    from pamd.recall.refresh import after_commit

    brain = Brain.find(args.brain)
    if args.plan:  # --plan writes nothing, on a branch or not
        print("\n".join(plan_report(brain, run_compaction(brain, args.now, "defrag", dry_run=True).plan, "defrag")))
        return 0
    if args.branch:
        out = defrag_on_branch(brain, args.branch, args.now)
        if out.sha is None:
            print("nothing to defrag; no branch made")
        else:
            print(out.message.split("\n", 1)[0] + f" ({out.sha[:8]} on {args.branch})")
    else:
        out = run_compaction(brain, args.now, "defrag")
        print(result_line(out, "defrag"))
    for warning in run_warnings(out):
        print(f"pamd: warning: {warning}", file=sys.stderr)
    note = after_commit(brain) if out.sha and not args.branch else None
    if note:
        print(note)
    return 0
