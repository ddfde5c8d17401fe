"""Lexical side of recall: a tokenizer for English and Russian, and BM25 scoring.

Postings live in the index database as one (doc labels, term frequencies) pair
per term, so a query reads only its own terms' postings and a refresh rewrites
only the terms of added chunks. Removed chunks stay in the postings but are
masked by `alive`; document frequencies are counted over live chunks at query
time, so scores equal those of a fresh build.
"""

from __future__ import annotations

import re
from collections import Counter

import numpy as np

K1 = 1.2
B = 0.75

_WORD = re.compile(r"\w+", re.UNICODE)

STOPWORDS = frozenset(
    """a about above after again against all am an and any are as at be because been before being
    below between both but by can could did do does doing down during each few for from further had
    has have having he her here hers herself him himself his how i if in into is it its itself just
    me more most my myself no nor not now of off on once only or other our ours ourselves out over
    own same she should so some such than that the their theirs them themselves then there these
    they this those through to too under until up very was we were what when where which
    while who whom why will with would you your yours yourself yourselves s t d ll m re ve
    и в во не что он на я с со как а то все она так его но да ты к у же вы за бы по только ее
    мне было вот от меня еще нет о из ему теперь когда даже ну вдруг ли если уже или ни быть был
    него до вас нибудь опять уж вам ведь там потом себя ничего ей может они тут где есть надо
    ней для мы тебя их чем была сам чтоб без будто чего раз тоже себе под будет ж тогда кто этот
    того потому этого какой совсем ним здесь этом один почти мой тем чтобы нее сейчас были куда
    зачем всех никогда можно при наконец два об другой хоть после над больше тот через эти нас
    про всего них какая много разве три эту моя впрочем хорошо свою этой перед иногда лучше чуть
    том нельзя такой им более всегда конечно всю между""".split()
)

_CYRILLIC = re.compile(r"[а-яё]")
_RU_SUFFIX = re.compile(
    r"(ами|ями|ого|его|ому|ему|ыми|ими|ая|яя|ое|ее|ые|ие|ой|ей|ий|ый|ую|юю|ом|ем|ах|ях|ов|ев|ам|ям|"
    r"ть|ла|ли|ло|ет|ит|ут|ют|ат|ят|а|я|о|е|ы|и|у|ю|ь)$"
)


def stem(word: str) -> str:
    """A deliberately light stemmer: plural/-ing/-ed in English, common endings in Russian.

    Light on purpose: it only has to make "painted"/"painting"/"paints" and
    "деплой"/"деплоя" meet; a wrong merge costs little in BM25, a heavy stemmer
    costs a dependency.
    """
    if _CYRILLIC.search(word):
        if len(word) > 4:
            return _RU_SUFFIX.sub("", word)
        return word
    n = len(word)
    if n > 5 and word.endswith("ing"):
        return word[:-3]
    if n > 4 and word.endswith("ied"):
        return word[:-3] + "y"
    if n > 4 and word.endswith("ed"):
        return word[:-2]
    if n > 4 and word.endswith("ies"):
        return word[:-3] + "y"
    if n > 3 and word.endswith("s") and not word.endswith(("ss", "us", "is")):
        return word[:-1]
    return word


def tokenize(text: str) -> list[str]:
    """Lower-case word tokens, stop words dropped, lightly stemmed."""
    return [stem(w) for w in _WORD.findall(text.lower()) if w not in STOPWORDS and len(w) < 40]


def searchable(text: str) -> bool:
    """Whether a query holds a word to search for: one that is not a stop word, or one in
    capitals (IT, US, WHO: an acronym, not the stop word). Punctuation and stop words alone
    match everything by meaning and nothing by word. A word the tokenizer skips for its
    length (a hash, a long run of CJK) still counts: the dense side reads it."""
    words = _WORD.findall(text.replace("_", " "))  # \w takes "_": no word on its own
    return any(w.lower() not in STOPWORDS or (len(w) > 1 and w.isupper()) for w in words)


def term_counts(text: str) -> Counter[str]:
    return Counter(tokenize(text))


def bm25(
    postings: list[tuple[np.ndarray, np.ndarray]],
    doc_len: np.ndarray,
    alive: np.ndarray,
    query_weights: list[float] | None = None,
    memo: dict | None = None,
    keys: list | None = None,
) -> np.ndarray:
    """BM25 scores of all labels for the query terms whose postings are given (dead = 0).

    With `memo` (valid while the index is unchanged, e.g. Index.memo()) and a key per
    posting list (term, weight), each term's live labels and scores are computed once.
    """
    scores = np.zeros(doc_len.shape[0], dtype=np.float32)
    n = int(alive.sum())
    if n == 0:
        return scores
    avgdl = None
    for i, (docs, tfs) in enumerate(postings):
        key = ("bm25", keys[i]) if memo is not None and keys is not None else None
        got = memo.get(key) if key is not None else None
        if got is None:
            if avgdl is None:
                avgdl = float(doc_len[alive].mean()) or 1.0
            live = alive[docs]
            docs, tfs = docs[live], tfs[live]
            df = docs.shape[0]
            if df == 0:
                got = (docs, None)
            else:
                idf = _idf(n, df)
                w = query_weights[i] if query_weights else 1.0
                dl = doc_len[docs]
                got = (docs, (w * idf * tfs * (K1 + 1) / (tfs + K1 * (1 - B + B * dl / avgdl))).astype(
                    np.float32
                ))
            if key is not None:
                if got[1] is not None and 8 * got[0].shape[0] > scores.shape[0]:
                    # a common term: kept as a full row, added without a scatter (x + 0.0 == x)
                    row = np.zeros_like(scores)
                    row[got[0]] = got[1]
                    got = (None, row)
                memo[key] = got
                memo["bytes"] = memo.get("bytes", 0) + (got[1].nbytes * 3 if got[1] is not None else 0)
        if got[1] is None:
            continue
        if got[0] is None:
            scores += got[1]
        else:
            scores[got[0]] += got[1]
    return scores


def _idf(n: int, df: int) -> float:
    """BM25's inverse document frequency of a term in df of n live chunks."""
    return float(np.log1p((n - df + 0.5) / (df + 0.5)))


def coverage(postings: list[tuple[np.ndarray, float]], labels: np.ndarray, cprev: np.ndarray,
             cnext: np.ndarray) -> np.ndarray:
    """Per label: the share of the query's terms, weighted by idf, that its own words or its
    neighbours' (cprev/cnext) hold — each term counted once, however often it occurs.

    BM25 rewards a term that occurs often; this asks whether the question's words
    are all there around the chunk: "when did Caroline go to the support group?"
    is answered by a reply about "the group" right after a turn naming Caroline.
    `postings` is (sorted labels holding the term, its idf) per distinct query term.
    """
    out = np.zeros(labels.shape[0])
    total = sum(w for _, w in postings)
    if not total or not labels.shape[0]:
        return out
    around = np.stack([labels, cprev[labels], cnext[labels]])  # -1: no neighbour there
    for docs, w in postings:
        pos = np.minimum(np.searchsorted(docs, around), docs.shape[0] - 1)
        out += w * ((docs[pos] == around) & (around >= 0)).any(0)
    return out / total


def file_rank(scores: np.ndarray, files: tuple[np.ndarray, np.ndarray]) -> np.ndarray:
    """Rank (0 = best) of each file by its chunks' summed scores (none negative), ties by file
    id; -1 for a file without any. `files` is (sorted distinct file ids, each label's index among them),
    as Index.files() gives it: the session or day a question is about."""
    fids, of_label = files
    rank = np.full(fids.shape[0], -1, np.int64)
    if 8 * np.count_nonzero(scores) > scores.shape[0]:
        # most labels score (a query of common words): summing every label costs less than
        # picking those out first; a score is never negative, so a file sums > 0 iff one scores
        total = np.bincount(of_label, weights=scores, minlength=fids.shape[0])
        present = np.flatnonzero(total > 0)
    else:
        pos = np.flatnonzero(scores > 0)
        inv = of_label[pos]
        total = np.bincount(inv, weights=scores[pos], minlength=fids.shape[0])
        present = np.flatnonzero(np.bincount(inv, minlength=fids.shape[0]))
    if present.shape[0]:
        rank[present[np.lexsort((fids[present], -total[present]))]] = np.arange(present.shape[0])
    return rank
