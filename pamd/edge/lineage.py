"""What history knows about every entry, read in one `git log -p` pass over the tiers.

The tree holds only what is left; a brain's past holds every entry a commit
ever added: each raw message as it was ingested and each summary's `from=`.
Both are fixed once written (an entry id hashes its content, a summary's id
its sources; only redaction edits a raw text later), so the newest version a
commit added says enough. `pamd fsck` uses this to account for every id the
ledger names, and `pamd eval --brain` to count the raw tokens behind a brain
that was compacted before it was measured.

The walk is `--full-history`: git's default simplification follows only one
parent of a merge whose result equals that parent for the paths asked about,
so a merge resolved by taking one side whole (`-X theirs`, `checkout --ours`,
`merge -s ours`) would hide every commit of the other side, and with them the
entries that merge lost. The ledger's own history is read in the same pass:
an id any commit registered is the brain's even when a merge dropped its
ledger line too.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from pamd.core.entry import Entry, count_tokens
from pamd.core.fmt import HEADER_RE, FormatError, parse_doc
from pamd.core.paths import MEMORY, TIER_DIRS
from pamd.edge.brain import Brain

LEDGER_DIR = "memory/ledger"
ID_RE = re.compile(r"\b[es]-[0-9a-f]{12}\b")
# A line of a commit message that names ids dropped on purpose: compaction writes
# "Dropped as trash (...): e-…, e-…", a person may write "Dropped: e-…". Leading
# blanks are allowed: `git merge --squash` indents each squashed message by four.
DROPPED_RE = re.compile(r"^\s*Dropped\b")


@dataclass
class Lineage:
    added: set[str] = field(default_factory=set)  # every entry id a commit ever added
    sources: dict[str, tuple[str, ...]] = field(default_factory=dict)  # summary id -> its from=
    raw_tokens: dict[str, int] = field(default_factory=dict)  # raw entry id -> tokens of its text
    ledger: dict[str, str] = field(default_factory=dict)  # id any commit added to a ledger file -> that file


def scan(brain: Brain, revs: list[str] | None = None) -> Lineage:
    """Every entry a commit of HEAD's history added to the tiers or MEMORY.md (a branch not
    merged, such as a defrag pull request under review, is not the brain's past yet; the
    side of a merge still in progress is: the tree holds it). `revs`: the history of these
    revisions instead (`pamd sync`: both sides of the merge it makes)."""
    out = Lineage()
    if not brain.repo.head():
        return out
    text = brain.repo.log("-p", "--no-color", "--unified=0", "--format=", "--no-renames", "--full-history",
                          "--no-ext-diff", "--dst-prefix=b/",
                          *(brain.repo.history() if revs is None else revs),
                          "--", MEMORY, *TIER_DIRS.values(), LEDGER_DIR)
    lines = text.split("\n")
    i, n = 0, len(lines)
    in_ledger = ""
    while i < n:
        line = lines[i]
        i += 1
        if line.startswith("+++ "):
            rel = line[6:] if line.startswith("+++ b/") else ""
            in_ledger = rel if rel.startswith(LEDGER_DIR + "/") else ""
            continue
        if in_ledger:
            if line.startswith("+") and (token := line[1:].strip()) and ID_RE.fullmatch(token):
                out.ledger.setdefault(token, in_ledger)
            continue
        if not (line.startswith("+### ") and (m := HEADER_RE.match(line[1:]))):
            continue
        out.added.add(m.group(1))
        e, i = added_entry(lines, i - 1, partial=True)
        if e is None:
            continue
        if e.sources:
            out.sources.setdefault(e.id, e.sources)  # newest first: keep the newest
        elif e.text:
            out.raw_tokens.setdefault(e.id, count_tokens(e.text))
    return out


def added_entry(lines: list[str], i: int, partial: bool = False) -> tuple[Entry | None, int]:
    """The entry whose header is the added diff line `lines[i]`, and the index after it.

    The header's metadata line and text follow it in the same hunk when the entry
    was added whole; a later edit (recalls=, a redaction) shows no header. With
    `partial`, an entry whose text the diff shows as unchanged context (a summary
    added in place of a removed one with the same words: the hunk ends after the
    metadata line) comes back with an empty text: its id and `from=` are known."""
    block = [lines[i][1:]]
    i += 1
    while i < len(lines) and lines[i].startswith("+") and not lines[i].startswith("+### "):
        if len(block) > 1 and not lines[i].startswith("+>"):
            break
        block.append(lines[i][1:])
        i += 1
    bare = partial and len(block) == 2
    try:
        entries = parse_doc("\n".join(block) + ("\n> -\n" if bare else "\n")).entries
    except FormatError:
        return None, i
    if not entries:
        return None, i
    return (entries[0].with_(text="") if bare else entries[0]), i


def dropped_ids(brain: Brain, revs: list[str] | None = None) -> set[str]:
    """Ids named on a `Dropped…` line of a commit message of HEAD's history (or of `revs`,
    such as `BASE..SIDE`): dropped on purpose, said so."""
    if not brain.repo.head():
        return set()
    text = brain.repo.log("--grep=^[[:space:]]*Dropped", "--format=%B",
                          *(brain.repo.history() if revs is None else revs))
    return {eid for line in text.split("\n") if DROPPED_RE.match(line) for eid in ID_RE.findall(line)}
