"""Ingest: messages in, tagged and scored L0 entries out, one commit per run.

`plan_ingest` is pure (messages, what the brain already holds, config, now →
the new file texts); `ingest` is the edge that reads inputs, plans and commits.
Re-ingesting the same transcript adds nothing: entry ids are content hashes,
and the ledger (memory/ledger/YYYY-MM.txt) remembers every id ever ingested,
also after compaction has moved the raw text out of the tree. A timed message
whose session is only the input's name (pamd and OpenAI formats without a
`session`) is also remembered by a second id without the session (chained to the
message before it), so the same transcript under another name (a copy, stdin)
adds nothing either.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from pamd.core.config import Settings, settings
from pamd.core.entry import NEURO, Entry, entry_id, fmt_time
from pamd.core.fmt import render_doc
from pamd.core.message import one_line
from pamd.core.paths import tier_path
from pamd.core.redact import Redactor
from pamd.core.words import plural
from pamd.edge.brain import Brain
from pamd.encode import sources
from pamd.encode.neurotag import Tagger
from pamd.errors import PamdError

LEDGER_DIR = "memory/ledger"
STDIN = "stdin"  # the input name `pamd ingest -` gives standard input


@dataclass
class IngestPlan:
    entries: list[Entry]
    changes: dict[str, str] = field(default_factory=dict)
    skipped: int = 0
    redacted: Counter = field(default_factory=Counter)
    stamped: int = 0  # new entries from stdin that had no time and took the run's
    notes: list[str] = field(default_factory=list)  # inputs' unfinished last lines, left for the next run

    def summary_line(self) -> str:
        return f"{plural(len(self.entries), 'new entry', 'new entries')}, {self.skipped} already known"


def ledger_path(ts: datetime) -> str:
    return f"{LEDGER_DIR}/{ts.strftime('%Y-%m')}.txt"


def make_entries(messages: list[sources.Message], tagger: Tagger, redactor: Redactor | None, now: datetime
                 ) -> tuple[list[Entry], Counter]:
    entries: list[Entry] = []
    redacted: Counter[str] = Counter()
    for m in messages:
        text = m.text
        if redactor is not None:
            text, counts = redactor.redact(text)
            redacted.update(counts)
        ts = m.ts or now
        eid = message_id(m)
        tg = tagger.tag(text, m.role, m.fact)
        entries.append(Entry(id=eid, ts=ts, role=m.role, text=text, session=m.session, type=tg.type,
                             importance=round(tg.importance, 2), neuro=tg.neuro))
    return entries, redacted


def message_id(m: sources.Message) -> str:
    """Session, time (else key, else position), role and text; and the count of
    identical earlier messages in the same source, from the second one on (so the
    first keeps the id it had before that count existed)."""
    return entry_id("e", m.session, m.anchor(), m.role, m.text, *([f"#{m.dup}"] if m.dup else []))


def nameless_ids(messages: list[sources.Message]) -> list[str | None]:
    """The id each timed message of one input has whatever the input was called, when its
    session is only the input's name; None for the others. The empty session is one no
    message has. Each id also holds the one of the message before it in the same input
    (the first: its own fields only), so it names the message in its transcript: a copy
    (or a copy that has grown since) matches, another transcript's same words in the same
    second do not."""
    out: list[str | None] = []
    prev: dict[str, str] = {}
    for m in messages:
        if m.named or m.ts is None or m.key is not None:
            out.append(None)
            continue
        free = entry_id("e", "", fmt_time(m.ts), m.role, m.text, *([f"#{m.dup}"] if m.dup else []),
                        *([prev[m.session]] if m.session in prev else []))
        prev[m.session] = free
        out.append(free)
    return out


# Session and role names kept only ASCII letters before they kept every script's.
_ASCII_ONLY = re.compile(r"[^A-Za-z0-9._:@+-]+")


def _ascii_token(value: str, limit: int) -> str:
    return _ASCII_ONLY.sub("-", value)[:limit].strip("-") or "-"


def legacy_id(m: sources.Message) -> str | None:
    """The id the message had in an older pamd, when that differs: untimed daily-note
    items were placed by their position in the note, session and role names lost
    their non-ASCII letters, and the record that hands a queued Claude Code message
    over was a message of its own. A brain that holds the old id must not take it again."""
    if m.was is not None:
        return legacy_id(m.was) or message_id(m.was)
    session, role = _ascii_token(m.session, 64), _ascii_token(m.role, 32)
    if m.key is not None:
        return entry_id("e", session, fmt_time(m.ts) if m.ts else f"#{m.seq}", role, m.text)
    if m.dup or (session, role) == (m.session, m.role):
        return None  # the same id as then (a repeat had none: the first took it)
    return entry_id("e", session, m.anchor(), role, m.text)


def plan_ingest(new: list[Entry], known: set[str], read: Any, aliases: dict[str, str] | None = None,
                nameless: dict[str, str] | None = None) -> IngestPlan:
    """Which entries are new, and the L0 and ledger files that hold them.

    `read(path) -> str | None` gives current file text (pure given its answers).
    `aliases` maps an entry id to the older id the same message had; an entry
    known by that id is skipped, and its id joins the ledger with this run.
    `nameless` maps an entry id to its `nameless_id`: an entry known (or seen in
    this run) by that is skipped too, and the ledger keeps it beside the id.
    """
    from pamd.core.fmt import parse_doc

    aliases, nameless = aliases or {}, nameless or {}
    fresh, seen, skipped, adopted = [], set(), 0, []
    for e in new:
        free = nameless.get(e.id)
        if e.id in known or e.id in seen or aliases.get(e.id) in known or (free and (free in known or free in seen)):
            if e.id not in known and e.id not in seen:
                adopted.append(e)
            seen.add(e.id)
            if free:
                seen.add(free)
            skipped += 1
            continue
        seen.add(e.id)
        if free:
            seen.add(free)
        fresh.append(e)
    plan = IngestPlan(entries=fresh, skipped=skipped)
    by_day: dict[str, list[Entry]] = {}
    for e in fresh:
        by_day.setdefault(e.ts.strftime("%Y-%m-%d"), []).append(e)
    for day, es in by_day.items():
        rel = tier_path("L0", day)
        old = read(rel)
        if old is None:
            meta, pre, have = {"tier": "L0", "date": day}, f"# L0 · {day}", []
        else:
            doc = parse_doc(old, rel, "L0")
            meta, pre, have = doc.meta, doc.preamble, doc.entries
        # By time only (a stable sort): within one second the file keeps its order and the
        # new entries follow in the order they were said (seconds are all a source gives).
        merged = sorted([*have, *es], key=lambda x: x.ts)
        plan.changes[rel] = render_doc(meta, pre, merged)
    by_month: dict[str, set[str]] = {}
    for e in [*fresh, *adopted]:
        by_month.setdefault(ledger_path(e.ts), set()).add(e.id)
    for e in new:
        if (free := nameless.get(e.id)) and free not in known:
            by_month.setdefault(ledger_path(e.ts), set()).add(free)
    for rel, ids in by_month.items():
        old = read(rel) or ""
        plan.changes[rel] = "\n".join(sorted(set(old.split()) | ids)) + "\n"
    return plan


def known_ids(brain: Brain) -> set[str]:
    ids: set[str] = set()
    base = brain.path(LEDGER_DIR)
    if base.is_dir():
        for p in base.glob("*.txt"):
            ids.update(p.read_text("utf-8").split())
    for e in brain.load().entries:
        ids.add(e.id)
        ids.update(e.sources)
    return ids


def tag_counts(entries: list[Entry], trash_below: float) -> str:
    c = Counter(t for e in entries for t in e.neuro)
    trash = sum(1 for e in entries if e.importance < trash_below)
    parts = [f"{t} {c[t]}" for t in NEURO if c[t]]
    parts.append(f"trash {trash}")
    return ", ".join(parts)


def commit_message(title: str, plan: IngestPlan, names: list[str], now: datetime, trash_below: float) -> str:
    types = Counter(e.type for e in plan.entries)
    src = ", ".join(one_line(n) for n in names[:5]) + (f" and {len(names) - 5} more" if len(names) > 5 else "")
    lines = [
        f"pamd {title}: {plural(len(plan.entries), 'entry')} from {src}",
        "",
        f"Tags: {tag_counts(plan.entries, trash_below)}.",
        "Types: " + ", ".join(f"{t} {n}" for t, n in sorted(types.items())) + ".",
    ]
    if plan.skipped:
        lines.append(f"Skipped {plan.skipped} already ingested.")
    if plan.redacted:
        lines.append("Redacted: " + ", ".join(f"{k} {v}" for k, v in sorted(plan.redacted.items())) + ".")
    lines += ["", f"Pamd-Run: {title}", f"Pamd-Now: {fmt_time(now)}",
              f"Pamd-Entries-Added: {len(plan.entries)}",
              f"Pamd-Entries-Skipped: {plan.skipped}",
              f"Pamd-Tokens-In: {sum(e.tokens for e in plan.entries)}"]
    return "\n".join(lines) + "\n"


def redactor(config: Settings | dict[str, Any]) -> Redactor:
    """Secrets are replaced before anything is written (built-ins + [[redact.patterns]])."""
    return Redactor.from_config(config)


def ingest_entries(brain: Brain, entries: list[Entry], names: list[str], now: datetime,
                   title: str = "ingest", redacted: Counter | None = None,
                   aliases: dict[str, str] | None = None, nameless: dict[str, str] | None = None
                   ) -> tuple[IngestPlan, str | None]:
    with brain.transaction() as tx:
        plan = plan_ingest(entries, known_ids(brain), brain.read, aliases, nameless)
        plan.redacted = redacted or Counter()
        if not plan.entries:
            return plan, None
        trash_below = float(settings(brain.config).neurotag.trash_below)
        sha = tx.commit(plan.changes, commit_message(title, plan, names, now, trash_below))
        return plan, sha


def remember(brain: Brain, text: str, now: datetime, role: str, session: str, type: str | None = None,
             importance: float | None = None) -> tuple[Entry, str | None]:
    """One statement as one L0 entry and one commit (`pamd remember`, the agent's remember
    tool): the entry, and the commit's sha (None: the brain has it already). `type` and
    `importance` override what the tagger finds."""
    msg = sources.Message(role, text, now, session, 0)
    entries, redacted = make_entries([msg], Tagger.from_config(brain.config, brain.root),
                                     redactor(brain.config), now)
    e = entries[0]
    if type:
        e = e.with_(type=type)
    if importance is not None:
        e = e.with_(importance=round(importance, 2) + 0.0)  # -0 is 0: no "-0.00" in the file
    _, sha = ingest_entries(brain, [e], ["remember"], now, "remember", redacted)
    return e, sha


def read_inputs(files: list[str], stdin: Callable[[], bytes]) -> tuple[list[tuple[str, bytes]], list[str]]:
    """The inputs `pamd ingest FILE…` reads, as (name, bytes), and the transcripts a Claude
    Code hook's input named that are not written yet. `-` is `stdin()`: a hook's input
    there stands for the transcripts it names."""
    inputs = []
    files = list(files)
    hooked, unwritten = set(), []
    while files:
        f = files.pop(0)
        if f == "-":
            data = stdin()
            named = hook_transcripts(data)
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
    return inputs, unwritten


def hook_transcripts(data: bytes) -> list[str] | None:
    """The transcripts a Claude Code hook's input names (its `transcript_path`, and a
    finished subagent's `agent_transcript_path`), or None when `data` is no such input."""
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


def ingest(brain: Brain, inputs: list[tuple[str, bytes]], now: datetime, fmt: str | None = None
           ) -> tuple[IngestPlan, str | None]:
    """Parse every input first (any error: nothing written), then plan and commit once."""
    secrets = redactor(brain.config)
    messages: list[sources.Message] = []
    legacy: list[str | None] = []
    free: list[str | None] = []
    notes: list[str] = []
    for name, data in inputs:
        if name == STDIN:  # no file to be read again: its untimed messages are said now
            msgs = sources.read(data, name, fmt, secrets, untimed=fmt_time(now), notes=notes)
            legacy += [None] * len(msgs)
        else:
            msgs = sources.read(data, name, fmt, secrets, notes=notes)
            legacy += [legacy_id(m) for m in msgs]
        free += nameless_ids(msgs)
        messages += msgs
    if not messages:
        raise PamdError("no messages found in the input", "check the file and --format")
    entries, redacted = make_entries(messages, Tagger.from_config(brain.config, brain.root),
                                     secrets, now)
    aliases = {e.id: old for e, old in zip(entries, legacy, strict=True) if old}
    nameless = {e.id: f for e, f in zip(entries, free, strict=True) if f}
    said_now = {e.id for e, m in zip(entries, messages, strict=True) if m.ts is None and m.key == fmt_time(now)}
    plan, sha = ingest_entries(brain, entries, [Path(n).name for n, _ in inputs], now, "ingest", redacted,
                               aliases, nameless)
    plan.stamped = sum(1 for e in plan.entries if e.id in said_now)
    plan.notes = notes
    return plan, sha
