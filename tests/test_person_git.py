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
    at = names.index("txn:journal") + 1
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
        held = (root / ".git" / "index.lock").exists()
        assert held or person.poll() is not None  # gone only because the person's git is done
    assert person.wait() == 0, person.stderr.read()
    note = git(root, "log", "-1", "--format=%H", "--grep=^note$").strip()
    assert len(git(root, "ls-tree", "-r", "--name-only", note).split()) == files
    assert subprocess.run([sys.executable, "-m", "pamd", "status"], cwd=root).returncode == 0
    assert not (root / ".pamd" / "txn.json").exists()
    assert git(root, "status", "--porcelain") == ""
    assert subprocess.run(["git", "grep", "-q", "cache host", "HEAD", "--", "memory"], cwd=root).returncode == 1


def test_a_persons_plain_commit_while_pamd_commits_never_takes_pamds_files(brain, monkeypatch):
    """A person's `git commit` (of what they staged) tried while pamd writes and commits
    is refused by git itself (pamd holds git's index lock); it never takes pamd's files
    with it, and the person's staged file is still staged, then committed alone."""
    import pamd.edge.git as pgit

    root = brain.cwd
    (root / "notes").mkdir()
    (root / "notes" / "p.md").write_text("# The person's note\n")
    git(root, "add", "notes/p.md")
    real = pgit.checkpoint
    tried = []

    def person_commits_now(name: str) -> None:
        if name == "git:commit":
            tried.append(subprocess.run(["git", "commit", "-qm", "person"], cwd=root, capture_output=True,
                                        text=True))
        real(name)

    monkeypatch.setattr(pgit, "checkpoint", person_commits_now)
    code, _, err = brain("remember", "The staging database is db-7.")
    assert code == 0, err
    assert tried and tried[0].returncode != 0 and "index.lock" in tried[0].stderr
    assert "notes/p.md" not in git(root, "show", "--format=", "--name-only", "HEAD").split()
    assert "db-7" in git(root, "grep", "-h", "db-7", "HEAD", "--", "memory")
    assert git(root, "status", "--porcelain") == "A  notes/p.md\n"
    git(root, "commit", "-qm", "person")
    assert git(root, "show", "--format=", "--name-only", "HEAD").split() == ["notes/p.md"]
    assert git(root, "status", "--porcelain") == ""


def test_a_commit_that_lands_while_pamds_commit_runs_does_not_cost_the_run(brain):
    """A person's commit that was already in its hooks when pamd's began moves HEAD
    under pamd's `git commit` ("cannot lock ref 'HEAD': is at … but expected …"). It
    touched none of pamd's files, so pamd commits on top of it: one commit, a clean tree."""
    root = brain.cwd
    hook = root / ".git" / "hooks" / "pre-commit"
    hook.parent.mkdir(exist_ok=True)
    # Inside pamd's commit (its hooks run before git moves HEAD), once: a commit of the
    # person's moves HEAD, as one that finished its own hooks at that moment would.
    hook.write_text('#!/bin/sh\n[ -z "$PAMD_COMMIT" ] && exit 0\n[ -e .git/moved ] && exit 0\n'
                    'touch .git/moved\nunset GIT_INDEX_FILE\n'
                    'c=$(git commit-tree "HEAD^{tree}" -p HEAD -m person) && git update-ref HEAD "$c"\n')
    hook.chmod(0o755)
    before = int(git(root, "rev-list", "--count", "HEAD"))
    code, _, err = brain("remember", "The staging database is db-7.")
    assert code == 0, err
    assert (root / ".git" / "moved").exists()
    assert int(git(root, "rev-list", "--count", "HEAD")) == before + 2
    assert git(root, "log", "-2", "--format=%s").splitlines()[1] == "person"
    assert "db-7" in git(root, "grep", "-h", "db-7", "HEAD", "--", "memory")
    assert git(root, "status", "--porcelain") == ""
    assert not (root / ".pamd" / "txn.json").exists()


def test_a_run_killed_while_it_holds_the_index_blocks_git_only_until_the_next_pamd_command(brain, tmp_path):
    """pamd holds git's index lock from its first write to its commit. Killed there, it
    leaves that lock: a person's `git commit` is refused by git (as after any killed git),
    and the next pamd command, even `pamd status`, rolls the run back and frees git."""
    import shutil

    root = brain.cwd
    log = tmp_path / "checkpoints"
    scratch = tmp_path / "scratch"
    shutil.copytree(root, scratch, symlinks=True)
    fact = "Remember the cache host is c-3."
    assert start(scratch, "remember", fact, env={"PAMD_FAULT_LOG": str(log)}).wait(timeout=60) == 0
    names = [ln.split(" ", 1)[1] for ln in log.read_text().splitlines()]
    at = names.index("git:add") + 1
    assert start(root, "remember", fact, env={"PAMD_FAULT_AT": str(at)}).wait(timeout=60) == -9
    assert (root / ".git" / "index.lock").exists()
    (root / "notes.md").write_text("A person's note.\n")
    refused = subprocess.run(["git", "add", "notes.md"], cwd=root, capture_output=True, text=True)
    assert refused.returncode != 0 and "index.lock" in refused.stderr
    assert subprocess.run([sys.executable, "-m", "pamd", "status"], cwd=root, capture_output=True).returncode == 0
    assert not (root / ".git" / "index.lock").exists() and not (root / ".pamd" / "txn.json").exists()
    git(root, "add", "notes.md")
    git(root, "commit", "-qm", "note")
    assert git(root, "show", "--format=", "--name-only", "HEAD").split() == ["notes.md"]
    assert git(root, "status", "--porcelain") == ""
    assert subprocess.run(["git", "grep", "-q", "cache host", "HEAD", "--", "memory"], cwd=root).returncode == 1


def test_a_commit_that_lands_as_pamd_builds_its_commit_is_never_undone(brain, monkeypatch):
    """A person's commit past the index (in its hooks) can land after pamd read HEAD for
    its commit and before `git commit` reads HEAD again: pamd's tree, made from the older
    HEAD, would delete the person's new file. pamd sees the commit's parent is not the HEAD
    it built on, takes its commit back and makes it again on top of the person's."""
    import pamd.edge.git as pgit

    root = brain.cwd
    real = pgit.checkpoint

    def person_lands_now(name: str) -> None:
        if name == "git:commit" and not (root / "notes.md").exists():
            (root / "notes.md").write_text("A person's note.\n")
            env = {**os.environ, "GIT_INDEX_FILE": str(root / ".git" / "person-index")}
            subprocess.run(["git", "read-tree", "HEAD"], cwd=root, env=env, check=True)
            subprocess.run(["git", "update-index", "--add", "notes.md"], cwd=root, env=env, check=True)
            tree = subprocess.run(["git", "write-tree"], cwd=root, env=env, check=True, capture_output=True,
                                  text=True).stdout.strip()
            sha = git(root, "commit-tree", tree, "-p", "HEAD", "-m", "person").strip()
            git(root, "update-ref", "HEAD", sha)  # (its own index is brought up to it below)
        real(name)

    monkeypatch.setattr(pgit, "checkpoint", person_lands_now)
    code, _, err = brain("remember", "The staging database is db-7.")
    assert code == 0, err
    assert git(root, "log", "-2", "--format=%s").splitlines()[1] == "person"
    assert "notes.md" in git(root, "ls-tree", "--name-only", "HEAD").split()
    assert "db-7" in git(root, "grep", "-h", "db-7", "HEAD", "--", "memory")
    git(root, "reset", "-q", "--", "notes.md")
    assert git(root, "status", "--porcelain") == ""


def test_a_branch_switched_to_while_pamd_commits_does_not_keep_pamds_commit(brain, monkeypatch):
    """`git checkout -b` from HEAD takes no index lock: made in the moment of pamd's commit,
    it would land that commit on the person's new branch. pamd takes it back from there and
    says so in one line; main and the new branch are as they were."""
    import pamd.edge.git as pgit

    root = brain.cwd
    real = pgit.checkpoint
    main0 = git(root, "rev-parse", "main").strip()

    def person_switches_now(name: str) -> None:
        if name == "git:commit":
            git(root, "branch", "look")
            git(root, "symbolic-ref", "HEAD", "refs/heads/look")
        real(name)

    monkeypatch.setattr(pgit, "checkpoint", person_switches_now)
    code, _, err = brain("remember", "The staging database is db-7.")
    assert code == 75 and "switched to branch look" in err, err
    assert git(root, "rev-parse", "main").strip() == main0 == git(root, "rev-parse", "look").strip()
    assert git(root, "status", "--porcelain") == ""
    assert not (root / ".pamd" / "txn.json").exists()


def test_a_failed_run_puts_the_tree_back_before_it_lets_go_of_gits_index(brain, monkeypatch):
    """A run that fails after writing its files undoes them while it still holds git's
    index lock: a person's rebase (or checkout) waiting for the lock must never find pamd's
    files in the tree, where it stops with "your local changes would be overwritten"."""
    import pamd.edge.brain as pbrain
    import pamd.edge.git as pgit
    from pamd.errors import PamdError

    root = brain.cwd
    assert brain("remember", "The staging database is db-6.")[0] == 0
    head = git(root, "rev-parse", "HEAD").strip()
    real_restore, real_checkpoint = pbrain._restore, pgit.checkpoint
    seen = []

    def fail_at_commit(name: str) -> None:
        if name == "git:commit":
            raise PamdError("git commit failed: disk quota exceeded")
        real_checkpoint(name)

    def restore(b, *args, **kwargs):
        seen.append((root / ".git" / "index.lock").exists())
        real_restore(b, *args, **kwargs)
        # what a person's git finds the moment the lock is free: the tree as HEAD has it
        seen.append(git(root, "status", "--porcelain", "--untracked-files=no"))

    monkeypatch.setattr(pgit, "checkpoint", fail_at_commit)
    monkeypatch.setattr(pbrain, "_restore", restore)
    code, _, err = brain("remember", "The staging database is db-7.")
    assert code == 1 and "disk quota exceeded" in err, err
    assert seen[0] is True, seen  # restored while the lock was still this run's
    assert seen[1] == "", seen
    assert len(seen) == 2, seen  # and only once
    assert git(root, "rev-parse", "HEAD").strip() == head
    assert not (root / ".git" / "index.lock").exists() and not (root / ".pamd" / "txn.json").exists()
    assert git(root, "status", "--porcelain") == ""


def test_a_run_waits_for_a_persons_pull_to_finish_before_taking_gits_index(brain, tmp_path):
    """A `git pull` takes the index lock only when it merges: a pamd run that took it while
    the pull fetched made the merge fail half-way ("Unable to write index"), leaving a
    MERGE_HEAD over an index without the other side's changes, which a `git commit` then
    records. pamd waits while a person's pull, merge, rebase or checkout is at work."""
    root = brain.cwd
    origin, other = tmp_path / "origin.git", tmp_path / "other"
    subprocess.run(["git", "clone", "-q", "--bare", str(root), str(origin)], check=True)
    git(root, "remote", "add", "origin", str(origin))
    subprocess.run(["git", "clone", "-q", str(origin), str(other)], check=True)
    (other / "notes").mkdir()
    (other / "notes" / "other.md").write_text("# From the other clone\n")
    for args in (("add", "notes"), ("commit", "-qm", "other"), ("push", "-q", "origin", "HEAD")):
        subprocess.run(["git", *args], cwd=other, check=True, capture_output=True)
    # the fetch sits in a slow upload-pack for two seconds, holding no lock
    pull = subprocess.Popen(["git", "pull", "-q", "--no-rebase", "--no-edit", "--upload-pack",
                             "sleep 2; git-upload-pack", "origin", "main"], cwd=root, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    time.sleep(0.5)
    run = start(root, "remember", "The staging database is db-7.")
    assert run.wait(timeout=60) == 0, run.stderr.read()
    assert pull.wait(timeout=60) == 0, pull.stderr.read()
    # pamd's commit came after the pull's: it holds the other clone's note
    assert git(root, "log", "-1", "--format=%s").startswith("pamd remember")
    assert "notes/other.md" in git(root, "ls-tree", "-r", "--name-only", "HEAD~1").split()
    assert git(root, "status", "--porcelain") == ""
