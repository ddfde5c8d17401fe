"""pamd sync: fetch, merge by entry id and push; --repair puts back what a merge lost."""

from __future__ import annotations

HELP = "fetch, merge by entry id and push: two clones of one brain, no entry lost or doubled"
EXAMPLE = """
pamd sync                    # the branch's upstream, else origin and this branch's name
pamd sync origin main
pamd sync --no-push          # merge what the remote has, push nothing
pamd sync --repair           # after a merge made by hand: put back what it lost, take out what it doubled
"""


def add_arguments(p) -> None:
    p.add_argument("remote", nargs="?", help="the remote to sync with (default: the upstream's, else origin)")
    p.add_argument("branch", nargs="?", help="its branch (default: the upstream's, else this branch's name)")
    p.add_argument("--no-push", action="store_true", help="fetch and merge only")
    p.add_argument("--repair", action="store_true",
                   help="no fetch: put back every entry `pamd fsck` calls lost and take out what stands "
                        "twice, in one commit")


def run(args) -> int:
    from pamd.core.words import plural
    from pamd.edge.brain import Brain
    from pamd.errors import PamdError
    from pamd.ops.sync import repair, sync

    brain = Brain.find(args.brain)
    if args.repair:
        if args.remote or args.branch:
            raise PamdError("--repair takes no remote or branch", "run `pamd sync --repair`, then `pamd sync`")
        r = repair(brain)
        if not r.commit:
            print("nothing lost: every registered entry is in the tree or behind a summary, once")
        else:
            parts = [f"put back {plural(len(r.restored), 'entry')}"]
            if r.ledger:
                parts.append(f"{plural(len(r.ledger), 'ledger id')} listed again")
            if r.folded or r.set_aside:
                parts.append(f"took out {plural(len(r.folded) + len(r.set_aside), 'entry')} standing twice")
            print(", ".join(parts) + f" ({r.commit[:8]})")
        return 0
    s = sync(brain, args.remote, args.branch, push=not args.no_push)
    where = f"{s.remote} {s.branch}"
    if s.action == "conflict":
        raise PamdError(f"merged {where} except your own text in {', '.join(s.conflicts)}",
                        "resolve those files, `git add` them and `git commit`, then `pamd sync` again to push")
    said = {"up to date": f"up to date with {where}",
            "fast-forward": f"fast-forwarded to {where} ({(s.commit or '')[:8]})",
            "merged": f"merged {where} ({(s.commit or '')[:8]})"}[s.action]
    if s.merged is not None:
        m = s.merged
        said += f": {plural(len(m.entries), 'entry')}, each once"
        if m.folded:
            said += f", {len(m.folded)} the other side compacted"
        if m.restored:
            said += f", {len(m.restored)} restored from summaries both sides made"
    print(said + ("; pushed" if s.pushed else ""))
    return 0
