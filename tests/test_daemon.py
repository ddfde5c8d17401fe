"""The daemon as a person runs it: in a terminal (Ctrl-C), under a service manager
(SIGTERM to the whole group), across clock changes. Real processes, real git."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from datetime import timedelta

import pytest
from conftest import git
from test_compaction import START, daemon_beside, defragged_tonight, iso, week  # noqa: F401 - fixture


def _hook(root, script: str) -> None:
    hook = root / ".git" / "hooks" / "pre-commit"
    hook.parent.mkdir(exist_ok=True)
    hook.write_text(script)
    hook.chmod(0o755)


def _wait_for(path, seconds: float = 60) -> None:
    deadline = time.time() + seconds
    while time.time() < deadline and not path.exists():
        time.sleep(0.05)
    assert path.exists(), f"{path} never appeared"


SLOW_HOOKS = {  # a pre-commit hook that says it runs, then takes two seconds
    "python": f"#!{sys.executable}\nimport sys, time\nopen(sys.argv[0] + '.ran', 'w').close()\ntime.sleep(2)\n",
    "sh": "#!/bin/sh\ntouch \"$0.ran\"\nsleep 2\n",
}


@pytest.mark.slow  # three real daemons per hook, each stopped inside a two-second commit
@pytest.mark.parametrize("hook", sorted(SLOW_HOOKS))
def test_ctrl_c_or_a_group_sigterm_mid_commit_finishes_or_cleanly_aborts_the_run(week, hook):
    """Ctrl-C in the daemon's terminal (SIGINT to its process group) or a service manager's
    stop (systemd: SIGTERM to every process of the unit) reached pamd's git children too:
    the `git commit` of a running compaction died, and with it GitPython's `git cat-file`,
    so the rollback failed too and the daemon exited leaving the run half applied (tier
    files deleted and staged, a journal for the next run; `pamd boot` and `status` read an
    empty L0 meanwhile). Now git and pamd's other children ignore the signal and the run
    finishes, as the daemon's "stopping after the current run" says. A brain's shell hook
    resets the signal (git does, for its hooks): it dies, git refuses the commit, and the run
    rolls back cleanly; the daemon stops either way, the tree as before or one commit on.
    SIGHUP (the daemon's terminal closed) killed it outright, mid-commit too: it is now a
    stop like the others (unless `nohup` ignores it)."""
    defragged_tonight(week)
    root = week.cwd
    _hook(root, SLOW_HOOKS[hook])
    marker = root / ".git" / "hooks" / "pre-commit.ran"
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):  # SIGHUP: its terminal closed
        week("remember", f"A note to compact before signal {int(sig)}.", now=iso(START + timedelta(hours=2)))
        before = git(root, "rev-parse", "HEAD").strip()
        marker.unlink(missing_ok=True)  # the hook ran for that commit too
        proc = subprocess.Popen([sys.executable, "-m", "pamd", "daemon", "--compact-every", "0.02",
                                 "--defrag-at", "off"],
                                cwd=root, stderr=subprocess.PIPE, text=True, start_new_session=True)
        try:
            _wait_for(marker)  # the compaction is inside `git commit`
            os.killpg(proc.pid, sig)  # the whole group, as a terminal or systemd does
            _, log = proc.communicate(timeout=60)
        finally:
            if proc.poll() is None:
                proc.kill()
        assert proc.returncode == 0, log
        assert "Traceback" not in log and "unexpectedly" not in log, log
        assert f"received signal {int(sig)}" in log and "daemon stopped" in log, log
        assert git(root, "status", "--porcelain") == "", log
        assert not (root / ".pamd" / "txn.json").exists(), log
        if hook == "python":  # git and the hook ignored it: the run finished
            assert "Pamd-Run: compact" in git(root, "log", "-1", "--format=%B"), log
            assert git(root, "rev-parse", "HEAD~1").strip() == before
        else:
            assert "compact failed: git commit failed" in log, log
            assert git(root, "rev-parse", "HEAD").strip() == before


def _shift_schedules_clock(monkeypatch) -> list:
    """`schedule`'s clock moved by shift[0] (it reads datetime.datetime.now(), naive local)."""
    import datetime as dt
    import types

    import schedule

    shift = [dt.timedelta(0)]

    class Shifted(dt.datetime):
        @classmethod
        def now(cls, tz=None):
            return dt.datetime.now(tz) + shift[0]

    fake = types.ModuleType("shifted_datetime")
    fake.__dict__.update(dt.__dict__)
    fake.datetime = Shifted
    monkeypatch.setattr(schedule, "datetime", fake)  # schedule's own `import datetime`
    return shift


def test_the_clock_set_back_does_not_stall_the_compactions(week, monkeypatch):
    """`schedule` counts its intervals in naive local time: a clock set back (by hand, NTP,
    a dead RTC corrected) or the end of DST in a local zone (an hour back) left the next
    compaction that much further ahead, so the daemon did not compact for the jump plus an
    interval. An interval is now never further ahead than itself."""
    import datetime as dt
    import threading

    defragged_tonight(week)
    root = week.cwd
    shift = _shift_schedules_clock(monkeypatch)

    def compacts() -> int:
        return int(git(root, "rev-list", "--count", "--grep=^Pamd-Run: compact$", "HEAD").strip())

    def note(n: int) -> None:  # something new for each compaction to commit
        assert week("remember", f"Note {n} on the build box.", now=iso(START + timedelta(hours=2)))[0] == 0

    stop = threading.Event()
    seen: list[int] = []

    def drive() -> None:
        try:
            deadline = time.time() + 30
            while time.time() < deadline and compacts() < 1:
                time.sleep(0.1)
            seen.append(compacts())
            note(1)
            shift[0] = dt.timedelta(hours=-1)  # the clock goes back an hour
            time.sleep(4 * 1.2 + 2)  # four intervals
            seen.append(compacts())
        finally:
            stop.set()

    note(0)
    assert daemon_beside(root, drive, stop, compact_minutes=0.02, defrag_at="off",
                         clock=lambda: dt.datetime.now(dt.UTC) + shift[0]) == 0
    assert seen[0] == 1 and seen[1] == 2, seen


def test_the_daemon_lets_go_of_the_embedding_model_between_runs(week, caplog):
    """The daemon refreshes an existing index after each commit, which loads the embedding
    model (e5-small: ~230 MB, 1 s), and kept it loaded for good: an idle daemon sat at
    ~350 MB resident instead of ~35 MB between runs 30 minutes apart, for a load it
    never needs in between. It now lets go of it after each refresh."""
    import logging
    import threading

    from pamd.recall import embed

    defragged_tonight(week)
    root = week.cwd
    assert week("index")[0] == 0
    assert week("remember", "A note to compact.", now=iso(START + timedelta(hours=2)))[0] == 0
    embed._LOADED.clear()
    stop = threading.Event()
    loaded: list[int] = []

    def drive() -> None:
        try:
            deadline = time.time() + 120
            while time.time() < deadline and "index:" not in caplog.text:
                time.sleep(0.1)
            time.sleep(0.5)
            loaded.append(len(embed._LOADED))
        finally:
            stop.set()

    with caplog.at_level(logging.INFO, logger="pamd"):
        assert daemon_beside(root, drive, stop, compact_minutes=0.02, defrag_at="off") == 0
    assert "index: " in caplog.text, caplog.text
    assert loaded == [0], caplog.text


def test_boot_recall_and_status_after_a_run_killed_mid_commit_read_the_rolled_back_brain(week, tmp_path):
    """A compaction killed mid-commit (kill -9 of the daemon, a laptop's crash) leaves the
    tree half applied until the next run recovers it: a daemon's next run is up to 30
    minutes away, or never if the daemon is what died. `pamd boot`, `recall` and `status`
    read that tree meanwhile: the tier files the run had deleted were gone (status: L0 0
    entries; boot: an agent with no recent memory). Reads now recover first, as runs do,
    when no live run holds the lock."""
    root = week.cwd
    now = iso(START + timedelta(days=3))
    log = tmp_path / "checkpoints"
    assert week.proc("compact", now=now, env={"PAMD_FAULT_LOG": str(log)}).returncode == 0
    git(root, "reset", "-q", "--hard", "HEAD~1")
    names = log.read_text().split("\n")
    at = next(int(n.split()[0]) for n in names if n.endswith(" git:commit"))  # all written and staged
    expected = git(root, "ls-files", "-s")
    for command in (["status"], ["boot"], ["recall", "staging box"]):
        killed = week.proc("compact", now=now, env={"PAMD_FAULT_AT": str(at)})
        assert killed.returncode == -signal.SIGKILL
        assert (root / ".pamd" / "txn.json").exists() and git(root, "status", "--porcelain")
        out = week.proc(*command, now=now)
        assert out.returncode == 0, out.stderr
        assert b"rolled back a pamd run that was killed mid-commit" in out.stderr, out.stderr
        assert git(root, "status", "--porcelain") == "" and not (root / ".pamd" / "txn.json").exists()
        assert git(root, "ls-files", "-s") == expected


def test_waking_past_the_defrag_time_makes_one_commit_not_a_compact_and_a_defrag(week, monkeypatch):
    """A laptop that slept through 02:30 woke to the compact job (overdue) and the night's
    defrag at once: the compaction committed first, then the defrag (which does everything
    a compaction does) a second commit and a second index refresh. The defrag now goes
    first, and the compaction after it finds nothing to do."""
    import datetime as dt
    import threading

    root = week.cwd
    shift = _shift_schedules_clock(monkeypatch)
    real = dt.datetime.now(dt.UTC)
    assert week("defrag", now=iso(real))[0] == 0  # tonight's done: nothing due at the start
    assert week("remember", "An old note about the build box.", now=iso(START + timedelta(hours=1)))[0] == 0
    head = git(root, "rev-parse", "HEAD").strip()
    stop = threading.Event()

    def drive() -> None:
        try:
            time.sleep(1.5)
            shift[0] = dt.timedelta(days=1, hours=1)  # asleep for a day
            deadline = time.time() + 60
            while time.time() < deadline and "Pamd-Run: defrag" not in git(root, "log", "-1", "--format=%B"):
                time.sleep(0.2)
            time.sleep(2)
        finally:
            stop.set()

    assert daemon_beside(root, drive, stop, compact_minutes=30, defrag_at="02:30",
                         clock=lambda: dt.datetime.now(dt.UTC) + shift[0]) == 0
    runs = git(root, "log", "--format=%(trailers:key=Pamd-Run,valueonly)", f"{head}..HEAD").split()
    assert runs == ["defrag"], runs


def test_a_daemon_started_under_nohup_keeps_running_when_its_terminal_closes(week):
    defragged_tonight(week)
    proc = subprocess.Popen([sys.executable, "-m", "pamd", "daemon", "--defrag-at", "off"],
                            cwd=week.cwd, stderr=subprocess.PIPE, text=True,
                            preexec_fn=lambda: signal.signal(signal.SIGHUP, signal.SIG_IGN))  # as nohup
    try:
        time.sleep(3)
        proc.send_signal(signal.SIGHUP)
        time.sleep(1.5)
        assert proc.poll() is None
        proc.send_signal(signal.SIGTERM)
        _, log = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0 and "received signal 15" in log and "signal 1;" not in log, log
    # defrag_at is UTC: each line says its time's offset (it was local time, with no zone)
    assert re.match(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d[+-]\d{4} pamd daemon on ", log), log


def test_a_read_on_a_brain_it_cannot_lock_says_so_and_reads(week, tmp_path, monkeypatch):
    """Merged-change review: a read's recovery takes the brain's lock, which a person who may
    only read the brain (another user's, a read-only mount) cannot: `pamd status` and `boot`
    stopped with an internal error (exit 3) whenever a dead run's journal was there."""
    from pamd.edge import brain as brain_mod

    root = week.cwd
    now = iso(START + timedelta(days=3))
    log = tmp_path / "checkpoints"
    assert week.proc("compact", now=now, env={"PAMD_FAULT_LOG": str(log)}).returncode == 0
    git(root, "reset", "-q", "--hard", "HEAD~1")
    at = next(int(n.split()[0]) for n in log.read_text().split("\n") if n.endswith(" git:commit"))
    assert week.proc("compact", now=now, env={"PAMD_FAULT_AT": str(at)}).returncode == -signal.SIGKILL

    def cannot(*args, **kwargs):
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(brain_mod.Lock, "__enter__", cannot)
    for command in (["status"], ["boot"]):
        code, out, err = week(*command, "--now", now)
        assert code == 0 and out, err
        assert "could not be rolled back here (Permission denied)" in err and err.count("\n") == 1
    assert (root / ".pamd" / "txn.json").exists()  # left for a run that may write


def test_a_stop_signal_at_the_start_of_a_held_run_is_not_lost(monkeypatch):
    """Merged-change review: a SIGTERM that came between blocking the stop signals and
    ignoring them was pending, and setting SIG_IGN discards a pending signal: the daemon
    never stopped. It is raised again once the run is over."""
    from pamd.consolidate import schedule

    got = []
    old = signal.signal(signal.SIGTERM, lambda s, f: got.append(s))
    real = signal.pthread_sigmask

    def block_then_signal(how, mask):
        was = real(how, mask)
        if how == signal.SIG_BLOCK:
            os.kill(os.getpid(), signal.SIGTERM)  # arrives blocked: pending
        return was

    monkeypatch.setattr(schedule.signal, "pthread_sigmask", block_then_signal)
    try:
        assert schedule.held_signals(lambda: "ran")() == "ran"
    finally:
        monkeypatch.undo()
        signal.signal(signal.SIGTERM, old)
    assert got == [signal.SIGTERM]
