"""Learned fusion (pamd.recall.fusion): its features, and that it is the default (real brains)."""

from __future__ import annotations

import numpy as np
from recall_helpers import entries, make_brain, recall_cli

from pamd.core.fmt import render_doc
from pamd.recall import fusion

DAY = "memory/L0/2026-11-30.md"


def _cols(n: int, files: list[int]) -> dict[str, np.ndarray]:
    return {"fileid": np.array(files, np.int64), "prev": np.full(n, -1), "next": np.full(n, -1)}


def _row(text: str, ids: str = "e-1") -> tuple:
    return (0, "p.md", 1, 3, "L0", None, None, ids, text)


def test_features_follow_the_lists():
    # five chunks in two files; BM25 finds 0 and 1, the dense list returns 2, 0, 3
    own = np.array([2.0, 1.0, 0.0, 0.0, 0.0], np.float32)
    lex = np.array([3.0, 1.5, 0.5, 0.0, 0.0], np.float32)
    cols = _cols(5, [7, 7, 9, 9, 9])
    rows = {0: _row("anna: the budget is tight"), 1: _row("boris: ok"),
            2: _row("anna: money for the dinner"), 3: _row("anna: a plain section", ids="")}
    cover = np.array([0.5, 0.0, 1.0, 0.25, 0.75])
    cand, X = fusion.features(own, lex, cover, [0, 1, 2], [2, 0, 3], [0.9, 0.8, 0.5], cols, rows,
                              "What did Anna say?")
    assert cand == [0, 1, 2, 3]  # the union of both lists, in label order; 4 is in neither
    f = {name: X[:, i] for i, name in enumerate(fusion.FEATURES)}
    assert np.allclose(f["lex"], [1.0, 0.5, 0.5 / 3, 0.0])
    assert f["lex_rank"].tolist() == [1 / 10, 1 / 11, 1 / 12, 0.0]
    assert f["own"].tolist() == [1.0, 0.5, 0.0, 0.0]
    # cosines against the list's spread: the best 0, the 100th (here the 3rd) -1; 1 is not in
    # the dense list and gets the floor
    assert np.allclose(f["dense"], [-0.25, -1.0, 0.0, -1.0])
    assert f["dense_rank"].tolist() == [1 / 11, 0.0, 1 / 10, 1 / 12]
    # file 7 has the most BM25 (4.5 against 0.5); file 9 holds the best cosine
    assert f["file_lex"].tolist() == [1 / 10, 1 / 10, 1 / 11, 1 / 11]
    assert f["file_dense"].tolist() == [1 / 11, 1 / 11, 1 / 10, 1 / 10]
    # the query names anna; a plain section (no ids) has no speaker even if its text has a colon
    assert f["role"].tolist() == [1.0, 0.0, 1.0, 0.0]
    assert f["cover"].tolist() == [0.5, 0.0, 1.0, 0.25]  # as given, per candidate
    s = fusion.scores(cand, X)
    assert max(s.values()) == 1.0 and all(v > 0 for v in s.values())
    assert len(fusion.WEIGHTS) == len(fusion.FEATURES)


def test_features_without_a_dense_list_or_a_lexical_match():
    own = lex = np.zeros(3, np.float32)
    cand, X = fusion.features(own, lex, own, [], [], [], _cols(3, [1, 1, 1]), {}, "anything")
    assert cand == [] and X.shape == (0, len(fusion.FEATURES))
    cand, X = fusion.features(own, lex, own, [], [1, 2], [0.7, 0.7], _cols(3, [1, 1, 1]),
                              {1: _row("x"), 2: _row("y")}, "q")
    assert cand == [1, 2] and np.isfinite(X).all()  # equal cosines: no division by zero


def test_coverage_counts_each_query_term_once_in_the_chunk_or_its_neighbours():
    from pamd.recall.lexical import coverage

    # chunks 0..4 in one file: 0-1-2-3 linked, 4 alone; "anna" (idf 1) is in 1, "budget"
    # (idf 3) in 2 and 4, three times in 4 -- coverage does not count repeats
    cprev = np.array([-1, 0, 1, 2, -1])
    cnext = np.array([1, 2, 3, -1, -1])
    post = [(np.array([1]), 1.0), (np.array([2, 4]), 3.0)]
    got = coverage(post, np.arange(5), cprev, cnext)
    # 0 sees 1 (anna); 1 and 2 see both; 3 sees 2 (budget); 4 holds budget alone
    assert got.tolist() == [0.25, 1.0, 1.0, 0.75, 0.75]
    # labels past the last posting, and no terms at all
    assert coverage([(np.array([0]), 2.0)], np.array([3, 4]), cprev, cnext).tolist() == [0.0, 0.0]
    assert coverage([], np.arange(5), cprev, cnext).tolist() == [0.0] * 5


def test_query_cover_reads_live_postings_of_the_candidates(tmp_path):
    from pamd.edge.brain import Brain
    from pamd.recall import api
    from pamd.recall.search import Lists, query_cover
    from pamd.recall.store.index import Index

    talk = [("boris", "Where is the budget?"), ("anna", "Travel took it."),
            ("boris", "The dinner then."), ("anna", "Lunch is fine."),
            ("boris", "Dinner budget is gone.")]
    files = {DAY: render_doc({"day": "2026-11-30"}, "# 30 Nov", entries(talk))}
    brain = Brain(make_brain(tmp_path / "b", files, '[index]\nembedder = "e5-small"\n'))
    api.index(brain, embedder=api.embedder_for(brain.config))
    idx = Index(brain.state_dir)
    idx.open()
    try:
        assert idx.load_state()
        n = idx.cols["alive"].shape[0]
        said = {r[8].split(": ", 1)[1]: lb for lb, r in idx.chunk_rows(list(range(n))).items()}
        lb = [said[text] for _, text in talk]
        ls = Lists(np.zeros(n), np.zeros(n), lb, [], [], {})
        got = query_cover(idx, "budget travel?", ls)
        cov = dict(zip(range(5), got[lb].tolist(), strict=True))
        # the question and its answer hold both words between them
        assert cov[0] == cov[1] == 1.0
        # "dinner then" sees travel before it; "lunch" sees the budget after it, as the
        # last turn does alone: together the two shares are the whole query
        assert 0.0 < cov[2] < 1.0 and cov[3] == cov[4] and np.isclose(cov[2] + cov[3], 1.0)
        assert cov[3] < cov[2]  # "budget" is in two turns, "travel" in one: the rarer weighs more
        assert np.array_equal(query_cover(idx, "budget travel?", ls), got)  # from the memo
        only = Lists(np.zeros(n), np.zeros(n), [lb[2]], [], [], {})
        assert query_cover(idx, "budget travel?", only)[lb].tolist() == [0, 0, cov[2], 0, 0]
        assert not query_cover(idx, "the of", ls).any()  # stop words only: nothing to cover
    finally:
        idx.close()


def test_learned_fusion_is_the_default_and_rrf_stays_available(tmp_path, capsys):
    from pamd.edge.brain import Brain

    talk = [
        ("boris", "The offsite budget is tight: budget cuts took the travel budget."),
        ("anna", "I would spend what is left of the money on the team dinner."),
        ("boris", "Weather in Lisbon should be fine next week."),
        ("anna", "The printer on the third floor is broken again."),
        ("boris", "ok"),
    ]
    files = {DAY: render_doc({"day": "2026-11-30"}, "# 30 Nov", entries(talk))}
    got = {}
    for name, how in (("default", ""), ("learned", 'fusion = "learned"\n'),
                      ("rrf", 'fusion = "rrf"\nrole_boost = 0\n')):
        cfg = f'[index]\nembedder = "e5-small"\nhit_lines = 0\n{how}'
        brain = make_brain(tmp_path / name, files, cfg)
        hits = recall_cli(brain, "what did anna say about the budget", 3, capsys, "--no-log")
        for h in hits:  # both ways point at whole entries that hold the text
            lines = (brain / h["path"]).read_text("utf-8").split("\n")[h["lines"][0] - 1:h["lines"][1]]
            assert lines[0].startswith("### " + h["ids"][0]) and h["text"].split(": ", 1)[1] in lines[-1]
        got[name] = [(h["ids"], round(h["score"], 6)) for h in hits]
        if name == "default":
            assert Brain(brain).config["index"]["fusion"] == "learned"  # the template's
    assert got["default"] == got["learned"]
    # ranks alone put the lexical match first; the learned weights also hear that the
    # question names a speaker (a feature of their own) and find anna's answer
    assert got["rrf"][0][0] != got["learned"][0][0]
    assert [t for t, _ in talk][[e.id for e in entries(talk)].index(got["learned"][0][0][0])] == "anna"


def test_places_lend_the_k_best_ids_from_above_the_last_place():
    from pamd.recall.search import lenders

    # ranked: S1, L1a, L1b, S2, L2a, S3, L1c, L3a (S = a summary's own words, L = its leaves)
    order = {lb: i for i, lb in enumerate([10, 11, 12, 20, 21, 30, 13, 31])}
    same = {10: [11, 12, 13], 20: [21], 30: [31]}
    groups = [[10], [20], [30]]
    # L1c and L3a rank below the last place (S3): they lend nothing, whatever k
    assert lenders(groups, same, order, 10) == {10: [11, 12], 20: [21], 30: []}
    assert lenders(groups, same, order, 3) == {10: [11, 12], 20: [21], 30: []}
    # k = 2: the two best lenders, and S2 still shows the leaf that matched it
    assert lenders(groups, same, order, 2) == {10: [11, 12], 20: [21], 30: []}
    assert lenders(groups, same, order, 1) == {10: [11], 20: [21], 30: []}
    assert lenders([[10]], same, order, 1) == {10: []}  # the place itself is the last used
