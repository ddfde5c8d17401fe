"""Disk full: a brain on a small tmpfs, a run that cannot fit. The person sees one line
naming the disk and the path, exit 1; the brain holds the old commit or the new one, and
once there is space again every command works and fsck passes."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import NOW, git

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="mounts a tmpfs (needs root)")


def pamd(root: Path, *argv: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "pamd", *argv, "--now", NOW], cwd=root,
                          capture_output=True, text=True)


def big_transcript(path: Path, n: int = 3000) -> Path:
    path.write_text("".join(json.dumps({
        "ts": f"2026-11-30T{10 + i // 600:02d}:{(i // 10) % 60:02d}:{i % 60:02d}Z", "role": "user",
        "text": f"We decided to move service {i} to cluster {i * 7}: the latency budget was over by {i % 97} ms."})
        + "\n" for i in range(n)))
    return path


@pytest.fixture
def mountpoint(tmp_path):
    mnt = tmp_path / "disk"
    mnt.mkdir()
    yield mnt
    subprocess.run(["umount", str(mnt)], capture_output=True)


@pytest.mark.slow
def test_a_full_disk_is_one_clear_line_and_the_brain_stays_whole(brain, tmp_path, mountpoint):
    base = brain.cwd
    big = big_transcript(tmp_path / "big.jsonl")
    used = sum(p.stat().st_size for p in base.rglob("*") if p.is_file()) // 1024
    outcomes = set()
    # KiB free beyond the brain: too little for the tier file, then finer steps where the
    # files fit and git's objects, index or commit do not, then enough for the whole run.
    for extra in (100, 400, *range(760, 1120, 45), 1400):
        subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={used + extra}k", "tmpfs", str(mountpoint)],
                       check=True)
        try:
            root = mountpoint / "brain"
            try:
                shutil.copytree(base, root, symlinks=True)
            except OSError:
                continue
            head0 = git(root, "rev-parse", "HEAD").strip()
            r = pamd(root, "ingest", str(big))
            label = f"{used + extra}k: {r.stderr}"
            assert r.returncode in (0, 1), label
            if r.returncode == 1:
                assert r.stderr.count("\n") == 1, label
                assert r.stderr.startswith("pamd: error: disk full: no space left on device"), label
                assert str(mountpoint) in r.stderr, label
            assert "index.lock" not in r.stderr and "internal error" not in r.stderr, label
            outcomes.add(r.returncode)
            # space again: the next command finishes any rollback, and the brain is whole
            subprocess.run(["mount", "-o", "remount,size=64m", str(mountpoint)], check=True)
            s = pamd(root, "status")
            assert s.returncode == 0, f"{label} / {s.stderr}"
            assert git(root, "status", "--porcelain", "--untracked-files=all") == "", label
            head = git(root, "rev-parse", "HEAD").strip()
            assert head == head0 or git(root, "rev-parse", "HEAD^").strip() == head0, label
            f = pamd(root, "fsck")
            assert f.returncode == 0, f"{label} / {f.stdout} {f.stderr}"
            if r.returncode == 1:
                assert pamd(root, "ingest", str(big)).returncode == 0, label
        finally:
            subprocess.run(["umount", str(mountpoint)], check=True)
    assert outcomes == {0, 1}, outcomes
