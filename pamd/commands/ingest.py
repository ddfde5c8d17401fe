from __future__ import annotations

import sys

HELP = "take transcripts into L0: tag, score, redact secrets, commit once"
EXAMPLE = """pamd ingest session.jsonl chat.json
pamd ingest ~/.claude/projects/app/*.jsonl --format claude-code
pamd ingest ~/.codex/sessions/2026/11/29/rollout-*.jsonl  # Codex CLI
cat timed.jsonl | pamd ingest -  # untimed stdin takes the run's time: new each run
pamd --brain ~/brains/agent ingest -  # as a Claude Code hook: the session its input names"""


def add_arguments(p) -> None:
    p.add_argument("files", nargs="+", metavar="FILE",
                   help="transcript files, or - for stdin (untimed messages there take the run's time:"
                   " piped again, they are stored again; a Claude Code hook's input there: the"
                   " transcript it names)")
    p.add_argument("--format", choices=["pamd", "openai", "claude-code", "codex", "markdown"],
                   help="force the input format (default: detect)")


def run(args) -> int:
    from pamd.core.words import plural
    from pamd.edge.brain import Brain
    from pamd.encode.ingest import ingest, read_inputs

    brain = Brain.find(args.brain)
    inputs, unwritten = read_inputs(args.files, sys.stdin.buffer.read)
    for f in unwritten:
        print(f"pamd: note: {f}: no transcript written yet (the session said nothing): nothing to ingest",
              file=sys.stderr)
    if unwritten and not inputs:
        print("nothing new: no transcript to read yet")
        return 0
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
