"""STATE.md: what the agent was doing and thinking, refreshed by each compaction.

Extractive: goals are the recent user intents, focus the latest of them,
hypotheses the recent sentences that hedge ("maybe", "I think", "возможно"),
the emotional context the mix of neuro tags. The previous snapshot stays in
history: `pamd state --at` reads it back. A person's goals and hypotheses are
kept in `pinned_goals` / `pinned_hypotheses`, which pamd never rewrites.
"""

from __future__ import annotations

import re
from collections import Counter
from datetime import datetime, timedelta
from typing import Any

from pamd.core import toolcall
from pamd.core.entry import Entry, fmt_time
from pamd.core.fmt import FormatError, dump_yaml, item_text, split_frontmatter
from pamd.errors import PamdError

WINDOW_HOURS = 24
_HEDGE = re.compile(r"\b(maybe|might|perhaps|probably|i think|i suspect|hypothes\w*|my guess|likely|"
                    r"возможно|наверное|похоже|гипотез\w*|кажется)\b", re.I)
MOODS = {
    "dopamine": "wins and progress", "norepinephrine": "urgency", "cortisol": "failures and stress",
    "acetylcholine": "insight and decisions", "oxytocin": "trust and rapport", "serotonin": "satisfaction",
}


def _clip(text: str, n: int = 160) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= n else flat[: n - 1].rsplit(" ", 1)[0] + "…"


# Claude Code records a typed slash command as markup: `<command-message>x</command-message>
# <command-name>/x</command-name> <command-args>…</command-args>`. STATE shows what was typed.
_CC_MESSAGE = re.compile(r"<command-message>[\s\S]*?</command-message>\s*")
_CC_TAG = re.compile(r"</?command-(?:name|args)>")


def _typed(text: str) -> str:
    if "<command-name>" not in text:
        return text
    return _CC_TAG.sub(" ", _CC_MESSAGE.sub("", text)).strip()


def _words(e: Entry) -> str:
    """What STATE shows of an entry: a tool call as its gist, never its JSON arguments."""
    return e.text if e.role == "tool" else _typed(toolcall.readable(e.text, summary=e.is_summary))


def snapshot(entries: list[Entry], now: datetime) -> dict[str, Any]:
    recent = sorted((e for e in entries if now - timedelta(hours=WINDOW_HOURS) <= e.ts <= now),
                    key=lambda e: e.ts)
    if not recent:  # a quiet day: fall back to the latest entries there are
        recent = sorted(entries, key=lambda e: e.ts)[-50:]
    intents = [e for e in recent if e.type in ("user_intent", "decision")]
    goals = []
    for e in sorted(intents, key=lambda e: (-e.importance, -e.ts.timestamp())):
        t = _clip(_words(e))
        if t not in goals:
            goals.append(t)
        if len(goals) == 5:
            break
    focus = next((e for e in reversed(recent) if e.type == "user_intent"), None) or (recent[-1] if recent else None)
    hyps = []
    for e in reversed(recent):
        # A guess is something said: not in a raw call's arguments, nor in its gist, nor in a
        # tool's output ("Checking 114 files (this might take a while)" is no hypothesis).
        if e.role == "tool" and not e.is_summary:
            continue
        said = _words(e) if e.is_summary else _typed(toolcall.prose(e.text))
        # A blank line ends a sentence too (a paragraph without a full stop).
        sents = [x for para in re.split(r"\n\s*\n", said) for x in re.split(r"(?<=[.!?])\s+", " ".join(para.split()))]
        for sent in sents:
            if _HEDGE.search(sent) and len(sent) > 15 and _clip(sent) not in hyps:
                hyps.append(_clip(sent))
        if len(hyps) >= 5:
            break
    tags = Counter(t for e in recent for t in e.neuro)
    mood = ", ".join(f"{MOODS.get(t, t)} ({t} {n})" for t, n in tags.most_common(3)) or "calm"
    return {
        "updated": fmt_time(now),
        "active_goals": goals,
        "current_focus": _clip(_words(focus)) if focus else "",
        "hypotheses": hyps[:5],
        "emotional_context": mood,
    }


def is_stale(current: str | None, entries: list[Entry]) -> bool:
    """New entries arrived since the snapshot was taken (a broken STATE.md counts as stale)."""
    if not entries:
        return False
    try:
        meta, _, _ = split_frontmatter(current or "", "STATE.md")
        updated = meta.get("updated")
        if not updated:
            return True
        from pamd.core.entry import parse_time

        return max(e.ts for e in entries) > parse_time(str(updated))
    except (FormatError, ValueError):
        return True


# pamd's snapshot fields are remade from the entries at every run. A person's goals and
# hypotheses live in the pinned fields, which pamd never rewrites; an item a person adds to
# pamd's own list (found by comparing with the STATE.md pamd last committed) is moved there.
PINNED = {"active_goals": "pinned_goals", "hypotheses": "pinned_hypotheses"}
_NOUN = {"active_goals": "goal", "hypotheses": "hypothesis"}


def _items(value: Any) -> list[Any]:
    if value is None or value == "":
        return []
    return list(value) if isinstance(value, list) else [value]


def _quote(item: Any, n: int = 60) -> str:
    text = item_text(item)
    return f'"{_clip(str(item if text is None else text), n)}"'


def _meta_of(text: str | None) -> dict[str, Any]:
    try:
        return split_frontmatter(text, "STATE.md")[0] if text else {}
    except FormatError:
        return {}


def pamds_values(text: str | None) -> set[str]:
    """What pamd writes in a STATE.md text: the items of its goal and hypothesis lists
    (not the pinned ones), its current_focus and its emotional_context."""
    meta = _meta_of(text)
    out = {_key(i) for key in PINNED for i in _items(meta.get(key))}
    out.update(str(meta[key]) for key in ("current_focus", "emotional_context") if meta.get(key))
    return out


def _key(item: Any) -> str:
    """An item as a set member: a person may write a mapping or a list as a goal."""
    return item if isinstance(item, str) else repr(item)


def render_state(current: str | None, snap: dict[str, Any], last: str | None = None,
                 ever: set[str] | frozenset[str] = frozenset()) -> tuple[str, list[str]]:
    """STATE.md with pamd's fields replaced and everything else a person wrote kept,
    and the lines for the commit message that say what was done with a person's edits.

    `last` is STATE.md as pamd last committed it: an item of active_goals or hypotheses
    that it did not hold is a person's and moves to pinned_goals / pinned_hypotheses
    (never rewritten by pamd), unless pamd wrote it in an earlier version (`ever`: a
    revert or a squash merge brings those back). Without `last` every item there counts
    as a person's."""
    meta: dict[str, Any] = {}
    body = "# STATE\n"
    if current:
        try:
            meta, lines, _ = split_frontmatter(current, "STATE.md")
        except FormatError as exc:
            raise PamdError(f"{exc.problem}; pamd will not overwrite it",
                            "fix the frontmatter (pamd check STATE.md) and commit") from None
        body = "\n".join(lines)
    base = _meta_of(last) if current else {}
    notes: list[str] = []
    snap = dict(snap)
    for key, pin in PINNED.items():
        pinned = meta.get(pin)
        if pinned is not None and not isinstance(pinned, list | str):
            raise PamdError(f"STATE.md: {pin} must be a list; pamd will not overwrite it",
                            "fix it and commit, then run again")
        pinned = _items(pinned)
        had = _items(base.get(key))
        theirs = [i for i in _items(meta.get(key)) if i not in had and _key(i) not in ever and i not in pinned]
        if theirs:
            pinned += theirs
            notes += [f"Kept a person's {_NOUN[key]} in {pin} (pamd remakes {key}): {_quote(i)}"
                      for i in theirs]
        if pinned or pin in meta:
            meta = _put_before(meta, pin, pinned, key)
        snap[key] = [i for i in snap.get(key, []) if i not in pinned]
        now_there = _items(meta.get(key))
        back = [i for i in had if i not in now_there and i in snap[key]]
        notes += [f"Put back a {_NOUN[key]} a person removed from {key} (still among the last "
                  f"{WINDOW_HOURS} h's): {_quote(i)}" for i in back]
    for key in ("current_focus", "emotional_context"):
        mine = meta.get(key)
        if key in base and mine not in (base.get(key), snap.get(key)) and mine and str(mine) not in ever:
            notes.append(f"Replaced a person's {key} (history keeps it): {_quote(mine)}")
    meta = {**meta, **snap}
    if "kind" not in meta:
        meta = {"kind": "state", **meta}
    return "---\n" + dump_yaml(meta) + "---\n" + body, notes


def _put_before(meta: dict[str, Any], key: str, value: Any, anchor: str) -> dict[str, Any]:
    """`meta` with `key` set, a new key placed just before `anchor` (or at the end)."""
    if key in meta or anchor not in meta:
        return {**meta, key: value}
    out: dict[str, Any] = {}
    for k, v in meta.items():
        if k == anchor:
            out[key] = value
        out[k] = v
    return out
