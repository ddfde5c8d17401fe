"""One pamd run at a time per brain: an flock on .pamd/lock.

The kernel drops an flock when its process dies, so a killed run never leaves a
lock that blocks the next one; the pid written inside is only for messages.
"""

from __future__ import annotations

import errno
import fcntl
import os
import time
from pathlib import Path

from pamd.errors import PamdError


class Lock:
    def __init__(self, path: Path, wait: bool = True, timeout: float = 60.0) -> None:
        self.path = path
        self.wait = wait
        self.timeout = timeout
        self._fd: int | None = None

    def __enter__(self) -> Lock:
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        except OSError as exc:
            if exc.errno not in (errno.EROFS, errno.EACCES, errno.EPERM):
                raise
            raise PamdError(f"the brain is read-only for this process: cannot open {self.path} "
                            f"({exc.strerror})", "recall, index, boot, status, check and fsck only read "
                            "it; run this where the brain may be written") from None
        deadline = time.monotonic() + (self.timeout if self.wait else 0)
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    holder = _holder(fd)
                    os.close(fd)
                    raise PamdError(
                        f"another pamd run holds the brain's lock{holder}",
                        "wait for it to finish, or set [git] on_lock/lock_timeout",
                        exit_code=75,
                    ) from None
                time.sleep(0.05)
        mine = f"{os.getpid()}\n".encode()
        if os.pread(fd, 32, 0) != mine:  # a warm process relocks often: no rewrite of the same pid
            os.ftruncate(fd, 0)
            os.write(fd, mine)
        self._fd = fd
        return self

    @property
    def fd(self) -> int | None:
        return self._fd

    def __exit__(self, *exc) -> None:
        if self._fd is not None:
            fcntl.flock(self._fd, fcntl.LOCK_UN)
            os.close(self._fd)
            self._fd = None


def _holder(fd: int) -> str:
    try:
        pid = os.pread(fd, 32, 0).decode().strip()
    except OSError:
        return ""
    return f" (pid {pid})" if pid else ""
