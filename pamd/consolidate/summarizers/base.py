"""The summarizer interface: groups of entries in, one text per group out, usage recorded."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

from pamd.core.entry import Entry

# Tiers a summarizer writes. "lesson" is a pseudo-tier: one line, a failure as it appeared
# and what resolved it, or "" for none (myelination turns it into a DNA reflex).
SUMMARY_TIERS = ("L1", "L2", "L3", "L4", "lesson", "state")
ONE_LINE_TIERS = frozenset({"L3", "L4", "lesson"})

# However small a group's budget, a summary says at least this much, so a tiny target
# never produces an unreadable stub of a word. Output is <= max(target_tokens, MIN_TOKENS).
MIN_TOKENS = 6


@dataclass(frozen=True)
class Group:
    """Entries (oldest first) to be summarised into one text of at most `target_tokens`."""

    key: str
    tier: str
    entries: tuple[Entry, ...]
    target_tokens: int

    @property
    def budget(self) -> int:
        """The token budget a summary must respect (never below MIN_TOKENS)."""
        return max(self.target_tokens, MIN_TOKENS)

    @property
    def one_line(self) -> bool:
        return self.tier in ONE_LINE_TIERS


@dataclass
class Usage:
    """What a summarize() call cost; the lead turns it into commit trailers."""

    backend: str
    model: str
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float = 0.0
    requests: int = 0
    fallbacks: int = 0
    notes: list[str] = field(default_factory=list)

    def add(self, other: Usage) -> Usage:
        """Accumulate another call's usage into this one (in place; returns self)."""
        self.input_tokens += other.input_tokens
        self.output_tokens += other.output_tokens
        self.cost_usd += other.cost_usd
        self.requests += other.requests
        self.fallbacks += other.fallbacks
        self.notes.extend(n for n in other.notes if n not in self.notes)
        return self


class Summarizer(Protocol):
    name: str

    def summarize(self, groups: list[Group]) -> tuple[list[str], Usage]:
        """One text per group, in the same order; never empty for a non-empty group."""
        ...

