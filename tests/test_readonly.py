"""A brain this process may only read (a read-only mount, or another user's brain):
recall and index work from an index in a cache folder outside the brain, fsck reports
the truth, and a run that must write says so in one line."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import NOW

pytestmark = pytest.mark.skipif(os.geteuid() != 0 or subprocess.run(["unshare", "-m", "true"]).returncode,
                                reason="needs root and mount namespaces for a read-only bind mount")


def read_only(root: Path, *argv: str) -> subprocess.CompletedProcess:
    """`pamd ARGV` in `root` as seen through a read-only bind mount (private to that process)."""
    q = shlex.quote(str(root))
    cmd = " ".join(shlex.quote(a) for a in [sys.executable, "-m", "pamd", *argv, "--now", NOW])
    script = f"mount --bind {q} {q} && mount -o remount,ro,bind {q} {q} && cd {q} && exec {cmd}"
    return subprocess.run(["unshare", "-m", "sh", "-c", script], capture_output=True, text=True)


@pytest.fixture
def fed(brain, tmp_path):
    src = tmp_path / "a.jsonl"
    src.write_text("".join(json.dumps({"ts": f"2026-11-30T10:0{i}:00Z", "role": "user",
                                       "text": f"The billing service {i} moved to the eu-west cluster."}) + "\n"
                           for i in range(4)))
    assert brain("ingest", str(src))[0] == 0
    return brain


@pytest.mark.parametrize("indexed", [True, False])
def test_recall_and_index_work_on_a_read_only_brain(fed, indexed):
    root = fed.cwd
    if indexed:
        assert fed("index")[0] == 0
    r = read_only(root, "recall", "billing eu-west cluster")
    assert r.returncode == 0, r.stderr
    assert "memory/L0/" in r.stdout and "eu-west" in r.stdout
    assert "Traceback" not in r.stderr
    r = read_only(root, "index")
    assert r.returncode == 0, r.stderr


def test_fsck_does_not_advise_a_rebuild_of_a_fine_index_on_a_read_only_brain(fed):
    root = fed.cwd
    assert fed("index")[0] == 0
    r = read_only(root, "fsck")
    assert "index --rebuild" not in r.stdout + r.stderr, r.stdout + r.stderr
    assert r.returncode == 0, r.stdout + r.stderr


def test_a_write_on_a_read_only_brain_is_one_clear_line(fed):
    r = read_only(fed.cwd, "remember", "The cache host is c-3.")
    assert r.returncode == 1, r.stderr
    assert r.stderr.startswith("pamd: error: ") and r.stderr.count("\n") == 1, r.stderr
    assert "read-only" in r.stderr
