"""Literal prefixes of a regex: what every match must start with.

Python's `re` tries each alternative at each position, so one alternation of
a few hundred rule patterns costs about a millisecond per message. neurotag
instead scans for the short literal heads its patterns must start with and
runs a pattern only where its head occurs. This module finds those heads by
reading the parsed pattern; where it cannot be sure it says so (None) and
the caller falls back to scanning with the pattern itself, so correctness
never depends on it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

try:  # the stdlib's own parser (3.11+); private, so a missing one only costs speed
    from re import _constants as C  # type: ignore[attr-defined]  # private: typeshed does not list it
    from re import _parser as P  # type: ignore[attr-defined]  # private: typeshed does not list it
except ImportError:  # pragma: no cover
    P = C = None

WORD_END = "\0"  # in a head: the literal ends a word here
_WORDCHAR = re.compile(r"\w")
_MAX_SET = 12  # a character class wider than this ends the prefix
_MAX_PREFIXES = 256


@dataclass(frozen=True)
class Prefixes:
    """Lowercased literal starts of every match; `boundary`: a match starts at a word boundary.

    A head may end in WORD_END: the pattern requires the word to end there.
    """

    heads: frozenset[str]
    boundary: bool
    anchored: bool  # the pattern starts with \\A: it can only match at position 0


class _Stop(Exception):
    pass


def _seq(items: list, acc: set[str]) -> tuple[set[str], bool]:
    """Extend `acc` by the literal run of `items`; (prefixes, whether all of items was literal)."""
    for op, av in items:
        if op is C.AT or op is C.ASSERT or op is C.ASSERT_NOT:
            if op is C.AT and any(acc):  # an anchor after the literal ends the run
                if av is C.AT_BOUNDARY:
                    # `done\b`: mark that the word ends here, so the caller can
                    # look for the whole word rather than its first letters.
                    acc = {a + WORD_END if _WORDCHAR.match(a[-1:]) else a for a in acc}
                return acc, False
            continue
        if op is C.LITERAL:
            acc = {a + chr(av).lower() for a in acc}
        elif op is C.IN:
            chars = set()
            for kind, value in av:
                if kind is not C.LITERAL:
                    return acc, False
                chars.add(chr(value).lower())
            if len(chars) > _MAX_SET:
                return acc, False
            acc = {a + c for a in acc for c in chars}
        elif op is C.SUBPATTERN:
            acc, complete = _seq(list(av[-1]), acc)
            if not complete:
                return acc, False
        elif op is C.BRANCH:
            out: set[str] = set()
            complete = True
            for alt in av[1]:
                got, whole = _seq(list(alt), set(acc))
                out |= got
                complete = complete and whole
            acc = out
            if not complete:
                return acc, False
        elif op in (C.MAX_REPEAT, C.MIN_REPEAT, C.POSSESSIVE_REPEAT):
            lo, hi, sub = av
            if lo == 0 and hi == 1:  # `x?`: both ways, so "we(?:'ve)? decided" keeps its words
                got, whole = _seq(list(sub), set(acc))
                if not whole:
                    return acc | got, False
                acc |= got
                continue
            if lo == 0:
                return acc, False
            acc, whole = _seq(list(sub), acc)
            if not (whole and lo == hi == 1):
                return acc, False
        else:
            return acc, False
        if len(acc) > _MAX_PREFIXES:
            raise _Stop
    return acc, True


def _leading(items: list) -> tuple[bool, bool]:
    """Whether every match starts at a word boundary / at the start of the text."""
    boundary = anchored = False
    for op, av in items:
        if op is C.AT:
            boundary = boundary or av is C.AT_BOUNDARY
            anchored = anchored or av is C.AT_BEGINNING_STRING
        elif op is C.ASSERT or op is C.ASSERT_NOT:
            continue
        elif op is C.SUBPATTERN or op is C.BRANCH:
            # `\bfoo|\bbar` parses as one branch: each alternative must agree.
            alts = [list(av[-1])] if op is C.SUBPATTERN else [list(a) for a in av[1]]
            found = [_leading(a) for a in alts]
            boundary = boundary or all(b for b, _ in found)
            anchored = anchored or all(a for _, a in found)
            break
        else:
            break
    return boundary, anchored


def _rare(head: str) -> bool:
    """A lone non-ASCII symbol (an emoji) is rare enough in text to scan for on its own."""
    return len(head) == 1 and ord(head) > 0x2000 and not head.isalnum()


def prefixes(pattern: str, min_len: int = 2, head_len: int = 24) -> Prefixes | None:
    """Literal heads (at least `min_len`, at most `head_len` chars) every match starts with."""
    if P is None:
        return None
    try:
        items = list(P.parse(pattern).data)
    except Exception:  # the caller has already compiled it; any parser surprise means "unknown"
        return None
    boundary, anchored = _leading(items)
    if anchored:
        return Prefixes(frozenset(), False, True)
    try:
        acc, _ = _seq(items, {""})
    except (_Stop, Exception):
        return None
    if not acc or not all(len(a.rstrip(WORD_END)) >= min_len or _rare(a) for a in acc):
        return None
    return Prefixes(frozenset(a[:head_len] for a in acc), boundary, False)
