"""cols.npz: one array per column, one row per label, loaded whole at query time for filters,
BM25 and hit shaping."""

from __future__ import annotations

import hashlib
import os
import sqlite3
from pathlib import Path
from typing import Any

import numpy as np

from pamd.recall.chunks import Chunk
from pamd.recall.sources import TIERS

# prev/next: the neighbouring places in the file (hit shaping); cprev/cnext: the chunks whose
# words a chunk's BM25 also counts — the same, except for a summary's raw leaves, whose
# context is the leaves said before and after them (recall.deep)
COLS = ("alive", "tier", "ts", "importance", "dl", "fileid", "prev", "next", "cprev", "cnext")
# toks.bin's first row and row count per label (-1 and 0 without tokens); an index written
# before them has none, which is all right unless its manifest says it holds tokens
TOKEN_COLS = ("toff", "tlen")
# Each label's stable key: a hash of its chunk's key (path, lines, content hash, ids...), so ties
# in a ranking break the same way whatever order refreshes added the chunks in (labels do
# not); an index written before it gets it from its chunks table once (Index.load_state)
STABLE_COL = "skey"


def empty() -> dict[str, np.ndarray]:
    """The columns of an index of no chunks, in the order cols.npz holds them."""
    return {"alive": np.zeros(0, bool), "tier": np.zeros(0, np.int8),
            "ts": np.zeros(0, np.float64), "importance": np.zeros(0, np.float32),
            "dl": np.zeros(0, np.float32), "fileid": np.zeros(0, np.int64),
            "prev": np.zeros(0, np.int64), "next": np.zeros(0, np.int64),
            "cprev": np.zeros(0, np.int64), "cnext": np.zeros(0, np.int64),
            "toff": np.zeros(0, np.int64), "tlen": np.zeros(0, np.int64),
            STABLE_COL: np.zeros(0, np.int64)}


def extend(c: dict[str, np.ndarray], chunks: list[Chunk], dl: list[int]) -> None:
    """Rows for new chunks, labelled after the last; their neighbours and token rows are
    filled in by link_neighbours and the token append."""
    tier_code = {t: i for i, t in enumerate(TIERS)}
    c["alive"] = np.concatenate([c["alive"], np.ones(len(chunks), bool)])
    c["tier"] = np.concatenate([c["tier"], np.asarray([tier_code.get(x.tier, -1) for x in chunks],
                                                      np.int8)])
    c["ts"] = np.concatenate([c["ts"], np.asarray(
        [x.ts.timestamp() if x.ts else np.nan for x in chunks], np.float64)])
    c["importance"] = np.concatenate([c["importance"], np.asarray(
        [x.importance if x.importance is not None else np.nan for x in chunks], np.float32)])
    c["dl"] = np.concatenate([c["dl"], np.asarray(dl, np.float32)])
    fids = np.asarray([file_id(x.path) for x in chunks], np.int64)
    c["fileid"] = np.concatenate([c["fileid"], fids])
    for side in ("prev", "next", "cprev", "cnext", "toff"):
        c[side] = np.concatenate([c[side], np.full(len(chunks), -1, np.int64)])
    c["tlen"] = np.concatenate([c["tlen"], np.zeros(len(chunks), np.int64)])
    c[STABLE_COL] = np.concatenate([c[STABLE_COL], np.asarray([stable_key(x.key) for x in chunks], np.int64)])


def stable_key(key: str) -> int:
    """A chunk's tie-break in rankings: the same in every index of the same tree (see STABLE_COL)."""
    return int.from_bytes(hashlib.blake2b(key.encode(), digest_size=7).digest(), "big")


def file_id(path: str) -> int:
    """A stable integer per path, so chunks of one file group without a lookup table."""
    return int.from_bytes(hashlib.blake2b(path.encode(), digest_size=7).digest(), "big")


def link_neighbours(db: sqlite3.Connection, cols: dict[str, np.ndarray], paths: set[str]) -> None:
    """prev/next and cprev/cnext label of each live chunk in file order (see COLS)."""
    for rel in paths:
        # a place's own chunk (one id: the entry, not a raw leaf behind it) first, as chunking
        # (a rebuild's label order) has it: after refreshes a leaf can hold the lower label
        rows = db.execute("SELECT label, start, end, ids, ts FROM chunks WHERE path=? AND alive=1"
                          " ORDER BY start, end, instr(ids, ',') > 0, label", (rel,)).fetchall()
        if not rows:
            continue
        # Neighbours are places, not chunks: a summary's raw leaves (recall.deep) share its
        # lines and its neighbours; the place's first chunk (the entry itself) stands for it.
        places: list[list[int]] = []
        leaves: list[list[tuple[float, int]]] = []
        last = None
        for label, start, end, ids, ts in rows:
            if (start, end) != last:
                places.append([])
                leaves.append([])
                last = (start, end)
            places[-1].append(label)
            if ids.count(",") == 1:  # (summary, raw leaf)
                leaves[-1].append((ts if ts is not None else float("inf"), label))
        for i, labels in enumerate(places):
            arr = np.asarray(labels, np.int64)
            cols["prev"][arr] = cols["cprev"][arr] = places[i - 1][0] if i > 0 else -1
            cols["next"][arr] = cols["cnext"][arr] = places[i + 1][0] if i + 1 < len(places) else -1
            said = [lb for _, lb in sorted(leaves[i])]  # in the order they were said
            if said:
                run = np.asarray(said, np.int64)
                cols["cprev"][run] = [-1, *said[:-1]]
                cols["cnext"][run] = [*said[1:], -1]


def write(folder: Path, cols: dict[str, np.ndarray]) -> None:
    """cols.npz, replaced whole."""
    tmp = folder / "cols.tmp.npz"
    arrays: dict[str, Any] = cols  # Any: to numpy's stub, a keyword could be savez's allow_pickle flag
    with open(tmp, "wb") as f:
        np.savez(f, **arrays)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, folder / "cols.npz")
