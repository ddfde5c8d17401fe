"""Test brains for recall: a real git repo with entries written in pamd's format."""

from __future__ import annotations

import json
import subprocess
from datetime import UTC, datetime, timedelta
from pathlib import Path

from pamd.core.entry import Entry, entry_id
from pamd.core.fmt import render_doc

T0 = datetime(2026, 11, 30, 9, 0, tzinfo=UTC)

MESSAGES = [
    ("user", "We decided to ship v2 on Friday after the load test passes."),
    ("assistant", "The database migration failed with a timeout on the production cluster."),
    ("user", "Anna prefers green tea over coffee in the morning meetings."),
    ("assistant", "Мы решили перенести релиз на понедельник из-за праздников."),
    ("user", "The quarterly revenue report is due to the board next Thursday."),
    ("assistant", "I rotated the leaked API key and updated the vault entry."),
]


def git(root: Path, *args: str) -> str:
    env = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@t", "GIT_CONFIG_NOSYSTEM": "1", "HOME": str(root),
           "GIT_TEMPLATE_DIR": "", "PATH": "/usr/bin:/bin"}
    return subprocess.run(["git", *args], cwd=root, env=env, check=True, capture_output=True,
                          text=True).stdout


def entries(messages=MESSAGES, start: datetime = T0, tier: str = "L0") -> list[Entry]:
    return [
        Entry(id=entry_id("e", str(i), text, start.isoformat()), ts=start + timedelta(minutes=i),
              role=role, text=text, tier=tier)
        for i, (role, text) in enumerate(messages)
    ]


def make_brain(root: Path, files: dict[str, str] | None = None, config: str = "") -> Path:
    """A committed brain; `files` default to one L0 day of MESSAGES behind a frontmatter."""
    root.mkdir(parents=True, exist_ok=True)
    git(root, "init", "-q")
    (root / "pamd.toml").write_text(config or '[index]\nembedder = "e5-small"\n', "utf-8")
    if files is None:
        files = {"memory/L0/2026-11-30.md": render_doc({"day": "2026-11-30"}, "# 30 Nov",
                                                       entries())}
    for rel, text in files.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text, "utf-8")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "test brain")
    return root


def recall_cli(brain: Path, query: str, k: int, capsys, *extra: str) -> list[dict]:
    """`pamd recall --json` as a fresh process would run it (no index kept open in between)."""
    from pamd.cli import main
    from pamd.recall import api

    for idx in api._OPEN.values():
        idx.close()
    api._OPEN.clear()
    code = main(["recall", "--brain", str(brain), "--json", "-k", str(k), *extra, query])
    out = capsys.readouterr()
    assert code == 0, out.err
    return json.loads(out.out)
