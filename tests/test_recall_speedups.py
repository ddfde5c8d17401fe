"""The faster paths of recall give exactly what the plain ones gave (docs/benchmarks.md, "Speed")."""

from __future__ import annotations

import os

import numpy as np
from recall_helpers import entries, make_brain

from pamd.core.fmt import render_doc
from pamd.edge.brain import Brain
from pamd.recall import api
from pamd.recall.lexical import bm25
from pamd.recall.search import _file_prior
from pamd.recall.sources import source_files, tier_for


def _rglob_sources(root):
    """source_files as it was written with Path.rglob: the reference."""
    out = []
    for name in ("MEMORY.md", "DNA.md"):
        if (root / name).is_file():
            out.append((name, tier_for(name)))
    for top in ("memory", "synapse"):
        base = root / top
        if base.is_dir():
            for p in base.rglob("*.md"):
                rel = p.relative_to(root).as_posix()
                tier = tier_for(rel)
                if tier and p.is_file() and not any(part.startswith(".") for part in p.parts):
                    out.append((rel, tier))
    return sorted(out)


def test_source_files_match_a_recursive_glob(tmp_path):
    root = tmp_path / "brain"
    for rel in ("MEMORY.md", "memory/L1/a.md", "memory/L1/sub/b.md", "memory/.hidden/c.md",
                "memory/L1/.d.md", "memory/L1/e.txt", "memory/daily/2026-11-30.md",
                "synapse/bob/x.md", "memory/L3/.md", "memory/other.md"):
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text("x\n")
    (root / "memory/L2/dir.md").mkdir(parents=True)
    os.symlink(root / "memory/L1", root / "memory/L1/sub/loop")  # a directory link is not entered
    os.symlink(root / "memory/L1/a.md", root / "memory/L1/link.md")  # a file link counts
    os.symlink(root / "nowhere.md", root / "memory/L1/broken.md")
    got = source_files(root)
    assert got == _rglob_sources(root)
    assert ("memory/L1/link.md", "L1") in got and not any("loop" in r for r, _ in got)


def _file_prior_reference(fused, lex, cols, w, fk):
    pos = np.flatnonzero(lex > 0)
    if pos.shape[0] == 0:
        return
    files, inv = np.unique(cols["fileid"][pos], return_inverse=True)
    total = np.bincount(inv, weights=lex[pos])
    rank = np.empty(files.shape[0], np.int64)
    rank[np.lexsort((files, -total))] = np.arange(files.shape[0])
    frank = dict(zip(files.tolist(), rank.tolist(), strict=True))
    for lb in fused:
        r = frank.get(int(cols["fileid"][lb]))
        if r is not None:
            fused[lb] += w / (fk + r + 1)


def test_file_prior_gives_the_same_scores_as_np_unique_over_the_positives():
    rng = np.random.default_rng(3)
    for n, nfiles in ((50, 3), (2000, 40), (20000, 7)):
        cols = {"fileid": rng.integers(1, 2**55, nfiles)[rng.integers(0, nfiles, n)]}
        lex = np.where(rng.random(n) < 0.3, rng.random(n), 0).astype(np.float32)
        lex[cols["fileid"] == cols["fileid"][0]] = 0  # a file with no BM25 positive at all
        fused = {int(lb): float(rng.random()) for lb in rng.choice(n, min(n, 200), replace=False)}
        want, got = dict(fused), dict(fused)
        _file_prior_reference(want, lex, cols, 0.3, 10.0)
        uniq, inv = np.unique(cols["fileid"], return_inverse=True)
        _file_prior(got, lex, cols, 0.3, 10.0, (uniq, inv))
        assert got == want


def test_bm25_with_a_memo_scores_exactly_as_without():
    rng = np.random.default_rng(5)
    n = 5000
    doc_len = rng.integers(1, 40, n).astype(np.float32)
    alive = rng.random(n) < 0.9
    posts = []
    for df in (3, 200, 4000):  # rare, middling, common (kept as a full row)
        docs = np.sort(rng.choice(n, df, replace=False)).astype(np.int64)
        posts.append((docs, rng.integers(1, 4, df).astype(np.float32)))
    weights = [1.0, 2.0, 3.0]
    want = bm25(posts, doc_len, alive, weights)
    memo: dict = {}
    keys = [("a", 1.0), ("b", 2.0), ("c", 3.0)]
    for _ in range(2):  # the second time from the memo
        assert np.array_equal(bm25(posts, doc_len, alive, weights, memo, keys), want)


def test_a_warm_index_sees_what_a_refresh_added(tmp_path):
    brain = Brain(make_brain(tmp_path / "brain"))
    api.recall(brain, "espresso machine broken", log=False)  # warm: index and memo kept in api._OPEN
    new = entries([("user", "The espresso machine in the kitchen is broken again.")],
                  start=entries()[-1].ts.replace(hour=15))
    (brain.root / "memory/L0/2026-12-01.md").write_text(render_doc({}, "", new), "utf-8")
    hits = api.recall(brain, "espresso machine broken", log=False)
    assert hits[0].ids == [new[0].id]
    for idx in api._OPEN.values():
        idx.close()
    api._OPEN.clear()
