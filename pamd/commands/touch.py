from __future__ import annotations

HELP = "count an explicit recall: 'I used this memory' (folded into the tree by the next compaction)"
EXAMPLE = "pamd touch s-1a2b3c4d5e6f\npamd touch memory/L1/2026-11-30.md:12"


def add_arguments(p) -> None:
    p.add_argument("refs", nargs="+", metavar="ID|PATH:LINE",
                   help="an entry id, or a line of an entry file (PATH from the cwd or the brain's root); an id "
                        "a summary in the tree stands for (a raw leaf `recall --json` lists, a source in its "
                        "from=, at any depth) counts for that summary")


def run(args) -> int:
    from pamd.commands.expand import cwd_ref
    from pamd.consolidate.provenance import held_by, pulled, pulled_from, resolve_ref
    from pamd.core.words import plural
    from pamd.edge.brain import Brain
    from pamd.errors import PamdError
    from pamd.myelin import recall_log

    brain = Brain.find(args.brain)
    ids = [resolve_ref(brain, cwd_ref(brain.root.resolve(), r), "touch") for r in args.refs]
    holder = held_by(brain, set(ids))
    missing = sorted(set(ids) - set(holder))
    if missing:
        if name := pulled_from(brain, missing[0]):
            raise pulled(name, f"entry {missing[0]}", "touch")
        raise PamdError(f"no entry {missing[0]} in the brain's tiers, nor behind a summary in them",
                        "check the id with pamd recall --json; pamd expand ID shows an entry that left the tree")
    # A raw message a summary stands for was the words used: the fold credits it to the
    # summary's via= (what PRELOAD shows for it), as a recall that matched it would.
    leaves = [(holder[i], i) for i in dict.fromkeys(ids) if holder[i] != i and i.startswith("e-")]
    recall_log.append(brain.state_dir, [holder[i] for i in ids], "(touch)", args.now, source="touch",
                      leaves=leaves)
    for eid in dict.fromkeys(ids):
        if holder[eid] != eid:
            print(f"counted {eid} for {holder[eid]}, the summary that holds it now")
    print(f"noted {plural(len(ids), 'recall')}; the next compaction folds {'it' if len(ids) == 1 else 'them'} in")
    return 0
