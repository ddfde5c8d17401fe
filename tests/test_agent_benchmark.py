"""The agent-memory benchmark's yardstick: its hook schedule, checks and grader (benchmarks/agent_memory.py)."""

from __future__ import annotations

import importlib.util
import json
import sys
from collections import Counter
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[1] / "benchmarks"


@pytest.fixture(scope="module")
def am():
    sys.path.insert(0, str(BENCH))
    try:
        spec = importlib.util.spec_from_file_location("agent_memory", BENCH / "agent_memory.py")
        mod = importlib.util.module_from_spec(spec)
        sys.modules["agent_memory"] = mod  # its dataclass looks its module up while it is made
        spec.loader.exec_module(mod)
        yield mod
    finally:
        sys.modules.pop("agent_memory", None)
        sys.path.remove(str(BENCH))


def test_questions_cover_every_kind_and_their_gold_holds_their_keys(am):
    qs = json.loads((BENCH / "agent_questions.json").read_text())["questions"]
    kinds = Counter(q["kind"] for q in qs)
    assert len(qs) >= 36
    for kind, least in {"decision": 6, "error_fix": 6, "fact": 8, "open": 5, "user": 5, "done": 6}.items():
        assert kinds[kind] >= least, kind
    assert len({q["id"] for q in qs}) == len(qs)
    for q in qs:
        assert 1 <= len(q["keys"]) <= 4, q["id"]
        assert q["source"] and all(s["file"].endswith(".jsonl") and s["lines"] for s in q["source"]), q["id"]
        assert am.covered(q, q["gold"]), q["id"]


def test_keys_match_whole_words_and_stems(am):
    assert not am.has_key("token", "1,678 of 500,000 tokens")
    assert am.has_key("token", "a one-time Token with a TTL")
    assert am.has_key("truncat*", "the silent 5-line truncation")
    assert not am.has_key("truncat*", "untruncated")
    assert am.has_key("spotter-a0y", "spotter-a0y.3 is ready")
    assert am.has_key(".mcp.json", "left .mcp.json modified")


def test_chatter_lines_are_found_line_by_line(am):
    text = "\n".join([
        "- ReviewTokenStore: one-time tokens, TTL 120 s",
        "- Let me check the config.",
        "- Perfect! All green.",
        "- Теперь запущу тесты",
        "- Great work on the migration",
        "- lazy_html added as a test dependency",
    ])
    assert am.chatter_lines(text) == ["- Let me check the config.", "- Perfect! All green.",
                                      "- Теперь запущу тесты", "- Great work on the migration"]


def test_a_lesson_is_concrete_only_with_an_error_and_a_fix(am):
    concrete = [
        "`git push` fails with 'fatal: The current branch has no upstream branch': use `git push -u origin BRANCH`",
        "Dialyzer `{:ok, _} can never match`: current_span_ctx() returns the record;"
        " fixed with :otel_span.hex_trace_id/1",
        "LiveView test RuntimeError \"no :secret_key_base configuration found\":"
        " added secret_key_base to config/test.exs",
    ]
    vague = [
        "before the pre-commit hook, check the hook won't let me commit, I have two options (lesson of 2026-02-12)",
        "before exit code 2 shows stderr to the user, check they run on every session",  # no fix
        "Tests failed; fixed it.",
        "Always run the tests before committing",
    ]
    assert [am.concrete_lesson(x) for x in concrete] == [True] * 3
    assert [am.concrete_lesson(x) for x in vague] == [False] * 4


def test_dna_lessons_are_read_from_the_lists_and_the_body(am):
    dna = ("---\nkind: dna\nreflexes:\n- text: 'KeyError: x -> use `d.get(x)`'\n  from: [e-1]\n"
           "learned_behaviors: [plain words]\npreferences: [terse]\n---\n# DNA\n<!--\n- not this\n-->\n- body lesson\n")
    assert am.dna_lessons(dna) == ["KeyError: x -> use `d.get(x)`", "plain words", "body lesson"]


def _jsonl(path: Path, records: list[dict]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in records))


def test_the_hook_schedule_follows_the_transcripts_own_events(am, tmp_path, monkeypatch):
    sid = "s1"
    monkeypatch.setattr(am, "SESSIONS", (sid,))
    t = "2026-02-11T10:{:02d}:00Z".format
    _jsonl(tmp_path / f"{sid}.jsonl", [
        {"type": "user", "timestamp": t(0), "message": {"role": "user", "content": "go"}},
        {"type": "system", "subtype": "compact_boundary", "timestamp": t(10)},
        {"type": "assistant", "timestamp": t(20), "message": {"role": "assistant", "content": "done"}},
        {"type": "system", "subtype": "stop_hook_summary", "timestamp": t(21)},
        {"type": "user", "timestamp": t(40), "message": {"role": "user", "content": "push?"}},
    ])
    _jsonl(tmp_path / sid / "subagents" / "agent-a1.jsonl", [{"type": "user", "timestamp": t(15)}])
    _jsonl(tmp_path / sid / "subagents" / "agent-acompact-9.jsonl", [{"type": "user", "timestamp": t(10)}])
    feeds = am.schedule(tmp_path)
    got = [(f.event, f.ts.minute, [(p.name, n) for p, n in f.files]) for f in feeds]
    assert got == [
        ("PreCompact", 10, [(f"{sid}.jsonl", 1)]),  # what was written before the compaction
        ("SubagentStop", 15, [(f"{sid}.jsonl", 2), ("agent-a1.jsonl", 1)]),
        ("Stop", 21, [(f"{sid}.jsonl", 4)]),
        ("SessionEnd", 40, [(f"{sid}.jsonl", 5)]),
    ]


def test_grading_counts_keys_and_honours_a_graders_override(am, tmp_path, capsys):
    qs = json.loads((BENCH / "agent_questions.json").read_text())["questions"]
    two = [q for q in qs if len(q["keys"]) >= 2][:2]
    answers = [{"id": two[0]["id"], "answer": two[0]["keys"][0]},  # partial
               {"id": two[1]["id"], "answer": "unknown", "grade": "correct", "note": "said otherwise"}]
    path = tmp_path / "answers.json"
    path.write_text(json.dumps(answers))
    assert am.grade(path) == 0
    out = capsys.readouterr().out
    assert f"{two[0]['id']:<5} {two[0]['kind']:<10} partial" in out
    assert f"{two[1]['id']:<5} {two[1]['kind']:<10} correct * 0/" in out
    assert f"1.5/{len(qs)}" in out
