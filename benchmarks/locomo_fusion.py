"""Fit the weights of learned fusion (pamd.recall.fusion) on LoCoMo, the way they were fitted.

    PAMD_THREADS=2 python benchmarks/locomo_fusion.py fit              # fusion.WEIGHTS
    PAMD_THREADS=2 python benchmarks/locomo_fusion.py fit --rerank 30  # fusion.RERANK_WEIGHTS

With e5-small on onnxruntime (token states) the fit has a tenth column, `maxsim`
(pamd.recall.maxsim), and prints fusion.MAXSIM_WEIGHTS / MAXSIM_RERANK_WEIGHTS;
`--no-maxsim` fits the nine-feature weights, as before.

Each conversation is written into a pamd brain by `pamd ingest`, exactly as
benchmarks/locomo_recall.py does (the same brains: set PAMD_LOCOMO_WORK to
reuse their cached vectors), and indexed with the template's settings. For
every question the real candidate lists of `pamd.recall.search.lists` give one
row of `fusion.features` per candidate, labelled 1 when the chunk holds one of
the question's evidence turns. An L2-regularised logistic regression (Newton's
method in numpy, C = 0.1 as in scikit-learn) on standardised features gives
the weights; printed back on the raw scale, ready for fusion.WEIGHTS. With
`--rerank N` the cross-encoder (pamd.recall.rerank) scores each question's first
N candidates by fusion.WEIGHTS, as recall does, and all the weights are fitted
again with its three features (fusion.RERANK_WEIGHTS). The
questions of the other seven conversations stay unseen: benchmarks/locomo_recall.py
reports them apart ("held out"). The data (CC BY-NC 4.0) stays in ../shared.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from locomo_recall import HARNESS, PROPOSED, build_brain  # noqa: E402

TUNE = "conv-26,conv-30,conv-41"
TAG = re.compile(r"\[(D\d+:\d+)\]")


def rows_for(conv_dir: Path, questions: list[dict], work: Path, embedder_name: str,
             rerank_n: int = 0, use_maxsim: bool = True):
    from pamd.edge.brain import Brain
    from pamd.recall import api, fusion, rerank
    from pamd.recall.embed import Background, query_pass
    from pamd.recall.search import CANDIDATES, lists, query_cover, with_maxsim
    from pamd.recall.store.index import Index

    root = build_brain(conv_dir, work / conv_dir.name, embedder_name, PROPOSED)
    brain = Brain(root)
    emb = api.embedder_for(brain.config)
    api.index(brain, embedder=emb)
    idx = Index(brain.state_dir)
    idx.open()
    assert idx.load_state()
    alive = idx.cols["alive"]
    reranker = rerank.load() if rerank_n else None
    if rerank_n and reranker is None:
        raise SystemExit("--rerank needs the reranker: pip install 'pamd[rerank]'")
    Xs, ys = [], []
    for q in questions:
        ls = lists(idx, q["question"], CANDIDATES, None, alive, int(alive.sum()), fusion.NEIGHBOUR,
                   qvec=Background(query_pass, emb, q["question"]))
        rows = idx.chunk_rows(sorted(set(ls.lex_top) | set(ls.dense_top)))
        cand, X = fusion.features(ls.own, ls.lex, query_cover(idx, q["question"], ls), ls.lex_top,
                                  ls.dense_top, ls.sims, idx.cols, rows, q["question"], idx.files())
        if use_maxsim:
            X = with_maxsim(idx, cand, X, ls.qtok)
        if reranker is not None:
            top = fusion.first(cand, X, rows, rerank_n)
            ce = reranker.scores(q["question"], [rows[lb][8] for lb in top])
            X = np.hstack([X, fusion.rerank_features(cand, top, ce)])
        ev = set(q["evidence"])
        Xs.append(X)
        ys.append(np.array([1.0 if ev & set(TAG.findall(rows[lb][8])) else 0.0 for lb in cand]))
    idx.close()
    return np.concatenate(Xs), np.concatenate(ys)


def logistic(X: np.ndarray, y: np.ndarray, C: float) -> tuple[np.ndarray, float]:
    """min C * sum(log-loss) + |w|^2 / 2 (intercept free), by Newton's method."""
    A = np.hstack([X, np.ones((X.shape[0], 1))])
    w = np.zeros(A.shape[1])
    reg = np.ones(A.shape[1]) / C
    reg[-1] = 0.0
    for _ in range(50):
        p = 1.0 / (1.0 + np.exp(-(A @ w)))
        grad = A.T @ (p - y) + reg * w
        H = (A * (p * (1 - p))[:, None]).T @ A + np.diag(reg)
        step = np.linalg.solve(H, grad)
        w -= step
        if np.abs(step).max() < 1e-8:
            break
    return w[:-1], float(w[-1])


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(prog="locomo_fusion.py")
    p.add_argument("what", choices=["fit"])
    p.add_argument("--convs", default=TUNE)
    p.add_argument("--C", type=float, default=0.1)
    p.add_argument("--rerank", type=int, default=0, metavar="N",
                   help="fit fusion.RERANK_WEIGHTS: the cross-encoder scores the first N")
    p.add_argument("--intercept", action="store_true",
                   help="fit only the intercepts of the shipped fusion.WEIGHTS and MAXSIM_WEIGHTS "
                        "(weights held fixed): fusion.INTERCEPT, fusion.MAXSIM_INTERCEPT")
    p.add_argument("--no-maxsim", action="store_true",
                   help="leave out the maxsim feature (fit WEIGHTS / RERANK_WEIGHTS)")
    args = p.parse_args(argv)
    from pamd.recall import fusion

    embedder_name = os.environ.get("PAMD_LOCOMO_EMBEDDER", "e5-small")
    tag = re.sub(r"\W+", "_", f"ingest-{embedder_name}")
    work = Path(os.environ.get("PAMD_LOCOMO_WORK", "/tmp/pamd-locomo-brains")) / tag
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run([sys.executable, str(HARNESS), "export", tmp], check=True,
                       stdout=subprocess.DEVNULL)
        qs = [json.loads(line) for line in open(Path(tmp) / "questions.jsonl", encoding="utf-8")]
        Xs, ys = [], []
        for conv in args.convs.split(","):
            mine = [q for q in qs if q["conv_id"] == conv and q["evidence"] and q["category"] != 5]
            X, y = rows_for(Path(tmp) / "markdown" / conv, mine, work, embedder_name, args.rerank,
                            not args.no_maxsim)
            print(f"{conv}: {len(mine)} questions, {X.shape[0]} candidates, {int(y.sum())} with evidence",
                  file=sys.stderr)
            Xs.append(X)
            ys.append(y)
    X, y = np.concatenate(Xs), np.concatenate(ys)
    if args.intercept:
        return print_intercepts(X, y)
    mu, sd = X.mean(0), X.std(0)
    sd[sd == 0] = 1.0
    w, _ = logistic((X - mu) / sd, y, args.C)
    raw = w / sd
    ms = X.shape[1] in (len(fusion.FEATURES) + 1, len(fusion.FEATURES) + 1 + len(fusion.RERANK_FEATURES))
    names = fusion.FEATURES + (fusion.MAXSIM_FEATURES if ms else ()) + \
        (fusion.RERANK_FEATURES if args.rerank else ())
    name = ("MAXSIM_" if ms else "") + ("RERANK_WEIGHTS" if args.rerank else "WEIGHTS")
    print(f"{name} = np.array([")
    for name, v in zip(names, raw, strict=True):
        print(f"    {v: .4f},  # {name}")
    print("])")
    return 0


def print_intercepts(X: np.ndarray, y: np.ndarray) -> int:
    """The intercept b that makes sigmoid(w·x + b) calibrated for the shipped w (Newton, 1-D),
    and how well: per band of predicted probability, the share of candidates holding evidence."""
    from pamd.recall import fusion

    base = len(fusion.FEATURES)
    tables = [("INTERCEPT", fusion.WEIGHTS, X[:, :base])]
    if X.shape[1] > base:
        tables.append(("MAXSIM_INTERCEPT", fusion.MAXSIM_WEIGHTS, X[:, :base + 1]))
    for name, w, Xc in tables:
        s, b = Xc @ w, 0.0
        for _ in range(100):
            p = 1.0 / (1.0 + np.exp(-(s + b)))
            step = (p - y).sum() / max((p * (1 - p)).sum(), 1e-12)
            b -= step
            if abs(step) < 1e-10:
                break
        p = 1.0 / (1.0 + np.exp(-(s + b)))
        print(f"{name} = {b:.4f}")
        for lo in np.arange(0.0, 1.0, 0.1):
            m = (p >= lo) & (p < lo + 0.1)
            if m.any():
                print(f"#   p {lo:.1f}-{lo + 0.1:.1f}: {int(m.sum())} candidates, {y[m].mean():.3f} with evidence",
                      file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
