"""pamd's commits land on the brain's home branch or nowhere: never on a detached HEAD or a
branch a person checked out (a defrag pull request under review)."""

from __future__ import annotations

import json

import pytest
from conftest import git


@pytest.fixture
def fed(brain, tmp_path):
    src = tmp_path / "a.jsonl"
    src.write_text("".join(json.dumps({"ts": f"2026-11-30T10:0{i}:00Z", "role": "user",
                                       "text": f"We decided to run migration {i} on Friday."}) + "\n"
                           for i in range(3)))
    assert brain("ingest", str(src))[0] == 0
    return brain


@pytest.mark.parametrize("where", ["review-branch", "detached"])
@pytest.mark.parametrize("argv", [["remember", "The staging host is db-2."], ["compact"], ["defrag"],
                                  ["run-due"]])
def test_a_run_away_from_the_home_branch_is_refused_with_the_way_back(fed, where, argv):
    root = fed.cwd
    main = git(root, "rev-parse", "main").strip()
    if where == "detached":
        git(root, "checkout", "-q", "--detach")
    else:
        git(root, "checkout", "-q", "-b", "pamd-defrag-review")
    head = git(root, "rev-parse", "HEAD").strip()
    code, out, err = fed(*argv, now="2026-12-03T12:00:00Z")
    assert code == 1, (out, err)
    assert err.count("\n") == 1 and err.startswith("pamd: error: ")
    assert "git switch main" in err
    assert ("detached" in err) if where == "detached" else ("pamd-defrag-review" in err)
    assert git(root, "rev-parse", "HEAD").strip() == head
    assert git(root, "rev-parse", "main").strip() == main
    assert git(root, "status", "--porcelain") == ""
    git(root, "switch", "-q", "main")
    code, out, err = fed(*argv, now="2026-12-03T12:00:00Z")
    assert code == 0, err


def test_a_configured_home_branch_is_followed(fed):
    root = fed.cwd
    git(root, "checkout", "-q", "-b", "agent")
    cfg = root / "pamd.toml"
    cfg.write_text(cfg.read_text().replace("[git]\n", '[git]\nbranch = "agent"\n'))
    git(root, "commit", "-qam", "home is agent")
    assert fed("remember", "The agent branch is home.")[0] == 0
    assert git(root, "log", "-1", "--format=%(trailers:key=Pamd-Run,valueonly)", "agent").split() == ["remember"]
    git(root, "checkout", "-q", "--detach")
    code, _, err = fed("remember", "Not here.")
    assert code == 1 and "git switch agent" in err


def test_defrag_branch_still_commits_on_its_own_branch(fed):
    root = fed.cwd
    code, out, err = fed("defrag", "--branch", "pamd/defrag-test", now="2026-12-03T12:00:00Z")
    assert code == 0, err
    assert git(root, "rev-parse", "--abbrev-ref", "HEAD").strip() == "main"
    assert git(root, "rev-list", "--count", "main..pamd/defrag-test").strip() == "1"


def test_origins_head_names_the_home_branch_wherever_git_keeps_it(fed):
    """pamd reads origin's HEAD only where git's files can hold it: a symbolic ref set by a
    clone (or `git remote set-head`) is still found, also after `git pack-refs`, and also
    when the branch it names is gone."""
    from pamd.edge.git import Repo

    root = fed.cwd
    repo = Repo(root)
    assert repo.home_branch() == "main"
    git(root, "update-ref", "refs/remotes/origin/trunk", "HEAD")
    git(root, "symbolic-ref", "refs/remotes/origin/HEAD", "refs/remotes/origin/trunk")
    assert repo.home_branch() == "trunk"
    git(root, "pack-refs", "--all")
    assert repo.home_branch() == "trunk"
    git(root, "update-ref", "-d", "refs/remotes/origin/trunk")
    assert repo.home_branch() == "trunk"
    code, _, err = fed("remember", "The home branch is trunk.")
    assert code == 1 and "git switch trunk" in err
    git(root, "symbolic-ref", "--delete", "refs/remotes/origin/HEAD")
    assert repo.home_branch() == "main"
    assert fed("remember", "The home branch is main again.")[0] == 0
