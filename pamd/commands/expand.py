from __future__ import annotations

import json

HELP = "print the raw messages behind a summary (or a dropped entry), from git history"
EXAMPLE = "pamd expand s-1a2b3c4d5e6f\npamd expand memory/L3/2026-11-20.md:7\npamd expand s-1a2b3c4d5e6f --json"


def add_arguments(p) -> None:
    p.add_argument("refs", nargs="+", metavar="ID|PATH:LINE",
                   help="an entry id, or a line of an entry file (PATH from the cwd or the brain's root)")
    p.add_argument("--all", action="store_true", help="also print the summaries in between")
    p.add_argument("--json", action="store_true")


def cwd_ref(root, ref: str) -> str:
    """PATH:LINE with PATH as `pamd check` takes it: from the cwd, else from the brain's root."""
    from pamd.commands.check import brain_rel

    path, sep, line = ref.strip().rpartition(":")
    if not sep or not path or ref.strip().startswith(("e-", "s-")) or not line.split("-")[0].isdigit():
        return ref  # an id, or a malformed reference that resolve_ref names
    return f"{brain_rel(root, path, dir_hint='name a file and a line in it')}:{line}"


def run(args) -> int:
    from pamd.consolidate.provenance import expand_ids, resolve_ref
    from pamd.core.entry import fmt_time
    from pamd.edge.brain import Brain

    brain = Brain.find(args.brain)
    ids = [resolve_ref(brain, cwd_ref(brain.root.resolve(), r)) for r in args.refs]
    found = expand_ids(brain, ids)
    shown = [f for f in found if args.all or not f.entry.sources or f.depth == 0]
    if args.json:
        print(json.dumps([{"id": f.entry.id, "tier": f.entry.tier, "ts": fmt_time(f.entry.ts),
                           "role": f.entry.role, "text": f.entry.text, "sources": list(f.entry.sources),
                           "path": f.entry.path, "rev": f.rev, "depth": f.depth} for f in shown], indent=2))
        return 0
    for f in shown:
        where = f.entry.path if f.rev == "WORKTREE" else f"{f.rev[:8]}:{f.entry.path}"
        print(f"{'  ' * f.depth}{f.entry.id} {f.entry.tier} {fmt_time(f.entry.ts)} {f.entry.role}  ({where})")
        for line in f.entry.text.split("\n"):
            print(f"{'  ' * f.depth}  {line}")
    return 0
