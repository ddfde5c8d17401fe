"""neurotag with the real built-in rules: tags, types, importance, user rules, bad rules."""

from __future__ import annotations

import re
from importlib import resources
from pathlib import Path

import pytest

from pamd.core.config import defaults
from pamd.core.entry import NEURO, TYPES
from pamd.encode.neurotag import (
    Tagger,
    Tagging,
    builtin_rules,
    load_rules_text,
    normalize_role,
)
from pamd.errors import PamdError


@pytest.fixture(scope="module")
def tagger() -> Tagger:
    return Tagger.from_config(defaults())


# ---------------------------------------------------------------- tags, EN and RU

TAG_CASES = [
    ("dopamine", "Deployed v2 to production, first paying customer signed up!"),
    ("dopamine", "We shipped the release, big milestone"),
    ("dopamine", "Задеплоил новую версию, выручка растёт"),
    ("dopamine", "Наконец-то работает, получилось!"),
    ("norepinephrine", "URGENT: outage in prod, need a hotfix ASAP"),
    ("norepinephrine", "The deadline is tomorrow, this is time-sensitive"),
    ("norepinephrine", "Срочно! Прод лежит, это инцидент"),
    ("norepinephrine", "Дедлайн к завтра, горит"),
    ("cortisol", "Traceback (most recent call last):\n  File 'x.py'\nValueError: bad"),
    ("cortisol", "The migration failed and we lost all the data"),
    ("cortisol", "mix phx.server doesn't seem to start"),
    ("cortisol", "Ошибка при сборке, всё сломалось"),
    ("cortisol", "Сервер упал, потеря данных"),
    ("acetylcholine", "The key insight is that the architecture needs a queue"),
    ("acetylcholine", "Lesson learned: the root cause was a race"),
    ("acetylcholine", "Мы решили, архитектура будет на событиях; главное — простота"),
    ("acetylcholine", "Оказалось, причина в кэше; вывод: не кэшировать сессии"),
    ("oxytocin", "Thanks for trusting me with this, our relationship matters"),
    ("oxytocin", "I feel this is about philosophy more than code"),
    ("oxytocin", "Спасибо за доверие, ценю наши отношения"),
    ("oxytocin", "Это вопрос философии и ценностей"),
    ("serotonin", "Great job, thanks!"),
    ("serotonin", "Done, all good 👍"),
    ("serotonin", "Спасибо, отлично получилось"),
    ("serotonin", "Готово, молодец"),
]


@pytest.mark.parametrize(("tag", "text"), TAG_CASES)
def test_tag_found(tagger: Tagger, tag: str, text: str) -> None:
    assert tag in tagger.tag(text).neuro


NEUTRAL = [
    "Let me read the router and the dashboard live view.",
    "Now add the route and the Review button in the dashboard.",
    "Посмотрим на структуру каталогов проекта.",
    "The function returns a list of entries sorted by time.",
]


@pytest.mark.parametrize("text", NEUTRAL)
def test_neutral_text_has_no_tags(tagger: Tagger, text: str) -> None:
    assert tagger.tag(text, "assistant").neuro == ()


def test_the_brain_protocol_examples_tag_as_its_table_says(tagger: Tagger) -> None:
    """protocols/hippocampus.md is what an agent reads about tags: its examples must be true."""
    text = resources.files("pamd.templates").joinpath("brain/protocols/hippocampus.md").read_text("utf-8")
    rows = [[c.strip() for c in ln.strip("|").split("|")] for ln in text.splitlines()
            if ln.startswith("| ") and ln.split("|")[1].strip() in NEURO]
    assert {r[0] for r in rows} == set(NEURO)
    for tag, _, examples in rows:
        for example in examples.split(", "):
            assert tag in tagger.tag(example.strip("`"), "user").neuro, (tag, example)


def test_zero_failures_is_not_cortisol(tagger: Tagger) -> None:
    assert "cortisol" not in tagger.tag("19 tests, 0 failures", "tool").neuro
    assert "cortisol" in tagger.tag("19 tests, 2 failures", "tool").neuro


def test_tags_come_in_canonical_order(tagger: Tagger) -> None:
    t = tagger.tag("Thanks! Deploy failed, urgent, the key insight: we trust each other")
    assert list(t.neuro) == [n for n in NEURO if n in t.neuro]
    assert len(t.neuro) >= 5


# ---------------------------------------------------------------- types

TYPE_CASES = [
    ("decision", "user", "We decided to go with Postgres for the index"),
    ("decision", "assistant", "Let's go with SQLite; decision: no server"),
    ("decision", "user", "We’ve decided: Redis."),
    ("decision", "user", "Решили: выбираем Postgres"),
    ("decision", "user", "ok, let's go with Redis"),
    ("decision", "assistant", "Договорились, будем использовать очередь"),
    ("user_intent", "user", "Can you fix the login page please"),
    ("user_intent", "user", "I want the summaries to be shorter"),
    ("user_intent", "user", "start phoenix in background"),
    ("user_intent", "user", "did you push?"),
    ("user_intent", "user", "Хочу, чтобы ты запомнил мой стиль"),
    ("user_intent", "user", "Сделай бэкап базы"),
    ("user_intent", "user", "Нужно починить тесты"),
    ("user_intent", "Alice", "please book the flight for Friday"),
    ("user_intent", "user", "Traceback (most recent call last):\nKeyError: x\ncan you fix this"),
    ("tool_result", "tool", "lib/a.ex\nlib/b.ex\nlib/c.ex"),
    ("tool_result", "user", "<system-reminder>\nPostToolUse hook: [CREDO] ok</system-reminder>"),
    ("tool_result", "user", "<command-name>/mcp</command-name>\n  <command-message>mcp</command-message>\n"
                            "  <command-args></command-args>"),
    ("tool_result", "user", "<command-name>/clear</command-name>"),
    # a slash command with arguments is what the user typed
    ("user_intent", "user", "<command-message>beads:create</command-message>\n<command-name>/beads:create"
                            "</command-name>\n<command-args>websearch how to set up credo</command-args>"),
    ("decision", "user", "<command-name>/note</command-name>\n<command-args>we decided to go with Postgres"
                         "</command-args>"),
    # the same commands typed while the agent worked: the queued message is the bare command line
    ("tool_result", "user", "/mcp"),
    ("tool_result", "user", "/clear"),
    ("user_intent", "user", "/model opus"),
    ("user_intent", "user", "/handgemacht:create-beads the parser rewrite"),
    ("decision", "user", "/note we decided to go with Postgres"),
    ("context", "user", "/usr/local/bin holds the old binary."),
    ("tool_result", "assistant", 'Traceback (most recent call last):\n  File "a.py", line 1'),
    ("tool_result", "user", '{"status": "ok", "items": [1, 2, 3]}'),
    ("ephemeral", "user", "ok"),
    ("ephemeral", "user", "Thanks!"),
    ("ephemeral", "user", "sure, continue"),
    ("ephemeral", "user", "👍"),
    ("ephemeral", "user", "   "),
    ("ephemeral", "user", "ок, спасибо"),
    ("ephemeral", "user", "Продолжай"),
    ("ephemeral", "user", "[Request interrupted by user for tool use]"),
    ("ephemeral", "tool", "The file /a/b.ex has been updated successfully."),
    ("ephemeral", "tool", ""),
    ("context", "assistant", "The renderer groups rows by tool call and keeps all lines."),
    ("context", "user", "The meeting with the design team went long today."),
    ("context", "assistant", "Структура проекта: три модуля и тесты."),
]


@pytest.mark.parametrize(("typ", "role", "text"), TYPE_CASES)
def test_type(tagger: Tagger, typ: str, role: str, text: str) -> None:
    assert tagger.tag(text, role).type == typ


def test_requests_count_only_from_users(tagger: Tagger) -> None:
    assert tagger.tag("I need to add the helper", "user").type == "user_intent"
    assert tagger.tag("I need to add the helper", "assistant").type == "context"


def test_decisions_are_not_read_out_of_tool_output(tagger: Tagger) -> None:
    assert tagger.tag("# We decided to use ETS here\ndefmodule A do", "tool").type == "tool_result"


def test_a_tool_calls_arguments_are_no_evidence(tagger: Tagger) -> None:
    # How ingest writes an agent's tool calls: the words are arguments
    # the agent passed, not a failure or a win.
    compile_ = '[tool Bash] {"command": "mix compile --warnings-as-errors 2>&1", "timeout": 30000}'
    assert tagger.tag(compile_, "assistant") == Tagging((), 0.5, "context")
    deploy = '[tool Bash] {"command": "fly deploy", "description": "Deploy; it failed before"}'
    assert tagger.tag(deploy, "assistant").neuro == ()
    # The words around an OpenAI message's calls are still read; the calls are not.
    said = "The build failed on CI.\n[tool call run] {\"cmd\": \"git push\", \"note\": \"shipped\"}"
    assert tagger.tag(said, "assistant").neuro == ("cortisol",)
    # Only the agent's calls are arguments: the same text from a person, or a tool's
    # output ([tool error]), is read whole.
    assert "cortisol" in tagger.tag(compile_, "user").neuro
    assert "cortisol" in tagger.tag("[tool error] Exit code 1\nerror: build failed", "tool").neuro


@pytest.mark.parametrize(
    ("role", "expected"),
    [("user", "user"), ("Assistant", "assistant"), ("tool_result", "tool"), ("function", "tool"),
     ("human", "user"), ("Caroline", "user"), ("", "user"), ("system", "system")],
)
def test_normalize_role(role: str, expected: str) -> None:
    assert normalize_role(role) == expected


# ---------------------------------------------------------------- importance


def test_importance_starts_from_the_type_table() -> None:
    config = defaults()
    config = {**config, "hippocampus": {"types": {
        t: {"importance": v} for t, v in
        {"decision": 0.6, "user_intent": 0.8, "context": 0.5, "tool_result": 0.3,
         "ephemeral": 0.1}.items()}}}
    low = Tagger.from_config(config)
    text = "We decided to keep the old schema for now, nothing else changes."
    assert low.tag(text).importance < Tagger.from_config(defaults()).tag(text).importance


def test_importance_ordering(tagger: Tagger) -> None:
    decision = tagger.tag("We decided to go with Postgres for the index").importance
    intent = tagger.tag("Can you fix the login page please").importance
    context = tagger.tag("The renderer groups rows by tool call.", "assistant").importance
    listing = tagger.tag("lib/a.ex\nlib/b.ex\nlib/c.ex", "tool").importance
    ack = tagger.tag("ok thanks").importance
    assert decision > intent > context > listing
    assert context > ack
    assert ack < 0.15 and listing < 0.15  # trash, by the default trash_below


def test_cortisol_and_urgency_raise_importance(tagger: Tagger) -> None:
    calm = tagger.tag("The deploy script copies files to the server.", "assistant").importance
    alarm = tagger.tag("URGENT: the deploy failed and the server is down", "assistant").importance
    assert alarm >= calm + 0.2


def test_failing_tool_output_outranks_routine_output(tagger: Tagger) -> None:
    routine = tagger.tag("Compiling 3 files (.ex)\nGenerated app", "tool")
    failing = tagger.tag("** (CompileError) lib/a.ex:3: undefined function foo/0", "tool")
    assert failing.importance > routine.importance
    assert routine.importance == 0.1  # tool_result 0.30, no tag: -0.20 (trash)
    assert failing.importance >= 0.3


def test_one_weak_word_in_tool_output_gives_no_tag(tagger: Tagger) -> None:
    # A file read that says "error" or "bug" in passing is a quiet tool result (trash);
    # in prose the same weak word tags, and tool output with a strong rule still does.
    read = '  1\u2192defmodule Foo do\n  2\u2192  # handle a bug in the parser\n  3\u2192  {:error, reason} -> reason'
    quiet = tagger.tag(read, "tool")
    assert quiet.neuro == () and quiet.importance == 0.1  # tool_result 0.30, no tag: -0.20 (trash)
    assert tagger.tag("there was an error", "user").neuro == ("cortisol",)
    assert tagger.tag("[tool result] 3 tests failed", "tool").neuro == ("cortisol",)
    # pamd's own mark of a failed (or refused) call is a failure in any language
    refused = "[tool error] The user doesn't want to proceed with this tool use."
    assert tagger.tag(refused, "tool").neuro == ("cortisol",)
    ru_only = Tagger.from_config({**defaults(), "neurotag": {"rules_file": "", "languages": ["ru"]}})
    assert ru_only.tag(refused, "tool").neuro == ("cortisol",)


def test_long_substantive_message_gains(tagger: Tagger) -> None:
    short = tagger.tag("The index is rebuilt from the tree.", "assistant").importance
    long = tagger.tag("The index is rebuilt from the tree. " * 10, "assistant").importance
    assert long == pytest.approx(short + 0.05)


def test_tagging_is_a_frozen_value(tagger: Tagger) -> None:
    t = tagger.tag("ok")
    assert t == Tagging((), 0.05, "ephemeral")
    with pytest.raises(AttributeError):
        t.importance = 1.0  # type: ignore[misc]


def test_huge_message_is_scanned_at_head_and_tail(tagger: Tagger) -> None:
    middle = "x = 1\n" * 50_000
    assert "cortisol" in tagger.tag(middle + "Traceback (most recent call last):", "tool").neuro
    assert "cortisol" not in tagger.tag(middle[:100_000] + "fatal" + middle, "tool").neuro


# ---------------------------------------------------------------- user rules


def _brain_with_rules(tmp_path: Path, text: str) -> dict:
    (tmp_path / "rules.toml").write_text(text, "utf-8")
    return {**defaults(), "neurotag": {"rules_file": "rules.toml", "trash_below": 0.15}}


def test_user_rule_adds_a_tag(tmp_path: Path) -> None:
    config = _brain_with_rules(tmp_path, """
[[rules]]
name = "dopamine.kpi"
tag = "dopamine"
weight = 1.0
lang = ["en"]
patterns = ['\\bnps (?:went|is) up\\b', '\\bkpi (?:met|hit)\\b']
""")
    tagger = Tagger.from_config(config, brain_root=tmp_path)
    assert "dopamine" in tagger.tag("Good news: NPS went up this quarter").neuro
    assert "dopamine" not in Tagger.from_config(defaults()).tag("NPS went up").neuro


def test_user_rule_replaces_and_disables_builtins(tmp_path: Path) -> None:
    config = _brain_with_rules(tmp_path, """
[[rules]]
name = "serotonin.mild.en"
tag = "serotonin"
weight = 0
patterns = []

[[rules]]
name = "type.ephemeral.ack"
type = "ephemeral"
weight = 3.0
patterns = ['\\A\\W*(?:ok|roger)\\W*\\Z']

[boost]
cortisol = 0.0

[scoring]
neuro_cap = 0.1
""")
    tagger = Tagger.from_config(config, brain_root=tmp_path)
    assert tagger.tag("a nice view", "assistant").neuro == ()
    assert tagger.tag("roger").type == "ephemeral"
    assert tagger.tag("thanks").type != "ephemeral"  # the built-in ack rule was replaced
    plain = tagger.tag("the build log", "assistant").importance
    assert tagger.tag("the build failed", "assistant").importance == plain


def test_user_type_rule_for_tool_role(tmp_path: Path) -> None:
    config = _brain_with_rules(tmp_path, """
[[rules]]
name = "my.noise"
type = "ephemeral"
weight = 5
roles = ["tool"]
patterns = ['\\Aexported \\d+ issues']
""")
    tagger = Tagger.from_config(config, brain_root=tmp_path)
    assert tagger.tag("Exported 0 issues to JSONL", "tool").type == "ephemeral"
    assert tagger.tag("Exported 0 issues to JSONL", "user").type != "ephemeral"


def test_languages_filter() -> None:
    config = {**defaults(), "neurotag": {"rules_file": "", "languages": ["en"]}}
    en_only = Tagger.from_config(config)
    assert en_only.tag("Ошибка при сборке").neuro == ()
    assert "cortisol" in en_only.tag("the build failed").neuro


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[[rules]\nname=", "not valid TOML"),
        ('[[rules]]\nname = "x"\ntag = "dopamine"\npatterns = ["(a"]', "rule 'x': bad regex"),
        ('[[rules]]\nname = "x"\ntag = "joy"\npatterns = ["a"]', "unknown tag 'joy'"),
        ('[[rules]]\nname = "x"\ntype = "memo"\npatterns = ["a"]', "unknown type 'memo'"),
        ('[[rules]]\nname = "x"\ntag = "dopamine"\ntype = "decision"', "exactly one of"),
        ('[[rules]]\ntag = "dopamine"', "needs a `name`"),
        ('[[rules]]\nname = "x"\ntag = "dopamine"\nweight = -1', "`weight`"),
        ('[[rules]]\nname = "x"\ntag = "dopamine"\npatterns = "a*"', "matches the empty string"),
        ('[[rules]]\nname = "x"\ntag = "dopamine"\npatterns = ["(a)\\\\1"]', "backreferences"),
        ('[[rules]]\nname = "x"\ntag = "dopamine"\npatterns = [1]', "list of strings"),
        ('[[rules]]\nname = "x"\ntag = "dopamine"\nroles = ["bot"]', "unknown role"),
        ('[[rules]]\nname = "x"\ntag = "dopamine"\nregex = ["a"]', "unknown key(s) regex"),
        ('[scoring]\nneuro_cap = "high"', "neuro_cap must be a number"),
        ('[boost]\njoy = 0.1', "unknown key 'joy'"),
    ],
)
def test_bad_rules_file_names_file_and_problem(tmp_path: Path, text: str, message: str) -> None:
    config = _brain_with_rules(tmp_path, text)
    with pytest.raises(PamdError) as err:
        Tagger.from_config(config, brain_root=tmp_path)
    assert "rules.toml" in str(err.value)
    assert message in str(err.value)


def test_missing_rules_file(tmp_path: Path) -> None:
    config = {**defaults(), "neurotag": {"rules_file": "nope.toml"}}
    with pytest.raises(PamdError, match="nope.toml"):
        Tagger.from_config(config, brain_root=tmp_path)


def test_builtin_rules_are_valid_and_cover_every_tag_and_type() -> None:
    rules = builtin_rules().rules
    kinds = {r.kind for r in rules}
    assert set(NEURO) <= kinds
    assert set(TYPES) - {"context"} <= kinds
    assert {"en", "ru"} <= {lang for r in rules for lang in r.lang}
    assert len({r.name for r in rules}) == len(rules)


def test_pattern_without_literal_head_still_matches() -> None:
    # `\w*ing\b` has no literal to look for: it is searched in full.
    rules = load_rules_text(
        '[[rules]]\nname = "x"\ntag = "dopamine"\npatterns = [\'\\w+celebrat\\w*\']', "t.toml")
    assert Tagger(rules).tag("we are overcelebrating").neuro == ("dopamine",)


def test_uppercase_patterns_match(tmp_path: Path) -> None:
    rules = load_rules_text(
        '[[rules]]\nname = "x"\ntag = "norepinephrine"\npatterns = [\'\\bSEV0\\b\']', "t.toml")
    assert Tagger(rules).tag("this is a sev0 now").neuro == ("norepinephrine",)


def test_matches_agree_with_a_plain_search(tagger: Tagger) -> None:
    """The literal gate must not change what matches: compare with searching every pattern."""
    texts = [t for _, t in TAG_CASES] + [t for _, _, t in TYPE_CASES] + NEUTRAL
    for role in ("user", "assistant", "tool"):
        for text in texts:
            assert tagger.matches(text, role) == naive_matches(tagger, text, role), (role, text)


def naive_matches(tagger: Tagger, text: str, role: str) -> set[int]:
    """What the rules match when every pattern is searched over the whole (short) text."""
    low = text.lower()
    role = normalize_role(role)
    hit = set()
    for i, rule in enumerate(tagger.rules):
        if rule.weight <= 0 or role not in rule.roles:
            continue
        if not rule.patterns or any(
                re.search(p, low, re.IGNORECASE | re.MULTILINE) for p in rule.patterns):
            hit.add(i)
    return hit
