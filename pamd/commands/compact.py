from __future__ import annotations

import sys

HELP = "the 30-minute job: move aged L0/L1 entries down into summaries, one commit"
EXAMPLE = """pamd compact
pamd compact --plan            # show each entry's retention and decision, write nothing
pamd compact --now 2026-12-01T09:00:00Z"""


def add_arguments(p) -> None:
    p.add_argument("--plan", "--dry-run", dest="plan", action="store_true",
                   help="print the plan (retention, decision, why) and write nothing")


def run(args, mode: str = "compact") -> int:
    from pamd.consolidate.compaction import plan_preview, plan_table, summarizer_notes, unrecorded_spend
    from pamd.consolidate.compaction import run as run_compaction
    from pamd.edge.brain import Brain

    brain = Brain.find(args.brain)
    out = run_compaction(brain, args.now, mode, dry_run=args.plan)
    if args.plan:
        for row in plan_table(out.plan):
            print(row)
        print(f"{len(out.plan.moving)} to compress, {len(out.plan.dropped)} to drop, "
              f"{len(out.plan.decisions) - len(out.plan.moving) - len(out.plan.dropped)} stay")
        preview = plan_preview(out.plan, brain.config)
        if preview:  # what an import of old sessions turns into, before it does
            print("\nThe summaries this run would write (extractive; an LLM backend writes its own):")
            print("\n".join(preview))
        if mode == "defrag":
            from pamd.core.paths import DNA
            from pamd.myelin import myelin

            _, retired = myelin.bound_dna(brain.read(DNA) or "", brain.config, [])
            if retired:  # the reflexes this night's lessons may add aside
                print(myelin.retired_note(retired, brain.config))
        return 0
    print(f"nothing to {mode}" if out.sha is None else out.message.split("\n", 1)[0] + f" ({out.sha[:8]})")
    for note in [*summarizer_notes(out), unrecorded_spend(out)]:
        if note:
            print(f"pamd: warning: {note}", file=sys.stderr)
    if out.sha is None:
        return 0
    from pamd.recall.refresh import after_commit

    note = after_commit(brain)
    if note:
        print(note)
    return 0
