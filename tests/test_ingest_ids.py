"""Entry ids: stable across re-ingest, distinct for distinct messages."""

from __future__ import annotations

import json

from conftest import CLAUDE, git, head_count

from pamd.core.entry import entry_id
from pamd.core.fmt import parse_doc


def entries(root):
    out = []
    for p in sorted((root / "memory" / "L0").glob("*.md")):
        out += parse_doc(p.read_text(), str(p.relative_to(root))).entries
    return out


def ledger(root) -> set[str]:
    return {i for p in (root / "memory" / "ledger").glob("*.txt") for i in p.read_text().split()}


def test_identical_messages_in_one_second_stay_apart(brain, tmp_path):
    # Claude Code's parallel tool calls can fail with the same error in the same second.
    error = {"type": "tool_result", "tool_use_id": "t", "content": "rejected", "is_error": True}
    lines = [{"type": "user", "sessionId": "s", "timestamp": f"2026-11-29T10:00:01.{i}00Z",
              "message": {"role": "user", "content": [{**error, "tool_use_id": f"t{i}"}]}} for i in range(4)]
    f = tmp_path / "par.jsonl"
    f.write_text("".join(json.dumps(x) + "\n" for x in lines))
    code, out, err = brain("ingest", str(f))
    assert code == 0, err
    assert "4 new entries, 0 already known" in out
    es = entries(brain.cwd)
    assert len(es) == 4 and len({e.id for e in es}) == 4
    # the first keeps the id it always had: brains that hold it do not take it again
    assert entry_id("e", "s", "2026-11-29T10:00:01Z", "tool", "[tool error] rejected") in {e.id for e in es}
    n = head_count(brain.cwd)
    code, out, _ = brain("ingest", str(f))
    assert code == 0 and "nothing new: 4" in out
    assert head_count(brain.cwd) == n


def test_a_real_session_with_two_identical_rejections(brain):
    code, out, err = brain("ingest", str(CLAUDE / "short.jsonl"))
    assert code == 0, err
    assert "7 new entries, 0 already known" in out
    assert "Skipped 1 already ingested" not in git(brain.cwd, "log", "-1", "--format=%B")
    assert "nothing new: 7" in brain("ingest", str(CLAUDE / "short.jsonl"))[1]


def test_untimed_stdin_is_said_now_timed_stdin_is_idempotent(brain):
    untimed = b'{"role": "user", "text": "water the plants"}\n'
    assert brain.proc("ingest", "-", input=untimed, now="2026-12-01T09:00:00Z").returncode == 0
    r = brain.proc("ingest", "-", input=untimed, now="2026-12-01T09:00:00Z")
    assert r.returncode == 0 and b"nothing new" in r.stdout  # the same run again
    r = brain.proc("ingest", "-", input=untimed, now="2026-12-08T09:00:00Z")
    assert r.returncode == 0 and b"1 new entries" in r.stdout  # said again a week later
    assert len(entries(brain.cwd)) == 2
    timed = b'{"ts": "2026-12-01T08:00:00Z", "role": "user", "text": "the plants"}\n'
    assert brain.proc("ingest", "-", input=timed, now="2026-12-01T09:00:00Z").returncode == 0
    r = brain.proc("ingest", "-", input=timed, now="2026-12-08T09:00:00Z")
    assert r.returncode == 0 and b"nothing new" in r.stdout


def test_a_file_named_stdin_is_a_file(brain, tmp_path):
    (brain.cwd / "stdin").write_text('{"role": "user", "text": "from a file"}\n')
    assert brain("ingest", "stdin", now="2026-12-01T09:00:00Z")[0] == 0
    code, out, _ = brain("ingest", "stdin", now="2026-12-08T09:00:00Z")
    assert code == 0 and "nothing new" in out
