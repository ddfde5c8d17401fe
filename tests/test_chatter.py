from __future__ import annotations

import pytest

from pamd.core import chatter

NARRATION = [
    "Let me check the registry.",
    "Perfect! Now let me commit.",
    "Good.",
    "Great, now I'll run the tests.",
    "Now update hooks.json and run the suite:",
    "Looking at the router for patterns.",
    "Now I have all the patterns. Let me check `project.ex` next.",
    "Let me run the tests again to see the error.",
    "Let me check the router, the dashboard and the tests.",
    "Давайте посмотрим на конфиг.",
    "Отлично! Теперь проверю тесты.",
    "Сейчас посмотрю.",
    "Посмотрю, почему тесты падают.",
]
STATEMENTS = [
    "Let me fix this: the TTL was 90 s because the sweep runs every 15 s.",
    "Looking at the error, the issue is that current_span_ctx() returns the record itself.",
    "Good — Tmux errors are safe, so LiveView tests should work.",
    "I have updated the config to use port 4000.",
    "All 49 tests pass. Now let me run credo.",
    "Попробую ещё раз, сборка упала.",
    "Сейчас тесты падают из-за таймаута.",
    "The endpoint isn't configured for the test env.",
    "Let me check the file.\n\n- a.ex: 3 warnings\n- b.ex: clean",
]


@pytest.mark.parametrize("text", NARRATION)
def test_narration_only(text):
    assert chatter.narration_only(text)
    assert chatter.without_narration(text) == ""


@pytest.mark.parametrize("text", STATEMENTS)
def test_a_statement_is_not_chatter(text):
    assert not chatter.narration_only(text)
    assert chatter.without_narration(text)


def test_strip_keeps_what_the_narration_led_into():
    said = "Perfect! Let me fix this: the TTL was 90 s.\n- a\n- b"
    assert chatter.without_narration(said) == "the TTL was 90 s.\n- a\n- b"
