from __future__ import annotations

HELP = "check the facts in probes.jsonl still resolve with recall; exit 1 if one is lost"
EXAMPLE = """echo '{"question": "which database for billing?", "expect_text": "Postgres"}' >> probes.jsonl
pamd probe
pamd probe --json -k 5"""


def add_arguments(p) -> None:
    p.add_argument("--file", default="probes.jsonl", help="probes file inside the brain (default probes.jsonl)")
    p.add_argument("-k", type=int, default=10, metavar="N", help="a probe must resolve within the top N hits")
    p.add_argument("--json", action="store_true")


def run(args) -> int:
    import json

    from pamd.edge.brain import Brain
    from pamd.fidelity.probe import load, run_probes

    brain = Brain.find(args.brain)
    results = run_probes(brain, load(brain, args.file), args.now, args.k)
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
