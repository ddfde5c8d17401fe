"""pamd recall: hybrid (BM25 + dense) search over every tier; hits name file and lines."""

from __future__ import annotations

import argparse
import json
import sys

HELP = "search the brain: each hit as `path:start-end  relevance  id · time · role · tier` and a snippet"
EXAMPLE = """
pamd recall 'when do we deploy v2'
pamd recall -k 5 --tier L0 --tier L1 --since 2026-11-01 'деплой'
pamd recall --exact ensure_worker          # every entry holding the identifier, newest first
pamd recall --json 'ship friday' | jq '.[0].location'
"""

EXPAND_LINES = 20  # raw messages shown per hit by --expand; the rest: `pamd expand`


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("query", nargs="+", help="what to look for (words in any language)")
    p.add_argument("-k", type=int, default=10, metavar="N", help="number of hits (default 10)")
    p.add_argument("--tier", action="append", default=[], metavar="TIER",
                   help="only this tier: L0..L4, daily, dna, synapse, memory (other files under memory/; "
                        "repeatable)")
    p.add_argument("--since", metavar="ISO", help="only entries at or after this time")
    p.add_argument("--until", metavar="ISO",
                   help="only entries at or before this time; a date alone means the end of that day (UTC)")
    p.add_argument("--json", action="store_true",
                   help="JSON list of hits: {id, summary, role, ts, tier, path, lines, location, relevance, "
                        "score, mode, snippet, ids, matched, text} (docs/recall.md)")
    m = p.add_mutually_exclusive_group()
    m.add_argument("--exact", action="store_true",
                   help="every entry holding the query as written (a whole identifier), newest first; "
                        "a query of one identifier (snake_case, CamelCase, a.dotted.path, --flag) is "
                        "looked up this way first unless --ranked")
    m.add_argument("--ranked", action="store_true", help="rank by meaning and words even for an identifier")
    p.add_argument("--expand", action="store_true",
                   help=f"also show the raw messages behind summary hits (via provenance): those the "
                        f"query matched first, marked *, then, in time order, those said nearest them, "
                        f"{EXPAND_LINES} a hit")
    log = p.add_mutually_exclusive_group()
    log.add_argument("--log", action="store_true",
                     help="count these hits as recalls (myelination); a person's queries do not count "
                          "unless asked, an agent's (the MCP server, the hooks) always do")
    log.add_argument("--no-log", action="store_true", help="do not count these hits (the default)")


def run(args: argparse.Namespace) -> int:
    from pamd.core.console import Progress
    from pamd.edge.brain import Brain
    from pamd.recall import api
    from pamd.recall.expanded import expand_hits
    from pamd.recall.store.report import conflicted_note

    brain = Brain.find(args.brain)
    brain.recover_for_reading()
    # The first recall after an ingest embeds the new entries: say so on a terminal.
    progress = Progress(what="index is stale; embedding new chunks")
    try:
        hits = api.recall(
            brain, " ".join(args.query), k=args.k, tiers=tuple(args.tier),
            since=_time(args.since, "--since"), until=_time(args.until, "--until", end_of_day=True),
            now=args.now, log=args.log, progress=progress,
            mode="exact" if args.exact else "ranked" if args.ranked else "auto",
        )
    finally:
        progress.done()  # an error starts on a line of its own
    note = conflicted_note(api.left_out(brain))
    if note:
        print(f"pamd: warning: {note}", file=sys.stderr)
    expanded = expand_hits(brain, hits) if args.expand else {}
    if args.json:
        out = []
        for h in hits:
            d = h.as_json()
            if args.expand:  # every line (a program slices what it wants), matched first
                x = expanded.get(h.label)
                d["expanded"] = x.lines(x.matched + x.rest) if x else []
                d["expanded_matched"] = [e.id for e in x.matched] if x else []
                if x and x.error:
                    d["expand_error"] = x.error
            out.append(d)
        print(json.dumps(out, ensure_ascii=False, indent=1))
        return 0
    if not hits:
        print("no hits")
        return 0
    for h in hits:
        print(h.to_text())
        x = expanded.get(h.label)
        if x is None:
            continue
        if x.error:
            print(f"      (cannot expand: {x.error})")
            continue
        rest = x.shown(EXPAND_LINES - len(x.matched))
        for line in x.lines(x.matched):
            print(f"    * {line}")
        for line in x.lines(rest):
            print(f"      {line}")
        if len(rest) < len(x.rest):
            print(f"      … {len(x.rest) - len(rest)} more (pamd expand {' '.join(x.summaries)})")
    if hits.mode == "exact" and hits.total > len(hits):
        print(f"… {hits.total - len(hits)} more entries hold it (-k {hits.total} shows them all)")
    return 0


def _time(value: str | None, flag: str, end_of_day: bool = False):
    from pamd.core.entry import time_bound

    # an empty value is a bad time there, as `--tier ''` is an unknown tier
    return None if value is None else time_bound(value, flag, end_of_day)
