"""Whether an index file is the one the manifest recorded: its stamp, and hashes of its bytes."""

from __future__ import annotations

import hashlib
from pathlib import Path


def stamp(path: Path) -> str | None:
    """size:mtime_ns:inode of a file (None if it is missing)."""
    try:
        st = path.stat()
    except OSError:
        return None
    return f"{st.st_size}:{st.st_mtime_ns}:{st.st_ino}"


def hash_range(f, start: int, end: int) -> str:
    """blake2b of bytes [start, end) of an open file (short if the file is)."""
    h = hashlib.blake2b(digest_size=16)
    f.seek(start)
    left = end - start
    while left > 0 and (block := f.read(min(left, 1 << 20))):
        h.update(block)
        left -= len(block)
    return h.hexdigest()


def checksum(path: Path) -> str | None:
    """The graph file's stamp and a hash of all of it: "2:size:mtime_ns:inode:hash".

    hnswlib trusts the file it loads (damage in its middle can crash the process),
    so the whole file is hashed when it is written; a load reads it all again only
    when its stamp differs from the one recorded (a clone, a copy, a damaged file).
    """
    try:
        st = path.stat()
        h = hashlib.blake2b(digest_size=16)
        with open(path, "rb") as f:
            while block := f.read(1 << 20):
                h.update(block)
    except OSError:
        return None
    return f"2:{st.st_size}:{st.st_mtime_ns}:{st.st_ino}:{h.hexdigest()}"


def intact(path: Path, recorded: str) -> bool:
    """Whether the graph file is the one the manifest recorded (see checksum)."""
    if not recorded.startswith("2:"):
        return _head_tail(path) == recorded  # an index written before whole-file hashes
    try:
        st = path.stat()
    except OSError:
        return False
    if recorded.rsplit(":", 1)[0] == f"2:{st.st_size}:{st.st_mtime_ns}:{st.st_ino}":
        return True
    now = checksum(path)
    return now is not None and now.rsplit(":", 1)[1] == recorded.rsplit(":", 1)[1]


def _head_tail(path: Path) -> str | None:
    """The older sum: size plus hashes of the head and tail (reads 128 KiB)."""
    try:
        size = path.stat().st_size
        with open(path, "rb") as f:
            head = f.read(65536)
            f.seek(max(0, size - 65536))
            tail = f.read(65536)
    except OSError:
        return None
    return f"{size}:{hashlib.blake2b(head + tail, digest_size=16).hexdigest()}"
