"""The agent's memory tools as library calls: each returns a Reply, the text an agent reads
and the same facts as data. `pamd mcp` serves them; the hooks use `boot`.

Every call opens the brain afresh (its config, its tree, its HEAD), so a long-lived caller
sees a compaction or a `git pull` made by another process at its next call; the search
index stays loaded between calls (pamd.recall.api keeps it, and refreshes it when the tree
changed). Recalls made here are logged: an agent's recall counts toward myelination.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from pamd.errors import PamdError

TYPES = ("decision", "user_intent", "context", "tool_result", "ephemeral")
RECALL_HINT = ("Use `expand` with an id (s-…) or path:line to read the raw messages behind a summary; "
               "`touch` an id whose memory you used.")


@dataclass
class Reply:
    text: str
    data: Any = field(default_factory=dict)


def open_brain(root: Path):
    from pamd.edge.brain import Brain

    brain = Brain.find(str(root), env=False)
    brain.recover_for_reading()
    return brain


def now_or_clock(now: datetime | None) -> datetime:
    from pamd.edge.clock import now_arg

    return now if now is not None else now_arg(None)


def _time(value: str | None, what: str, end_of_day: bool = False) -> datetime | None:
    from pamd.core.entry import time_bound

    if value is None or not str(value).strip():  # an agent's empty argument: no bound
        return None
    return time_bound(str(value), what, end_of_day)


def _tiers(tier: str | list[str] | None) -> tuple[str, ...]:
    if not tier:
        return ()
    items = [tier] if isinstance(tier, str) else list(tier)
    return tuple(t.strip() for item in items for t in str(item).split(",") if t.strip())


def recall(root: Path, query: str, k: int = 10, tier: str | list[str] | None = None,
           since: str | None = None, until: str | None = None, now: datetime | None = None,
           log: bool = True, exact: bool = False) -> Reply:
    from pamd.recall import api

    brain = open_brain(root)
    hits = api.recall(brain, query, k=k, tiers=_tiers(tier), since=_time(since, "since"),
                      until=_time(until, "until", end_of_day=True), now=now_or_clock(now), log=log,
                      mode="exact" if exact else "auto")
    data = [h.to_dict() for h in hits]
    if not hits:
        return Reply(f"No memory matches {query!r}. Try other words, or a wider tier/time range.",
                     {"query": query, "hits": []})
    how = "entries holding it, newest first" if getattr(hits, "mode", "") == "exact" else "best first"
    lines = [f"{len(hits)} hit{'s' if len(hits) != 1 else ''} for {query!r}, {how} "
             "(path:lines  relevance 0-1  id · time · role · tier):"]
    for n, h in enumerate(hits, 1):
        lines.append(f"[{n}] {h.to_text()}")
    more = getattr(hits, "total", None)
    if more and more > len(hits):
        lines.append(f"… {more - len(hits)} more entries hold it (raise k)")
    lines.append(RECALL_HINT)
    return Reply("\n".join(lines), {"query": query, "hits": data})


def remember(root: Path, text: str, role: str = "agent", type: str | None = None,
             importance: float | None = None, session: str = "mcp", now: datetime | None = None) -> Reply:
    from pamd.encode.ingest import remember as remember_one
    from pamd.encode.sources import normalize_text

    text = normalize_text(text or "")
    if not text:
        raise PamdError("nothing to remember: the text is empty")
    if type is not None and type not in TYPES:
        raise PamdError(f"unknown type {type!r}", f"use one of: {', '.join(TYPES)}")
    if importance is not None and not 0 <= importance <= 1:
        raise PamdError("importance must be within 0..1")
    role = (role or "agent").strip() or "agent"
    now = now_or_clock(now)
    brain = open_brain(root)
    e, sha = remember_one(brain, text, now, role, session, type, importance)
    data = {"id": e.id, "commit": sha, "new": bool(sha), "type": e.type, "importance": e.importance,
            "neuro": list(e.neuro)}
    if sha:
        return Reply(f"Remembered as {e.id} ({e.type}, importance {e.importance:.2f}; commit {sha[:8]}).", data)
    return Reply(f"Already remembered as {e.id}.", data)


def expand(root: Path, ref: str, all: bool = False) -> Reply:
    from pamd.consolidate.provenance import expand_ids, resolve_ref, shown
    from pamd.core.entry import fmt_time

    brain = open_brain(root)
    eid = resolve_ref(brain, ref)
    found = shown(expand_ids(brain, [eid]), between=all)
    data = [f.as_json() for f in found]
    lines = []
    for f in found:
        where = f.entry.path if f.rev == "WORKTREE" else f"{f.rev[:8]}:{f.entry.path}"
        lines.append(f"{'  ' * f.depth}{f.entry.id} · {f.entry.tier} · {fmt_time(f.entry.ts)} · "
                     f"{f.entry.role} ({where})")
        lines += [f"{'  ' * f.depth}  {line}" for line in f.entry.text.split("\n")]
    return Reply("\n".join(lines) or f"nothing behind {ref}", {"ref": ref, "id": eid, "entries": data})


def boot(root: Path, max_chars: int | None = None, budget: int | None = None,
         now: datetime | None = None, recent: bool = True) -> Reply:
    """The boot context; without `recent`, of the brain's own files only (STATE.md, DNA.md,
    PRELOAD.md, MEMORY.md), not the tiers' day files: quick on a brain of any size."""
    from pamd.core.paths import MEMORY, tier_of
    from pamd.edge.history import TreeView
    from pamd.myelin.boot import build

    if max_chars is not None and max_chars < 200:
        raise PamdError("max_chars must be at least 200")
    if budget is not None and budget <= 0:
        raise PamdError("budget must be a positive number of tokens")
    brain = open_brain(root)
    view = TreeView.at(brain, None)
    files = view.files() if recent else [f for f in view.files() if f == MEMORY or not tier_of(f)]
    out = build(view.read, files, view.config(), now or view.time(), budget, max_chars=max_chars)
    text = out.markdown()
    notes = [n for n in (out.conflicted_note(), out.over_budget_note()) if n]
    return Reply(text, {"name": out.name, "chars": len(text), "max_chars": max_chars,
                        "sections": [s.name for s in out.sections], "notes": notes})


def touch(root: Path, refs: list[str], now: datetime | None = None) -> Reply:
    from pamd.consolidate.provenance import resolve_ref
    from pamd.myelin.touch import touch as count

    if not refs:
        raise PamdError("name an entry id (or path:line) to touch")
    brain = open_brain(root)
    ids = [resolve_ref(brain, r, "touch") for r in refs]
    counted = count(brain, ids, now_or_clock(now), "check the id with recall")
    moved = [f"{i} counted for {h}, the summary that holds it now" for i, h in counted.items() if h != i]
    text = "; ".join([f"Noted {len(ids)} recall{'s' if len(ids) != 1 else ''}", *moved]) + "."
    return Reply(text, {"counted": counted})


def status(root: Path, now: datetime | None = None) -> Reply:
    from pamd.ops.status import status as brain_status

    brain = open_brain(root)
    st = brain_status(brain, now_or_clock(now))
    tiers = ", ".join(f"{t['tier']} {t['entries']}" for t in st["tiers"] if t["entries"])
    last = st["commits"][0] if st["commits"] else None
    lines = [f"Brain {st['name'] or '-'} at {st['brain']}",
             f"Entries per tier: {tiers or 'none yet'}",
             f"Index: {st['index']}",
             f"Due now: {' '.join(st['schedule']['due']) or 'nothing'}",
             f"Last pamd commit: {last['sha']} {last['date']} {last['subject']}" if last else "No pamd commit yet"]
    return Reply("\n".join(lines), st)
