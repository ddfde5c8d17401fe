"""Whether anything changed in a set of folders since it was last asked: Linux inotify, read
without blocking, so a long-lived process (`pamd mcp`) need not stat every file of the brain
before each recall to learn that nothing changed.

Only where inotify sees every change: a local filesystem (a network or FUSE mount does not
report another machine's writes), and only for files reached by their own folder (an edit
through a hard link or a symbolic link elsewhere reports to that other folder; the caller
keeps walking when it met one). Anywhere else `start` returns None and the caller walks.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import errno
import os
import sys
from pathlib import Path

# Filesystems whose writes all pass through this kernel, so inotify reports them.
LOCAL_FS = frozenset({"ext2", "ext3", "ext4", "xfs", "btrfs", "tmpfs", "overlay", "zfs", "f2fs", "jfs",
                      "reiserfs", "bcachefs", "ramfs"})
_IN_NONBLOCK = os.O_NONBLOCK
_IN_CLOEXEC = os.O_CLOEXEC
# every change to an entry of a watched folder, and to the folder itself
_MASK = (0x00000002 | 0x00000004 | 0x00000008 | 0x00000040 | 0x00000080 | 0x00000100 | 0x00000200
         | 0x00000400 | 0x00000800)  # MODIFY ATTRIB CLOSE_WRITE MOVED_FROM MOVED_TO CREATE DELETE DELETE_SELF MOVE_SELF
_IN_ONLYDIR = 0x01000000

_libc = None


def _lib():
    global _libc
    if _libc is None:
        _libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
        _libc.inotify_init1.argtypes = [ctypes.c_int]
        _libc.inotify_add_watch.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_uint32]
    return _libc


def filesystem(path: Path) -> str | None:
    """The type of the filesystem `path` lives on, from /proc/self/mountinfo (None: unknown)."""
    try:
        real = os.path.realpath(path)
        best, kind = "", None
        with open("/proc/self/mountinfo", encoding="utf-8", errors="replace") as f:
            for line in f:
                left, _, right = line.partition(" - ")
                fields = left.split()
                if len(fields) < 5 or not right:
                    continue
                mount = fields[4].replace("\\040", " ")
                inside = real == mount or real.startswith(mount.rstrip("/") + "/")
                if inside and len(mount) >= len(best):
                    best, kind = mount, right.split()[0]
        return kind
    except OSError:
        return None


class Watch:
    """An inotify instance watching folders; `changed()` says whether any event came since the
    last call (an overflowed queue counts as a change)."""

    def __init__(self, fd: int) -> None:
        self.fd = fd

    @classmethod
    def start(cls, root: Path) -> Watch | None:
        """A watch for folders under `root`, or None where it could not see every change."""
        if not sys.platform.startswith("linux") or filesystem(root) not in LOCAL_FS:
            return None
        try:
            fd = _lib().inotify_init1(_IN_NONBLOCK | _IN_CLOEXEC)
        except (OSError, AttributeError):
            return None
        return cls(fd) if fd >= 0 else None  # no instance left (fs.inotify.max_user_instances)

    def add(self, path: str) -> bool:
        """Watch the folder at `path` (the kernel keeps one watch per folder, found by its inode:
        a folder renamed and another made at its path is watched as the new one). A folder gone
        meanwhile is left (its parent's watch saw it go); one the kernel will not watch
        (fs.inotify.max_user_watches) closes the watch: it reports a change at every call."""
        if self.fd < 0:
            return False
        if _lib().inotify_add_watch(self.fd, os.fsencode(path), _MASK | _IN_ONLYDIR) >= 0:
            return True
        if ctypes.get_errno() not in (errno.ENOENT, errno.ENOTDIR):
            self.close()
        return False

    def changed(self) -> bool:
        """Whether an event came since the last call; the queue is emptied."""
        if self.fd < 0:
            return True
        seen = False
        while True:
            try:
                if not os.read(self.fd, 65536):
                    return seen
            except BlockingIOError:
                return seen
            except InterruptedError:
                continue
            except OSError:
                self.close()
                return True
            seen = True

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1
