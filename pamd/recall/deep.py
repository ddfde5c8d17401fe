"""Deep recall: the raw messages behind each summary stay findable.

Compaction removes raw text from the tree, never from history. So that a fact
compressed out of a summary's words can still be found, the index also holds
each summary's raw *leaves* (the L0 entries it stands for, through every tier)
as chunks that cite the summary's own lines: a hit says where the memory
lives now (`path:start-end` of the summary) and which raw entry matched
(`ids`: the summary, then the leaf); `pamd expand` prints the raw text.

A summary a person corrected by hand (its text in the tree no longer the one
pamd made) is a leaf too once it is compressed into the next tier: its last
text is indexed behind the new summary like a raw message, so the correction
stays findable while the uncorrected raw text behind it does as well. A
summary left as pamd made it adds nothing, so a brain nobody edited indexes
exactly the raw leaves. The text pamd made is kept beside the leaves (table
`made`), or read from the patch of the commit that added the summary.

Leaves hardly ever change per summary id, so they are cached in .pamd/deep.sqlite:
compaction records them as it writes summaries (it holds the sources in
memory; a summary made again after a revert and a corrected raw entry
replaces its row), before its commit so that a recall while the brain's git hooks
run finds them, and anything missing — a fresh clone, a deleted .pamd/ — is read back
from git history (pamd.consolidate.provenance: one `git log -p` for all of
them), so `pamd index` on a clone reproduces the same index.
"""

from __future__ import annotations

import json
import logging
import sqlite3
from collections.abc import Iterable
from pathlib import Path

from pamd.core.entry import Entry, fmt_time
from pamd.core.words import plural

log = logging.getLogger(__name__)

DB = "deep.sqlite"
Leaf = tuple[str, str, str, str]  # (raw id, time, role, text)


def _connect(state_dir: Path) -> sqlite3.Connection:
    state_dir.mkdir(parents=True, exist_ok=True)
    try:
        return _open(state_dir / DB)
    except sqlite3.DatabaseError:  # a corrupt cache: history still holds every leaf, so start over
        for suffix in ("", "-journal", "-wal", "-shm"):
            (state_dir / (DB + suffix)).unlink(missing_ok=True)
        return _open(state_dir / DB)


def _open(path: Path) -> sqlite3.Connection:
    db = sqlite3.connect(path)
    try:
        db.execute("CREATE TABLE IF NOT EXISTS leaves (summary TEXT, pos INTEGER, raw TEXT, ts TEXT, role TEXT,"
                   " text TEXT, PRIMARY KEY (summary, pos))")
        db.execute("CREATE INDEX IF NOT EXISTS leaves_raw ON leaves (raw)")
        # The text pamd gave each summary when it made it: a summary whose text in the
        # tree differs when it is compressed was corrected by a person (see module doc).
        db.execute("CREATE TABLE IF NOT EXISTS made (summary TEXT PRIMARY KEY, text TEXT)")
        # A raw leaf's conversation as it was in the last tree that held it raw: the entries
        # before and after it in its file (JSON lists of `role: text`, file order; NULL: not
        # known). The index embeds the leaf with them, exactly as it embedded the raw entry
        # there, so a compaction finds its vectors in the cache instead of embedding again.
        db.execute("CREATE TABLE IF NOT EXISTS around (raw TEXT PRIMARY KEY, prev TEXT, next TEXT)")
    except sqlite3.DatabaseError:
        db.close()
        raise
    return db


def _get(db: sqlite3.Connection, sid: str) -> list[Leaf] | None:
    rows = db.execute("SELECT raw, ts, role, text FROM leaves WHERE summary=? AND pos>=0 ORDER BY pos",
                      (sid,)).fetchall()
    if rows:  # not the pos=-1 "no leaves" marker (_put): that is no leaf
        return [tuple(r) for r in rows]
    return [] if db.execute("SELECT 1 FROM leaves WHERE summary=? AND pos=-1", (sid,)).fetchone() else None


def _put(db: sqlite3.Connection, sid: str, leaves: list[Leaf]) -> None:
    rows = [(sid, i, *leaf) for i, leaf in enumerate(leaves)] or [(sid, -1, "", "", "", "")]
    db.execute("DELETE FROM leaves WHERE summary=?", (sid,))  # no row of an older, longer list stays
    db.executemany("INSERT OR REPLACE INTO leaves VALUES (?,?,?,?,?,?)", rows)


def _get_made(db: sqlite3.Connection, sid: str) -> str | None:
    row = db.execute("SELECT text FROM made WHERE summary=?", (sid,)).fetchone()
    return row[0] if row else None


def _put_made(db: sqlite3.Connection, sid: str, text: str) -> None:
    db.execute("INSERT OR REPLACE INTO made VALUES (?,?)", (sid, text))


def corrected(text: str, made: str) -> bool:
    """A summary's text differs from the one pamd made (spacing aside): a person's correction."""
    return text.split() != made.split()


def _leaf(e: Entry) -> Leaf:
    return (e.id, fmt_time(e.ts), e.role, e.text)


# Neighbours kept on each side of a raw leaf (the index uses `[index] dense_context` of them).
AROUND = 3
AROUND_CHARS = 1500
Around = tuple[tuple[str, ...], tuple[str, ...]]


def neighbours(entries: Iterable[Entry], ids: set[str]) -> dict[str, Around]:
    """For each raw entry of `ids`, the entries said before and after it in its file (up to
    AROUND a side, file order), as the index's chunks read them (`role: text`)."""
    by_path: dict[str, list[Entry]] = {}
    for e in entries:
        if e.path:
            by_path.setdefault(e.path, []).append(e)
    out: dict[str, Around] = {}
    for run in by_path.values():
        run.sort(key=lambda e: e.line_start)
        texts = [f"{e.role}: {e.text}"[:AROUND_CHARS] for e in run]
        for i, e in enumerate(run):
            if e.id in ids and not e.sources:
                out[e.id] = (tuple(texts[max(0, i - AROUND):i]), tuple(texts[i + 1:i + 1 + AROUND]))
    return out


def _put_around(db: sqlite3.Connection, found: dict[str, Around | None]) -> None:
    db.executemany("INSERT OR REPLACE INTO around VALUES (?,?,?)",
                   [(rid, json.dumps(list(a[0])) if a else None, json.dumps(list(a[1])) if a else None)
                    for rid, a in found.items()])


def record(state_dir: Path, summaries: Iterable[Entry], known: dict[str, Entry]) -> None:
    """Called by compaction with the summaries it just wrote and every entry it read."""
    summaries = list(summaries)
    db = _connect(state_dir)
    try:
        with db:
            raw = {src for s in summaries for src in s.sources if src in known and not known[src].sources}
            _put_around(db, dict(neighbours(known.values(), raw)))
            for s in summaries:
                _put_made(db, s.id, s.text)
                leaves: list[Leaf] = []
                for src in s.sources:
                    e = known.get(src)
                    if e is not None and not e.sources:
                        leaves.append(_leaf(e))
                        continue
                    below = _get(db, src)
                    made = _get_made(db, src) if e is not None else ""
                    if below is None or made is None:  # not cached: the history pass fills it in later
                        break
                    leaves += below
                    if e is not None and corrected(e.text, made):
                        leaves.append(_leaf(e))
                else:
                    _put(db, s.id, leaves)
    finally:
        db.close()


def texts_of(state_dir: Path, raw_ids: Iterable[str]) -> dict[str, str]:
    """The words of raw leaves the cache holds (behind any summary)."""
    db = _connect(state_dir)
    try:
        out = {}
        for rid in raw_ids:
            row = db.execute("SELECT text FROM leaves WHERE raw=? AND pos>=0 LIMIT 1", (rid,)).fetchone()
            if row:
                out[rid] = row[0]
        return out
    finally:
        db.close()


class Lookup:
    """Leaves of summaries for the chunker; missing ones are read from history once."""

    def __init__(self, root: Path, state_dir: Path, again: bool = False) -> None:
        """`again` (pamd index --rebuild): cached "no leaves" answers are asked of history again."""
        self.root = root
        self.db = _connect(state_dir)
        if again:
            with self.db:
                self.db.execute("DELETE FROM leaves WHERE pos=-1")
        self._brain = None
        self._history = None  # read once, for every summary the cache lacks
        self.shallow = 0  # summaries whose leaves a shallow clone's history lacks
        self._shallow: bool | None = None
        self.unread = 0  # summaries not read because the tree does not load (a person's mistake)
        self.why = None  # ... and its PamdError

    def __call__(self, summary: Entry) -> list[Leaf]:
        got = _get(self.db, summary.id)
        if got is None:
            got = self._from_history(summary.id)
            if got is not None:
                with self.db:
                    _put(self.db, summary.id, got)
        return got or []

    def around(self, raw: str) -> Around | None:
        """The leaf's neighbours in the last tree that held it raw (cached; else read from
        history once); None when not known (then the index embeds it among its fellow leaves)."""
        row = self.db.execute("SELECT prev, next FROM around WHERE raw=?", (raw,)).fetchone()
        if row is not None:
            return (tuple(json.loads(row[0])), tuple(json.loads(row[1]))) if row[0] is not None else None
        got = self._around_from_history(raw)
        with self.db:
            _put_around(self.db, {raw: got})
        return got

    def _around_from_history(self, raw: str) -> Around | None:
        """From the parent of the newest commit that took `raw` out of a file: the tree it
        was last in, raw (a compaction's parent, as the compaction read it)."""
        try:
            self._open_history()
            h = self._history
            h._scan()
            for pos, path, delta, _ in h.touches.get(raw, ()):
                if delta < 0:
                    parent = h.parent(h.order[pos])
                    doc = h._doc(parent, path) if parent else None
                    return neighbours(doc[1], {raw}).get(raw) if doc else None
        except Exception:  # noqa: BLE001 - a cache: the leaf is still indexed, among its fellow leaves
            return None
        return None

    def _from_history(self, sid: str) -> list[Leaf] | None:
        """The leaves of `sid` read from history; None (not cached) when a shallow clone lacks them."""
        from pamd.consolidate.provenance import expand_ids
        from pamd.errors import PamdError

        self._open_history()
        if self.why is not None:  # the person can fix it: no answer, so nothing cached
            self.unread += 1
            return None
        try:
            found = expand_ids(self._brain, [sid], made=True, hist=self._history)
        except PamdError:
            if self._shallow is None:
                self._shallow = self._brain.repo.is_shallow()
            if self._shallow:
                self.shallow += 1  # the history is missing, not broken: try again once it is fetched
                return None
            # a source in neither the tree nor history (pamd fsck says where), or pulled from
            # another brain: history will not change that, so "no leaves" is cached; the
            # summary is still searchable itself
            return []
        for f in found:  # committed with the leaves (__call__): one transaction a summary
            if f.made is not None:
                _put_made(self.db, f.entry.id, f.made)
        return [_leaf(f.entry) for f in found
                if not f.entry.sources or (f.depth and f.made is not None and corrected(f.entry.text, f.made))]

    def _open_history(self) -> None:
        from pamd.consolidate.provenance import History
        from pamd.edge.brain import Brain
        from pamd.errors import PamdError

        if self._brain is None:
            self._brain = Brain(self.root)
            self._history = History(self._brain)
            try:
                self._history.in_tree(set())  # the tree loads: no malformed header, no duplicate id
            except PamdError as exc:
                self.why = exc

    def close(self) -> None:
        self.db.close()
        if self.shallow:
            log.warning("this clone is shallow (cloned with --depth): the raw messages behind %s are not"
                        " in its history, so recall cannot search them; run `git fetch --unshallow`, then"
                        " `pamd index --rebuild`", plural(self.shallow, "summary"))
        if self.unread:
            log.warning("the raw messages behind %s are not searchable until the brain loads: %s;"
                        " fix it (pamd check), then run `pamd index` (or recall)",
                        plural(self.unread, "summary"), self.why.message)
