"""Hit shaping: a chunk next to a hit joins it, within the line budget (real brain, real model)."""

from __future__ import annotations

import numpy as np
from recall_helpers import MESSAGES, entries, make_brain, recall_cli

from pamd.core.fmt import render_doc
from pamd.edge.brain import Brain
from pamd.recall.search import shape

DIALOGUE = [
    ("user", "What did the plumber say about the leaking kitchen sink?"),
    ("assistant", "He will replace the corroded pipe under it on Tuesday morning."),
    *MESSAGES,
]
DAY = "memory/L0/2026-11-30.md"


def _brain(tmp_path, hit_lines: int):
    cfg = f'[index]\nembedder = "e5-small"\nhit_lines = {hit_lines}\nneighbour_weight = 0.6\n'
    files = {DAY: render_doc({"day": "2026-11-30"}, "# 30 Nov", entries(DIALOGUE))}
    return make_brain(tmp_path / f"brain{hit_lines}", files, cfg)


def _lines(brain, hit) -> list[str]:
    a, b = hit["lines"]
    return (brain / hit["path"]).read_text("utf-8").split("\n")[a - 1 : b]


def test_question_and_its_answer_come_back_as_one_hit(tmp_path, capsys):
    brain = _brain(tmp_path, 4)
    hits = recall_cli(brain, "when is the plumber replacing the kitchen sink pipe", 3, capsys)
    top = hits[0]
    got = _lines(brain, top)
    assert any(got[0].startswith("### " + i) for i in top["ids"])  # starts at an entry's header
    assert got[-1].startswith("> ")  # ends on the last entry's text
    assert len(top["ids"]) >= 2
    assert any("leaking kitchen sink" in ln for ln in got)
    assert any("corroded pipe" in ln for ln in got)
    assert "corroded pipe" in top["text"] and "leaking kitchen sink" in top["text"]
    total = sum(h["lines"][1] - h["lines"][0] + 1 for h in hits)
    assert len(hits) <= 3 and total <= 4 * 3
    for h in hits:  # every hit still points at whole entries
        ln = _lines(brain, h)
        assert ln[0].startswith("### ") and ln[-1].startswith("> ")


HOUSEHOLD = [
    ("user", "What did the plumber say about the leaking kitchen sink?"),
    ("assistant", "He will replace the corroded pipe under it on Tuesday morning."),
    ("user", "Can you book the car for its yearly service?"),
    ("assistant", "Booked the garage for Monday at nine."),
    ("user", "The cat knocked the vase off the shelf again."),
    ("assistant", "I ordered a heavier vase that will not tip over."),
    ("user", "Remind me to water the plants on the balcony."),
    ("assistant", "Added a reminder for the balcony plants every evening."),
    ("user", "The heating in the office is too weak in the mornings."),
    ("assistant", "I asked facilities to check the radiator valves."),
    ("user", "Who is presenting at the Thursday all-hands?"),
    ("assistant", "Boris presents the roadmap, Anna the hiring plan."),
    *MESSAGES,
]


def test_a_neighbour_joined_for_context_is_not_counted_as_recalled(tmp_path, capsys):
    from pamd.cli import main

    query = "when is the plumber replacing the kitchen sink pipe"
    files = {DAY: render_doc({"day": "2026-11-30"}, "# 30 Nov", entries(HOUSEHOLD))}
    plain = make_brain(tmp_path / "plain", files, '[index]\nembedder = "e5-small"\nhit_lines = 0\n')
    # (whether a neighbour from outside the plain top k joins a hit hangs on the order of
    # the last few of these 18 turns: another ranking may need another k)
    topk = [h["ids"][0] for h in recall_cli(plain, query, 10, capsys)]
    brain = make_brain(tmp_path / "shaped", files, '[index]\nembedder = "e5-small"\nhit_lines = 4\n')
    for _ in range(3):
        hits = recall_cli(brain, query, 10, capsys, "--log")
    matched = [i for h in hits for i in h["matched"]]
    # Shaping joined a neighbour that is not among the k best chunks: the hit shows
    # its lines (`ids`), but the query did not match it (`matched`). A slot freed by a
    # join may go to a new hit from further down, whose best chunk did match.
    context = [i for h in hits for i in h["ids"][1:] if i not in topk]
    assert context, "no neighbour joined from outside the top k: the test needs another query"
    assert set(topk) <= set(matched) and not set(context) & set(matched)
    assert all(i in topk or i == h["ids"][0] for h in hits for i in h["matched"])
    assert all(set(h["matched"]) <= set(h["ids"]) for h in hits)
    # The recall log, and after the fold the tree, count what matched, three times each.
    code = main(["compact", "--brain", str(brain), "--now", "2026-11-30T09:30:00Z"])
    assert code == 0, capsys.readouterr().err
    recalls = {e.id: e.recalls for e in Brain(brain).load().entries}
    assert {i: recalls[i] for i in matched} == dict.fromkeys(matched, 3)
    assert {i: recalls[i] for i in context} == dict.fromkeys(context, 0)


SHARDS = [("user", f"We decided that the warehouse shard for region r{d}x lives on host kestrel{d}q "
                   f"and its owner is Marisol{d}v.") for d in range(1, 7)]


def test_a_joined_hit_shows_the_chunk_that_matched_first(tmp_path, capsys):
    # Near-identical one-liners are neighbours: the hit for kestrel3q joins the turns
    # around it, and its text (and the CLI's one-line cut) must open on kestrel3q's, not
    # on the neighbour that comes first in the file (which names another host).
    from pamd.cli import main

    files = {DAY: render_doc({"day": "2026-11-30"}, "# 30 Nov", entries(SHARDS + MESSAGES))}
    brain = make_brain(tmp_path / "shards", files, '[index]\nembedder = "e5-small"\nhit_lines = 4\n')
    hits = recall_cli(brain, "kestrel3q", 3, capsys)
    top = hits[0]
    assert len(top["ids"]) >= 2, "no neighbour joined: the test needs another query"
    first = _lines(brain, top)[0]
    assert not first.startswith("### " + entries(SHARDS)[2].id), "the run opens on the match: needs another query"
    assert top["text"].startswith("user: " + SHARDS[2][1]), top["text"]
    assert top["ids"][0] == top["matched"][0] == entries(SHARDS)[2].id
    assert main(["recall", "--brain", str(brain), "--no-log", "-k", "3", "kestrel3q"]) == 0
    head, snippet = capsys.readouterr().out.splitlines()[:2]
    assert f"{top['ids'][0]} · " in head and " · user · " in head, head
    assert snippet.startswith("    We decided that the warehouse shard for region r3x lives on host kestrel3q"), \
        snippet


def test_hit_lines_zero_gives_one_chunk_per_hit(tmp_path, capsys):
    brain = _brain(tmp_path, 0)
    hits = recall_cli(brain, "when is the plumber replacing the kitchen sink pipe", 3, capsys)
    assert len(hits) == 3
    assert all(len(h["ids"]) == 1 and h["lines"][1] - h["lines"][0] == 2 for h in hits)


def test_shape_keeps_to_the_budget_and_to_k():
    # ten 3-line entries, one blank line apart: entry i covers lines 4i+1 .. 4i+3
    spans = {i: (4 * i + 1, 4 * i + 3) for i in range(10)}
    prev = np.array([-1, *range(9)])
    nxt = np.array([*range(1, 10), -1])
    ranked = [5, 6, 0, 9, 4, 2, 7]
    groups = shape(ranked, spans, prev, nxt, k=3, budget=12)
    assert groups[0] == [5, 6]  # 6 joins 5: one hit of 7 lines
    lines = sum(spans[g[-1]][1] - spans[g[0]][0] + 1 for g in groups)
    assert len(groups) <= 3 and lines <= 12
    assert all(g == sorted(g) for g in groups)
    # chunks larger than the budget still give k hits: never fewer lines than plain top k
    big = {i: (20 * i + 1, 20 * i + 18) for i in range(10)}
    groups = shape([1, 3, 5, 7], big, prev, nxt, k=3, budget=12)
    assert groups == [[1], [3], [5]]



def test_joins_inside_the_plain_top_k_never_cost_the_kth_plain_hit():
    # Long entries (a real transcript): the plain top k cover more than hit_lines x k, so
    # their lines are the cap. Two of them are neighbours: joined, the hit also shows the
    # Blank line between them, which plain hits never pay. That one line
    # pushed the k-th plain hit out ('did you push?' -k 3 gave one hit, not three).
    spans = {0: (1, 3), 1: (5, 15), 2: (17, 19), 3: (100, 102), 4: (104, 106)}
    prev = np.array([-1, 0, 1, 2, 3])
    nxt = np.array([1, 2, 3, 4, -1])
    groups = shape([0, 1, 3, 2], spans, prev, nxt, k=3, budget=12)
    assert [lb for g in groups for lb in g if lb in (0, 1, 3)] == [0, 1, 3]
    assert groups == [[0, 1], [3]]  # 2 (next to the hit) would pass the cap: skipped
    # a join that does not cost the plain top k still uses the freed slot
    groups = shape([0, 1, 3, 4], spans, prev, nxt, k=3, budget=40)
    assert groups == [[0, 1], [3, 4]]
    for k in range(1, 5):  # every plain top k is in the shaped hits, whatever it covers
        ranked = [1, 0, 2, 3, 4]
        got = [lb for g in shape(ranked, spans, prev, nxt, k=k, budget=4 * k) for lb in g]
        assert set(ranked[:k]) <= set(got)


def test_role_boost_prefers_the_speaker_the_query_names(tmp_path, capsys):
    talk = [
        ("boris", "The offsite budget is tight: budget cuts took the travel budget."),
        ("anna", "I would spend what is left of the money on the team dinner."),
        ("boris", "Weather in Lisbon should be fine next week."),
        ("anna", "The printer on the third floor is broken again."),
    ]
    files = {DAY: render_doc({"day": "2026-11-30"}, "# 30 Nov", entries(talk))}
    tops = {}
    for rb in (0, 3):
        cfg = f'[index]\nembedder = "e5-small"\nfusion = "rrf"\nhit_lines = 0\nrole_boost = {rb}\n'
        brain = make_brain(tmp_path / f"b{rb}", files, cfg)
        tops[rb] = recall_cli(brain, "what did anna say about the budget", 1, capsys)[0]["text"]
    assert tops[0].startswith("boris: ")  # the lexical match, said by the other speaker
    assert tops[3].startswith("anna: ")


def test_a_place_joins_whichever_of_its_chunks_ranked_it():
    # A summary's place also holds its raw leaves (recall.deep); prev/next name a place by
    # the chunk that represents it, which after incremental refreshes may be a leaf (a
    # re-added summary gets a new, higher label). Place B below: leaf 1 represents it,
    # summary 5 shares its lines. Before, a hit ranked by 5 never joined A or C: the same
    # Tree gave two hits after refreshes and one after a rebuild.
    spans = {0: (1, 3), 1: (5, 7), 5: (5, 7), 2: (9, 11)}
    prev = np.array([-1, 0, 1, -1, -1, 0])
    nxt = np.array([1, 2, -1, -1, -1, 2])
    for first, then in ((0, 5), (5, 0), (5, 2), (2, 5), (0, 1), (1, 2)):
        groups = shape([first, then], spans, prev, nxt, k=2, budget=12)
        assert len(groups) == 1 and set(groups[0]) == {first, then}, (first, then, groups)
        assert [spans[lb][0] for lb in groups[0]] == sorted(spans[lb][0] for lb in groups[0])
