"""Learned fusion: BM25 and dense evidence combined by a small linear model.

Reciprocal rank fusion (`fusion = "rrf"`, pamd.recall.search) keeps only each
list's ranks. `fusion = "learned"` (the template's default) scores every
candidate — the top 100 of BM25 and the top 100 of the dense index — by a
weighted sum of the FEATURES below, and ranks by that sum. The features are
plain and generic: how strongly and how high each list matches the chunk
(BM25 also through its neighbours in the file: a reply answers the turn
before it), how high its file (a session, a day) ranks as a whole,
whether the query names the chunk's speaker, and how much of the query's
wording the chunk and its neighbours hold between them. Scores enter normalised (BM25
by the best, cosine by the spread of the dense list), so the weights carry
over between embedders: fitted with e5-small, they lift USE as much.

The WEIGHTS are a logistic regression ("does this chunk hold evidence for
the question?") fitted on three LoCoMo conversations (conv-26, conv-30,
conv-41) and checked on the other seven, which it never saw:
`python benchmarks/locomo_fusion.py fit` reproduces them, docs/benchmarks.md
("Learned fusion") has the numbers. Nine weights on ranks and normalised
scores carry no text of the data set.

Cosines are known for the dense top 100 only (what hnswlib returned); a BM25
candidate outside it gets the 100th cosine, a bound on its own. Everything
here is a function of the candidate lists, so the same index gives the same
order every time.
"""

from __future__ import annotations

import numpy as np

from pamd.recall.lexical import _WORD, file_rank

# BM25 of the previous/next chunk counted into a chunk's own (the `lex` list).
NEIGHBOUR = 0.6

FEATURES = (
    "lex",          # BM25 with neighbours, / the best
    "lex_rank",     # 1 / (10 + rank in the BM25 list), 0 when not in it
    "own",          # the chunk's own BM25, / the best
    "dense",        # (cosine - the best) / (the best - the 100th): -1 .. 0
    "dense_rank",   # 1 / (10 + rank in the dense list), 0 when not in it
    "file_lex",     # 1 / (10 + rank of its file by summed BM25), 0 when the file has none
    "file_dense",   # 1 / (10 + rank of its file by its best cosine), 0 when not in the dense list
    "role",         # 1 when the query names the entry's speaker
    "cover",        # share of the query's terms (by idf) in the chunk or its neighbours
)

# Fitted by benchmarks/locomo_fusion.py (see the module docstring); per feature, in order.
WEIGHTS = np.array([
    -0.3495,  # lex
    12.9361,  # lex_rank
    1.9550,   # own
    1.2553,   # dense
    13.7149,  # dense_rank
    5.9982,   # file_lex
    16.0442,  # file_dense
    2.7524,   # role
    1.4216,   # cover
])


def features(own: np.ndarray, lex: np.ndarray, cover: np.ndarray, lex_top: list[int], dense_top: list[int],
             sims: list[float], cols: dict[str, np.ndarray], rows: dict[int, tuple],
             query: str, files: tuple[np.ndarray, np.ndarray] | None = None,
             ranked_files: np.ndarray | None = None) -> tuple[list[int], np.ndarray]:
    """(candidates, X): one row of FEATURES per candidate, candidates in label order.

    own/lex: BM25 of every label without/with neighbours; cover: lexical.coverage of every
    label (search.query_cover: of the candidates, 0 elsewhere); lex_top: the BM25 list
    (labels, best first); dense_top/sims: the dense list and its cosines, best
    first; rows: `Index.chunk_rows` of the candidates (text at 8, ids at 7); files:
    `Index.files()` (sorted distinct file ids, each label's index among them), else computed;
    ranked_files: file_rank(lex, files), else computed.
    """
    cand = sorted(set(lex_top) | set(dense_top))
    if not cand:
        return [], np.zeros((0, len(FEATURES)))
    c = np.asarray(cand, np.int64)
    fileid = cols["fileid"]
    lmax = float(lex.max()) or 1.0
    omax = float(own.max()) or 1.0
    at = {lb: j for j, lb in enumerate(cand)}  # the candidates' rows, not arrays of every label

    def rank_of(top: list[int]) -> np.ndarray:
        """1 / (10 + rank) per candidate in the list, 0 for the rest."""
        out = np.zeros(len(cand))
        if top:
            out[[at[lb] for lb in top]] = 1.0 / (10 + np.arange(len(top)))
        return out

    dmax = float(sims[0]) if sims else 0.0
    floor = float(sims[-1]) if sims else 0.0
    sim = np.full(len(cand), floor)  # outside the dense list: the floor
    # cosines differ in scale between models: measured against the list's own spread
    spread = (dmax - floor) or 1.0
    if dense_top:
        sim[[at[lb] for lb in dense_top]] = sims

    f = fileid[c]
    file_lex = np.zeros(len(cand))
    if files is None:
        fids, of_label = np.unique(fileid, return_inverse=True)
        files = (fids, of_label.reshape(-1))
    r = (file_rank(lex, files) if ranked_files is None else ranked_files)[files[1][c]]
    file_lex[r >= 0] = 1.0 / (10 + r[r >= 0])
    by_cosine: dict[int, int] = {}
    for lb in dense_top:  # best first: a file ranks as its best chunk
        by_cosine.setdefault(int(fileid[lb]), len(by_cosine))
    file_dense = np.array([1.0 / (10 + by_cosine[x]) if x in by_cosine else 0.0 for x in f.tolist()])

    words = set(_WORD.findall(query.lower()))
    role = np.zeros(len(cand))
    for j, lb in enumerate(cand):
        row = rows.get(lb)
        if row is None:
            continue
        name, sep, _ = row[8].partition(": ")
        role[j] = 1.0 if sep and row[7] and name.lower() in words else 0.0

    X = np.column_stack([
        lex[c] / lmax,
        rank_of(lex_top),
        own[c] / omax,
        (sim - dmax) / spread,
        rank_of(dense_top),
        file_lex,
        file_dense,
        role,
        cover[c],
    ])
    return cand, X


# With `[index] rerank = N` (pamd.recall.rerank): the cross-encoder's judgement of the
# first N candidates (by WEIGHTS) enters as three more features, and every weight is
# refitted with them (benchmarks/locomo_fusion.py fit --rerank 30, the N measured).
RERANK_FEATURES = (
    "ce",         # (cross-encoder logit - the best) / 10; unscored: (the lowest - 1 - the best) / 10
    "ce_rank",    # 1 / (10 + rank by the cross-encoder), 0 when not scored
    "ce_scored",  # 1 when among the N scored
)

RERANK_WEIGHTS = np.array([
    0.4527,   # lex
    0.3233,   # lex_rank
    -0.2918,  # own
    0.1821,   # dense
    12.9034,  # dense_rank
    5.2824,   # file_lex
    8.9684,   # file_dense
    1.9410,   # role
    1.4670,   # cover
    1.6370,   # ce
    31.5843,  # ce_rank
    -1.2171,  # ce_scored
])


# With token states (pamd.recall.maxsim: e5-small on onnxruntime), a tenth feature, after
# the nine: MaxSim of the query's tokens against the chunk's, (s - best) / (best - worst)
# over the candidates. Its weights are fitted the same way, with and without the
# cross-encoder (then its three features come after `maxsim`); an embedder or an index
# without token states ranks with WEIGHTS / RERANK_WEIGHTS, as before.
MAXSIM_FEATURES = ("maxsim",)

MAXSIM_WEIGHTS = np.array([
    -0.2911,  # lex
    11.4255,  # lex_rank
    0.3025,   # own
    -0.3505,  # dense
    17.3400,  # dense_rank
    6.5132,   # file_lex
    13.2196,  # file_dense
    2.2620,   # role
    1.3212,   # cover
    5.2992,   # maxsim
])

MAXSIM_RERANK_WEIGHTS = np.array([
    0.4398,   # lex
    0.9272,   # lex_rank
    -0.6675,  # own
    -0.1357,  # dense
    13.0319,  # dense_rank
    5.4883,   # file_lex
    9.1635,   # file_dense
    1.9019,   # role
    1.4146,   # cover
    1.7362,   # maxsim
    1.3738,   # ce
    31.2827,  # ce_rank
    -1.0472,  # ce_scored
])


def weights_for(X: np.ndarray) -> np.ndarray:
    """The weights for these feature columns: nine, + maxsim, + the cross-encoder's three."""
    n = X.shape[1]
    base = len(FEATURES)
    table = {base: WEIGHTS, base + 1: MAXSIM_WEIGHTS, base + len(RERANK_FEATURES): RERANK_WEIGHTS,
             base + 1 + len(RERANK_FEATURES): MAXSIM_RERANK_WEIGHTS}
    return table[n]


def first(cand: list[int], X: np.ndarray, rows: dict[int, tuple], n: int) -> list[int]:
    """The n best candidates by WEIGHTS (MAXSIM_WEIGHTS with its column; ties by path and
    line), best first: what is reranked."""
    s = X @ weights_for(X)
    order = sorted(range(len(cand)), key=lambda j: (-s[j], rows[cand[j]][1], rows[cand[j]][2]))
    return [cand[j] for j in order[:n]]


def rerank_features(cand: list[int], top: list[int], ce: np.ndarray) -> np.ndarray:
    """RERANK_FEATURES per candidate, from the cross-encoder's logits `ce` for `top`.

    `top` is in fusion's order. A NaN logit is a text the model cannot judge (another
    script): it takes the logit of the first judged text after it in that order (the
    lowest judged logit when none follows), so it stays ahead of the judged texts
    fusion put behind it and the cross-encoder neither lifts nor sinks it.
    """
    out = np.zeros((len(cand), len(RERANK_FEATURES)))
    ce = np.asarray(ce, np.float64)
    known = ~np.isnan(ce)
    if not top or not known.any():
        return out
    if not known.all():
        judged = np.flatnonzero(known)
        ce = ce.copy()
        for j in np.flatnonzero(~known):
            after = judged[judged > j]
            ce[j] = ce[after[0]] if after.size else ce[judged].min()
    best, low = float(ce.max()), float(ce.min())
    logit = dict(zip(top, ce.tolist(), strict=True))
    rank = {top[j]: r for r, j in enumerate(np.argsort(-ce, kind="stable").tolist())}
    for i, lb in enumerate(cand):
        if lb in logit:
            out[i] = ((logit[lb] - best) / 10, 1.0 / (10 + rank[lb]), 1.0)
        else:
            out[i, 0] = (low - 1 - best) / 10
    return out


def scores(cand: list[int], X: np.ndarray, weights: np.ndarray | None = None) -> dict[int, float]:
    """label -> exp(w·x - best): positive, in (0, 1], so the boosts of [index] still multiply."""
    if not cand:
        return {}
    s = X @ (weights_for(X) if weights is None else weights)
    s = np.exp(s - s.max())
    return dict(zip(cand, s.tolist(), strict=True))


# The intercepts of WEIGHTS and MAXSIM_WEIGHTS: fitted with the weights held fixed, on the
# same rows as they were (benchmarks/locomo_fusion.py fit --intercept), so that
# sigmoid(w·x + b) is the model's probability that a candidate holds evidence.
INTERCEPT = -9.4589
MAXSIM_INTERCEPT = -7.5099


def relevance(cand: list[int], X: np.ndarray) -> dict[int, float]:
    """label -> the calibrated probability, in [0, 1], that the candidate answers the query.

    Not relative to the query's best candidate (as `scores` is), so a hit's relevance can be
    compared across queries. It reads the nine features (and maxsim) only: with the
    cross-encoder's three the order changes, not the probability.
    """
    if not cand:
        return {}
    base = len(FEATURES)
    n = base + 1 if X.shape[1] in (base + 1, base + 1 + len(RERANK_FEATURES)) else base
    w, b = (MAXSIM_WEIGHTS, MAXSIM_INTERCEPT) if n == base + 1 else (WEIGHTS, INTERCEPT)
    s = X[:, :n] @ w + b
    p = 1.0 / (1.0 + np.exp(-s))
    return dict(zip(cand, p.tolist(), strict=True))
