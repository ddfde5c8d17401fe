"""`boot --at` / `state --at`: a date finds a commit by the brain's own time, whatever the machine's zone."""

from __future__ import annotations

import json

import pytest
from conftest import Pamd, git


@pytest.fixture
def dated(tmp_path, capsys, monkeypatch) -> Pamd:
    """A brain whose init is committed at 2026-11-30T19:30Z by the committer clock (no Pamd-Now)."""
    monkeypatch.setenv("GIT_COMMITTER_DATE", "2026-11-30T19:30:00+00:00")
    monkeypatch.setenv("GIT_AUTHOR_DATE", "2026-11-30T19:30:00+00:00")
    p = Pamd(tmp_path, capsys)
    assert p("init", str(tmp_path / "brain"), now=None)[0] == 0
    p.cwd = tmp_path / "brain"
    return p


def head(root) -> str:
    return git(root, "rev-parse", "HEAD").strip()


@pytest.mark.parametrize("tz", ["Asia/Tokyo", "America/New_York", "UTC"])
def test_a_date_without_a_zone_is_utc_whatever_the_machines_zone(dated, tz):
    ok = dated.proc("state", "--at", "2026-11-30T20:00", "--json", now=None, env={"TZ": tz})
    assert ok.returncode == 0, ok.stderr
    early = dated.proc("state", "--at", "2026-11-30T19:00", now=None, env={"TZ": tz})
    assert early.returncode == 1
    assert early.stderr.decode() == "pamd: error: the brain has no commit at or before 2026-11-30T19:00:00Z " \
                                    "(`git log` shows its commits)\n"


def test_a_date_is_matched_against_pamd_now_and_may_carry_an_offset(dated):
    root = dated.cwd
    init = head(root)
    assert dated("remember", "The staging port is 5433.", now="2025-01-05T10:00:00Z")[0] == 0
    aged = head(root)  # Pamd-Now 2025-01-05T10:00Z, committed (by the clock) 2026-11-30T19:30Z
    r = dated.proc("boot", "--at", "2025-01-06", now=None)
    assert r.returncode == 0, r.stderr
    assert r.stdout == dated.proc("boot", "--at", aged, now=None).stdout  # the same commit, its own time
    assert "5433" in r.stdout.decode()
    for at in ("2025-01-05", "2025-01-05T11:00:00+01:00", "2025-01-05T10:00:00Z"):
        code, out, err = dated("state", "--at", at, now=None)
        assert code == 0 and out.startswith(f"# STATE at {aged[:8]}"), (at, err)
    code, _, err = dated("state", "--at", "2025-01-05T09:59:59Z", now=None)
    assert code == 1 and "no commit at or before 2025-01-05T09:59:59Z" in err  # init's time is 2026
    code, out, _ = dated("state", "--at", "2026-11-30T19:30:00Z", now=None)
    assert out.startswith(f"# STATE at {aged[:8]}")  # the newest commit in history whose time fits
    assert init != aged
    code, _, err = dated("state", "--at", "2025-13-01", now=None)
    assert code == 1 and err.startswith("pamd: error: bad time '2025-13-01' for --at")


def test_boot_at_keeps_entry_files_with_non_ascii_names(dated):
    root = dated.cwd
    assert dated("remember", "Заметка: порт staging — 5433.", now="2026-11-30T19:00:00Z")[0] == 0
    (src,) = (root / "memory" / "L0").glob("*.md")
    git(root, "mv", str(src.relative_to(root)), "memory/L0/заметки.md")
    git(root, "commit", "-qm", "a person renames the day file")
    then = dated.proc("boot", "--at", "HEAD", "--json", now=None)
    assert then.returncode == 0, then.stderr
    assert "порт staging" in then.stdout.decode()
    assert json.loads(then.stdout) == json.loads(dated.proc("boot", "--json", now=None).stdout)


def test_after_merging_two_clones_a_date_finds_the_newest_commit_of_either_line(
        tmp_path, capsys, monkeypatch):
    """Two clones of one brain, merged: a date finds the newest commit at or before it on
    either line, not the first that fits in topological order; the merge (no Pamd-Now, its
    committer clock behind the brain's) is no older than its sides."""
    p = Pamd(tmp_path, capsys)
    assert p("init", str(tmp_path / "base"), now="2026-10-01T00:00:00Z")[0] == 0
    git(tmp_path, "clone", "-q", "base", "m1")
    git(tmp_path, "clone", "-q", "base", "m2")
    p.cwd = tmp_path / "m2"  # the other machine: one run before, one after this machine's
    assert p("remember", "Server: backups run on Sunday.", now="2026-10-05T14:00:00Z")[0] == 0
    assert p("remember", "Server: replicas lag at 03:00.", now="2026-12-06T02:30:00Z")[0] == 0
    p.cwd = tmp_path / "m1"
    assert p("remember", "Laptop: VPN is wireguard.", now="2026-11-05T16:00:00Z")[0] == 0
    mine = head(p.cwd)
    monkeypatch.setenv("GIT_COMMITTER_DATE", "2026-10-02T00:00:00+00:00")
    git(p.cwd, "-c", "pull.rebase=false", "pull", "-q", "--no-edit", "../m2", "main")
    merge = head(p.cwd)
    assert len(git(p.cwd, "log", "-1", "--format=%P").split()) == 2
    for at, want in [("2026-11-06", mine), ("2026-12-07", merge)]:
        code, out, err = p("state", "--at", at, now=None)
        assert code == 0 and out.startswith(f"# STATE at {want[:8]}"), (at, out, err)
    code, out, _ = p("boot", "--at", "2026-11-06", now=None)
    assert "wireguard" in out and "Server:" not in out  # this machine's line as it was then


def test_boot_reads_a_merge_at_the_time_a_date_found_it_by(tmp_path, capsys, monkeypatch):
    """`--at` found a person's merge by "no older than its sides", then boot aged every entry
    from the merge's committer date (a month before them); mid-merge, boot showed the other
    side's entries at HEAD's time."""
    p = Pamd(tmp_path, capsys)
    assert p("init", str(tmp_path / "base"), now="2026-10-01T00:00:00Z")[0] == 0
    git(tmp_path, "clone", "-q", "base", "m1")
    git(tmp_path, "clone", "-q", "base", "m2")
    p.cwd = tmp_path / "m2"
    assert p("remember", "Server: replicas lag at 03:00.", now="2026-12-06T02:30:00Z")[0] == 0
    p.cwd = tmp_path / "m1"
    assert p("remember", "Laptop: VPN is wireguard.", now="2026-11-05T16:00:00Z")[0] == 0
    monkeypatch.setenv("GIT_COMMITTER_DATE", "2026-10-02T00:00:00+00:00")
    git(p.cwd, "fetch", "-q", "../m2", "main")
    git(p.cwd, "merge", "-q", "--no-commit", "FETCH_HEAD")  # unresolved: MERGE_HEAD, both sides' files
    code, out, err = p("boot", "--json", now=None)
    assert code == 0 and json.loads(out)["now"] == "2026-12-06T02:30:00Z", err
    git(p.cwd, "commit", "-q", "--no-edit")
    merge = head(p.cwd)
    for args in (["--at", "2026-12-07"], ["--at", merge], []):
        code, out, err = p("boot", "--json", *args, now=None)
        assert code == 0 and json.loads(out)["now"] == "2026-12-06T02:30:00Z", (args, err)
    code, out, _ = p("state", "--at", "2026-12-07", now=None)
    assert out.startswith(f"# STATE at {merge[:8]}")


def test_a_merges_time_reads_its_parents_not_the_whole_history(tmp_path, capsys, monkeypatch):
    """Boot at a person's merge (no Pamd-Now) walked every ancestor with `git log --topo-order`
    on every start: 0.42 s instead of 0.19 s at 20k commits. It now reads the parents' own
    times, through merges of merges, and gets the same time the whole walk gives."""
    from pamd.edge import git as gitmod
    from pamd.edge.brain import Brain
    from pamd.edge.history import history_times, rev_time

    p = Pamd(tmp_path, capsys)
    assert p("init", str(tmp_path / "base"), now="2026-10-01T00:00:00Z")[0] == 0
    for m in ("m1", "m2", "m3"):
        git(tmp_path, "clone", "-q", "base", m)
    for m, day in (("m2", "2026-12-06T02:30:00Z"), ("m3", "2026-12-09T08:00:00Z"),
                   ("m1", "2026-11-05T16:00:00Z"), ("m1", "2026-11-06T16:00:00Z")):
        p.cwd = tmp_path / m
        assert p("remember", f"A note from {m} on {day}.", now=day)[0] == 0
    monkeypatch.setenv("GIT_COMMITTER_DATE", "2026-10-02T00:00:00+00:00")  # a clock behind
    git(tmp_path / "m1", "-c", "pull.rebase=false", "pull", "-q", "--no-edit", "../m2", "main")
    git(tmp_path / "m3", "-c", "pull.rebase=false", "pull", "-q", "--no-edit", "../m2", "main")
    git(tmp_path / "m1", "-c", "pull.rebase=false", "pull", "-q", "--no-edit", "../m3", "main")
    brain = Brain(tmp_path / "m1")
    assert len(git(brain.root, "log", "-1", "--format=%P").split()) == 2
    whole = history_times(brain, "HEAD")[1][head(brain.root)]
    assert whole.isoformat().startswith("2026-12-09T08:00:00")
    calls = []
    log = gitmod.Repo.log
    monkeypatch.setattr(gitmod.Repo, "log", lambda self, *a: calls.append(a) or log(self, *a))
    assert rev_time(brain, "HEAD") == whole
    assert calls and all(a[0] in ("-1", "--no-walk=unsorted") for a in calls), calls
