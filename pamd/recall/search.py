"""Hybrid ranking: a BM25 list and a dense (hnswlib) list of candidates, fused.

`[index] fusion = "learned"` (the template's default) scores the candidates by
the small linear model of pamd.recall.fusion. `fusion = "rrf"` fuses ranks:

    fused(c) = lexical_weight / (fusion_k + rank_bm25(c))
             + dense_weight   / (fusion_k + rank_dense(c))

A chunk missing from a list gets nothing from it. Ranks, not raw scores, are
fused because BM25 and cosine live on unrelated scales (BASELINES.md: BM25
alone beats every dense model on LoCoMo, so neither side may drown the other).
Optional boosts multiply the fused score (both ways of fusing):

    * (1 + recency_boost * 0.5 ** (age_days / recency_half_life_days))
    * (1 + importance_boost * importance)

Both are 0 by default (see pamd.toml [index]). Ties go to the earlier
path:line, so equal scores order the same way in every rebuild.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import numpy as np

from pamd.core.config import IndexSettings, Settings, settings
from pamd.recall import fusion, maxsim, rerank
from pamd.recall.embed import Background, Embedder, query_pass
from pamd.recall.hit import Hit, snippet, split_role
from pamd.recall.lexical import _WORD, _idf, bm25, coverage, file_rank, tokenize
from pamd.recall.sources import TIERS
from pamd.recall.store.index import Index

CANDIDATES = 100


@dataclass
class Filters:
    tiers: tuple[str, ...] = ()
    since: datetime | None = None
    until: datetime | None = None

    def mask(self, cols: dict[str, np.ndarray]) -> np.ndarray | None:
        if not (self.tiers or self.since or self.until):
            return None
        m = cols["alive"].copy()
        if self.tiers:
            codes = [TIERS.index(t) for t in self.tiers]
            m &= np.isin(cols["tier"], codes)
        ts = cols["ts"]
        # a chunk without a time (plain notes) passes no time filter
        if self.since:
            m &= ~np.isnan(ts) & (ts >= self.since.timestamp())
        if self.until:
            m &= ~np.isnan(ts) & (ts <= self.until.timestamp())
        return m


def search(idx: Index, embedder: Embedder, query: str, k: int, config: Settings | Mapping[str, Any],
           filters: Filters | None = None, now: datetime | None = None,
           qvec: Background | None = None) -> list[Hit]:
    """The k best hits; `qvec` is the query's embedding already under way (api.recall starts it
    before the index check), else the query is embedded here, alongside the BM25 side."""
    ix = settings(config).index
    fk = float(ix.fusion_k)
    wl, wd = float(ix.lexical_weight), float(ix.dense_weight)
    cols = idx.cols
    alive = cols["alive"]
    if alive.shape[0] == 0 or not alive.any():
        return []
    mask = (filters or Filters()).mask(cols)
    allowed = alive if mask is None else mask
    n_allowed = int(allowed.sum())
    if n_allowed == 0:
        return []
    cand = max(CANDIDATES, 5 * k)
    learned = str(ix.fusion) == "learned"
    nw = fusion.NEIGHBOUR if learned else float(ix.neighbour_weight)
    dense = wd > 0 and idx.hnsw is not None
    mine = None
    if dense and qvec is None:
        qvec = mine = Background(query_pass, embedder, query)
    try:
        ls = lists(idx, query, cand, mask, allowed, n_allowed, nw, lexical=wl > 0,
                   qvec=qvec if dense else None)
    finally:
        if mine is not None:  # read by lists() unless it raised: joined on every way out
            mine.wait()
    rows = ls.rows
    # The learned model's features serve both ways of fusing: its calibrated probability is
    # each hit's `relevance`, comparable across queries (fusion.relevance).
    rows.update(idx.chunk_rows([lb for lb in {*ls.lex_top, *ls.dense_top} if lb not in rows]))
    cand, X = fusion.features(ls.own, ls.lex, query_cover(idx, query, ls), ls.lex_top,
                              ls.dense_top, ls.sims, cols, rows, query, idx.files(), ls.file_rank)
    X = with_maxsim(idx, cand, X, ls.qtok)
    relevance = fusion.relevance(cand, X)
    if learned:
        fused = _reranked(cand, X, rows, query, int(ix.rerank)) or fusion.scores(cand, X)
    else:
        fused = {}
        for r, lb in enumerate(ls.lex_top):
            fused[lb] = fused.get(lb, 0.0) + wl / (fk + r + 1)
        wf = float(ix.file_weight)
        if wf > 0 and ls.lex_top:
            _file_prior(fused, ls.file_rank, idx.files(), wf, fk)
        for r, lb in enumerate(ls.dense_top):
            fused[lb] = fused.get(lb, 0.0) + wd / (fk + r + 1)

    if not fused:
        return []
    _boost(fused, cols, ix, now)
    rows.update(idx.chunk_rows([lb for lb in fused if lb not in rows]))
    if not learned:
        _role_prior(fused, rows, query, float(ix.role_boost))
    labels = list(fused)
    skey = dict(zip(labels, cols["skey"][np.asarray(labels, np.int64)].tolist(), strict=True))
    ranked = sorted(fused.items(), key=lambda kv: (-kv[1], rows[kv[0]][1], rows[kv[0]][2], skey[kv[0]]))
    # A summary and the raw messages behind it (recall.deep) cite the same lines: one
    # place, one candidate, ranked by its best chunk; the others only lend their ids.
    first: dict[tuple[str, int, int, str | None], int] = {}
    same: dict[int, list[int]] = {}
    places: list[int] = []
    for lb, _ in ranked:
        r = rows[lb]
        # a raw leaf is a place of its own (a hit about that message, at the summary's lines):
        # a brain compressed to a few summaries still answers k hits, not k leaves in one
        loc = (r[1], r[2], r[3], _leaf(r))
        if loc in first:
            same[first[loc]].append(lb)
        else:
            first[loc] = lb
            same[lb] = []
            places.append(lb)
    per_hit = float(ix.hit_lines)
    if per_hit <= 0:
        groups = [[lb] for lb in places[:k]]
    else:
        spans = {lb: (rows[lb][2], rows[lb][3]) for lb in places}
        solo = {lb for lb in places if _leaf(rows[lb])}
        groups = shape(places, spans, cols["prev"], cols["next"], k, per_hit * k, solo)
    lent = lenders(groups, same, {lb: i for i, (lb, _) in enumerate(ranked)}, k)
    plain = set(places[:k])  # what would have been hits with one chunk per hit
    hits = []
    for g in groups:
        best = max(g, key=lambda lb: fused[lb])
        # the best chunk first, then the rest of the run in file order: a reader (and the
        # CLI's one-line cut) meets what matched, not the neighbour that opens the run
        order = [best, *(lb for lb in g if lb != best)]
        _, path, _s, _e, tier, ts, _imp, _ids, _t = rows[best]
        ids: list[str] = []
        entries: list[str] = []
        matched: list[str] = []
        leaves: list[tuple[str, str]] = []
        for lb in order:
            for x in [lb, *lent[lb]]:
                own = [i for i in rows[x][7].split(",") if i]
                if own and own[0] not in entries:
                    entries.append(own[0])
                if own and (lb == best or lb in plain):
                    if own[0] not in matched:
                        matched.append(own[0])
                    # the place ranked by a raw leaf behind the summary (a hand-corrected
                    # summary's old text is a leaf too, but via= names raw messages only)
                    if x == lb and len(own) == 2 and own[1].startswith("e-"):
                        leaves.append((own[0], own[1]))
                ids += [i for i in own if i not in ids]
        text = "\n".join(rows[lb][8] for lb in order)
        hits.append(Hit(path, rows[g[0]][2], rows[g[-1]][3], fused[best], tier, ids, text,
                        _iso(ts) if ts is not None else None, best, entries, matched, leaves,
                        **about(rows[best], query), relevance=relevance.get(best, 0.0)))
    return hits


def _leaf(row: tuple) -> str | None:
    """The raw leaf's id of a chunk that stands for one behind a summary (recall.deep), else None."""
    ids = row[7].split(",") if row[7] else []
    return ids[1] if len(ids) == 2 else None


def about(row: tuple, query: str, exact: str | None = None) -> dict:
    """The hit's id, summary, role and snippet, from its best chunk's row."""
    ids = [i for i in row[7].split(",") if i] if row[7] else []
    leaf = ids[1] if len(ids) == 2 else None
    role, said = split_role(row[8], bool(ids))
    return {"id": leaf or (ids[0] if ids else None), "summary": ids[0] if leaf else None,
            "role": role, "snippet": snippet(said, query, exact=exact)}


def _reranked(cand: list[int], X: np.ndarray, rows: dict[int, tuple], query: str,
              n: int) -> dict[int, float] | None:
    """Learned fusion with the cross-encoder's verdict on the first n (pamd.recall.rerank),
    or None where it has none: rerank off or not installed, a query or texts it cannot
    read, or nothing among the n it would call an answer. Asked for and not installed: an error."""
    rerank.require(n)
    reranker = rerank.load() if n > 0 and cand and rerank.applies(query) else None
    if reranker is None:
        return None
    top = fusion.first(cand, X, rows, n)
    texts = [rows[lb][8] for lb in top]
    judged = [j for j, t in enumerate(texts) if rerank.applies(t)]
    if not judged:
        return None
    ce = np.full(len(top), np.nan)
    try:
        ce[judged] = reranker.scores(query, [texts[j] for j in judged])
    except Exception as exc:  # onnxruntime or the model broke: rank as without it
        rerank.failed(exc)
        return None
    if float(np.nanmax(ce)) < rerank.FLOOR:
        return None
    return fusion.scores(cand, np.hstack([X, fusion.rerank_features(cand, top, ce)]))


def lenders(groups: list[list[int]], same: dict[int, list[int]], order: dict[int, int],
            k: int) -> dict[int, list[int]]:
    """Per place of the hits, the chunks at the same lines that lend it their ids, best first.

    Only chunks ranked above the last place used lend, and of those the k best, plus each
    place's best one: with few places (a brain compressed to a handful of summaries) the
    last place may rank far down, and everything above it would lend its ids.
    """
    used = [lb for g in groups for lb in g]
    cut = max((order[lb] for lb in used), default=-1)
    above = {lb: [m for m in same[lb] if order[m] < cut] for lb in used}
    chosen = set(sorted((m for ms in above.values() for m in ms), key=order.__getitem__)[:k])
    chosen |= {ms[0] for ms in above.values() if ms}
    return {lb: [m for m in ms if m in chosen] for lb, ms in above.items()}


@dataclass
class Lists:
    """What each side found: BM25 of every label (own, and with neighbours), the BM25
    candidate list, the dense candidate list and its cosines (best first), and the rows
    of the BM25 candidates (fetched while the query was still embedding)."""

    own: np.ndarray
    lex: np.ndarray
    lex_top: list[int]
    dense_top: list[int]
    sims: list[float]
    rows: dict[int, tuple]
    qtok: np.ndarray | None = None  # the query's tokens (pamd.recall.maxsim), when it has them
    file_rank: np.ndarray | None = None  # lexical.file_rank of `lex` (None: no lexical side)


def with_maxsim(idx: Index, cand: list[int], X: np.ndarray, qtok: np.ndarray | None) -> np.ndarray:
    """X with fusion's `maxsim` column when the query and the index have token states (X as
    it is otherwise: fusion then ranks with the weights of the nine features alone)."""
    if qtok is None or not cand or not idx.has_tokens():
        return X
    toks = idx.tokens(cand)
    if not toks:
        return X
    return np.column_stack([X, maxsim.feature(maxsim.scores(qtok, [toks.get(lb) for lb in cand]))])


def lists(idx: Index, query: str, cand: int, mask: np.ndarray | None, allowed: np.ndarray,
          n_allowed: int, neighbour_weight: float, lexical: bool = True,
          qvec: Background | None = None) -> Lists:
    """Both candidate lists; the dense one only with `qvec` (the query's embedding under way)."""
    cols = idx.cols
    n = cols["alive"].shape[0]
    own = lex = np.zeros(n, np.float32)
    lex_top: list[int] = []
    ranked_files = None
    if lexical:
        terms = tokenize(query)
        uniq = sorted(set(terms))
        posts = idx.postings(uniq)
        have = [t for t in uniq if t in posts]
        weights = [float(terms.count(t)) for t in have]
        own = bm25([posts[t] for t in have], cols["dl"], cols["alive"], weights, idx.memo(),
                   list(zip(have, weights, strict=True)))
        lex = own
        if neighbour_weight > 0:
            memo = idx.memo()
            if "neighbours" not in memo:  # words count across cprev/cnext (store.columns.COLS)
                memo["neighbours"] = neighbour_plan(cols, ("cprev", "cnext"))
                memo["bytes"] += 16 * cols["prev"].shape[0]
            lex = _context(own, cols, neighbour_weight, memo["neighbours"])
        if lex is own:
            lex = own.copy()
        lex[~allowed] = 0.0
        if mask is not None:  # neighbours outside a filter still lend their words; only to `lex`
            own = np.where(allowed, own, np.float32(0.0))
        lex_top = _top(lex, cand, cols["skey"])
        ranked_files = file_rank(lex, idx.files())  # here, while the query may still embed
    dense_top: list[int] = []
    sims: list[float] = []
    rows: dict[int, tuple] = {}
    qtok = None
    if qvec is not None and idx.hnsw is not None:
        rows = idx.chunk_rows(lex_top)  # the BM25 candidates' rows, while the query embeds
        q = qvec.result()
        if isinstance(q, tuple):  # embed.query_pass: (vector, tokens)
            q, qtok = q
        q = q.reshape(1, -1)
        kk = min(cand, n_allowed)
        found = _graph_knn(idx, q, kk, allowed, mask) + _delta_knn(idx, q, kk, allowed)
        # rank by exact similarity, ties by the chunks' stable keys: the same order in every
        # index of the tree, however refreshes numbered its chunks (store.columns.STABLE_COL)
        keys = cols["skey"][np.asarray([lb for _, lb in found], np.int64)].tolist()
        order = sorted((d, key, lb) for (d, lb), key in zip(found, keys, strict=True))[:kk]
        dense_top = [lb for _, _, lb in order]
        sims = [1.0 - dd for dd, _, _ in order]  # hnswlib "ip" distance is 1 - inner product
    return Lists(own, lex, lex_top, dense_top, sims, rows, qtok, ranked_files)


def _graph_knn(idx: Index, q: np.ndarray, kk: int, allowed: np.ndarray,
               mask: np.ndarray | None) -> list[tuple[float, int]]:
    """(distance, label) of the graph's kk nearest allowed chunks (hnswlib "ip": 1 - cosine)."""
    if idx.delta is not None:  # the graph holds fewer than all: ask it for no more than it has
        kk = min(kk, int(allowed[:idx.graph_labels].sum()))
    if kk <= 0:
        return []
    idx.hnsw.set_ef(max(2 * kk, 64))
    flt = None if mask is None else (lambda lb: bool(allowed[lb]))
    try:
        labels, dist = idx.hnsw.knn_query(q, k=kk, filter=flt, num_threads=1)
    except RuntimeError:  # fewer reachable elements than asked for
        labels, dist = idx.hnsw.knn_query(q, k=max(1, kk // 2), filter=flt, num_threads=1)
    return list(zip(dist[0].tolist(), labels[0].tolist(), strict=True))


def _delta_knn(idx: Index, q: np.ndarray, kk: int, allowed: np.ndarray) -> list[tuple[float, int]]:
    """The same for the chunks waiting beside the graph (store.refresh.DELTA_MAX), by exact search
    in hnswlib (Index.delta_index): its distances are the graph's to the last bit, so two chunks
    with one text (one vector), one in the graph and one beside it, tie exactly and are ordered
    by their stable keys, as in an index that holds both in its graph."""
    if idx.delta is None or not idx.delta.shape[0]:
        return []
    first, n = idx.graph_labels, idx.delta.shape[0]
    ok = allowed[first:first + n]
    n_ok = int(ok.sum())
    if not n_ok:
        return []
    # all of them when some may not be returned (retired, or outside a filter): filtered here,
    # not by a Python callback per chunk
    labels, dist = idx.delta_index().knn_query(q, k=min(kk, n_ok) if n_ok == n else n, num_threads=1)
    found = [(d, lb) for d, lb in zip(dist[0].tolist(), labels[0].tolist(), strict=True) if ok[lb - first]]
    return found[:kk]


def query_cover(idx: Index, query: str, ls: Lists) -> np.ndarray:
    """lexical.coverage of the candidates of both lists, for every label (0 outside them).

    Each term's sorted postings and idf over live chunks are kept in Index.memo()."""
    cols = idx.cols
    n = cols["alive"].shape[0]
    out = np.zeros(n)
    cand = np.asarray(sorted({*ls.lex_top, *ls.dense_top}), np.int64)
    if not cand.shape[0]:
        return out
    memo = idx.memo()
    alive = cols["alive"]
    n_alive = int(alive.sum())
    terms = []
    for t, (docs, _tfs) in idx.postings(sorted(set(tokenize(query)))).items():
        got = memo.get(("cover", t))
        if got is None:  # postings are in label order (labels only grow); sorted if ever not
            df = int(alive[docs].sum())
            ordered = bool((docs[1:] > docs[:-1]).all())
            got = memo["cover", t] = (docs if ordered else np.sort(docs), _idf(n_alive, df) if df else 0.0)
            memo["bytes"] += 0 if ordered else docs.nbytes
        terms.append(got)
    out[cand] = coverage(terms, cand, cols["cprev"], cols["cnext"])
    return out


def shape(ranked: list[int], spans: dict[int, tuple[int, int]], prev: np.ndarray,
          nxt: np.ndarray, k: int, budget: float, solo: set[int] = frozenset()) -> list[list[int]]:
    """Ranked chunks -> at most k hits, each a run of adjacent chunks of one file, in file order.

    Candidates are taken best first. One next to a hit already chosen (the turn
    before or after it) joins that hit, which then spans both, instead of taking
    a slot of its own; so a question and its answer come back as one hit and the
    freed slot goes to the next candidate. The plain top k (the first k) are
    always in: they cover some lines on disk, counted as the hits show them (two
    of them that are neighbours are one hit, with the blank line between them).
    The hits together cover at most max(budget, those lines): a later joiner or
    new hit that would pass that is skipped, so shaping never makes the reader
    take more lines than the budget or than the plain top k shown as hits; a
    neighbour that does not fit may still be a hit of its own. Joining spends
    the budget of the last slots, so there may be fewer than k hits, each wider.
    Hits keep the rank of their best chunk.

    `prev`/`next` name a neighbouring place by its representative chunk
    (store.columns.link_neighbours), and a summary's place holds its raw leaves too
    (recall.deep): the ranked chunk standing for a place may be any of them, and which one
    represents it depends on the order they were indexed in. So a join compares places: a chunk's own
    place is the one its neighbour points back at. A chunk in `solo` (a raw leaf behind a
    summary, a hit about that message) neither joins a hit nor is joined by one.
    """
    groups: list[list[int]] = []
    used = 0
    # each ranked chunk's neighbours and the chunk they name its place by (every chunk of a
    # place has the same neighbours), read from the columns once, not an item at a time
    lbs = np.asarray(ranked, np.int64)
    pv, nx = prev[lbs], nxt[lbs]
    reps = np.where(pv >= 0, nxt[np.maximum(pv, 0)], np.where(nx >= 0, prev[np.maximum(nx, 0)], lbs))
    before, after = dict(zip(ranked, pv.tolist(), strict=True)), dict(zip(ranked, nx.tolist(), strict=True))
    rep = dict(zip(ranked, reps.tolist(), strict=True))

    def span(g: list[int]) -> int:
        return spans[g[-1]][1] - spans[g[0]][0] + 1

    def place(lb: int, cap: float) -> None:
        nonlocal used
        me = rep[lb]
        for g in groups if lb not in solo else ():
            if g[0] in solo:
                continue
            if after[g[-1]] == me or before[g[0]] == me:
                ng = g + [lb] if after[g[-1]] == me else [lb] + g
                extra = span(ng) - span(g)
                if used + extra <= cap:
                    g[:] = ng
                    used += extra
                    return
                break  # a neighbour that does not fit may still be a hit of its own
        if len(groups) < k and (used + span([lb]) <= cap or not groups):
            groups.append([lb])
            used += span([lb])

    for lb in ranked[:k]:  # the plain top k, whatever they cover
        place(lb, float("inf"))
    cap = max(budget, used)
    for lb in ranked[k:]:
        if len(groups) >= k and used >= cap:
            break
        place(lb, cap)
    return groups


def _context(lex: np.ndarray, cols: dict[str, np.ndarray], w: float, plan=None) -> np.ndarray:
    """Add w x the neighbours' BM25: an answer often shares words only with the turn before it.

    `plan` is neighbour_plan(cols) (kept in Index.memo()): a label with one neighbour per side
    gets its addition by a gather; only labels several chunks point at (a summary's raw leaves
    share its neighbours) take np.add.at, in label order, so every float32 sum is the same as
    adding each hit's share one by one, prev side first.
    """
    if w <= 0:
        return lex
    plan = plan or neighbour_plan(cols)
    out = lex.copy()
    padded = np.append(lex, np.float32(0))  # index n: no neighbour there, adds 0.0 (x + 0.0 == x)
    for gather, src, tgt in plan:
        out += w * padded[gather]
        if src.shape[0]:
            ok = lex[src] > 0
            np.add.at(out, tgt[ok], w * lex[src[ok]])
    return out


def neighbour_plan(cols: dict[str, np.ndarray], sides: tuple[str, str] = ("prev", "next")
                   ) -> list[tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """Per side (prev, next): for each label, the one label whose side-neighbour it is (n: none),
    and the (source, target) pairs of targets with more than one such label, sources ascending."""
    plan = []
    for side in sides:
        nb = cols[side]
        n = nb.shape[0]
        src = np.flatnonzero(nb >= 0)
        tgt = nb[src]
        many = np.bincount(tgt, minlength=n)[tgt] > 1
        gather = np.full(n, n, np.int64)
        gather[tgt[~many]] = src[~many]
        plan.append((gather, src[many], tgt[many]))
    return plan


def _file_prior(fused: dict[int, float], rank: np.ndarray | None, files: tuple[np.ndarray, np.ndarray],
                w: float, fk: float) -> None:
    """RRF term for the rank of the chunk's file by summed BM25 (`rank`: lexical.file_rank)."""
    if rank is None or not (rank >= 0).any():
        return
    lbs = np.fromiter(fused, np.int64, len(fused))
    for lb, r in zip(lbs.tolist(), rank[files[1][lbs]].tolist(), strict=True):
        if r >= 0:
            fused[lb] += w / (fk + r + 1)


def _role_prior(fused: dict[int, float], rows: dict[int, tuple], query: str, w: float) -> None:
    """x (1 + w) for entries whose speaker the query names ("what did Anna say about ...").

    An entry chunk's text is `role: message`; a role counts as named when it is a
    whole word of the query (case-insensitive). Plain sections have no role.
    """
    if w <= 0:
        return
    words = set(_WORD.findall(query.lower()))
    for lb in fused:
        row = rows[lb]
        role, sep, _ = row[8].partition(": ")
        if sep and row[7] and role.lower() in words:
            fused[lb] *= 1.0 + w


def _top(scores: np.ndarray, n: int, skey: np.ndarray) -> list[int]:
    """The n best labels of those scoring above 0 (none scores below), ties by stable key
    (store.columns.STABLE_COL): labels depend on refresh order, so every label tied at the cut
    competes and the key picks, as in a rebuild."""
    nnz = np.count_nonzero(scores)
    if nnz > n:
        above, tied = _cut(scores, n, nnz)
        need = n - above.shape[0]
        if tied.shape[0] > need:  # thousands tie on a small vocabulary: pick, do not sort them all
            tied = tied[np.argpartition(skey[tied], need - 1)[:need]]
        pos = np.concatenate([above, tied])
    else:
        pos = np.flatnonzero(scores > 0)
    return pos[np.lexsort((skey[pos], -scores[pos]))][:n].tolist()


def _cut(scores: np.ndarray, n: int, nnz: int) -> tuple[np.ndarray, np.ndarray]:
    """The labels scoring above the n-th best of the `nnz` that score, and those at it."""
    pos = _above(scores, n) if 4 * nnz > 3 * scores.shape[0] else None
    if pos is None:
        pos = np.flatnonzero(scores > 0)
    part = scores[pos]
    cut = part[np.argpartition(-part, n - 1)[n - 1]]
    return pos[part > cut], pos[part == cut]


_SAMPLE_STEP = 16


def _above(scores: np.ndarray, n: int) -> np.ndarray | None:
    """The labels scoring at least t > 0, for a t that every-16th-label sample puts near the
    2n-th best: when they are n or more, the n-th best and every label tied with it are
    among them. Most labels scoring (a query of common words), this reads the row twice
    instead of sorting all of it. None when the sample's t leaves fewer than n (or is 0)."""
    sample = scores[::_SAMPLE_STEP]
    j = 2 * (n // _SAMPLE_STEP) + 8
    if sample.shape[0] <= 4 * j:
        return None
    t = np.partition(sample, sample.shape[0] - j)[sample.shape[0] - j]
    if not t > 0:
        return None
    pos = np.flatnonzero(scores >= t)
    return pos if pos.shape[0] >= n else None


def _boost(fused: dict[int, float], cols: dict[str, np.ndarray], ix: IndexSettings, now) -> None:
    rb, ib = float(ix.recency_boost), float(ix.importance_boost)
    if not (rb or ib):
        return
    half = float(ix.recency_half_life_days) or IndexSettings.recency_half_life_days  # 0: the default
    t_now = now.timestamp() if now else None
    for lb in fused:
        f = 1.0
        ts = cols["ts"][lb]
        if rb and t_now is not None and not np.isnan(ts):
            f *= 1.0 + rb * 0.5 ** (max(0.0, t_now - ts) / 86400.0 / half)
        imp = cols["importance"][lb]
        if ib and not np.isnan(imp):
            f *= 1.0 + ib * float(imp)
        fused[lb] *= f


def _iso(ts: float) -> str:
    from pamd.core.entry import fmt_time

    return fmt_time(datetime.fromtimestamp(ts, tz=UTC))
