from __future__ import annotations

import sys

HELP = "the 30-minute job: move aged L0/L1 entries down into summaries, one commit"
EXAMPLE = """pamd compact
pamd compact --plan            # show each entry's retention and decision, write nothing
pamd compact --now 2026-12-01T09:00:00Z"""


def add_arguments(p) -> None:
    p.add_argument("--plan", "--dry-run", dest="plan", action="store_true",
                   help="print the plan (retention, decision, why) and write nothing")


def run(args) -> int:
    from pamd.consolidate.compaction import plan_report, result_line, run_warnings
    from pamd.consolidate.compaction import run as run_compaction
    from pamd.edge.brain import Brain
    from pamd.recall.refresh import after_commit

    brain = Brain.find(args.brain)
    out = run_compaction(brain, args.now, "compact", dry_run=args.plan)
    if args.plan:
        print("\n".join(plan_report(brain, out.plan, "compact")))
        return 0
    print(result_line(out, "compact"))
    for warning in run_warnings(out):
        print(f"pamd: warning: {warning}", file=sys.stderr)
    note = after_commit(brain) if out.sha else None
    if note:
        print(note)
    return 0
