"""Bad values on the command line and in pamd.toml: one line `pamd: error: ...`, exit 1, nothing written."""

from __future__ import annotations

import re

import pytest
from conftest import NOW, git, head_count


def set_config(root, key: str, value: str) -> None:
    """Replace the first `key = ...` line of the brain's pamd.toml and commit it as a person would."""
    cfg = root / "pamd.toml"
    text, n = re.subn(rf"(?m)^{key} = .*$", f"{key} = {value}", cfg.read_text(), count=1)
    assert n == 1, key
    cfg.write_text(text)
    git(root, "commit", "-qam", f"a person sets {key}")


@pytest.mark.parametrize("key, value, message", [
    ("l1_hours", '"12h"', '[tiers] l1_hours: expected a number, got "12h"'),
    ("defrag_at", '"25:00"', '[schedule] defrag_at: expected "HH:MM" (00:00 to 23:59, UTC) or "off", got "25:00"'),
    ("defrag_at", '"of"', 'got "of"'),
    ("defrag_at", '"02:60"', "got \"02:60\""),
    ("compact_every_minutes", "-5", "[schedule] compact_every_minutes: expected a number above 0, got -5"),
    ("compact_every_minutes", "0", "[schedule] compact_every_minutes: expected a number above 0, got 0"),
    ("keep_hot", "1.5", "[hippocampus.retention] keep_hot: expected a number from 0 to 1, got 1.5"),
    ("batch_size", "0", "[summarizer] batch_size: expected a number above 0, got 0"),
    ("timeout", "0", "[summarizer] timeout: expected a number above 0, got 0"),  # no timeout, or none at all
    ("deep", '"yes"', '[index] deep: expected true or false, got "yes"'),
    ("author_name", "7", "[git] author_name: expected a string, got 7"),
    ("budget", "inf", "[boot] budget: expected a number, got Infinity"),
])
@pytest.mark.parametrize("command", [("compact",), ("run-due",), ("defrag",)])
def test_a_bad_value_in_pamd_toml_is_one_line_naming_the_key_and_the_file(brain, key, value, message, command):
    root = brain.cwd
    set_config(root, key, value)
    n = head_count(root)
    r = brain.proc(*command)
    err = r.stderr.decode()
    assert r.returncode == 1, err
    assert err.count("\n") == 1 and err.startswith("pamd: error: ") and "pamd.toml: " in err and message in err
    assert head_count(root) == n and git(root, "status", "--porcelain") == ""


def test_check_reports_bad_config_values_with_their_line(brain):
    root = brain.cwd
    set_config(root, "l1_hours", '"12h"')
    line = next(i for i, ln in enumerate((root / "pamd.toml").read_text().splitlines(), 1)
                if ln.startswith("l1_hours"))
    code, out, _ = brain("check")
    assert code == 1
    assert f'pamd.toml:{line}: [tiers] l1_hours: expected a number, got "12h"' in out


@pytest.mark.parametrize("sep", ["\r", "\u2028", "\x85"])
def test_check_names_a_frontmatter_line_as_git_and_sed_count_it(brain, sep):
    # YAML also ends a line at a bare CR, NEL or U+2028; git, sed, grep and pamd at LF only
    root = brain.cwd
    (root / "DNA.md").write_text(f'---\nreflexes: []{sep}preferences: ["tea"]\nlearned_behaviors: [a, b\n'
                                 "bad: 1\n---\n", "utf-8")
    code, out, _ = brain("check")
    line = int(re.search(r"^DNA\.md:(\d+): broken frontmatter", out, re.M).group(1))
    assert code == 1 and line == 4
    assert (root / "DNA.md").read_bytes().split(b"\n")[line - 1] == b"bad: 1"  # sed -n 4p


def test_a_brains_own_hippocampus_type_and_clock_are_checked_too(brain):
    from pamd.core.config import problems

    assert problems({"hippocampus": {"types": {"chat": {"importance": 2}}}}) == [
        ("hippocampus.types.chat.importance",
         "[hippocampus.types.chat] importance: expected a number from 0 to 1, got 2")]
    assert problems({"tiers": {"clock": [{"below": 0.3, "hours": "1h"}]}}) == [
        ("tiers.clock", '[tiers] clock[1].hours: expected a number, got "1h"')]
    # Keys the template does not name (a synapse, an added price) are not its business.
    assert problems({"synapse": {"alice": {"url": "../a"}}, "summarizer": {"prices": {"m": {"input": 1}}},
                     "index": {"extra": {"rerank": 5}}}) == []


@pytest.mark.parametrize("at", ["25:00", "12:60", "noon", "7"])
def test_daemon_refuses_a_bad_defrag_time_before_it_starts(brain, at):
    r = brain.proc("daemon", "--defrag-at", at, now=None)
    err = r.stderr.decode()
    assert r.returncode == 1 and err.startswith("pamd: error: bad defrag time") and err.count("\n") == 1


def daemon_proc(brain, *args: str, env=None):
    """`pamd daemon ...` that must refuse to start; a daemon that starts is killed after 20 s."""
    import os
    import subprocess
    import sys

    try:
        return subprocess.run([sys.executable, "-m", "pamd", "daemon", *args], cwd=brain.cwd,
                              capture_output=True, env={**os.environ, **(env or {})}, timeout=20)
    except subprocess.TimeoutExpired:
        pytest.fail("the daemon started instead of refusing")


@pytest.mark.parametrize("every", ["0", "-5", "nan", "inf"])
def test_daemon_refuses_a_compact_interval_not_above_zero(brain, every):
    r = daemon_proc(brain, f"--compact-every={every}")
    err = r.stderr.decode()
    assert r.returncode == 1 and err.startswith("pamd: error: --compact-every must be a number of minutes above 0")
    assert err.count("\n") == 1


def test_daemon_refuses_compact_every_minutes_0_in_pamd_toml(brain):
    set_config(brain.cwd, "compact_every_minutes", "0")
    r = daemon_proc(brain)
    err = r.stderr.decode()
    assert r.returncode == 1 and err.count("\n") == 1
    assert "[schedule] compact_every_minutes: expected a number above 0, got 0" in err


@pytest.mark.parametrize("how", ["flag", "env"])
def test_daemon_refuses_a_pretend_clock(brain, how):
    """A daemon waits on the real clock: --now/PAMD_NOW would be accepted and then ignored."""
    if how == "flag":
        r = daemon_proc(brain, "--now", "2026-11-30T10:00:00Z")
    else:
        r = daemon_proc(brain, env={"PAMD_NOW": "2026-11-30T10:00:00Z"})
    err = r.stderr.decode()
    assert r.returncode == 1 and err.count("\n") == 1
    assert err.startswith("pamd: error: pamd daemon runs on the real clock") and "run-due --now" in err


def test_check_file_names_a_file_of_this_brain(brain, tmp_path):
    root = brain.cwd
    outside = tmp_path / "hostname"
    outside.write_text("x\n")
    for name, message in ((str(outside), "is not inside the brain"), ("../hostname", "is not inside the brain"),
                          ("nonexistent.md", "nonexistent.md: no such file in the brain"),
                          ("memory/L0/2026-13-01.md", "no such file in the brain"),
                          ("protocols", "protocols is a directory")):
        r = brain.proc("check", name)
        err = r.stderr.decode()
        assert r.returncode == 1 and err.startswith("pamd: error: ") and message in err, (name, err)
        assert err.count("\n") == 1 and r.stdout == b""
    # By name from the brain's root, from a subdirectory, or absolute: all the same file.
    assert brain("check", "DNA.md") == (0, "brain format ok\n", "")
    assert brain("check", str(root / "DNA.md"))[0] == 0
    sub = brain.cwd / "protocols"
    brain.cwd = sub
    assert brain("check", "../DNA.md")[0] == 0 and brain("check", "DNA.md")[0] == 0
    brain.cwd = root


def test_check_brain_reports_a_named_file_that_is_gone(brain):
    from pamd.edge.brain import Brain
    from pamd.ops.check import check_brain

    got = check_brain(Brain(brain.cwd), ["memory/L0/2026-11-30.md", "PRELOAD.md"])
    assert [(p.path, p.message) for p in got] == [("memory/L0/2026-11-30.md", "no such file")]


@pytest.mark.parametrize("args", [
    ("recall", "--since", "0001-01-01T00:00:00+01:00", "port"),
    ("recall", "--until", "9999-12-31T23:59:59-01:00", "port"),
    ("recall", "port", "--now", "0001-01-01T00:00:00+01:00"),
    ("status", "--now", "9999-12-31T23:59:59-01:00"),
])
def test_a_time_outside_the_calendar_is_a_bad_time_not_an_internal_error(brain, args):
    r = brain.proc(*args)
    err = r.stderr.decode()
    assert r.returncode == 1 and err.startswith("pamd: error: bad time") and err.count("\n") == 1, err


def test_parse_time_turns_overflow_into_value_error():
    from pamd.core.entry import parse_time

    for value in ("0001-01-01T00:00:00+01:00", "9999-12-31T23:59:59-01:00"):
        with pytest.raises(ValueError, match="out of range"):
            parse_time(value)


def test_expand_and_touch_take_a_path_as_check_does_from_the_cwd(brain):
    root = brain.cwd
    code, out, _ = brain("remember", "We decided to ship v2 on Friday.")
    eid = out.split()[1]
    l0 = next(root.glob("memory/L0/*.md"))
    line = 1 + l0.read_text().split("\n").index(next(ln for ln in l0.read_text().split("\n") if eid in ln))
    brain.cwd = l0.parent  # inside memory/L0, where `pamd check 2026-11-30.md` works
    try:
        for ref in (f"{l0.name}:{line}", f"memory/L0/{l0.name}:{line}", f"{l0}:{line + 1}"):
            code, out, err = brain("expand", ref, "--json")
            assert code == 0 and eid in out, (ref, err)
        assert brain("touch", f"{l0.name}:{line}")[0] == 0
        code, _, err = brain("expand", f"nope-{l0.name}:{line}")
        assert code == 1 and err.startswith(f"pamd: error: nope-{l0.name}: no such file in the brain")
        code, _, err = brain("expand", "../../memory:3")
        assert code == 1 and err.startswith("pamd: error: ../../memory is a directory (name a file and a line")
    finally:
        brain.cwd = root


@pytest.mark.parametrize("args, message", [
    (("recall", "ship", "--until", ""), "bad time '' for --until"),
    (("recall", "ship", "--since", ""), "bad time '' for --since"),
    (("boot", "--at", ""), "empty --at"),
    (("state", "--at", " "), "empty --at"),
    (("status", "--now", ""), "bad time '' for --now"),
])
def test_an_empty_time_or_commit_is_refused_like_an_empty_tier(brain, args, message):
    r = brain.proc(*args)
    err = r.stderr.decode()
    assert r.returncode == 1 and err.startswith(f"pamd: error: {message}") and err.count("\n") == 1, err
    assert r.stdout == b""


def test_an_empty_pamd_now_is_unset_like_any_variable(brain):
    r = brain.proc("status", now=None, env={"PAMD_NOW": ""})
    assert r.returncode == 0, r.stderr


def test_double_dash_still_ends_the_options(brain):
    """`--` is how a text or a file name that starts with a dash is passed; options may now
    come between a command's words, and that must not spend it."""
    code, out, err = brain("remember", "--now", NOW, "--", "-x-note: dashes lead this one", now=None)
    assert code == 0 and out.startswith("remembered e-"), err
    code, _, err = brain("check", "--", "-x.md", now=None)
    assert code == 1 and err.startswith("pamd: error: -x.md: no such file in the brain"), err


def test_a_path_outside_the_cwd_brain_means_the_brains_file(brain, tmp_path):
    """With --brain (or PAMD_BRAIN) from a folder outside the brain, `MEMORY.md:12` or
    `memory/L0/DAY.md:7` from a hit names the brain's file, even if the cwd has one too."""
    root = brain.cwd
    code, out, _ = brain("remember", "We decided to ship v2 on Friday.")
    eid = out.split()[1]
    l0 = next(root.glob("memory/L0/*.md"))
    rel = l0.relative_to(root).as_posix()
    line = 1 + l0.read_text().split("\n").index(next(ln for ln in l0.read_text().split("\n") if eid in ln))
    other = tmp_path / "project"
    (other / "memory" / "L0").mkdir(parents=True)
    (other / rel).write_text("not the brain's file\n")
    brain.cwd = other
    try:
        code, out, err = brain("expand", "--brain", str(root), f"{rel}:{line}", "--json")
        assert code == 0 and eid in out, err
    finally:
        brain.cwd = root


def test_fsck_of_a_read_only_brain_still_checks(brain, monkeypatch):
    """fsck only reads; cleaning up a killed defrag's worktree needs the lock, which a
    read-only checkout cannot take: that is skipped, not an internal error."""
    from pamd.edge import lock

    def read_only(self):
        raise PermissionError(13, "Permission denied", str(brain.cwd / ".pamd"))

    monkeypatch.setattr(lock.Lock, "__enter__", read_only)
    code, out, err = brain("fsck", "--skip", "index")
    assert code == 0 and "brain ok" in out, err


@pytest.mark.parametrize("args, command", [
    (("recall", "--kk", "5", "ship"), "recall"),
    (("status", "--jsn"), "status"),
    (("boot", "extra"), "boot"),
])
def test_an_unknown_option_is_said_by_its_command_with_its_usage(brain, args, command):
    # argparse left unknown words to pamd's top parser, which showed pamd's usage, not the command's
    r = brain.proc(*args)
    err = r.stderr.decode()
    assert r.returncode == 2
    assert err.startswith(f"usage: pamd {command} ")
    said = f"pamd {command}: error: unrecognized arguments: {args[1]} (`pamd {command} --help` lists its options)"
    assert said in err


@pytest.mark.parametrize("command", ["expand", "touch"])
def test_a_line_outside_any_entry_says_which_lines_name_one(brain, command):
    code, _, err = brain(command, "MEMORY.md:1")
    assert code == 1 and err.count("\n") == 1
    assert err.startswith("pamd: error: no entry at MEMORY.md:1 (name a line of an entry: its ### header")

def test_recall_without_the_search_stack_says_how_to_install_it(brain, monkeypatch):
    """A base install (`pip install pamd`, or a PAMD_PIP_SPEC without [search] in the nightly
    workflow) crashed in recall, index and probe with "pamd: internal error:
    ModuleNotFoundError" and a crash log, exit 3."""
    import sys

    assert brain("remember", "We chose Postgres for billing.")[0] == 0
    monkeypatch.setitem(sys.modules, "hnswlib", None)  # import hnswlib now raises ImportError
    for argv in (["recall", "billing database"], ["index"]):
        code, out, err = brain(*argv)
        assert code == 1 and err.count("\n") == 1, (argv, err)
        assert err.startswith("pamd: error: pamd's search stack is not installed") and "pamd[search]" in err


@pytest.mark.parametrize("dotgit", ["missing", "empty folder", "file to nowhere"])
@pytest.mark.parametrize("command", [("remember", "a note"), ("compact",), ("status",)])
def test_a_brain_folder_that_is_no_git_repository_is_one_line(tmp_path, dotgit, command):
    """pamd opens git only at its first git command: a broken .git is still named in one line."""
    import subprocess
    import sys

    root = tmp_path / "brain"
    root.mkdir()
    (root / "pamd.toml").write_text('[index]\nembedder = "e5-small"\n')
    if dotgit == "empty folder":
        (root / ".git").mkdir()
    elif dotgit == "file to nowhere":
        (root / ".git").write_text("gitdir: /nonexistent/worktree\n")
    r = subprocess.run([sys.executable, "-m", "pamd", "--brain", str(root), "--now", NOW, *command],
                       capture_output=True, text=True)
    assert r.returncode == 1, r.stderr
    assert r.stderr == f"pamd: error: {root} is not a git repository (run `pamd init`)\n"
    assert sorted(p.name for p in root.iterdir()) == sorted(["pamd.toml"] + ([] if dotgit == "missing" else [".git"]))
