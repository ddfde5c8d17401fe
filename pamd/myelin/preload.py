"""PRELOAD.md: a person's text, and pamd's fenced block of myelinated memories.

pamd owns only the lines between its two markers:

    ## Myelinated memories

    <!-- pamd:begin · pamd rewrites the lines up to pamd:end at every compaction; write yours outside -->
    - We decided to use Postgres 16. <!-- e-… · recalls 6 · memory/L0/2026-11-30.md -->
    <!-- pamd:end -->

A summary recalled mostly through a raw message behind it (its `via=`, from deep
recall) shows that message's words and ends its comment with `· via e-…`.

Everything outside them (the heading included) is the person's and is kept as
it is. A file from before the markers (pamd's lines right under the heading,
up to the first other line) is read as if they were there, so its person's
text below pamd's lines is kept too. Pure functions; the compaction run writes
what `render` returns and `pamd check` reports what `problems` finds.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from pamd.core.config import Settings, settings
from pamd.core.entry import Entry
from pamd.errors import PamdError
from pamd.myelin.myelin import REFLEX, THICK, level, shown_leaf

HEAD = "## Myelinated memories"
BEGIN = ("<!-- pamd:begin · pamd rewrites the lines up to pamd:end at every compaction; "
         "write yours outside -->")
END = "<!-- pamd:end -->"
EMPTY = "(none yet: memories recalled 5+ times appear here)"
_BEGIN, _END = "<!-- pamd:begin", "<!-- pamd:end"
# A line pamd writes into its block (also how the section looked before the markers).
_OURS = re.compile(r"^- .* <!-- [es]-[0-9a-f]{12} · recalls \d+ · \S+( · via e-[0-9a-f]{12})? -->$")
LEAF_CHARS = 500  # a raw leaf shown for a summary is cut here (a tool result can be long)


def _markers(lines: list[str]) -> tuple[list[int], list[int]]:
    begins = [i for i, ln in enumerate(lines) if ln.strip().startswith(_BEGIN)]
    ends = [i for i, ln in enumerate(lines) if ln.strip().startswith(_END)]
    return begins, ends


def _broken(begins: list[int], ends: list[int]) -> str | None:
    if not begins and not ends:
        return None
    if len(begins) != 1 or len(ends) != 1 or ends[0] < begins[0]:
        return (f"pamd's block needs one `{_BEGIN} … -->` line and, after it, one `{END}` line "
                f"(found {len(begins)} and {len(ends)})")
    return None


def _ours(line: str) -> bool:
    s = line.strip()
    return not s or s == EMPTY or bool(_OURS.match(s))


def split(text: str, path: str = "PRELOAD.md") -> tuple[str, str]:
    """The person's text before and after pamd's block (the heading is in `before`)."""
    lines = text.split("\n")
    begins, ends = _markers(lines)
    problem = _broken(begins, ends)
    if problem:
        raise PamdError(f"{path}: {problem}; pamd will not overwrite it",
                        "fix the markers (pamd check PRELOAD.md) and commit, then run again")
    if begins:
        return "\n".join(lines[:begins[0]]), "\n".join(lines[ends[0] + 1:])
    head = next((i for i, ln in enumerate(lines) if ln.strip() == HEAD), None)
    if head is None:
        return (text.rstrip("\n") + "\n\n" + HEAD if text.strip() else HEAD), ""
    stop = head + 1
    while stop < len(lines) and _ours(lines[stop]):
        stop += 1
    return "\n".join(lines[:head + 1]), "\n".join(lines[stop:])


_SHOWN = re.compile(r"^- (.*) <!-- [es]-[0-9a-f]{12} · recalls \d+ · \S+ · via (e-[0-9a-f]{12}) -->$")


def shown_leaves(text: str) -> dict[str, str]:
    """{leaf id: the words pamd's block shows for it} of the lines that name a `via` leaf."""
    return {m[2]: m[1] for ln in text.split("\n") if (m := _SHOWN.match(ln))}


def render(current: str, entries: list[Entry], cfg: Settings | Mapping[str, Any],
           leaf_texts: dict[str, str] | None = None) -> str:
    """PRELOAD.md with pamd's block rebuilt from the thick+ memories, the rest kept.

    A memory recalled mostly through a raw leaf behind it (`via=`) shows that leaf's words,
    from `leaf_texts` (read from history by the caller), and names the leaf."""
    before, after = split(current)
    cfg = settings(cfg)
    thick = sorted((e for e in entries if level(e.recalls, cfg) in (THICK, REFLEX)),
                   key=lambda e: (-e.recalls, e.id))
    leaves = leaf_texts or {}
    block = [BEGIN]
    if not thick:
        block.append(EMPTY)
    for e in thick:
        leaf = shown_leaf(e)
        if leaf and leaf in leaves:
            text = " ".join(leaves[leaf].split())
            if len(text) > LEAF_CHARS:
                text = text[:LEAF_CHARS - 1].rstrip() + "…"
            block.append(f"- {text} <!-- {e.id} · recalls {e.recalls} · {e.path or e.tier} · via {leaf} -->")
            continue
        text = " ".join(e.text.split())
        block.append(f"- {text} <!-- {e.id} · recalls {e.recalls} · {e.path or e.tier} -->")
    block.append(END)
    out = before.rstrip("\n") + "\n\n" + "\n".join(block) + "\n"
    if after.strip():
        out += "\n" + after.strip("\n") + "\n"
    return out


_HELD = re.compile(r"<!-- ([es]-[0-9a-f]{12}) · recalls (\d+) · ")


def held(text: str) -> dict[str, int]:
    """{id: recalls} of the memories in pamd's block (empty for a broken file)."""
    lines = text.split("\n")
    begins, ends = _markers(lines)
    if _broken(begins, ends):
        return {}
    if begins:
        block = lines[begins[0] + 1:ends[0]]
    else:  # before the markers: pamd's lines right under the heading
        head = next((i for i, ln in enumerate(lines) if ln.strip() == HEAD), None)
        block = []
        for ln in lines[head + 1:] if head is not None else []:
            if not _ours(ln):
                break
            block.append(ln)
    return {m[1]: int(m[2]) for ln in block if (m := _HELD.search(ln))}


def changes(old: str, new: str, tree: list[Entry]) -> list[str]:
    """Lines for the commit message on what entered and left pamd's block."""
    was, now = held(old), held(new)
    by_id = {e.id: e for e in tree}
    came = [i for i in now if i not in was]
    stands = {src: i for i in came if i in by_id for src in by_id[i].sources if src in was}
    out = []
    fresh = [f"{i} ({now[i]} recalls)" for i in came if i not in stands.values()]
    if fresh:
        out.append(f"Myelinated, copied to PRELOAD.md: {_few(fresh)}.")
    if stands:
        out.append("In PRELOAD.md, summaries stand for their memories: "
                   + _few([f"{s} for {src}" for src, s in sorted(stands.items())]) + ".")
    gone = [i for i in was if i not in now and i not in stands]
    demoted = [f"{i} ({by_id[i].recalls} recalls)" for i in gone if i in by_id]
    if demoted:
        out.append(f"Left PRELOAD.md (demoted): {_few(demoted)}.")
    left = [i for i in gone if i not in by_id]
    if left:
        out.append(f"Left PRELOAD.md (its entry left the tree): {_few(left)}.")
    return out


def _few(items: list[str], n: int = 6) -> str:
    return ", ".join(items[:n]) + (f" and {len(items) - n} more" if len(items) > n else "")


def problems(text: str) -> list[tuple[int, str]]:
    """(line, message) for broken markers, and for a person's text inside pamd's block,
    which the next compaction would replace."""
    lines = text.split("\n")
    begins, ends = _markers(lines)
    problem = _broken(begins, ends)
    if problem:
        return [((begins or ends)[0] + 1, problem)]
    if not begins:
        return []
    return [(i + 1, f"text inside pamd's block is replaced by the next compaction; "
                    f"move it below `{END}`")
            for i in range(begins[0] + 1, ends[0]) if not _ours(lines[i])]


def without_markers(text: str) -> str:
    """The text with pamd's two marker lines taken out: what an agent reads at boot."""
    return "\n".join(ln for ln in text.split("\n")
                     if not ln.strip().startswith((_BEGIN, _END)))
