from __future__ import annotations

DEFAULT = "probes.jsonl"
HELP = "check the facts in probes.jsonl still resolve with recall; exit 1 if one is lost"
EXAMPLE = """echo '{"question": "which database for billing?", "expect_text": "Postgres"}' >> probes.jsonl
pamd probe
pamd probe --json -k 5"""


def add_arguments(p) -> None:
    p.add_argument("--file", default=None,
                   help="the probes file (default: probes.jsonl at the brain's root); a path from the cwd, "
                        "else from the brain's root; it may live outside the brain (a shared set of probes)")
    p.add_argument("-k", type=int, default=10, metavar="N", help="a probe must resolve within the top N hits")
    p.add_argument("--json", action="store_true")


def run(args) -> int:
    import json

    from pamd.edge.brain import Brain
    from pamd.fidelity.probe import load, run_probes

    brain = Brain.find(args.brain)
    own = args.file is None  # the default is the brain's own file, wherever the cwd is
    args.file = args.file or DEFAULT
    results = run_probes(brain, load(brain, probes_path(brain.root.resolve(), args.file, own)), args.now, args.k)
    lost = [r for r in results if r.rank is None]
    if args.json:
        print(json.dumps([{"question": r.probe.question, "line": r.probe.line, "rank": r.rank,
                           "how": r.how, "hit": r.hit} for r in results], indent=2, ensure_ascii=False))
    else:
        for r in results:
            state = f"ok   rank {r.rank} ({r.how}) {r.hit}" if r.rank else "LOST"
            print(f"{args.file}:{r.probe.line}: {state}  {r.probe.question}")
        print(f"{len(results) - len(lost)} of {len(results)} probes resolve")
    return 1 if lost else 0


def probes_path(root, name: str, brains_own: bool = False) -> str:
    """--file as `load` reads it: brain-relative inside the brain, else absolute (outside is fine).

    A relative name is taken from the cwd when it is there, else from the brain's root; the
    default (`brains_own`) always from the root."""
    from pathlib import Path

    from pamd.errors import PamdError

    path = Path(name).expanduser()
    if not path.is_absolute() and (brains_own or not path.exists()):
        path = root / path
    path = path.resolve()
    if path.is_dir():
        raise PamdError(f"{name} is a directory", "name a .jsonl file of probes")
    return path.relative_to(root).as_posix() if path.is_relative_to(root) else str(path)
