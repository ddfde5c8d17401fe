"""Steps 1 and 2 of a refresh: the files that changed since the index last saw them, then the
chunks that came and went with them."""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from pathlib import Path

from pamd.core.config import IndexSettings
from pamd.core.fmt import conflict_region
from pamd.edge.watch import Watch
from pamd.recall.chunks import Chunk, chunk_file, for_embedding
from pamd.recall.deep import Lookup
from pamd.recall.sources import source_files
from pamd.recall.store import manifest
from pamd.recall.store.index import Index

FileRow = tuple[str, int, int, str]  # path, size, mtime_ns, sha: a row of the files table


@dataclass
class Files:
    """What step 1 found."""

    rows: list[FileRow]  # the files table's new rows
    changed: list[tuple[str, str, str]]  # (path, tier, text) of the files to chunk again
    gone: list[str]  # files the table holds that are no longer searchable
    count: int  # files changed or gone (not those read again for their summaries' leaves)
    conflicted: tuple[str, ...]  # left out for their conflict markers, sorted
    unread: set[str]  # files whose summaries' raw leaves could not be read (step 2 updates it)
    watched: bool = False  # the Index's watch sees every change to these files from now on


def changed_files(idx: Index, root: Path, fresh: bool) -> Files:
    """Step 1: stat every searchable file; read the bytes only of those whose stat moved.

    An Index kept by a long-lived process watches the brain's folders (pamd.edge.watch) from
    its second refresh on: while no event came and no other process wrote the index since
    this one last walked the tree (store.refresh records which generation that saw), the
    tree is as it was then and no file is looked at."""
    watch = idx.watch
    if watch is not None:
        moved = watch.changed()  # emptied before the walk: a change from here on is an event
        if not (moved or fresh) and idx.walked is not None and idx.walked == idx.meta.get("gen"):
            return Files([], [], [], 0, manifest.conflicted(idx.meta), set(manifest.unread(idx.meta)), True)
    elif idx.walks == 1:  # the Index outlived a refresh: its process is a long-lived one
        watch = idx.watch = Watch.start(root)
    idx.walks += 1
    idx.walked = None
    rows = idx.db.execute("SELECT path, size, mtime_ns, sha FROM files")
    known = {p: (s, m, h) for p, s, m, h in rows}
    links: list[str] = []
    on_disk = source_files(root, watch.add if watch is not None else None, links)
    # A file with a merge's conflict markers holds both sides and git's marker lines: a hit
    # would span them and log ids the resolution may drop. It is indexed as empty (as boot
    # leaves it out) until its bytes change again; the manifest names it.
    marked = set(manifest.conflicted(idx.meta))
    file_rows, changed, seen, linked = _stat(root, on_disk, known, marked)
    gone = [p for p in known if p not in seen]
    marked.difference_update(gone)
    # Files whose summaries went without their raw leaves because the brain did not load (a
    # duplicate id: recall.deep): chunked again once any file changes (the person's fix),
    # so a plain refresh brings the leaves back; while nothing changes, nothing is retried.
    count = len(changed) + len(gone)
    unread = set(manifest.unread(idx.meta)).intersection(seen)
    if unread and (changed or gone) and not fresh:
        redo = {rel for rel, _, _ in changed}
        changed += [(rel, tier, _text(root, rel)) for rel, tier in on_disk
                    if rel in unread and rel not in redo and rel not in marked]
    # an edit through a link or another name of a file reports to another folder, if any
    watched = watch is not None and watch.fd >= 0 and not (links or linked)
    return Files(file_rows, changed, gone, count, tuple(sorted(marked)), unread, watched)


def _stat(root: Path, on_disk: list[tuple[str, str]], known: dict[str, tuple[int, int, str]],
          marked: set[str]) -> tuple[list[FileRow], list[tuple[str, str, str]], set[str], bool]:
    """(new rows of the files table, files to chunk again, every searchable path, whether a
    file has more than one name) for the files on disk against the rows the table holds;
    `marked`, the files left out for their conflict markers, gains and loses files as their
    bytes say."""
    seen = set()
    file_rows, changed = [], []
    base = str(root)
    linked = False
    for rel, tier in on_disk:
        seen.add(rel)
        try:
            st = os.stat(os.path.join(base, rel))  # every recall stats every file: no pathlib here
        except OSError:
            continue
        linked = linked or st.st_nlink > 1
        old = known.get(rel)
        # a file left out is read again: an index made by a version that took a code
        # block's markers for a conflict takes it back without waiting for a change
        if old and old[0] == st.st_size and old[1] == st.st_mtime_ns and rel not in marked:
            continue
        text = _text(root, rel)
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
    return file_rows, changed, seen, linked


def _text(root: Path, rel: str) -> str:
    try:
        return (root / rel).read_bytes().decode("utf-8")
    except (OSError, UnicodeDecodeError):
        return ""  # unreadable: indexed as empty until fixed (pamd check names it)


def changed_chunks(idx: Index, root: Path, state_dir: Path, files: Files, ix: IndexSettings,
                   force: bool, progress) -> tuple[list[Chunk], list[int]]:
    """Step 2: the chunks of the changed files the index does not hold yet, and the labels of
    the live chunks those files no longer have or gone files had."""
    new_chunks: list[Chunk] = []
    dead: list[int] = []
    max_chars, context = int(ix.max_chars), int(ix.dense_context)
    # the leaves' cache is opened for a file to chunk only (a connection per recall otherwise)
    deep = Lookup(root, state_dir, again=force) if ix.deep and files.changed else None
    try:
        for n_file, (rel, tier, text) in enumerate(files.changed):
            # a clone reads its summaries' leaves from history here (a progress(done, total,
            # what) that says it takes the step's name is told of this step too)
            if getattr(progress, "phases", False) and len(files.changed) > 1:
                progress(n_file, len(files.changed), "reading files")
            old = {key: label for label, key in
                   idx.db.execute("SELECT label, key FROM chunks WHERE path=? AND alive=1", (rel,))}
            before = deep.unread if deep is not None else 0
            for c in for_embedding(chunk_file(rel, text, tier, max_chars, deep), context):
                if old.pop(c.key, None) is None:
                    new_chunks.append(c)
            dead += old.values()
            if deep is not None and deep.unread > before:
                files.unread.add(rel)
            else:
                files.unread.discard(rel)
    finally:
        if deep is not None:
            deep.close()
    for rel in files.gone:
        q = "SELECT label FROM chunks WHERE path=? AND alive=1"
        dead += [r[0] for r in idx.db.execute(q, (rel,))]
    return new_chunks, dead
