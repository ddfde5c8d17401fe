from __future__ import annotations

import json

HELP = "print the raw messages behind a summary (or a dropped entry), from git history"
EXAMPLE = "pamd expand s-1a2b3c4d5e6f\npamd expand memory/L3/2026-11-20.md:7\npamd expand s-1a2b3c4d5e6f --json"


def add_arguments(p) -> None:
    p.add_argument("refs", nargs="+", metavar="ID|PATH:LINE",
                   help="an entry id, or a line of an entry file (PATH from the cwd or the brain's root)")
    p.add_argument("--all", action="store_true", help="also print the summaries in between")
    p.add_argument("--json", action="store_true")


def run(args) -> int:
    from pamd.consolidate.provenance import expand_ids, resolve_ref, shown
    from pamd.core.entry import fmt_time
    from pamd.edge.brain import Brain
    from pamd.edge.refs import cwd_ref

    brain = Brain.find(args.brain)
    ids = [resolve_ref(brain, cwd_ref(brain.root.resolve(), r)) for r in args.refs]
    found = shown(expand_ids(brain, ids), between=args.all)
    if args.json:
        print(json.dumps([f.as_json() for f in found], indent=2))
        return 0
    for f in found:
        where = f.entry.path if f.rev == "WORKTREE" else f"{f.rev[:8]}:{f.entry.path}"
        print(f"{'  ' * f.depth}{f.entry.id} {f.entry.tier} {fmt_time(f.entry.ts)} {f.entry.role}  ({where})")
        for line in f.entry.text.split("\n"):
            print(f"{'  ' * f.depth}  {line}")
    return 0
