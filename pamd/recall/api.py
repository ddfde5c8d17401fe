"""Recall as a library: `index(brain)` and `recall(brain, query, ...)`.

The CLI, a future `pamd serve`, the pipeline's re-index step and the
benchmarks all call these two functions.
"""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from pamd.core.config import Settings, settings
from pamd.errors import PamdError
from pamd.myelin import recall_log
from pamd.recall import exact
from pamd.recall.embed import Background, Changed, Deferred, Embedder, deferred, load, query_pass
from pamd.recall.freshness import files_changed
from pamd.recall.lexical import searchable
from pamd.recall.search import Filters, search
from pamd.recall.sources import TIERS
from pamd.recall.store.index import Index, lock
from pamd.recall.store.manifest import conflicted
from pamd.recall.store.refresh import refresh
from pamd.recall.store.report import Report

MAX_QUERY = 4000
_SURROGATE = re.compile(r"[\ud800-\udfff]")
# Open indexes by state dir: a long-lived caller (benchmarks, a future `pamd serve`)
# keeps the loaded graph between queries; a CLI process uses it once.
_OPEN: dict[str, Index] = {}


class Hits(list):
    """The hits of one recall, best first (ranked) or newest first (exact), with the mode that
    found them and, for exact mode, how many entries hold the term in all (beyond k)."""

    def __init__(self, hits=(), mode: str = "ranked", total: int | None = None) -> None:
        super().__init__(hits)
        self.mode = mode
        self.total = len(self) if total is None else total


def embedder_for(config: Settings | Mapping[str, Any]) -> Embedder:
    ix = settings(config).index
    return load(str(ix.embedder), str(ix.model))


def index(brain, force: bool = False, embedder: Embedder | None = None,
          progress=None) -> Report:
    """Build or refresh the brain's index; `force` starts from empty (the vector cache stays).
    The model is loaded only if something is to be embedded."""
    cfg = settings(brain.config)  # built once, passed down: every step reads it
    ix = cfg.index
    emb = embedder or deferred(str(ix.embedder), str(ix.model))
    cached = _OPEN.pop(str(brain.index_state), None)
    if cached is not None:
        cached.close()
    lazy = emb if isinstance(emb, Deferred) else None
    with lock(brain.index_state):
        if lazy is not None and (force or files_changed(brain.root, brain.index_state)):
            lazy.prefetch()  # loaded while the refresh reads and chunks the files
        try:
            rep, idx = refresh(brain.root, brain.index_state, emb, cfg, force, progress, graph=False)
        except Changed:  # another model than expected: the refresh starts over with it
            emb = embedder_for(cfg)
            rep, idx = refresh(brain.root, brain.index_state, emb, cfg, force, progress, graph=False)
        finally:
            if lazy is not None:
                lazy.wait()
        idx.close()
    return rep


def left_out(brain) -> tuple[str, ...]:
    """Files the last refresh of this process left out of the index for their conflict markers."""
    idx = _OPEN.get(str(brain.index_state))
    return conflicted(idx.meta) if idx is not None else ()


def close(brain) -> None:
    """Let go of the brain's open index (a caller about to delete the brain's folder)."""
    cached = _OPEN.pop(str(brain.index_state), None)
    if cached is not None:
        cached.close()


def normalized(query: str) -> str:
    """The query as recall reads it: argv carries bytes that are not UTF-8 as lone surrogates
    (surrogateescape); they become U+FFFD, as `pamd remember` stores them, so the log, the
    reranker and the output can encode the query. Runs of white space are one space."""
    return " ".join(_SURROGATE.sub("\ufffd", query or "").split())


def recall(brain, query: str, k: int = 10, tiers: tuple[str, ...] = (),
           since: datetime | None = None, until: datetime | None = None,
           now: datetime | None = None, embedder: Embedder | None = None,
           log: bool = True, progress=None, mode: str = "auto") -> Hits:
    """The k best hits for `query`, refreshing a stale index first; logs each hit (not synapse/).

    `mode`: "ranked" (BM25 + dense, fused), "exact" (every entry holding the query as a whole
    identifier, newest first: recall.exact) or "auto" (exact when the query is one
    identifier-like token and some entry holds it, else ranked).
    progress(done, total) is called as the refresh embeds new chunks, if it does."""
    query = normalized(query)
    if not query:
        raise PamdError("empty query", "say what to recall, e.g. pamd recall 'deploy friday'")
    if not searchable(query):  # nearest by meaning to nothing: random hits, logged as recalls
        raise PamdError(f"no word to search for in {query!r}: stop words and punctuation match anything",
                        "name what to recall, e.g. pamd recall 'deploy friday'")
    if len(query) > MAX_QUERY:
        raise PamdError(f"query longer than {MAX_QUERY} characters", "ask for less at a time")
    if k < 1:
        raise PamdError("-k must be at least 1")
    bad = [t for t in tiers if t not in TIERS]
    if bad:
        raise PamdError(f"unknown tier {bad[0]!r}", f"use one of: {', '.join(TIERS)}")
    if since and until and since > until:
        raise PamdError("--since is after --until", "swap them")
    if mode not in ("auto", "ranked", "exact"):
        raise PamdError(f"unknown recall mode {mode!r}", "use auto, ranked or exact")
    term = query.strip("`'\"") if mode == "exact" else exact.identifier(query) if mode == "auto" else None
    if mode == "exact" and not term:
        raise PamdError("no term to look for", "name it, e.g. pamd recall --exact ensure_worker")
    cfg = settings(brain.config)  # built once, passed down: every step reads it
    emb = embedder or embedder_for(cfg)
    # The query's vector does not depend on the index: embed it while the index is checked
    # (and maybe refreshed, embedding passages: only with a backend safe for that, e5-small).
    dense = float(cfg.index.dense_weight) > 0
    qvec = Background(query_pass, emb, query) if dense and mode != "exact" and getattr(emb, "concurrent", False) \
        else None
    try:
        with lock(brain.index_state):
            key = str(brain.index_state)
            _, idx = refresh(brain.root, brain.index_state, emb, cfg,
                                   progress=progress, idx=_OPEN.pop(key, None))
            flt = Filters(tuple(tiers), since, until)
            hits = Hits()
            if term:
                found, total = exact.find(idx, term, k, tuple(tiers), since, until)
                if found or mode == "exact":
                    hits = Hits(found, "exact", total)
            try:
                if hits.mode != "exact":
                    hits = Hits(search(idx, emb, query, k, cfg, flt, now, qvec))
            except sqlite3.DatabaseError:  # a damaged page only the search read: rebuild, once
                idx.wipe()
                _, idx = refresh(brain.root, brain.index_state, emb, cfg, True, progress, idx)
                hits = Hits(search(idx, emb, query, k, cfg, flt, now, qvec))
            _OPEN[key] = idx
    finally:
        # search() returns early without the query's vector when a filter leaves nothing
        # (and an error can leave it unread): the thread must still end before we return.
        if qvec is not None:
            qvec.wait()
    if log and brain.writable():  # a reader of a read-only brain leaves no trace in it
        # Entries in the tree the query matched: not the raw leaves behind them (in history),
        # nor the neighbours hit shaping joined for context (they would myelinate as
        # reflexes by sitting next to what was asked).
        # The leaves that matched behind a summary are logged beside it, so what the
        # summary preloads is what was recalled (myelin.shown).
        # Not another brain's knowledge under synapse/: ids are content hashes, so its
        # entries share ids with this brain's own (a clone, the same message ingested),
        # and the fold would myelinate those. It is read-only here, and myelinates at its source.
        own = [h for h in hits if h.tier != "synapse"]
        # once each: ten leaves of one summary are ten hits, and one recall of the summary
        ids = list(dict.fromkeys(i for h in own for i in h.matched))
        leaves = list(dict.fromkeys(pair for h in own for pair in h.leaves))
        recall_log.append(brain.state_dir, ids, query, now or datetime.now(UTC), leaves=leaves)
    return hits
