"""Counts in messages and commit subjects: "1 entry", "2 entries", never "1 entries"."""

from __future__ import annotations


def plural(n: int, noun: str, nouns: str | None = None) -> str:
    """`n` and the noun that agrees with it; `nouns` for a plural that is not noun+s or y→ies."""
    if n == 1:
        return f"{n} {noun}"
    if nouns is None:
        nouns = noun[:-1] + "ies" if noun.endswith("y") and noun[-2:-1] not in tuple("aeiou") else noun + "s"
    return f"{n} {nouns}"
