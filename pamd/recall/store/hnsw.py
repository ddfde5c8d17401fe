"""The vectors' files: hnsw-N.bin, the hnswlib graph, and delta-N.npy, the vectors of the
chunks waiting beside it (searched exactly)."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from pamd.errors import PamdError
from pamd.recall.store import integrity

HNSW_M = 16
HNSW_EF_CONSTRUCTION = 100


def hnsw_path(folder: Path, gen: str | int) -> Path:
    return folder / f"hnsw-{gen}.bin"


def delta_path(folder: Path, gen: str | int) -> Path:
    return folder / f"delta-{gen}.npy"


def hnswlib():
    """hnswlib, or the one-line error a base install (`pip install pamd`, no search extra)
    gets instead of an internal error's traceback."""
    try:
        import hnswlib
    except ImportError:
        raise PamdError("pamd's search stack is not installed (no hnswlib): recall, index and probe "
                        "need it", "pip install 'pamd[search]'") from None
    return hnswlib


def write_delta(folder: Path, rows: np.ndarray, gen: int) -> str:
    """delta-N.npy: the vectors of the chunks waiting beside the graph; its checksum."""
    path = delta_path(folder, gen)
    tmp = folder / f"delta-{gen}.tmp"
    with open(tmp, "wb") as f:
        np.save(f, np.ascontiguousarray(rows, np.float32), allow_pickle=False)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)
    return integrity.checksum(path) or ""


def write_hnsw(folder: Path, index, total: int, dims: int, dead: list[int], labels: list[int],
               vectors: np.ndarray, gen: int) -> tuple[object | None, str | None]:
    """hnsw-N.bin: `index` (a new graph if None) with `dead` marked deleted and `vectors` added
    under `labels`, for an index of `total` labels; the graph and the file's checksum (None
    and None when the index has no label)."""
    lib = hnswlib()
    if total == 0:
        return None, None
    if index is None:
        index = lib.Index(space="ip", dim=dims)
        index.init_index(max_elements=max(total, 16), M=HNSW_M,
                         ef_construction=HNSW_EF_CONSTRUCTION, random_seed=100)
    for d in dead:
        try:
            index.mark_deleted(d)
        except RuntimeError:
            pass  # already gone
    if labels:
        if index.get_max_elements() < total:
            index.resize_index(max(total, int(index.get_max_elements() * 1.5)))
        # one thread: a graph built the same way twice is the same graph
        index.add_items(vectors, np.asarray(labels, np.int64), num_threads=1)
    path = hnsw_path(folder, gen)
    tmp = folder / f"hnsw-{gen}.tmp"
    index.save_index(str(tmp))
    os.replace(tmp, path)
    return index, integrity.checksum(path)
