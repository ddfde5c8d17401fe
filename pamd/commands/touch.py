from __future__ import annotations

HELP = "count an explicit recall: 'I used this memory' (folded into the tree by the next compaction)"
EXAMPLE = "pamd touch s-1a2b3c4d5e6f\npamd touch memory/L1/2026-11-30.md:12"


def add_arguments(p) -> None:
    p.add_argument("refs", nargs="+", metavar="ID|PATH:LINE",
                   help="an entry id, or a line of an entry file (PATH from the cwd or the brain's root)")


def run(args) -> int:
    from pamd.commands.expand import cwd_ref
    from pamd.consolidate.provenance import find_in_tree, resolve_ref
    from pamd.core.words import plural
    from pamd.edge.brain import Brain
    from pamd.errors import PamdError
    from pamd.myelin import recall_log

    brain = Brain.find(args.brain)
    ids = [resolve_ref(brain, cwd_ref(brain.root.resolve(), r)) for r in args.refs]
    missing = set(ids) - set(find_in_tree(brain, set(ids)))
    if missing:
        raise PamdError(f"no entry {sorted(missing)[0]} in the brain's tiers", "check the id with pamd recall --json")
    recall_log.append(brain.state_dir, ids, "(touch)", args.now, source="touch")
    print(f"noted {plural(len(ids), 'recall')}; the next compaction folds it in")
    return 0
