"""`pamd demo`, the README's first command: a working brain from the packaged sample week."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path


def _pamd(*args: str, cwd) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "pamd", *args], cwd=cwd, capture_output=True, text=True,
                          timeout=600)


def test_demo_builds_a_brain_that_recalls_with_file_and_lines(tmp_path):
    r = _pamd("demo", "brain", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    brain = tmp_path / "brain"
    log = subprocess.run(["git", "log", "--format=%s"], cwd=brain, capture_output=True, text=True,
                         check=True).stdout.splitlines()
    runs = [s.split(":")[0] for s in log]
    # one commit per run that changed something (the second compaction finds nothing to do)
    assert runs.count("pamd ingest") == 1 and runs.count("pamd compact") >= 1 and runs.count("pamd defrag") == 2
    # every recall in the demo prints hits as path:start-end that point into the brain
    hits = re.findall(r"^(memory/\S+\.md|MEMORY\.md):(\d+)-(\d+)  ", r.stdout, re.M)
    assert len(hits) >= 3
    for path, a, b in hits:
        lines = (brain / path).read_text("utf-8").split("\n")[int(a) - 1:int(b)]
        assert lines[0].startswith("### ") and lines[-1].startswith(">")
    out = r.stdout.splitlines()
    ru = next(i for i, line in enumerate(out) if line.startswith("$ pamd recall дедлайн"))
    # the Russian query's top hit is Russian memory: its snippet, on the lines under its header
    assert re.search("[А-Яа-я]", out[ru + 2]), out[ru:ru + 4]
    assert _pamd("check", "--brain", str(brain), cwd=tmp_path).returncode == 0
    assert subprocess.run(["git", "status", "--porcelain"], cwd=brain, capture_output=True, text=True,
                          check=True).stdout.strip() in ("", "?? .pamd/")  # nothing left uncommitted
    again = _pamd("demo", "brain", cwd=tmp_path)
    assert again.returncode != 0 and "already exists" in again.stderr
    assert len(again.stderr.strip().splitlines()) <= 2


def test_demo_without_a_folder_works_inside_a_git_clone(tmp_path):
    # The README runs `pamd install … && pamd demo` in a clone of pamd: a git repository, where
    # ./pamd-demo-brain cannot be a brain of its own. The demo then builds it in a temporary folder.
    clone = tmp_path / "clone"
    clone.mkdir()
    subprocess.run(["git", "init", "-q", str(clone)], check=True)
    r = _pamd("demo", cwd=clone)
    assert r.returncode == 0, r.stderr
    assert not (clone / "pamd-demo-brain").exists()
    where = re.search(r"^The demo brain is in (\S+)\.", r.stdout, re.M).group(1)
    assert clone.resolve() not in Path(where).resolve().parents
    assert Path(tempfile.gettempdir()).resolve() in Path(where).resolve().parents  # the test's own, conftest
    assert subprocess.run(["git", "log", "--format=%s"], cwd=where, capture_output=True, text=True,
                          check=True).stdout.count("pamd defrag") == 2


def test_a_demo_that_stops_at_init_leaves_no_sample_in_the_temp_folder(tmp_path):
    # the sample week was copied to a temp folder before init, and init failing left it there
    repo, tmp = tmp_path / "repo", tmp_path / "tmp"
    repo.mkdir()
    tmp.mkdir()
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    r = subprocess.run([sys.executable, "-m", "pamd", "demo", "inside"], cwd=repo, capture_output=True,
                       text=True, timeout=600, env={**os.environ, "TMPDIR": str(tmp)})
    assert r.returncode == 1 and "inside the git repository" in r.stderr
    assert list(tmp.iterdir()) == []
