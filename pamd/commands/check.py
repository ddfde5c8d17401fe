from __future__ import annotations

import json

HELP = "validate the brain's files against the format; report path:line of each problem"
EXAMPLE = "pamd check\npamd check memory/L0/2026-11-30.md DNA.md"


def add_arguments(p) -> None:
    p.add_argument("files", nargs="*", help="only these brain files (default: all)")
    p.add_argument("--json", action="store_true", help="problems as JSON")


def brain_rel(root, name: str, dir_hint: str = "name its files, or run `pamd check` for the whole brain") -> str:
    """A FILE argument as a path inside the brain: from the cwd when the cwd is in the brain and
    holds it, else from the brain's root (a hit's `MEMORY.md:12` from a project folder with
    PAMD_BRAIN set means the brain's MEMORY.md, not the project's)."""
    from pathlib import Path

    from pamd.errors import PamdError

    path = Path(name).expanduser()
    if not path.is_absolute() and not (Path.cwd().resolve().is_relative_to(root) and path.exists()):
        path = root / path
    path = path.resolve()
    if not path.is_relative_to(root):
        raise PamdError(f"{name} is not inside the brain at {root}", "name a file of this brain")
    if path.is_dir():
        raise PamdError(f"{name} is a directory", dir_hint)
    if not path.is_file():
        raise PamdError(f"{name}: no such file in the brain", "`git ls-files` lists them")
    return path.relative_to(root).as_posix()


def run(args) -> int:
    from pamd.edge.brain import Brain
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
