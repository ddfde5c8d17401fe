from __future__ import annotations

HELP = "show the agent's cognitive snapshot (STATE.md), now or as it was at a commit or date"
EXAMPLE = "pamd state\npamd state --at 2026-11-20\npamd state --at HEAD~3 --json"


def add_arguments(p) -> None:
    p.add_argument("--at", metavar="COMMIT|DATE",
                   help="the snapshot as of that commit or date; a DATE: the last commit whose time "
                        "(its Pamd-Now, else its commit date) is at or before it; no zone = UTC, "
                        "a date alone = the end of that day")
    p.add_argument("--json", action="store_true")


def run(args) -> int:
    import json

    from pamd.core.fmt import FormatError, split_frontmatter
    from pamd.core.paths import STATE
    from pamd.edge.brain import Brain
    from pamd.edge.history import TreeView
    from pamd.errors import PamdError
    from pamd.myelin.boot import STATE_KEYS, _yaml_lists

    brain = Brain.find(args.brain)
    view = TreeView.at(brain, args.at)
    text = view.read(STATE)
    if text is None:
        raise PamdError("this brain has no STATE.md at that point")
    try:
        meta, _, _ = split_frontmatter(text, STATE)
    except FormatError as exc:
        if view.rev is None:  # the work tree: an unresolved merge is named as one
            raise brain.format_error(exc.problem, "fix STATE.md's frontmatter") from None
        raise PamdError(str(exc.problem), "fix STATE.md's frontmatter") from None
    if args.json:
        print(json.dumps({k: meta.get(k) for k in STATE_KEYS}, indent=2, ensure_ascii=False, default=str))
    else:
        where = f" at {view.rev[:8]}" if view.rev else ""
        print(f"# STATE{where}\n")
        print(_yaml_lists(meta, STATE_KEYS) or "(empty)")
    return 0
