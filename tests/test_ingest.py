from __future__ import annotations

import hashlib
import json
import shutil
import string
from pathlib import Path

import pytest
from conftest import CLAUDE, DATA, REPO, git, head_count
from hypothesis import given, settings
from hypothesis import strategies as st
from test_redact import SECRETS

from pamd.core.fmt import parse_doc


def entries(root):
    out = []
    for p in sorted((root / "memory" / "L0").glob("*.md")):
        out += parse_doc(p.read_text(), str(p.relative_to(root))).entries
    return out


def test_ingest_pamd_jsonl_tags_scores_and_commits_once(brain):
    before = head_count(brain.cwd)
    code, out, err = brain("ingest", str(DATA / "pamd.jsonl"))
    assert code == 0, err
    assert head_count(brain.cwd) == before + 1
    es = entries(brain.cwd)
    assert len(es) == 6
    assert all(0 <= e.importance <= 1 and e.type for e in es)
    assert es[0].session == "s1" and es[0].role == "user"
    msg = git(brain.cwd, "log", "-1", "--format=%B")
    assert msg.startswith("pamd ingest: 6 entries from pamd.jsonl")
    assert "Pamd-Entries-Added: 6" in msg and "Tags:" in msg
    assert git(brain.cwd, "status", "--porcelain") == ""


def test_reingest_adds_nothing_and_makes_no_commit(brain):
    brain("ingest", str(DATA / "pamd.jsonl"))
    n = head_count(brain.cwd)
    code, out, _ = brain("ingest", str(DATA / "pamd.jsonl"))
    assert code == 0 and "nothing new" in out
    assert head_count(brain.cwd) == n


def test_one_entry_is_one_entry_in_messages_and_the_commit_subject(brain):
    from pamd.core.words import plural

    assert [plural(1, "entry"), plural(0, "entry"), plural(2, "file"), plural(3, "day"),
            plural(1, "new entry", "new entries"), plural(2, "new entry", "new entries")] == [
        "1 entry", "0 entries", "2 files", "3 days", "1 new entry", "2 new entries"]
    r = brain.proc("ingest", "-", input=b'{"ts": "2026-11-30T09:00:00Z", "role": "user", "text": "hi there"}\n')
    assert r.returncode == 0 and r.stdout.decode().startswith("ingested 1 new entry, 0 already known"), r.stderr
    assert git(brain.cwd, "log", "-1", "--format=%s").strip() == "pamd ingest: 1 entry from stdin"
    r = brain.proc("ingest", "-", input=b'{"ts": "2026-11-30T09:00:00Z", "role": "user", "text": "hi there"}\n')
    assert r.stdout == b"nothing new: 1 entry already in the brain\n"
    (brain.cwd / "DNA.md").write_text("---\nreflexes: x\n---\n")
    code, out, _ = brain("fsck", "--skip", "index")
    assert code == 1 and out.splitlines()[-1].startswith("1 problem; checked: ")


@pytest.mark.parametrize("name,count,roles", [
    ("openai.json", 4, {"system", "user", "assistant", "tool"}),
    ("openai.jsonl", 2, {"user", "assistant"}),
    ("2026-11-28.md", 4, {"note"}),
    ("claude-mini.jsonl", 5, {"user", "assistant", "tool", "system"}),
])
def test_each_format_is_detected_and_ingested(brain, name, count, roles):
    code, out, err = brain("ingest", str(DATA / name))
    assert code == 0, err
    es = entries(brain.cwd)
    assert len(es) == count
    assert {e.role for e in es} == roles
    assert not any("secret scratchpad" in e.text for e in es)  # thinking is not remembered
    assert not any("session is being continued" in e.text or "Your task is to create" in e.text for e in es)


def test_daily_note_times_come_from_the_note(brain):
    brain("ingest", str(DATA / "2026-11-28.md"))
    es = entries(brain.cwd)
    first = next(e for e in es if "Anna" in e.text)
    assert first.ts.isoformat() == "2026-11-28T09:15:00+00:00"
    assert first.text == "Standup: Anna owns the release checklist."
    assert any("spans two lines" in e.text for e in es)


def test_real_claude_code_sessions_with_subagents(brain):
    files = [str(CLAUDE / "short.jsonl"), str(CLAUDE / "subagent.jsonl")]
    code, out, err = brain("ingest", *files)
    assert code == 0, err
    es = entries(brain.cwd)
    assert len(es) > 40
    assert {"user", "assistant", "tool"} <= {e.role for e in es}
    # the pamd repo's format check passes on what ingest wrote
    assert brain("check")[0] == 0


def test_stdin_and_forced_format(brain):
    data = (DATA / "openai.jsonl").read_bytes()
    r = brain.proc("ingest", "-", "--format", "openai", input=data)
    assert r.returncode == 0, r.stderr
    assert len(entries(brain.cwd)) == 2


@pytest.mark.parametrize("content,needle", [
    (b'{"ts": "2026-11-30T09:00:00Z", "role": "user", "text": "ok"}\n{not json\n', "malformed JSON"),
    (b"\x00\x01\x02binary\x00", "binary"),
    (b"\xff\xfe\xfa not utf8", "UTF-8"),
    (b"just some words\n", "unknown format"),
    (b'{"ts": "yesterday-ish", "role": "user", "text": "x"}\n', "bad timestamp"),
    # JSON that parses and Python refuses: an integer past its digit limit, in JSONL and a JSON file
    (b'{"ts": "2026-11-30T09:00:00Z", "role": "user", "text": "x", "n": ' + b"9" * 5000 + b"}\n", "JSON"),
    (b'[{"ts": "2026-11-30T09:00:00Z", "role": "user", "text": "x", "n": ' + b"9" * 5000 + b"}]", "unreadable JSON"),
])
def test_bad_input_is_one_line_and_writes_nothing(brain, tmp_path, content, needle):
    bad = tmp_path / "bad.jsonl"
    bad.write_bytes(content)
    n = head_count(brain.cwd)
    r = brain.proc("ingest", str(bad))
    err = r.stderr.decode()
    assert r.returncode == 1
    assert err.startswith("pamd: error:") and needle in err and err.count("\n") == 1
    assert head_count(brain.cwd) == n
    assert git(brain.cwd, "status", "--porcelain") == ""


def test_a_ten_megabyte_message_is_refused(brain, tmp_path):
    big = tmp_path / "big.jsonl"
    big.write_text(json.dumps({"ts": "2026-11-30T09:00:00Z", "role": "user", "text": "x" * (10 << 20)}))
    code, _, err = brain("ingest", str(big))
    assert code == 1 and "larger than 1 MiB" in err
    assert not (brain.cwd / "memory" / "L0").exists()


def test_a_claude_code_session_with_a_paste_over_one_mebibyte_is_ingested_cut(brain, tmp_path):
    """Nobody can split a session Claude Code writes: refusing one huge paste stopped every
    later ingest of that session. It is cut to fit, as long tool output is, and said so."""
    paste = "Deploy failed, the log:\n" + "ошибка " * 200_000  # 2.6 MB of two-byte letters
    recs = [{"type": "user", "sessionId": "s-big", "timestamp": "2026-11-30T10:00:00Z",
             "message": {"role": "user", "content": paste}},
            {"type": "queue-operation", "operation": "enqueue", "sessionId": "s-big",
             "timestamp": "2026-11-30T10:00:01Z", "content": "and this " + "x" * (2 << 20)},
            {"type": "assistant", "sessionId": "s-big", "timestamp": "2026-11-30T10:00:05Z",
             "message": {"role": "assistant", "content": [{"type": "text", "text": "The deploy failed on a lock."}]}}]
    f = tmp_path / "s.jsonl"
    f.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in recs))
    code, out, err = brain("ingest", str(f))
    assert code == 0, err
    es = entries(brain.cwd)
    assert [e.text[:23] for e in es] == ["Deploy failed, the log:", "and this " + "x" * 14, "The deploy failed on a "]
    for e in es[:2]:
        assert len(e.text.encode()) <= 1 << 20
        assert e.text.endswith(" more characters in the source transcript]")
    assert brain("ingest", str(f))[1].startswith("nothing new")


def test_missing_file_and_a_bad_file_among_good_ones(brain, tmp_path):
    code, _, err = brain("ingest", str(tmp_path / "missing.jsonl"))
    assert code == 1 and "no such file" in err
    code, _, err = brain("ingest", str(tmp_path))  # a directory is named as one, not as missing
    assert code == 1
    assert err == f"pamd: error: {tmp_path} is a directory (name its transcripts, e.g. {tmp_path}/*.jsonl)\n"
    bad = tmp_path / "bad.jsonl"
    bad.write_text("{oops\n")
    code, _, err = brain("ingest", str(DATA / "pamd.jsonl"), str(bad))
    assert code == 1
    assert not (brain.cwd / "memory").exists()  # the good file was not half-ingested


def test_uncommitted_edit_to_a_file_ingest_would_touch_is_refused(brain):
    brain("ingest", str(DATA / "pamd.jsonl"))
    l0 = next((brain.cwd / "memory" / "L0").glob("*.md"))
    l0.write_text(l0.read_text() + "\n")  # a person's uncommitted edit
    more = brain.cwd.parent / "more.jsonl"
    more.write_text('{"ts": "2026-11-30T11:00:00Z", "role": "user", "text": "another thing"}\n')
    code, _, err = brain("ingest", str(more))
    assert code == 1 and "uncommitted edits" in err
    assert l0.read_text().endswith("\n\n")  # the person's edit is still there


def test_other_uncommitted_edits_are_not_swept_into_the_commit(brain):
    (brain.cwd / "MEMORY.md").write_text((brain.cwd / "MEMORY.md").read_text() + "my note\n")
    (brain.cwd / "scratch.txt").write_text("untracked\n")
    assert brain("ingest", str(DATA / "pamd.jsonl"))[0] == 0
    changed = git(brain.cwd, "show", "--name-only", "--format=", "HEAD").split()
    assert all(p.startswith("memory/") for p in changed)
    status = git(brain.cwd, "status", "--porcelain")
    assert " M MEMORY.md" in status and "?? scratch.txt" in status


def test_remember_one_entry(brain):
    code, out, err = brain("remember", "We decided to ship v2 on Friday", "--type", "decision")
    assert code == 0, err
    es = entries(brain.cwd)
    assert len(es) == 1 and es[0].type == "decision"
    assert "pamd remember" in git(brain.cwd, "log", "-1", "--format=%s")
    assert brain("remember", "   ")[0] == 1


def test_remember_importance_minus_zero_is_written_as_zero(brain):
    """`--importance -0` passed the range check and was written as importance=-0.00."""
    assert brain("remember", "a note that matters little", "--importance", "-0")[0] == 0
    text = next((brain.cwd / "memory" / "L0").glob("*.md")).read_text()
    assert "importance=0.00 " in text and "-0.00" not in text


def test_now_and_pamd_now(brain, monkeypatch):
    monkeypatch.setenv("PAMD_NOW", "2030-01-02T03:04:05Z")
    brain("remember", "time travel", now=None)
    assert entries(brain.cwd)[0].ts.year == 2030
    assert brain("remember", "x", now="not-a-time")[0] == 1


def test_check_reports_file_and_line(brain):
    brain("ingest", str(DATA / "pamd.jsonl"))
    l0 = next((brain.cwd / "memory" / "L0").glob("*.md"))
    lines = l0.read_text().split("\n")
    idx = next(i for i, ln in enumerate(lines) if ln.startswith("type="))
    lines[idx] = lines[idx].replace("type=", "kind=")
    l0.write_text("\n".join(lines))
    code, out, _ = brain("check")
    assert code == 1
    assert f"{l0.relative_to(brain.cwd)}:{idx + 1}:" in out


def test_check_catches_broken_dna_frontmatter(brain):
    (brain.cwd / "DNA.md").write_text("---\nreflexes: [unclosed\n---\n")
    code, out, _ = brain("check")
    assert code == 1 and out.startswith("DNA.md:")


def test_ingest_copies_nothing_outside_the_brain(brain, tmp_path):
    evil = tmp_path / "..%2f..%2fevil.jsonl"
    shutil.copy(DATA / "pamd.jsonl", evil)
    assert brain("ingest", str(evil))[0] == 0
    assert not (tmp_path / "evil").exists()


def test_secrets_are_redacted_before_anything_is_written(brain, tmp_path):
    aws = "AKIA" + "Q4XZ7RT2MB6KPL3N"  # split so this file is no secret itself
    gh = "ghp_" + "x7Gk2mQp9LrT4vW8yB1nC5dF3hJ6sA0eZ2uK"
    f = tmp_path / "leak.jsonl"
    f.write_text(json.dumps({"ts": "2026-11-30T09:00:00Z", "role": "user",
                             "text": f"deploy with {aws} and push with {gh}"}) + "\n")
    assert brain("ingest", str(f))[0] == 0
    history = git(brain.cwd, "log", "-p", "--all")
    assert aws not in history and gh not in history
    text = entries(brain.cwd)[0].text
    assert "[REDACTED:" in text and "deploy with" in text
    assert "Redacted:" in git(brain.cwd, "log", "-1", "--format=%B")


def _gen(n: int, seed: str, alphabet: str = string.ascii_letters + string.digits) -> str:
    """Secret-shaped text built at run time, so this file holds no secret itself."""
    digest = hashlib.sha256(seed.encode()).digest() * 8
    return "".join(alphabet[b % len(alphabet)] for b in digest[:n])


def _pem(seed: str) -> str:
    lines = [_gen(64, f"{seed}{i}", string.ascii_letters + string.digits + "+/") for i in range(8)]
    return "-----BEGIN RSA PRIVATE KEY-----\n" + "\n".join(lines) + "\n-----END RSA PRIVATE KEY-----\n"


def _claude_code(blocks: list[tuple[str, dict]]) -> str:
    """A Claude Code session JSONL: one record per (type, content block)."""
    return "".join(json.dumps({
        "parentUuid": None, "isSidechain": False, "type": kind, "sessionId": "cc-cut",
        "uuid": f"u{i}", "timestamp": f"2026-11-29T10:00:{i:02d}.000Z",
        "message": {"role": kind, "content": [block]}}) + "\n" for i, (kind, block) in enumerate(blocks))


def _result(body: str, n: int) -> tuple[str, dict]:
    return "user", {"tool_use_id": f"t{n}", "type": "tool_result", "content": body}


def test_a_cut_tool_message_keeps_no_part_of_a_secret(brain, tmp_path):
    # Tool output is cut at 2,000 characters (tool calls at 600) before it is
    # written; a secret the cut would split is cut off whole, so no prefix of
    # it is left for redaction to miss.
    gh = "ghp_" + _gen(36, "gh")
    aws = "AKIA" + _gen(16, "aws", string.ascii_uppercase + string.digits)
    pw, url_pw = _gen(14, "pw"), _gen(14, "url")
    pem, heredoc_pem = _pem("write"), _pem("bash")
    head = len("[tool result] ")
    plain = "z" * 2500  # no secret: cut exactly at the limit, as before
    bodies = [
        "y" * 1951 + " " + gh,  # the cut falls inside the token
        "y" * (2000 - head - 10) + " " + aws,
        # Cut right after the value: without its closing quote (or `@host`), the
        # rest would no longer look like a secret at all.
        "y" * (2000 - head - len('password = "') - len(pw) - 1) + ' password = "' + pw + '"',
        "y" * (2000 - head - len("postgres://app:") - len(url_pw) - 1) + " postgres://app:" + url_pw
        + "@db:5432/prod",
        plain,
    ]
    blocks = [_result(b, i) for i, b in enumerate(bodies)] + [
        ("assistant", {"type": "tool_use", "id": "w", "name": "Write",
                       "input": {"file_path": "/srv/app/deploy_key", "content": pem}}),
        ("assistant", {"type": "tool_use", "id": "b", "name": "Bash",
                       "input": {"command": f"cat > key.pem <<'EOF'\n{heredoc_pem}EOF"}}),
    ]
    f = tmp_path / "cut.jsonl"
    f.write_text(_claude_code(blocks))
    code, _, err = brain("ingest", str(f))
    assert code == 0, err

    history = git(brain.cwd, "log", "-p", "--all")
    tree = "".join(p.read_text() for p in brain.cwd.rglob("*") if p.is_file() and ".git" not in p.parts)
    fragments = [gh[:12], aws[:10], pw[:6], url_pw[:6]]
    fragments += [ln[:16] for key in (pem, heredoc_pem) for ln in key.split("\n")[1:-2]]
    for frag in fragments:
        assert frag not in history and frag not in tree, frag

    es = sorted(entries(brain.cwd), key=lambda e: e.ts)
    note = "\n…[{} more characters in the source transcript]"
    cut = head + 1951 + 1  # just before the token (the blank before it goes as a trailing blank)
    assert es[0].text == "[tool result] " + "y" * 1951 + note.format(head + len(bodies[0]) - cut)
    assert es[2].text.endswith(' password = "' + note.format(len(pw) + 1))
    assert es[4].text == "[tool result] " + plain[: 2000 - head] + note.format(head + 500)
    # A small file written is kept whole: its key goes whole to redaction.
    assert es[5].text.startswith('[tool Write] {"file_path": "/srv/app/deploy_key", "content": "[REDACTED:private-key]')


def test_a_secret_in_a_tool_calls_escaped_json_is_redacted_in_l0(brain, tmp_path):
    # A call's input is stored as JSON, so `API_KEY="…"` is written
    # `API_KEY=\"…\"`; the key = value rules stopped at the backslash and kept the secret.
    key, pw, token = _gen(16, "api"), _gen(14, "pw"), _gen(20, "tok")
    commands = [f'cd /srv/app && export API_KEY="{key}" && ./deploy.sh staging 2>&1 | tail -20',
                f'mysql -u root --password="{pw}" -e "select 1"',
                f'TOKEN="{token}" npm run deploy',
                f'echo \'{{"secret_key": "{key}"}}\' > conf.json']
    blocks = [("assistant", {"type": "tool_use", "id": f"t{i}", "name": "Bash",
                             "input": {"command": c, "description": "Run it"}})
              for i, c in enumerate(commands)]
    f = tmp_path / "escaped.jsonl"
    f.write_text(_claude_code(blocks))
    code, _, err = brain("ingest", str(f))
    assert code == 0, err
    history = git(brain.cwd, "log", "-p", "--all")
    for value in (key, pw, token):
        assert value[:8] not in history, value
    texts = [e.text for e in sorted(entries(brain.cwd), key=lambda e: e.ts)]
    assert 'export API_KEY=\\"[REDACTED:api-key]\\" && ./deploy.sh' in texts[0], texts[0]
    assert '--password=\\"[REDACTED:password]\\"' in texts[1], texts[1]
    assert 'TOKEN=\\"[REDACTED:token]\\" npm' in texts[2], texts[2]
    assert '\\"secret_key\\": \\"[REDACTED:secret]\\"' in texts[3], texts[3]
    assert all(json.loads(t.split(" ", 2)[2])["description"] == "Run it" for t in texts)


def test_openai_tool_output_and_call_arguments_are_cut_before_a_secret():
    from pamd.encode import sources

    gh = "ghp_" + _gen(36, "openai")
    doc = [{"role": "assistant", "content": "",
            "tool_calls": [{"function": {"name": "run", "arguments": "a" * 1990 + " " + gh}}]},
           {"role": "tool", "content": "b" * 1990 + " " + gh}]
    msgs = sources.read(json.dumps(doc).encode(), "o.json")
    assert [m.role for m in msgs] == ["assistant", "tool"]
    assert all("ghp_" not in m.text for m in msgs)


def test_a_brains_own_patterns_guard_the_cut_too():
    from pamd.core.redact import Redactor
    from pamd.encode import sources

    own = Redactor.from_config({"redact": {"patterns": [{"name": "acme", "regex": r"acme_[0-9a-f]{24}"}]}})
    data = _claude_code([_result("c" * 1980 + " acme_" + "ab12" * 6, 0)]).encode()
    assert "acme_" in sources.read(data, "cc.jsonl")[0].text  # the built-ins do not know it
    assert "acme_" not in sources.read(data, "cc.jsonl", None, own)[0].text


@given(st.integers(1930, 2010), st.sampled_from(SECRETS), st.sampled_from([" ", "\n", '"', "'", "(", "`"]))
@settings(max_examples=200, deadline=None)
def test_no_cut_leaves_a_piece_of_a_known_secret(at, secret, sep):
    from pamd.core.redact import redact
    from pamd.encode import sources

    text, value = secret
    body = "y" * (at - len("[tool result] ")) + sep + text + sep + " and more output" * 20
    msg = sources.read(_claude_code([_result(body, 0)]).encode(), "cc.jsonl")[0]
    out = redact(msg.text)[0]
    assert not any(value[i: i + 8] in out for i in range(len(value) - 7)), out[-120:]


def test_a_chat_without_times_is_stored_in_the_order_it_was_said(brain, tmp_path):
    # A chat-completions array has no times: every message is stamped with the run's
    # second, and the L0 file must keep the conversation's order, not its hash order.
    said = ["You are a deploy bot."]
    for i in range(8):
        said += [f"step {i}: please run migration {i}", f"ran migration {i} ok"]
    roles = ["system"] + ["user", "assistant"] * 8
    chat = tmp_path / "chat.json"
    chat.write_text(json.dumps({"messages": [{"role": r, "content": t} for r, t in zip(roles, said, strict=True)]}))
    assert brain("ingest", str(chat))[0] == 0
    assert [e.text for e in entries(brain.cwd)] == said
    # a later run's messages of the same second follow those already in the file, in their order
    later = [f"later {c}" for c in "zyxwvu"]
    f = tmp_path / "later.jsonl"
    f.write_text("".join(json.dumps({"ts": "2026-11-30T12:00:00Z", "role": "user", "text": t}) + "\n" for t in later))
    assert brain("ingest", str(f))[0] == 0
    assert [e.text for e in entries(brain.cwd)] == said + later
    assert brain("check")[0] == 0


def test_a_real_claude_code_session_keeps_each_tool_result_after_its_call(brain):
    from pamd.encode import sources
    from pamd.encode.ingest import message_id

    path = CLAUDE / "tool_heavy.jsonl"
    msgs = sources.read(path.read_bytes(), path.name)
    # the session has calls answered within the same second (the case hash order broke)
    assert any(a.ts == b.ts and a.text.startswith("[tool ") and b.text.startswith("[tool result")
               for a, b in zip(msgs, msgs[1:], strict=False))
    assert brain("ingest", str(path))[0] == 0
    said = [message_id(m) for m in sorted(msgs, key=lambda m: m.ts)]
    assert [e.id for e in entries(brain.cwd)] == said


def test_remember_takes_its_text_unquoted_as_one_entry(brain):
    # `pamd remember we ship on Friday` was refused: "unrecognized arguments: ship on Friday"
    code, out, err = brain("remember", "We", "decided", "to", "ship", "--role", "assistant", "on", "Friday")
    assert code == 0, err
    (l0,) = (brain.cwd / "memory" / "L0").glob("*.md")
    assert "> We decided to ship on Friday\n" in l0.read_text() and "· assistant" in l0.read_text()
    code, out, _ = brain("remember", "We decided to ship on Friday", "--role", "assistant")
    assert code == 0 and out.startswith("already remembered as ")


def _hook_command(event: str) -> str:
    """The command docs/hooks.md tells a person to paste into Claude Code's settings for `event`."""
    import re

    doc = (REPO / "docs" / "hooks.md").read_text()
    block = re.search(r"## Claude Code: .*?```json\n(.*?)```", doc, re.S).group(1)
    (entry,) = json.loads(block)["hooks"][event]
    (hook,) = entry["hooks"]
    assert hook["type"] == "command"
    return hook["command"]


def test_the_claude_code_hooks_docs_give_ingest_each_session_as_it_runs(tmp_path):
    """The exact hook commands of docs/hooks.md, run as Claude Code runs them (a shell in
    the project folder, the hook's JSON on stdin): two sessions ending at once, a session
    read while its last line is half written, then finished, then again, a session that
    ended before it wrote a transcript, and a subagent that finished."""
    import os
    import subprocess
    import sys

    home = Path(os.environ["HOME"])  # conftest's own: ~/brains/agent is inside tmp_path
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
           "PAMD_NOW": "2026-11-30T12:00:00Z"}
    brain = home / "brains" / "agent"
    subprocess.run([sys.executable, "-m", "pamd", "init", str(brain)], check=True, capture_output=True, env=env)
    project = tmp_path / "app"
    project.mkdir()
    sessions = home / ".claude" / "projects" / "-app"
    sessions.mkdir(parents=True)

    def record(sid, i, role, text):
        return json.dumps({"type": role, "sessionId": sid, "cwd": str(project), "isSidechain": False,
                           "timestamp": f"2026-11-30T10:{i:02d}:00Z", "uuid": f"{sid}-{i}",
                           "message": {"role": role, "content": [{"type": "text", "text": text}]}})

    def session(sid, n):
        return [record(sid, i, ("user", "assistant")[i % 2], f"{sid} says thing {i} about the deploy")
                for i in range(n)]

    def hook(event, sid, **more):
        payload = {"session_id": sid, "transcript_path": str(sessions / f"{sid}.jsonl"), "cwd": str(project),
                   "hook_event_name": event, "permission_mode": "default", **more}
        return subprocess.Popen(["sh", "-c", _hook_command(event)], cwd=project, env=env, stdin=subprocess.PIPE,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE), json.dumps(payload).encode()

    def run(*hooks, **more):
        started = [hook(event, sid, **more) for event, sid in hooks]
        return [(p.returncode, out.decode(), err.decode())
                for p, data in started for out, err in [p.communicate(data, timeout=120)]]

    def texts():
        out = []
        for p in sorted((brain / "memory" / "L0").glob("*.md")):
            out += [e.text for e in parse_doc(p.read_text(), p.name).entries]
        return out

    a, b = session("aaa", 4), session("bbb", 3)
    (sessions / "aaa.jsonl").write_text("\n".join(a) + "\n")
    (sessions / "bbb.jsonl").write_text("\n".join(b) + "\n")
    for code, out, err in run(("Stop", "aaa"), ("Stop", "bbb")):  # two sessions' turns end at once
        assert code == 0 and out.startswith("ingested ") and err == "", (out, err)
    assert sorted(texts()) == sorted([f"aaa says thing {i} about the deploy" for i in range(4)]
                                     + [f"bbb says thing {i} about the deploy" for i in range(3)])
    a = session("aaa", 7)
    (sessions / "aaa.jsonl").write_text("\n".join(a[:6]) + "\n" + a[6][:40])  # Claude Code writing line 7
    ((code, out, err),) = run(("Stop", "aaa"))
    assert code == 0 and out.startswith("ingested 2 new entries, 4 already known"), (out, err)
    assert err == f"pamd: note: {sessions / 'aaa.jsonl'}:7: the last line is unfinished (no newline, not JSON" \
                  " yet): left for the next ingest\n"
    (sessions / "aaa.jsonl").write_text("\n".join(a) + "\n")
    ((code, out, err),) = run(("SessionEnd", "aaa"))
    assert code == 0 and out.startswith("ingested 1 new entry, 6 already known") and err == "", (out, err)
    ((code, out, err),) = run(("SessionEnd", "aaa"))
    assert (code, out, err) == (0, "nothing new: 7 entries already in the brain\n", "")
    assert len(texts()) == 10 and len(set(texts())) == 10
    assert git(brain, "status", "--porcelain") == ""
    assert int(git(brain, "rev-list", "--count", "HEAD")) == 1 + 2 + 2  # init, two sessions, two more turns
    # a session that ends having said nothing: Claude Code wrote no file for it yet
    ((code, out, err),) = run(("SessionEnd", "ccc"))
    assert (code, out) == (0, "nothing new: no transcript to read yet\n")
    assert err == f"pamd: note: {sessions / 'ccc.jsonl'}: no transcript written yet (the session said nothing):" \
                  " nothing to ingest\n"
    assert int(git(brain, "rev-list", "--count", "HEAD")) == 5
    # a subagent finishes: its own transcript, under SESSION/subagents/, comes in with it
    sub = sessions / "bbb" / "subagents" / "agent-a1.jsonl"
    sub.parent.mkdir(parents=True)
    sub.write_text("".join(json.dumps({**json.loads(record("bbb", 20 + i, role, text)), "isSidechain": True,
                                       "agentId": "a1"}) + "\n"
                           for i, (role, text) in enumerate([("user", "Find where the deploy lock is taken"),
                                                             ("assistant", "The lock is taken in deploy.sh")])))
    ((code, out, err),) = run(("SubagentStop", "bbb"), agent_id="a1", agent_type="Explore",
                              agent_transcript_path=str(sub))
    assert code == 0 and out.startswith("ingested 2 new entries, 3 already known") and err == "", (out, err)
    es = [e for p in sorted((brain / "memory" / "L0").glob("*.md"))
          for e in parse_doc(p.read_text(), p.name).entries if e.session == "bbb.a1"]
    assert [(e.role, e.text) for e in es] == [("assistant", "Find where the deploy lock is taken"),
                                              ("assistant", "The lock is taken in deploy.sh")]
