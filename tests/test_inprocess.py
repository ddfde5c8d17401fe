"""pamd's commands run in-process, side by side on threads, as tests and servers run them.

A thread that swaps sys.stdout while another prints frees a stream in use (print() holds it
by a borrowed reference): SIGSEGV. GitPython's `git cat-file` kept alive per Repo is stopped
only by Repo.__del__, from whatever thread the garbage collector runs in, blocked in waitpid.
"""

from __future__ import annotations

import io
import os
import sys
import threading
from pathlib import Path

from pamd.cli import main
from pamd.edge.git import Repo


class Recorder(io.StringIO):
    """A stream that notes, at every write, whether it was still the process's own."""

    def __init__(self, name: str) -> None:
        super().__init__()
        self.name = name
        self.swapped = 0

    def write(self, text: str) -> int:
        if getattr(sys, self.name) is not self:
            self.swapped += 1
        return super().write(text)


def test_a_command_on_another_thread_leaves_the_process_streams_alone(brain, monkeypatch):
    out, err = Recorder("stdout"), Recorder("stderr")
    monkeypatch.setattr(sys, "stdout", out)
    monkeypatch.setattr(sys, "stderr", err)
    codes: list[int] = []

    def work() -> None:
        codes.append(main(["status", "--brain", str(brain.cwd)]))
        codes.append(main(["recall", "--brain", "/nonexistent/brain", "x"]))  # an error on stderr

    t = threading.Thread(target=work)
    t.start()
    t.join()
    assert codes == [0, 1]
    assert out.getvalue() and err.getvalue().startswith("pamd: error:")
    assert (out.swapped, err.swapped) == (0, 0)
    assert (sys.stdout, sys.stderr) == (out, err)


def _children() -> set[int]:
    """The processes this one has started that still run (Linux: /proc)."""
    found: set[int] = set()
    for task in Path(f"/proc/{os.getpid()}/task").iterdir():
        try:
            found |= {int(p) for p in (task / "children").read_text().split()}
        except OSError:
            continue
    return found


def test_a_repo_keeps_no_git_process_running_behind_it(brain):
    before = _children()
    repo = Repo(brain.cwd)
    assert repo.head() and repo.branch() == "main"
    assert repo.rev_parse("HEAD") == repo.head()
    assert _children() - before == set()
    assert main(["status", "--brain", str(brain.cwd)]) == 0
    assert _children() - before == set()
