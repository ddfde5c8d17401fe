"""Myelination, DNA, STATE and boot against real brains."""

from __future__ import annotations

import json
from datetime import UTC

import pytest
import yaml
from conftest import Pamd, git, head_count
from test_recall_deep import ingest_mixed_facts

from pamd.core.fmt import parse_doc, split_frontmatter

T0 = "2026-11-30T09:00:00Z"


def l0_entries(root):
    out = []
    for p in sorted(root.glob("memory/L*/*.md")):
        out += parse_doc(p.read_text(), str(p.relative_to(root)), p.parent.name).entries
    return out


def meta(path):
    return split_frontmatter(path.read_text())[0]


def seed(brain, tmp_path):
    f = tmp_path / "day.jsonl"
    rows = [
        ("user", "We decided the staging database is Postgres 16 on port 5433."),
        ("assistant", "The deploy failed with error: permission denied on /srv/app, data not written."),
        ("assistant", "Fixed by running the migration as the app user; the deploy works now."),
        ("user", "Please keep release notes in docs/releases.md from now on."),
    ]
    f.write_text("\n".join(json.dumps({"ts": f"2026-11-30T09:0{i}:00Z", "role": r, "text": t, "session": "w"})
                           for i, (r, t) in enumerate(rows)) + "\n")
    assert brain("ingest", str(f), now=T0)[0] == 0
    return {e.text.split()[1]: e for e in l0_entries(brain.cwd)}


def touch_and_compact(brain, eid, times, now="2026-11-30T09:30:00Z"):
    for _ in range(times):
        assert brain("touch", eid, now=now)[0] == 0
    code, out, err = brain("compact", now=now)
    assert code == 0, err
    return next(e for e in l0_entries(brain.cwd) if e.id == eid or eid in e.sources)


def test_recalls_cross_the_thresholds(brain, tmp_path):
    es = seed(brain, tmp_path)
    target = es["decided"]
    root = brain.cwd
    e = touch_and_compact(brain, target.id, 3)
    assert e.recalls == 3 and e.seen == "2026-11-30"
    assert "Pamd-Recall-Log:" in git(root, "log", "-1", "--format=%B")
    # thin myelin: retention decays slower than an unrecalled twin
    from datetime import datetime

    from pamd.core import config
    from pamd.encode.hippocampus import retention
    later = datetime(2026, 12, 1, 9, tzinfo=UTC)
    assert retention(e, config.defaults(), later) > retention(e.with_(recalls=0), config.defaults(), later)
    assert target.id not in (root / "PRELOAD.md").read_text()
    e = touch_and_compact(brain, target.id, 2)
    assert e.recalls == 5
    assert target.id in (root / "PRELOAD.md").read_text()
    assert not any(target.id in str(r) for r in meta(root / "DNA.md")["reflexes"])
    e = touch_and_compact(brain, target.id, 5)
    assert e.recalls == 10
    reflexes = meta(root / "DNA.md")["reflexes"]
    mine = [r for r in reflexes if isinstance(r, dict) and target.id in r.get("from", [])]
    assert len(mine) == 1 and mine[0]["kind"] == "recalled"


def test_the_commit_names_what_myelination_did(brain, tmp_path):
    """A memory copied into PRELOAD.md, a new recall reflex in DNA.md, and one leaving
    PRELOAD.md when demoted are said in the commit, not only seen in its diff."""
    es = seed(brain, tmp_path)
    eid = es["decided"].id
    touch_and_compact(brain, eid, 5)
    msg = git(brain.cwd, "log", "-1", "--format=%B")
    assert f"Myelinated, copied to PRELOAD.md: {eid} (5 recalls)." in msg
    assert "New reflex" not in msg
    touch_and_compact(brain, eid, 5, now="2026-11-30T10:00:00Z")
    msg = git(brain.cwd, "log", "-1", "--format=%B")
    assert f"New reflex in DNA.md from {eid} (10 recalls)." in msg and "Myelinated" not in msg
    said = ""
    for t in ("2027-01-15T03:00:00Z", "2027-03-01T03:00:00Z"):  # demoted twice: 10 -> 5 -> 2
        assert brain("defrag", now=t)[0] == 0
        said += git(brain.cwd, "log", "-1", "--format=%B")
    assert "Left PRELOAD.md (demoted): " in said and "(2 recalls)" in said, said
    assert "(none yet" in (brain.cwd / "PRELOAD.md").read_text()  # it did leave


def test_a_recall_is_folded_exactly_once(brain, tmp_path):
    es = seed(brain, tmp_path)
    eid = es["decided"].id
    brain("touch", eid)
    brain("compact", now="2026-11-30T09:30:00Z")
    n = head_count(brain.cwd)
    code, out, _ = brain("compact", now="2026-11-30T09:31:00Z")
    assert "nothing to compact" in out and head_count(brain.cwd) == n
    assert next(e for e in l0_entries(brain.cwd) if e.id == eid).recalls == 1


def test_two_clones_pulling_each_other_fold_each_recall_once(brain, tmp_path):
    """Each machine has its own recall log; the fold read the newest marker in history,
    after a pull the other machine's, and folded this machine's whole log again."""
    es = seed(brain, tmp_path)
    assert brain("compact", now="2026-11-30T09:10:00Z")[0] == 0
    a, b = (Pamd(tmp_path / n, brain.capsys) for n in ("a", "b"))
    for p in (a, b):
        git(tmp_path, "clone", "-q", str(brain.cwd), p.cwd.name)
    assert b("touch", es["decided"].id, now="2026-11-30T09:20:00Z")[0] == 0
    assert b("compact", now="2026-11-30T09:21:00Z")[0] == 0
    git(a.cwd, "pull", "-q", "--no-rebase", str(b.cwd), "main")  # a fast-forward
    assert a("touch", es["keep"].id, now="2026-11-30T09:30:00Z")[0] == 0
    assert a("compact", now="2026-11-30T09:31:00Z")[0] == 0  # folds a's one recall
    git(b.cwd, "pull", "-q", "--no-rebase", str(a.cwd), "main")
    code, out, _ = b("compact", now="2026-11-30T09:40:00Z")
    assert code == 0 and "nothing to compact" in out
    assert b("touch", es["decided"].id, now="2026-11-30T09:50:00Z")[0] == 0
    assert a("touch", es["keep"].id, now="2026-11-30T09:50:00Z")[0] == 0
    for p in (a, b):  # both fold one new recall, then merge: a true merge, no conflict
        assert p("compact", now="2026-11-30T09:51:00Z")[0] == 0
    git(a.cwd, "pull", "-q", "--no-rebase", "--no-edit", str(b.cwd), "main")
    assert a("compact", now="2026-11-30T10:00:00Z")[1].startswith("nothing to compact")
    counts = {e.id: e.recalls for e in l0_entries(a.cwd)}
    assert counts[es["decided"].id] == 2 and counts[es["keep"].id] == 2


def test_the_fold_marker_of_a_squash_is_this_logs_furthest():
    from pamd.myelin.recall_log import marker

    msg = ("squash\n\n* pamd compact\n\nPamd-Recall-Log: aaa@90\n\n* pamd compact\n\n"
           "Pamd-Recall-Log: bbb@500\n\n* pamd defrag\n\nPamd-Recall-Log: aaa@130\n")
    assert marker(msg, "aaa") == "aaa@130" and marker(msg, "bbb") == "bbb@500"
    assert marker(msg, "ccc") is None


def test_touch_counts_an_id_a_summary_stands_for_for_that_summary(brain):
    """`recall --json` lists a summary hit's raw leaf; touch took only ids of the tree and
    refused it. An id a summary in the tree stands for (a direct `from=` source, or one
    deeper, known from history) now counts for that summary, and touch says so."""
    from importlib import resources

    from pamd.consolidate.provenance import expand_ids
    from pamd.edge.brain import Brain

    root = brain.cwd
    week = resources.files("pamd.data").joinpath("sample-week.jsonl")
    assert brain("ingest", str(week), now="2026-11-30T00:00:00Z")[0] == 0
    assert brain("compact", now="2026-11-27T18:00:00Z")[0] == 0
    assert brain("defrag", now="2026-11-28T03:00:00Z")[0] == 0
    tree = {e.id: e for e in l0_entries(root)}
    top = next(e for e in tree.values() if any(s.startswith("s-") and s not in tree for s in e.sources))
    found = expand_ids(Brain(root), [top.id])
    mid = next(f.entry.id for f in found if f.depth == 1 and f.entry.sources)
    leaf = next(f.entry.id for f in found if f.depth == 2)
    code, out, err = brain("touch", leaf, mid, leaf, now="2026-11-28T04:00:00Z")
    assert code == 0, err
    assert f"counted {leaf} for {top.id}, the summary that holds it now" in out
    assert f"counted {mid} for {top.id}" in out and "noted 3 recalls" in out
    assert brain("compact", now="2026-11-28T04:10:00Z")[0] == 0
    after = next(e for e in l0_entries(root) if e.id == top.id)
    assert after.recalls == top.recalls + 3
    if leaf.startswith("e-"):  # the raw message used is the summary's via=, as a deep recall's is
        assert leaf in dict(after.via), after.via
    code, _, err = brain("touch", "e-000000000000")
    assert code == 1 and "no entry e-000000000000 in the brain's tiers, nor behind a summary" in err


def test_a_cortisol_failure_becomes_a_dna_lesson_linked_to_its_source(brain, tmp_path):
    es = seed(brain, tmp_path)
    fail = es["deploy"]
    assert "cortisol" in fail.neuro
    code, out, err = brain("compact", now="2026-11-30T09:30:00Z")
    assert code == 0, err
    lessons = [r for r in meta(brain.cwd / "DNA.md")["reflexes"] if isinstance(r, dict) and r.get("kind") == "lesson"]
    assert len(lessons) == 1
    assert fail.id in lessons[0]["from"]
    assert lessons[0]["text"]
    assert "Learned 1 lesson from failures" in git(brain.cwd, "log", "-1", "--format=%B")


def test_the_same_lesson_met_again_is_learned_not_added_twice(brain, tmp_path):
    es = seed(brain, tmp_path)
    assert brain("compact", now="2026-11-30T09:30:00Z")[0] == 0
    # The same failure on another day, in another session: the same lesson text but for
    # its "(lesson of DATE)" (spacing and case aside).
    f = tmp_path / "again.jsonl"
    rows = [("assistant", "The deploy failed with error: permission  denied on /srv/app, data not written."),
            ("assistant", "Fixed by running the migration as the app user; the deploy works now.")]
    f.write_text("\n".join(json.dumps({"ts": f"2026-12-07T09:0{i}:00Z", "role": r, "text": t, "session": "v"})
                           for i, (r, t) in enumerate(rows)) + "\n")
    assert brain("ingest", str(f), now="2026-12-07T09:10:00Z")[0] == 0
    again = next(e for e in l0_entries(brain.cwd) if e.session == "v" and "failed" in e.text)
    code, out, err = brain("compact", now="2026-12-07T09:30:00Z")
    assert code == 0, err
    m = meta(brain.cwd / "DNA.md")
    lessons = [r for r in m["reflexes"] if isinstance(r, dict) and r.get("kind") == "lesson"]
    assert len(lessons) == 1 and es["deploy"].id in lessons[0]["from"], lessons
    assert "(lesson of 2026-11-30)" in lessons[0]["text"]
    assert again.id in m["learned_from"]  # learned from: no lesson is asked of it again


def test_no_lesson_without_a_failure_and_its_fix(brain, tmp_path):
    # A tool's error, the agent's plan to look at it and a failure with its cause but no
    # fix teach nothing: "before the export, check the rates table had no GBP row" was a
    # reflex made of one half. Once the fix is said, the lesson holds the error and the fix.
    f = tmp_path / "work.jsonl"
    rows = [
        ("a", "assistant", '[tool Bash] {"command": "mix compile --warnings-as-errors", "timeout": 30000}'),
        ("a", "tool", "[tool error] Exit code 1\nerror: undefined function foo/0 (lib/a.ex:3)"),
        ("a", "assistant", "Let me run the tests again to see the error."),
        ("b", "assistant", "The export failed because the rates table had no GBP row."),
    ]
    f.write_text("\n".join(json.dumps({"ts": f"2026-11-30T09:0{i}:00Z", "role": r, "text": t, "session": s})
                           for i, (s, r, t) in enumerate(rows)) + "\n")
    assert brain("ingest", str(f), now=T0)[0] == 0
    tagged = {e.text[:12]: e for e in l0_entries(brain.cwd)}
    assert "cortisol" in tagged["[tool error]"].neuro
    # the agent announcing its next step is chatter: no tags at all (docs/neurotag.md)
    assert (tagged["Let me run t"].type, tagged["Let me run t"].neuro) == ("ephemeral", ())
    assert tagged["[tool Bash] "].neuro == ()
    assert brain("compact", now="2026-11-30T09:30:00Z")[0] == 0
    assert [r for r in meta(brain.cwd / "DNA.md")["reflexes"] if r.get("kind") == "lesson"] == []
    more = tmp_path / "fix.jsonl"
    more.write_text("\n".join(json.dumps({"ts": f"2026-11-30T10:0{i}:00Z", "role": "assistant", "text": t,
                                          "session": s}) for i, (s, t) in enumerate([
        ("a", "Fixed lib/a.ex: foo/0 was renamed to fetch/0, the call now uses fetch/0."),
        ("b", "Fixed by loading the ECB rates into the rates table; GBP exports work now.")])) + "\n")
    assert brain("ingest", str(more), now="2026-11-30T10:10:00Z")[0] == 0
    assert brain("compact", now="2026-11-30T10:30:00Z")[0] == 0
    texts = sorted(r["text"] for r in meta(brain.cwd / "DNA.md")["reflexes"] if r.get("kind") == "lesson")
    assert texts == [
        "`The export failed because the rates table had no GBP row.`: fixed by loading the ECB rates into "
        "the rates table; GBP exports work now. (lesson of 2026-11-30)",
        "`error: undefined function foo/0 (lib/a.ex:3)`: fixed lib/a.ex: foo/0 was renamed to "
        "fetch/0, the call now uses fetch/0. (lesson of 2026-11-30)"
    ], texts


def test_every_failure_with_its_fix_makes_a_lesson_in_both_languages(brain, tmp_path):
    # The gate knows the tagger's cortisol words in both languages ("Сейчас…", "Let's…",
    # "Попробую…, … упала" are failures said, not plans); each failure makes a lesson once
    # its fix is said, holding both as written, and none while the fix is missing.
    pairs = [
        ("Тесты падают после обновления, потому что забыли миграцию.", "Исправил: добавил миграцию, тесты проходят."),
        ("Деплой провалился из-за истёкшего сертификата.", "Причина была в сертификате, обновил его и задеплоил."),
        ("Попробую ещё раз, сборка упала.", "Сборка починилась после очистки кэша _build."),
        ("Fatal: the release tarball is missing the priv dir.", "Fixed by adding priv to the release overlays."),
        ("Mix test ended with exit code 1 because the DB was not migrated.",
         "The fix was running mix ecto.migrate before the suite."),
        ("Let's be honest: the deploy failed because the cert expired.", "Renewed the cert; the deploy works now."),
    ]
    alone = ["We had data corruption because the writer was not flushed.", "Сервис не запускается."]
    plans = ["Let me run the tests again to see the error.", "Посмотрю, почему тесты падают.",
             "Now I'll fix the failing test, then check the crash log."]
    rows = [(f"p{i}", t) for i, pair in enumerate(pairs) for t in pair]
    rows += [(f"a{i}", t) for i, t in enumerate(alone + plans)]
    f = tmp_path / "fails.jsonl"
    f.write_text("\n".join(json.dumps({"ts": f"2026-11-30T09:{i:02d}:00Z", "role": "assistant",
                                       "text": t, "session": s})
                           for i, (s, t) in enumerate(rows)) + "\n")
    toml = brain.cwd / "pamd.toml"
    toml.write_text(toml.read_text().replace("max_lessons_per_run = 5", "max_lessons_per_run = 20"))
    git(brain.cwd, "commit", "-qam", "more lessons per run")
    assert brain("ingest", str(f), now=T0)[0] == 0
    tagged = {e.text: e for e in l0_entries(brain.cwd)}
    assert all("cortisol" in tagged[t].neuro for t in [p[0] for p in pairs] + alone)
    assert all((tagged[t].type, tagged[t].neuro) == ("ephemeral", ()) for t in plans)
    assert brain("compact", now="2026-11-30T09:59:00Z")[0] == 0
    lessons = {r["from"][0]: r["text"] for r in meta(brain.cwd / "DNA.md")["reflexes"]
               if r.get("kind") == "lesson"}
    assert sorted(lessons) == sorted(tagged[p[0]].id for p in pairs)
    for failure, fix in pairs:
        text = lessons[tagged[failure].id].removesuffix(" (lesson of 2026-11-30)")
        assert text.startswith("`") and fix[1:].rstrip(".") in text, text
    assert lessons[tagged[pairs[2][0]].id].startswith("`сборка упала.`") or "сборка упала" in lessons[
        tagged[pairs[2][0]].id]
    assert "Learned 6 lessons from failures" in git(brain.cwd, "log", "-1", "--format=%B")


def test_a_success_or_a_question_makes_no_lesson_in_either_language(brain, tmp_path):
    # The gate took the tagger's cortisol words, which also match a
    # failure said not to have happened ("ошибок нет", "no data loss", "0 failures"), so
    # a clean run's report became "before все тесты прошли, check why it failed" in DNA.
    clean = [
        "Все тесты прошли, ошибок нет.",
        "Сборка прошла без ошибок.",
        "Тесты больше не падают.",
        "Регрессий нет, можно мержить.",
        "There is no data loss, the backup restored everything.",
        "All 43 tests pass, 0 failures.",
        "All tests pass, no errors.",
        "I added a regression test for the parser.",
        "The build doesn't fail anymore, nothing failed in CI.",
        "Let me check: does it fail?",
        "Проверю, упадут ли тесты.",
    ]
    f = tmp_path / "clean.jsonl"
    f.write_text("\n".join(json.dumps({"ts": f"2026-11-30T09:{i:02d}:00Z", "role": "assistant",
                                       "text": t, "session": f"s{i}"})
                           for i, t in enumerate(clean)) + "\n")
    assert brain("ingest", str(f), now=T0)[0] == 0
    tagged = {e.text: e for e in l0_entries(brain.cwd)}
    assert sum("cortisol" in tagged[t].neuro for t in clean) >= 5  # the tagger still tags them
    assert brain("compact", now="2026-11-30T09:30:00Z")[0] == 0
    reflexes = meta(brain.cwd / "DNA.md").get("reflexes") or []
    assert [r for r in reflexes if r.get("kind") == "lesson"] == []


def test_a_lesson_the_backend_declines_is_asked_for_once_and_its_cost_recorded(brain, tmp_path, monkeypatch):
    # A backend's empty lesson was dropped, never recorded, and asked
    # for again (and paid for) at every compaction while the failure stayed raw.
    from pamd.consolidate import compaction
    from pamd.consolidate.summarizers import ExtractiveSummarizer, Usage

    asked = []

    class Declines:
        name, model, local = "fake", "fake-1", True

        def summarize(self, groups):
            asked.extend(g.key for g in groups if g.tier == "lesson")
            texts, _ = ExtractiveSummarizer().summarize(groups)
            texts = ["" if g.tier == "lesson" else t for g, t in zip(groups, texts, strict=True)]
            return texts, Usage("fake", "fake-1", input_tokens=120, output_tokens=3, requests=1)

    monkeypatch.setattr(compaction, "get_summarizer", lambda config: Declines())
    f = tmp_path / "fail.jsonl"
    f.write_text(json.dumps({"ts": "2026-11-30T09:00:00Z", "role": "assistant", "session": "w",
                             "text": "The deploy failed because the certificate expired."}) + "\n"
                 + json.dumps({"ts": "2026-11-30T09:01:00Z", "role": "assistant", "session": "w",
                               "text": "Fixed by renewing the certificate; the deploy works now."}) + "\n")
    assert brain("ingest", str(f), now=T0)[0] == 0
    fail, fix = sorted(l0_entries(brain.cwd), key=lambda e: e.ts)
    code, out, err = brain("compact", now="2026-11-30T09:10:00Z")
    assert code == 0, err
    assert len(asked) == 1
    message = git(brain.cwd, "log", "-1", "--format=%B")
    assert f"The summarizer found no lesson in 1 failure ({fail.id})" in message
    assert "Pamd-LLM-Tokens: 120 in, 3 out" in message
    dna = meta(brain.cwd / "DNA.md")
    assert dna["learned_from"] == sorted([fail.id, fix.id])
    assert not [r for r in dna["reflexes"] if r.get("kind") == "lesson"]
    for now in ("2026-11-30T09:40:00Z", "2026-11-30T10:10:00Z"):
        assert brain("compact", now=now)[0] == 0
    assert len(asked) == 1


def test_a_person_dna_edit_survives_the_next_run(brain, tmp_path):
    es = seed(brain, tmp_path)
    brain("compact", now="2026-11-30T09:30:00Z")
    dna = brain.cwd / "DNA.md"
    m, body, _ = split_frontmatter(dna.read_text())
    m["preferences"] = ["Answer in short sentences."]
    m["reflexes"][0]["text"] = "Reworded by a person."
    dna.write_text("---\n" + yaml.safe_dump(m, sort_keys=False, allow_unicode=True) + "---\n" + "\n".join(body))
    git(brain.cwd, "commit", "-qam", "person edits DNA")
    for _ in range(10):
        brain("touch", es["decided"].id, now="2026-11-30T10:00:00Z")
    assert brain("compact", now="2026-11-30T10:00:00Z")[0] == 0
    m2 = meta(dna)
    assert m2["preferences"] == ["Answer in short sentences."]
    assert m2["reflexes"][0]["text"] == "Reworded by a person."
    assert len([r for r in m2["reflexes"] if r.get("kind") == "lesson"]) == 1  # not re-added
    assert any(es["decided"].id in r.get("from", []) for r in m2["reflexes"])


def test_broken_dna_is_named_and_never_overwritten(brain, tmp_path):
    seed(brain, tmp_path)
    dna = brain.cwd / "DNA.md"
    dna.write_text("---\nreflexes: [oops\n---\n# DNA\n")
    git(brain.cwd, "commit", "-qam", "person breaks DNA")
    code, out, _ = brain("check")
    assert code == 1 and out.startswith("DNA.md:")
    n = head_count(brain.cwd)
    code, _, err = brain("compact", now="2026-11-30T09:30:00Z")
    assert code == 1 and "DNA.md" in err and "will not overwrite" in err
    assert dna.read_text() == "---\nreflexes: [oops\n---\n# DNA\n" and head_count(brain.cwd) == n


def test_state_snapshot_and_state_at(brain, tmp_path):
    seed(brain, tmp_path)
    brain("compact", now="2026-11-30T09:30:00Z")
    first = git(brain.cwd, "rev-parse", "HEAD").strip()
    st = meta(brain.cwd / "STATE.md")
    assert any("release notes" in g for g in st["active_goals"])
    # the deploy failure was fixed: no failure to name, and never tag counts ("serotonin 15")
    assert st["updated"] == "2026-11-30T09:30:00Z" and st["emotional_context"] == ""
    assert st["last_instruction"] == "Please keep release notes in docs/releases.md from now on."
    brain("remember", "Maybe the slow deploys come from the DNS cache.", now="2026-11-30T11:00:00Z")
    brain("remember", "I want the CLI to print JSON everywhere.", "--type", "user_intent", now="2026-11-30T11:01:00Z")
    brain("compact", now="2026-11-30T11:30:00Z")
    code, out, _ = brain("state", "--json")
    now_state = json.loads(out)
    assert "JSON" in now_state["current_focus"]
    assert any("DNS" in h for h in now_state["hypotheses"])
    code, out, _ = brain("state", "--at", first, "--json")
    assert json.loads(out)["updated"] == "2026-11-30T09:30:00Z"


def test_state_shows_a_tool_call_by_its_gist_not_its_json(brain, tmp_path):
    # STATE's focus was '[tool Bash] {"command": …, "timeout": 30000}'.
    f = tmp_path / "agent.jsonl"
    rows = [
        ("assistant", "Maybe the export is slow because the rates table has no index."),
        ("assistant", '[tool Bash] {"command": "psql -c \'\\d rates\'", "description": "Show the rates '
                      'table", "timeout": 30000, "note": "I think this might fail"}'),
    ]
    f.write_text("\n".join(json.dumps({"ts": f"2026-11-30T09:0{i}:00Z", "role": r, "text": t, "session": "w"})
                           for i, (r, t) in enumerate(rows)) + "\n")
    assert brain("ingest", str(f), now=T0)[0] == 0
    assert brain("compact", now="2026-11-30T09:10:00Z")[0] == 0
    st = meta(brain.cwd / "STATE.md")
    # Neither an instruction nor work done or open: no focus rather than a tool call as one.
    assert st["current_focus"] == "" and st["active_goals"] == [] and st["done"] == []
    assert st["hypotheses"] == ["Maybe the export is slow because the rates table has no index."]


def test_state_shows_a_claude_code_slash_command_as_typed_not_its_markup(brain, tmp_path):
    # A Claude Code session's goal read '<command-message>x</command-message>
    # <command-name>/x</command-name> <command-args>websearch to learn how to…' (cut at 160).
    f = tmp_path / "cc.jsonl"
    text = ("<command-message>beads:create</command-message>\n<command-name>/beads:create</command-name>\n"
            "<command-args>websearch to learn how to set up credo and dialyzer fast\n\n"
            "Maybe there are igniter scripts?</command-args>")
    f.write_text(json.dumps({"ts": "2026-11-30T09:00:00Z", "role": "user", "text": text, "session": "w"}) + "\n")
    assert brain("ingest", str(f), now=T0)[0] == 0
    assert brain("compact", now="2026-11-30T09:10:00Z")[0] == 0
    st = meta(brain.cwd / "STATE.md")
    typed = ("/beads:create websearch to learn how to set up credo and dialyzer fast "
             "Maybe there are igniter scripts?")
    assert st["last_instruction"] == typed
    assert st["active_goals"] == [f"{typed} (the user's last instruction; nothing committed or closed since)"]
    assert st["current_focus"] == st["active_goals"][0]
    assert st["hypotheses"] == ["Maybe there are igniter scripts?"]


def test_demotion_keeps_the_recalled_leaf_that_preload_shows():
    # A summary recalled 12 times, 7 through one raw message (PRELOAD showed its words),
    # was demoted to 6 with via 3 (7 // 2; the leaves recalled once lost): its own words then
    # counted as much as the leaf, and PRELOAD.md switched to a 600-character summary nobody asked for.
    from datetime import datetime

    from pamd.core.config import defaults
    from pamd.core.entry import Entry
    from pamd.core.fmt import Doc
    from pamd.myelin import myelin

    e = Entry(id="s-0123456789ab", ts=datetime(2026, 11, 1, tzinfo=UTC), role="summary", text="the summary",
              recalls=12, seen="2026-11-01", via=(("e-aaaaaaaaaaaa", 7), ("e-bbbbbbbbbbbb", 1), ("e-cccccccccccc", 1)),
              tier="L4", sources=("e-aaaaaaaaaaaa",))
    assert myelin.shown_leaf(e) == "e-aaaaaaaaaaaa"
    docs = {"MEMORY.md": Doc({}, "", [e], 1)}
    out, touched, n = myelin.demote(docs, defaults(), datetime(2027, 1, 5, tzinfo=UTC))
    d = out["MEMORY.md"].entries[0]
    assert n == 1 and d.recalls == 6 and touched == {"MEMORY.md"}
    assert myelin.shown_leaf(d) == "e-aaaaaaaaaaaa"
    assert sum(k for _, k in d.via) <= d.recalls


def test_a_tool_output_is_no_hypothesis_in_state(brain, tmp_path):
    # A Claude Code session's STATE.md listed two hypotheses, both a pre-commit hook's
    # output: "[tool error] Pre-commit validation failed: … Checking 114 source files (this might take a while)".
    f = tmp_path / "agent.jsonl"
    rows = [
        ("assistant", "Maybe the hook fails because credo runs in strict mode."),
        ("tool", "[tool error] Pre-commit validation failed: Checking 114 source files (this might take a while) ..."),
    ]
    f.write_text("\n".join(json.dumps({"ts": f"2026-11-30T09:0{i}:00Z", "role": r, "text": t, "session": "w"})
                           for i, (r, t) in enumerate(rows)) + "\n")
    assert brain("ingest", str(f), now=T0)[0] == 0
    assert brain("compact", now="2026-11-30T09:10:00Z")[0] == 0
    assert meta(brain.cwd / "STATE.md")["hypotheses"] == ["Maybe the hook fails because credo runs in strict mode."]


def test_a_person_goals_and_hypotheses_in_state_are_kept_pinned(brain, tmp_path):
    """pamd remakes active_goals and hypotheses at every run: what a person adds there (not
    in the STATE.md pamd last committed) moves to pinned_goals / pinned_hypotheses, which
    pamd never rewrites, and the commit says so; a pamd goal a person removed comes back
    while the last day's entries still hold it, also said."""
    es = seed(brain, tmp_path)
    brain("compact", now="2026-11-30T09:30:00Z")
    state = brain.cwd / "STATE.md"
    m, body, _ = split_frontmatter(state.read_text())
    pamds = [g for g in m["active_goals"] if "release notes" in g]
    assert pamds
    m["active_goals"] = ["Ship billing export by Friday (set by Ann)",
                         *[g for g in m["active_goals"] if g not in pamds]]
    m["hypotheses"] = ["The export is slow because of N+1 queries (Ann)"]
    m["current_focus"] = "Ann's focus of the day"
    state.write_text("---\n" + yaml.safe_dump(m, sort_keys=False, allow_unicode=True) + "---\n" + "\n".join(body))
    git(brain.cwd, "commit", "-qam", "Ann sets goals")
    assert brain("touch", es["decided"].id, now="2026-11-30T10:40:00Z")[0] == 0  # a fold alone
    assert brain("compact", now="2026-11-30T11:00:00Z")[0] == 0
    st = meta(state)
    assert st["pinned_goals"] == ["Ship billing export by Friday (set by Ann)"]
    assert st["pinned_hypotheses"] == ["The export is slow because of N+1 queries (Ann)"]
    assert "Ship billing" not in str(st["active_goals"]) and pamds[0] in st["active_goals"]
    msg = git(brain.cwd, "log", "-1", "--format=%B")
    assert "Kept a person's goal in pinned_goals" in msg and "(set by Ann)" in msg
    assert "Kept a person's hypothesis in pinned_hypotheses" in msg
    assert "Replaced a person's current_focus (history keeps it): \"Ann's focus of the day\"" in msg
    assert "Put back a goal a person removed from active_goals" in msg and "release notes" in msg
    out = brain("state")[1]
    assert "**Pinned goals:**\n- Ship billing export" in out
    assert "Ship billing export" in brain("boot")[1]
    # later runs leave the pinned items alone and move nothing of pamd's there
    brain("remember", "I want the CLI to print JSON everywhere.", "--type", "user_intent", now="2026-11-30T11:10:00Z")
    assert brain("compact", now="2026-11-30T11:30:00Z")[0] == 0
    st2 = meta(state)
    assert st2["pinned_goals"] == st["pinned_goals"] and st2["pinned_hypotheses"] == st["pinned_hypotheses"]
    assert any("JSON" in g for g in st2["active_goals"])
    assert "person" not in git(brain.cwd, "log", "-1", "--format=%B")


@pytest.mark.parametrize("how", ["revert", "squash"])
def test_state_pamd_wrote_before_a_revert_or_a_squash_merge_is_not_taken_for_a_persons(brain, tmp_path, how):
    """A revert of a compaction brings back goals pamd wrote a run earlier, and a squash merge
    leaves pamd's STATE.md under a commit whose message git indents: neither is a person's
    edit, so nothing moves to the pinned fields and no commit says a person's was replaced."""
    seed(brain, tmp_path)
    root = brain.cwd
    assert brain("compact", now="2026-11-30T09:30:00Z")[0] == 0
    main = git(root, "rev-parse", "--abbrev-ref", "HEAD").strip()
    # pamd commits only on a brain's home branch: the squashed side is another clone's main
    side = type(brain)(tmp_path / "clone", brain.capsys) if how == "squash" else brain
    if how == "squash":
        git(tmp_path, "clone", "-q", str(root), str(side.cwd))
    side("remember", "I want the CLI to print JSON everywhere.", "--type", "user_intent", now="2026-11-30T10:50:00Z")
    assert side("compact", now="2026-11-30T11:00:00Z")[0] == 0
    assert any("JSON" in g for g in meta(side.cwd / "STATE.md")["active_goals"])
    if how == "revert":
        git(root, "revert", "--no-edit", "HEAD")  # STATE.md is 09:30's again
    else:
        git(root, "fetch", "-q", str(side.cwd), f"{main}:side")
        git(root, "merge", "-q", "--squash", "side")
        git(root, "commit", "-q", "--no-edit")  # git's message: the squashed ones, indented
        git(root, "branch", "-q", "-D", "side")
        assert "    Pamd-Run: compact" in git(root, "log", "-1", "--format=%B")
    brain("remember", "We decided to keep the export job at 01:00.", now="2026-11-30T11:20:00Z")
    assert brain("compact", now="2026-11-30T11:30:00Z")[0] == 0
    st = meta(root / "STATE.md")
    assert not st.get("pinned_goals") and not st.get("pinned_hypotheses"), st
    msg = git(root, "log", "-1", "--format=%B")
    # (after the revert pamd does put back the goal the revert took away, and says so)
    assert "Kept a person's" not in msg and "Replaced a person's" not in msg, msg


def test_boot_order_budget_and_cut(brain, tmp_path):
    seed(brain, tmp_path)
    brain("compact", now="2026-11-30T09:30:00Z")
    code, out, _ = brain("boot")
    assert code == 0
    # most useful first: what is open and was asked, then the lessons, then memory
    # (MEMORY.md and PRELOAD.md hold nothing yet: no section for them)
    order = [out.index(h) for h in ("## State (STATE.md)", "## DNA (DNA.md)", "## Hot memory (raw)")]
    assert "## Long-term memory" not in out and "## Preloaded" not in out
    assert order == sorted(order)
    assert "nothing cut" in out
    full = json.loads(brain("boot", "--json")[1])["tokens"]
    budget = full - 30
    code, out, _ = brain("boot", "--budget", str(budget), "--json")
    b = json.loads(out)
    assert b["tokens"] <= budget and b["cut"]["entries"] >= 1
    kept = "".join(s["text"] for s in b["sections"])
    assert "Postgres 16" in kept  # the decision has the highest retention: cut last
    code, out2, _ = brain("boot", "--budget", str(budget))
    assert "; cut " in out2.splitlines()[1]
    # every cut entry's retention is at most this bound (the header's "≤"); the old key stays
    top = b["cut"]["max_retention"]
    assert top == b["cut"]["below_retention"] and 0 < top <= 1
    assert f"of retention ≤ {top:.2f}" in out2.splitlines()[1]


def test_boot_says_when_what_always_goes_in_is_over_the_budget(brain, tmp_path):
    """DNA, PRELOAD, STATE and MEMORY.md's notes go in whole; when they alone pass --budget the
    output is over it, and an agent harness is told on stderr (and in JSON) which files did it."""
    seed(brain, tmp_path)
    brain("compact", now="2026-11-30T09:30:00Z")
    code, out, err = brain("boot", "--budget", "50")
    assert code == 0 and out.startswith("# Boot context")
    assert err.count("\n") == 1 and err.startswith("pamd: warning: the boot context is ")
    assert "over the budget of 50" in err and "STATE.md " in err and "DNA.md " in err
    b = json.loads(brain("boot", "--budget", "50", "--json")[1])
    assert b["over_budget"] is True and b["tokens"] > 50
    code, out, err = brain("boot", "--json")
    assert code == 0 and err == "" and json.loads(out)["over_budget"] is False


def _many_notes(brain, tmp_path):
    """(the brain, now) after 150 short notes of one morning are ingested."""
    from pamd.core.entry import parse_time
    from pamd.edge.brain import Brain

    f = tmp_path / "many.jsonl"
    f.write_text("".join(json.dumps({"ts": f"2026-11-29T{8 + i // 60:02d}:{i % 60:02d}:00Z", "role": "user",
                                     "text": f"Note {i}: the cache for service {i} holds {i * 7} keys."}) + "\n"
                         for i in range(150)))
    assert brain("ingest", str(f), now="2026-11-29T12:00:00Z")[0] == 0
    return Brain(brain.cwd), parse_time("2026-11-29T12:00:00Z")


def test_boot_never_passes_its_budget_whatever_the_width_of_the_cut_note(brain, tmp_path):
    """The header's "cut N entries (T tokens)" is written after the cut: room for it is
    reserved at its widest, so no budget is passed by the one or two tokens of its digits."""
    from pamd.myelin.boot import build

    b, now = _many_notes(brain, tmp_path)
    files = b.entry_files() + ["DNA.md", "PRELOAD.md", "STATE.md"]
    full = build(b.read, files, b.config, now).tokens
    over = [n for n in range(full // 3, full, 3) if build(b.read, files, b.config, now, n).tokens > n]
    assert over == []


def test_boot_works_out_each_entrys_line_once_however_much_it_cuts(brain, tmp_path, monkeypatch):
    """An entry's line, its tokens and its retention were worked out again for the cost of
    each cut, for the cut note and for every assembly: five lines an entry, most of the
    time of a large brain's boot. The context is the same."""
    from pamd.myelin import boot as boot_mod

    b, now = _many_notes(brain, tmp_path)
    files = b.entry_files()
    real, calls = boot_mod._entry_line, []
    monkeypatch.setattr(boot_mod, "_entry_line", lambda e: calls.append(e.id) or real(e))
    x = boot_mod.build(b.read, files, b.config, now, 400)
    assert x.cut_entries > 100 and len(calls) == len(set(calls)) == 150


def test_boot_cuts_no_more_than_needed_when_a_cut_empties_a_tier(brain):
    """A cut that takes a tier's last entry takes its section header (which names every
    file of the tier) too: boot once went on cutting as if the header stayed, up to every
    entry of every tier. For each budget, one cut fewer must not fit; the header's bound
    is "≤" the highest retention among what was cut."""
    from importlib import resources

    from pamd.core.entry import parse_time
    from pamd.edge.brain import Brain
    from pamd.encode.hippocampus import retention
    from pamd.myelin.boot import build

    week = resources.files("pamd.data").joinpath("sample-week.jsonl")
    assert brain("ingest", str(week), now="2026-11-30T00:00:00Z")[0] == 0
    assert brain("compact", now="2026-11-27T18:00:00Z")[0] == 0
    assert brain("remember", "We decided to name the job export-nightly.", now="2026-11-27T19:00:00Z")[0] == 0
    assert brain("defrag", now="2026-11-28T03:00:00Z")[0] == 0
    b, now = Brain(brain.cwd), parse_time("2026-11-28T03:00:00Z")
    files = b.entry_files() + ["DNA.md", "PRELOAD.md", "STATE.md"]
    full = build(b.read, files, b.config, now).tokens
    boots = {n: build(b.read, files, b.config, now, n) for n in range(full // 2, full)}
    fits_with = {}  # cut count -> tokens of that context (the same whatever the budget)
    for x in boots.values():
        fits_with.setdefault(x.cut_entries, x.tokens)
    over_cut = [n for n, x in boots.items() if x.cut_entries and fits_with.get(x.cut_entries - 1, n + 1) <= n]
    assert over_cut == [] and len(fits_with) > 5
    assert all(x.tokens <= n for n, x in boots.items() if not x.over_budget_note())
    x = boots.get(650) or build(b.read, files, b.config, now, 650)
    code, out, _ = brain("boot", "--budget", "650", now="2026-11-28T03:00:00Z")
    head = out.splitlines()[1]
    # the CLI cuts what build() cuts (how many depends on the template texts' length)
    assert code == 0 and f"cut {x.cut_entries} entries" in head and "export-nightly" in out, head
    mine = {e.id: e for e in l0_entries(brain.cwd)}
    kept = "".join(s.text for s in x.sections)
    gone = [e for eid, e in mine.items() if eid not in kept]
    bound = float(head.rsplit("≤ ", 1)[1].split()[0])
    assert gone and max(retention(e, b.config, now) for e in gone) <= bound


def test_boot_at_reproduces_an_old_boot_byte_for_byte(brain, tmp_path):
    seed(brain, tmp_path)
    brain("compact", now="2026-11-30T09:30:00Z")
    sha = git(brain.cwd, "rev-parse", "HEAD").strip()
    r = brain.proc("boot", now=None)
    assert r.returncode == 0
    then = r.stdout
    brain("remember", "A later thought that changes the context.", now="2026-11-30T12:00:00Z")
    brain("compact", now="2026-11-30T14:00:00Z")
    r2 = brain.proc("boot", "--at", sha, now=None)
    assert r2.stdout == then
    assert brain.proc("boot", now=None).stdout != then


def test_a_recall_of_an_entry_not_yet_committed_is_counted_once_it_is(brain, tmp_path):
    """The fold reads committed entries only; a recall of an entry that sat uncommitted in
    the tree was dropped while the log's marker moved past it. It is carried instead."""
    assert brain("remember", "The DNS record for api points at the new load balancer.",
                 now="2026-11-28T09:00:00Z")[0] == 0
    assert brain("remember", "The echidna invoice is due on the 5th.", now="2026-11-27T09:05:00Z")[0] == 0
    root = brain.cwd
    git(root, "reset", "-q", "HEAD~1")  # the echidna entry (a day file of its own) is uncommitted
    assert brain("recall", "--log", "-k", "1", "echidna invoice", now="2026-11-28T10:00:00Z")[0] == 0
    assert brain("recall", "--log", "-k", "1", "DNS record load balancer", now="2026-11-28T10:01:00Z")[0] == 0
    assert brain("compact", now="2026-11-28T10:30:00Z")[0] == 0
    assert "Folded 1 recall " in git(root, "log", "-1", "--format=%B")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "the person commits the entry")
    assert brain("compact", now="2026-11-28T11:00:00Z")[0] == 0
    from pamd.edge.brain import Brain

    counts = {("echidna" if "echidna" in e.text else "dns"): e.recalls for e in Brain(root).load().entries}
    assert counts == {"dns": 1, "echidna": 1}


def test_a_persons_text_in_preload_outside_pamds_block_survives_compaction(brain, tmp_path):
    es = seed(brain, tmp_path)
    root = brain.cwd
    assert brain("compact", now="2026-11-30T09:30:00Z")[0] == 0
    pre = root / "PRELOAD.md"
    pre.write_text(pre.read_text() + "\n## Also pinned\n\n- The on-call phone is +1 555 0100.\n")
    assert brain("check")[0] == 0
    git(root, "commit", "-qam", "another pin")
    touch_and_compact(brain, es["decided"].id, 5, now="2026-11-30T10:00:00Z")
    text = pre.read_text()
    assert es["decided"].id in text and "The on-call phone is +1 555 0100." in text
    assert text.index("<!-- pamd:end -->") < text.index("## Also pinned")
    assert brain("check")[0] == 0
    # A line a person writes inside pamd's block would be replaced: `pamd check` says so.
    pre.write_text(text.replace("<!-- pamd:end -->", "- mine, inside\n<!-- pamd:end -->"))
    code, out, _ = brain("check")
    assert code == 1 and "PRELOAD.md:" in out and "inside pamd's block" in out
    pre.write_text(text.replace("<!-- pamd:end -->\n", ""))
    code, out, _ = brain("check")
    assert code == 1 and "PRELOAD.md:" in out and "pamd:end" in out
    git(root, "commit", "-qam", "person breaks the block")
    n = head_count(root)
    assert brain("touch", es["decided"].id, now="2026-11-30T10:30:00Z")[0] == 0
    code, _, err = brain("compact", now="2026-11-30T10:30:00Z")
    assert code == 1 and "PRELOAD.md" in err and "will not overwrite" in err and head_count(root) == n


def test_a_preload_from_before_the_markers_keeps_what_follows_pamds_lines(brain, tmp_path):
    es = seed(brain, tmp_path)
    root = brain.cwd
    eid = es["decided"].id
    pre = root / "PRELOAD.md"
    pre.write_text(pre.read_text() + "\n## Myelinated memories\n\n"
                   f"- An old line. <!-- {eid} · recalls 5 · memory/L0/2026-11-30.md -->\n"
                   "- Ask Anna before any schema change.\n\n## Also pinned\n\n- Phone: 0100.\n")
    git(root, "commit", "-qam", "a PRELOAD from an older pamd, with a person's lines")
    touch_and_compact(brain, eid, 5)
    text = pre.read_text()
    assert "An old line." not in text and text.count(eid) == 1
    assert text.count("## Myelinated memories") == 1
    assert "- Ask Anna before any schema change." in text and "- Phone: 0100." in text
    assert text.index("<!-- pamd:end -->") < text.index("Ask Anna")
    assert brain("check")[0] == 0
    code, out, _ = brain("boot")
    assert "Ask Anna" in out and "pamd:begin" not in out


def test_a_recalled_reflex_follows_its_memory_down_the_tiers(brain):
    """One reflex per memory: the L2 and L3 summaries a reflex's entry is folded into
    inherit its recalls, and are not made reflexes again."""
    from importlib import resources

    root = brain.cwd
    week = resources.files("pamd.data").joinpath("sample-week.jsonl")
    assert brain("ingest", str(week), now="2026-11-23T09:30:00Z")[0] == 0
    assert brain("compact", now="2026-11-23T09:40:00Z")[0] == 0
    eid = next(e.id for e in l0_entries(root) if e.text.startswith("Let's build the billing export"))
    touch_and_compact(brain, eid, 10, now="2026-11-23T09:50:00Z")
    for t in ("2026-11-23T16:00:00Z", "2026-11-24T12:00:00Z", "2026-11-27T12:00:00Z"):
        assert brain("defrag", now=t)[0] == 0
    holder = [e for e in l0_entries(root) if e.recalls >= 10]
    assert holder and holder[0].id != eid and holder[0].tier in ("L2", "L3")  # it did move down
    m = meta(root / "DNA.md")
    recalled = [r for r in m["reflexes"] if isinstance(r, dict) and r.get("kind") == "recalled"]
    assert [r["from"] for r in recalled] == [[eid]]
    assert holder[0].id in m["learned_from"]
    assert brain("check")[0] == 0


def test_a_reflex_a_person_deletes_stays_deleted(brain, tmp_path):
    es = seed(brain, tmp_path)
    root = brain.cwd
    touch_and_compact(brain, es["decided"].id, 10)  # a lesson (the deploy failure) and a recalled reflex
    dna = root / "DNA.md"
    m, body, _ = split_frontmatter(dna.read_text())
    assert {r["kind"] for r in m["reflexes"]} == {"lesson", "recalled"}
    m["reflexes"] = []
    dna.write_text("---\n" + yaml.safe_dump(m, sort_keys=False, allow_unicode=True) + "---\n" + "\n".join(body))
    git(root, "commit", "-qam", "those reflexes are wrong, remove them")
    assert brain("remember", "The weather is nice today.", now="2026-11-30T10:30:00Z")[0] == 0
    touch_and_compact(brain, es["decided"].id, 1, now="2026-11-30T10:40:00Z")
    assert meta(dna)["reflexes"] == []
    # The record of what pamd learned from is in the tree: delete an id from it to learn again.
    m = meta(dna)
    assert es["deploy"].id in m["learned_from"] and es["decided"].id in m["learned_from"]


@pytest.mark.parametrize("value", ["", " 5", " e-000000000001"])
def test_a_reflex_a_person_wrote_with_an_odd_from_does_not_stop_compaction(brain, value):
    root = brain.cwd
    dna = root / "DNA.md"
    dna.write_text(dna.read_text().replace(
        "reflexes: []", f"reflexes:\n- text: Always run the linter before pushing.\n  from:{value}", 1))
    assert brain("check")[0] == 0
    git(root, "commit", "-qam", "my reflex")
    assert brain("remember", "We decided to use Postgres 16.", now="2026-11-30T10:00:00Z")[0] == 0
    code, _, err = brain("compact", now="2026-11-30T10:40:00Z")
    assert code == 0, err
    assert "Always run the linter before pushing." in dna.read_text()


def _block(root):
    text = (root / "PRELOAD.md").read_text()
    return text[text.index("<!-- pamd:begin"):text.index("<!-- pamd:end")]


def test_a_summary_recalled_through_a_raw_leaf_preloads_that_leafs_words(brain, tmp_path):
    """Deep recall reaches a summary through a raw message behind it: the summary's own words
    (a 3:1 summary, later an L3 one-liner) may not hold what was asked. PRELOAD and boot show
    the leaf that was recalled, named by the summary's `via=`, and a fresh clone's next
    compaction, reading the leaf from history, makes the same block."""
    root = brain.cwd
    ingest_mixed_facts(brain, tmp_path)
    assert brain("compact", now="2026-11-30T15:00:00Z")[0] == 0
    for i in range(5):
        code, out, err = brain("recall", "--log", "which bucket does the nightly backup write to", "-k", "1",
                               now=f"2026-11-30T16:0{i}:00Z")
        assert code == 0 and "[via e-" in out, err
    assert brain("compact", now="2026-11-30T17:00:00Z")[0] == 0
    held = next(e for e in l0_entries(root) if e.recalls >= 5)
    assert held.sources and "pamd-archive-eu" not in held.text  # the summary lost the words
    (leaf, n), = held.via
    assert n == 5 and leaf.startswith("e-")
    block = _block(root)
    assert "The nightly backup job writes to the bucket named pamd-archive-eu." in block
    assert f"<!-- {held.id} · recalls 5 · {held.path} · via {leaf} -->" in block
    assert " ".join(held.text.split()) not in block  # not the summary's own words
    assert brain("check")[0] == 0
    code, out, _ = brain("boot", now="2026-11-30T17:00:00Z")
    assert "pamd-archive-eu" in out
    # A fresh clone (no .pamd/: the leaf's words come from history) makes the same block.
    clone = tmp_path / "clone"
    git(tmp_path, "clone", "-q", str(root), str(clone))
    for r in (root, clone):
        brain.cwd = r
        assert brain("remember", "We decided the backups stay in the EU.", now="2026-11-30T18:00:00Z")[0] == 0
        assert brain("compact", now="2026-11-30T18:30:00Z")[0] == 0
    assert head_count(clone) == head_count(root)
    assert _block(clone) == _block(root) == block
    # A shallow clone lacks the leaf's history: PRELOAD.md's own line names it and holds
    # its words, so the block stays (it went back to the summary's words, churning).
    shallow = tmp_path / "shallow"
    git(tmp_path, "clone", "-q", "--depth", "1", f"file://{root}", str(shallow))
    brain.cwd = shallow
    assert brain("remember", "We decided the restore drill runs monthly.", now="2026-11-30T19:00:00Z")[0] == 0
    assert brain("compact", now="2026-11-30T19:30:00Z")[0] == 0
    assert _block(shallow) == block


def test_a_raw_entry_recalled_then_compacted_keeps_its_words_in_preload_and_its_reflex(brain, tmp_path):
    """A raw entry recalled 10 times and then compressed into a summary: the summary inherits
    its recalls, and PRELOAD and the DNA reflex keep the entry's words, not the summary's."""
    root = brain.cwd
    ingest_mixed_facts(brain, tmp_path)
    raw = next(e for e in l0_entries(root) if "pamd-archive-eu" in e.text)
    for _ in range(10):
        assert brain("touch", raw.id, now="2026-11-30T14:00:00Z")[0] == 0
    assert brain("compact", now="2026-11-30T15:00:00Z")[0] == 0
    held = next(e for e in l0_entries(root) if e.recalls == 10)
    assert held.id != raw.id and "pamd-archive-eu" not in held.text and held.via == ((raw.id, 10),)
    assert f"- {raw.text} <!-- {held.id} · recalls 10 · {held.path} · via {raw.id} -->" in _block(root)
    recalled = [r for r in meta(root / "DNA.md")["reflexes"] if isinstance(r, dict) and r.get("kind") == "recalled"]
    assert [(r["text"], r["from"]) for r in recalled] == [(raw.text, [held.id])]


def test_a_goal_a_person_wrote_as_a_mapping_is_pinned_not_a_crash():
    """Items of pamd's lists are compared with what pamd wrote before through a set: a goal a
    person wrote as a YAML mapping must not make every compaction fail."""
    from pamd.myelin import snapshot

    cur = "---\nkind: state\nactive_goals:\n- {text: ship it, owner: ann}\n- plain\nhypotheses: []\n---\n# STATE\n"
    last = "---\nkind: state\nactive_goals:\n- plain\n---\n# STATE\n"
    text, notes = snapshot.render_state(cur, {"active_goals": ["x"], "hypotheses": []}, last,
                                        snapshot.pamds_values(last))
    assert notes == ["Kept a person's goal in pinned_goals (pamd remakes active_goals): \"ship it\""]
    assert "owner: ann" in text


def test_a_pinned_name_colon_goal_or_a_date_reads_as_written_everywhere(brain):
    """`- Ann: finish the review` is a YAML mapping and `- 2026-12-15` a date: state, boot
    and the commit message showed the agent Python reprs ({'Ann': …}, datetime.date(…)).
    They read as written now; an item with no one-line text is named by `pamd check`."""
    root = brain.cwd
    state = root / "STATE.md"
    text = state.read_text().replace("pinned_goals: []", "pinned_goals:\n- Ann: finish the GDPR review\n"
                                     "- Deadline: 2026-12-15\n- 2026-12-20\n- 42")
    text = text.replace("pinned_hypotheses: []", "pinned_hypotheses:\n  - Bob: the cache helps")
    text = text.replace("active_goals: []", "active_goals:\n- Cy: ship v2")
    state.write_text(text)
    git(root, "commit", "-qam", "pin")
    assert brain("check")[0] == 0
    want = "- Ann: finish the GDPR review\n- Deadline: 2026-12-15\n- 2026-12-20\n- 42"
    assert f"**Pinned goals:**\n{want}" in brain("state")[1]
    boot = brain("boot")[1]  # quoted there: a person's text is stored text too
    assert want.replace("- ", "> - ") in boot and "> - Bob: the cache helps" in boot
    assert "{'" not in boot and "datetime" not in boot
    brain("remember", "We use Postgres.", now="2026-11-30T11:10:00Z")
    assert brain("compact", now="2026-11-30T11:30:00Z")[0] == 0
    msg = git(root, "log", "-1", "--format=%B")
    assert "Kept a person's goal in pinned_goals (pamd remakes active_goals): \"Cy: ship v2\"" in msg
    state.write_text(state.read_text().replace("- 42\n", "- 42\n- [a, b]\n- Ann: x\n  Bob: y\n"))
    line = state.read_text().split("\n").index("- [a, b]") + 1
    code, out, _ = brain("check")
    assert code == 1 and out.splitlines()[:2] == [
        f"STATE.md:{line}: pinned_goals: item is not one line of text (quote it)",
        f"STATE.md:{line + 1}: pinned_goals: item is not one line of text (quote it)"]


def test_a_person_s_reflex_written_as_a_date_number_or_mapping_does_not_stop_compaction(brain, tmp_path):
    """`- 2026-12-15` pinned in DNA.md's reflexes (check ok, boot
    showed it) crashed every compact and defrag (AttributeError: 'datetime.date' has no `get`).
    Such items read as written (as 7616a45 does for STATE and boot); a list is named by check."""
    import datetime

    root = brain.cwd
    dna = root / "DNA.md"
    dna.write_text(dna.read_text().replace("reflexes: []", "reflexes:\n- 2026-12-15\n- 42\n"
                                           "- Ann: always ask before deleting\n- [a, b]", 1))
    git(root, "commit", "-qam", "pin")
    line = dna.read_text().split("\n").index("- [a, b]") + 1
    assert brain("check")[1].splitlines() == [f"DNA.md:{line}: reflexes: item is not one line of text (quote it)"]
    (tmp_path / "m.jsonl").write_text(
        json.dumps({"ts": "2026-11-01T08:00:00Z", "role": "user", "session": "s",
                    "text": "Error: deploy failed, the token expired."}) + "\n"
        + json.dumps({"ts": "2026-11-01T08:01:00Z", "role": "assistant", "session": "s",
                      "text": "Fixed by rotating the deploy token; the deploy works now."}) + "\n")
    assert brain("ingest", str(tmp_path / "m.jsonl"), now="2026-11-01T09:00:00Z")[0] == 0
    code, _, err = brain("compact", now="2026-11-03T12:00:00Z")
    assert code == 0, err
    items = meta(dna)["reflexes"]
    assert items[:4] == [datetime.date(2026, 12, 15), 42, {"Ann": "always ask before deleting"}, ["a", "b"]]
    assert [i["kind"] for i in items[4:]] == ["lesson"]
    code, _, err = brain("defrag", now="2026-11-04T12:00:00Z")
    assert code == 0, err


def test_a_lesson_a_person_wrote_as_name_colon_text_is_not_added_again():
    """A person's `- Deploy: check the token first` is the same lesson as pamd's text."""
    from pamd.myelin.myelin import merge_dna

    dna = "---\nkind: dna\nreflexes:\n- 2026-12-15\n- 'Deploy: check the token first'\n---\n# DNA\n"
    ann = dna.replace("- 'Deploy: check the token first'", "- Deploy: check the token first")
    lesson = {"text": "Deploy: check the token first (lesson of 2026-11-01)", "kind": "lesson",
              "from": ["e-000000000001"]}
    for text in (dna, ann):
        out = merge_dna(text, [dict(lesson)], [])
        assert len(split_frontmatter(out, "DNA.md")[0]["reflexes"]) == 2, out


def test_boot_during_a_merge_leaves_conflicted_files_out_and_says_so(brain, tmp_path):
    """Two clones remembered on the same day; while their merge stops on the
    conflicts, boot pastes neither side with git's markers: the files are left out, named
    in the header, in JSON and on stderr (exit 0: the rest of the context is sound)."""
    import subprocess

    root = brain.cwd
    for side in ("m1", "m2"):
        git(tmp_path, "clone", "-q", str(root), side)
    for side in ("m2", "m1"):
        brain.cwd = tmp_path / side
        assert brain("remember", f"{side} note: the quota is 2 TB.", now=T0)[0] == 0
    r = subprocess.run(["git", "-c", "pull.rebase=false", "pull", "--no-edit", "../m2", "main"],
                       cwd=brain.cwd, capture_output=True, text=True)
    assert r.returncode == 1 and "CONFLICT" in r.stdout, r.stdout + r.stderr
    (l0,) = [p for p in git(brain.cwd, "diff", "--name-only", "--diff-filter=U").split()
             if p.startswith("memory/L0/")]
    state = brain.cwd / "STATE.md"  # as two compactions leave it: both sides' snapshots
    state.write_text(state.read_text().replace(
        "current_focus:", "<<<<<<< HEAD\ncurrent_focus: laptop\n=======\ncurrent_focus:", 1)
        .replace("\n---\n", "\n>>>>>>> 1234abcd\n---\n", 1))
    code, out, err = brain("boot")
    assert code == 0 and "<<<<<<<" not in out and ">>>>>>>" not in out, out
    assert "m1 note" not in out and "m2 note" not in out and "## State" not in out
    assert err.startswith(f"pamd: warning: left out: STATE.md, {l0}: conflict markers from a merge"), err
    assert out.splitlines()[2].startswith(f"<!-- left out: STATE.md, {l0}: conflict markers")
    assert json.loads(brain("boot", "--json")[1])["conflicted"] == ["STATE.md", l0]
    git(brain.cwd, "checkout", "STATE.md")
    git(brain.cwd, "merge", "--abort")
    code, out, err = brain("boot")
    assert code == 0 and err == "" and "m1 note" in out and "left out" not in out
    assert json.loads(brain("boot", "--json")[1])["conflicted"] == []


FAILURES = [("backup", "disk full on /var/backups"), ("export", "permission denied on /srv/export"),
            ("migration", "lock timeout on table invoices"), ("upload", "TLS handshake failed to s3"),
            ("build", "out of memory in the webpack step"), ("cron", "missing env var DATABASE_URL")]


def test_dna_over_its_budget_retires_pamds_least_recalled_oldest_reflexes_at_defrag(brain, tmp_path):
    """DNA.md had no size bound (a lesson a day, some 10,000 tokens a year).
    `[myelin] dna_budget`: the nightly defrag retires pamd's least recalled, oldest reflexes,
    never a person's; the commit names them; they are not made again; their memories stay."""
    from pamd.core.entry import count_tokens

    root = brain.cwd
    mine = "Always run the linter before pushing."
    dna = root / "DNA.md"
    dna.write_text(dna.read_text().replace("reflexes: []", f"reflexes:\n- {mine}", 1))
    cfg = root / "pamd.toml"
    cfg.write_text(cfg.read_text().replace("dna_budget = 5000", "dna_budget = 60", 1))
    git(root, "commit", "-qam", "my reflex, a small DNA budget")
    es = seed(brain, tmp_path)
    touch_and_compact(brain, es["decided"].id, 10)  # day 0: a lesson and a recalled reflex (10)
    first = [r for r in meta(dna)["reflexes"] if isinstance(r, dict) and r["kind"] == "lesson"]
    assert len(first) == 1
    retired: dict[str, dict] = {}
    for day, (job, err) in enumerate(FAILURES, 1):
        f = tmp_path / f"d{day}.jsonl"
        rows = [("assistant", f"The {job} job failed with error: {err}, nothing was written."),
                ("assistant", f"Fixed the {job} job by changing its config; it works now.")]
        f.write_text("\n".join(json.dumps({"ts": f"2026-12-0{day}T09:0{i}:00Z", "role": r, "text": t,
                                           "session": job}) for i, (r, t) in enumerate(rows)) + "\n")
        assert brain("ingest", str(f), now=f"2026-12-0{day}T09:10:00Z")[0] == 0
        code, out, err_ = brain("defrag", now=f"2026-12-0{day}T23:00:00Z")
        assert code == 0, err_
        items = meta(dna)["reflexes"]
        ours = [r for r in items if isinstance(r, dict)]
        assert items[0] == mine  # a person's reflex is never retired
        assert sum(count_tokens(r["text"]) for r in ours) <= 60
        msg = git(root, "log", "-1", "--format=%B")
        if "over their 60-token budget" in msg:
            before = yaml.safe_load(git(root, "show", "HEAD^:DNA.md").split("---\n")[1])["reflexes"]
            gone = [r for r in before if isinstance(r, dict) and r not in items]
            assert gone and all(f"\n- {' '.join(r['text'].split())} (from {', '.join(r['from'])})" in msg
                                for r in gone), msg
            retired.update({r["from"][0]: r for r in gone})
    assert retired, "the budget was never reached"
    # least recalled first: the recalled reflex (10 recalls) outlives every lesson; oldest lessons go first
    kinds = [r["kind"] for r in meta(dna)["reflexes"] if isinstance(r, dict)]
    assert "recalled" in kinds
    assert first[0]["from"][0] in retired
    # a retired reflex is not made again, and its memories stay reachable
    n = head_count(root)
    assert brain("defrag", now="2026-12-08T23:00:00Z")[0] == 0
    later = [r for r in meta(dna)["reflexes"] if isinstance(r, dict)]
    assert not any(r["from"] == old["from"] for r in later for old in retired.values())
    assert head_count(root) in (n, n + 1)
    code, out, _ = brain("expand", first[0]["from"][0])
    assert code == 0 and "permission denied" in out
    assert brain("check")[0] == 0 and brain("fsck")[0] == 0
    # a budget lowered by hand is kept by the next defrag, even on a night with nothing else to do
    cfg.write_text(cfg.read_text().replace("dna_budget = 60", "dna_budget = 20", 1))
    git(root, "commit", "-qam", "an even smaller DNA budget")
    m = head_count(root)
    code, out, _ = brain("defrag", "--plan", now="2026-12-08T23:30:00Z")  # says what it would retire
    assert code == 0 and "over their 20-token budget" in out and head_count(root) == m
    assert git(root, "status", "--porcelain") == ""
    assert brain("defrag", now="2026-12-08T23:30:00Z")[0] == 0
    assert "over their 20-token budget" in git(root, "log", "-1", "--format=%B")
    left = meta(dna)["reflexes"]
    assert left[0] == mine and [r["kind"] for r in left[1:]] == ["recalled"]
