"""Gemini backend through the real google-genai client against a stub on 127.0.0.1."""

from __future__ import annotations

import json
import math
import socket
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from gemini_stub import GeminiStub, answer, error, numbered  # noqa: E402

from pamd.consolidate.summarizers import (  # noqa: E402
    ExtractiveSummarizer,
    Group,
    get_summarizer,
    lesson,
)
from pamd.consolidate.summarizers.gemini import GeminiSummarizer  # noqa: E402
from pamd.core.config import Price, as_dict  # noqa: E402
from pamd.core.console import human_log  # noqa: E402
from pamd.core.entry import Entry, count_tokens  # noqa: E402
from pamd.errors import PamdError  # noqa: E402

T0 = datetime(2024, 5, 1, 9, 0, tzinfo=UTC)
PRICES = {"gemini-2.5-flash": Price(input=0.30, output=2.50)}
KEY = "stub-key-123"


def item(i: int, text: str) -> dict:
    """One group's answer in the fact contract, citing the group's first message."""
    return numbered([""] * i + [text])[i]


def group(i: int, tier: str = "L1", target: int = 30) -> Group:
    es = tuple(
        Entry(id=f"e-{i:06d}{j:06d}", ts=T0 + timedelta(minutes=j), role="user",
              text=f"group {i} message {j}: Alice moved the launch of Orion to 2024-07-{j + 10}.")
        for j in range(3)
    )
    return Group(f"g{i}", tier, es, target)


@pytest.fixture
def stub():
    with GeminiStub() as s:
        yield s


@pytest.fixture
def sleeps():
    return []


def make(stub, sleeps, **kw) -> GeminiSummarizer:
    options = dict(api_key=KEY, base_url=stub.base_url, batch_size=2, max_retries=2,
                   retry_base_delay=0.01, prices=PRICES, sleep=sleeps.append)
    options.update(kw)
    return GeminiSummarizer(**options)


def test_batches_groups_and_sends_key_model_and_json_schema(stub, sleeps):
    groups = [group(i) for i in range(5)]
    texts, usage = make(stub, sleeps, batch_size=2).summarize(groups)

    assert len(stub.requests) == math.ceil(5 / 2)
    assert [len(r.groups) for r in stub.requests] == [2, 2, 1]
    for r in stub.requests:
        assert r.path == "/v1beta/models/gemini-2.5-flash:generateContent"
        assert r.headers["x-goog-api-key"] == KEY
        config = r.body["generationConfig"]
        assert config["responseMimeType"] == "application/json"
        assert config["responseSchema"]["type"] == "ARRAY"
        assert config["responseSchema"]["items"]["required"] == ["i", "facts"]
        assert "JSON array" in r.body["systemInstruction"]["parts"][0]["text"]
    sent = [g for r in stub.requests for g in r.groups]
    assert [g["messages"][0]["text"] for g in sent] == [g.entries[0].text for g in groups]
    assert all(g["max_chars"] == 30 * 4 and g["tier"] == "L1" for g in sent)
    # One text per group, in order (the stub names each group's first message).
    assert texts == [f"summary of {g.entries[0].text}"[:120] for g in groups]
    assert usage.backend == "gemini" and usage.model == "gemini-2.5-flash"
    assert usage.requests == 3 and usage.fallbacks == 0 and usage.notes == []


def test_usage_and_cost_come_from_usage_metadata(stub, sleeps):
    _, usage = make(stub, sleeps).summarize([group(i) for i in range(3)])
    assert len(stub.replies) == 2
    prompt = sum(r.prompt_tokens for r in stub.replies)
    output = sum(r.output_tokens for r in stub.replies)
    assert prompt > 0 and output > 0
    assert (usage.input_tokens, usage.output_tokens) == (prompt, output)
    assert usage.cost_usd == pytest.approx(prompt * 0.30e-6 + output * 2.50e-6)


def test_thinking_tokens_are_billed_as_output(stub, sleeps):
    reply = answer(["a short summary"], prompt_tokens=1000, output_tokens=10)
    reply.body["usageMetadata"]["thoughtsTokenCount"] = 90
    stub.script.append(reply)
    _, usage = make(stub, sleeps).summarize([group(0)])
    assert (usage.input_tokens, usage.output_tokens) == (1000, 100)
    assert usage.cost_usd == pytest.approx(1000 * 0.30e-6 + 100 * 2.50e-6)


def test_unknown_price_costs_zero_and_says_so(stub, sleeps):
    _, usage = make(stub, sleeps, model="gemini-9-ultra", prices=PRICES).summarize([group(0)])
    assert stub.requests[0].path == "/v1beta/models/gemini-9-ultra:generateContent"
    assert usage.cost_usd == 0 and any("no price for gemini-9-ultra" in n for n in usage.notes)


def test_429_and_500_are_retried_with_growing_backoff(stub, sleeps):
    stub.script += [error(429, "RESOURCE_EXHAUSTED"), error(503, "UNAVAILABLE")]
    texts, usage = make(stub, sleeps, max_retries=3).summarize([group(0)])
    assert len(stub.requests) == 3 and usage.requests == 3
    assert sleeps == [0.01, 0.02]
    assert texts[0].startswith("summary of group 0") and usage.fallbacks == 0


def test_retry_info_delay_is_honoured_up_to_the_cap(stub, sleeps):
    info = [{"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "7s"}]
    stub.script.append(error(429, "RESOURCE_EXHAUSTED", details=info))
    make(stub, sleeps, retry_max_delay=5.0).summarize([group(0)])
    assert sleeps == [5.0]


def test_persistent_errors_fall_back_for_the_rest_of_the_run_and_say_so(stub, sleeps, capsys, monkeypatch):
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True)  # a person at a terminal
    groups = [group(i) for i in range(5)]
    # First batch: 500 on every attempt (1 + 2 retries). The endpoint is down for this
    # run: the batches left fall back at once, not after their own retries each.
    stub.script += [error(500, "INTERNAL")] * 3
    with human_log():  # as every pamd command shows the library's lines
        texts, usage = make(stub, sleeps, batch_size=2, max_retries=2).summarize(groups)
    assert len(stub.requests) == 3 and usage.requests == 3 and sleeps == [0.01, 0.02]
    assert texts == ExtractiveSummarizer().summarize(groups)[0]
    assert usage.fallbacks == 5
    assert usage.notes == [
        "gemini: 500 INTERNAL after 2 retries; fell back to extractive for 5 groups"
    ]
    assert capsys.readouterr().err.splitlines() == [
        "pamd: gemini: 500 INTERNAL, retrying in 0.01 s", "pamd: gemini: 500 INTERNAL, retrying in 0.02 s"]


def test_a_retry_is_said_only_to_a_terminal_not_to_cron(stub, sleeps, capsys):
    """A 503 the retry cured printed a line on stderr, and cron mails stderr; only
    a person at a terminal is told why the run sits there (a fallback is said everywhere)."""
    stub.script += [error(503, "UNAVAILABLE"), answer(["fine"])]
    with human_log():
        texts, usage = make(stub, sleeps).summarize([group(0)])
    assert texts == ["fine"] and usage.fallbacks == 0 and sleeps
    assert capsys.readouterr().err == ""


@pytest.mark.parametrize(
    "reply,why",
    [
        (answer("this is not json"), "not JSON"),
        (answer(["only one"]), "1 summaries for 2 groups"),
        (answer('{"a": 1}'), "not a JSON array"),
        (answer([]), "0 summaries"),
        # matched by position alone, a reordered answer would sit under the wrong entries
        (answer('["first", "second"]'), "without its group's index"),
        (answer(json.dumps([item(1, "b"), item(1, "b")])), "two summaries for group i = 1"),
        (answer(json.dumps([item(0, "a"), item(2, "c")])), "for no group (i = 2)"),
        (answer(json.dumps([item(0, "a"), {"facts": item(1, "b")["facts"]}])), "without its group's index"),
    ],
)
def test_malformed_answers_fall_back_for_that_batch_only(stub, sleeps, reply, why):
    stub.script.append(reply)
    groups = [group(i) for i in range(3)]
    texts, usage = make(stub, sleeps, batch_size=2).summarize(groups)
    assert len(stub.requests) == 2  # malformed is not retried
    assert texts[:2] == ExtractiveSummarizer().summarize(groups[:2])[0]
    assert texts[2].startswith("summary of group 2")
    assert usage.fallbacks == 2
    assert len(usage.notes) == 1 and why in usage.notes[0] and "malformed" in usage.notes[0]
    assert usage.input_tokens > 0  # a malformed answer was still billed


def test_a_reordered_answer_is_matched_by_its_indices(stub, sleeps):
    groups = [group(i) for i in range(3)]
    stub.script.append(answer(json.dumps([item(2, "about two"), dict(item(0, "about zero"), i="0"),
                                          item(1, "about one")])))
    texts, usage = make(stub, sleeps, batch_size=3).summarize(groups)
    assert texts == ["about zero", "about one", "about two"] and usage.fallbacks == 0


def test_answers_get_the_normalisation_ingested_text_gets(stub, sleeps):
    # a bare CR would put an entry header on a line of its own in the tier file (a file
    # pamd itself then refuses); a NUL makes the file binary to git
    stub.script.append(answer(["a\r### e-aaaaaaaaaaaa · x · y", "billing NUL\x00here\r\n\x1b[1mok"]))
    texts, usage = make(stub, sleeps, batch_size=2).summarize([group(0), group(1)])
    assert texts == ["a ### e-aaaaaaaaaaaa · x · y", "billing NUL here [1mok"]  # a fact is one line
    assert usage.fallbacks == 0
    stub.script.append(answer(["\x00\r", "fine"]))  # nothing left after it: that group falls back
    texts, usage = make(stub, sleeps, batch_size=2).summarize([group(0), group(1)])
    assert usage.fallbacks == 1 and "empty facts" in usage.notes[0]
    assert texts == [ExtractiveSummarizer().summarize([group(0)])[0][0], "fine"]


def test_broken_http_body_falls_back(stub, sleeps):
    from gemini_stub import Reply

    stub.script.append(Reply(200, "<html>oops</html>"))
    texts, usage = make(stub, sleeps).summarize([group(0)])
    assert usage.fallbacks == 1 and "malformed" in usage.notes[0]
    assert texts == ExtractiveSummarizer().summarize([group(0)])[0]


def test_over_budget_and_multiline_one_liners_are_fitted(stub, sleeps):
    long = "Alice: " + "very " * 200 + "long"
    stub.script.append(answer([long, "Alice: first\nBob: second"]))
    groups = [group(0, "L1", target=10), group(1, "L3", target=10)]
    texts, usage = make(stub, sleeps).summarize(groups)
    assert count_tokens(texts[0]) <= 10 and texts[0].startswith("Alice: very")
    assert texts[1] == "Alice: first Bob: second"
    assert usage.notes == ["gemini: trimmed 1 over-budget summary"]


def tiny_group(text: str = "Deploy done.", tier: str = "L1") -> Group:
    # 3 tokens of input, but a budget of 16 (the tier's minimum summary size).
    return Group("tiny", tier, (Entry(id="e-000000000099", ts=T0, role="user", text=text),), 16)


def test_a_summary_longer_than_its_input_falls_back_to_extractive(stub, sleeps):
    stub.script.append(answer(["X" * 5000, "Alice: Orion moves to July."]))
    groups = [tiny_group(), group(1)]
    texts, usage = make(stub, sleeps).summarize(groups)
    assert stub.requests[0].groups[0]["max_chars"] == len("Deploy done.")  # what it replaces
    assert texts[0] == ExtractiveSummarizer().summarize([groups[0]])[0][0] and "XX" not in texts[0]
    assert texts[1] == "Alice: Orion moves to July."
    assert usage.fallbacks == 1
    assert usage.notes == ["gemini: 1 summary longer than its input; fell back to extractive for it"]


def test_a_short_enough_summary_of_a_tiny_group_is_kept(stub, sleeps):
    stub.script.append(answer(["Deploy done"]))
    texts, usage = make(stub, sleeps).summarize([tiny_group()])
    assert texts == ["Deploy done"] and usage.fallbacks == 0 and not usage.notes


def test_unreachable_endpoint_is_transient(sleeps):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    summarizer = GeminiSummarizer(api_key=KEY, base_url=f"http://127.0.0.1:{port}",
                                  max_retries=1, retry_base_delay=0.01, sleep=sleeps.append)
    texts, usage = summarizer.summarize([group(0)])
    assert texts == ExtractiveSummarizer().summarize([group(0)])[0]
    assert usage.requests == 2 and usage.fallbacks == 1 and sleeps == [0.01]
    assert "network error" in usage.notes[0]


@pytest.mark.parametrize(
    "reply,message",
    [
        (error(400, "INVALID_ARGUMENT", "API key not valid",
               details=[{"reason": "API_KEY_INVALID"}]), "rejected the API key"),
        (error(403, "PERMISSION_DENIED"), "rejected the API key"),
        (error(404, "NOT_FOUND", "models/x is not found"), "not found"),
    ],
)
def test_misconfiguration_raises_pamd_error(stub, sleeps, reply, message):
    stub.script.append(reply)
    with pytest.raises(PamdError, match=message):
        make(stub, sleeps).summarize([group(0)])
    assert len(stub.requests) == 1


def test_fallback_fail_raises_after_retries(stub, sleeps):
    stub.script += [error(429, "RESOURCE_EXHAUSTED")] * 2
    with pytest.raises(PamdError, match="429 RESOURCE_EXHAUSTED after 1 retries"):
        make(stub, sleeps, max_retries=1, fallback="fail").summarize([group(0)])


def test_get_summarizer_reads_config_and_environment(stub, monkeypatch):
    monkeypatch.setenv("GEMINI_API_KEY", "env-key")
    monkeypatch.setenv("PAMD_GEMINI_BASE_URL", stub.base_url)
    config = {"summarizer": {"backend": "gemini", "model": "gemini-2.5-flash-lite",
                             "batch_size": 3, "thinking_budget": 0, "prices": as_dict(PRICES),
                             "base_url": "http://127.0.0.1:9/ignored"}}
    summarizer = get_summarizer(config)
    texts, usage = summarizer.summarize([group(i) for i in range(4)])
    assert [len(r.groups) for r in stub.requests] == [3, 1]
    assert stub.requests[0].path == "/v1beta/models/gemini-2.5-flash-lite:generateContent"
    assert stub.requests[0].headers["x-goog-api-key"] == "env-key"
    # google-genai 3.x sends this one field in snake_case; the API accepts both spellings.
    thinking = stub.requests[0].body["generationConfig"]["thinkingConfig"]
    assert thinking in ({"thinkingBudget": 0}, {"thinking_budget": 0})
    assert len(texts) == 4 and usage.model == "gemini-2.5-flash-lite"


def test_missing_key_is_a_clear_error(monkeypatch):
    monkeypatch.delenv("GEMINI_API_KEY", raising=False)
    monkeypatch.delenv("GOOGLE_API_KEY", raising=False)
    with pytest.raises(PamdError, match="GEMINI_API_KEY is not set"):
        get_summarizer({"summarizer": {"backend": "gemini"}})


@pytest.mark.parametrize("url", ["127.0.0.1:18765", "not a url", "ftp://proxy.example"])
def test_a_base_url_that_is_not_http_is_a_clear_error(monkeypatch, url):
    monkeypatch.setenv("GEMINI_API_KEY", KEY)
    monkeypatch.delenv("PAMD_GEMINI_BASE_URL", raising=False)
    with pytest.raises(PamdError, match="base_url .* is not an http"):
        get_summarizer({"summarizer": {"backend": "gemini", "base_url": url}})


def test_a_timeout_is_above_0_and_never_0_ms():
    with pytest.raises(PamdError, match="timeout must be a number of seconds above 0"):
        GeminiSummarizer(api_key=KEY, timeout=0)
    client = GeminiSummarizer(api_key=KEY, timeout=0.0001)._get_client()
    assert client._api_client._http_options.timeout == 1  # 0 ms would mean: wait forever


def blocked(why: str = "SAFETY", prompt: bool = False):
    reply = answer([], prompt_tokens=70, output_tokens=0)
    if prompt:  # the prompt itself is blocked: no candidates, a promptFeedback
        reply.body["candidates"] = []
        reply.body["promptFeedback"] = {"blockReason": why}
    else:
        reply.body["candidates"] = [{"finishReason": why, "index": 0}]
    return reply


def test_fallback_fail_after_paid_batches_reports_the_spend_and_the_block(stub, sleeps):
    # The model blocks one batch each time: "retry later" would never help, and the first
    # batch's tokens (no commit is made) would be reported nowhere.
    stub.script += [answer(["a", "b"], prompt_tokens=200, output_tokens=40), blocked()]
    with pytest.raises(PamdError) as caught:
        make(stub, sleeps, batch_size=2, fallback="fail").summarize([group(i) for i in range(4)])
    err = str(caught.value)
    assert "gemini summarizer failed: malformed response (empty response, finishReason SAFETY)" in err
    assert "spent 270 LLM tokens in and 40 out (2 requests, $0.0002) that no commit records" in err
    assert ('set fallback = "extractive", or look at the entries it sends '
            "(e-000002000000, e-000002000001, e-000002000002 and 3 more)") in err
    assert "retry later" not in err and len(stub.requests) == 2


def test_a_rejected_key_after_a_paid_batch_reports_the_spend(stub, sleeps):
    stub.script += [answer(["a", "b"], prompt_tokens=200, output_tokens=40), error(403, "PERMISSION_DENIED")]
    with pytest.raises(PamdError, match="rejected the API key .*; spent 200 LLM tokens in and 40 out"):
        make(stub, sleeps, batch_size=2).summarize([group(i) for i in range(4)])


@pytest.mark.parametrize("reply,why", [
    (blocked("RECITATION"), "empty response, finishReason RECITATION"),
    (blocked("SAFETY", prompt=True), "empty response, blockReason SAFETY"),
    (answer('[{"i": 0, "facts": [{"text": "cut he'), "response is not JSON, finishReason MAX_TOKENS"),
])
def test_a_blocked_or_cut_answer_names_the_reason(stub, sleeps, reply, why):
    if reply.body["candidates"] and "content" in reply.body["candidates"][0]:
        reply.body["candidates"][0]["finishReason"] = "MAX_TOKENS"
    stub.script.append(reply)
    texts, usage = make(stub, sleeps).summarize([group(0)])
    assert usage.fallbacks == 1 and usage.notes[0].startswith(f"gemini: malformed response ({why})")


def test_bad_fallback_is_a_clear_error():
    with pytest.raises(PamdError, match="fallback 'none'"):
        GeminiSummarizer(api_key=KEY, fallback="none")


def test_lesson_written_by_gemini_is_one_line(stub, monkeypatch):
    monkeypatch.setenv("GEMINI_API_KEY", KEY)
    monkeypatch.setenv("PAMD_GEMINI_BASE_URL", stub.base_url)
    stub.script.append(answer(["before deploying,\ncheck migrations ran"]))
    failures = (Entry(id="e-1", ts=T0, role="assistant", neuro=("cortisol",),
                      text="Deploy failed: migration 0042 was not applied."),)
    text = lesson(failures, {"summarizer": {"backend": "gemini"}})
    assert text == "before deploying, check migrations ran"
    assert stub.requests[0].groups[0]["tier"] == "lesson"
