"""pamd redact and the pamd-secrets hook against planted secrets in a real brain."""

from __future__ import annotations

import subprocess
import sys

import pytest
from conftest import git, head_count

AWS = "AKIA" + "Q4XZ7RT2MB6KPL3N"  # split so this file is no secret itself
GITHUB = "ghp_" + "x7Gk2mQp9LrT4vW8yB1nC5dF3hJ6sA0eZ2uK"


def plant(root, committed: bool = True):
    l0 = next(root.glob("memory/L0/*.md"))
    lines = l0.read_text().split("\n")
    i = next(i for i, ln in enumerate(lines) if ln.startswith("> "))
    lines[i] += f" use {AWS} and {GITHUB}"
    l0.write_text("\n".join(lines))
    if committed:
        git(root, "commit", "-q", "-am", "a person pastes keys")
    return l0.relative_to(root).as_posix(), i + 1


@pytest.fixture
def remembered(brain):
    assert brain("remember", "We decided to rotate the deploy credentials monthly.")[0] == 0
    return brain


def test_hook_finds_planted_secrets_at_their_line(remembered):
    root = remembered.cwd
    rel, line = plant(root, committed=False)
    r = subprocess.run(
        [sys.executable, "-m", "pamd.hooks", "secrets", rel],
        cwd=root,
        capture_output=True,
        text=True,
    )
    assert r.returncode == 1
    assert f"{rel}:{line}: possible aws-access-key" in r.stdout
    assert "pamd redact" in r.stdout and r.stdout.count(f"{rel}:{line}:") == 2
    assert (
        subprocess.run(
            [sys.executable, "-m", "pamd.hooks", "secrets", "DNA.md"], cwd=root
        ).returncode
        == 0
    )


def test_redact_cleans_committed_files_in_one_commit_and_says_history_keeps_them(remembered):
    root = remembered.cwd
    rel, line = plant(root)
    code, out, _ = remembered("redact", "--check")
    assert code == 1 and f"{rel}:{line}: aws-access-key" in out
    n = head_count(root)
    code, out, err = remembered("redact")
    assert code == 0, err
    assert head_count(root) == n + 1
    assert git(root, "show", "--name-only", "--format=", "HEAD").split() == [rel]
    body = git(root, "log", "-1", "--format=%B")
    assert "Pamd-Run: redact" in body and "Pamd-Redacted-aws-access-key: 1" in body
    text = (root / rel).read_text()
    assert AWS not in text and GITHUB not in text and "[REDACTED:aws-access-key]" in text
    assert "still hold" in out and "filter-repo" in out
    assert AWS in git(root, "show", "HEAD^:" + rel)  # what the help says: history is not rewritten
    assert remembered("redact", "--check")[0] == 0 and remembered("check")[0] == 0
    assert remembered("redact")[1].strip() == "no secrets found"


def test_redact_never_commits_a_persons_uncommitted_edit(remembered):
    root = remembered.cwd
    rel, _ = plant(root, committed=False)
    n = head_count(root)
    code, _, err = remembered("redact")
    assert code == 1 and "uncommitted edits" in err and "--no-commit" in err
    assert head_count(root) == n and AWS in (root / rel).read_text()
    code, out, _ = remembered("redact", "--no-commit", rel)
    assert code == 0 and "git add" in out
    assert head_count(root) == n and AWS not in (root / rel).read_text()
    assert AWS not in git(root, "log", "--all", "-p")


def test_ingest_never_writes_a_secret(brain, tmp_path):
    f = tmp_path / "s.jsonl"
    f.write_text(f'{{"ts": "2026-11-30T10:00:00Z", "role": "user", "text": "my key is {AWS}"}}\n')
    assert brain("ingest", str(f))[0] == 0
    assert AWS not in git(brain.cwd, "log", "--all", "-p")


def test_redact_refuses_an_ignored_file_and_leaves_it_as_it_was(brain):
    """`git add` refuses an ignored file, so pamd must not write one it would then roll
    back: the rollback used to restore it "as at HEAD", where it does not exist."""
    root = brain.cwd
    with (root / ".gitignore").open("a") as f:
        f.write("scratch.md\n")
    git(root, "commit", "-qam", "ignore scratch.md")
    scratch = root / "scratch.md"
    mine = f"private notes\naws key {AWS}\n"
    scratch.write_text(mine)
    n = head_count(root)
    code, _, err = brain("redact", "scratch.md")
    assert code == 1 and "ignored by git: scratch.md" in err and len(err.strip().splitlines()) == 1
    assert scratch.read_text() == mine
    assert head_count(root) == n and git(root, "status", "--porcelain") == ""
    code, out, _ = brain("redact", "--no-commit", "scratch.md")  # what does work for it
    assert code == 0 and AWS not in scratch.read_text()


def test_a_file_name_with_glob_characters_names_only_that_file(brain):
    """git reads `notes [ab].md` as a pattern that matches `notes a.md` too, unless
    pamd's pathspecs are literal: the person's uncommitted edit there stays theirs."""
    root = brain.cwd
    odd, plain = root / "notes [ab].md", root / "notes a.md"
    odd.write_text(f"the deploy key {AWS}\n")
    plain.write_text("my notes\n")
    git(root, "add", "--", odd.name, plain.name)
    git(root, "commit", "-qm", "two notes")
    plain.write_text("my notes\nand an edit I keep uncommitted\n")
    code, _, err = brain("redact", odd.name)
    assert code == 0, err
    assert git(root, "show", "--name-only", "--format=", "HEAD").splitlines() == ["notes [ab].md"]
    assert AWS not in odd.read_text()
    assert git(root, "status", "--porcelain").splitlines() == [' M "notes a.md"']


def test_redact_refuses_a_file_that_does_not_exist_like_check(remembered):
    """A typo in the path said "no secrets found" and exit 0: the secret stayed."""
    brain = remembered
    rel, _ = plant(brain.cwd)
    n = head_count(brain.cwd)
    for argv in (["redact", "nonexist.md"], ["redact", "--check", "nonexist.md"],
                 ["redact", "--no-commit", rel, "nonexist.md"], ["redact", "memory"]):
        code, out, err = brain(*argv)
        assert code == 1 and "no secrets found" not in out, argv
        assert err.startswith("pamd: error: ") and len(err.strip().splitlines()) == 1, err
    assert "nonexist.md: no such file in the brain" in brain("redact", "nonexist.md")[2]
    assert "memory is a directory" in brain("redact", "memory")[2]
    assert "not inside the brain" in brain("redact", "/etc/hostname")[2]
    assert AWS in (brain.cwd / rel).read_text() and head_count(brain.cwd) == n
    brain.cwd = brain.cwd / "memory"  # a path from the brain's root works from a subfolder, as for check
    code, out, err = brain("redact", "--check", rel)
    assert code == 1 and "2 secrets found" in out, err
