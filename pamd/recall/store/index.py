"""Index: the open handle on .pamd/index that a refresh writes and a search reads, and the
lock both hold."""

from __future__ import annotations

import os
import shutil
import sqlite3
import zipfile
from pathlib import Path

import numpy as np

from pamd.edge.lock import Lock
from pamd.edge.watch import Watch
from pamd.errors import PamdError
from pamd.recall import maxsim
from pamd.recall.store import columns, hnsw, integrity, manifest

POSTINGS_CACHE = 64 << 20  # bytes of decoded postings a warm Index keeps


class Index:
    """Open handle on .pamd/index (for refresh and for search)."""

    def __init__(self, state_dir: Path) -> None:
        self.state_dir = state_dir
        self.dir = state_dir / "index"
        self.db: sqlite3.Connection | None = None
        self.meta: dict[str, str] = {}
        self.cols: dict[str, np.ndarray] = {}
        self.hnsw = None
        self.graph_labels = 0  # labels below it are in the graph, the rest in `delta`
        self.delta: np.ndarray | None = None
        self.graph_file: Path | None = None  # checked, not loaded yet (load_state(graph=False))
        # Seeing the tree's changes without walking it (store.changes.changed_files): the watch
        # on its folders, the refreshes that walked it, and the generation the last walk saw.
        self.watch: Watch | None = None
        self.walks = 0
        self.walked: str | None = None

    # ------------------------------------------------------------ opening
    def open(self) -> None:
        self._make_dir()
        try:
            self._connect()
        except sqlite3.DatabaseError:
            self.wipe()
            self._connect()

    def _connect(self) -> None:
        db = sqlite3.connect(self.dir / "index.sqlite")
        self.ino = os.stat(self.dir / "index.sqlite").st_ino
        db.execute("PRAGMA journal_mode=WAL")
        db.execute("PRAGMA synchronous=NORMAL")
        db.executescript(
            """
            CREATE TABLE IF NOT EXISTS meta(k TEXT PRIMARY KEY, v TEXT);
            CREATE TABLE IF NOT EXISTS files(path TEXT PRIMARY KEY, size INT, mtime_ns INT,
                sha TEXT);
            CREATE TABLE IF NOT EXISTS chunks(label INTEGER PRIMARY KEY, key TEXT, path TEXT,
                start INT, end INT, tier TEXT, ts REAL, importance REAL, ids TEXT, hash TEXT,
                text TEXT, alive INT);
            CREATE INDEX IF NOT EXISTS chunks_path ON chunks(path, alive);
            CREATE TABLE IF NOT EXISTS terms(term TEXT PRIMARY KEY, docs BLOB, tfs BLOB);
            CREATE TABLE IF NOT EXISTS toksums(start INTEGER PRIMARY KEY, end INT, hash TEXT);
            """
        )
        self.meta = dict(db.execute("SELECT k, v FROM meta"))
        self.db = db

    def wipe(self) -> None:
        self._memo = None
        self.walked = None
        self._tok_map = None
        if self.db is not None:
            self.db.close()
            self.db = None
        self.hnsw, self.delta, self.graph_labels, self.graph_file = None, None, 0, None
        self.meta, self.cols = {}, {}
        shutil.rmtree(self.dir, ignore_errors=True)
        self._make_dir()

    def _make_dir(self) -> None:
        """The folder, made where missing; a file (or link, or anything not a folder) in its
        place is a damaged cache: removed, as a damaged file inside is."""
        if os.path.lexists(self.dir) and not self.dir.is_dir():
            try:
                self.dir.unlink()
            except OSError as exc:
                raise PamdError(f"{self.dir} is not a folder and cannot be removed ({exc.strerror})",
                                "remove it; the index is a cache the next recall builds again") from None
        self.dir.mkdir(parents=True, exist_ok=True)

    def close(self) -> None:
        if self.db is not None:
            self.db.close()
            self.db = None
        if self.watch is not None:
            self.watch.close()
            self.watch = None
        self.walked = None

    def load_state(self, graph: bool = True) -> bool:
        """Load columns and the hnsw graph; False if anything is missing or damaged. Without
        `graph`, the graph file is checked but left on disk until load_graph (a refresh that
        only adds chunks writes them beside it and never reads it)."""
        n = int(self.meta.get("labels", "0"))
        try:
            with np.load(self.dir / "cols.npz") as z:
                cols = {c: z[c] for c in columns.COLS}
                for c in columns.TOKEN_COLS:
                    cols[c] = z[c] if c in z.files else np.full(n, -1 if c == "toff" else 0, np.int64)
                keyed = columns.STABLE_COL in z.files
                if keyed:
                    cols[columns.STABLE_COL] = z[columns.STABLE_COL]
            if any(v.shape[0] != n for v in cols.values()):
                return False
        except (OSError, ValueError, KeyError, EOFError, zipfile.BadZipFile):
            return False
        if self.has_tokens() and not (self._tokens_intact(cols) and self._tokens_unchanged()):
            return False
        self.cols = cols
        if not keyed:
            cols[columns.STABLE_COL] = np.zeros(n, np.int64)
            for label, key in self.db.execute("SELECT label, key FROM chunks"):
                if 0 <= label < n:
                    cols[columns.STABLE_COL][label] = columns.stable_key(key)
            columns.write(self.dir, self.cols)
        if n == 0:
            self.hnsw, self.delta, self.graph_labels, self.graph_file = None, None, 0, None
            self.loaded_gen = self.meta.get("gen")
            return True
        in_graph = int(self.meta.get("graph_labels", n))
        if not 0 < in_graph <= n:
            return False
        delta = None
        if in_graph < n:
            path = hnsw.delta_path(self.dir, self.meta.get("gen", "0"))
            if not integrity.intact(path, self.meta.get("delta_sum", "")):
                return False
            try:
                delta = np.load(path, allow_pickle=False)
            except (OSError, ValueError, EOFError):
                return False
            if delta.dtype != np.float32 or delta.shape != (n - in_graph, int(self.meta["dims"])):
                return False
        path = hnsw.hnsw_path(self.dir, manifest.graph_gen(self.meta))
        if not integrity.intact(path, self.meta.get("hnsw_sum", "")):
            return False
        self.hnsw, self.graph_file = None, path
        if graph and not self.load_graph():
            return False
        self.delta, self.graph_labels = delta, in_graph
        self.loaded_gen = self.meta.get("gen")
        return True

    def load_graph(self) -> bool:
        """The graph load_state checked and left on disk, loaded; False if hnswlib cannot."""
        if self.graph_file is None:
            return True
        hnswlib = hnsw.hnswlib()
        index = hnswlib.Index(space="ip", dim=int(self.meta["dims"]))
        try:
            index.load_index(str(self.graph_file), max_elements=0, allow_replace_deleted=False)
        except (RuntimeError, ValueError, MemoryError, OSError):
            return False
        self.hnsw, self.graph_file = index, None
        return True

    # ------------------------------------------------------------ reading
    def delta_index(self):
        """The chunks waiting beside the graph (`delta`) in an hnswlib brute-force index under
        their labels, kept while `delta` is the same array: its distances are computed as the
        graph's are."""
        kept = getattr(self, "_delta_index", None)
        if kept is None or kept[0] is not self.delta:
            assert self.delta is not None
            bf = hnsw.hnswlib().BFIndex(space="ip", dim=int(self.delta.shape[1]))
            bf.init_index(max(1, self.delta.shape[0]))
            if self.delta.shape[0]:
                bf.add_items(self.delta, np.arange(self.graph_labels, self.graph_labels + self.delta.shape[0]))
            kept = self._delta_index = (self.delta, bf)
        return kept[1]

    def files(self) -> tuple[np.ndarray, np.ndarray]:
        """(sorted distinct file ids, each label's index in them), kept until the columns change."""
        fid = self.cols["fileid"]
        cached = getattr(self, "_files", None)
        if cached is None or cached[0] is not fid:
            uniq, inv = np.unique(fid, return_inverse=True)
            cached = self._files = (fid, uniq, inv.reshape(-1))
        return cached[1], cached[2]

    def chunk_rows(self, labels: list[int]) -> dict[int, tuple]:
        q = (f"SELECT label, path, start, end, tier, ts, importance, ids, text FROM chunks "
             f"WHERE label IN ({','.join('?' * len(labels))})")
        return {r[0]: r for r in self.db.execute(q, labels)} if labels else {}

    def has_tokens(self) -> bool:
        """Whether the index holds token matrices (pamd.recall.maxsim) for its chunks."""
        return self.meta.get("tokens") == manifest.TOKENS

    def _tokens_intact(self, cols: dict[str, np.ndarray]) -> bool:
        """Whether toks.bin holds every row the columns point at (a truncated or missing
        file means a rebuild, as a damaged graph does)."""
        have = cols["tlen"] > 0
        end = int((cols["toff"][have] + cols["tlen"][have]).max()) if have.any() else 0
        try:
            return end == 0 or end * maxsim.D <= (self.dir / "toks.bin").stat().st_size
        except OSError:
            return False

    def _tokens_unchanged(self) -> bool:
        """Whether toks.bin holds the bytes each refresh appended (table toksums: a hash per
        append). Read again only when the file's stamp (size, mtime, inode) is not the one the
        manifest recorded (a copy, a clone of .pamd/, a refresh that died, a damaged file);
        a file that checks out is stamped again, so the next load is a stat."""
        path = self.dir / "toks.bin"
        stamp = integrity.stamp(path)
        if stamp is None:  # no file: right only while nothing was ever appended (no chunks)
            sums = self.db.execute("SELECT start, end, hash FROM toksums ORDER BY start").fetchall()
            return not sums and not self.meta.get("toks_stamp")
        if stamp == self.meta.get("toks_stamp"):
            return True
        sums = self.db.execute("SELECT start, end, hash FROM toksums ORDER BY start").fetchall()
        try:
            with open(path, "rb") as f:
                if not sums:  # an index written before the sums: taken as it is, summed from now on
                    size = int(stamp.split(":")[0])
                    self.db.execute("INSERT INTO toksums VALUES (0, ?, ?)", (size, integrity.hash_range(f, 0, size)))
                elif any(integrity.hash_range(f, a, b) != h for a, b, h in sums):
                    self.db.rollback()
                    return False
        except OSError:
            self.db.rollback()
            return False
        with self.db:
            self.db.execute("INSERT OR REPLACE INTO meta VALUES ('toks_stamp', ?)", (stamp,))
        self.meta = {**self.meta, "toks_stamp": stamp}
        return True

    def tokens(self, labels: list[int]) -> dict[int, np.ndarray]:
        """The int8 token matrices of these labels (those the index has)."""
        if not labels or not self.has_tokens() or "toff" not in self.cols:
            return {}
        off, n = self.cols["toff"], self.cols["tlen"]
        lab = np.asarray(labels, np.int64)
        ok = lab[off[lab] >= 0]
        if not ok.size:
            return {}
        need = int((off[ok] + n[ok]).max()) * maxsim.D
        rows = self._tok_rows(need)
        if rows is None:
            return {}
        return {int(lb): rows[off[lb]:off[lb] + n[lb]] for lb in ok.tolist()}

    def _tok_rows(self, need: int) -> np.ndarray | None:
        """toks.bin mapped as int8 rows [n, D], mapped again once it has grown past `need`."""
        rows = getattr(self, "_tok_map", None)
        if rows is None or rows.size < need:
            try:
                size = (self.dir / "toks.bin").stat().st_size
                if size < need:
                    return None
                # a plain array over the mapping: slicing a np.memmap makes a memmap of each
                # slice, several times the cost, for the hundreds of slices of every recall
                rows = np.asarray(np.memmap(self.dir / "toks.bin", np.int8, "r",
                                            shape=(size // maxsim.D, maxsim.D)))
            except (OSError, ValueError):
                return None
            self._tok_map = rows
        return rows

    def memo(self) -> dict:
        """A dict for values derived from the index (postings, BM25 terms), emptied when the
        index changes or holds more than POSTINGS_CACHE bytes (counted in memo["bytes"])."""
        key = (self.meta.get("labels"), self.meta.get("gen"))
        memo = getattr(self, "_memo", None)
        if memo is None or memo["key"] != key or memo["bytes"] > POSTINGS_CACHE:
            memo = self._memo = {"key": key, "bytes": 0}
        return memo

    def postings(self, terms: list[str]) -> dict[str, tuple[np.ndarray, np.ndarray]]:
        """Postings of the terms that have any. Kept in memory while the index does not change:
        a common term's postings are megabytes at 100k chunks, read again by every query."""
        if not terms:
            return {}
        memo = self.memo()
        missing = [t for t in terms if ("post", t) not in memo]
        if missing:
            q = f"SELECT term, docs, tfs FROM terms WHERE term IN ({','.join('?' * len(missing))})"
            for t in missing:
                memo["post", t] = None  # not in the index
            memo["bytes"] += 100 * len(missing)  # the entries themselves: a warm daemon sees many words
            for t, d, f in self.db.execute(q, missing):
                memo["post", t] = (np.frombuffer(d, np.int64), np.frombuffer(f, np.float32))
                memo["bytes"] += len(d) + len(f)
        return {t: memo["post", t] for t in terms if memo["post", t] is not None}


def ino_on_disk(idx: Index) -> int | None:
    """The inode of index.sqlite now: another than the open one's when another process built
    the index again from scratch."""
    try:
        return os.stat(idx.dir / "index.sqlite").st_ino
    except OSError:
        return None


def lock(state_dir: Path) -> Lock:
    """Refresh and search hold this, so a reader never sees half a refresh."""
    return Lock(state_dir / "index.lock", wait=True, timeout=600)
