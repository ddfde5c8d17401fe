"""The OpenAI-compatible backend against a stub chat-completions server on 127.0.0.1."""

from __future__ import annotations

import json
import socket
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from gemini_stub import OpenAIStub, Reply, chat_answer, chat_error, numbered  # noqa: E402
from test_summarizers_gemini import T0, group  # noqa: E402

from pamd.consolidate.summarizers import ExtractiveSummarizer, get_summarizer, lesson  # noqa: E402
from pamd.consolidate.summarizers.openai_compat import OpenAISummarizer  # noqa: E402
from pamd.core.config import Price  # noqa: E402
from pamd.core.entry import Entry  # noqa: E402
from pamd.errors import PamdError  # noqa: E402

PRICES = {"gpt-4.1-mini": Price(input=0.40, output=1.60)}


@pytest.fixture
def stub():
    with OpenAIStub() as s:
        yield s


@pytest.fixture
def sleeps():
    return []


def make(stub, sleeps, **kw) -> OpenAISummarizer:
    options = dict(model="gpt-4.1-mini", base_url=stub.base_url, api_key="sk-stub", batch_size=2,
                   max_retries=2, retry_base_delay=0.01, prices=PRICES, sleep=sleeps.append)
    options.update(kw)
    return OpenAISummarizer(**options)


def test_batches_groups_in_order_with_key_model_and_json_mode(stub, sleeps):
    texts, usage = make(stub, sleeps).summarize([group(i) for i in range(3)])
    assert [len(r.groups) for r in stub.requests] == [2, 1]
    first = stub.requests[0]
    assert first.path == "/v1/chat/completions"
    assert first.headers["authorization"] == "Bearer sk-stub"
    assert first.body["model"] == "gpt-4.1-mini" and first.body["temperature"] == 0.2
    assert first.body["response_format"] == {"type": "json_object"}
    system, user = first.body["messages"]
    assert system["role"] == "system" and '{"summaries": [{"i": <the group\'s i>' in system["content"]
    assert user["role"] == "user" and json.loads(user["content"])["groups"][1]["tier"] == "L1"
    assert [t.split(":")[0] for t in texts] == [f"summary of group {i} message 0" for i in range(3)]
    assert usage.backend == "openai" and usage.requests == 2 and usage.fallbacks == 0


def test_usage_and_cost_come_from_the_usage_block(stub, sleeps):
    stub.script += [chat_answer(["a", "b"], prompt_tokens=1_000, output_tokens=200)]
    _, usage = make(stub, sleeps, batch_size=2).summarize([group(0), group(1)])
    assert (usage.input_tokens, usage.output_tokens) == (1_000, 200)
    assert usage.cost_usd == pytest.approx((1_000 * 0.40 + 200 * 1.60) / 1e6)


def test_a_local_server_without_a_key_gets_no_authorization_header(stub, sleeps):
    make(stub, sleeps, api_key="").summarize([group(0)])
    assert "authorization" not in stub.requests[0].headers


def test_json_mode_off_asks_for_a_bare_array_and_reads_one(stub, sleeps):
    stub.script.append(chat_answer(["one", "two"], wrap=False))
    texts, usage = make(stub, sleeps, json_mode=False).summarize([group(0), group(1)])
    body = stub.requests[0].body
    assert "response_format" not in body and "JSON array" in body["messages"][0]["content"]
    assert texts == ["one", "two"] and usage.fallbacks == 0


def test_a_fenced_json_answer_is_read(stub, sleeps):
    fenced = "```json\n" + json.dumps({"summaries": numbered(["one", "two"])}) + "\n```"
    stub.script.append(chat_answer(fenced))
    texts, usage = make(stub, sleeps).summarize([group(0), group(1)])
    assert texts == ["one", "two"] and usage.fallbacks == 0


def test_429_with_retry_after_and_503_are_retried(stub, sleeps):
    stub.script += [chat_error(429, "slow down", headers={"Retry-After": "0.5"}), chat_error(503)]
    texts, usage = make(stub, sleeps, max_retries=3).summarize([group(0)])
    assert len(stub.requests) == 3 and usage.requests == 3
    assert sleeps == [0.5, 0.02]  # the server's wait, then the backoff's second step
    assert texts[0].startswith("summary of group 0") and usage.fallbacks == 0


def test_persistent_errors_fall_back_for_the_rest_of_the_run_and_say_so(stub, sleeps):
    groups = [group(i) for i in range(4)]
    stub.script += [chat_error(500)] * 3
    texts, usage = make(stub, sleeps, max_retries=2).summarize(groups)
    assert len(stub.requests) == 3  # the second batch is not sent to an endpoint that is down
    assert texts == ExtractiveSummarizer().summarize(groups)[0]
    assert usage.fallbacks == 4
    assert usage.notes == ["openai: 500 after 2 retries; fell back to extractive for 4 groups"]


@pytest.mark.parametrize(
    "reply,why",
    [
        (chat_answer("I cannot help with that."), "not JSON"),
        (chat_answer(["only one"]), "1 summaries for 2 groups"),
        (Reply(200, {"choices": []}), "no choices"),
        (Reply(200, "<html>proxy error</html>"), "no choices"),
        (Reply(200, {"choices": [{"message": {"role": "assistant", "content": None}}]}), "empty"),
        (chat_error(400, "response_format is not supported"), "400 (response_format"),
    ],
)
def test_a_bad_answer_falls_back_for_that_batch_only(stub, sleeps, reply, why):
    stub.script.append(reply)
    groups = [group(i) for i in range(3)]
    texts, usage = make(stub, sleeps).summarize(groups)
    assert len(stub.requests) == 2  # not retried
    assert texts[:2] == ExtractiveSummarizer().summarize(groups[:2])[0]
    assert texts[2].startswith("summary of group 2")
    assert usage.fallbacks == 2 and len(usage.notes) == 1 and why in usage.notes[0]


def test_a_summary_longer_than_its_input_falls_back_to_extractive(stub, sleeps):
    from test_summarizers_gemini import tiny_group

    stub.script.append(chat_answer(["Deploy done. " + "Everything went great and more. " * 20]))
    texts, usage = make(stub, sleeps).summarize([tiny_group(tier="L3")])
    assert texts == ExtractiveSummarizer().summarize([tiny_group(tier="L3")])[0]
    assert usage.fallbacks == 1 and "longer than its input" in usage.notes[0]


def test_unreachable_endpoint_is_retried_then_falls_back(sleeps):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    summarizer = OpenAISummarizer(model="m", base_url=f"http://127.0.0.1:{port}/v1",
                                  max_retries=1, retry_base_delay=0.01, sleep=sleeps.append)
    texts, usage = summarizer.summarize([group(0)])
    assert texts == ExtractiveSummarizer().summarize([group(0)])[0]
    assert usage.requests == 2 and sleeps == [0.01] and "network error" in usage.notes[0]


@pytest.mark.parametrize(
    "reply,name",
    [
        (Reply(200, '{"choices": [{"mess', cut=4000), "IncompleteRead"),  # the server died mid-answer
        (Reply(raw=b"garbage\r\n\r\n"), "BadStatusLine"),
    ],
)
def test_a_connection_cut_mid_answer_is_retried_then_falls_back(stub, sleeps, reply, name):
    stub.script += [reply, reply]
    texts, usage = make(stub, sleeps, max_retries=1).summarize([group(0)])
    assert len(stub.requests) == 2 and sleeps == [0.01]
    assert texts == ExtractiveSummarizer().summarize([group(0)])[0]
    assert usage.notes == [f"openai: network error ({name}) after 1 retries; "
                           "fell back to extractive for 1 group"]


@pytest.mark.parametrize(
    "reply,message",
    [
        (chat_error(401, "Incorrect API key provided"), "rejected the API key"),
        (chat_error(404, 'model "llama9" not found, try pulling it first'), "llama9"),
    ],
)
def test_misconfiguration_stops_the_run(stub, sleeps, reply, message):
    stub.script.append(reply)
    with pytest.raises(PamdError, match=message):
        make(stub, sleeps, model="llama9").summarize([group(0)])
    assert len(stub.requests) == 1


def test_fallback_fail_raises_after_retries(stub, sleeps):
    stub.script += [chat_error(429)] * 2
    with pytest.raises(PamdError, match="openai summarizer failed: 429 after 1 retries"):
        make(stub, sleeps, max_retries=1, fallback="fail").summarize([group(0)])


@pytest.mark.parametrize(
    "section,message",
    [
        ({"model": "gpt-4.1-mini"}, "OPENAI_API_KEY is not set"),
        ({"model": "m", "base_url": "localhost:11434"}, "is not an http"),
        ({"model": "m", "base_url": "http://127.0.0.1:1/v1", "json_mode": "yes"}, "json_mode"),
        ({"model": "", "base_url": "http://127.0.0.1:1/v1"}, "model is not set"),
    ],
)
def test_bad_configuration_is_one_clear_error(monkeypatch, section, message):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("PAMD_OPENAI_BASE_URL", raising=False)
    with pytest.raises(PamdError, match=message):
        get_summarizer({"summarizer": {"backend": "openai", **section}})


def test_get_summarizer_reads_config_and_environment(stub, monkeypatch):
    monkeypatch.setenv("PAMD_OPENAI_BASE_URL", stub.base_url)
    monkeypatch.setenv("MY_ROUTER_KEY", "sk-router")
    config = {"summarizer": {"backend": "openai", "model": "llama3.2", "batch_size": 3,
                             "api_key_env": "MY_ROUTER_KEY", "temperature": 0.0,
                             "base_url": "http://127.0.0.1:9/ignored"}}
    texts, usage = get_summarizer(config).summarize([group(i) for i in range(4)])
    assert [len(r.groups) for r in stub.requests] == [3, 1]
    assert stub.requests[0].headers["authorization"] == "Bearer sk-router"
    assert stub.requests[0].body["model"] == "llama3.2" and stub.requests[0].body["temperature"] == 0
    assert len(texts) == 4 and usage.model == "llama3.2"


def test_lesson_written_by_a_local_model_is_one_line(stub, monkeypatch):
    monkeypatch.setenv("PAMD_OPENAI_BASE_URL", stub.base_url)
    stub.script.append(chat_answer(["before deploying,\ncheck migrations ran"]))
    failures = (Entry(id="e-1", ts=T0, role="assistant", neuro=("cortisol",),
                      text="Deploy failed: migration 0042 was not applied."),)
    assert lesson(failures, {"summarizer": {"backend": "openai", "model": "m"}}) \
        == "before deploying, check migrations ran"
    assert stub.requests[0].groups[0]["tier"] == "lesson"


def test_a_model_on_this_machine_has_no_price_note(stub, sleeps):
    _, usage = make(stub, sleeps, prices={}).summarize([group(0)])
    assert usage.cost_usd == 0 and not any("no price" in n for n in usage.notes)
    remote = make(stub, sleeps, prices={}, base_url=stub.base_url.replace("127.0.0.1", "localhost"))
    assert remote.free  # localhost too
    paid = OpenAISummarizer(model="gpt-4.1-mini", base_url="https://api.example.com/v1", api_key="k")
    assert not paid.free
