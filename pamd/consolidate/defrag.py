"""The nightly extras: archive daily notes into L0, and a short reflection."""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from pamd.core.entry import Entry, fmt_time
from pamd.core.fmt import Doc
from pamd.core.paths import DAILY_DIR, tier_path
from pamd.core.words import plural
from pamd.edge.brain import Brain

# Daily notes an agent writes next to the tiers, e.g. memory/2026-11-29.md.
DAILY_NOTE = re.compile(r"^memory/(\d{4}-\d{2}-\d{2})\.md$")


@dataclass
class Prepared:
    docs: dict[str, Doc]
    changes: dict[str, str | None] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    fresh: set[str] = field(default_factory=set)  # entries this run adds: compacted by a later run


def prepare(brain: Brain, docs: dict[str, Doc], now: datetime) -> Prepared:
    """Fold daily notes older than today into L0 and move them to memory/daily/."""
    from pamd.core.fmt import render_doc
    from pamd.encode import sources
    from pamd.encode.ingest import known_ids, ledger_path, legacy_id, make_entries, redactor
    from pamd.encode.neurotag import Tagger

    out = Prepared(docs=dict(docs))
    base = brain.path("memory")
    if not base.is_dir():
        return out
    today = now.strftime("%Y-%m-%d")
    notes = sorted(p for p in base.glob("*.md") if DAILY_NOTE.match(f"memory/{p.name}"))
    notes = [p for p in notes if p.stem < today]
    # A note with uncommitted edits (or never committed) is the person's or the agent's
    # until it is committed: it waits for a later night, and the rest of defrag goes on.
    dirty = set(brain.repo.dirty([f"memory/{p.name}" for p in notes]))
    waiting = [f"memory/{p.name}" for p in notes if f"memory/{p.name}" in dirty]
    notes = [p for p in notes if f"memory/{p.name}" not in dirty]
    if waiting:
        out.notes.append(f"Left {plural(len(waiting), 'daily note')} with uncommitted edits for a later night: "
                         f"{', '.join(waiting[:3])}{' …' if len(waiting) > 3 else ''}.")
    if not notes:
        return out
    known = known_ids(brain)
    tagger = Tagger.from_config(brain.config, brain.root)
    fresh: list[Entry] = []
    ledger: dict[str, set[str]] = {}
    appended: list[str] = []
    for p in notes:
        rel = f"memory/{p.name}"
        text = brain.read(rel) or ""
        # The note is committed and archived whole: an item over 1 MiB is cut in L0, as
        # long tool output is, rather than stopping every night's defrag.
        msgs = sources.read(text.encode("utf-8"), p.name, "markdown", fit=True)
        entries, _ = make_entries(msgs, tagger, redactor(brain.config), now)
        for e, m in zip(entries, msgs, strict=True):
            if e.id not in known and legacy_id(m) in known:  # ingested before under its older id
                known.add(e.id)
                ledger.setdefault(ledger_path(e.ts), set()).add(e.id)
            elif e.id not in known:
                known.add(e.id)
                fresh.append(e)
                ledger.setdefault(ledger_path(e.ts), set()).add(e.id)
        out.changes[rel] = None
        archive = f"{DAILY_DIR}/{p.name}"
        archived = brain.read(archive)
        if archived is None:
            out.changes[archive] = text
        elif archived != text:
            # A later note of an already archived day: keep both, the first one first.
            out.changes[archive] = archive_append(archived, text, p.name, now)
            appended.append(archive)
    for e in fresh:
        rel = tier_path("L0", e.ts.strftime("%Y-%m-%d"))
        doc = out.docs.get(rel) or Doc({"tier": "L0", "date": rel[-13:-3]}, f"# L0 · {rel[-13:-3]}", [], 1)
        out.docs[rel] = Doc(doc.meta, doc.preamble, sorted([*doc.entries, e], key=lambda x: x.ts),
                            doc.body_line)
        out.changes[rel] = render_doc(out.docs[rel].meta, out.docs[rel].preamble, out.docs[rel].entries)
    for rel, ids in ledger.items():
        old = brain.read(rel) or ""
        out.changes[rel] = "\n".join(sorted(set(old.split()) | ids)) + "\n"
    out.fresh = {e.id for e in fresh}
    out.notes.append(f"Archived {plural(len(notes), 'daily note')} into {DAILY_DIR}/ "
                     f"({plural(len(fresh), 'new L0 entry', 'new L0 entries')}).")
    if appended:
        out.notes.append(f"Appended to existing archives (a later note of the same day): {', '.join(appended)}.")
    return out


def archive_append(archived: str, text: str, name: str, now: datetime) -> str:
    """An archived daily note with a later note of the same day after it, never over it."""
    mark = f"<!-- pamd defrag {fmt_time(now)}: a later memory/{name}, appended -->"
    return f"{archived.rstrip()}\n\n---\n\n{mark}\n\n{text}"


def reflection(plan: Any, after: list[Entry], now: datetime) -> list[str]:
    """A few plain sentences for the defrag commit: what the day was about."""
    lines = []
    recent = [d.entry for d in plan.decisions if d.entry.age_hours(now) <= 24]
    tags = Counter(t for e in recent for t in e.neuro)
    if tags:
        mix = ", ".join(f"{t} ({n})" for t, n in tags.most_common(3))
        lines.append(f"Reflection: the last day was mostly {mix}.")
    recalled = sorted((e for e in after if e.recalls), key=lambda e: -e.recalls)[:3]
    if recalled:
        lines.append("Most recalled: " + ", ".join(f"{e.id} ({e.recalls})" for e in recalled) + ".")
    decisions = [e for e in recent if e.type == "decision"]
    if decisions:
        lines.append(f"Decisions made: {len(decisions)}.")
    return lines
