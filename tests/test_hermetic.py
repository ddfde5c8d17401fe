"""The tests see none of the machine they run on: its git config, its temp folder, pamd's variables.

CI runs the suite with the machine's global python, HOME and git config, as root; a person runs it
from a shell with their own. What conftest pins is checked here, so a test that passes only by the
luck of one environment fails on every machine instead.
"""

from __future__ import annotations

import os
import subprocess
import tempfile
from pathlib import Path

from conftest import FOREIGN_ENV


def test_git_reads_only_the_tests_own_config(tmp_path):
    # XDG_CONFIG_HOME names a second global config (a global commit.gpgsign, core.hooksPath or
    # diff.noprefix there reached every test's git); GIT_CONFIG_GLOBAL and the system file too.
    out = subprocess.run(["git", "config", "--list", "--show-origin"], cwd=tmp_path, capture_output=True,
                         text=True, check=True).stdout
    origins = {line.split("\t", 1)[0] for line in out.splitlines()}
    assert origins == {f"file:{Path(os.environ['HOME']) / '.gitconfig'}"}, out
    assert not [var for var in FOREIGN_ENV if var in os.environ]


def test_temp_files_and_crash_logs_stay_in_the_tests_own_folder(brain, monkeypatch):
    """An internal error's log went to /tmp/pamd-crash-*.log, from every test that injects one; and
    an exception whose message spans lines (git's) printed them all, not one line naming the log."""
    here = Path(tempfile.gettempdir())
    assert Path(os.environ["TMPDIR"]) == here and "pytest" in str(here)

    def explode(*args, **kwargs):  # as a GitCommandError says it: cmdline, stderr on lines below
        raise RuntimeError("injected\n  cmdline: git add -- x.md\n  stderr: 'fatal: x'")

    monkeypatch.setattr("pamd.commands.status.run", explode)
    code, _, err = brain("status")
    assert code == 3 and len(err.strip().splitlines()) == 1, err
    logs = list(here.glob("pamd-crash-*.log"))
    assert len(logs) == 1 and f"(details in {logs[0]})" in err
    assert "RuntimeError: injected" in err and "stderr: 'fatal: x'" in logs[0].read_text()


def test_a_tests_monkeypatch_undo_keeps_the_isolation(tmp_path, monkeypatch):
    """Two tests call `monkeypatch.undo()` mid-test; it undid conftest's isolation too (the same
    fixture), so their next `git commit` ran with the machine's HOME, identity and config."""
    home = os.environ["HOME"]
    monkeypatch.setenv("PAMD_NOW", "2026-11-30T12:00:00Z")
    monkeypatch.undo()
    assert os.environ["HOME"] == home and "PAMD_NOW" not in os.environ
    assert Path(tempfile.gettempdir()) == Path(os.environ["TMPDIR"])
