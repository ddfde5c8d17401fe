"""Step 4 of a refresh: what it found, written in one sqlite transaction — chunks, postings,
token rows, columns, the graph or the delta beside it, then the manifest — so a refresh that
dies leaves the index as it was; then the files of earlier generations go."""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
from pathlib import Path

import numpy as np

from pamd.recall import maxsim
from pamd.recall.chunks import Chunk
from pamd.recall.lexical import term_counts
from pamd.recall.store import columns, hnsw, integrity, manifest
from pamd.recall.store.changes import Files
from pamd.recall.store.index import Index


def record_files(idx: Index, files: Files) -> None:
    """The refresh that adds and retires no chunk: a touched file (new stat only), new bytes
    whose chunks kept their keys (a folded `recalls=`/`seen=`), or a gone file that had no
    chunks. The file list changes, so the manifest's tree hash over it must follow."""
    if not (files.rows or files.gone):
        return
    db = idx.db
    with db:
        _write_files(db, files)
        if files.changed or files.gone:
            conflicted_meta, unread_meta = _paths_meta(files)
            idx.meta = {**idx.meta, "tree": manifest.tree_hash(db), "conflicted": conflicted_meta,
                        "unread": unread_meta}
            db.executemany("INSERT OR REPLACE INTO meta VALUES (?, ?)",
                           [("tree", idx.meta["tree"]), ("conflicted", conflicted_meta),
                            ("unread", unread_meta)])


def next_generation(idx: Index, want: dict[str, str], files: Files, new_chunks: list[Chunk], dead: list[int],
                    vecs: np.ndarray, toks: list[np.ndarray] | None, spill: bool, dims: int) -> None:
    """Retire `dead`, add `new_chunks` with their vectors (`spill`: into the delta file, else
    into the graph) and token rows, and record the manifest of the next generation."""
    db = idx.db
    n_old = idx.cols["alive"].shape[0]
    with db:
        labels = _write_chunks(idx, n_old, new_chunks, dead, toks, {rel for rel, _, _ in files.changed})
        _write_files(db, files)
        gen = int(idx.meta.get("gen", "0")) + 1
        old = (hnsw.hnsw_path(idx.dir, manifest.graph_gen(idx.meta)),
               hnsw.delta_path(idx.dir, idx.meta.get("gen", "0")))
        graph_gen, in_graph, hnsw_sum, delta_sum = _write_vectors(idx, n_old, dead, labels, vecs, gen,
                                                                  spill, dims)
        columns.write(idx.dir, idx.cols)
        conflicted_meta, unread_meta = _paths_meta(files)
        meta = {**want, "labels": str(idx.cols["alive"].shape[0]), "gen": str(gen),
                "graph_gen": graph_gen, "graph_labels": str(in_graph), "delta_sum": delta_sum,
                "hnsw_sum": hnsw_sum, "tree": manifest.tree_hash(db), "live": str(int(idx.cols["alive"].sum())),
                "conflicted": conflicted_meta, "unread": unread_meta,
                "toks_stamp": idx.meta.get("toks_stamp", "")}
        db.executemany("INSERT OR REPLACE INTO meta VALUES (?, ?)", list(meta.items()))
    idx.meta = meta
    idx.loaded_gen = meta["gen"]
    _remove_old(idx.dir, old, graph_gen, gen, in_graph < idx.cols["alive"].shape[0])


def _paths_meta(files: Files) -> tuple[str, str]:
    """The manifest's `conflicted` and `unread`: JSON lists of paths."""
    return json.dumps(list(files.conflicted)), json.dumps(sorted(files.unread))


def _write_files(db: sqlite3.Connection, files: Files) -> None:
    db.executemany("INSERT OR REPLACE INTO files VALUES (?,?,?,?)", files.rows)
    db.executemany("DELETE FROM files WHERE path=?", [(p,) for p in files.gone])


def _write_chunks(idx: Index, n_old: int, new_chunks: list[Chunk], dead: list[int],
                  toks: list[np.ndarray] | None, paths: set[str]) -> list[int]:
    """Retire `dead`; add `new_chunks` under the labels after the last (returned): their rows,
    postings, columns and token rows; link the neighbours of the chunks of `paths` again."""
    db = idx.db
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
    columns.link_neighbours(db, idx.cols, paths)
    return labels


def _write_vectors(idx: Index, n_old: int, dead: list[int], labels: list[int], vecs: np.ndarray,
                   gen: int, spill: bool, dims: int) -> tuple[str, int, str, str]:
    """The new chunks' vectors beside the graph in delta-N.npy (`spill`: the graph stays as it
    is), or into a new graph with the chunks that waited beside the old one; the manifest's
    graph_gen, graph_labels, hnsw_sum and delta_sum after it."""
    in_graph = idx.graph_labels
    if spill:
        rows = vecs if idx.delta is None else np.vstack([idx.delta, vecs])
        rows = np.ascontiguousarray(rows, np.float32)
        delta_sum = hnsw.write_delta(idx.dir, rows, gen)
        idx.delta = rows
        return manifest.graph_gen(idx.meta), in_graph, idx.meta.get("hnsw_sum", ""), delta_sum
    # the delta's live chunks join the graph with the new ones
    waiting = [lb for lb in range(in_graph, n_old) if idx.cols["alive"][lb]]
    if waiting:
        vecs = np.vstack([idx.delta[np.asarray(waiting) - in_graph], vecs])
    total = idx.cols["alive"].shape[0]
    idx.hnsw, hnsw_sum = hnsw.write_hnsw(idx.dir, idx.hnsw, total, dims, dead, waiting + labels, vecs, gen)
    idx.delta, idx.graph_labels = None, total
    return str(gen), total, hnsw_sum or "", ""


def _remove_old(folder: Path, old: tuple[Path, Path], graph_gen: str, gen: int, delta: bool) -> None:
    """The files of earlier generations, and any a killed refresh left (under the lock: no
    search is reading them); `delta`: the chunks of this generation's delta file wait beside
    the graph."""
    keep = {hnsw.hnsw_path(folder, graph_gen).name, hnsw.delta_path(folder, gen).name if delta else ""}
    for f in (*old, *folder.glob("hnsw-*"), *folder.glob("delta-*")):
        if f.name not in keep:
            f.unlink(missing_ok=True)


def _add_postings(db: sqlite3.Connection, labels: list[int], chunks: list[Chunk]) -> list[int]:
    """Append the chunks' labels and term counts to each term's postings; each chunk's length
    in terms (BM25's document length)."""
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
