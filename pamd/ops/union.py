"""Merge two clones' entry files by entry id: every entry once, none lost, none doubled.

A pure function of the three versions of every entry file (the merge base, ours,
theirs), the `from=` lists history knows and the ids each side dropped in a
commit that says so. Entries are identified by id, so the merged tree is the
union of both sides, minus

- what one side compacted into a summary the union holds (an entry below a
  summary through `from=`, at any depth, is that summary's), and
- what one side dropped with a commit whose `Dropped` line names it;

and where two summaries of the union stand for a message both (each clone
compacted it on its own clock), the larger is kept and the other is taken
apart into its sources, down to what no kept entry holds: those come back
(raw if need be) for the next compaction to plan again. A recall that one side
folded into an entry the other side compacted is carried to the summary.

What a person wrote around the entries (frontmatter, the text above them,
MEMORY.md's notes) is merged as text; where both sides changed it differently
the file is a conflict for the person, never resolved here.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from pamd.consolidate.compaction import only_pamds
from pamd.core.entry import Entry, add_via
from pamd.core.fmt import Doc, parse_doc, render_doc
from pamd.core.paths import MEMORY, tier_of

Head = tuple[dict, str] | None  # (frontmatter, text above the entries); None: no such file
# Three-way merge of text (base, ours, theirs) -> the merge, or None on a conflict.
Text3 = Callable[[str, str, str], str | None]
# Entries by id that no tree of the three holds (history's), else left out.
Lookup = Callable[[set[str]], dict[str, Entry]]
_NO = object()  # a frontmatter key a version lacks
TIER_RANK = {"L0": 0, "L1": 1, "L2": 2, "L3": 3, "L4": 4}


@dataclass
class Merged:
    files: dict[str, str | None] = field(default_factory=dict)  # path -> text, None: delete
    conflicts: list[str] = field(default_factory=list)  # files whose person text conflicts
    folded: list[str] = field(default_factory=list)  # one side's entries the other compacted
    dropped: list[str] = field(default_factory=list)  # one side's entries the other dropped, saying so
    restored: list[str] = field(default_factory=list)  # sources of a summary taken apart
    set_aside: list[str] = field(default_factory=list)  # summaries taken apart: the other side's holds theirs
    recalls: int = 0  # recalls carried to the summary holding their entry
    entries: dict[str, Entry] = field(default_factory=dict)  # what the merged files hold, by id


def merge3(base, ours, theirs):
    """(value, conflict): the side that changed, or ours when both changed differently."""
    if ours == theirs or theirs == base:
        return ours, False
    if ours == base:
        return theirs, False
    return ours, True


def merge_entry(b: Entry | None, o: Entry, t: Entry) -> Entry:
    """One entry both sides hold: each field from the side that changed it; recalls add up."""
    if o == t:
        return o
    ref = b or o
    changes = {}
    for name in ("ts", "role", "session", "type", "importance", "neuro", "sources"):
        changes[name] = merge3(getattr(ref, name), getattr(o, name), getattr(t, name))[0]
    text, clash = merge3(ref.text, o.text, t.text)
    if clash and t.text.count("[REDACTED") > o.text.count("[REDACTED"):
        text = t.text  # a redaction on that side: never bring the secret back
    if b is None:
        recalls = max(o.recalls, t.recalls)
        via = o.via if o.recalls >= t.recalls else t.via
    else:
        recalls = o.recalls + max(0, t.recalls - b.recalls)
        was = dict(b.via)
        via = add_via(o.via, {leaf: n - was.get(leaf, 0) for leaf, n in t.via})
    seen = max(o.seen, t.seen)
    return o.with_(text=text, recalls=recalls, via=via, seen=seen, **changes)


def merge_files(texts: tuple[dict[str, str], dict[str, str], dict[str, str]],
                sources: dict[str, tuple[str, ...]], dropped: tuple[set[str], set[str]],
                text3: Text3, lookup: Lookup) -> Merged:
    """The merged entry files from the texts (path -> text) of the base, ours and theirs.
    `dropped`: ids a commit of ours' / theirs' side since the base dropped and said so.
    Raises FormatError for a file of either side that does not parse."""
    out = Merged()
    base, ours, theirs = ({rel: parse_doc(text, rel, tier_of(rel) or "L0") for rel, text in side.items()}
                          for side in texts)
    side = [{e.id: e for d in docs.values() for e in d.entries} for docs in (base, ours, theirs)]
    b_ids, o_ids, t_ids = side
    cand: dict[str, Entry] = {}
    for eid in o_ids.keys() | t_ids.keys():
        o, t = o_ids.get(eid), t_ids.get(eid)
        if o is not None and t is not None:
            cand[eid] = merge_entry(b_ids.get(eid), o, t)
        elif eid in dropped[0 if o is None else 1]:  # the side without it dropped it, saying so
            out.dropped.append(eid)
        else:
            cand[eid] = o or t  # type: ignore[assignment]
    known = {**b_ids, **t_ids, **o_ids, **cand}
    below = dict(sources)
    below.update({e.id: e.sources for e in known.values() if e.sources})
    closure = _closures(below)

    covered = {s for eid in cand for s in closure(eid)}
    for eid in sorted(cand.keys() & covered):
        out.folded.append(eid)

    def rank(e: Entry) -> tuple:
        """Who is kept where two stand for one message: the higher tier, then the larger."""
        return -TIER_RANK.get(e.tier, 0), -len(closure(e.id)), e.id

    queue = sorted((e for eid, e in cand.items() if eid not in covered), key=rank)
    kept: dict[str, Entry] = {}
    claimed: set[str] = set()
    while queue:
        e = queue.pop(0)
        under = closure(e.id) | {e.id}
        if under <= claimed:
            continue
        if under & claimed:
            parts = [s for s in e.sources if not (closure(s) | {s}) <= claimed]
            found = {s: known[s] for s in parts if s in known}
            if len(found) < len(parts):
                found.update(lookup(set(parts) - set(found)))
            if len(found) == len(parts):  # else keep it whole: counted twice beats lost
                out.restored += [s for s in parts if s not in cand]
                out.set_aside.append(e.id)
                known.update(found)
                queue = sorted([*queue, *found.values()], key=rank)
                continue
        kept[e.id] = e
        claimed |= under

    # A recall one side folded into an entry the other compacted goes to its summary.
    holder = {s: k for k in kept for s in closure(k)}
    for eid in out.folded:
        e, was = cand[eid], b_ids.get(eid)
        gained = e.recalls - (was.recalls if was else 0)
        if gained > 0 and (h := holder.get(eid)) is not None:
            kept[h] = kept[h].with_(recalls=kept[h].recalls + gained)
            out.recalls += gained
    out.entries = kept

    at: dict[str, list[Entry]] = {}
    for e in kept.values():
        at.setdefault(e.path, []).append(e)
    order: dict[str, int] = {}
    for docs in (ours, theirs, base):
        for d in docs.values():
            for e in d.entries:
                order.setdefault(e.id, len(order))
    for path in sorted(ours.keys() | theirs.keys() | at.keys()):
        heads = [_head(docs.get(path)) for docs in (base, ours, theirs)]
        head = _merge_head(heads[0], heads[1], heads[2], text3)
        if head is False:
            out.conflicts.append(path)
            continue
        if head is None:  # a file neither side keeps, which entries come back to
            head = next((h for h in (heads[1], heads[2], heads[0]) if h is not None), None) or _new_head(path)
        entries = sorted(at.get(path, []), key=lambda e: (e.ts, order.get(e.id, len(order))))
        if not entries and path != MEMORY and only_pamds(path, Doc(head[0], head[1], [], 1)):
            text = None
        else:
            text = render_doc(head[0], head[1], entries)
        for i, docs in ((1, ours), (2, theirs)):
            if path in docs and text is not None and text == render_doc(docs[path].meta, docs[path].preamble,
                                                                        docs[path].entries):
                text = texts[i][path]  # as that side has it: keep its bytes as they are
                break
        out.files[path] = text
    return out


def _closures(below: dict[str, tuple[str, ...]]) -> Callable[[str], frozenset[str]]:
    """closure(id): every id below it through `from=`, at any depth (itself not included)."""
    memo: dict[str, frozenset[str]] = {}

    def closure(eid: str) -> frozenset[str]:
        if eid in memo:
            return memo[eid]
        memo[eid] = frozenset()  # a cycle (a hand-edited from=) ends here
        acc: set[str] = set()
        for s in below.get(eid, ()):
            acc.add(s)
            acc |= closure(s)
        memo[eid] = frozenset(acc)
        return memo[eid]

    return closure


def _new_head(path: str) -> tuple[dict, str]:
    """What pamd writes above the entries of a tier file it makes (as ingest and compaction do)."""
    if path == MEMORY:
        return {}, ""
    tier, day = tier_of(path) or "L0", path.rsplit("/", 1)[-1].removesuffix(".md")
    return {"tier": tier, "date": day}, f"# {tier} · {day}"


def _head(doc: Doc | None) -> Head:
    return None if doc is None else (doc.meta, doc.preamble)


def _merge_head(b: Head, o: Head, t: Head, text3: Text3):
    """The merged head, None when neither side has the file, False on a person's conflict."""
    if o == t or t == b:
        return o
    if o == b:
        return t
    if o is None or t is None:
        return o or t  # one side deleted a file the other changed: the change stays
    bm = b[0] if b else {}
    meta = {}
    for key in [*o[0], *(k for k in t[0] if k not in o[0])]:
        value, clash = merge3(bm.get(key, _NO), o[0].get(key, _NO), t[0].get(key, _NO))
        if clash:
            return False
        if value is not _NO:
            meta[key] = value
    text, clash = merge3(b[1] if b else "", o[1], t[1])
    if clash and (text := text3(b[1] if b else "", o[1], t[1])) is None:
        return False
    return meta, text

