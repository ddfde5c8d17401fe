"""pamd started with another repository's git environment (a project's hook, an IDE) works on
its brain, and only there; pamd run by git inside the brain keeps git's variables."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import NOW, git

from pamd.edge.git import isolate


@pytest.fixture
def project(tmp_path) -> Path:
    """A person's project repository with one commit."""
    proj = tmp_path / "project"
    proj.mkdir()
    git(proj, "init", "-q")
    (proj / "a.txt").write_text("one\n")
    git(proj, "add", "a.txt")
    git(proj, "commit", "-qm", "first")
    return proj


def _hook(proj: Path, name: str, brain: Path, text: str) -> Path:
    """A hook of the project that calls the real pamd CLI on `brain`; its exit code and
    output land beside it."""
    log = proj.parent / f"{name}.log"
    hook = proj / ".git" / "hooks" / name
    hook.parent.mkdir(exist_ok=True)
    hook.write_text(f'#!/bin/sh\n"{sys.executable}" -m pamd --brain "{brain}" remember "{text}" '
                    f'--now {NOW} >"{log}" 2>&1\necho "rc=$?" >>"{log}"\n')
    hook.chmod(0o755)
    return log


def _pamd(cwd: Path, *args: str, env: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "pamd", *args, "--now", NOW], cwd=cwd,
                          capture_output=True, text=True, env={**os.environ, **env})


def _brain_log(root: Path) -> list[str]:
    return git(root, "log", "--format=%s").splitlines()


def test_pamd_remember_in_a_projects_pre_commit_hook_commits_to_the_brain(brain, project):
    root = brain.cwd
    log = _hook(project, "pre-commit", root, "the project got a commit")
    (project / "a.txt").write_text("two\n")
    # `commit -a` hands its hooks GIT_INDEX_FILE=<project>/.git/index.lock (absolute)
    git(project, "commit", "-qam", "second")
    assert log.read_text().endswith("rc=0\n"), log.read_text()
    assert _brain_log(root)[0].startswith("pamd remember")
    assert git(root, "status", "--porcelain") == ""
    assert git(project, "show", "--name-only", "--format=", "HEAD").split() == ["a.txt"]
    assert git(project, "status", "--porcelain") == ""


def test_pamd_remember_in_a_projects_post_commit_hook(brain, project):
    root = brain.cwd
    log = _hook(project, "post-commit", root, "committed")
    (project / "b.txt").write_text("b\n")
    git(project, "add", "b.txt")
    git(project, "commit", "-qm", "second")
    assert log.read_text().endswith("rc=0\n"), log.read_text()
    assert len(_brain_log(root)) == 2
    assert git(project, "log", "--format=%s").splitlines() == ["second", "first"]


def test_another_repos_git_dir_and_work_tree_are_not_the_brains(brain, project):
    root = brain.cwd
    env = {"GIT_DIR": str(project / ".git"), "GIT_WORK_TREE": str(project)}
    r = _pamd(project, "--brain", str(root), "remember", "from an IDE", env=env)
    assert r.returncode == 0, r.stderr
    assert _brain_log(root)[0].startswith("pamd remember")
    assert git(project, "log", "--format=%s").splitlines() == ["first"]
    assert git(project, "status", "--porcelain") == ""


def test_init_under_another_repos_git_dir_makes_the_brains_own_repository(project, tmp_path):
    target = tmp_path / "b2"
    r = _pamd(project, "init", str(target), env={"GIT_DIR": str(project / ".git")})
    assert r.returncode == 0, r.stderr
    assert (target / ".git").is_dir()
    assert _brain_log(target) == ["pamd init: new brain"]
    assert git(project, "log", "--format=%s").splitlines() == ["first"]


def test_another_repos_object_directory_does_not_take_the_brains_objects(brain, project, tmp_path):
    root = brain.cwd
    quarantine = tmp_path / "incoming"
    quarantine.mkdir()
    env = {"GIT_OBJECT_DIRECTORY": str(quarantine),
           "GIT_ALTERNATE_OBJECT_DIRECTORIES": str(project / ".git" / "objects")}
    r = _pamd(project, "--brain", str(root), "remember", "during a push", env=env)
    assert r.returncode == 0, r.stderr
    assert list(quarantine.iterdir()) == []
    subprocess.run(["git", "fsck", "--no-dangling"], cwd=root, check=True, capture_output=True)


def test_isolate_keeps_the_brains_own_variables_and_drops_another_repos(brain, project, monkeypatch):
    root = brain.cwd
    monkeypatch.chdir(root)
    # what git hands pamd's hook during a commit in the brain: the brain's own
    monkeypatch.setenv("GIT_INDEX_FILE", str(root / ".git" / "next-index-1.lock"))
    monkeypatch.setenv("GIT_PREFIX", "")
    isolate(root)
    assert os.environ["GIT_INDEX_FILE"] == str(root / ".git" / "next-index-1.lock")
    monkeypatch.setenv("GIT_INDEX_FILE", ".git/index")  # relative to the hook's cwd
    isolate(root)
    assert os.environ["GIT_INDEX_FILE"] == ".git/index"
    monkeypatch.setenv("GIT_WORK_TREE", str(root))
    isolate(root)
    assert os.environ["GIT_WORK_TREE"] == str(root)
    # a project's: all of git's per-repository variables go
    monkeypatch.chdir(project)
    isolate(root)
    assert "GIT_INDEX_FILE" not in os.environ
    assert "GIT_WORK_TREE" not in os.environ
    assert "GIT_PREFIX" not in os.environ


def test_a_projects_amended_commit_does_not_date_the_brains_commit(brain, project):
    root = brain.cwd
    log = _hook(project, "pre-commit", root, "amended")
    (project / "a.txt").write_text("two\n")
    # `--date` (and `--amend`, which keeps the old one) hands the hook GIT_AUTHOR_DATE
    git(project, "commit", "-qam", "second", "--date=2001-01-01T00:00:00+00:00")
    assert log.read_text().endswith("rc=0\n"), log.read_text()
    assert not git(root, "log", "-1", "--format=%aI").startswith("2001")
    assert git(project, "log", "-1", "--format=%aI").startswith("2001")
