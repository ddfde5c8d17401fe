"""Exact-term recall: every entry that holds an identifier, newest first.

BM25 splits `ensure_worker` into words and weighs them like any others, and the
dense side reads it as a blur of subwords, so an identifier said once in a long
transcript can rank below entries that merely talk about workers. Here the term
is matched as written, as a whole identifier (`ensure_worker` is not found in
`ensure_workers`), in every searchable chunk of the index — raw leaves behind
summaries included — and the hits come newest first.
"""

from __future__ import annotations

import re
from datetime import datetime

from pamd.recall.hit import Hit, exact_pattern
from pamd.recall.store.index import Index

# One token that reads as code rather than words: snake_case, CamelCase (a capital after a
# lower-case letter), a dotted path, a flag, or a file name with an extension.
_IDENT = re.compile(
    r"""(?x)
    -{1,2}[A-Za-z][\w-]*                       # --now, -k
    | [A-Za-z_][\w]*_[\w]+                     # ensure_worker, _private, MAX_QUERY
    | [A-Za-z]*[a-z][A-Z]\w*                   # SessionEnd, getUser
    | [A-Za-z_][\w-]*(?:\.[A-Za-z_][\w-]*)+     # pamd.recall.api, pyproject.toml
    """
)


def identifier(query: str) -> str | None:
    """The query itself when it is one identifier-like token (auto exact mode), else None."""
    q = query.strip().strip("`'\"")
    return q if q and " " not in q and _IDENT.fullmatch(q) else None


def find(idx: Index, term: str, k: int, tiers: tuple[str, ...] = (),
         since: datetime | None = None, until: datetime | None = None) -> tuple[list[Hit], int]:
    """The k newest entries holding `term`, and how many hold it in all.

    A raw leaf behind a summary is a hit of its own at the summary's lines; a chunk of plain
    Markdown (MEMORY.md prose, a daily note) is a hit as the section it is.
    """
    from pamd.recall.search import _iso, about

    pat = exact_pattern(term)
    assert idx.db is not None, "find() reads an index refresh() has opened"
    rows = idx.db.execute(
        "SELECT label, path, start, end, tier, ts, importance, ids, text FROM chunks "
        "WHERE alive=1 AND instr(text, ?) > 0", (term,)).fetchall()
    lo = since.timestamp() if since else None
    hi = until.timestamp() if until else None
    found: dict[tuple, tuple] = {}
    for r in rows:
        ts = r[5]
        if tiers and r[4] not in tiers:
            continue
        if (lo is not None or hi is not None) and ts is None:
            continue
        if (lo is not None and ts < lo) or (hi is not None and ts > hi):
            continue
        if not pat.search(r[8]):
            continue
        # one hit per entry (the same raw message behind two summaries: the one in the tree now)
        key = (r[7],) if r[7] else (r[1], r[2], r[3])
        found.setdefault(key, r)
    order = sorted(found.values(), key=lambda r: (-(r[5] if r[5] is not None else float("-inf")),
                                                  r[1], r[2], r[7] or ""))
    hits = []
    for r in order[:k]:
        ids = [i for i in (r[7] or "").split(",") if i]
        leaf = len(ids) == 2
        hits.append(Hit(r[1], r[2], r[3], 1.0, r[4], ids, r[8],
                        _iso(r[5]) if r[5] is not None else None, r[0], ids[:1], ids[:1],
                        [(ids[0], ids[1])] if leaf and ids[1].startswith("e-") else [],
                        **about(r, term, exact=term), relevance=1.0, mode="exact"))
    return hits, len(order)
