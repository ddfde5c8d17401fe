"""The index in .pamd/index/: a cache derived from the tree, refreshed incrementally.

Layout (all untracked, all rebuildable from the tree):

    index.sqlite   meta (the manifest: format version, embedder identity and
                   dims, chunker settings, tree hash, hnsw generation and
                   checksum), files (path, stat, sha), chunks (label, lines,
                   tier, ids, time, importance, content hash, text, alive),
                   terms (BM25 postings per term), toksums (a hash of each append to
                   toks.bin; the manifest's toks_stamp is the file's size:mtime:inode)
    cols.npz       per-label columns for filters and BM25 (alive, tier, ts,
                   importance, length), loaded whole at query time
    hnsw-N.bin     the hnswlib graph written at generation N (the manifest's graph_gen);
                   labels are chunk labels, all those below graph_labels
    delta-N.npy    the vectors of the chunks added since (labels graph_labels and up) at
                   generation N, searched exactly beside the graph: a refresh that only
                   adds chunks (an ingest) writes this small file instead of the whole
                   graph, until DELTA_MAX of them wait or a chunk of the graph is retired
    toks.bin       with an embedder that has token states (pamd.recall.maxsim): each
                   chunk's int8 token rows, appended as chunks are added; cols.npz
                   holds each label's first row and count (toff, tlen), and a query
                   maps the file and reads its candidates' rows only

A refresh stats every searchable file, re-chunks only files whose bytes
changed, retires chunks that disappeared (mark_deleted in hnsw, alive=0),
embeds only chunks whose text the vector cache has not seen, and adds them.
Anything that does not add up (another embedder, another format, a missing
or damaged file) makes it start from an empty index: vectors come back from
the cache, so that costs chunking time, not embedding time.
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
from pathlib import Path

import numpy as np

from pamd.core.config import settings
from pamd.core.fmt import conflict_region
from pamd.recall import maxsim
from pamd.recall.chunks import Chunk, chunk_file, for_embedding
from pamd.recall.deep import Lookup
from pamd.recall.embed import Embedder
from pamd.recall.lexical import term_counts
from pamd.recall.sources import source_files
from pamd.recall.store import columns, hnsw, integrity, manifest, vectors

# importers of these names move to the modules that define them once the split is done
from pamd.recall.store.index import Index as Index
from pamd.recall.store.index import ino_on_disk
from pamd.recall.store.index import lock as lock
from pamd.recall.store.manifest import conflicted as conflicted
from pamd.recall.store.report import Report
from pamd.recall.store.report import conflicted_note as conflicted_note

# Rebuild from scratch when more than this share of labels are retired chunks.
MAX_DEAD = 0.5
# Chunks a refresh may keep beside the graph (delta-N.npy, searched exactly) before it writes
# them into the graph: a query reads them all (4,096 x 384 floats: ~0.3 ms), and each refresh
# that adds chunks writes them all (6 MB), where writing the graph costs a whole file
# (~85 MB at 50,000 chunks) to write and hash.
DELTA_MAX = 4096


def refresh(root: Path, state_dir: Path, embedder: Embedder, config: dict,
            force: bool = False, progress=None, idx: Index | None = None,
            graph: bool = True) -> tuple[Report, Index]:
    """Bring .pamd/index up to date with the tree; the caller holds `lock` and closes the Index.

    Passing the Index of an earlier call keeps its loaded graph when no other
    process has changed the index since (a warm, long-lived caller). With `graph`
    (a search follows) the Index comes back with its graph loaded; without, the graph
    is read only if the refresh must write it.
    """
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


def _refresh(idx: Index, root: Path, state_dir: Path, embedder: Embedder, config: dict,
             force: bool, progress, graph: bool = True) -> Report:
    rep = Report()
    want = manifest.wanted(embedder, config)
    readable = manifest.readable(idx.meta)
    loaded = readable and idx.cols and idx.cols["alive"].shape[0] == int(idx.meta.get("labels", "-1")) \
        and getattr(idx, "loaded_gen", None) == idx.meta.get("gen")
    fresh = force or not readable or any(idx.meta.get(k) != v for k, v in want.items()) or not (
        loaded or idx.load_state(graph)) or (graph and not idx.load_graph())
    if fresh:
        idx.wipe()
        idx.open()
        idx.cols = columns.empty()
        rep.rebuilt = True
    db = idx.db
    ix = settings(config).index
    max_chars, context = int(ix.max_chars), int(ix.dense_context)

    # 1. which files changed (stat first; bytes only when the stat moved)
    rows = db.execute("SELECT path, size, mtime_ns, sha FROM files")
    known = {p: (s, m, h) for p, s, m, h in rows}
    on_disk = source_files(root)
    seen = set()
    file_rows, changed = [], []
    # A file with a merge's conflict markers holds both sides and git's marker lines: a hit
    # would span them and log ids the resolution may drop. It is indexed as empty (as boot
    # leaves it out) until its bytes change again; the manifest names it.
    marked = set(manifest.conflicted(idx.meta))
    base = str(root)
    for rel, tier in on_disk:
        seen.add(rel)
        try:
            st = os.stat(os.path.join(base, rel))  # every recall stats every file: no pathlib here
        except OSError:
            continue
        old = known.get(rel)
        # a file left out is read again: an index made by a version that took a code
        # block's markers for a conflict takes it back without waiting for a change
        if old and old[0] == st.st_size and old[1] == st.st_mtime_ns and rel not in marked:
            continue
        try:
            text = (root / rel).read_bytes().decode("utf-8")
        except (OSError, UnicodeDecodeError):
            text = ""  # unreadable: indexed as empty until fixed (pamd check names it)
        sha = hashlib.sha256(text.encode("utf-8")).hexdigest()  # as freshness.content_sha
        same = old is not None and old[2] == sha
        if same and rel in marked and conflict_region(rel, text):
            if old[:2] != (st.st_size, st.st_mtime_ns):
                file_rows.append((rel, st.st_size, st.st_mtime_ns, sha))
            continue  # still left out, nothing to do
        file_rows.append((rel, st.st_size, st.st_mtime_ns, sha))
        if not same or rel in marked:
            if conflict_region(rel, text):
                marked.add(rel)
                text = ""
            else:
                marked.discard(rel)
            changed.append((rel, tier, text))
    gone = [p for p in known if p not in seen]
    marked.difference_update(gone)
    # Files whose summaries went without their raw leaves because the brain did not load (a
    # duplicate id: recall.deep): chunked again once any file changes (the person's fix),
    # so a plain refresh brings the leaves back; while nothing changes, nothing is retried.
    rep.files_changed = len(changed) + len(gone)  # not the files read again below
    unread = set(manifest.unread(idx.meta)).intersection(seen)
    if unread and (changed or gone) and not fresh:
        redo = {rel for rel, _, _ in changed}
        for rel, tier in on_disk:
            if rel in unread and rel not in redo and rel not in marked:
                try:
                    text = (root / rel).read_bytes().decode("utf-8")
                except (OSError, UnicodeDecodeError):
                    text = ""
                changed.append((rel, tier, text))
    rep.conflicted = left_out = tuple(sorted(marked))
    conflicted_meta = json.dumps(list(left_out))

    # 2. which chunks appear and disappear
    new_chunks: list[Chunk] = []
    dead: list[int] = []
    deep = Lookup(root, state_dir, again=force) if ix.deep else None
    try:
        for n_file, (rel, tier, text) in enumerate(changed):
            # a clone reads its summaries' leaves from history here (a progress(done, total,
            # what) that says it takes the step's name is told of this step too)
            if getattr(progress, "phases", False) and len(changed) > 1:
                progress(n_file, len(changed), "reading files")
            old = {key: label for label, key in
                   db.execute("SELECT label, key FROM chunks WHERE path=? AND alive=1", (rel,))}
            before = deep.unread if deep is not None else 0
            for c in for_embedding(chunk_file(rel, text, tier, max_chars, deep), context):
                if old.pop(c.key, None) is None:
                    new_chunks.append(c)
            dead += old.values()
            if deep is not None and deep.unread > before:
                unread.add(rel)
            else:
                unread.discard(rel)
    finally:
        if deep is not None:
            deep.close()
    unread_meta = json.dumps(sorted(unread))
    for rel in gone:
        q = "SELECT label FROM chunks WHERE path=? AND alive=1"
        dead += [r[0] for r in db.execute(q, (rel,))]

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
        # No chunk came or went: a touched file (new stat only), or new bytes whose chunks kept
        # their keys (a folded `recalls=`/`seen=`), or a gone file that had no chunks. The
        # file list changes, so the manifest's tree hash over it must follow.
        if file_rows or gone:
            with db:
                db.executemany("INSERT OR REPLACE INTO files VALUES (?,?,?,?)", file_rows)
                db.executemany("DELETE FROM files WHERE path=?", [(p,) for p in gone])
                if changed or gone:
                    idx.meta = {**idx.meta, "tree": manifest.tree_hash(db), "conflicted": conflicted_meta,
                                "unread": unread_meta}
                    db.executemany("INSERT OR REPLACE INTO meta VALUES (?, ?)",
                                   [("tree", idx.meta["tree"]), ("conflicted", conflicted_meta),
                                    ("unread", unread_meta)])
        rep.chunks = int(idx.cols["alive"].sum())
        return rep

    # 3. vectors: cache first, embed the rest
    vecs, toks = vectors.for_chunks(state_dir, embedder, new_chunks, rep, progress)

    # 4. write: chunks, postings, columns, hnsw, then the manifest (one sqlite commit)
    with db:
        if dead:
            db.executemany("UPDATE chunks SET alive=0 WHERE label=?", [(d,) for d in dead])
            idx.cols["alive"][np.asarray(dead, dtype=np.int64)] = False
        labels = list(range(n_old, n_old + len(new_chunks)))
        db.executemany(
            "INSERT INTO chunks VALUES (?,?,?,?,?,?,?,?,?,?,?,1)",
            [(lb, c.key, c.path, c.start, c.end, c.tier,
              c.ts.timestamp() if c.ts else None, c.importance, ",".join(c.ids), c.hash, c.text)
             for lb, c in zip(labels, new_chunks, strict=False)],
        )
        dl = _add_postings(db, labels, new_chunks)
        columns.extend(idx.cols, new_chunks, dl)
        if toks:
            _append_tokens(idx, len(new_chunks), toks)
        columns.link_neighbours(db, idx.cols, {rel for rel, _, _ in changed})
        db.executemany("INSERT OR REPLACE INTO files VALUES (?,?,?,?)", file_rows)
        db.executemany("DELETE FROM files WHERE path=?", [(p,) for p in gone])
        gen = int(idx.meta.get("gen", "0")) + (1 if (dead or new_chunks or fresh) else 0)
        old_graph = hnsw.hnsw_path(idx.dir, manifest.graph_gen(idx.meta))
        old_delta = hnsw.delta_path(idx.dir, idx.meta.get("gen", "0"))
        hnsw_sum, delta_sum = idx.meta.get("hnsw_sum", ""), idx.meta.get("delta_sum", "")
        graph_gen = manifest.graph_gen(idx.meta)
        if dead or new_chunks or fresh:
            if spill:
                rows = vecs if idx.delta is None else np.vstack([idx.delta, vecs])
                rows = np.ascontiguousarray(rows, np.float32)
                delta_sum = hnsw.write_delta(idx.dir, rows, gen)
                idx.delta = rows
            else:
                # the delta's live chunks join the graph with the new ones
                waiting = [lb for lb in range(in_graph, n_old) if idx.cols["alive"][lb]]
                if waiting:
                    vecs = np.vstack([idx.delta[np.asarray(waiting) - in_graph], vecs])
                idx.hnsw, written = hnsw.write_hnsw(idx.dir, idx.hnsw, idx.cols["alive"].shape[0], embedder.dims,
                                                     dead, waiting + labels, vecs, gen)
                hnsw_sum = written or ""
                graph_gen, in_graph, delta_sum = str(gen), total, ""
                idx.delta, idx.graph_labels = None, total
        columns.write(idx.dir, idx.cols)
        meta = {**want, "labels": str(idx.cols["alive"].shape[0]), "gen": str(gen),
                "graph_gen": graph_gen, "graph_labels": str(in_graph), "delta_sum": delta_sum,
                "hnsw_sum": hnsw_sum, "tree": manifest.tree_hash(db), "live": str(int(idx.cols["alive"].sum())),
                "conflicted": conflicted_meta, "unread": unread_meta,
                "toks_stamp": idx.meta.get("toks_stamp", "")}
        db.executemany("INSERT OR REPLACE INTO meta VALUES (?, ?)", list(meta.items()))
    idx.meta = meta
    idx.loaded_gen = meta["gen"]
    # the files of earlier generations, and any a killed refresh left (under the lock: no
    # search is reading them)
    keep = {f"hnsw-{graph_gen}.bin", f"delta-{gen}.npy" if in_graph < total else ""}
    for f in (old_graph, old_delta, *idx.dir.glob("hnsw-*"), *idx.dir.glob("delta-*")):
        if f.name not in keep:
            f.unlink(missing_ok=True)
    rep.added, rep.removed, rep.chunks = len(new_chunks), len(dead), int(meta["live"])
    return rep


def _add_postings(db: sqlite3.Connection, labels: list[int], chunks: list[Chunk]) -> list[int]:
    by_term: dict[str, tuple[list[int], list[float]]] = {}
    lengths = []
    for lb, c in zip(labels, chunks, strict=False):
        counts = term_counts(c.text)
        lengths.append(sum(counts.values()))
        for t, n in counts.items():
            d, f = by_term.setdefault(t, ([], []))
            d.append(lb)
            f.append(n)
    if not by_term:
        return lengths
    terms = list(by_term)
    old = {}
    for i in range(0, len(terms), 500):
        part = terms[i : i + 500]
        q = f"SELECT term, docs, tfs FROM terms WHERE term IN ({','.join('?' * len(part))})"
        old.update({t: (d, f) for t, d, f in db.execute(q, part)})
    rows = []
    for t, (d, f) in by_term.items():
        nd = np.asarray(d, np.int64).tobytes()
        nf = np.asarray(f, np.float32).tobytes()
        if t in old:
            nd, nf = old[t][0] + nd, old[t][1] + nf
        rows.append((t, nd, nf))
    db.executemany("INSERT OR REPLACE INTO terms VALUES (?, ?, ?)", rows)
    return lengths


def _append_tokens(idx: Index, n: int, toks: list[np.ndarray]) -> None:
    """Append the new chunks' token rows to toks.bin and point their columns at them. Rows a
    refresh appended and never committed (it died) stay unreferenced at the end. The caller's
    transaction records the appended bytes' hash (toksums) and the file's stamp, which
    Index.load_state checks (a file damaged in place would rank with garbage)."""
    with open(idx.dir / "toks.bin", "ab") as f:
        start = f.tell() // maxsim.D
        if start * maxsim.D != f.tell():  # a torn row from a crash: pad it out
            f.write(bytes(maxsim.D - f.tell() % maxsim.D))
            start += 1
        data = b"".join(np.ascontiguousarray(t, np.int8).tobytes() for t in toks)
        f.write(data)
        f.flush()
        os.fsync(f.fileno())
    at = start * maxsim.D
    idx.db.execute("INSERT OR REPLACE INTO toksums VALUES (?, ?, ?)",
                   (at, at + len(data), hashlib.blake2b(data, digest_size=16).hexdigest()))
    idx.meta = {**idx.meta, "toks_stamp": integrity.stamp(idx.dir / "toks.bin") or ""}
    lens = np.asarray([len(t) for t in toks], np.int64)
    idx.cols["toff"][-n:] = start + np.concatenate([[0], np.cumsum(lens)[:-1]])
    idx.cols["tlen"][-n:] = lens
