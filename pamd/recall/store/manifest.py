"""The manifest (the meta table of index.sqlite): what an index must carry to be kept, and
the values a refresh records there, read back."""

from __future__ import annotations

import hashlib
import json
import sqlite3
from collections.abc import Mapping
from typing import Any

from pamd.core.config import Settings
from pamd.recall import maxsim
from pamd.recall.embed import Embedder, has_tokens
from pamd.recall.freshness import settings_id

TOKENS = f"{maxsim.D}:toks.bin"  # the manifest's `tokens`: row width and where the rows are


def wanted(embedder: Embedder, config: Settings | Mapping[str, Any]) -> dict[str, str]:
    """The values an index must hold to be refreshed rather than built again: the embedder's
    identity and dims, the settings chunks depend on, and whether it holds token rows."""
    want = {"model": embedder.identity, "dims": str(embedder.dims), "settings": settings_id(config)}
    if has_tokens(embedder):  # absent otherwise: a USE brain's index stays valid
        want["tokens"] = TOKENS
    return want


def _paths(meta: dict, key: str) -> list[str] | None:
    """A list of paths the manifest records under `key` ([] when absent); None when it holds
    anything else (a hand-edited or damaged manifest: readable has the index rebuilt)."""
    try:
        value = json.loads(meta.get(key, "[]"))
    except ValueError:
        return None
    if not isinstance(value, list) or not all(isinstance(p, str) for p in value):
        return None
    return value


def readable(meta: dict) -> bool:
    """Whether the manifest's own values parse (a hand-edited one may not): else rebuild."""
    return (meta.get("labels", "0").isdigit() and _paths(meta, "unread") is not None
            and _paths(meta, "conflicted") is not None
            and all(meta.get(k, "0").isdigit() for k in ("graph_gen", "graph_labels")))


def graph_gen(meta: dict) -> str:
    """The generation whose graph file the index reads (an index written before delta files
    wrote its graph at every generation)."""
    return meta.get("graph_gen", meta.get("gen", "0"))


def unread(meta: dict) -> list[str]:
    """The files whose summaries' raw leaves a refresh could not read (recall.deep: the brain
    did not load), as its manifest records them."""
    return _paths(meta, "unread") or []


def conflicted(meta: dict) -> tuple[str, ...]:
    """The files a refresh left out for holding conflict markers, as its manifest records them."""
    return tuple(_paths(meta, "conflicted") or ())


def tree_hash(db: sqlite3.Connection) -> str:
    """The manifest's hash over the file list (path and sha), as `pamd fsck` recomputes it."""
    return hashlib.sha256("\n".join(
        f"{p}\0{h}" for p, h in db.execute("SELECT path, sha FROM files ORDER BY path")
    ).encode()).hexdigest()
