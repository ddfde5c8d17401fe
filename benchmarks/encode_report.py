"""What ingest makes of real Claude Code work: types, chatter, kept facts, L0 size.

    python benchmarks/encode_report.py                      # the shared sessions
    python benchmarks/encode_report.py DIR_OR_FILE.jsonl …  # any sessions (with their subagents/)

Ingests the sessions (each `SESSION.jsonl` with its `SESSION/subagents/*.jsonl`) into a
temporary brain through the real `ingest` and prints: the share of entries by type;
the share of the agent's narration lines ("Let me…", "Now I'll…", "Perfect!",
"Давайте…") that did not become ephemeral; how many error heads, commit messages,
close reasons, tickets, reports and compaction summaries were kept (and at what
importance); the L0 tokens; and the ingest time. Run it on the commit before a change
and after it to compare.
"""

from __future__ import annotations

import argparse
import re
import sys
import tempfile
import time
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path

from pamd.core.entry import count_tokens
from pamd.encode.ingest import ingest
from pamd.ops.layout import init_brain

SHARED = Path(__file__).resolve().parents[2] / "shared/bench/data/claude-code"
# Narration, recognised here independently of the tagger: a message whose first words
# announce a step or react, and that is short.
NARRATION = re.compile(
    r"\A\W*(?:let me|let's|now (?:let|i)|i'll|i will|perfect|great|good|excellent|looking at|давай|теперь|отлично"
    r"|сейчас)\b", re.IGNORECASE)


def inputs(paths: list[Path]) -> list[Path]:
    out: list[Path] = []
    for p in paths:
        files = sorted(p.glob("*.jsonl")) if p.is_dir() else [p]
        for f in files:
            out.append(f)
            out.extend(sorted((f.parent / f.stem / "subagents").glob("*.jsonl")))
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("paths", nargs="*", type=Path)
    args = ap.parse_args(argv)
    if args.paths:
        files = inputs(args.paths)
    else:  # the three long sessions that have subagents
        files = inputs([f for f in sorted(SHARED.glob("*.jsonl")) if (SHARED / f.stem / "subagents").is_dir()])
    if not files:
        print("no sessions found", file=sys.stderr)
        return 1
    with tempfile.TemporaryDirectory() as tmp:
        brain, _ = init_brain(Path(tmp) / "brain")
        now = datetime(2026, 12, 1, tzinfo=UTC)
        data = [(str(f), f.read_bytes()) for f in files]
        t = time.perf_counter()
        plan, _ = ingest(brain, data, now)
        secs = time.perf_counter() - t
        entries = plan.entries
    n = len(entries)
    types = Counter(e.type for e in entries)
    print(f"{len(files)} files, {n} entries, ingest {secs:.2f} s")
    print("types: " + ", ".join(f"{t} {types[t] / n:.1%}" for t, _ in types.most_common()))
    narr = [e for e in entries if e.role == "assistant" and not e.text.startswith("[")
            and len(e.text) < 300 and NARRATION.match(e.text)]
    kept = [e for e in narr if e.type != "ephemeral"]
    print(f"narration-looking assistant messages: {len(narr)}, not ephemeral: {len(kept)} "
          f"({len(kept) / max(1, len(narr)):.1%}); importance >= 0.3 among them: "
          f"{sum(e.importance >= 0.3 for e in narr)}")
    errors = [e for e in entries if e.role == "tool" and e.text.startswith("[tool error]")]
    heads = [e for e in errors if "…[lines naming errors]…" in e.text or "…[the failures]…" in e.text]
    longer = [e for e in errors if len(e.text) > 2100]  # more than the 2,000-character prefix of old
    commits = [e for e in entries if e.text.startswith("[tool ") and re.search(r"\bgit\b[^\n]*\bcommit\b", e.text)
               and e.importance >= 0.85]
    closes = [e for e in entries if e.text.startswith("[tool ") and re.search(
        r"\b(?:bd (?:close|create|update)|gh (?:issue|pr) (?:close|create|merge))\b", e.text) and e.importance >= 0.85]
    high_tool = [e for e in entries if e.role == "tool" and e.importance >= 0.7]
    summaries = [e for e in entries if e.text.startswith("[compaction summary]")]
    reports = [e for e in entries if e.role == "assistant" and not e.text.startswith("[") and e.importance >= 0.8]
    written = [e for e in entries if e.text.startswith(("[tool Write]", "[tool Edit]", "[tool MultiEdit]"))]
    print(f"error outputs {len(errors)}: kept beyond 2,000 characters {len(longer)}, cut to head + failures + "
          f"error lines + tail {len(heads)}")
    print(f"commit calls at >= 0.85: {len(commits)}; close/create/update calls at >= 0.85: {len(closes)}; "
          f"tool outputs at >= 0.7 (tickets, subagent results, landed commits and closes): {len(high_tool)}; "
          f"agent reports at >= 0.8: {len(reports)}; compaction summaries: {len(summaries)}")
    print(f"files written or edited: {len(written)}, kept whole or condensed (over 600 characters): "
          f"{sum(len(e.text) > 700 for e in written)}")
    print(f"trash (< 0.15): {sum(e.importance < 0.15 for e in entries) / n:.1%}; "
          f"L0 tokens {sum(count_tokens(e.text) for e in entries)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
