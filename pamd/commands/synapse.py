"""pamd synapse: share knowledge between brains (add, pull, publish, list, remove)."""

from __future__ import annotations

import argparse

HELP = "share knowledge between brains over git: add a brain, pull its MEMORY/DNA/L3, publish yours"
EXAMPLE = """
pamd synapse add alice ../alice-brain       # or a git URL
pamd synapse pull                           # all remotes, one commit, under synapse/NAME/
pamd synapse publish                        # update the pamd/publish branch others pull
pamd synapse list
pamd synapse remove alice                   # stop sharing: table, synapse/alice/ and cache, one commit
"""


def add_arguments(p) -> None:
    sub = p.add_subparsers(dest="verb", metavar="VERB", required=True)
    a = sub.add_parser(
        "add", help="register another brain by URL or path (checks it is reachable and a brain)"
    )
    a.add_argument("name", help="a short name: 1-64 letters, digits, _ or - (no . or /)")
    a.add_argument("url", help="git URL or path of the other brain")
    a.add_argument(
        "--ref", default="", help="branch to pull (default: pamd/publish if there, else HEAD)"
    )
    pl = sub.add_parser(
        "pull", help="bring registered brains' MEMORY.md, DNA.md and L3 under synapse/NAME/"
    )
    pl.add_argument("name", nargs="?", help="only this one")
    pb = sub.add_parser(
        "publish", help="put MEMORY.md, DNA.md and memory/L3 (from HEAD) on the publish branch"
    )
    pb.add_argument(
        "--branch", help="branch to publish to (default: [synapse] publish_branch or pamd/publish)"
    )
    ls = sub.add_parser("list", help="registered remotes and what was pulled from each")
    rm = sub.add_parser(
        "remove", help="stop pulling a brain: its [synapse.NAME], synapse/NAME/ and cache, one commit"
    )
    rm.add_argument("name", help="the synapse to remove")
    for verb in (a, pl, pb, ls, rm):
        # `pamd synapse pull --now X` as well as `pamd synapse --now X pull`; SUPPRESS keeps
        # the value given before the verb when none is given after it.
        for opt in ("--brain", "--now"):
            verb.add_argument(opt, default=argparse.SUPPRESS, help=argparse.SUPPRESS)


def run(args) -> int:
    from pamd.core.words import plural
    from pamd.edge.brain import Brain
    from pamd.ops import synapse

    brain = Brain.find(args.brain)
    if args.verb == "add":
        sha, src = synapse.add(brain, args.name, args.url, args.ref)
        print(
            f"added synapse {args.name} at {src[:12]} ({sha[:8] if sha else ''}); "
            f"`pamd synapse pull {args.name}` brings it in"
        )
    elif args.verb == "pull":
        sha, pulled = synapse.pull(brain, args.name)
        for p in pulled:
            count = sum(1 for t in p.changes.values() if t is not None)
            print(f"{p.name}: {plural(count, 'file')} from {p.url} at {p.commit[:12]}")
        print(
            f"pulled in one commit ({sha[:8]})" if sha else "already up to date; nothing committed"
        )
    elif args.verb == "publish":
        sha, branch, paths = synapse.publish(brain, args.branch)
        if sha is None:
            print(f"{branch} already holds what this brain shares ({plural(len(paths), 'file')})")
        else:
            print(
                f"published {plural(len(paths), 'file')} to {branch} ({sha[:8]}); "
                f"push it: git push origin {branch}"
            )
    elif args.verb == "remove":
        sha, files = synapse.remove(brain, args.name)
        print(
            f"removed synapse {args.name} ({plural(len(files), 'pulled file')})"
            + (f" in one commit ({sha[:8]})" if sha else "; only its cache was left")
        )
    else:
        remotes = synapse.remotes(brain)
        files = synapse.synapse_files(brain)
        stray = synapse.unregistered(brain)
        for name, table in remotes.items():
            mine = [f for f in files if f.startswith(f"synapse/{name}/")]
            print(f"{name}\t{table.url}\t{plural(len(mine), 'file')}")
        for name in stray:
            mine = [f for f in files if f.startswith(f"synapse/{name}/")]
            print(
                f"{name}\tnot registered (`pamd synapse remove {name}` removes it)\t"
                f"{plural(len(mine), 'file')}"
            )
        if not remotes and not stray:
            print("no synapse remotes (pamd synapse add NAME URL)")
    return 0
