"""What enters L0, and at what type and importance: chatter is ephemeral, facts are kept
and rank high. Every case goes through a real `pamd ingest` into a real brain."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from conftest import DATA, git, head_count
from test_ingest import entries

from pamd.core.entry import entry_id

CODEX = DATA / "codex"
ROLLOUT = next(CODEX.glob("rollout-*.jsonl"))


def _session(records: list[tuple[str, object]], sid: str = "cc-facts", extra: dict | None = None) -> str:
    """A Claude Code session JSONL: one record per (type, content), a second apart."""
    out = []
    for i, (kind, content) in enumerate(records):
        rec = {"parentUuid": None, "isSidechain": False, "type": kind, "sessionId": sid, "uuid": f"u{i}",
               "timestamp": f"2026-11-29T10:{i // 60:02d}:{i % 60:02d}.000Z",
               "message": {"role": kind, "content": content}}
        rec.update((extra or {}).get(i, {}))
        out.append(json.dumps(rec, ensure_ascii=False) + "\n")
    return "".join(out)


def _call(tid: str, name: str, args: dict) -> tuple[str, list]:
    return "assistant", [{"type": "tool_use", "id": tid, "name": name, "input": args}]


def _result(tid: str, body: str, error: bool = False) -> tuple[str, list]:
    return "user", [{"tool_use_id": tid, "type": "tool_result", "content": body, "is_error": error}]


def _said(role: str, text: str) -> tuple[str, list]:
    return role, [{"type": "text", "text": text}]


def _ingest(brain, tmp_path: Path, text: str, name: str = "s.jsonl"):
    f = tmp_path / name
    f.write_text(text)
    code, out, err = brain("ingest", str(f))
    assert code == 0, err
    return entries(brain.cwd)


def _one(es, start: str):
    found = [e for e in es if e.text.startswith(start)]
    assert len(found) == 1, [e.text[:80] for e in es]
    return found[0]


def test_narration_is_ephemeral_and_a_fact_after_it_is_kept(brain, tmp_path):
    es = _ingest(brain, tmp_path, _session([
        _said("user", "the sessions page times out"),
        _said("assistant", "Let me check the registry."),
        _said("assistant", "Perfect! Now I'll run the tests."),
        _said("assistant", "Let me fix this: the TTL was 90 s because the sweep runs every 15 s and "
                           "broadcasts on `session_activity`."),
        _said("assistant", "Отлично! Теперь посмотрю логи."),
        _said("assistant", "Let me see why it failed."),
        _said("assistant", "Let's go with Postgres for the registry."),
    ]))
    for start in ("Let me check", "Perfect! Now", "Отлично!", "Let me see why"):
        e = _one(es, start)
        assert (e.type, e.neuro) == ("ephemeral", ()) and e.importance < 0.15, e
    fact = _one(es, "Let me fix this")
    assert fact.type == "context" and fact.importance >= 0.5
    assert fact.text.endswith("broadcasts on `session_activity`.")  # kept whole, not cut at the narration
    assert _one(es, "Let's go with").type == "decision"


def test_a_standing_instruction_ranks_above_a_request(brain, tmp_path):
    es = _ingest(brain, tmp_path, _session([
        _said("user", "fix the parser"),
        _said("assistant", "Done."),
        _said("user", "From now on always run the whole suite before committing."),
        _said("user", "use httpx instead of requests"),
        _said("user", "запомни: коммиты пишем по-английски"),
    ]))
    ask = _one(es, "fix the parser")
    for start in ("From now on", "use httpx", "запомни"):
        e = _one(es, start)
        assert e.type == "user_intent" and e.importance >= 0.9 > ask.importance, e


def test_a_commit_message_is_kept_whole_and_ranks_high_once_it_landed(brain, tmp_path):
    body = "\n".join(f"- {i}: ActiveSessionRegistry sweeps every 15 s, TTL 90 s" for i in range(20))
    cmd = f"git add -A && git commit -m \"$(cat <<'EOF'\nfeat: session registry (spotter-gqc.4)\n\n{body}\nEOF\n)\""
    assert len(cmd) > 1000
    es = _ingest(brain, tmp_path, _session([
        _call("t1", "Bash", {"command": cmd, "description": "Commit"}),
        _result("t1", "Pre-commit validation failed:\n[FORMAT] Code is not formatted.", error=True),
        _call("t2", "Bash", {"command": cmd + " ", "description": "Commit again"}),
        _result("t2", "[main 4f2a9c1] feat: session registry (spotter-gqc.4)\n 3 files changed"),
    ]))
    failed, landed = sorted((e for e in es if e.text.startswith("[tool Bash]")), key=lambda e: e.ts)
    assert body in json.loads(landed.text.removeprefix("[tool Bash] "))["command"]
    assert landed.importance >= 0.85 > failed.importance
    assert _one(es, "[tool result] [main 4f2a9c1]").importance >= 0.85


def test_a_close_reason_and_a_ticket_shown_are_kept(brain, tmp_path):
    spec = "spotter-gqc.7: Token store\n" + "\n".join(
        f"Acceptance {i}: tokens expire after 24 h and are stored in ETS, not the DB." for i in range(60))
    assert 2000 < len(spec) < 8000
    es = _ingest(brain, tmp_path, _session([
        _call("t1", "Bash", {"command": "bd show spotter-gqc.7"}),
        _result("t1", spec),
        _call("t2", "Bash", {"command": "bd close spotter-gqc.7 --reason \"Token store done: ETS, 24 h TTL\""}),
        _result("t2", "✓ Closed spotter-gqc.7"),
        _call("t3", "Bash", {"command": "cat README.md"}),
        _result("t3", "readme " * 500),
    ]))
    shown = _one(es, "[tool result] spotter-gqc.7")
    assert shown.text == "[tool result] " + spec and shown.importance >= 0.7
    assert _one(es, '[tool Bash] {"command": "bd close').importance >= 0.85
    bulk = _one(es, "[tool result] readme")
    assert "more characters in the source transcript" in bulk.text and bulk.importance < 0.15


def test_a_failing_test_run_keeps_its_head_its_failures_and_its_end(brain, tmp_path):
    dots = "".join(f"tests/test_api.py::test_{i:03d} PASSED\n" for i in range(150))
    out = ("Exit code 1\n============ test session starts ============\ncollected 151 items\n" + dots
           + "================ FAILURES ================\n____ test_events_since ____\n"
           + "api/time.py:14: in parse_ts\nE   ValueError: time data '2026-11-29T10:00:00Z' does not match\n"
           + dots + "FAILED tests/test_api.py::test_events_since - ValueError\n1 failed, 150 passed in 2.31s")
    assert out.index("E   ValueError") > 2000
    es = _ingest(brain, tmp_path, _session([
        _call("t1", "Bash", {"command": "pytest -q tests/test_api.py"}),
        _result("t1", out, error=True),
    ]))
    e = _one(es, "[tool error]")
    assert "collected 151 items" in e.text  # the head
    assert "api/time.py:14: in parse_ts\nE   ValueError: time data" in e.text  # the failure, in its context
    assert e.text.endswith("1 failed, 150 passed in 2.31s")  # the end
    assert len(e.text) < len(out) and e.importance >= 0.6 and "cortisol" in e.neuro


def test_a_small_file_written_is_kept_whole_a_large_edit_as_head_changes_and_tail(brain, tmp_path):
    config = "\n".join(f"config :spotter, key_{i}: {i * 15}" for i in range(60))
    assert 600 < len(config) < 3000
    old = "\n".join(f"  def f{i}(x), do: x + {i}" for i in range(300))
    new = old.replace("  def f150(x), do: x + 150", "  def f150(x), do: x * 150  # TTL 90 s")
    es = _ingest(brain, tmp_path, _session([
        _call("t1", "Write", {"file_path": "/app/config/runtime.exs", "content": config}),
        _result("t1", "File created successfully at: /app/config/runtime.exs"),
        _call("t2", "Edit", {"file_path": "/app/lib/f.ex", "old_string": old, "new_string": new}),
        _result("t2", "The file /app/lib/f.ex has been updated successfully."),
    ]))
    written = json.loads(_one(es, "[tool Write]").text.removeprefix("[tool Write] "))
    assert written["content"] == config
    edit = json.loads(_one(es, "[tool Edit]").text.removeprefix("[tool Edit] "))
    assert edit["new_string"].startswith("  def f0(x), do: x + 0")  # head
    assert "  def f150(x), do: x * 150  # TTL 90 s" in edit["new_string"]  # the changed line
    assert edit["new_string"].endswith("  def f299(x), do: x + 299")  # tail
    assert edit["old_string"] == "  def f150(x), do: x + 150"  # what it replaced
    assert len(edit["new_string"]) < len(new) // 4


def test_kept_pieces_go_through_redaction(brain, tmp_path):
    key = "sk-ant-api03-" + "Q7x9Lm2Pz4Rt8Vb6Nc1Kd5Hs3Jf0Wg" * 2
    config = f'config :app, anthropic_key: "{key}"\n' + "x = 1\n" * 200
    es = _ingest(brain, tmp_path, _session([
        _call("t1", "Write", {"file_path": "/app/config/dev.exs", "content": config}),
        _call("t2", "Bash", {"command": "pytest"}),
        _result("t2", "E " * 3000 + f"\nE   AuthError: bad key {key}\n" + "x" * 3000, error=True),
    ]))
    tree = "".join(e.text for e in es)
    assert key[:20] not in tree and key[:20] not in git(brain.cwd, "log", "-p")
    assert tree.count("[REDACTED:anthropic-key]") == 2


def test_a_cut_in_a_condensed_piece_leaves_no_part_of_a_secret(brain, tmp_path):
    """A large file's head and a failing output's error lines are cut to size: never inside
    a secret, so redaction finds each one whole (none of it is left)."""
    token = "ghp_" + "Xk29Lq7Rt3Vb8Nw1Mz6Pc4Hd0Jf5Gs2Ya9Eq"
    big = "y" * 1490 + " " + token + "\n" + "\n".join(f"line {i}" for i in range(400))
    err = "error: " + "z" * 285 + " " + token
    es = _ingest(brain, tmp_path, _session([
        _call("t1", "Write", {"file_path": "/app/big.txt", "content": big}),
        _call("t2", "Bash", {"command": "make"}),
        _result("t2", "start\n" * 400 + err + "\n" + "end\n" * 400, error=True),
    ]))
    written = _one(es, "[tool Write]")
    assert "…[401 lines in all]…" in written.text
    shown = _one(es, "[tool error]")
    assert "error: zzz" in shown.text
    history = git(brain.cwd, "log", "-p")
    for frag in (token[:7], token[4:9]):
        assert frag not in written.text + shown.text and frag not in history, frag


def test_the_last_message_of_a_turn_is_a_report(brain, tmp_path):
    report = ("Done: ActiveSessionRegistry keeps sessions for 90 s (TTL) and sweeps every 15 s; it broadcasts "
              "on `session_activity`. Tests pass (49), committed as 4f2a9c1.")
    es = _ingest(brain, tmp_path, _session([
        _said("user", "implement the registry"),
        _said("assistant", "The registry needs a TTL because Claude Code sessions never say they ended, so a "
                           "periodic sweep has to drop the stale ones; I am adding it now to the supervisor."),
        _call("t1", "Bash", {"command": "mix test"}),
        _result("t1", "49 tests, 0 failures"),
        _said("assistant", report),
        _said("user", "thanks"),
    ]))
    assert _one(es, "Done: ActiveSessionRegistry").importance >= 0.8
    assert _one(es, "The registry needs a TTL").importance < 0.8


def test_claude_codes_compaction_summary_is_one_entry_from_either_record(brain, tmp_path):
    summary = ("1. Primary Request and Intent:\n   Implement spotter-gqc (session registry).\n"
               "2. Errors and fixes:\n   - Dialyzer `{:ok, _} can never match`: current_span_ctx() returns the "
               "record itself; fixed with :otel_span.hex_trace_id/1.")
    injected = ("This session is being continued from a previous conversation that ran out of context. The summary "
                "below covers the earlier portion of the conversation.\n\nAnalysis:\nLet me chronologically analyze "
                f"the conversation.\n\nSummary:\n{summary}\n\nIf you need specific details from before compaction, "
                "read the full transcript at: /home/USER/x.jsonl\nPlease continue the conversation from where we "
                "left off without asking the user any further questions.")
    main = _session([_said("user", "Implement spotter-gqc"), ("user", injected)],
                    sid="cc-main", extra={1: {"isCompactSummary": True, "isVisibleInTranscriptOnly": True}})
    worker = _session([
        ("user", "Your task is to create a detailed summary of the conversation so far"),
        _said("assistant", f"<analysis>\nLet me chronologically analyze it.\n</analysis>\n\n<summary>\n{summary}\n"
                           "</summary>"),
    ], sid="cc-main", extra={0: {"isSidechain": True, "agentId": "acompact-1a2b3c"},
                             1: {"isSidechain": True, "agentId": "acompact-1a2b3c"}})
    (tmp_path / "cc-main" / "subagents").mkdir(parents=True)
    (tmp_path / "cc-main.jsonl").write_text(main)
    (tmp_path / "cc-main" / "subagents" / "agent-acompact-1a2b3c.jsonl").write_text(worker)
    code, _, err = brain("ingest", str(tmp_path / "cc-main" / "subagents" / "agent-acompact-1a2b3c.jsonl"))
    assert code == 0, err
    code, out, err = brain("ingest", str(tmp_path / "cc-main.jsonl"))
    assert code == 0, err
    es = entries(brain.cwd)
    e = _one(es, "[compaction summary]")
    assert e.text == f"[compaction summary]\n{summary}" and e.session == "cc-main"
    assert e.importance >= 0.95 and e.role == "assistant"
    assert not any("Your task is to create" in x.text or "Please continue" in x.text for x in es)
    n = head_count(brain.cwd)
    code, out, _ = brain("ingest", str(tmp_path / "cc-main.jsonl"),
                         str(tmp_path / "cc-main" / "subagents" / "agent-acompact-1a2b3c.jsonl"))
    assert code == 0 and "nothing new" in out and head_count(brain.cwd) == n


def test_a_brain_holding_a_call_as_older_pamd_cut_it_takes_no_second_copy(brain, tmp_path):
    """Ingest keeps more of a Write than before (600 characters): a brain that holds the
    older, cut reading of the same call knows it by that id."""
    config = "\n".join(f"config :spotter, key_{i}: {i}" for i in range(60))
    text = _session([_call("t1", "Write", {"file_path": "/app/config/runtime.exs", "content": config})],
                    sid="cc-old")
    call = '[tool Write] ' + json.dumps({"file_path": "/app/config/runtime.exs", "content": config},
                                        ensure_ascii=False)
    old = call[:600] + f"\n…[{len(call) - 600} more characters in the source transcript]"
    old_id = entry_id("e", "cc-old", "2026-11-29T10:00:00Z", "assistant", old)
    ledger = brain.cwd / "memory" / "ledger" / "2026-11.txt"
    ledger.parent.mkdir(parents=True, exist_ok=True)
    ledger.write_text(old_id + "\n")
    git(brain.cwd, "add", "-A")
    git(brain.cwd, "commit", "-qm", "an older pamd's ingest")
    f = tmp_path / "old.jsonl"
    f.write_text(text)
    code, out, err = brain("ingest", str(f))
    assert code == 0 and "nothing new" in out, (out, err)


def test_a_codex_rollout_is_detected_and_ingested_with_the_same_rules(brain):
    code, out, err = brain("ingest", str(ROLLOUT))
    assert code == 0, err
    es = entries(brain.cwd)
    assert {e.session for e in es} == {"0199b7f3-4a1c-7e20-9d4b-2f6c1e8a5b30"}
    assert {e.role for e in es} == {"system", "user", "assistant", "tool"}
    assert not any("secret-scratchpad" in e.text or "Running the failing tests first" in e.text for e in es)
    assert sum("GET /v1/events answers 500" in e.text for e in es) == 1  # event_msg copies skipped
    assert _one(es, "<environment_context>").role == "system"
    assert _one(es, "GET /v1/events answers 500").type == "user_intent"  # "… Find out why, fix it"
    assert _one(es, "Let me run the API tests first.").type == "ephemeral"
    assert _one(es, '[tool shell] {"command": "pytest -q tests/test_api.py"')
    failing = _one(es, "[tool error]")
    assert "E   ValueError: time data '2026-11-29T10:00:00Z'" in failing.text and failing.importance >= 0.6
    assert _one(es, '[tool apply_patch] {"input": "*** Begin Patch').role == "assistant"
    commit = _one(es, '[tool shell] {"command": "pytest -q && git commit')
    assert "GET /v1/events answered 500" in commit.text and commit.importance >= 0.85
    assert _one(es, "Fixed: `parse_ts`").importance >= 0.8  # the turn's report
    assert _one(es, "Thanks. From now on always run").importance >= 0.9
    assert _one(es, "[compaction summary]\nThe user asked").importance >= 0.95
    n = head_count(brain.cwd)
    code, out, _ = brain("ingest", str(ROLLOUT), "--format", "codex")
    assert code == 0 and "nothing new" in out and head_count(brain.cwd) == n


def test_a_live_codex_rollout_ingests_incrementally(brain, tmp_path):
    data = ROLLOUT.read_bytes()
    lines = data.split(b"\n")
    live = tmp_path / "rollout-live.jsonl"
    shutil.copy(ROLLOUT, tmp_path / "whole.jsonl")
    live.write_bytes(b"\n".join(lines[:12]) + b"\n" + lines[12][:40])  # a record half written
    r = brain.proc("ingest", str(live))
    assert r.returncode == 0 and b"the last line is unfinished" in r.stderr, r.stderr
    first = {e.id for e in entries(brain.cwd)}
    live.write_bytes(data)
    r = brain.proc("ingest", str(live))
    assert r.returncode == 0, r.stderr
    got = {e.id for e in entries(brain.cwd)}
    assert first < got
    # the same as ingesting the finished rollout at once
    other = brain.cwd.parent / "other"
    code, _, err = brain("init", str(other))
    assert code == 0, err
    brain.cwd, here = other, brain.cwd
    try:
        code, _, err = brain("ingest", str(tmp_path / "whole.jsonl"))
        assert code == 0, err
        assert {e.id for e in entries(other)} == got
    finally:
        brain.cwd = here


def test_narration_before_a_tool_call_of_its_own_message_is_not_chatter(brain, tmp_path):
    """An OpenAI message holds its words and its calls: the calls make it no chatter."""
    chat = [{"role": "user", "content": "weather in Paris?"},
            {"role": "assistant", "content": "Let me check.",
             "tool_calls": [{"id": "c1", "type": "function",
                             "function": {"name": "get_weather", "arguments": "{\"city\": \"Paris\"}"}}]},
            {"role": "tool", "tool_call_id": "c1", "content": "18 C, rain"},
            {"role": "assistant", "content": "Let me summarize."}]
    es = _ingest(brain, tmp_path, json.dumps(chat), "chat.json")
    assert _one(es, "Let me check.\n[tool call get_weather]").type == "context"
    assert _one(es, "Let me summarize.").type == "ephemeral"


def test_what_the_person_pastes_is_kept_whole(brain, tmp_path):
    pasted = "the spec, as the customer sent it:\n" + "\n".join(
        f"{i}. exports run nightly at 02:{i % 60:02d} UTC and keep 30 days" for i in range(200))
    assert len(pasted) > 8000
    es = _ingest(brain, tmp_path, _session([_said("user", pasted)]))
    assert _one(es, "the spec, as the customer sent it").text == pasted
