from __future__ import annotations

import sys
from pathlib import Path

HELP = "take transcripts into L0: tag, score, redact secrets, commit once"
EXAMPLE = """pamd ingest session.jsonl chat.json
pamd ingest ~/.claude/projects/app/*.jsonl --format claude-code
cat timed.jsonl | pamd ingest -  # untimed stdin takes the run's time: new each run"""


def add_arguments(p) -> None:
    p.add_argument("files", nargs="+", metavar="FILE",
                   help="transcript files, or - for stdin (untimed messages there take the run's time:"
                   " piped again, they are stored again)")
    p.add_argument("--format", choices=["pamd", "openai", "claude-code", "markdown"],
                   help="force the input format (default: detect)")


def run(args) -> int:
    from pamd.core.words import plural
    from pamd.edge.brain import Brain
    from pamd.encode.ingest import STDIN, ingest
    from pamd.errors import PamdError

    brain = Brain.find(args.brain)
    inputs = []
    for f in args.files:
        if f == "-":
            inputs.append((STDIN, sys.stdin.buffer.read()))
            continue
        p = Path(f)
        if p.is_dir():
            raise PamdError(f"{f} is a directory", f"name its transcripts, e.g. {f.rstrip('/')}/*.jsonl")
        if not p.is_file():
            raise PamdError(f"{f}: no such file", "check the path")
        inputs.append((str(p) if str(p) != STDIN else f"./{p}", p.read_bytes()))  # a file named stdin
    plan, sha = ingest(brain, inputs, args.now, args.format)
    if sha:
        print(f"ingested {plan.summary_line()} ({sha[:8]})")
    else:
        print(f"nothing new: {plural(plan.skipped, 'entry')} already in the brain")
    for note in plan.notes:
        print(f"pamd: note: {note}", file=sys.stderr)
    if plan.stamped:
        print(f"pamd: note: {plural(plan.stamped, 'message')} from stdin had no time and took the run's"
              " (piped again, stored again; ingest a file or give each a ts to dedupe)", file=sys.stderr)
    return 0
