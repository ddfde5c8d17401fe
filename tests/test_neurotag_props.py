"""Properties of neurotag over arbitrary input."""

from __future__ import annotations

import re

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pamd.core.config import defaults
from pamd.core.entry import NEURO, TYPES
from pamd.encode.neurotag import Tagger, normalize_role

TAGGER = Tagger.from_config(defaults())

# Words and fragments the rules look for, so random texts hit rules often.
VOCAB = [
    "we", "decided", "we've", "we’ve", "decision:", "let's", "go", "with", "error", "error:",
    "errors", "no", "0", "failures", "fail", "failed", "traceback", "(most", "recent", "call",
    "last)", "deployed", "shipped", "урок", "ошибка", "сломал", "решили", "выбираем", "не",
    "работает", "спасибо", "ok", "ок", "thanks", "👍", "✅", "urgent", "asap", "p0", "sev-1",
    "the", "key", "is", "insight", "trust", "i", "want", "please", "can", "you", "?", "\n",
    "  ", ".", ",", "!", ":", "'", "doesn't", "isn’t", "work", "at", "Foo.bar(Baz.java:12)",
    "<system-reminder>", "[request", "interrupted", "by", "user]", "exit", "code", "2", "{",
    '"a":', "ValueError:", "(CompileError)", "cve-2024-1234", "İ", "ß", "K", "ǅ", "all",
    "tests", "pass", "срочно", "прод", "упал", "хочу", "сделай", "done", "great", "job",
]

texts = st.lists(st.sampled_from(VOCAB), max_size=30).map(" ".join) | st.lists(
    st.sampled_from(VOCAB), max_size=30).map("".join)
roles = st.sampled_from(["user", "assistant", "system", "tool", "Caroline", "", "TOOL"])


def naive_matches(tagger: Tagger, text: str, role: str) -> set[int]:
    """What the rules match when every pattern is searched over the whole (short) text."""
    low, role = text.lower(), normalize_role(role)
    return {
        i for i, rule in enumerate(tagger.rules)
        if rule.weight > 0 and role in rule.roles and (not rule.patterns or any(
            re.search(p, low, re.IGNORECASE | re.MULTILINE) for p in rule.patterns))
    }


def check(t: object) -> None:
    assert t.type in TYPES
    assert 0.0 <= t.importance <= 1.0
    assert round(t.importance, 2) == t.importance
    assert list(t.neuro) == [n for n in NEURO if n in t.neuro]


@given(st.text(), roles)
def test_tag_never_fails_on_any_text(text: str, role: str) -> None:
    check(TAGGER.tag(text, role))


@given(texts, roles)
@settings(max_examples=400)
def test_gate_agrees_with_plain_search(text: str, role: str) -> None:
    assert TAGGER.matches(text, role) == naive_matches(TAGGER, text, role)


@given(st.text(min_size=1, max_size=50), st.integers(1, 40_000), roles)
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_huge_texts(chunk: str, times: int, role: str) -> None:
    check(TAGGER.tag(chunk * times, role))


def test_megabyte_of_one_character() -> None:
    for text in ("a" * 10_000_000, "\n" * 1_000_000, "we " * 300_000, "👍" * 500_000):
        check(TAGGER.tag(text))
