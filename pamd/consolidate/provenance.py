"""Walk a summary back to the raw messages it came from, through git history.

A summary lists its direct sources (`from=`). The commit that added the
summary is the one that removed those sources from the tree, so they are in
its parent, level by level, L3 → L2 → L1 → L0. A summary added more than once
(compacted, reverted, compacted again after a raw entry was corrected) stands
for the sources of its *last* adding commit before the version being expanded,
as that is what the tree's summary was made from. Dropped entries are found the
same way (the last commit that touched them).

Which commits changed how often an entry's header occurs (what `git log -S`
finds) is read for every id at once, in one `git log -p` of the brain's history
(`History`), and the files of past trees through one `git cat-file --batch`:
a fresh clone indexing a few hundred summaries pays one pass over history,
not one pickaxe walk per id.
"""

from __future__ import annotations

import codecs
import re
from dataclasses import dataclass

from pamd.core.entry import Entry, fmt_time
from pamd.core.fmt import FormatError, parse_doc
from pamd.core.paths import SYNAPSE_DIR, tier_of
from pamd.edge.brain import Brain
from pamd.edge.lineage import added_entry
from pamd.errors import PamdError

MAX_DEPTH = 8
HEADER_AT = re.compile(r"### (\S+) · ")  # where `_header(id)` occurs in a line, for any id
SHALLOW_HINT = "fetch the rest of its history with `git fetch --unshallow`"


@dataclass(frozen=True)
class Found:
    entry: Entry
    rev: str  # "WORKTREE" or the commit whose tree holds the entry
    depth: int
    # A summary's text as the commit that last added it wrote it (expand_ids(made=True)):
    # when `entry.text` differs, a person corrected the summary after pamd made it.
    made: str | None = None

    def as_json(self) -> dict:
        """One entry of `pamd expand --json` and of the agent's expand tool."""
        e = self.entry
        return {"id": e.id, "tier": e.tier, "ts": fmt_time(e.ts), "role": e.role, "text": e.text,
                "sources": list(e.sources), "path": e.path, "rev": self.rev, "depth": self.depth}


def _header(eid: str) -> str:
    return f"### {eid} · "


class History:
    """What `git log -S` and `git grep` would say about any entry id, from one pass.

    Read on first need: one `git log -p --unified=0` of the brain's history (all files,
    as a pickaxe walk sees them) gives, per id, each commit and file whose diff changes
    how many times the id's header occurs, and where it was added; a past tree's files
    are read through git's one `cat-file --batch` process. The work tree is read once:
    a History is for one reading of the brain (an index build, an expand, a probe run).
    """

    def __init__(self, brain: Brain) -> None:
        self.brain = brain
        self._tree: dict[str, Entry] | None = None
        self._lines: list[str] | None = None
        self.order: list[str] = []  # commits, newest first (git log's order)
        self.pos: dict[str, int] = {}
        self.parents: dict[str, list[str]] = {}
        # id -> [commit position, path, count change, indexes of its added header lines]
        self.touches: dict[str, list[list]] = {}
        self.linear = True
        self._ancestors: dict[str, set[str]] = {}
        self._docs: dict[tuple[str, str], tuple[str, list[Entry]]] = {}  # by (blob, path)
        self._at: dict[tuple[str, str], tuple[str, str] | None] = {}  # (rev, path) -> its key in _docs
        self._head: str | None = None

    def tree(self) -> dict[str, Entry]:
        """The work tree's entries by id, read once."""
        if self._tree is None:
            self._tree = {e.id: e for e in self.brain.load().entries}
        return self._tree

    def in_tree(self, ids: set[str]) -> dict[str, Entry]:
        tree = self.tree()
        return {eid: tree[eid] for eid in ids if eid in tree}

    def ids(self) -> set[str]:
        """Every id whose entry header a commit of the history added or removed."""
        self._scan()
        return set(self.touches)

    def _scan(self) -> list[str]:
        if self._lines is not None:
            return self._lines
        self._lines = []
        self._head = self.brain.repo.rev_parse("HEAD")
        if self._head is None:
            return self._lines
        # The `a/`/`b/` that the paths below are cut from is pinned: a person's diff.noprefix or
        # diff.mnemonicPrefix would change it.
        text = self.brain.repo.run("-c", "core.quotePath=false", "log", "-p", "--unified=0", "--no-color",
                                   "--no-renames", "--no-ext-diff", "--src-prefix=a/", "--dst-prefix=b/",
                                   "--format=%x00%H %P",
                                   *self.brain.repo.history())
        lines = self._lines = text.split("\n")
        pos, path, header = -1, None, False
        for i, line in enumerate(lines):
            if line.startswith("\0"):
                sha, *parents = line[1:].split()
                pos += 1
                self.order.append(sha)
                self.pos[sha] = pos
                self.parents[sha] = parents
                path = None
            elif line.startswith("diff --git "):
                path, header = None, True
            elif header:
                if line.startswith("@@"):
                    header = False
                elif line.startswith(("--- ", "+++ ")) and line[4:] != "/dev/null":
                    # a name with a space ends in a tab there (for patch)
                    path = _unquote(line[4:].removesuffix("\t"))[2:]
            elif path is not None and line[:1] in "+-" and "### " in line:
                for m in HEADER_AT.finditer(line, 1):
                    recs = self.touches.setdefault(m.group(1), [])
                    if not recs or recs[-1][0] != pos or recs[-1][1] != path:
                        recs.append([pos, path, 0, []])
                    recs[-1][2] += 1 if line[0] == "+" else -1
                    if line[0] == "+" and m.start() == 1:
                        recs[-1][3].append(i)
        for sha, ps in self.parents.items():  # a parent history lacks: a shallow clone's edge
            self.parents[sha] = [p for p in ps if p in self.pos] if ps and ps[0] in self.pos else []
        self.linear = all(self.parents[sha] == self.order[n + 1:n + 2] for n, sha in enumerate(self.order))
        return self._lines

    def touching(self, eid: str) -> list[str]:
        """Commits of history whose diff changes the count of `eid`'s header, newest first (`git log -S`)."""
        self._scan()
        out: list[str] = []
        for pos, _path, delta, _added in self.touches.get(eid, ()):
            if delta and (not out or out[-1] != self.order[pos]):
                out.append(self.order[pos])
        return out

    def parent(self, sha: str) -> str | None:
        self._scan()
        ps = self.parents.get(sha)
        return ps[0] if ps else None

    def _reaches(self, start: str, sha: str) -> bool:
        """`sha` is `start` or one of its ancestors."""
        if self.linear:
            return self.pos[sha] >= self.pos[start]
        if start not in self._ancestors:
            seen, todo = {start}, [start]
            while todo:
                for p in self.parents.get(todo.pop(), ()):
                    if p not in seen:
                        seen.add(p)
                        todo.append(p)
            self._ancestors[start] = seen
        return sha in self._ancestors[start]

    def adder(self, eid: str, rev: str = "WORKTREE", made: bool = False) -> tuple[str | None, str | None]:
        """The parent of the commit that last added the version of `eid` that `rev` holds,
        and (with `made`) the text that commit gave it.

        The newest commit at or before `rev` whose diff changes the count of the
        summary's header is the one that put it in `rev`'s tree: a summary made
        again after a revert (from a raw entry corrected in between) reads the
        corrected sources, not those of the first, undone compaction. When that
        commit did not make the summary (a revert that brings it back), its parent
        lacks the sources and `locate` finds each where history last had it.
        """
        lines = self._scan()
        if rev == "WORKTREE":
            start = self._head
        else:
            start = rev if rev in self.pos else self.brain.repo.rev_parse(rev)
        if start is None or start not in self.pos:
            return None, None
        recs = self.touches.get(eid, ())
        hit = next((r[0] for r in recs if r[2] and self._reaches(start, self.order[r[0]])), None)
        if hit is None:
            return None, None
        text = None
        if made:
            head = "+" + _header(eid)
            # as `git log -S -p` shows it: the files whose count changed, in diff order
            for i in (i for r in recs if r[0] == hit and r[2] for i in r[3]):
                if lines[i].startswith(head):
                    e, _ = added_entry(lines, i)
                    if e is not None and e.id == eid:
                        text = e.text
                        break
        return self.parent(self.order[hit]), text

    def entries_at(self, rev: str, ids: set[str]) -> dict[str, Entry]:
        """Entries with these ids in the tree of `rev` (as `git grep` then parsing the files would)."""
        self._scan()
        paths = sorted({r[1] for eid in ids for r in self.touches.get(eid, ()) if tier_of(r[1])})
        heads = [_header(eid) for eid in ids]
        out: dict[str, Entry] = {}
        for rel in paths:
            got = self._doc(rev, rel)
            if got is None or not any(h in got[0] for h in heads):
                continue
            for e in got[1]:
                if e.id in ids:
                    out[e.id] = e
        return out

    def _doc(self, rev: str, rel: str) -> tuple[str, list[Entry]] | None:
        if (rev, rel) in self._at:
            key = self._at[(rev, rel)]
            return None if key is None else self._docs[key]
        blob = self.brain.repo.blob(rev, rel)
        self._at[(rev, rel)] = None if blob is None else (blob[0], rel)
        if blob is None:
            return None
        sha, text = blob
        if (sha, rel) not in self._docs:
            try:
                entries = parse_doc(text, rel, tier_of(rel) or "L0").entries
            except FormatError:
                entries = []
            self._docs[(sha, rel)] = (text, entries)
        return self._docs[(sha, rel)]


def _unquote(name: str) -> str:
    """A path as `git diff` prints it: C-quoted when it holds a quote, a backslash or a control character."""
    if not name.startswith('"'):
        return name
    return codecs.escape_decode(name[1:-1].encode("utf-8"))[0].decode("utf-8", "surrogateescape")


def holders(tree: list[Entry], ids: set[str], sources: dict[str, tuple[str, ...]]) -> dict[str, str]:
    """For each id in `ids`, the entry of `tree` that stands for it: itself, or the summary
    it was folded into, through `from=` at any depth (`sources`: summary id -> its from=,
    for the summaries history knows; the tree's own are added). Ids nothing holds are left out."""
    below = dict(sources)
    below.update({e.id: e.sources for e in tree if e.sources})
    out: dict[str, str] = {e.id: e.id for e in tree if e.id in ids}
    level = [(e.id, e.id) for e in tree if e.sources]
    seen = {e.id for e in tree}
    while level and len(out) < len(ids):  # breadth first: the nearest summary holds it
        nxt = []
        for holder, eid in level:
            for src in below.get(eid, ()):
                if src in seen:
                    continue
                seen.add(src)
                if src in ids:
                    out.setdefault(src, holder)
                nxt.append((holder, src))
        level = nxt
    return out


def held_by(brain: Brain, ids: set[str]) -> dict[str, str]:
    """`holders` over the work tree; history's `from=` lists are read (one pass) only
    when an id is neither in the tree nor a direct source of a summary there."""
    tree = brain.load().entries
    out = holders(tree, ids, {})
    if len(out) < len(ids):
        from pamd.edge import lineage

        out = holders(tree, ids, lineage.scan(brain).sources)
    return out


def locate(brain: Brain, ids: set[str], hint_rev: str | None = None,
           tree: bool = True, hist: History | None = None) -> dict[str, tuple[Entry, str]]:
    """Find entries by id: in the work tree, in `hint_rev`, else where history last had them.

    `tree=False`: the caller has looked in the work tree already (fsck, which reads only
    the files that parse: a conflicted one is the `conflicts` check's finding)."""
    hist = hist or History(brain)
    found: dict[str, tuple[Entry, str]] = {}
    if tree:
        found = {eid: (e, "WORKTREE") for eid, e in hist.in_tree(ids).items()}
    missing = ids - set(found)
    if missing and hint_rev:
        for eid, e in hist.entries_at(hint_rev, missing).items():
            found[eid] = (e, hint_rev)
        missing = ids - set(found)
    for eid in sorted(missing):
        for c in hist.touching(eid):  # newest first: the commit that removed it, then the one that added it
            for rev in (hist.parent(c), c):
                if rev is None:
                    continue
                hit = hist.entries_at(rev, {eid})
                if eid in hit:
                    found[eid] = (hit[eid], rev)
                    break
            if eid in found:
                break
    return found


def expand_ids(brain: Brain, ids: list[str], made: bool = False, hist: History | None = None) -> list[Found]:
    """Every entry reachable from `ids` through provenance, raw ones last at each level.

    With `made`, each summary's Found also carries the text its adding commit gave it
    (read from the same `git log`, with the patch). `hist`: a History shared by many
    calls over one unchanged brain (an index build reads history once)."""
    hist = hist or History(brain)
    out: list[Found] = []
    seen: set[str] = set()
    frontier: dict[str, str | None] = {eid: None for eid in ids}
    depth = 0
    while frontier and depth <= MAX_DEPTH:
        hint = next((r for r in frontier.values() if r), None)
        located = locate(brain, set(frontier), hint, hist=hist)
        nxt: dict[str, str | None] = {}
        for eid in frontier:
            if eid not in located:
                if brain.repo.is_shallow():
                    raise PamdError(f"entry {eid} is not in the tree nor in this clone's history, which is"
                                    " shallow (cloned with --depth)", SHALLOW_HINT)
                if name := pulled_from(brain, eid):
                    raise pulled(name, f"entry {eid}", "expand")
                raise PamdError(f"entry {eid} is not in the tree nor in its history",
                                "check the id (pamd recall --json shows ids)")
            e, rev = located[eid]
            seen.add(eid)
            text = None
            if e.sources:
                # Sources left the tree in the commit that added this summary.
                where, text = hist.adder(e.id, rev, made)
                for src in e.sources:
                    if src not in seen:
                        nxt[src] = where
            out.append(Found(e, rev, depth, text))
        frontier = nxt
        depth += 1
    return out


def shown(found: list[Found], between: bool = False) -> list[Found]:
    """What `pamd expand` and the agent's expand tool show of expand_ids: the entries asked
    for and the raw messages behind them; `between` adds the summaries in between."""
    return [f for f in found if between or not f.entry.sources or f.depth == 0]


def pulled_from(brain: Brain, eid: str) -> str | None:
    """The synapse whose pulled knowledge (synapse/NAME/…) names `eid`, if any.

    Its history is the other brain's, not this one's: only the source can expand it."""
    base = brain.path(SYNAPSE_DIR)
    if not base.is_dir():
        return None
    for p in sorted(base.glob("*/**/*.md")):
        try:
            if eid in p.read_text(encoding="utf-8", errors="replace"):
                return p.relative_to(base).parts[0]
        except OSError:
            continue
    return None


def pulled(name: str, what: str, verb: str) -> PamdError:
    return PamdError(f"{what} is knowledge pulled from brain {name} into synapse/{name}/, read-only here",
                     f"{verb} it in {name}'s own brain; `pamd synapse list` shows where that is")


def resolve_ref(brain: Brain, ref: str, verb: str = "expand") -> str:
    """An entry id, or PATH:LINE naming a line inside an entry of the work tree (not synapse/)."""
    ref = ref.strip()
    if ":" in ref and not ref.startswith(("e-", "s-")):
        rel, _, line = ref.rpartition(":")
        line = line.split("-")[0]
        if not line.isdigit():
            raise PamdError(f"bad reference {ref!r}", "use an entry id or PATH:LINE")
        root = str(brain.root) + "/"
        rel = rel[len(root):] if rel.startswith(root) else rel
        parts = rel.split("/")
        if parts[0] == SYNAPSE_DIR and len(parts) > 2:
            raise pulled(parts[1], f"{rel}:{line}", verb)
        doc = brain.parse(rel)
        for e in doc.entries:
            if e.line_start <= int(line) <= e.line_end:
                return e.id
        raise PamdError(f"no entry at {rel}:{line}",
                        "name a line of an entry: its ### header, metadata line or > text; "
                        "`pamd recall` prints them as path:start-end")
    if not (ref.startswith(("e-", "s-")) and len(ref) == 14):
        raise PamdError(f"bad reference {ref!r}", "use an entry id like s-1a2b3c4d5e6f or PATH:LINE")
    return ref
