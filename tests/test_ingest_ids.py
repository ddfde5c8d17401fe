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
    assert r.returncode == 0 and b"1 new entry," in r.stdout  # said again a week later
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


def test_editing_a_daily_note_adds_only_the_new_items(brain, tmp_path):
    note = tmp_path / "2025-01-01.md"
    note.write_text("- alpha\n- beta\n- 09:30 gamma\n")
    assert brain("ingest", str(note))[0] == 0
    note.write_text("- inserted first\n- alpha\n- beta\n- 09:30 gamma\n- beta\n")
    code, out, err = brain("ingest", str(note))
    assert code == 0, err
    assert "2 new entries, 3 already known" in out  # the new item and the second "beta"
    texts = sorted(e.text for e in entries(brain.cwd))
    assert texts == ["alpha", "beta", "beta", "gamma", "inserted first"]
    note.write_text("- beta\n- 09:30 gamma\n- alpha\n- inserted first\n- beta\n")  # reordered
    assert "nothing new" in brain("ingest", str(note))[1]
    # untimed items still sit at noon, in the note's order
    first = next(e for e in entries(brain.cwd) if e.text == "alpha")
    assert first.ts.isoformat() == "2025-01-01T12:00:00+00:00"


def test_editing_an_undated_note_adds_only_the_new_items(brain, tmp_path):
    note = tmp_path / "notes.md"
    note.write_text("- one\n- two\n")
    assert brain("ingest", str(note))[0] == 0
    note.write_text("- zero\n- one\n- two\n")
    code, out, _ = brain("ingest", str(note))
    assert code == 0 and "1 new entry, 2 already known" in out
    assert len(entries(brain.cwd)) == 3


def _as_before(brain, note_ids: dict[str, str]) -> None:
    """Rewrite the brain as the old ingest wrote it: note items under their positional ids.

    The ingest commit itself is rewritten (amended), as an older pamd would have made
    it: a later commit that swapped the ids would be a hand edit that lost the newer
    ids from the tree, which `pamd fsck` rightly reports."""
    for p in [*(brain.cwd / "memory" / "L0").glob("*.md"), *(brain.cwd / "memory" / "ledger").glob("*.txt")]:
        text = p.read_text()
        for new, old in note_ids.items():
            text = text.replace(new, old)
        p.write_text(text)
    git(brain.cwd, "commit", "-q", "-a", "--amend", "--no-edit")


def test_a_brain_from_before_takes_no_copies_of_note_items(brain, tmp_path):
    note = tmp_path / "2025-01-01.md"
    note.write_text("- alpha\n- beta\n")
    assert brain("ingest", str(note))[0] == 0
    by_text = {e.text: e.id for e in entries(brain.cwd)}
    # the old ids: noon plus the item's place in the note, in seconds
    old = {by_text["alpha"]: entry_id("e", "daily-2025-01-01", "2025-01-01T12:00:00Z", "note", "alpha"),
           by_text["beta"]: entry_id("e", "daily-2025-01-01", "2025-01-01T12:00:01Z", "note", "beta")}
    _as_before(brain, old)
    assert "nothing new: 2" in brain("ingest", str(note))[1]
    note.write_text("- alpha\n- beta\n- gamma\n")  # appended: the old items keep their places
    code, out, _ = brain("ingest", str(note))
    assert code == 0 and "1 new entry, 2 already known" in out
    assert set(old) <= ledger(brain.cwd)  # their new ids joined the ledger with that commit
    note.write_text("- first\n- alpha\n- beta\n- gamma\n")  # now their places move
    code, out, _ = brain("ingest", str(note))
    assert code == 0 and "1 new entry, 3 already known" in out
    assert len(entries(brain.cwd)) == 4
    assert brain("fsck", "--skip", "index")[0] == 0


def test_defrag_folds_a_note_a_brain_from_before_ingested(brain):
    note = brain.cwd / "memory" / "2026-11-29.md"
    note.parent.mkdir(exist_ok=True)
    note.write_text("- alpha\n- beta\n")
    git(brain.cwd, "add", "memory/2026-11-29.md")
    git(brain.cwd, "commit", "-qm", "a note")
    assert brain("ingest", "memory/2026-11-29.md", now="2026-11-29T20:00:00Z")[0] == 0
    by_text = {e.text: e.id for e in entries(brain.cwd)}
    _as_before(brain, {by_text["alpha"]: entry_id("e", "daily-2026-11-29", "2026-11-29T12:00:00Z", "note", "alpha"),
                       by_text["beta"]: entry_id("e", "daily-2026-11-29", "2026-11-29T12:00:01Z", "note", "beta")})
    code, _, err = brain("defrag", now="2026-11-30T03:00:00Z")
    assert code == 0, err
    assert "(0 new L0 entries)" in git(brain.cwd, "log", "-1", "--format=%B")


def test_a_brain_from_before_takes_no_copies_of_non_latin_sessions_and_roles(brain, tmp_path):
    """Session and role names used to lose their non-ASCII letters ("проект" -> "-"); they
    keep them now, which changes those entries' ids. A brain holding the old ids takes
    no second copy when the same transcript is ingested again."""
    f = tmp_path / "s.jsonl"
    f.write_text("".join(json.dumps(r) + "\n" for r in [
        {"ts": "2025-01-01T10:00:00Z", "role": "Анна", "text": "Деплой в пятницу.", "session": "проект"},
        {"ts": "2025-01-01T10:01:00Z", "role": "user", "text": "ok, friday", "session": "проект"},
        {"ts": "2025-01-01T10:02:00Z", "role": "user", "text": "plain ascii", "session": "alpha"}]))
    assert brain("ingest", str(f))[0] == 0
    by_text = {e.text: e for e in entries(brain.cwd)}
    assert by_text["Деплой в пятницу."].session == "проект" and by_text["Деплой в пятницу."].role == "Анна"
    old = {by_text["Деплой в пятницу."].id: entry_id("e", "-", "2025-01-01T10:00:00Z", "-", "Деплой в пятницу."),
           by_text["ok, friday"].id: entry_id("e", "-", "2025-01-01T10:01:00Z", "user", "ok, friday")}
    _as_before(brain, old)
    code, out, _ = brain("ingest", str(f))
    assert code == 0 and "nothing new: 3" in out, out
    assert len(entries(brain.cwd)) == 3


def test_the_same_timed_transcript_under_another_name_adds_nothing(brain, tmp_path):
    """pamd and OpenAI records without a session take the input's name as their session,
    which is part of the id: a copy, a renamed export or stdin was new. The ledger keeps a
    second id without that session, so the same messages are known under any name."""
    lines = [{"ts": "2026-01-01T10:00:00Z", "role": "user", "text": "We decided to use Redis 7"},
             {"ts": "2026-01-01T10:00:01Z", "role": "assistant", "text": "Noted."},
             {"ts": "2026-01-01T10:00:01Z", "role": "assistant", "text": "Noted."}]
    data = "".join(json.dumps(x) + "\n" for x in lines)
    (tmp_path / "a.jsonl").write_text(data)
    (tmp_path / "a-copy.jsonl").write_text(data)
    chat = {"messages": [{"role": x["role"], "content": x["text"], "timestamp": x["ts"]} for x in lines]}
    (tmp_path / "chat (1).json").write_text(json.dumps(chat))
    code, out, err = brain("ingest", str(tmp_path / "a.jsonl"))
    assert code == 0 and "3 new entries" in out, err
    n = head_count(brain.cwd)
    assert "nothing new: 3" in brain("ingest", str(tmp_path / "a-copy.jsonl"))[1]
    assert "nothing new: 3" in brain("ingest", str(tmp_path / "chat (1).json"))[1]
    r = brain.proc("ingest", "-", input=data.encode())
    assert r.returncode == 0 and b"nothing new: 3" in r.stdout, r.stderr
    assert head_count(brain.cwd) == n and len(entries(brain.cwd)) == 3
    # a message of its own session, and another second, are still their own messages
    more = [{**lines[0], "session": "other"}, {**lines[1], "ts": "2026-01-01T10:00:02Z"}]
    (tmp_path / "b.jsonl").write_text("".join(json.dumps(x) + "\n" for x in more))
    assert "2 new entries" in brain("ingest", str(tmp_path / "b.jsonl"))[1]
    assert brain("compact", now="2026-02-01T10:00:00Z")[0] == 0
    assert brain("fsck")[0] == 0
    assert "nothing new" in brain("ingest", str(tmp_path / "a-copy.jsonl"))[1]


def test_two_transcripts_saying_the_same_words_in_the_same_second_keep_both(brain, tmp_path):
    """The session-free id held only time, role and text, so another agent's "Done." of the
    same second was taken for a copy and dropped. It names the message before it too now:
    only a copy (or a copy that has grown since) is known by it."""
    def write(name, lines):
        (tmp_path / name).write_text("".join(json.dumps(x) + "\n" for x in lines))
        return str(tmp_path / name)
    a = [{"ts": "2026-11-10T10:00:00Z", "role": "user", "text": "agent A: run the migration"},
         {"ts": "2026-11-10T10:00:05Z", "role": "assistant", "text": "Done."}]
    b = [{"ts": "2026-11-10T10:00:01Z", "role": "user", "text": "agent B: rotate the logs"},
         {"ts": "2026-11-10T10:00:05Z", "role": "assistant", "text": "Done."}]
    code, out, err = brain("ingest", write("agent-a.jsonl", a), write("agent-b.jsonl", b))
    assert code == 0 and "4 new entries, 0 already known" in out, (out, err)
    assert sorted(e.session for e in entries(brain.cwd)) == ["agent-a", "agent-a", "agent-b", "agent-b"]
    # in two runs too
    assert "2 new entries" in brain("ingest", write("agent-c.jsonl", [{**a[0], "text": "agent C"}, a[1]]))[1]
    # a copy, a renamed file and stdin add nothing; a copy with more at the end adds only that
    assert "nothing new: 2" in brain("ingest", write("agent-a (1).jsonl", a))[1]
    assert "nothing new: 2" in brain("ingest", write("renamed.jsonl", b))[1]
    r = brain.proc("ingest", "-", input=(tmp_path / "agent-a.jsonl").read_bytes())
    assert r.returncode == 0 and b"nothing new: 2" in r.stdout, r.stderr
    grown = [*a, {"ts": "2026-11-10T10:00:09Z", "role": "user", "text": "thanks"}, b[1]]
    assert "2 new entries, 2 already known" in brain("ingest", write("agent-a-later.jsonl", grown))[1]
    assert len(entries(brain.cwd)) == 8
    assert brain("fsck")[0] == 0


def test_untimed_stdin_says_on_stderr_that_it_took_the_runs_time(brain, tmp_path):
    chat = json.dumps({"messages": [{"role": "user", "content": "Deploy failed with exit code 1"},
                                    {"role": "assistant", "content": "Looking."}]}).encode()
    r = brain.proc("ingest", "-", input=chat)
    assert r.returncode == 0 and b"2 new entries" in r.stdout
    note = r.stderr.decode().strip()
    assert note.startswith("pamd: note: 2 messages from stdin had no time") and "\n" not in note
    (tmp_path / "chat.json").write_bytes(chat)
    r = brain.proc("ingest", str(tmp_path / "chat.json"))
    assert r.returncode == 0 and r.stderr == b""  # a file is anchored by its place: no note
    timed = b'{"ts": "2026-12-01T08:00:00Z", "role": "user", "text": "the plants"}\n'
    r = brain.proc("ingest", "-", input=timed)
    assert r.returncode == 0 and r.stderr == b""
    r = brain.proc("ingest", "-", input=chat, now="2026-12-01T09:00:00Z")  # said again: stored again, and said so
    assert b"2 new entries" in r.stdout and b"pamd: note: 2 messages" in r.stderr
    r = brain.proc("ingest", "--help")
    assert b"cat chat.json" not in r.stdout and b"new each run" in r.stdout
