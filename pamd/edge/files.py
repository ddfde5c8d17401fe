"""Atomic file writes: temp file in the same folder, fsync, os.replace."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from pamd.edge.fault import checkpoint


def write_atomic(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        checkpoint("write:tmp")
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as f:
            f.write(text)
            checkpoint("write:unsynced")
            f.flush()
            os.fsync(f.fileno())
        checkpoint("write:synced")
        os.replace(tmp, path)
        checkpoint("write:replaced")
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise


def temp_files(path: Path) -> list[Path]:
    """Temp files write_atomic(path) leaves behind when its process is killed."""
    import glob

    return [Path(p) for p in glob.glob(glob.escape(str(path.parent / f".{path.name}.")) + "*.tmp")]


def read_text(path: Path) -> str:
    return path.read_bytes().decode("utf-8")
