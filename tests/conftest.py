"""Shared fixtures: real temporary git repos, git identity pinned, nothing touches $HOME."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
DATA = Path(__file__).resolve().parent / "data"
# Small real Claude Code sessions ship with the tests (tests/data/claude-code/README.md); the
# multi-MB working sessions stay in the shared data folder beside the clone, and the few tests that
# read them skip where it is absent (see `long_session`).
CLAUDE = DATA / "claude-code"
SHARED = Path(os.environ.get("PAMD_SHARED", REPO.parent / "shared"))
LONG_SESSIONS = SHARED / "bench" / "data" / "claude-code"
NOW = "2026-11-30T12:00:00Z"


# What the machine's environment could bring in: git's other config files (XDG_CONFIG_HOME
# holds a global config too), another repository (a git hook running the tests sets GIT_DIR or
# GIT_INDEX_FILE), an identity or date, and the variables pamd itself reads.
FOREIGN_ENV = (
    "XDG_CONFIG_HOME", "GIT_CONFIG_GLOBAL", "GIT_CONFIG_SYSTEM", "GIT_CONFIG", "GIT_CONFIG_COUNT",
    "GIT_CONFIG_PARAMETERS", "GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_COMMON_DIR",
    "GIT_OBJECT_DIRECTORY", "GIT_ALTERNATE_OBJECT_DIRECTORIES", "GIT_NAMESPACE", "GIT_CEILING_DIRECTORIES",
    "GIT_AUTHOR_NAME", "GIT_AUTHOR_EMAIL", "GIT_AUTHOR_DATE",
    "GIT_COMMITTER_NAME", "GIT_COMMITTER_EMAIL", "GIT_COMMITTER_DATE",
    "PAMD_BRAIN", "PAMD_NOW", "PAMD_AUTHOR_NAME", "PAMD_AUTHOR_EMAIL", "PAMD_COMMIT", "PAMD_RUN",
    "PAMD_HOOK_INDEX", "PAMD_FAULT_AT", "PAMD_FAULT_LOG", "PAMD_GEMINI_BASE_URL", "PAMD_OPENAI_BASE_URL",
    "GEMINI_API_KEY", "GOOGLE_API_KEY", "OPENAI_API_KEY",
    "ANTHROPIC_API_KEY", "PAMD_ANTHROPIC_BASE_URL", "PAMD_OLLAMA_URL", "CLAUDE_CONFIG_DIR", "CODEX_HOME",
)


def pytest_configure(config) -> None:
    """Stop at once, with one line, when pytest's temp folder lies inside a git repository (a
    TMPDIR or --basetemp in a checkout): a brain cannot live there, and every test would fail."""
    tmp = given = Path(config.option.basetemp or tempfile.gettempdir()).resolve()
    while not tmp.exists():
        tmp = tmp.parent
    env = {k: v for k, v in os.environ.items() if k not in FOREIGN_ENV}
    top = subprocess.run(["git", "rev-parse", "--show-toplevel"], cwd=tmp, capture_output=True, text=True,
                         env=env)
    if top.returncode == 0:
        raise pytest.UsageError(f"the tests' temp folder {given} is inside the git repository "
                                f"{top.stdout.strip()}, where no brain can be made: point TMPDIR or "
                                "--basetemp outside it")


@pytest.fixture(autouse=True)
def _isolated_git(tmp_path_factory):
    # A MonkeyPatch of its own: a test's `monkeypatch.undo()` must not bring back the machine's
    # HOME (its git identity and config) or /tmp halfway through the test.
    with pytest.MonkeyPatch.context() as mp:
        home = tmp_path_factory.mktemp("home")
        tmpl = tmp_path_factory.mktemp("git-template")
        mp.setenv("HOME", str(home))
        mp.setenv("GIT_TEMPLATE_DIR", str(tmpl))
        mp.setenv("GIT_CONFIG_NOSYSTEM", "1")
        for var in FOREIGN_ENV:
            mp.delenv(var, raising=False)
        # Temp files (a crash log, `pamd demo`'s brain, a defrag worktree) land in the test's own
        # folder, in this process and in the pamd processes it starts: nothing is left in /tmp.
        tmp = tmp_path_factory.mktemp("tmp")
        mp.setenv("TMPDIR", str(tmp))
        mp.setattr(tempfile, "tempdir", str(tmp))
        # What `git config --global` would write, without three git processes per test.
        (home / ".gitconfig").write_text("[user]\n\tname = Test Person\n\temail = person@example.com\n"
                                         "[init]\n\tdefaultBranch = main\n")
        yield


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True).stdout


class Pamd:
    """Run the real CLI in-process (fast) or as a subprocess (exit codes, stdin)."""

    def __init__(self, cwd: Path, capsys) -> None:
        self.cwd = cwd
        self.capsys = capsys

    def __call__(self, *args: str, now: str | None = NOW) -> tuple[int, str, str]:
        from pamd.cli import main

        argv = [*args]
        if now and "--now" not in argv:
            argv += ["--now", now]
        old = os.getcwd()
        os.chdir(self.cwd)
        try:
            self.capsys.readouterr()
            code = main(argv)
        finally:
            os.chdir(old)
        out = self.capsys.readouterr()
        return code, out.out, out.err

    def proc(self, *args: str, input: bytes | None = None, now: str | None = NOW, env=None):
        argv = [sys.executable, "-m", "pamd", *args]
        if now and "--now" not in args:
            argv += ["--now", now]
        return subprocess.run(argv, cwd=self.cwd, input=input, capture_output=True,
                              env={**os.environ, **(env or {})})


# Folders made by a fixture's steps, kept per process: (name, environment) -> the folder.
_MADE: dict[tuple, Path] = {}
# What differs from test to test in an isolated environment and cannot change what pamd makes.
_PER_TEST_ENV = {"HOME", "TMPDIR", "GIT_TEMPLATE_DIR", "PYTEST_CURRENT_TEST"}


def made_once(name: str, into: Path, make, tmp_path_factory) -> None:
    """Fill `into` as `make(folder)` fills an empty folder: made once per process and copied
    after, for steps that make the same files whatever the test (pamd runs at fixed `--now`
    times). Made afresh wherever the test changed what pamd could read before the steps ran:
    an environment variable, or a file in HOME or the git template folder."""
    env = os.environ
    if {p.name for p in Path(env["HOME"]).iterdir()} != {".gitconfig"} or any(
            Path(env["GIT_TEMPLATE_DIR"]).iterdir()):
        key = None
    else:
        key = (name, os.getcwd(), *sorted((k, v) for k, v in env.items() if k not in _PER_TEST_ENV))
    made = _MADE.get(key) if key else None
    if made is None:
        made = tmp_path_factory.mktemp(f"made-{name}")
        make(made)
        if key:
            _MADE[key] = made
    shutil.copytree(made, into, symlinks=True, dirs_exist_ok=True)
    for top in made.iterdir():  # the copies' git index: its file stats are those of the copy's files
        if (into / top.name / ".git").is_dir():
            subprocess.run(["git", "update-index", "-q", "--refresh"], cwd=into / top.name, capture_output=True)


@pytest.fixture
def brain(tmp_path, capsys, tmp_path_factory) -> Pamd:
    """A fresh brain made by `pamd init`; call it like the CLI."""

    def init(folder: Path) -> None:
        code, out, err = Pamd(folder, capsys)("init", str(folder / "brain"))
        assert code == 0, err

    made_once("brain", tmp_path, init, tmp_path_factory)
    return Pamd(tmp_path / "brain", capsys)


def long_session(pattern: str) -> Path:
    """One of the multi-MB real sessions (a glob under LONG_SESSIONS), or a skip that says why."""
    found = sorted(LONG_SESSIONS.glob(pattern)) if LONG_SESSIONS.is_dir() else []
    if not found:
        pytest.skip(f"needs the long real session {pattern} from {LONG_SESSIONS} (set PAMD_SHARED)")
    return found[0]


def head_count(root: Path) -> int:
    return int(git(root, "rev-list", "--count", "HEAD").strip())
