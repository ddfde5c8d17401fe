"""Anthropic backend through the real anthropic SDK against a stub on 127.0.0.1."""

from __future__ import annotations

import json
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from gemini_stub import AnthropicStub, Reply, messages_answer, messages_error, source  # noqa: E402

from pamd.consolidate.summarizers import ExtractiveSummarizer, Group, get_summarizer, prompts  # noqa: E402
from pamd.consolidate.summarizers.anthropic import AnthropicSummarizer  # noqa: E402
from pamd.core.config import Price  # noqa: E402
from pamd.core.entry import Entry  # noqa: E402
from pamd.errors import PamdError  # noqa: E402

T0 = datetime(2024, 5, 1, 9, 0, tzinfo=UTC)
PRICES = {"claude-haiku-4-5": Price(input=1.00, output=5.00, cache_write=1.25, cache_read=0.10)}
KEY = "sk-ant-stub"


def group(i: int, tier: str = "L1", target: int = 30) -> Group:
    es = tuple(Entry(id=f"e-{i:06d}{j:06d}", ts=T0 + timedelta(minutes=j), role="user",
                     text=f"group {i} message {j}: Alice moved the launch of Orion to 2024-07-{j + 10}.")
               for j in range(3))
    return Group(f"g{i}", tier, es, target)


@pytest.fixture
def stub():
    with AnthropicStub() as s:
        yield s


@pytest.fixture
def sleeps():
    return []


def make(stub, sleeps, **kw) -> AnthropicSummarizer:
    options = dict(api_key=KEY, base_url=stub.base_url, batch_size=2, max_retries=2,
                   retry_base_delay=0.01, prices=PRICES, sleep=sleeps.append)
    options.update(kw)
    return AnthropicSummarizer(**options)


def test_batches_groups_forces_the_fact_tool_and_caches_the_instructions(stub, sleeps):
    groups = [group(i) for i in range(5)]
    texts, usage = make(stub, sleeps).summarize(groups)

    assert [len(r.groups) for r in stub.requests] == [2, 2, 1]
    for r in stub.requests:
        assert r.path == "/v1/messages"
        assert KEY in (r.headers.get("x-api-key") or r.headers["authorization"]) and "anthropic-version" in r.headers
        assert r.body["model"] == "claude-haiku-4-5"
        assert r.body["system"] == [{"type": "text", "text": prompts.SYSTEM_OBJECT,
                                     "cache_control": {"type": "ephemeral"}}]
        assert r.body["tools"][0]["input_schema"] == prompts.SCHEMA
        assert r.body["tool_choice"] == {"type": "tool", "name": "record_facts"}
    assert texts == [f"summary of {g.entries[0].text}" for g in groups]
    assert usage.backend == "anthropic" and usage.requests == 3 and usage.fallbacks == 0
    # every prompt token is counted once; the instructions were written to the cache once
    # and read twice, and the cost prices each kind at its own rate
    assert usage.input_tokens == sum(r.prompt_tokens for r in stub.replies)
    assert usage.output_tokens == sum(r.output_tokens for r in stub.replies)
    sys_tokens = (len(prompts.SYSTEM_OBJECT) + len(json.dumps(stub.requests[0].body["tools"]))) // 4
    plain = usage.input_tokens - 3 * sys_tokens
    expected = (plain * 1.00 + sys_tokens * 1.25 + 2 * sys_tokens * 0.10 + usage.output_tokens * 5.00) / 1e6
    assert usage.cost_usd == pytest.approx(expected)
    assert f"prompt cache {2 * sys_tokens:,} tokens read, {sys_tokens:,} written" in usage.notes[0]
    assert sleeps == []


@pytest.mark.parametrize("reply, reason", [
    (messages_error(429, "rate_limit_error", headers={"retry-after": "7"}), "429 rate_limit_error"),
    (messages_error(500, "api_error"), "500 api_error"),
    (messages_error(529, "overloaded_error", "Overloaded"), "529 overloaded_error"),
])
def test_transient_errors_are_retried_with_backoff(stub, sleeps, reply, reason):
    stub.script += [reply, reply]
    texts, usage = make(stub, sleeps, retry_max_delay=30).summarize([group(0)])
    assert len(stub.requests) == 3 and usage.requests == 3
    assert texts == ["summary of " + group(0).entries[0].text] and usage.fallbacks == 0
    assert sleeps == ([7, 7] if "429" in reason else [0.01, 0.02])  # Retry-After honoured


@pytest.mark.parametrize("status, kind", [(429, "rate_limit_error"), (500, "api_error"),
                                          (529, "overloaded_error")])
def test_an_endpoint_that_stays_down_falls_back_for_every_batch_left(status, kind, sleeps):
    with AnthropicStub(lambda req: messages_error(status, kind)) as stub:
        groups = [group(i) for i in range(5)]
        texts, usage = make(stub, sleeps).summarize(groups)
        assert len(stub.requests) == 3  # one batch's retries, not every batch's
    assert texts == ExtractiveSummarizer().summarize(groups)[0]
    assert usage.fallbacks == 5
    assert usage.notes == [f"anthropic: {status} {kind} after 2 retries; fell back to extractive for 5 groups"]


@pytest.mark.parametrize("reply, why", [
    (messages_answer({"summaries": [{"i": 0, "facts": [{"text": "x", "sources": [source(0)]}]}]}),
     "1 summaries for 2 groups"),
    (Reply(200, {"id": "m", "type": "message", "role": "assistant", "model": "stub",
                 "content": [{"type": "text", "text": "Here are the facts you asked for."}],
                 "stop_reason": "end_turn", "usage": {"input_tokens": 10, "output_tokens": 5}}),
     "no record_facts call, stop_reason end_turn"),
    (messages_answer({"summaries": [{"i": 0, "facts": [{"text": "x"}]}]}, stop_reason="max_tokens"),
     "stop_reason max_tokens"),
    (messages_error(400, "invalid_request_error"), "400 invalid_request_error"),
])
def test_a_malformed_answer_falls_back_for_that_batch_only_without_retry(stub, sleeps, reply, why):
    stub.script.append(reply)
    groups = [group(i) for i in range(4)]
    texts, usage = make(stub, sleeps).summarize(groups)
    assert len(stub.requests) == 2 and sleeps == []
    assert texts[:2] == ExtractiveSummarizer().summarize(groups[:2])[0]
    assert texts[2:] == [f"summary of {g.entries[0].text}" for g in groups[2:]]
    assert usage.fallbacks == 2 and why in usage.notes[0] and "fell back to extractive for 2 groups" in usage.notes[0]


@pytest.mark.parametrize("facts, why", [
    ([{"text": "x", "sources": ["e-invented"]}], "a fact cites 'e-invented', not one of its group's messages"),
    ([{"text": "Let me check.", "sources": [source(0)]}], "only narration"),
])
def test_a_group_breaking_the_fact_contract_falls_back_alone(stub, sleeps, facts, why):
    stub.script.append(messages_answer({"summaries": [{"i": 0, "facts": facts},
                                                      {"i": 1, "facts": [{"text": "y", "sources": [source(1)]}]}]}))
    texts, usage = make(stub, sleeps).summarize([group(0), group(1)])
    assert texts == [ExtractiveSummarizer().summarize([group(0)])[0][0], "y"]
    assert usage.fallbacks == 1 and len(stub.requests) == 1
    assert usage.notes[0].startswith(f"anthropic: facts refused ({why}")
    assert usage.notes[0].endswith("fell back to extractive for 1 group")


def test_a_refused_group_stops_the_run_with_fallback_fail(stub, sleeps):
    stub.script.append(messages_answer({"summaries": [{"i": 0, "facts": [{"text": "x", "sources": ["e-no"]}]}]}))
    with pytest.raises(PamdError, match="facts refused"):
        make(stub, sleeps, fallback="fail").summarize([group(0)])


def test_a_body_that_is_not_json_falls_back(stub, sleeps):
    stub.script.append(Reply(200, "<html>oops</html>"))
    texts, usage = make(stub, sleeps).summarize([group(0)])
    assert usage.fallbacks == 1 and "malformed" in usage.notes[0]


@pytest.mark.parametrize("status, kind, words", [(401, "authentication_error", "rejected the API key"),
                                                 (403, "permission_error", "rejected the API key"),
                                                 (404, "not_found_error", "not found")])
def test_a_misconfiguration_stops_the_run(stub, sleeps, status, kind, words):
    stub.script.append(messages_error(status, kind))
    with pytest.raises(PamdError, match=words):
        make(stub, sleeps).summarize([group(0)])


def test_fallback_fail_stops_the_run(stub, sleeps):
    stub.script += [messages_error(529, "overloaded_error")] * 3
    with pytest.raises(PamdError, match="anthropic summarizer failed: 529 overloaded_error after 2 retries"):
        make(stub, sleeps, fallback="fail").summarize([group(0)])


def test_config_key_model_and_base_url(stub, monkeypatch):
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    config = {"summarizer": {"backend": "anthropic", "model": "claude-sonnet-4-5"}}
    with pytest.raises(PamdError, match="ANTHROPIC_API_KEY is not set"):
        get_summarizer(config)
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    monkeypatch.setenv("PAMD_ANTHROPIC_BASE_URL", stub.base_url)
    s = get_summarizer(config)
    assert isinstance(s, AnthropicSummarizer) and s.model == "claude-sonnet-4-5"
    s.summarize([group(0)])
    assert stub.requests[0].body["model"] == "claude-sonnet-4-5"
    assert get_summarizer({"summarizer": {"backend": "anthropic"}}).model == "claude-haiku-4-5"


def test_the_request_carries_entry_ids_and_tier_styles(stub, sleeps):
    make(stub, sleeps).summarize([group(0, "L3")])
    sent = json.loads(stub.requests[0].body["messages"][0]["content"])["groups"][0]
    assert sent["tier"] == "L3" and [m["id"] for m in sent["messages"]] == [e.id for e in group(0).entries]
