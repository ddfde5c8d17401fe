"""Worktrees `pamd defrag --branch` left behind when it was killed.

A defrag onto a branch works in a temporary `git worktree` (PREFIX*/brain) while
holding the brain's lock, and removes it when it ends. A SIGKILL skips that: the
worktree stays registered, its folder stays in the temp dir, and git refuses to
delete its branch ("checked out at ..."). Whoever next holds the brain's lock
knows no defrag --branch is alive, so any such worktree is stale: it is removed,
and its branch too when the branch holds no commit of its own.
"""

from __future__ import annotations

import os
import shutil
import sqlite3
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from pamd.edge.git import LOCAL_ENV as _LOCAL_ENV
from pamd.edge.git import Repo
from pamd.errors import PamdError

PREFIX = "pamd-defrag-"
OWNER = "owner"  # beside the worktree: the root of the brain whose lock its run holds


def _is_ours(path: str) -> bool:
    p = Path(path)
    return p.name == "brain" and p.parent.name.startswith(PREFIX)


def _maybe_any(root: Path) -> bool:
    """A cheap look (no git process) for a registered pamd worktree: runs call this each time."""
    gitdir = root / ".git"
    if not gitdir.is_dir():  # a linked worktree itself (a file .git), or not a plain repo
        return False
    for entry in (gitdir / "worktrees").glob("*/gitdir"):
        try:
            if PREFIX in entry.read_text("utf-8", errors="replace"):
                return True
        except OSError:
            continue
    return False


def registered(repo: Repo) -> list[tuple[str, str | None]]:
    """(path, branch) of every pamd defrag worktree registered in `repo`."""
    found: list[tuple[str, str | None]] = []
    path: str | None = None
    branch: str | None = None
    for line in [*repo.run("worktree", "list", "--porcelain").splitlines(), ""]:
        if line.startswith("worktree "):
            path, branch = line[len("worktree "):], None
        elif line.startswith("branch refs/heads/"):
            branch = line[len("branch refs/heads/"):]
        elif not line and path is not None:
            if _is_ours(path):
                found.append((path, branch))
            path = None
    return found


def prune_stale(root: Path, repo: Repo) -> list[str]:
    """Remove stale pamd defrag worktrees of the brain at `root`; say what was done.

    Call only while holding the brain's lock (a live defrag --branch holds it)."""
    if not _maybe_any(root):
        return []
    notes = []
    head = repo.head()
    for path, branch in registered(repo):
        owner = Path(path).parent / OWNER
        if owner.parent.exists() and _read(owner) != str(root):
            continue  # made from another worktree of this repo, under that brain's lock
        try:
            if Path(path).exists():
                repo.run("worktree", "remove", "--force", "--force", path)
        except PamdError:
            pass  # its folder is damaged or half made: removed below, then pruned
        shutil.rmtree(Path(path).parent, ignore_errors=True)
        repo.run("worktree", "prune")
        note = f"removed a stale worktree {path} left by a killed `pamd defrag --branch`"
        if branch:
            tip = repo.rev_parse(f"refs/heads/{branch}")
            if tip and head and _contained(repo, tip, head):
                repo.run("branch", "-D", branch)
                note += f"; deleted its branch {branch} (it held no commit of its own)"
            elif tip:
                note += f"; kept its branch {branch}: it holds a commit (`git log HEAD..{branch}`)"
        notes.append(note)
    return notes


def _read(p: Path) -> str | None:
    try:
        return p.read_text("utf-8")
    except OSError:
        return None


def _contained(repo: Repo, tip: str, head: str) -> bool:
    try:
        repo.run("merge-base", "--is-ancestor", tip, head)
    except PamdError:
        return False
    return True


# ---------------------------------------------------------------- a look at another commit
PROBE_PREFIX = "pamd-probe-"


@contextmanager
def checkout_of(repo: Repo, rev: str, seed_state: Path | None = None) -> Iterator[Path]:
    """A throw-away worktree of `rev` (detached), removed on the way out; yields its root.

    No index hook fires in it (PAMD_HOOK_INDEX=0 for the `worktree add`). Git's
    per-repository variables (GIT_INDEX_FILE, GIT_DIR... that git sets for a hook) are
    cleared while it lives: inherited, they would point its git at the commit the hook
    is judging. `seed_state`: a .pamd/ whose vector and leaf caches the worktree starts from, so
    its index embeds only text that cache has not seen."""
    saved = {k: os.environ.pop(k) for k in _LOCAL_ENV if k in os.environ}
    tmp = Path(tempfile.mkdtemp(prefix=PROBE_PREFIX))
    wt = tmp / "brain"
    try:
        repo.run("worktree", "add", "-q", "--detach", str(wt), rev, env={"PAMD_HOOK_INDEX": "0"})
        try:
            if seed_state is not None:
                _seed_caches(seed_state, wt / ".pamd")
            yield wt
        finally:
            try:
                repo.run("worktree", "remove", "--force", "--force", str(wt))
            except PamdError:
                pass  # pruned below once its folder is gone
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
        try:
            repo.run("worktree", "prune")
        except PamdError:
            pass
        os.environ.update(saved)


def _seed_caches(state: Path, into: Path) -> None:
    """Copy the vector cache and the summaries' leaves (sqlite's backup: consistent while
    another process writes them). Both are keyed by content (a text's hash; a summary id
    hashes its tier and sources), so they hold at any commit; without the leaves the
    worktree's index would read every summary's leaves from history (seconds per run)."""
    for name in ("vectors.sqlite", "deep.sqlite"):
        src = state / name
        if not src.is_file():
            continue
        into.mkdir(parents=True, exist_ok=True)
        try:
            with sqlite3.connect(f"file:{src}?mode=ro", uri=True) as a, sqlite3.connect(into / name) as b:
                a.backup(b)
        except sqlite3.Error:
            (into / name).unlink(missing_ok=True)  # only lost work: it is made again
