"""The vector cache: embeddings by (model identity, content hash) in .pamd/.

It outlives index rebuilds, so a rebuild after a compaction, a model switch
back, or a deleted index only embeds text it has never seen. An embedder with
token states (pamd.recall.maxsim) also keeps each chunk's int8 tokens here, by
the same model and the text's hash plus where the chunk's own words are in it
(`Chunk.tkey`); for it a vector without its tokens is a miss.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import numpy as np


class VectorCache:
    """A corrupt cache (a file that does not open, or a damaged page found later) is
    only lost work: it is started over, empty, and the vectors are embedded again."""

    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        try:
            self.db = _open(path)
        except sqlite3.DatabaseError:
            self._start_over()

    def _start_over(self) -> None:
        db = getattr(self, "db", None)
        if db is not None:
            db.close()
        for suffix in ("", "-wal", "-shm", "-journal"):
            Path(f"{self.path}{suffix}").unlink(missing_ok=True)
        self.db = _open(self.path)

    def get(self, model: str, hashes: list[str]) -> dict[str, np.ndarray]:
        try:
            return self._get(model, hashes)
        except sqlite3.DatabaseError:
            self._start_over()
            return {}

    def _get(self, model: str, hashes: list[str]) -> dict[str, np.ndarray]:
        out: dict[str, np.ndarray] = {}
        for i in range(0, len(hashes), 500):
            part = hashes[i : i + 500]
            q = f"SELECT hash, v FROM vec WHERE model=? AND hash IN ({','.join('?' * len(part))})"
            for h, blob in self.db.execute(q, [model, *part]):
                out[h] = np.frombuffer(blob, dtype=np.float32)
        return out

    def put(self, model: str, items: dict[str, np.ndarray]) -> None:
        rows = [(model, h, np.asarray(v, np.float32).tobytes()) for h, v in items.items()]
        try:
            self._put(rows)
        except sqlite3.DatabaseError:
            self._start_over()
            self._put(rows)

    def _put(self, rows: list[tuple[str, str, bytes]]) -> None:
        with self.db:
            self.db.executemany("INSERT OR REPLACE INTO vec(model, hash, v) VALUES (?, ?, ?)", rows)

    def get_tokens(self, model: str, keys: list[str], dims: int) -> dict[str, np.ndarray]:
        """int8 token matrices [n, dims] by key (Chunk.tkey)."""
        try:
            out: dict[str, np.ndarray] = {}
            for i in range(0, len(keys), 500):
                part = keys[i : i + 500]
                q = f"SELECT key, t FROM tok WHERE model=? AND key IN ({','.join('?' * len(part))})"
                for k, blob in self.db.execute(q, [model, *part]):
                    out[k] = np.frombuffer(blob, np.int8).reshape(-1, dims)
            return out
        except sqlite3.DatabaseError:
            self._start_over()
            return {}

    def put_tokens(self, model: str, items: dict[str, np.ndarray]) -> None:
        rows = [(model, k, np.ascontiguousarray(t, np.int8).tobytes()) for k, t in items.items()]

        def put() -> None:
            with self.db:
                self.db.executemany("INSERT OR REPLACE INTO tok(model, key, t) VALUES (?, ?, ?)", rows)
        try:
            put()
        except sqlite3.DatabaseError:
            self._start_over()
            put()

    def close(self) -> None:
        self.db.close()


def _open(path: Path) -> sqlite3.Connection:
    db = sqlite3.connect(path)
    db.execute("PRAGMA journal_mode=WAL")
    db.execute("PRAGMA synchronous=NORMAL")
    db.execute("CREATE TABLE IF NOT EXISTS vec(model TEXT, hash TEXT, v BLOB, "
               "PRIMARY KEY(model, hash))")
    db.execute("CREATE TABLE IF NOT EXISTS tok(model TEXT, key TEXT, t BLOB, PRIMARY KEY(model, key))")
    return db
