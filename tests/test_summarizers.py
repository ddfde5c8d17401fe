"""Extractive summarizer: budgets, facts kept, tags, order, determinism, one-liners, lessons."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pamd.consolidate.summarizers import (
    MIN_TOKENS,
    ExtractiveSummarizer,
    Group,
    get_summarizer,
    lesson,
)
from pamd.consolidate.summarizers.lesson import states_failure
from pamd.core.entry import Entry, count_tokens
from pamd.errors import PamdError

T0 = datetime(2023, 5, 8, 13, 56, tzinfo=UTC)


def entries(*messages: tuple[str, str], step_minutes: int = 1, **extra) -> tuple[Entry, ...]:
    return tuple(
        Entry(id=f"e-{i:012d}", ts=T0 + timedelta(minutes=step_minutes * i), role=r, text=t,
              **extra)
        for i, (r, t) in enumerate(messages)
    )


DIALOG = entries(
    ("Caroline", "[D1:1] Hey Mel! Good to see you! How have you been?"),
    ("Melanie", "[D1:2] Hey Caroline! I'm swamped with the kids & work. What's up with you?"),
    ("Caroline", "[D1:3] I went to a LGBTQ support group yesterday and it was so powerful."),
    ("Melanie", "[D1:4] Wow, that's cool! Did you hear any inspiring stories?"),
    ("Caroline", "[D1:5] The transgender stories were so inspiring! I was so happy."),
    ("Melanie", "[D1:6] ok thanks"),
    ("Caroline", "[D1:7] I decided to study counseling at Portland State from 2023-09-01, "
                 "tuition is $4,200 a term."),
    ("Melanie", "[D1:8] That's really cool. You've got guts."),
    ("Melanie", "[D1:9] lol"),
)


def summarize(tier: str, es: tuple[Entry, ...], target: int) -> str:
    texts, usage = ExtractiveSummarizer().summarize([Group("g", tier, es, target)])
    assert usage.backend == "extractive" and usage.cost_usd == 0 and usage.requests == 0
    return texts[0]


def source_tokens(es) -> int:
    return sum(e.tokens for e in es)


@pytest.mark.parametrize("tier,ratio", [("L1", 3), ("L2", 10), ("L3", 50), ("L4", 50)])
def test_reaches_the_tier_ratio(tier, ratio):
    target = source_tokens(DIALOG) // ratio
    text = summarize(tier, DIALOG, target)
    assert 0 < count_tokens(text) <= max(target, MIN_TOKENS)
    if tier in ("L3", "L4"):
        assert "\n" not in text


def test_l1_keeps_the_decision_with_its_name_date_number_and_tag():
    text = summarize("L1", DIALOG, source_tokens(DIALOG) // 3)
    assert "[D1:7] I decided to study counseling at Portland State from 2023-09-01" in text
    assert "$4,200" in text
    # Chatter goes first.
    assert "ok thanks" not in text and "lol" not in text


def test_lines_name_their_speaker_and_keep_chronological_order():
    text = summarize("L1", DIALOG, source_tokens(DIALOG) // 2)
    lines = text.splitlines()
    assert all(re.match(r"^(Caroline|Melanie): \S", line) for line in lines)
    tags = [int(n) for n in re.findall(r"\[D1:(\d+)\]", text)]
    assert tags == sorted(tags) and len(tags) >= 3
    # Consecutive lines never repeat a speaker: they are merged into one line.
    speakers = [line.split(":")[0] for line in lines]
    assert all(a != b for a, b in zip(speakers, speakers[1:], strict=False))


def test_every_kept_sentence_carries_its_message_tag():
    text = summarize("L1", DIALOG, source_tokens(DIALOG) // 3)
    by_tag = {e.text.split("]")[0] + "]": e.text for e in DIALOG}
    for tag, body in re.findall(r"(\[D1:\d+\]) ([^\[\n]+)", text):
        first = body.strip().split("!")[0].split(".")[0][:20]
        assert first in by_tag[tag], (tag, body)


def test_a_sentence_from_a_tagged_message_keeps_the_tag_even_if_its_first_sentence_goes():
    es = entries(("Ann", "[D3:4] Hmm. Well. We moved the launch of Orion to 2024-07-15 in Berlin."))
    text = summarize("L1", es, 17)
    assert text.startswith("Ann: [D3:4] ") and "2024-07-15" in text and "Hmm" not in text


def test_near_duplicates_are_kept_once():
    es = entries(
        ("bob", "We agreed to ship version 2.1 on Friday."),
        ("alice", "Right, we agreed to ship version 2.1 on Friday!"),
        ("bob", "Dana will write the release notes for 2.1."),
    )
    text = summarize("L1", es, 40)
    assert text.lower().count("ship version 2.1") == 1
    assert "Dana will write the release notes" in text


def test_russian_decisions_outrank_chatter():
    es = entries(
        ("user", "Привет! Как дела?"),
        ("user", "Спасибо!"),
        ("user", "Мы решили перенести релиз на 15 мая, Анна согласна."),
        ("user", "Ну ладно, посмотрим потом как-нибудь ещё раз на это всё."),
    )
    text = summarize("L2", es, 16)
    assert "решили перенести релиз на 15 мая" in text


def test_high_importance_entry_wins_a_tie():
    es = (
        *entries(("a", "The blue folder sits on the shelf near the window."), importance=0.1),
        Entry(id="e-x", ts=T0 + timedelta(minutes=5), role="a",
              text="The green folder sits on the shelf near the door.", importance=0.95,
              neuro=("acetylcholine",), type="decision"),
    )
    assert "green folder" in summarize("L1", es, 15)


def test_one_liner_has_speakers_phrases_and_date_range():
    es = entries(
        ("Caroline", "I went to the LGBTQ support group on Sunday."),
        ("Melanie", "I painted a sunrise over the lake with my kids last week."),
        step_minutes=60 * 30,
    )
    text = summarize("L3", es, 40)
    assert re.fullmatch(r"(Caroline, Melanie|Caroline|Melanie): .+ \(2023-05-08–09\)", text), text
    assert "LGBTQ" in text and ";" in text


AGENT = entries(
    ("user", "Make the build warnings-free and push it."),
    ("assistant", '[tool Bash] {"command": "mix compile --warnings-as-errors 2>&1 | tail -20", '
                  '"description": "Compile, fail on warnings", "timeout": 30000}'),
    ("tool", "[tool error] Exit code 1\nwarning: variable \"rows\" is unused (lib/a.ex:12)"),
    ("assistant", "The unused variable in lib/a.ex breaks the build; I'll prefix it with an underscore."),
    ("assistant", '[tool Edit] {"replace_all": false, "file_path": "/home/u/app/lib/a.ex", '
                  '"old_string": "rows = fetch()", "new_string": "_rows = fetch()"}'),
    ("assistant", "Compiles clean now. Pushed to main as 4f2e1c0."),
)
JSON_BITS = re.compile(r'\{"|"\}|":|\d\}')


@pytest.mark.parametrize("tier,target", [("L1", 120), ("L1", 45), ("L2", 30), ("L3", 40), ("L4", 30)])
def test_a_tool_calls_json_is_no_sentence(tier, target):
    # Summaries of an agent's work were JSON fragments ('[tool Bash] 30000}
    # All green; "description": ...'). A call is its gist, and the agent's prose goes first.
    text = summarize(tier, AGENT, target)
    assert not JSON_BITS.search(text), text
    assert "Pushed to main as 4f2e1c0" in text, text
    # A call that records nothing (a compile run) is no fact of an agent's session.
    assert "[tool Bash]" not in text, text
    if target == 120:
        assert "Edited ~/app/lib/a.ex" in text, text


def test_an_older_summarys_json_is_no_sentence():
    # An L1 line written before calls were gists, summarised again at L2 / L3.
    old = Entry(id="s-000000000001", ts=T0, role="summary", tier="L1", sources=("e-1",),
                text='assistant: [tool Bash] {"command": "git log --oneline -20", "description": '
                     '"Recent commits"} [tool Bash] 30000} All green; "description": "Show recent '
                     'commits"} The rates table now has a GBP row from the ECB feed.')
    for tier, target in (("L2", 20), ("L3", 30)):
        text = summarize(tier, (old,), target)
        assert not JSON_BITS.search(text), text
        assert "GBP row" in text, text


def test_a_persons_sentence_that_quotes_json_or_a_path_is_words_not_json():
    # Any unit with `":`, `\n` or `3}` scored below filler, whoever
    # wrote it, so a user's decision quoting JSON or a Windows path left every tier.
    es = entries(
        ("user", 'Decision: the webhook must answer {"status": "ok"} within 5 seconds, or Stripe retries it.'),
        ("user", 'Set "max_retries": 3 in config/prod.json before Friday\'s release.'),
        ("user", "The API key lives in C:\\new\\keys.txt on the build box."),
        ("assistant", "Okay, sounds good."),
        ("assistant", "I looked at the webhook handler and the retry settings."),
        ("assistant", "The handler currently sleeps for a while before replying."),
        ("user", "thanks"),
        ("assistant", "Let me look at more files in the project now."),
        ("assistant", "There are several modules that could matter here."),
    )
    es = tuple(e.with_(type="user_intent", importance=0.8) if e.role == "user" and e.text != "thanks"
               else e.with_(importance=0.5) for e in es)
    assert summarize("L1", es, 40) == (
        'user: Decision: the webhook must answer {"status": "ok"} within 5 seconds, or Stripe '
        "retries it.\nuser: The API key lives in C:\\new\\keys.txt on the build box.")
    assert summarize("L3", es, 30) == (
        'user: Decision: the webhook must answer {"status": "ok"} within 5 seconds, or Stripe '
        "retries it (2023-05-08)")
    # Tool output that is JSON still comes last.
    out = entries(("tool", '[tool result] {"status": "ok", "rows": 3}'),
                  ("assistant", "The import finished and wrote three rows to the ledger."))
    assert summarize("L1", out, 20) == "assistant: The import finished and wrote three rows to the ledger."


def test_l4_from_l3_one_liners_merges_their_date_ranges():
    l3 = (
        Entry(id="s-000000000001", ts=T0, role="summary", tier="L3", sources=("e-1",),
              text="Caroline: went to the LGBTQ support group (2023-05-08–10)"),
        Entry(id="s-000000000002", ts=T0, role="summary", tier="L3", sources=("e-2",),
              text="Melanie: painted a sunrise with her kids; ran a charity 5K (2023-06-02)"),
    )
    text = summarize("L4", l3, 60)
    assert "(2023-05-08–06-02)" in text and "Caroline" in text and "\n" not in text


def test_l1_summaries_as_input_keep_their_speakers():
    l1 = (Entry(id="s-000000000003", ts=T0, role="summary", tier="L1", sources=("e-1",),
                text="Caroline: [D1:3] I went to a support group in Boston on 2023-05-07.\n"
                     "Melanie: [D1:4] Wow, that's cool!"),)
    text = summarize("L2", l1, 20)
    assert text.startswith("Caroline: [D1:3] I went to a support group in Boston")


@pytest.mark.parametrize("target", [0, 1, 2, 3])
def test_tiny_budget_still_says_a_few_words(target):
    text = summarize("L3", DIALOG, target)
    assert count_tokens(text) <= MIN_TOKENS
    assert len(text.split()) >= 2, text


def test_whitespace_only_group_is_not_empty():
    es = entries(("user", "   "), ("bot", "\n"))
    assert summarize("L1", es, 10)


def test_same_input_same_bytes():
    groups = [Group(f"g{i}", t, DIALOG[i:], 12 + i) for i, t in enumerate(["L1", "L2", "L3"])]
    first, _ = ExtractiveSummarizer().summarize(groups)
    second, _ = get_summarizer({"summarizer": {"backend": "extractive"}}).summarize(groups)
    assert first == second and len(first) == 3


def test_unknown_backend_is_a_clear_error():
    with pytest.raises(PamdError, match="unknown summarizer backend 'gpt9'"):
        get_summarizer({"summarizer": {"backend": "gpt9"}})


WORDS = st.sampled_from(
    "Alice met Bob in Paris on 2024-03-02 and we decided to ship 3 builds ok thanks "
    "Москва решили вчера [D1:2] because the cache failed. really? yes! no".split()
)
TEXTS = st.lists(WORDS, min_size=0, max_size=40).map(" ".join)


@settings(max_examples=150, deadline=None)
@given(
    texts=st.lists(TEXTS, min_size=1, max_size=12),
    tier=st.sampled_from(["L1", "L2", "L3", "L4", "lesson"]),
    target=st.integers(min_value=0, max_value=200),
)
def test_any_group_fits_its_budget_and_is_never_empty(texts, tier, target):
    es = entries(*[("user", t) for t in texts])
    group = Group("g", tier, es, target)
    text = ExtractiveSummarizer().summarize([group])[0][0]
    # A lesson may be none: a failure without its fix teaches nothing ("" is the answer).
    assert text.strip() or tier == "lesson"
    assert count_tokens(text) <= group.budget
    if tier in ("L3", "L4", "lesson"):
        assert "\n" not in text
    assert ExtractiveSummarizer().summarize([group])[0][0] == text


@pytest.mark.parametrize("failure,fix,expected", [
    # The error as it appeared and the fix as it was said, whatever their shape.
    ("Error: KeyError 'rate' when converting GBP invoices — the rates table has no GBP row.",
     "Fixed by loading rates from the ECB feed into the rates table; GBP converts now.",
     "`Error: KeyError 'rate' when converting GBP invoices — the rates table has no GBP row.`: fixed by "
     "loading rates from the ECB feed into the rates table; GBP converts now."),
    ("Incident: the 01:00 run failed with OOMKilled at 512 MB.",
     "The cause was an unbounded in-memory dedupe set; replaced it with a Postgres DISTINCT ON.",
     "`Incident: the 01:00 run failed with OOMKilled at 512 MB.`: the cause was an unbounded in-memory "
     "dedupe set; replaced it with a Postgres DISTINCT ON."),
    ("Ошибка: выгрузка упала при конвертации GBP — нет курса.", "Исправил: добавил курс GBP из ECB.",
     "`Ошибка: выгрузка упала при конвертации GBP — нет курса.`: исправил: добавил курс GBP из ECB."),
])
def test_a_lesson_is_the_failure_and_its_fix_as_written(failure, fix, expected):
    es = entries(("assistant", failure), ("assistant", fix), neuro=("cortisol",))
    assert lesson(es) == expected


@pytest.mark.parametrize("rows", [
    # a failure and its cause, no fix; a failure alone; a fix of nothing; a plan to fix
    [("assistant", "Deploy failed: timeout on step 3 because the cache was cold.")],
    [("assistant", "The nightly export crashed again.")],
    [("assistant", "Fixed by loading rates from the ECB feed.")],
    [("assistant", "The build broke on CI."), ("assistant", "Let me fix the failing build now.")],
    [("assistant", "The build broke on CI."), ("assistant", "I need to fix the CI config.")],
    [("assistant", "The build broke on CI."), ("assistant", "Did that fix it?")],
])
def test_no_lesson_when_the_failure_or_its_fix_is_missing(rows):
    assert lesson(entries(*rows, neuro=("cortisol",))) == ""


def test_no_lesson_takes_its_failure_from_the_hosts_recap_of_the_session():
    """Claude Code's compaction summary retells the session so far ("… (NEW, currently has
    compile error)"): the failures it names happened, and taught, earlier. Its recap is not
    a failure of its own, so a fix after it makes no lesson; a failure said live still does,
    as it was said but without its Markdown."""
    recap = ("assistant", "[compaction summary]\n1. Files:\n   - **`lib/web/export.ex`** (NEW, currently "
                          "has compile error)\n2. The export crashed on GBP invoices.")
    fix = ("assistant", "Fixed by loading rates from the ECB feed into the rates table.")
    assert lesson(entries(recap, fix, neuro=("cortisol",))) == ""
    live = ("assistant", "- The export **crashed** on GBP invoices: KeyError 'rate'.")
    assert lesson(entries(recap, live, fix, neuro=("cortisol",))) == (
        "`The export crashed on GBP invoices: KeyError 'rate'.`: fixed by loading rates from the ECB feed "
        "into the rates table.")


def test_a_lesson_is_never_a_table_row_and_keeps_inline_code_whole():
    # "before | `af81c43` | spotter-fum.4 | Added, check why it failed" was a reflex in DNA.md.
    table = ("assistant", "| `af81c43` | spotter-fum.4 | Added the failing test for the export |")
    fix = ("assistant", "Fixed by re-running the export with the new fixture.")
    assert lesson(entries(table, fix, neuro=("cortisol",))) == ""
    code = entries(("assistant", "The migration `ALTER TABLE t ADD COLUMN x` failed on SQLite."),
                   ("assistant", "Fixed by giving the column a `DEFAULT 0`."), neuro=("cortisol",))
    text = lesson(code)
    assert text.count("`") % 2 == 0 and "DEFAULT 0" in text and "ALTER TABLE" in text, text


def test_a_lesson_takes_the_error_a_tool_printed_not_tool_calls_or_plans():
    # "before {"command, check a tracking" came from a tool call's JSON.
    es = (
        *entries(
            ("assistant", '[tool Bash] {"command": "mix compile --warnings-as-errors 2>&1", '
                          '"description": "Compile, fail on warnings"}'),
            ("tool", "[tool error] Exit code 1\nerror: undefined function foo/0 (lib/a.ex:3)"),
            ("assistant", "Let me check the error in lib/a.ex."),
            ("assistant", "Fixed the call: foo/0 was renamed to fetch/0 in the last commit.\n"
                          '[tool call edit] {"path": "lib/a.ex", "note": "fix the failing call"}'),
            neuro=("cortisol",),
        ),
    )
    assert lesson(es) == ("`error: undefined function foo/0 (lib/a.ex:3)`: fixed the call: "
                          "foo/0 was renamed to fetch/0 in the last commit.")
    # A failure said is a statement: a call's arguments, tool output and a plan are none.
    assert [states_failure(e) for e in es] == [False, False, False, False]


def test_a_python_traceback_gives_its_exception_line():
    es = entries(("tool", "[tool error] Traceback (most recent call last):\n  File \"x.py\", line 3, in <module>\n"
                          "    convert()\nKeyError: 'rate'"),
                 ("assistant", "The fix was adding the GBP row to rates.csv."), neuro=("cortisol",))
    assert lesson(es) == "`KeyError: 'rate'`: the fix was adding the GBP row to rates.csv."


@pytest.mark.parametrize("text,failed", [
    ("Все тесты прошли, ошибок нет.", False), ("Сборка прошла без ошибок.", False),
    ("Теперь ничего не падает.", False), ("Регрессий нет.", False),
    ("No regression found.", False), ("There is no data loss.", False),
    ("All 43 tests pass, 0 failures.", False), ("Build succeeded without errors.", False),
    ("The build doesn't fail anymore.", False), ("I added a regression test.", False),
    ("The error handling is now in place.", False), ("Let me check: does it fail?", False),
    ("Why did the deploy fail?", False), ("Проверю, упадут ли тесты.", False),
    ("Ничего не работает после обновления.", True), ("Тесты падают, ошибок много.", True),
    ("No errors locally, but the deploy failed on CI.", True),
    ("Fatal: not a git repository", True), ("Сервис не запускается.", True),
    ("The migration did not work: the column is missing.", True),
])
def test_a_failure_said_not_to_have_happened_or_asked_about_is_none(text, failed):
    # "ошибок нет", "no data loss", "0 failures", questions.
    assert states_failure(entries(("assistant", text))[0]) is failed


def test_a_calls_gist_shows_no_secret_that_redaction_would_catch():
    # A gist shows a command un-escaped, so a secret that redaction
    # missed in the stored JSON (`API_KEY=\"…\"`) came out readable in a summary.
    key = "Zk9fQ2" + "xLmN8pR7sT"  # split so this file is no secret itself
    es = entries(
        ("user", "Deploy staging on the blue cluster."),
        ("assistant", '[tool Bash] {"command": "cd /srv/app && export API_KEY=\\"' + key
                      + '\\" && ./deploy.sh staging 2>&1 | tail -20", "description": "Deploy staging"}'),
        ("assistant", "Staging is deployed on the blue cluster."),
    )
    for tier, target in (("L1", 200), ("L1", 60), ("L2", 40)):
        text = summarize(tier, es, target)
        assert key not in text and key[:8] not in text, text
    assert "Deploy staging on the blue cluster." in summarize("L1", es, 200)


def test_the_docs_tables_of_summarizer_keys_give_the_templates_defaults():
    # docs/summarizers.md said gemini's thinking_budget was "unset"; the template (the defaults) has 0
    from conftest import REPO

    from pamd.core.config import defaults

    want = defaults()["summarizer"]
    rows = re.findall(r"^\| `([a-z_]+)` \| ([^|]+) \|", (REPO / "docs/summarizers.md").read_text(), re.M)
    checked = 0
    for key, doc in rows:
        doc = doc.strip().strip("`").strip('"')
        if key not in want or doc.startswith("(") or " when " in doc:
            continue
        if doc == "unset":
            assert want[key] == "", key
        else:
            assert doc in (str(want[key]), str(want[key]).lower()), (key, doc, want[key])
        checked += 1
    assert checked >= 8


def test_a_persons_statement_kept_whole_still_keeps_to_the_groups_tokens():
    """A one-line summary keeps the person's statement whole past its characters, never
    past the group's token budget (the example a property run found)."""
    group = Group("g", "L3", entries(("user", "Alice Alice Alice решили")), 0)
    text = ExtractiveSummarizer().summarize([group])[0][0]
    assert text.strip() and count_tokens(text) <= group.budget


def test_a_lesson_from_a_long_edit_says_the_line_it_added():
    """An edit too long to quote whole is named by the line it added, not by its file alone."""
    import json

    old = "import Config\n\nconfig :app, App.Repo,\n  database: \"test.db\",\n  pool_size: 10\n"
    new = old + "\n# the endpoint LiveView tests need\nconfig :app, AppWeb.Endpoint,\n  secret_key_base: \"abc\",\n" \
                "  server: false\n"
    edit = json.dumps({"file_path": "/home/ann/app/config/test.exs", "old_string": old, "new_string": new})
    es = entries(("tool", "[tool error] ** (RuntimeError) no :secret_key_base configuration found in AppWeb.Endpoint."),
                 ("assistant", "The test config needs the endpoint's `secret_key_base`."),
                 ("assistant", f"[tool Edit] {edit}"),
                 ("tool", "[tool result] The file has been updated."),
                 ("tool", "[tool result] 12 tests, 0 failures"), neuro=("cortisol",))
    assert lesson(es).endswith("(app/config/test.exs: added `config :app, AppWeb.Endpoint, secret_key_base: "
                               "\"abc\", server: false`)"), lesson(es)
    # no room for both the reason and the change: the change as it was made stays
    long_error = "[tool error] ** (RuntimeError) no :secret_key_base configuration found in AppWeb.Endpoint " \
                 "while starting the LiveView test case for the project review page (AppWeb.ReviewLiveTest)."
    reason = ("assistant", "The test config is missing `secret_key_base` and the endpoint server config that "
                           "LiveView tests need when they start the endpoint.")
    short = lesson(entries(("tool", long_error), reason, *((e.role, e.text) for e in es[2:]), neuro=("cortisol",)))
    assert short.endswith(": app/config/test.exs: added `config :app, AppWeb.Endpoint, secret_key_base: "
                          "\"abc\", server: false`"), short
