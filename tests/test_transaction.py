"""Transaction.commit's rollback against files HEAD does not hold, in real brains."""

from __future__ import annotations

import pytest
from conftest import git, head_count

from pamd.edge import brain as brain_mod
from pamd.edge.brain import Brain
from pamd.errors import PamdError


@pytest.fixture
def ignored_scratch(brain):
    root = brain.cwd
    with (root / ".gitignore").open("a") as f:
        f.write("scratch.md\n")
    git(root, "commit", "-qam", "ignore scratch.md")
    scratch = root / "scratch.md"
    scratch.write_text("a person's private notes\n")
    hook = root / ".git" / "hooks" / "pre-commit"  # and a commit of it fails
    hook.parent.mkdir(exist_ok=True)
    hook.write_text("#!/bin/sh\necho refused >&2\nexit 1\n")
    hook.chmod(0o755)
    return root, scratch


def test_a_failed_commit_puts_back_a_file_head_lacks_never_deletes_it(ignored_scratch, monkeypatch):
    """Without the ignored-file check pamd writes scratch.md, its commit fails and the run
    rolls back: the file must get its bytes from before the run, not vanish like at HEAD."""
    root, scratch = ignored_scratch
    monkeypatch.setattr(brain_mod.Repo, "ignored", lambda self, paths: [])
    b = Brain(root)
    n = head_count(root)
    with pytest.raises(PamdError, match="git commit failed"), b.transaction() as tx:
        tx.commit({"scratch.md": "pamd's text\n"}, "pamd test: write scratch")
    assert scratch.read_text() == "a person's private notes\n"
    assert head_count(root) == n and not (root / ".pamd" / "txn.json").exists()


def test_recovery_puts_back_a_file_head_lacks(ignored_scratch, monkeypatch):
    """A run whose own rollback failed leaves its journal; the next run's recovery
    gives the file back its bytes from before the run."""
    root, scratch = ignored_scratch
    monkeypatch.setattr(brain_mod.Repo, "ignored", lambda self, paths: [])

    def rollback_fails(*args, **kwargs):
        raise OSError("rollback cut short")

    monkeypatch.setattr(brain_mod, "_restore", rollback_fails)
    # the person hears of the first failure, not of the rollback's
    with pytest.raises(PamdError, match="git commit failed"), Brain(root).transaction() as tx:
        tx.commit({"scratch.md": "pamd's text\n"}, "pamd test: write scratch")
    assert scratch.read_text() == "pamd's text\n" and (root / ".pamd" / "txn.json").exists()
    monkeypatch.undo()
    assert Brain(root).recover() == "rolled back"
    assert scratch.read_text() == "a person's private notes\n"


def test_a_rollback_still_deletes_a_file_the_run_created(brain, monkeypatch):
    root = brain.cwd
    hook = root / ".git" / "hooks" / "pre-commit"
    hook.parent.mkdir(exist_ok=True)
    hook.write_text("#!/bin/sh\nexit 1\n")
    hook.chmod(0o755)
    with pytest.raises(PamdError, match="git commit failed"), Brain(root).transaction() as tx:
        tx.commit({"memory/new.md": "pamd's text\n"}, "pamd test: new file")
    assert not (root / "memory" / "new.md").exists()
    assert git(root, "status", "--porcelain") == ""


def test_a_hook_that_refuses_a_commit_is_quoted_by_its_last_words(brain):
    """A plain hook's refusal: pamd's one line quotes what it said last (its verdict), not
    a progress line it printed first; a silent one is said to be silent."""
    root = brain.cwd
    hook = root / ".git" / "hooks" / "pre-commit"
    hook.parent.mkdir(exist_ok=True)
    hook.write_text("#!/bin/sh\necho 'checking the staged files'\necho 'refused: no commits on Friday' >&2\nexit 1\n")
    hook.chmod(0o755)
    code, _, err = brain("remember", "We decided to ship on Monday.")
    assert code == 1 and err.startswith("pamd: error: git commit failed: refused: no commits on Friday ("), err
    assert err.count("\n") == 1 and "checking" not in err
    hook.write_text("#!/bin/sh\nexit 1\n")
    code, _, err = brain("remember", "We decided to ship on Monday.")
    assert code == 1 and "git commit failed: git exited with code 1 and printed nothing" in err, err
    assert git(root, "status", "--porcelain") == ""


def test_what_head_holds_is_read_for_every_path_of_a_commit_at_once(tmp_path):
    """After its commit a run asks, for every path it wrote, whether HEAD holds its text
    (an editor's save can land between pamd's write and git's read): one git call for all
    paths, answering for each path as asking about it alone does."""
    from pamd.edge.git import Repo

    root = tmp_path / "r"
    root.mkdir()
    git(root, "init", "-q", "-b", "main")
    (root / "sub").mkdir()
    for rel, text in (("a.md", "one\n"), ("sub/b.md", "two\n"), ("sub/c.md", "three\n"), ("d [x].md", "d\n")):
        (root / rel).write_text(text)
    git(root, "add", "-A")
    git(root, "commit", "-qm", "start")
    repo = Repo(root)
    texts = {"a.md": "one\n", "sub/b.md": "TWO\n", "sub/c.md": None, "gone.md": None, "new.md": "new\n",
             "d [x].md": "d\n", "d x.md": None}
    assert repo.not_committed(texts) == ["sub/b.md", "sub/c.md", "new.md"]
    assert repo.not_committed({"a.md": "one\n"}) == [] and repo.not_committed({}) == []
    assert [p for p, t in texts.items() if repo.not_committed({p: t})] == ["sub/b.md", "sub/c.md", "new.md"]
