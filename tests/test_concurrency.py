"""Two runs at once, a killed lock holder, and a person editing while the daemon works.

Real `pamd` subprocesses on real brains. A brain's own pre-commit hook that
sleeps holds a run inside its commit for as long as a test needs, so the
overlap of two runs is certain, not a matter of luck.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from conftest import git
from test_compaction import START, iso, week  # noqa: F401 - the shared fixture

from pamd.core.fmt import parse_doc

COMPACT_NOW = iso(START + timedelta(days=1, hours=6))


def start(root: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "pamd", *args], cwd=root, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            env={**os.environ, **(env or {})}, start_new_session=True)


def slow_commits(root: Path, seconds: float) -> Path:
    """Make every commit of this brain sit `seconds` in its pre-commit hook; return its marker."""
    marker = root / ".git" / "hook-started"
    hook = root / ".git" / "hooks" / "pre-commit"
    hook.parent.mkdir(exist_ok=True)
    hook.write_text(f"#!/bin/sh\ntouch .git/hook-started\nsleep {seconds}\n")
    hook.chmod(0o755)
    return marker


def no_hooks(root: Path) -> None:
    (root / ".git" / "hooks" / "pre-commit").unlink(missing_ok=True)
    (root / ".git" / "hook-started").unlink(missing_ok=True)


def wait_for(path: Path, timeout: float = 20) -> None:
    deadline = time.monotonic() + timeout
    while not path.exists():
        assert time.monotonic() < deadline, f"{path} never appeared"
        time.sleep(0.02)


def set_git_config(root: Path, **values) -> None:
    cfg = root / "pamd.toml"
    text = cfg.read_text()
    for key, value in values.items():
        old = next(ln for ln in text.splitlines() if ln.startswith(f"{key} ="))
        text = text.replace(old, f"{key} = {json.dumps(value)}")
    cfg.write_text(text)
    git(root, "commit", "-qam", "config")


def pamd_commits(root: Path, since: str) -> list[str]:
    return git(root, "rev-list", "--reverse", f"{since}..HEAD", "--grep=^Pamd-Run-Id: ").split()


def assert_linear_one_commit_per_run(root: Path, since: str) -> None:
    assert git(root, "rev-list", "--merges", "--count", f"{since}..HEAD").strip() == "0"
    for sha in pamd_commits(root, since):
        body = git(root, "log", "-1", "--format=%B", sha)
        assert body.count("Pamd-Run-Id: ") == 1


def all_ids(root: Path) -> set[str]:
    """Every id the tree knows: entries, summaries' sources, the ingest ledger."""
    ids = set()
    for p in [*root.glob("memory/L*/*.md"), root / "MEMORY.md"]:
        for e in parse_doc(p.read_text(), str(p), "L0").entries:
            ids.add(e.id)
            ids.update(e.sources)
    for p in root.glob("memory/ledger/*.txt"):
        ids.update(p.read_text().split())
    return ids


def more_messages(tmp_path: Path, n: int = 5, day: int = 1) -> Path:
    f = tmp_path / f"more-{day}.jsonl"
    rows = [{"ts": iso(START + timedelta(days=day, hours=5, minutes=i)), "role": "user",
             "text": f"Late message {i}: Anna shipped v{i}."} for i in range(n)]
    f.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return f


def test_two_compacts_at_once_the_second_waits_then_finds_the_work_done(week, tmp_path):
    root = week.cwd
    ref = tmp_path / "ref"
    subprocess.run(["git", "clone", "-q", str(root), str(ref)], check=True)
    assert week("compact", "--brain", str(ref), now=COMPACT_NOW)[0] == 0
    head0 = git(root, "rev-parse", "HEAD").strip()
    marker = slow_commits(root, 1.0)
    a = start(root, "compact", "--now", COMPACT_NOW)
    wait_for(marker)  # a holds the lock, inside its commit
    b = start(root, "compact", "--now", COMPACT_NOW)
    out_a, err_a = a.communicate(timeout=60)
    out_b, err_b = b.communicate(timeout=60)
    assert a.returncode == 0 and b.returncode == 0, (err_a, err_b)
    assert "pamd compact:" in out_a and "nothing to compact" in out_b
    assert len(pamd_commits(root, head0)) == 1
    assert_linear_one_commit_per_run(root, head0)
    assert git(root, "rev-parse", "HEAD^{tree}") == git(ref, "rev-parse", "HEAD^{tree}")


def test_compact_and_ingest_at_once_lose_nothing(week, tmp_path):
    root = week.cwd
    head0 = git(root, "rev-parse", "HEAD").strip()
    before = all_ids(root)
    marker = slow_commits(root, 1.0)
    a = start(root, "compact", "--now", COMPACT_NOW)
    wait_for(marker)
    b = start(root, "ingest", str(more_messages(tmp_path)), "--now", COMPACT_NOW)
    t = time.monotonic()
    _, err_a = a.communicate(timeout=60)
    _, err_b = b.communicate(timeout=60)
    assert a.returncode == 0 and b.returncode == 0, (err_a, err_b)
    assert time.monotonic() - t >= 0.5  # b had to wait for a's commit and make its own
    commits = pamd_commits(root, head0)
    assert [git(root, "log", "-1", "--format=%(trailers:key=Pamd-Run,valueonly)", c).strip()
            for c in commits] == ["compact", "ingest"]
    assert_linear_one_commit_per_run(root, head0)
    # Nothing lost: every entry before is still an entry, a summary's source or in
    # the ledger, and the five new messages are in the tree as entries.
    after = all_ids(root)
    assert before <= after
    texts = [e.text for p in root.glob("memory/L0/*.md") for e in parse_doc(p.read_text()).entries]
    assert sum("Late message" in t for t in texts) == 5
    assert git(root, "status", "--porcelain") == ""
    assert week("check")[0] == 0


def test_on_lock_fail_exits_75_with_one_clear_line_and_changes_nothing(week, tmp_path):
    root = week.cwd
    set_git_config(root, on_lock="fail")
    head0 = git(root, "rev-parse", "HEAD").strip()
    marker = slow_commits(root, 1.5)
    a = start(root, "compact", "--now", COMPACT_NOW)
    wait_for(marker)
    b = start(root, "ingest", str(more_messages(tmp_path)), "--now", COMPACT_NOW)
    out_b, err_b = b.communicate(timeout=30)
    assert a.wait(timeout=60) == 0
    assert b.returncode == 75
    assert err_b.startswith("pamd: error: another pamd run holds the brain's lock (pid ")
    assert err_b.count("\n") == 1 and "Traceback" not in err_b
    assert len(pamd_commits(root, head0)) == 1  # only a's
    no_hooks(root)
    assert week("ingest", str(more_messages(tmp_path)), now=COMPACT_NOW)[0] == 0  # later: fine


def test_wait_gives_up_after_lock_timeout_with_exit_75(week, tmp_path):
    root = week.cwd
    set_git_config(root, lock_timeout=0.5)
    marker = slow_commits(root, 3)
    a = start(root, "compact", "--now", COMPACT_NOW)
    wait_for(marker)
    t = time.monotonic()
    b = start(root, "compact", "--now", COMPACT_NOW)
    _, err_b = b.communicate(timeout=30)
    waited = time.monotonic() - t
    assert b.returncode == 75 and "holds the brain's lock" in err_b
    assert 0.4 <= waited < 2.8  # it waited, but not for a's whole commit
    assert a.wait(timeout=60) == 0


def test_a_killed_lock_holder_does_not_block_the_next_run(week):
    root = week.cwd
    head0 = git(root, "rev-parse", "HEAD").strip()
    marker = slow_commits(root, 60)
    a = start(root, "compact", "--now", COMPACT_NOW)
    wait_for(marker)
    os.killpg(a.pid, signal.SIGKILL)  # pamd, its git commit and the hook
    a.wait()
    no_hooks(root)
    t = time.monotonic()
    code, out, err = week("compact", now=COMPACT_NOW)
    assert code == 0, err
    assert time.monotonic() - t < 10  # the kernel dropped the dead run's flock
    assert len(pamd_commits(root, head0)) == 1
    assert git(root, "status", "--porcelain") == ""
    assert not (root / ".git" / "index.lock").exists()


def test_an_orphaned_git_commit_keeps_the_brain_locked_until_it_exits(week, tmp_path):
    """kill -9 of pamd alone leaves its `git commit` running; the next run must wait for it.

    Without the lock fd passed to git, the next run would recover (delete
    index.lock, roll the files back) while the orphan goes on to commit the dead
    run's tree under it.
    """
    root = week.cwd
    ref = tmp_path / "ref"
    subprocess.run(["git", "clone", "-q", str(root), str(ref)], check=True)
    assert week("compact", "--brain", str(ref), now=COMPACT_NOW)[0] == 0
    head0 = git(root, "rev-parse", "HEAD").strip()
    marker = slow_commits(root, 2)
    a = start(root, "compact", "--now", COMPACT_NOW)
    wait_for(marker)
    os.kill(a.pid, signal.SIGKILL)  # pamd only: its git commit lives on, sleeping in the hook
    a.wait()
    t = time.monotonic()
    b = start(root, "compact", "--now", COMPACT_NOW)
    out_b, err_b = b.communicate(timeout=60)
    assert b.returncode == 0, err_b
    assert time.monotonic() - t >= 1.0  # b waited for the orphan
    no_hooks(root)
    assert git(root, "status", "--porcelain") == ""
    assert git(root, "rev-list", "--count", f"{head0}..HEAD").strip() == "1"
    assert git(root, "rev-parse", "HEAD^{tree}") == git(ref, "rev-parse", "HEAD^{tree}")
    assert week("check")[0] == 0


# ---------------------------------------------------------------- person + machine


def test_a_persons_commit_during_a_run_is_never_undone(week, monkeypatch):
    """A person commits DNA.md after the run read it and before it wrote: nothing is undone."""
    from pamd.consolidate import compaction

    root = week.cwd
    real = compaction.summarize_plan

    def person_commits_meanwhile(*args, **kwargs):
        dna = root / "DNA.md"
        dna.write_text(dna.read_text() + "\nA person's line, committed mid-run.\n")
        git(root, "commit", "-qam", "person edits DNA")
        return real(*args, **kwargs)

    monkeypatch.setattr(compaction, "summarize_plan", person_commits_meanwhile)
    head = git(root, "rev-parse", "HEAD").strip()
    code, _, err = week("compact", now=COMPACT_NOW)
    assert code == 1 and "changed while pamd was running" in err
    assert "committed mid-run" in (root / "DNA.md").read_text()
    assert git(root, "rev-parse", "HEAD~1").strip() == head  # only the person's commit
    assert git(root, "status", "--porcelain") == ""
    monkeypatch.setattr(compaction, "summarize_plan", real)
    assert week("compact", now=COMPACT_NOW)[0] == 0  # the next run does the work
    assert "committed mid-run" in (root / "DNA.md").read_text()


def person_git(root: Path, *args: str) -> None:
    """git as a person uses it: when pamd's git holds index.lock, or committed between the
    person's commit reading HEAD and moving it ("cannot lock ref 'HEAD': is at … but
    expected …": git's own refusal to overwrite a commit it did not see), try again.

    Also when a commit finds nothing to commit: for a moment, pamd's own commit can
    hold an edit the person saved while pamd's `git commit` ran, until pamd sees it
    and takes its commit back (Transaction.commit) — the person's next try commits it.
    """
    for _ in range(50):
        r = subprocess.run(["git", *args], cwd=root, capture_output=True, text=True)
        if r.returncode == 0:
            return
        if args[0] != "commit" or "no changes added to commit" not in r.stdout:
            assert "index.lock" in r.stderr or "cannot lock ref 'HEAD'" in r.stderr, r.stderr
        time.sleep(0.05)
    raise AssertionError(f"git {args} kept failing")


def test_person_edits_memory_and_dna_while_the_daemon_runs(brain, tmp_path):
    root = brain.cwd
    # Old messages for the daemon's real-clock compactions to work on, failures each with its
    # fix (lessons go to DNA.md) so its commits touch the files the person edits.
    f = tmp_path / "old.jsonl"
    t0 = datetime.now(UTC) - timedelta(days=2)
    said = [(f"The deploy {n} failed with error {500 + n}.", "user") if i % 2 == 0 else
            (f"Fixed the deploy {n} error {500 + n} by restarting worker-{n}; the deploy {n} works now.",
             "assistant") for i in range(24) for n in [i // 2]]
    f.write_text("".join(json.dumps({"ts": (t0 + timedelta(minutes=7 * i)).isoformat(),
                                     "role": role, "session": f"s{(i // 2) % 3}", "text": text}) + "\n"
                         for i, (text, role) in enumerate(said)))
    assert brain("ingest", str(f), now=None)[0] == 0
    head0 = git(root, "rev-parse", "HEAD").strip()
    daemon = start(root, "daemon", "--compact-every", "0.02")
    person_lines = []
    try:
        memory = root / "MEMORY.md"
        dna = root / "DNA.md"
        for i in range(40):
            # twelve rounds at least, then until a daemon commit has written DNA.md between
            # the person's commits (on a loaded machine its runs meet their edits and stop)
            if i >= 12 and any("DNA.md" in git(root, "show", "--name-only", "--format=", c)
                               for c in pamd_commits(root, head0)):
                break
            time.sleep(0.4)
            line = f"Person's committed DNA note {i}."
            dna.write_text(dna.read_text() + f"\n{line}\n")
            person_git(root, "add", "DNA.md")
            person_git(root, "commit", "-qm", f"person {i}", "--", "DNA.md")
            person_lines.append(line)
            if i == 4:  # an edit the person keeps uncommitted from here on
                memory.write_text(memory.read_text() + "\nMy uncommitted MEMORY note.\n")
            # The agent keeps talking meanwhile.
            assert brain("remember", f"Deploy {i} failed with error {i}", now=None)[0] == 0
        time.sleep(2.5)  # let the daemon run at least once more
    finally:
        daemon.send_signal(signal.SIGTERM)
        _, log = daemon.communicate(timeout=60)
    assert daemon.returncode == 0, log
    assert "Traceback" not in log
    runs = [c for c in pamd_commits(root, head0)
            if "Pamd-Run: compact" in git(root, "log", "-1", "--format=%B", c)]
    assert runs, f"the daemon never committed:\n{log}"
    assert_linear_one_commit_per_run(root, head0)
    # No edit lost: every committed line is in the tree, the uncommitted edit is
    # still uncommitted and only in the work tree.
    text = (root / "DNA.md").read_text()
    assert all(line in text for line in person_lines)
    assert "My uncommitted MEMORY note." in (root / "MEMORY.md").read_text()
    assert git(root, "status", "--porcelain").strip() == "M MEMORY.md"
    for c in pamd_commits(root, head0):
        stat = git(root, "show", "--stat", "--format=", c)
        diff = git(root, "show", "--format=", c, "--", "DNA.md", "MEMORY.md")
        removed = [ln for ln in diff.splitlines() if ln.startswith("-") and "Person's" in ln]
        assert not removed, f"pamd commit {c} undid a person's line:\n{diff}"
        added = [ln for ln in diff.splitlines() if ln.startswith("+") and "Person's" in ln]
        assert not added, f"pamd commit {c} took a person's line:\n{diff}"
        assert "uncommitted MEMORY note" not in git(root, "show", c), f"swept into {c}:\n{stat}"
    touched = [c for c in pamd_commits(root, head0)
               if "DNA.md" in git(root, "show", "--name-only", "--format=", c)]
    assert touched, "no daemon commit wrote DNA.md: the race was never run"


@pytest.mark.parametrize("moment", ["before-write", "after-fsync", "before-git-add"])
def test_an_edit_saved_mid_commit_is_neither_overwritten_nor_swept(week, monkeypatch, moment):
    """A person's editor saves STATE.md in the instant between pamd's checks and its commit.

    "after-fsync": while pamd's temp file was being synced (milliseconds), after the last
    check: the rename then replaced the person's save (likely how the person+daemon race
    test lost a DNA.md line about once in 30 runs). The check now runs after it."""
    from pamd.edge import brain as brain_mod

    root = week.cwd
    state = root / "STATE.md"
    mine = state.read_text() + "\nThe person's edit, saved at the worst moment.\n"
    head = git(root, "rev-parse", "HEAD").strip()
    if moment == "before-write":
        real_dirty = brain_mod.Repo.dirty

        def dirty_then_person_saves(self, paths=None):
            found = real_dirty(self, paths)
            # right after the commit's own check of the files it writes (compaction looks
            # at STATE.md earlier too, to leave it alone when it is already being edited)
            if paths and "STATE.md" in paths and sys._getframe(1).f_code.co_name == "commit":
                state.write_text(mine)
            return found

        monkeypatch.setattr(brain_mod.Repo, "dirty", dirty_then_person_saves)
    elif moment == "after-fsync":
        real_write = brain_mod.write_atomic

        def person_saves_during_the_fsync(path, text, before_replace=None):
            def then_check():
                if path == state:
                    state.write_text(mine)
                if before_replace is not None:
                    before_replace()
            real_write(path, text, then_check)

        monkeypatch.setattr(brain_mod, "write_atomic", person_saves_during_the_fsync)
    else:
        real_write = brain_mod.write_atomic

        def write_then_person_saves(path, text, before_replace=None):
            real_write(path, text, before_replace)
            if path == state:
                state.write_text(mine)

        monkeypatch.setattr(brain_mod, "write_atomic", write_then_person_saves)
    code, _, err = week("compact", now=COMPACT_NOW)
    assert code == 1 and "STATE.md changed while pamd was" in err
    assert state.read_text() == mine  # not overwritten
    assert git(root, "rev-parse", "HEAD").strip() == head  # not swept into a commit
    assert git(root, "status", "--porcelain").strip() == "M STATE.md"
    assert not (root / ".pamd" / "txn.json").exists()
    monkeypatch.undo()
    git(root, "commit", "-qam", "person's STATE edit")
    assert week("compact", now=COMPACT_NOW)[0] == 0
    assert "worst moment" in state.read_text() or "worst moment" in git(root, "show", "HEAD~1")


def test_pamds_git_reads_never_take_the_index_lock(brain):
    """`git status` refreshes a stale index under index.lock unless told not to, and
    `git diff` does even when told; a kill during such a read (before any journal
    exists) would leave a lock that blocks every later commit (the crash test's
    outside-group kill of defrag found the `git diff`). pamd's reads must leave the
    index file untouched."""
    from pamd.edge.git import Repo

    root = brain.cwd
    code, _, err = brain("remember", "the lab key is in the blue drawer")
    assert code == 0, err
    memory = next(p for p in root.rglob("*.md") if p.is_file() and ".git" not in p.parts
                  and git(root, "ls-files", "--", str(p.relative_to(root))))
    index = root / ".git" / "index"
    before = index.stat()
    os.utime(memory, (before.st_mtime + 5, before.st_mtime + 5))  # stat info now stale
    repo = Repo(root)
    # every git read a run makes before its journal exists (Brain.transaction, Transaction)
    assert repo.dirty() == [] and repo.conflicted() == [] and repo.in_progress() is None
    assert repo.tracked(str(memory.relative_to(root))) and repo.head()
    assert repo.ignored(["STATE.md"]) == [] and repo.untracked_at(repo.head(), ["STATE.md"]) == []
    after = index.stat()
    assert (after.st_ino, after.st_mtime_ns) == (before.st_ino, before.st_mtime_ns)
    # The same read through plain git does rewrite it: the check above can fail.
    git(root, "status", "--porcelain")
    assert index.stat().st_ino != before.st_ino


def test_unresolved_conflicts_without_a_merge_in_progress_stop_a_run(brain):
    """A `git stash pop` that conflicts leaves unmerged entries but no MERGE_HEAD: pamd
    finds them in the index (`git ls-files --unmerged`) and touches nothing."""
    from pamd.edge.git import Repo

    root = brain.cwd
    note = root / "notes of mine.md"
    env = {**os.environ, "GIT_AUTHOR_NAME": "P", "GIT_AUTHOR_EMAIL": "p@x",
           "GIT_COMMITTER_NAME": "P", "GIT_COMMITTER_EMAIL": "p@x"}

    def run_git(*args: str, check: bool = True) -> subprocess.CompletedProcess:
        return subprocess.run(["git", *args], cwd=root, env=env, capture_output=True, text=True,
                              check=check)

    note.write_text("base\n")
    run_git("add", note.name)
    run_git("commit", "-qm", "note")
    note.write_text("stashed edit\n")
    run_git("stash", "-q")
    note.write_text("committed edit\n")
    run_git("commit", "-qam", "edit")
    assert run_git("stash", "pop", check=False).returncode != 0  # the conflict
    assert not (root / ".git" / "MERGE_HEAD").exists()
    assert Repo(root).conflicted() == [note.name]
    head = git(root, "rev-parse", "HEAD")
    code, _, err = brain("remember", "the lab key is in the blue drawer")
    assert code != 0 and "unresolved conflicts in notes of mine.md" in err, err
    assert git(root, "rev-parse", "HEAD") == head


@contextmanager
def slow_gemini(root: Path):
    """The brain summarises with gemini against a stub on 127.0.0.1 that holds each request
    until `answer` is set; `asked` is set when one arrives. Yields (stub, asked, answer)."""
    import threading

    from gemini_stub import GeminiStub, echo
    from test_compaction import _use_gemini

    asked, answer = threading.Event(), threading.Event()

    def slow(request):
        asked.set()
        answer.wait(30)
        return echo(request)

    with GeminiStub(responder=slow) as stub:
        _use_gemini(root, stub.base_url)
        yield stub, asked, answer


def test_a_slow_llm_does_not_hold_the_lock_so_a_remember_goes_through(week):
    """An LLM batch can take minutes (timeouts, retries, backoff): the run calls it without the
    brain's lock, then plans again under the lock and commits. A `remember` meanwhile neither
    waits nor fails (on_lock = "fail" here), and nothing is summarised twice."""
    root = week.cwd
    set_git_config(root, on_lock="fail")
    env = {"GEMINI_API_KEY": "stub-key"}
    with slow_gemini(root) as (stub, asked, answer):
        head0 = git(root, "rev-parse", "HEAD").strip()
        a = start(root, "compact", "--now", COMPACT_NOW, env=env)
        assert asked.wait(30)
        b = start(root, "remember", "The build box moved to rack 4.", "--now", COMPACT_NOW, env=env)
        out_b, err_b = b.communicate(timeout=30)
        answer.set()
        _, err_a = a.communicate(timeout=60)
        payloads = [json.dumps(r.groups, sort_keys=True) for r in stub.requests]
    assert b.returncode == 0, err_b
    assert a.returncode == 0, err_a
    runs = [git(root, "log", "-1", "--format=%(trailers:key=Pamd-Run,valueonly)", c).strip()
            for c in pamd_commits(root, head0)]
    assert runs == ["remember", "compact"]
    assert_linear_one_commit_per_run(root, head0)
    assert len(payloads) == len(set(payloads)) >= 1
    body = git(root, "log", "-1", "--format=%B")
    assert "Pamd-Summarizer: gemini" in body and "Pamd-Fallback" not in body
    texts = [e.text for p in root.glob("memory/L0/*.md") for e in parse_doc(p.read_text()).entries]
    assert "The build box moved to rack 4." in texts
    assert git(root, "status", "--porcelain") == ""
    assert week("check")[0] == 0


def test_an_edit_committed_while_the_llm_works_is_summarised_afresh_not_overwritten(week):
    """The run planned before a person committed a fix to one of its entries: it plans again
    under the lock, sends only the changed group to the LLM once more, and its summary is of
    the person's text; nothing of theirs is undone."""
    root = week.cwd
    with slow_gemini(root) as (stub, asked, answer):
        head0 = git(root, "rev-parse", "HEAD").strip()
        a = start(root, "compact", "--now", COMPACT_NOW, env={"GEMINI_API_KEY": "stub-key"})
        assert asked.wait(30)
        files = {p: p.read_text() for p in root.glob("memory/L0/*.md")}
        old, path = next((g["messages"][0]["text"], p) for g in stub.requests[0].groups
                         for p, text in files.items() if text.count(g["messages"][0]["text"]) == 1
                         and sum(g["messages"][0]["text"] in t for t in files.values()) == 1)
        path.write_text(path.read_text().replace(old, "Corrected: " + old, 1))
        git(root, "commit", "-qam", "a person corrects an entry")
        answer.set()
        _, err_a = a.communicate(timeout=60)
        later = [g for r in stub.requests[1:] for g in r.groups]
    assert a.returncode == 0, err_a
    runs = [git(root, "log", "-1", "--format=%s", c).split(":")[0] for c in pamd_commits(root, head0)]
    assert runs == ["pamd compact"]
    assert git(root, "log", "-1", "--format=%s", "HEAD~1").strip() == "a person corrects an entry"
    # Only the group the person changed went to the LLM again, with their text.
    assert [g["messages"][0]["text"] for g in later] == ["Corrected: " + old]
    summaries = [e.text for p in root.glob("memory/L[123]/*.md") for e in parse_doc(p.read_text()).entries]
    assert any(t.startswith("summary of Corrected: ") for t in summaries)
    assert git(root, "status", "--porcelain") == ""
    assert week("check")[0] == 0


def test_llm_work_made_useless_meanwhile_is_said_since_no_commit_records_it(week):
    """The LLM summarised without the lock; meanwhile another run compacted everything, so the
    run ends with nothing to commit. Its tokens, which a commit's trailers would have recorded,
    are said on stderr instead of vanishing."""
    import re

    root = week.cwd
    with slow_gemini(root) as (stub, asked, answer):
        a = start(root, "compact", "--now", COMPACT_NOW, env={"GEMINI_API_KEY": "stub-key"})
        assert asked.wait(30)
        cfg = root / "pamd.toml"
        cfg.write_text(re.sub(r'(?m)^backend = .*$', 'backend = "extractive"', cfg.read_text(), count=1))
        git(root, "commit", "-qam", "back to extractive")
        assert week("compact", now=COMPACT_NOW)[0] == 0  # takes the lock a's LLM call left free
        head = git(root, "rev-parse", "HEAD")
        answer.set()
        out_a, err_a = a.communicate(timeout=60)
        requests = len(stub.requests)
    assert a.returncode == 0, err_a
    assert out_a == "nothing to compact\n" and git(root, "rev-parse", "HEAD") == head
    assert requests >= 1
    (warning,) = err_a.splitlines()
    assert re.fullmatch(r"pamd: warning: spent [\d,]+ LLM tokens in and [\d,]+ out \(\d+ requests?"
                        r"(, \$[\d.]+)?\) on summaries the brain no longer needed: .*", warning), warning
    assert git(root, "status", "--porcelain") == ""
