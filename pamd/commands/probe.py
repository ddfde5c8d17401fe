from __future__ import annotations

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
    import json

    from pamd.edge.brain import Brain
    from pamd.fidelity.probe import check, unrunnable

    with unrunnable():
        brain = Brain.find(args.brain)
        out = check(brain, args.now, args.file, args.k, args.against)
    if args.json:
        print(json.dumps(out.rows(), indent=2, ensure_ascii=False))
    else:
        print("\n".join(out.lines()))
    return 1 if out.new else 0
