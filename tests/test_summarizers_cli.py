"""claude-cli and codex-cli backends, run against stand-in executables on PATH that accept
only the arguments the real CLIs document and answer in their real output formats."""

from __future__ import annotations

import json
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from cli_stub import StandIn  # noqa: E402

from pamd.consolidate.summarizers import ExtractiveSummarizer, Group, get_summarizer, prompts  # noqa: E402
from pamd.core.entry import Entry  # noqa: E402
from pamd.errors import PamdError  # noqa: E402

T0 = datetime(2024, 5, 1, 9, 0, tzinfo=UTC)


def group(i: int, tier: str = "L1") -> Group:
    es = tuple(Entry(id=f"e-{i:06d}{j:06d}", ts=T0 + timedelta(minutes=j), role="user",
                     text=f"group {i} message {j}: Alice moved the launch of Orion to 2024-07-{j + 10}.")
               for j in range(3))
    return Group(f"g{i}", tier, es, 30)


@pytest.fixture
def standin(tmp_path, monkeypatch):
    s = StandIn(tmp_path / "bin")
    s.env(monkeypatch)
    return s


def make(backend: str, **over):
    s = {"backend": backend, "batch_size": 2, "max_retries": 2, "retry_base_delay": 0.01, "timeout": 20}
    s.update(over)
    summarizer = get_summarizer({"summarizer": s})
    summarizer.sleep = lambda _s: None
    return summarizer


def echo_text(g: Group) -> str:
    return "summary of " + g.entries[0].text[:60]


def test_claude_runs_headless_with_the_schema_and_reports_its_cost(standin):
    groups = [group(i) for i in range(3)]
    texts, usage = make("claude-cli", model="haiku").summarize(groups)
    assert texts == [echo_text(g) for g in groups]
    runs = standin.runs
    assert len(runs) == 2
    argv = runs[0]["argv"]
    assert argv[:3] == ["-p", "--output-format", "json"]
    assert argv[argv.index("--system-prompt") + 1] == prompts.SYSTEM_OBJECT
    assert json.loads(argv[argv.index("--json-schema") + 1]) == prompts.SCHEMA
    assert argv[argv.index("--model") + 1] == "haiku"
    assert "--no-session-persistence" in argv and argv[argv.index("--tools") + 1] == ""
    assert json.loads(argv[argv.index("--settings") + 1]) == {"disableAllHooks": True}
    # the run is no session of the user's: an empty directory, marked for pamd's own hooks
    assert all(r["summarizing"] == "1" and "pamd-llm-" in r["cwd"] for r in runs)
    assert json.loads(runs[0]["stdin"])["groups"][0]["messages"][0]["id"] == groups[0].entries[0].id
    assert usage.backend == "claude-cli" and usage.requests == 2 and usage.fallbacks == 0
    assert usage.cost_usd == pytest.approx(2 * 0.0125)  # the CLI's own total_cost_usd
    assert usage.input_tokens > 0 and usage.output_tokens > 0


def test_claude_without_a_model_uses_its_own_default(standin):
    make("claude-cli").summarize([group(0)])
    assert "--model" not in standin.runs[0]["argv"]


def test_claude_text_result_is_read_when_no_structured_output(standin):
    answer = {"summaries": [{"i": 0, "facts": [{"text": "Orion moved to July", "sources": [group(0).entries[1].id]}]}]}
    standin.queue({"answer": "```json\n" + json.dumps(answer) + "\n```"})
    texts, usage = make("claude-cli").summarize([group(0)])
    assert texts == ["Orion moved to July"] and usage.fallbacks == 0


@pytest.mark.parametrize("error", [
    'API Error: 529 {"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}',
    "API Error: Request rejected (429) · rate limit reached",
])
def test_claude_busy_is_retried_then_falls_back(standin, error):
    standin.queue(*[{"error": error}] * 3)
    groups = [group(i) for i in range(4)]
    texts, usage = make("claude-cli").summarize(groups)
    assert len(standin.runs) == 3  # one batch's retries; the next batch is not tried
    assert texts == ExtractiveSummarizer().summarize(groups)[0]
    assert usage.fallbacks == 4 and "after 2 retries; fell back to extractive for 4 groups" in usage.notes[0]


def test_claude_retry_cures_a_busy_service(standin):
    standin.queue({"error": "API Error: 529 overloaded_error"})
    texts, usage = make("claude-cli").summarize([group(0)])
    assert texts == [echo_text(group(0))] and usage.requests == 2 and usage.fallbacks == 0


def test_claude_not_logged_in_stops_the_run(standin):
    standin.queue({"error": "Invalid API key · Please run /login"})
    with pytest.raises(PamdError, match="Please run /login"):
        make("claude-cli").summarize([group(0)])


def test_claude_a_slow_run_is_killed_at_the_timeout_and_falls_back(standin):
    standin.queue(*[{"sleep": 30}] * 2)
    texts, usage = make("claude-cli", timeout=1, max_retries=1).summarize([group(0)])
    assert texts == ExtractiveSummarizer().summarize([group(0)])[0]
    assert "timeout after 1 s after 1 retries" in usage.notes[0]


@pytest.mark.parametrize("backend", ["claude-cli", "codex-cli"])
def test_an_answer_breaking_the_contract_falls_back_without_retry(standin, backend):
    standin.queue({"answer": {"summaries": [{"i": 0, "facts": [{"text": "x", "sources": ["e-made-up"]}]}]}})
    texts, usage = make(backend).summarize([group(0)])
    assert len(standin.runs) == 1
    assert texts == ExtractiveSummarizer().summarize([group(0)])[0]
    assert usage.notes[0].startswith(f"{backend}: facts refused (a fact cites 'e-made-up'")


def test_a_missing_cli_is_a_clear_error(monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(PamdError, match="needs 'claude', which is not on PATH"):
        make("claude-cli")
    with pytest.raises(PamdError, match="needs 'codex', which is not on PATH"):
        make("codex-cli")


def test_codex_exec_runs_with_the_schema_file_and_its_last_message(standin):
    groups = [group(i) for i in range(3)]
    texts, usage = make("codex-cli", model="gpt-5-mini").summarize(groups)
    assert texts == [echo_text(g) for g in groups]
    argv = standin.runs[0]["argv"]
    assert argv[0] == "exec" and argv[-1] == "-"
    for flag in ("--json", "--skip-git-repo-check", "--ephemeral"):
        assert flag in argv
    assert argv[argv.index("--sandbox") + 1] == "read-only"
    assert argv[argv.index("--model") + 1] == "gpt-5-mini"
    assert standin.runs[0]["stdin"].startswith(prompts.SYSTEM_OBJECT)
    assert usage.input_tokens > 0 and usage.output_tokens > 0 and usage.fallbacks == 0
    assert usage.cost_usd == 0 and "codex-cli: the CLI reports no cost; counted as 0" in usage.notes


def test_codex_failures(standin):
    standin.queue(*[{"error": "stream error: 503 Service Unavailable"}] * 3)
    texts, usage = make("codex-cli").summarize([group(0)])
    assert len(standin.runs) == 3 and usage.fallbacks == 1
    standin.queue({"error": "401 Unauthorized: run codex login"})
    with pytest.raises(PamdError, match="401 Unauthorized"):
        make("codex-cli").summarize([group(0)])
