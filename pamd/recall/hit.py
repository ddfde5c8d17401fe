"""A recall hit: what one search result says, as a value, a dict (`--json`, the MCP server) and text.

A hit is about one entry (`id`): a raw message or summary in the tree, or a raw
message a summary compressed away (a deep leaf, recall.deep), which the tree now
holds in that summary (`summary`). `path:start-end` are the lines that hold it now.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from pamd.recall.lexical import _WORD, STOPWORDS, stem, tokenize

SNIPPET_CHARS = 320
# Text output: the snippet wrapped to this width, at most this many lines.
TEXT_WIDTH = 100
TEXT_LINES = 4
_ESCAPED = re.compile(r"\\+([nt\"`])")


@dataclass
class Hit:
    path: str
    start: int
    end: int
    score: float
    tier: str
    ids: list[str]
    text: str
    ts: str | None = None
    label: int = field(default=-1, repr=False)
    # The brain entries the hit covers; `ids` adds the raw leaves of summaries that
    # matched (recall.deep), which are in history, not the tree.
    entries: list[str] = field(default_factory=list, repr=False)
    # Those of `entries` the query matched (a recall counts for these): the hit's best
    # chunk and any other that ranked in the plain top k, not the neighbours that hit
    # shaping (`hit_lines`) joined to it for context.
    matched: list[str] = field(default_factory=list, repr=False)
    # (summary, raw leaf) for each matched summary whose best chunk was a leaf behind it:
    # the recall log keeps them so PRELOAD can show what was recalled, not the summary's words.
    leaves: list[tuple[str, str]] = field(default_factory=list, repr=False)
    # The entry this hit is about (its best chunk's): a leaf's own id when it is one.
    id: str | None = None
    # For a deep leaf: the summary that holds it now (its lines are path:start-end).
    summary: str | None = None
    role: str | None = None
    # The matched words in their sentence: a window of the best chunk's text.
    snippet: str = ""
    # In [0, 1], comparable across queries: fusion.relevance (see docs/recall.md).
    relevance: float = 0.0
    # "ranked" (BM25 + dense, fused) or "exact" (every entry holding the term, newest first).
    mode: str = "ranked"

    @property
    def location(self) -> str:
        return f"{self.path}:{self.start}-{self.end}"

    def to_dict(self) -> dict:
        """The `--json` object of this hit (docs/recall.md, "JSON output")."""
        return {"id": self.id, "summary": self.summary, "role": self.role, "ts": self.ts,
                "tier": self.tier, "path": self.path, "lines": [self.start, self.end],
                "location": self.location, "relevance": round(self.relevance, 4),
                "score": round(self.score, 6), "mode": self.mode, "snippet": self.snippet,
                "ids": self.ids, "matched": self.matched, "text": self.text}

    as_json = to_dict

    def to_text(self, width: int = TEXT_WIDTH, lines: int = TEXT_LINES) -> str:
        """Two or more lines a person or an agent reads: where and what, then the snippet wrapped."""
        # a leaf: the summary that holds it now, reached through the raw message's words
        about = [f"{self.summary} [via {self.id} behind the summary]" if self.summary else self.id or "-"]
        if self.ts:
            about.append(self.ts)
        if self.role:
            about.append(self.role)
        about.append(self.tier)
        head = f"{self.location}  {self.relevance:.2f}  {' · '.join(about)}"
        body = wrap(self.snippet or self.text, width - 4, lines)
        return "\n".join([head, *("    " + b for b in body)])


def wrap(text: str, width: int, lines: int) -> list[str]:
    """`text`'s words in lines of at most `width` characters, at most `lines` of them (the
    last ending in `…` when words were left). A word is never cut, not at a hyphen nor when
    it is longer than a line (it has a line of its own): an agent reads a path, a URL or an
    identifier whole."""
    out: list[str] = []
    cur = ""
    for word in text.split():
        if cur and len(cur) + 1 + len(word) > width:
            out.append(cur)
            cur = word
            if len(out) == lines:
                out[-1] = out[-1].rstrip(" …") + " …"
                return out
        else:
            cur = f"{cur} {word}" if cur else word
    return [*out, cur] if cur or not out else out


def split_role(text: str, is_entry: bool) -> tuple[str | None, str]:
    """An entry chunk's text is `role: message`: (role, message); plain text has no role."""
    if is_entry:
        role, sep, rest = text.partition(": ")
        if sep and role and " " not in role and len(role) <= 40:
            return role, rest
    return None, text


def snippet(text: str, query: str, width: int = SNIPPET_CHARS, exact: str | None = None) -> str:
    """About `width` characters of `text` around the words of `query` (or the `exact` term):
    the window holding most of the query's distinct terms, whitespace folded, `…` where cut."""
    # a tool call's JSON arguments carry their newlines and quotes escaped: read them as text
    flat = " ".join(_ESCAPED.sub(lambda m: " " if m.group(1) in "nt" else m.group(1), text).split())
    if len(flat) <= width:
        return flat
    spots = _spots(flat, query, exact)
    if not spots:
        return flat[:width].rsplit(" ", 1)[0] + " …"
    best, best_n = spots[0][0], 0
    for i, (at, _) in enumerate(spots):
        n = len({t for a, t in spots[i:] if a < at + width * 0.7})
        if n > best_n:
            best, best_n = at, n
    lo = max(0, best - width // 5)
    if lo > 0:
        sp = flat.rfind(" ", 0, lo)
        lo = sp + 1 if sp >= 0 else lo
    hi = min(len(flat), lo + width)
    if hi < len(flat):
        sp = flat.rfind(" ", lo, hi)
        hi = sp if sp > lo else hi
    return ("… " if lo > 0 else "") + flat[lo:hi] + (" …" if hi < len(flat) else "")


def _spots(flat: str, query: str, exact: str | None) -> list[tuple[int, str]]:
    """(character offset, term) of each place the query's terms (or the exact term) occur."""
    if exact:
        return [(m.start(), exact) for m in exact_pattern(exact).finditer(flat)]
    terms = set(tokenize(query))
    out = []
    for m in _WORD.finditer(flat):
        w = m.group().lower()
        if w in STOPWORDS or len(w) >= 40:
            continue
        s = stem(w)
        if s in terms:
            out.append((m.start(), s))
    return out


def exact_pattern(term: str) -> re.Pattern:
    """The term as a whole identifier: not inside a longer one (`ensure_worker` is not found in
    `ensure_workers`), case as written."""
    return re.compile(r"(?<![\w])" + re.escape(term) + r"(?![\w])")
