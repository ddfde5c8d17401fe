"""Walk a summary back to the raw messages it came from, through git history.

A summary lists its direct sources (`from=`). The commit that added the
summary is the one that removed those sources from the tree, so they are in
its parent: one `git log -S` and one `git grep` per level, L3 → L2 → L1 → L0.
A summary added more than once (compacted, reverted, compacted again after a
raw entry was corrected) stands for the sources of its *last* adding commit
before the version being expanded, as that is what the tree's summary was made from.
Dropped entries are found the same way (the last commit that touched them).
"""

from __future__ import annotations

from dataclasses import dataclass

from pamd.core.entry import Entry
from pamd.core.fmt import FormatError, parse_doc
from pamd.edge.brain import SYNAPSE_DIR, Brain, tier_of
from pamd.edge.lineage import added_entry
from pamd.errors import PamdError

MAX_DEPTH = 8
SHALLOW_HINT = "fetch the rest of its history with `git fetch --unshallow`"


@dataclass(frozen=True)
class Found:
    entry: Entry
    rev: str  # "WORKTREE" or the commit whose tree holds the entry
    depth: int
    # A summary's text as the commit that last added it wrote it (expand_ids(made=True)):
    # when `entry.text` differs, a person corrected the summary after pamd made it.
    made: str | None = None


def _header(eid: str) -> str:
    return f"### {eid} · "


def find_in_tree(brain: Brain, ids: set[str]) -> dict[str, Entry]:
    out = {}
    for e in brain.load().entries:
        if e.id in ids:
            out[e.id] = e
    return out


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


def _entries_at(brain: Brain, rev: str, ids: set[str]) -> dict[str, Entry]:
    """Entries with these ids in the tree of `rev` (git grep, then parse the files)."""
    # -z: names as they are, not C-quoted (core.quotePath) like "memory/L0/\303\274.md".
    args = ["grep", "-l", "-z", "-F"]
    for eid in sorted(ids):
        args += ["-e", _header(eid)]
    try:
        listing = brain.repo.run(*args, rev, "--")
    except PamdError:
        return {}
    out: dict[str, Entry] = {}
    for name in filter(None, listing.split("\0")):
        rel = name[len(rev) + 1:] if name.startswith(rev + ":") else name
        text = brain.repo.show(rev, rel)
        if text is None or tier_of(rel) is None:
            continue
        try:
            doc = parse_doc(text, rel, tier_of(rel) or "L0")
        except FormatError:
            continue
        for e in doc.entries:
            if e.id in ids:
                out[e.id] = e
    return out


def locate(brain: Brain, ids: set[str], hint_rev: str | None = None,
           tree: bool = True) -> dict[str, tuple[Entry, str]]:
    """Find entries by id: in the work tree, in `hint_rev`, else where history last had them.

    `tree=False`: the caller has looked in the work tree already (fsck, which reads only
    the files that parse: a conflicted one is the `conflicts` check's finding)."""
    found: dict[str, tuple[Entry, str]] = {}
    if tree:
        found = {eid: (e, "WORKTREE") for eid, e in find_in_tree(brain, ids).items()}
    missing = ids - set(found)
    if missing and hint_rev:
        for eid, e in _entries_at(brain, hint_rev, missing).items():
            found[eid] = (e, hint_rev)
        missing = ids - set(found)
    for eid in sorted(missing):
        commits = brain.repo.log("--format=%H", "-F", "-S", _header(eid), *brain.repo.history()).split()
        for c in commits:  # newest first: the commit that removed it, then the one that added it
            for rev in (f"{c}^", c):
                if brain.repo.rev_parse(rev) is None:
                    continue
                hit = _entries_at(brain, rev, {eid})
                if eid in hit:
                    found[eid] = (hit[eid], brain.repo.rev_parse(rev) or rev)
                    break
            if eid in found:
                break
    return found


def expand_ids(brain: Brain, ids: list[str], made: bool = False) -> list[Found]:
    """Every entry reachable from `ids` through provenance, raw ones last at each level.

    With `made`, each summary's Found also carries the text its adding commit gave it
    (read from the same `git log`, with the patch)."""
    out: list[Found] = []
    seen: set[str] = set()
    frontier = {eid: None for eid in ids}
    depth = 0
    while frontier and depth <= MAX_DEPTH:
        hint = next((r for r in frontier.values() if r), None)
        located = locate(brain, set(frontier), hint)
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
                where, text = _adder(brain, e.id, rev, made)
                for src in e.sources:
                    if src not in seen:
                        nxt[src] = where
            out.append(Found(e, rev, depth, text))
        frontier = nxt
        depth += 1
    return out


def _adder(brain: Brain, eid: str, rev: str = "WORKTREE", made: bool = False) -> tuple[str | None, str | None]:
    """The parent of the commit that last added the version of `eid` that `rev` holds,
    and (with `made`) the text that commit gave it.

    The newest commit at or before `rev` whose diff changes the count of the
    summary's header is the one that put it in `rev`'s tree: a summary made
    again after a revert (from a raw entry corrected in between) reads the
    corrected sources, not those of the first, undone compaction. When that
    commit did not make the summary (a revert that brings it back), its parent
    lacks the sources and `locate` finds each where history last had it.
    """
    start = "HEAD" if rev == "WORKTREE" else rev
    patch = ["-p", "--unified=0", "--no-color", "--no-renames", "--no-ext-diff"] if made else []
    try:
        out = brain.repo.log("-1", "--format=%H", *patch, "-F", "-S", _header(eid), start, "--")
    except PamdError:  # no commit yet
        return None, None
    lines = out.split("\n")
    if not lines[0].strip():
        return None, None
    text = None
    head = "+" + _header(eid)
    for i, line in enumerate(lines):
        if line.startswith(head):
            e, _ = added_entry(lines, i)
            if e is not None and e.id == eid:
                text = e.text
                break
    return brain.repo.rev_parse(f"{lines[0].strip()}^"), text


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
        raise PamdError(f"no entry at {rel}:{line}")
    if not (ref.startswith(("e-", "s-")) and len(ref) == 14):
        raise PamdError(f"bad reference {ref!r}", "use an entry id like s-1a2b3c4d5e6f or PATH:LINE")
    return ref
