"""Atomic file writes: temp file in the same folder, fsync, os.replace."""

from __future__ import annotations

import errno
import os
import tempfile
from pathlib import Path

from pamd.edge.fault import checkpoint
from pamd.errors import PamdError

NO_SPACE = (errno.ENOSPC, errno.EDQUOT)


def disk_full(path: Path | str, quota: bool = False) -> PamdError:
    """The one line for a write that did not fit."""
    what = "disk quota exceeded" if quota else "no space left on device"
    return PamdError(f"disk full: {what} for {path}",
                     "free some space there and run again; nothing was committed")


def _mode(path: Path) -> int:
    """The mode a plain write would give: the file's own, else 0666 less the umask."""
    try:
        return path.stat().st_mode & 0o7777
    except FileNotFoundError:
        umask = os.umask(0)
        os.umask(umask)
        return 0o666 & ~umask


def write_atomic(path: Path, text: str, before_replace=None) -> None:
    """Write `text` to a temp file, fsync it, then rename it over `path`.

    `before_replace()`, if given, runs after the fsync, right before the rename: a
    last check (pamd's: the file still holds what the run saw) that leaves only the
    rename's microseconds between it and the write, not the fsync's milliseconds.
    If it raises, the temp file goes and `path` is untouched.
    """
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        mode = _mode(path)
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    except OSError as exc:
        if exc.errno in NO_SPACE:
            raise disk_full(path, exc.errno == errno.EDQUOT) from None
        raise
    try:
        os.fchmod(fd, mode)  # mkstemp makes 0600; a brain file is as readable as any other
        checkpoint("write:tmp")
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as f:
            f.write(text)
            checkpoint("write:unsynced")
            f.flush()
            os.fsync(f.fileno())
        checkpoint("write:synced")
        if before_replace is not None:
            before_replace()
        os.replace(tmp, path)
        checkpoint("write:replaced")
    except BaseException as exc:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        if isinstance(exc, OSError) and exc.errno in NO_SPACE:
            raise disk_full(path, exc.errno == errno.EDQUOT) from None
        raise


def temp_files(path: Path) -> list[Path]:
    """Temp files write_atomic(path) leaves behind when its process is killed."""
    import glob

    return [Path(p) for p in glob.glob(glob.escape(str(path.parent / f".{path.name}.")) + "*.tmp")]


def inside(root: Path, path: str | Path) -> bool:
    """Whether `path` (a link's target included) lies in the folder `root` (resolved), and
    not in its .git or .pamd: a brain reads nothing through a link that leads out of it."""
    real = os.path.realpath(path)
    top = os.path.realpath(root)
    if not real.startswith(top + os.sep):
        return False
    first = real[len(top) + 1:].split(os.sep, 1)[0]
    return first not in (".git", ".pamd")


def read_text(path: Path) -> str:
    return path.read_bytes().decode("utf-8")
