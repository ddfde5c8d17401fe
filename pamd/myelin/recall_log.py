"""The recall log: every hit `pamd recall` returns, appended at once to .pamd/recall.log.

The log is untracked and append-only. Its first line names it (a random id);
each pipeline commit folds the lines after the offset named by the previous
fold of *this* log, its `Pamd-Recall-Log: ID@OFFSET` trailer, into the entries'
`recalls=` counts, and writes its own trailer. So a fold is part of the commit
itself: a killed run folds nothing, a landed one can never be folded twice.
Clones of one brain on two machines each have their own log: after a pull, the
newest marker in history may be the other machine's, which says nothing about
how far this log was folded (`marker`, `log_id`).
"""

from __future__ import annotations

import json
import os
import re
import uuid
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from pamd.core.entry import fmt_time

LOG = "recall.log"
TRAILER = "Pamd-Recall-Log"


def _path(state_dir: Path) -> Path:
    return state_dir / LOG


def _id_of(first: bytes) -> str:
    try:
        log_id = json.loads(first)["log"]
    except (ValueError, KeyError, TypeError):
        return "unnamed"
    # A hand-edited name is used in a `git log --grep` pattern: keep it plain.
    return log_id if isinstance(log_id, str) and re.fullmatch(r"[A-Za-z0-9_-]+", log_id) else "unnamed"


def log_id(state_dir: Path) -> str | None:
    """This machine's log's name (its first line), None when nothing was logged here yet."""
    p = _path(state_dir)
    if not p.is_file():
        return None
    with p.open("rb") as f:
        return _id_of(f.readline().rstrip(b"\n"))


def marker(message: str, log_id: str) -> str | None:
    """The furthest fold of log `log_id` a commit message records ("ID@OFFSET"), if any.

    A squash merge may hold several pamd messages, trailers of other machines' logs
    among them: only this log's count, and the largest offset is the latest fold."""
    offsets = [int(m) for m in re.findall(rf"^{TRAILER}: {re.escape(log_id)}@(\d+)[ \t]*$", message, re.M)]
    return f"{log_id}@{max(offsets)}" if offsets else None


def append(state_dir: Path, ids: list[str], query: str, now: datetime, source: str = "recall",
           leaves: Sequence[tuple[str, str]] = ()) -> None:
    """Record hits; O_APPEND writes of one line each are atomic enough for concurrent recalls.

    `leaves` are (summary, raw leaf) pairs: the words behind a summary in `ids` that matched."""
    if not ids:
        return
    state_dir.mkdir(parents=True, exist_ok=True)
    p = _path(state_dir)
    fd = os.open(p, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        if os.fstat(fd).st_size == 0:
            os.write(fd, (json.dumps({"log": uuid.uuid4().hex[:12]}) + "\n").encode())
        rec: dict[str, object] = {"ts": fmt_time(now), "ids": ids, "query": query[:200], "via": source}
        if leaves:
            rec["leaves"] = [list(pair) for pair in leaves]
        line = json.dumps(rec, ensure_ascii=False)
        os.write(fd, (line + "\n").encode("utf-8"))
    finally:
        os.close(fd)


@dataclass(frozen=True)
class Pending:
    counts: Counter
    last_seen: dict[str, str]  # id -> YYYY-MM-DD of its latest recall
    marker: str  # "ID@OFFSET" to write as the trailer, "" when there is no log
    leaves: Counter = field(default_factory=Counter)  # (summary, raw leaf) -> recalls through it


def pending(state_dir: Path, folded: str | None) -> Pending:
    """Recalls logged since the fold marker `folded`: this log's latest, from history (`marker`)."""
    p = _path(state_dir)
    if not p.is_file():
        return Pending(Counter(), {}, "")
    return _read(p.read_bytes(), folded)


def _read(data: bytes, folded: str | None) -> Pending:
    first, _, _ = data.partition(b"\n")
    log_id = _id_of(first)
    start = len(first) + 1
    if folded and folded.startswith(log_id + "@"):
        try:
            start = max(start, int(folded.split("@", 1)[1]))
        except ValueError:
            pass
    end = data.rfind(b"\n") + 1  # only whole lines
    counts: Counter = Counter()
    seen: dict[str, str] = {}
    leaves: Counter = Counter()
    for raw in data[start:end].split(b"\n"):
        if not raw.strip():
            continue
        try:
            rec = json.loads(raw)
            day = str(rec["ts"])[:10]
            ids = [str(eid) for eid in rec["ids"]]
            pairs: dict[str, str] = {}  # one leaf per summary and line: its recall's
            for s, leaf in rec.get("leaves") or []:
                pairs.setdefault(str(s), str(leaf))
        except (ValueError, KeyError, TypeError, AttributeError):
            continue  # a torn or hand-edited line is skipped, not fatal
        for eid in ids:
            counts[eid] += 1
            seen[eid] = max(seen.get(eid, ""), day)
        for s, leaf in pairs.items():
            if s in ids:
                leaves[(s, leaf)] += 1
    return Pending(counts, seen, f"{log_id}@{max(end, start)}", leaves)
