"""Control characters in stored text reach a terminal escaped; files and --json stay exact."""

from __future__ import annotations

import json

from conftest import git

from pamd.core.visible import visible

NASTY = ("prod-7 \x1b[31mRED\x1b[0m \x1b]52;c;ZWNobyBwd25lZA==\x07 "
         "\x1b]8;;http://evil.example\x1b\\link\x1b]8;;\x1b\\ done\rOVER back\bspace "
         "\x9b2J \u202ecod.exe")
CONTROLS = ("\x1b", "\x07", "\x08", "\r", "\x9b", "\u202e")


def test_visible_escapes_what_a_terminal_would_act_on():
    assert visible(NASTY) == (
        "prod-7 \\x1b[31mRED\\x1b[0m \\x1b]52;c;ZWNobyBwd25lZA==\\x07 "
        "\\x1b]8;;http://evil.example\\x1b\\link\\x1b]8;;\\x1b\\ done\\x0dOVER back\\x08space "
        "\\x9b2J \\u202ecod.exe")
    plain = "tab\there\nнов строка · ✓ עברית"
    assert visible(plain) == plain


def test_the_stream_escapes_every_way_of_writing():
    import io

    from pamd.core.visible import VisibleStream, raw

    buf = io.StringIO()
    s = VisibleStream(buf)
    print("a\x1b[2J", file=s)
    s.writelines(["b\x07", "c\u202e\n"])
    assert buf.getvalue() == "a\\x1b[2J\nb\\x07c\\u202e\n"
    assert raw(s) is buf and raw(buf) is buf


def _nasty_brain(brain) -> bytes:
    """A person's (or a clone's) MEMORY.md note holding escape sequences, committed."""
    mem = brain.cwd / "MEMORY.md"
    mem.write_text(mem.read_text() + f"\nThe deploy server is {NASTY}\n", newline="")
    git(brain.cwd, "commit", "-qam", "a note")
    return mem.read_bytes()


def test_recall_and_boot_show_stored_control_characters_escaped(brain):
    stored = _nasty_brain(brain)
    code, out, err = brain("recall", "deploy server", "--no-log")
    assert code == 0, err
    assert "MEMORY.md" in out and "\\x1b]52;c;" in out and "\\u202ecod.exe" in out
    assert not any(c in out for c in CONTROLS)
    code, out, err = brain("boot")
    assert code == 0, err
    assert "\\x1b[31mRED" in out
    assert not any(c in out for c in CONTROLS)
    assert (brain.cwd / "MEMORY.md").read_bytes() == stored


def test_json_output_stays_exact(brain):
    _nasty_brain(brain)
    code, out, err = brain("recall", "deploy server", "--no-log", "--json")
    assert code == 0, err
    hit = next(h for h in json.loads(out) if h["path"] == "MEMORY.md")
    assert "\x1b]52;c;ZWNobyBwd25lZA==\x07" in hit["text"]


def test_an_error_naming_user_text_shows_it_escaped(brain):
    code, out, err = brain("ingest", "\x1b]52;c;aGk=\x07notes.md")
    assert code != 0
    assert err.startswith("pamd: error:") and "\\x1b]52;c;aGk=\\x07" in err
    assert "\x1b" not in err and "\x07" not in err


def test_pamd_hook_names_a_file_escaped(brain, capsys, monkeypatch):
    from pamd.hooks import main as hook

    name = "notes\x1b]52;c;aGk=\x07.md"
    (brain.cwd / name).write_text("key AKIAIOSFODNN7EXAMPLQ\n")
    monkeypatch.chdir(brain.cwd)
    capsys.readouterr()
    assert hook(["secrets", name]) == 1
    out = capsys.readouterr().out
    assert "notes\\x1b]52;c;aGk=\\x07.md:1: possible aws-access-key" in out
    assert "\x1b" not in out and "\x07" not in out
