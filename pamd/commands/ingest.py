from __future__ import annotations

import sys
from pathlib import Path

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
    from pamd.encode.ingest import STDIN, ingest
    from pamd.errors import PamdError

    brain = Brain.find(args.brain)
    inputs = []
    files = list(args.files)
    hooked, unwritten = set(), []
    while files:
        f = files.pop(0)
        if f == "-":
            data = sys.stdin.buffer.read()
            named = _hook_transcripts(data)
            if named is None:
                inputs.append((STDIN, data))
            else:
                files[:0] = named
                hooked.update(named)
            continue
        p = Path(f)
        if f in hooked and not (p.is_file() and p.stat().st_size):
            # Claude Code writes a session's file with its first message: a session that
            # ends having said nothing has none yet. Nothing to take in, not an error.
            unwritten.append(f)
            continue
        if p.is_dir():
            raise PamdError(f"{f} is a directory", f"name its transcripts, e.g. {f.rstrip('/')}/*.jsonl")
        if not p.is_file():
            raise PamdError(f"{f}: no such file", "check the path")
        inputs.append((str(p) if str(p) != STDIN else f"./{p}", p.read_bytes()))  # a file named stdin
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


def _hook_transcripts(data: bytes) -> list[str] | None:
    """The transcripts a Claude Code hook's input names (its `transcript_path`, and a
    finished subagent's `agent_transcript_path`), or None when stdin is no such input."""
    import json

    try:
        obj = json.loads(data)
    except (ValueError, RecursionError):
        return None
    if not (isinstance(obj, dict) and isinstance(obj.get("hook_event_name"), str)
            and isinstance(obj.get("transcript_path"), str) and obj["transcript_path"]):
        return None
    extra = obj.get("agent_transcript_path")
    return [obj["transcript_path"], *([extra] if isinstance(extra, str) and extra else [])]
