"""The fact contract every LLM backend shares: prompt files, the schema, and the checks
every answer passes before it reaches a tier file."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import pytest

from pamd.consolidate.summarizers import prompts
from pamd.consolidate.summarizers.base import SUMMARY_TIERS, Group
from pamd.core.entry import Entry

T0 = datetime(2024, 5, 1, 9, 0, tzinfo=UTC)


def group(i: int, tier: str = "L1") -> Group:
    es = tuple(Entry(id=f"e-{i}{j}", ts=T0 + timedelta(minutes=j), role="user",
                     text=f"message {j}: Alice moved the launch of Orion to 2024-07-{j + 10}.")
               for j in range(3))
    return Group(f"g{i}", tier, es, 40)


def ans(*items: dict) -> str:
    return json.dumps({"summaries": list(items)})


def test_every_tier_lessons_and_state_have_a_prompt_file_with_examples():
    for name in [*SUMMARY_TIERS, "state"]:
        text = prompts.instructions(name)
        assert "Example messages" in text and '"sources"' in text, name
    for name in SUMMARY_TIERS:  # every tier a group can have is in the shared instructions
        assert f"## tier {name}" in prompts.SYSTEM_OBJECT and f"## tier {name}" in prompts.SYSTEM
    assert prompts.instructions("system").strip() in prompts.SYSTEM_OBJECT


def test_the_request_carries_each_message_id():
    sent = json.loads(prompts.request_payload([group(0)]))
    assert [m["id"] for m in sent["groups"][0]["messages"]] == ["e-00", "e-01", "e-02"]


def test_facts_are_joined_by_line_or_into_one_line():
    facts = [{"text": "Alice moved Orion to 2024-07-10", "sources": ["e-00"]},
             {"text": "Orion launch date is final", "sources": ["e-01", "e-02"]}]
    assert prompts.parse_answer(ans({"i": 0, "facts": facts}), [group(0)]) == [
        "Alice moved Orion to 2024-07-10\nOrion launch date is final"]
    assert prompts.parse_answer(ans({"i": 0, "facts": facts}), [group(0, "L3")]) == [
        "Alice moved Orion to 2024-07-10; Orion launch date is final"]


@pytest.mark.parametrize("facts, why", [
    ([{"text": "x", "sources": ["e-99"]}], "a fact cites 'e-99', not one of its group's messages"),
    ([{"text": "x", "sources": ["e-10"]}], "a fact cites 'e-10', not one of its group's messages"),  # another group's
    ([{"text": "x", "sources": []}], "a fact without sources"),
    ([{"text": "x"}], "a fact without sources"),
    ([{"sources": ["e-00"]}], "a fact without text"),
    ([], "no facts"),
    ([{"text": "Let me check the launch date.", "sources": ["e-00"]},
      {"text": "Perfect!", "sources": ["e-01"]}], "only narration or empty facts"),
])
def test_a_group_breaking_the_contract_is_refused_and_the_others_stand(facts, why):
    got = prompts.parse_answer(ans({"i": 0, "facts": facts}, {"i": 1, "facts": [
        {"text": "fine", "sources": ["e-10"]}]}), [group(0), group(1)])
    assert isinstance(got[0], prompts.Refused) and got[0] == why
    assert got[1] == "fine" and not isinstance(got[1], prompts.Refused)


@pytest.mark.parametrize("answer, why", [
    ("not json", "response is not JSON"),
    (ans({"i": 0, "facts": [{"text": "a", "sources": ["e-00"]}]}), "1 summaries for 2 groups"),
    (ans({"i": 0, "facts": []}, {"i": 0, "facts": []}), "two summaries for group i = 0"),
])
def test_an_answer_broken_as_a_whole_is_refused(answer, why):
    with pytest.raises(ValueError, match=why):
        prompts.parse_answer(answer, [group(0), group(1)])


def test_narration_facts_are_dropped_and_the_rest_kept():
    facts = [{"text": "Let me look at the file.", "sources": ["e-00"]},
             {"text": "Отлично, всё работает", "sources": ["e-01"]},
             {"text": "Orion launches 2024-07-12", "sources": ["e-02"]}]
    assert prompts.parse_answer(ans({"i": 0, "facts": facts}), [group(0)]) == ["Orion launches 2024-07-12"]


def test_an_already_parsed_answer_is_read_like_text():
    data = {"summaries": [{"i": 0, "facts": [{"text": "Orion moved", "sources": ["e-00"]}]}]}
    assert prompts.parse_answer(data, [group(0)]) == ["Orion moved"]
