"""STATE.md: what the agent was doing and thinking, refreshed by each compaction.

Extractive: goals are the recent user intents, focus the latest of them,
hypotheses the recent sentences that hedge ("maybe", "I think", "возможно"),
the emotional context the mix of neuro tags. The previous snapshot stays in
history: `pamd state --at` reads it back.
"""

from __future__ import annotations

import re
from collections import Counter
from datetime import datetime, timedelta
from typing import Any

from pamd.core.entry import Entry, fmt_time
from pamd.core.fmt import FormatError, dump_yaml, split_frontmatter
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


def snapshot(entries: list[Entry], now: datetime) -> dict[str, Any]:
    recent = sorted((e for e in entries if now - timedelta(hours=WINDOW_HOURS) <= e.ts <= now),
                    key=lambda e: (e.ts, e.id))
    if not recent:  # a quiet day: fall back to the latest entries there are
        recent = sorted(entries, key=lambda e: (e.ts, e.id))[-50:]
    intents = [e for e in recent if e.type in ("user_intent", "decision")]
    goals = []
    for e in sorted(intents, key=lambda e: (-e.importance, -e.ts.timestamp())):
        t = _clip(e.text)
        if t not in goals:
            goals.append(t)
        if len(goals) == 5:
            break
    focus = next((e for e in reversed(recent) if e.type == "user_intent"), None) or (recent[-1] if recent else None)
    hyps = []
    for e in reversed(recent):
        for sent in re.split(r"(?<=[.!?])\s+", " ".join(e.text.split())):
            if _HEDGE.search(sent) and len(sent) > 15 and _clip(sent) not in hyps:
                hyps.append(_clip(sent))
        if len(hyps) >= 5:
            break
    tags = Counter(t for e in recent for t in e.neuro)
    mood = ", ".join(f"{MOODS.get(t, t)} ({t} {n})" for t, n in tags.most_common(3)) or "calm"
    return {
        "updated": fmt_time(now),
        "active_goals": goals,
        "current_focus": _clip(focus.text) if focus else "",
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


def render_state(current: str | None, snap: dict[str, Any]) -> str:
    """STATE.md with pamd's fields replaced and everything else a person wrote kept."""
    meta: dict[str, Any] = {}
    body = "# STATE\n"
    if current:
        try:
            meta, lines, _ = split_frontmatter(current, "STATE.md")
        except FormatError as exc:
            raise PamdError(f"{exc.problem}; pamd will not overwrite it",
                            "fix the frontmatter (pamd check STATE.md) and commit") from None
        body = "\n".join(lines)
    meta = {**meta, **snap}
    if "kind" not in meta:
        meta = {"kind": "state", **meta}
    return "---\n" + dump_yaml(meta) + "---\n" + body
