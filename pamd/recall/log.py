"""The recall log: every hit `pamd recall` returns, one JSON line each, in .pamd/.

Untracked and append-only; the next pipeline commit folds it into the tree's
recall counts (myelination). A line: {"ts", "query", "ids", "path", "lines"}.
"""

from __future__ import annotations

import json
import os
from datetime import datetime
from pathlib import Path

from pamd.core.entry import fmt_time

LOG = "recall.jsonl"


def append(state_dir: Path, query: str, hits, now: datetime) -> None:
    if not hits:
        return
    state_dir.mkdir(parents=True, exist_ok=True)
    ts = fmt_time(now)
    lines = "".join(
        json.dumps({"ts": ts, "query": query, "ids": h.ids, "path": h.path,
                    "lines": [h.start, h.end]}, ensure_ascii=False) + "\n"
        for h in hits
    )
    # one write(2) on an O_APPEND fd: concurrent recalls never interleave inside a line
    fd = os.open(state_dir / LOG, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    try:
        os.write(fd, lines.encode("utf-8"))
    finally:
        os.close(fd)


def read(state_dir: Path) -> list[dict]:
    """All logged hits; a torn or foreign line is skipped, not fatal."""
    out = []
    try:
        text = (state_dir / LOG).read_text("utf-8")
    except (OSError, UnicodeDecodeError):
        return out
    for line in text.splitlines():
        try:
            rec = json.loads(line)
        except ValueError:
            continue
        if isinstance(rec, dict):
            out.append(rec)
    return out
