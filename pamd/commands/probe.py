from __future__ import annotations

DEFAULT = "probes.jsonl"
HELP = "check the facts in probes.jsonl still resolve with recall; exit 1 if one is lost, 2 if it cannot run"
EXAMPLE = """echo '{"question": "which database for billing?", "expect_text": "Postgres"}' >> probes.jsonl
pamd probe
pamd probe --json -k 5
pamd probe --against HEAD            # fail only for a probe that resolves at HEAD and not here
pamd probe --brain ../defrag-worktree --against main"""


def add_arguments(p) -> None:
    p.add_argument("--file", default=None,
                   help="the probes file (default: probes.jsonl at the brain's root); a path from the cwd, "
                        "else from the brain's root; it may live outside the brain (a shared set of probes)")
    p.add_argument("-k", type=int, default=10, metavar="N", help="a probe must resolve within the top N hits")
    p.add_argument("--against", metavar="REV",
                   help="also run the probes that do not resolve here on the brain as committed at REV; "
                        "only one that resolves there and not here is lost (exit 1): a fact newly lost")
    p.add_argument("--json", action="store_true")


def run(args) -> int:
    from pamd.errors import PamdError

    try:
        return _run(args)
    except PamdError as exc:
        # 1 says "a probe is lost": a probe run that could not run at all says 2, so a
        # script (the nightly workflow, a hook) tells a bad probes file from a lost fact.
        if exc.exit_code == 1:
            exc.exit_code = 2
        raise


def _run(args) -> int:
    import json

    from pamd.consolidate.provenance import History
    from pamd.edge.brain import Brain
    from pamd.errors import PamdError
    from pamd.fidelity.probe import load, run_probes, run_probes_at

    brain = Brain.find(args.brain)
    own = args.file is None  # the default is the brain's own file, wherever the cwd is
    args.file = args.file or DEFAULT
    base = None
    if args.against is not None:
        base = brain.repo.rev_parse(args.against) if args.against.strip() else None
        if base is None:
            raise PamdError(f"--against {args.against!r} is no commit of the brain {brain.root}",
                            "name a branch, a tag or a commit, e.g. --against HEAD")
    history = History(brain)  # one reading of the brain and its history for both
    probes = load(brain, probes_path(brain.root.resolve(), args.file, own), history)
    results = run_probes(brain, probes, args.now, args.k, history)
    lost = [r for r in results if r.rank is None]
    # With --against: the lost ones that resolve at REV (the rest were lost there too).
    there = {id(r.probe): b for r, b in zip(lost, run_probes_at(brain, base, [r.probe for r in lost],
                                                                     args.now, args.k), strict=True)} \
        if base and lost else {}
    new = [r for r in lost if base is None or there[id(r.probe)].rank is not None]
    if args.json:
        rows = []
        for r in results:
            row = {"question": r.probe.question, "line": r.probe.line, "rank": r.rank, "how": r.how,
                   "hit": r.hit}
            if base:
                row["lost"] = r in new
                if r.rank is None:  # where it stood at REV: null there too means not lost by the change
                    row["rank_at_against"] = there[id(r.probe)].rank
            rows.append(row)
        print(json.dumps(rows, indent=2, ensure_ascii=False))
    else:
        for r in results:
            if r.rank:
                state = f"ok   rank {r.rank} ({r.how}) {r.hit}"
            elif r in new:
                state = "LOST" + (f" (resolves at {base[:8]}: {there[id(r.probe)].hit})" if base else "")
            else:
                state = f"not found (nor at {base[:8]}: not lost by this change)"
            # a lost probe says what it looked for: the owner reads this in a hook's output or
            # a pull request, far from the probes file
            want = "" if r.rank else f"  [expects {_expected(r.probe)}]"
            print(f"{args.file}:{r.probe.line}: {state}  {r.probe.question}{want}")
        tail = ""
        if base and lost:
            tail = f"; {len(new)} lost since {base[:8]}, {len(lost) - len(new)} not found there either"
        print(f"{len(results) - len(lost)} of {len(results)} probes resolve{tail}")
    return 1 if new else 0


def _expected(probe) -> str:
    import json

    said = [json.dumps(probe.expect_text, ensure_ascii=False)] if probe.expect_text else []
    return " or ".join(said + probe.expect_ids)


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
