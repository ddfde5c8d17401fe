from __future__ import annotations

import json
import sys

HELP = "entries and tokens per tier against budgets, recent pamd commits, index freshness"
EXAMPLE = "pamd status\npamd status --json"


def add_arguments(p) -> None:
    p.add_argument("--json", action="store_true", help="machine-readable output")


def run(args) -> int:
    from pamd.edge.brain import Brain
    from pamd.ops.status import status

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
    print(summarizer_line(st["summarizer"]))
    print("recent pamd commits:")
    for c in st["commits"] or [{"sha": "", "date": "", "subject": "(none)"}]:
        print(f"  {c['sha']} {c['date']} {c['subject']}")
    return 0


def summarizer_line(sp: dict) -> str:
    """Which summarizer runs, and what it costs a day at the rate of recent runs."""
    from pamd.core.words import plural

    model = f" ({sp['model']})" if sp["model"] else ""
    if sp["backend"] == "extractive" and not sp["cost_usd"]:
        return "summarizer: extractive (local, free)"
    if not sp["runs"]:
        return f"summarizer: {sp['backend']}{model}, no summarizing run in the last 7 days"
    span = "day's" if sp["days"] <= 1 else f"{sp['days']:g} days'"
    return (f"summarizer: {sp['backend']}{model}, ${sp['cost_usd_per_day']:.2f}/day at the last {span} rate "
            f"({plural(sp['runs'], 'run')}, {sp['tokens_in_per_day']:,} LLM tokens in and "
            f"{sp['tokens_out_per_day']:,} out a day)")
