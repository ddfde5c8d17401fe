"""Is the index in .pamd/ up to date with the tree? Cheap: stats and SQLite, no embedder;
a file whose stat changed is hashed, as the refresh does, so a touch or a checkout that
changes no byte leaves it fresh."""

from __future__ import annotations

import hashlib
import sqlite3
from pathlib import Path

from pamd.core.words import plural
from pamd.recall.sources import source_files


def freshness(brain) -> str:
    db_path = Path(brain.state_dir) / "index" / "index.sqlite"
    if not db_path.is_file():
        return "no index yet (`pamd index`, or the first `pamd recall`, builds it)"
    try:
        db = sqlite3.connect(f"file:{db_path}?mode=ro", uri=True)
        try:
            known = {p: (s, m, h) for p, s, m, h in db.execute("SELECT path, size, mtime_ns, sha FROM files")}
            meta = dict(db.execute("SELECT k, v FROM meta"))
            chunks = db.execute("SELECT COUNT(*) FROM chunks WHERE alive = 1").fetchone()[0]
        finally:
            db.close()
    except sqlite3.Error as exc:
        return f"unreadable ({exc}); the next recall rebuilds it"
    stale = 0
    on_disk = set()
    for rel, _tier in source_files(brain.root):
        on_disk.add(rel)
        try:
            st = (brain.root / rel).stat()
        except OSError:
            continue
        old = known.get(rel)
        if old is None or (old[:2] != (st.st_size, st.st_mtime_ns)
                           and old[2] != content_sha(brain.root / rel)):
            stale += 1
    stale += len(set(known) - on_disk)
    model = meta.get("model", "?")
    if stale:
        return (f"stale: {plural(stale, 'file')} changed since it was built ({plural(chunks, 'chunk')}, {model}); "
                "recall refreshes it")
    return f"fresh: {plural(chunks, 'chunk')}, {model}"


def content_sha(path: Path) -> str:
    """What the index's `files.sha` holds for a file: sha256 of its UTF-8 text (of "" when
    it cannot be read or decoded; the refresh indexes it as empty)."""
    try:
        text = path.read_bytes().decode("utf-8")
    except (OSError, UnicodeDecodeError):
        text = ""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()
