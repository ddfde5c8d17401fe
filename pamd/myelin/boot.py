"""`pamd boot`: the context an agent reads at session start, fitted to a token budget.

Order: DNA, PRELOAD, STATE, MEMORY.md, then L3, L2, L1, L0 — newest detail
last. Each section names the files it came from. Over budget, the entries of
lowest retention are cut first and the cut is reported. DNA, PRELOAD, STATE and
MEMORY.md's notes are never cut: when they alone pass the budget the context is
over it, and `over_budget_note` says by how much and why (the CLI warns on stderr).
A file that holds a merge's conflict markers (both sides, doubled) is left out and
named in the header, `conflicted_note` (the CLI warns on stderr too).

Boot is a pure function of a tree and a time: by default the time of the
commit it reads (its `Pamd-Now`, else the commit date), so `pamd boot --at
COMMIT` rebuilds, byte for byte, what an agent booting at that commit read.
"""

from __future__ import annotations

import json
import math
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from pamd.core.entry import Entry, count_tokens, fmt_time
from pamd.core.fmt import FormatError, conflict_region, item_text, parse_doc, split_frontmatter
from pamd.core.words import plural
from pamd.edge.brain import DNA, MEMORY, PRELOAD, STATE, tier_of
from pamd.encode.hippocampus import retention
from pamd.myelin import preload

DNA_KEYS = ("reflexes", "learned_behaviors", "communication_patterns", "preferences")
STATE_KEYS = ("current_focus", "pinned_goals", "active_goals", "pinned_hypotheses", "hypotheses",
              "emotional_context", "updated")
TIER_TITLES = {"L4": "Long-term memory", "L3": "Cold memory (topic one-liners)",
               "L2": "Cool memory (summaries)", "L1": "Warm memory (summaries)", "L0": "Hot memory (raw)"}


@dataclass
class Section:
    name: str
    sources: list[str]
    text: str

    @property
    def tokens(self) -> int:
        return count_tokens(self.text)


@dataclass
class Boot:
    name: str
    now: datetime
    budget: int
    sections: list[Section] = field(default_factory=list)
    cut_entries: int = 0
    cut_tokens: int = 0
    cut_below: float = 0.0
    conflicted: list[str] = field(default_factory=list)  # left out: git's conflict markers in them

    @property
    def tokens(self) -> int:
        """Tokens of the Markdown an agent reads (the budget is checked against this)."""
        return count_tokens(self._render(0))

    def markdown(self) -> str:
        return self._render(self.tokens)

    @property
    def over_budget(self) -> bool:
        return self.tokens > self.budget

    def over_budget_note(self) -> str | None:
        """Why the context is over its budget (None: it is not).

        Only what is never cut can put it over: DNA, PRELOAD, STATE and MEMORY.md's
        own notes go in whole (an agent without its reflexes is worse off than one
        over budget), so the caller is told which of them are too large."""
        if not self.over_budget:
            return None
        parts = ", ".join(f"{'+'.join(s.sources)} {s.tokens:,}" for s in sorted(self.sections, key=lambda s: -s.tokens))
        cut = f"{'all ' if self.cut_entries > 1 else ''}{plural(self.cut_entries, 'entry')} " \
              f"{'was' if self.cut_entries == 1 else 'were'} cut and " if self.cut_entries else ""
        return (f"the boot context is {self.tokens:,} tokens, over the budget of {self.budget:,}: "
                f"{cut}what always goes in whole is larger ({parts} tokens)")

    def _render(self, tokens: int) -> str:
        # The token count in the header is padded, so it does not change the length it counts.
        head = [f"# Boot context: {self.name} at {fmt_time(self.now)}",
                f"<!-- pamd boot: {tokens:>9,} of {self.budget:,} tokens"
                + (f"; cut {plural(self.cut_entries, 'entry')} ({self.cut_tokens:,} tokens) of retention "
                   f"≤ {self.cut_below:.2f}" if self.cut_entries else "; nothing cut") + " -->", ""]
        if self.conflicted:
            head[-1:-1] = [f"<!-- {self.conflicted_note()} -->"]
        body = [f"## {s.name} ({', '.join(s.sources)})\n\n{s.text.rstrip()}\n" for s in self.sections]
        return "\n".join(head) + "\n".join(body)

    def conflicted_note(self) -> str | None:
        """Which files were left out for holding a merge's conflict markers (None: none)."""
        if not self.conflicted:
            return None
        return (f"left out: {', '.join(self.conflicted)}: conflict markers from a merge not "
                f"resolved (resolve and commit, see docs/hooks.md)")

    def json(self) -> str:
        return json.dumps({
            "name": self.name, "now": fmt_time(self.now), "budget": self.budget, "tokens": self.tokens,
            "over_budget": self.over_budget,
            # every cut entry's retention is <= max_retention; below_retention: its 0.2.0 name
            "cut": {"entries": self.cut_entries, "tokens": self.cut_tokens, "max_retention": self.cut_below,
                    "below_retention": self.cut_below},
            "sections": [{"name": s.name, "sources": s.sources, "tokens": s.tokens, "text": s.text}
                         for s in self.sections],
            "conflicted": self.conflicted,
        }, indent=2, ensure_ascii=False)


def _yaml_lists(meta: dict[str, Any], keys: tuple[str, ...]) -> str:
    out = []
    for key in keys:
        val = meta.get(key)
        if not val:
            continue
        title = key.replace("_", " ").capitalize()
        if isinstance(val, list):
            out.append(f"**{title}:**")
            for item in val:
                text = item_text(item)
                out.append(f"- {' '.join(str(item if text is None else text).split())}")
        else:
            text = item_text(val)
            out.append(f"**{title}:** {' '.join(str(val if text is None else text).split())}")
    return "\n".join(out)


def _body(text: str, rel: str) -> tuple[dict[str, Any], str]:
    try:
        meta, lines, _ = split_frontmatter(text, rel)
    except FormatError:
        return {}, text  # boot never fails on a broken file: show it as it is
    return meta, "\n".join(lines).strip()


def _entry_line(e: Entry) -> str:
    text = " ".join(e.text.split()) if e.tier != "L0" else e.text.replace("\n", "\n  ")
    return f"- {fmt_time(e.ts)} {e.role}: {text}  <!-- {e.id} -->"


def build(read: Callable[[str], str | None], files: list[str], config: dict[str, Any],
          now: datetime, budget: int | None = None) -> Boot:
    budget = int(budget or config.get("boot", {}).get("budget", 500_000))
    boot = Boot(name=str(config["brain"].get("name", "agent")), now=now, budget=budget)
    fixed: list[Section] = []
    for rel, title, keys in ((DNA, "DNA", DNA_KEYS), (PRELOAD, "Preloaded memories", ()),
                             (STATE, "State", STATE_KEYS)):
        text = read(rel)
        if text is None:
            continue
        if conflict_region(rel, text):  # both sides and the markers: no snapshot to boot from
            boot.conflicted.append(rel)
            continue
        meta, body = _body(text, rel)
        if rel == PRELOAD:
            body = preload.without_markers(body)
        parts = [p for p in (_yaml_lists(meta, keys) if keys else "", body) if p]
        fixed.append(Section(title, [rel], "\n\n".join(parts)))
    memory_pre = ""
    by_tier: dict[str, list[tuple[Entry, str]]] = {t: [] for t in ("L4", "L3", "L2", "L1", "L0")}
    for rel in sorted(f for f in files if tier_of(f)):
        text = read(rel)
        if text is None:
            continue
        if conflict_region(rel, text):
            boot.conflicted.append(rel)
            continue
        try:
            doc = parse_doc(text, rel, tier_of(rel) or "L0")
        except FormatError:
            continue
        if rel == MEMORY:
            memory_pre = doc.preamble.strip()
        for e in doc.entries:
            by_tier[e.tier].append((e, rel))
    # Fit: the fixed sections always go in; entries are cut lowest retention first, and
    # no more than needed: a cut that empties a tier takes its section header with it.
    every = [e for items in by_tier.values() for e, _ in items]
    cost = {e.id: len(_entry_line(e)) + 1 for e in every}
    cut: set[str] = set()

    def assemble() -> None:
        boot.sections = list(fixed)
        for tier, items in by_tier.items():
            kept = sorted(((e, rel) for e, rel in items if e.id not in cut), key=lambda x: x[0].ts)
            pre = memory_pre if tier == "L4" else ""
            if not kept and not pre:
                continue
            lines = ([pre, ""] if pre else []) + [_entry_line(e) for e, _ in kept]
            boot.sections.append(Section(TIER_TITLES[tier], sorted({rel for _, rel in items}) or [MEMORY],
                                         "\n".join(lines)))

    assemble()
    limit = budget * 4  # tokens are ~4 characters, so characters of the output are exact
    if len(boot.markdown()) > limit:
        # Reserve room for the header's cut note at its widest (every entry cut), so the
        # real numbers, written after the cut, can only make it shorter.
        boot.cut_entries = len(every)
        boot.cut_tokens = sum(count_tokens(_entry_line(e)) for e in every)
        order = sorted(every, key=lambda e: (retention(e, config, now), e.ts, e.id))
        left = Counter(e.tier for e in every)
        over = len(boot.markdown()) - limit
        n = 0
        for e in order:
            if over <= 0:
                break
            cut.add(e.id)
            n += 1
            over -= cost[e.id]
            left[e.tier] -= 1
            if not left[e.tier]:  # the tier's section (its header, its file list) goes too
                assemble()
                over = len(boot.markdown()) - limit
        # The estimate can only over-cut (a cut note narrower than reserved): give back
        # the last cuts while the context still fits with its real header.
        while n:
            cut.discard(order[n - 1].id)
            _note(boot, order[: n - 1], config, now)
            assemble()
            if len(boot.markdown()) > limit:
                cut.add(order[n - 1].id)
                break
            n -= 1
        _note(boot, order[:n], config, now)
        assemble()
    return boot


def _note(boot: Boot, cut: list[Entry], config: dict[str, Any], now: datetime) -> None:
    """The header's cut note for `cut`: how many, their tokens, and the highest retention
    among them (rounded up, so every cut entry is at or below it)."""
    boot.cut_entries = len(cut)
    boot.cut_tokens = sum(count_tokens(_entry_line(e)) for e in cut)
    boot.cut_below = math.ceil(max((retention(e, config, now) for e in cut), default=0.0) * 100) / 100
