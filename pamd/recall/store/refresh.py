"""refresh(): bring .pamd/index up to date with the tree in four steps — the files that changed,
the chunks that came and went, their vectors, one transaction writing it all — or build it
again from empty when the index on disk cannot be kept."""

from __future__ import annotations

import sqlite3
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pamd.core.config import Settings, settings
from pamd.recall.embed import Embedder
from pamd.recall.store import changes, columns, manifest, vectors, write
from pamd.recall.store.index import Index, ino_on_disk
from pamd.recall.store.report import Report

# Rebuild from scratch when more than this share of labels are retired chunks.
MAX_DEAD = 0.5
# Chunks a refresh may keep beside the graph (delta-N.npy, searched exactly) before it writes
# them into the graph: a query reads them all (4,096 x 384 floats), and each refresh that adds
# chunks writes them all, where writing the graph costs the whole graph file to write and hash.
DELTA_MAX = 4096


def refresh(root: Path, state_dir: Path, embedder: Embedder, config: Settings | Mapping[str, Any],
            force: bool = False, progress=None, idx: Index | None = None,
            graph: bool = True) -> tuple[Report, Index]:
    """Bring .pamd/index up to date with the tree; the caller holds `lock` and closes the Index.

    Passing the Index of an earlier call keeps its loaded graph when no other
    process has changed the index since (a warm, long-lived caller). With `graph`
    (a search follows) the Index comes back with its graph loaded; without, the graph
    is read only if the refresh must write it.
    """
    idx = _reopen(idx, state_dir)
    try:
        return _refresh(idx, root, state_dir, embedder, config, force, progress, graph), idx
    except sqlite3.DatabaseError:
        # A damaged page inside a file that opens ("database disk image is malformed"):
        # the index is derived from the tree, so build it again, once.
        idx.wipe()
        try:
            return _refresh(idx, root, state_dir, embedder, config, True, progress, graph), idx
        except BaseException:
            idx.close()
            raise
    except BaseException:
        idx.close()
        raise


def _reopen(idx: Index | None, state_dir: Path) -> Index:
    """The Index of an earlier call with its manifest read again; a new one where there is none,
    it is closed, its database is damaged, or another process rebuilt the index since."""
    if idx is not None and idx.db is not None and ino_on_disk(idx) != getattr(idx, "ino", None):
        idx.close()  # another process rebuilt the index from scratch
    if idx is None or idx.db is None:
        idx = Index(state_dir)
        idx.open()
    else:
        try:
            idx.meta = dict(idx.db.execute("SELECT k, v FROM meta"))
        except sqlite3.DatabaseError:
            idx.close()
            idx = Index(state_dir)
            idx.open()
    return idx


def _refresh(idx: Index, root: Path, state_dir: Path, embedder: Embedder, config: Settings | Mapping[str, Any],
             force: bool, progress, graph: bool = True) -> Report:
    """One refresh of an open Index; it calls itself with `force` when it finds the index must
    be built from empty after all."""
    rep = Report()
    want = manifest.wanted(embedder, config)
    fresh = _from_empty(idx, want, force, graph)
    if fresh:
        rep.rebuilt = True
    ix = settings(config).index
    files = changes.changed_files(idx, root, fresh)
    rep.files_changed, rep.conflicted = files.count, files.conflicted
    new_chunks, dead = changes.changed_chunks(idx, root, state_dir, files, ix, force, progress)

    n_old = idx.cols["alive"].shape[0]
    live_after = int(idx.cols["alive"].sum()) - len(dead) + len(new_chunks)
    total = n_old + len(new_chunks)
    if not fresh and total > 1000 and live_after < (1 - MAX_DEAD) * total:
        idx.close()
        return _refresh(idx, root, state_dir, embedder, config, True, progress, graph)
    in_graph = idx.graph_labels
    # only additions (and retired additions): they wait beside the graph, which stays as it is
    spill = (not fresh and (idx.hnsw is not None or idx.graph_file is not None)
             and all(d >= in_graph for d in dead) and total - in_graph <= DELTA_MAX)
    if (dead or new_chunks) and not spill and not idx.load_graph():
        idx.close()  # the graph must be written, and hnswlib cannot read it: start again
        return _refresh(idx, root, state_dir, embedder, config, True, progress, graph)

    if not (fresh or dead or new_chunks):
        write.record_files(idx, files)
        rep.chunks = int(idx.cols["alive"].sum())
    else:
        vecs, toks = vectors.for_chunks(state_dir, embedder, new_chunks, rep, progress)
        write.next_generation(idx, want, files, new_chunks, dead, vecs, toks, spill, embedder.dims)
        rep.added, rep.removed, rep.chunks = len(new_chunks), len(dead), int(idx.meta["live"])
    # what the index holds is the tree as walked: the next refresh may skip the walk while the
    # watch reports nothing and the generation is still this one
    idx.walked = idx.meta.get("gen") if files.watched else None
    return rep


def _from_empty(idx: Index, want: dict[str, str], force: bool, graph: bool) -> bool:
    """Whether this refresh builds the index from empty (emptied here): asked to, or the index on
    disk is another embedder's or other settings', or its manifest or files do not add up. Else
    its state is loaded (kept when this Index holds it already; with `graph`, the graph too)."""
    readable = manifest.readable(idx.meta)
    loaded = readable and idx.cols and idx.cols["alive"].shape[0] == int(idx.meta.get("labels", "-1")) \
        and getattr(idx, "loaded_gen", None) == idx.meta.get("gen")
    fresh = force or not readable or any(idx.meta.get(k) != v for k, v in want.items()) or not (
        loaded or idx.load_state(graph)) or (graph and not idx.load_graph())
    if fresh:
        idx.wipe()
        idx.open()
        idx.cols = columns.empty()
    return bool(fresh)
