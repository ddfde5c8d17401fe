from __future__ import annotations

HELP = "count an explicit recall: 'I used this memory' (folded into the tree by the next compaction)"
EXAMPLE = "pamd touch s-1a2b3c4d5e6f\npamd touch memory/L1/2026-11-30.md:12"


def add_arguments(p) -> None:
    p.add_argument("refs", nargs="+", metavar="ID|PATH:LINE",
                   help="an entry id, or a line of an entry file (PATH from the cwd or the brain's root); an id "
                        "a summary in the tree stands for (a raw leaf `recall --json` lists, a source in its "
                        "from=, at any depth) counts for that summary")


def run(args) -> int:
    from pamd.consolidate.provenance import resolve_ref
    from pamd.core.words import plural
    from pamd.edge.brain import Brain
    from pamd.edge.refs import cwd_ref
    from pamd.myelin.touch import touch

    brain = Brain.find(args.brain)
    ids = [resolve_ref(brain, cwd_ref(brain.root.resolve(), r), "touch") for r in args.refs]
    counted = touch(brain, ids, args.now,
                    "check the id with pamd recall --json; pamd expand ID shows an entry that left the tree")
    for eid, holder in counted.items():
        if holder != eid:
            print(f"counted {eid} for {holder}, the summary that holds it now")
    print(f"noted {plural(len(ids), 'recall')}; the next compaction folds {'it' if len(ids) == 1 else 'them'} in")
    return 0
