from __future__ import annotations

import json

HELP = "validate the brain's files against the format; report path:line of each problem"
EXAMPLE = "pamd check\npamd check memory/L0/2026-11-30.md DNA.md"


def add_arguments(p) -> None:
    p.add_argument("files", nargs="*", help="only these brain files (default: all)")
    p.add_argument("--json", action="store_true", help="problems as JSON")


def run(args) -> int:
    from pamd.edge.brain import Brain
    from pamd.edge.refs import brain_rel
    from pamd.ops.check import check_brain, problems_json

    brain = Brain.find(args.brain)
    only = [brain_rel(brain.root.resolve(), f) for f in args.files] if args.files else None
    problems = check_brain(brain, only)
    if args.json:
        print(json.dumps(problems_json(problems), indent=2))
    else:
        for p in problems:
            print(p)
        if not problems:
            print("brain format ok")
    return 1 if problems else 0
