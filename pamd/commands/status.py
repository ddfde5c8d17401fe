from __future__ import annotations

import json
import sys

HELP = "entries and tokens per tier against budgets, recent pamd commits, index freshness"
EXAMPLE = "pamd status\npamd status --json"


def add_arguments(p) -> None:
    p.add_argument("--json", action="store_true", help="machine-readable output")


def run(args) -> int:
    from pamd.edge.brain import Brain
    from pamd.edge.status import status

    brain = Brain.find(args.brain)
    brain.recover_for_reading()
    st = status(brain, args.now)
    if args.json:
        print(json.dumps(st, indent=2))
        return 0
    print(f"brain {st['brain']}  ({st['name']})")
    print(f"{'tier':<5}{'entries':>9}{'tokens':>10}{'budget':>10}  {'neuro':<}")
    for t in st["tiers"]:
        budget = f"{t['budget']:,}" if t["budget"] else "-"
        flag = "  OVER" if t["budget"] and t["tokens"] > t["budget"] else ""
        print(f"{t['tier']:<5}{t['entries']:>9}{t['tokens']:>10,}{budget:>10}  {t['neuro']}{flag}")
    print(f"index: {st['index']}")
    bt = st["boot"]
    print("boot: " + ", ".join(f"{rel} {n:,}" for rel, n in bt["tokens"].items())
          + f" tokens (budget {bt['budget']:,})")
    if bt["warning"]:
        print(f"pamd: warning: {bt['warning']}", file=sys.stderr)
    sc = st["schedule"]
    defrag = ("defrag off (left to the nightly pull-request workflow or a person)" if sc["defrag_at"] == "off"
              else f"defrag daily at {sc['defrag_at']} UTC")
    print(f"schedule: compact every {sc['compact_every_minutes']:g} min, {defrag}; "
          f"due now: {' '.join(sc['due']) or 'nothing'}")
    if sc["ahead"]:
        print(f"pamd: warning: {sc['ahead']}", file=sys.stderr)
    print("recent pamd commits:")
    for c in st["commits"] or [{"sha": "", "date": "", "subject": "(none)"}]:
        print(f"  {c['sha']} {c['date']} {c['subject']}")
    return 0
