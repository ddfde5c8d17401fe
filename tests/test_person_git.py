"""A person's git and pamd in the same brain at once: real `git commit` with a slow
pre-commit hook (git holds .git/index.lock while its hooks run), real pamd processes.

pamd never removes a git lock file a live process holds, never commits while a
person's git holds the index, and a run that meets a person's lock either waits for
it or leaves nothing (no journal that recovery would take for a dead run).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

from conftest import NOW, git

MESSAGES = [
    {"ts": "2026-11-30T10:00:00Z", "role": "user", "text": "We decided to use postgres for the store."},
    {"ts": "2026-11-30T10:01:00Z", "role": "assistant", "text": "Deploying postgres to staging now."},
]


def start(root: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "pamd", *args, "--now", NOW], cwd=root, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env={**os.environ, **(env or {})})


def slow_person_hook(root: Path, seconds: float) -> Path:
    """A pre-commit hook that sleeps for a person's commits (not pamd's); returns its marker."""
    marker = root / ".git" / "person-hook"
    hook = root / ".git" / "hooks" / "pre-commit"
    hook.parent.mkdir(exist_ok=True)
    hook.write_text(f'#!/bin/sh\n[ -n "$PAMD_COMMIT" ] && exit 0\ntouch .git/person-hook\nsleep {seconds}\n')
    hook.chmod(0o755)
    return marker


def wait_for(path: Path, timeout: float = 20) -> None:
    deadline = time.monotonic() + timeout
    while not path.exists():
        assert time.monotonic() < deadline, f"{path} never appeared"
        time.sleep(0.01)


def test_a_run_during_a_persons_commit_never_empties_the_persons_commit(brain, tmp_path):
    """The repro: a person's `git commit` sits in its hook, `pamd remember` runs meanwhile,
    then `pamd status` (which recovers a dead run's journal) runs again and again. The
    person's commit must hold the whole tree, and pamd's entry must land (once)."""
    root = brain.cwd
    src = tmp_path / "a.jsonl"
    src.write_text("".join(json.dumps(m) + "\n" for m in MESSAGES))
    assert brain("ingest", str(src))[0] == 0
    files = len(git(root, "ls-tree", "-r", "--name-only", "HEAD").split())
    marker = slow_person_hook(root, 2.5)
    with (root / "MEMORY.md").open("a") as f:
        f.write("\nA person's note.\n")
    person = subprocess.Popen(["git", "commit", "-qm", "note", "MEMORY.md"], cwd=root,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    wait_for(marker)
    assert (root / ".git" / "index.lock").exists()
    run = start(root, "remember", "Remember the staging database password rotates weekly.")
    for _ in range(8):
        time.sleep(0.25)
        subprocess.run([sys.executable, "-m", "pamd", "status"], cwd=root, capture_output=True)
    out, err = person.communicate(timeout=60)
    assert person.returncode == 0, err
    out, err = run.communicate(timeout=120)
    assert run.returncode == 0, err
    note = git(root, "log", "-1", "--format=%H", "--grep=^note$").strip()
    assert len(git(root, "ls-tree", "-r", "--name-only", note).split()) == files
    assert "A person's note." in git(root, "show", f"{note}:MEMORY.md")
    assert len(git(root, "ls-tree", "-r", "--name-only", "HEAD").split()) >= files
    assert git(root, "status", "--porcelain") == ""
    assert not (root / ".pamd" / "txn.json").exists()
    assert "rotates weekly" in git(root, "grep", "-h", "rotates weekly", "HEAD", "--", "memory")


def test_recovery_of_a_killed_run_never_takes_a_live_persons_lock(brain, tmp_path):
    """A pamd run killed right as its git was to start leaves a journal that says so; a
    person's `git commit` then sits in its hook. Every `pamd status` meanwhile must leave
    the person's index.lock alone (the journal is older, and a git is at work in the
    brain); once the person's commit is done, recovery rolls the dead run back."""
    import shutil

    root = brain.cwd
    src = tmp_path / "a.jsonl"
    src.write_text("".join(json.dumps(m) + "\n" for m in MESSAGES))
    assert brain("ingest", str(src))[0] == 0
    files = len(git(root, "ls-tree", "-r", "--name-only", "HEAD").split())
    scratch = tmp_path / "scratch"
    shutil.copytree(root, scratch, symlinks=True)
    log = tmp_path / "checkpoints"
    fact = "Remember the cache host is c-3."
    assert start(scratch, "remember", fact, env={"PAMD_FAULT_LOG": str(log)}).wait(timeout=60) == 0
    names = [ln.split(" ", 1)[1] for ln in log.read_text().splitlines()]
    at = names.index("git:add") + 1
    assert start(root, "remember", fact, env={"PAMD_FAULT_AT": str(at)}).wait(timeout=60) == -9
    assert (root / ".pamd" / "txn.json").exists()
    marker = slow_person_hook(root, 2.5)
    with (root / "MEMORY.md").open("a") as f:
        f.write("\nA person's note.\n")
    person = subprocess.Popen(["git", "commit", "-qm", "note", "MEMORY.md"], cwd=root,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    wait_for(marker)
    while person.poll() is None:
        subprocess.run([sys.executable, "-m", "pamd", "status"], cwd=root, capture_output=True)
        if person.poll() is None:
            assert (root / ".git" / "index.lock").exists()
    assert person.wait() == 0, person.stderr.read()
    note = git(root, "log", "-1", "--format=%H", "--grep=^note$").strip()
    assert len(git(root, "ls-tree", "-r", "--name-only", note).split()) == files
    assert subprocess.run([sys.executable, "-m", "pamd", "status"], cwd=root).returncode == 0
    assert not (root / ".pamd" / "txn.json").exists()
    assert git(root, "status", "--porcelain") == ""
    assert subprocess.run(["git", "grep", "-q", "cache host", "HEAD", "--", "memory"], cwd=root).returncode == 1
