"""Merge DNA.md, STATE.md and PRELOAD.md of two clones where git's line merge stopped.

Each is YAML frontmatter and a body. A key one side changed takes that side's
value. A key both changed: STATE.md's snapshot (what pamd remakes from the
entries at every compaction) comes whole from the side that made it last
(`updated`), but for its `settings`, which keeps every subject of both sides, the
newer value where both set one (pamd.myelin.settings_index.merge); a list (DNA's
reflexes and lessons, which pamd only adds to, a person's pinned goals) keeps every
item of both sides but those one side removed; anything else is the person's to
resolve. The body merges as text, except PRELOAD's block between `pamd:begin` and `pamd:end`, which is pamd's and
keeps the lines of both sides (the next compaction rewrites it).
"""

from __future__ import annotations

from pamd.core.fmt import FormatError, dump_yaml, split_frontmatter
from pamd.myelin import settings_index
from pamd.myelin.snapshot import SNAPSHOT_KEYS as SNAPSHOT
from pamd.ops.union import Text3

_BEGIN, _END = "<!-- pamd:begin", "<!-- pamd:end"
_HOLE = "<!-- pamd:sync-block-placeholder -->"


def merge_doc(path: str, base: str, ours: str, theirs: str, text3: Text3) -> str | None:
    """The merged text, or None where a person's text conflicts."""
    try:
        (bm, bb), (om, ob), (tm, tb) = (_split(t, path) for t in (base, ours, theirs))
    except FormatError:
        return None
    meta = dict(om)
    newer = str(tm.get("updated") or "") > str(om.get("updated") or "")
    for key in [*om, *(k for k in tm if k not in om)]:
        b, o, t = bm.get(key), om.get(key), tm.get(key)
        if o == t or t == b:
            continue
        if o == b:
            value = t
        elif key == "settings" and path.endswith("STATE.md"):
            value = settings_index.merge(b, o, t)
        elif key in SNAPSHOT and path.endswith("STATE.md"):
            value = t if newer else o
        elif isinstance(o, list) and isinstance(t, list):
            value = _union(b if isinstance(b, list) else [], o, t)
        else:
            return None
        if value is None and key not in tm:
            meta.pop(key, None)
        else:
            meta[key] = value
    for key in [k for k in meta if k not in tm and k in bm and meta[k] == bm[k]]:
        del meta[key]  # theirs removed it, ours left it as it was
    body = _merge_body(bb, ob, tb, text3)
    if body is None:
        return None
    return ("---\n" + dump_yaml(meta) + "---\n" if meta else "") + body


def _split(text: str, path: str) -> tuple[dict, str]:
    meta, lines, _ = split_frontmatter(text, path)
    return meta, "\n".join(lines)


def _union(base: list, ours: list, theirs: list) -> list:
    gone = [x for x in base if x not in ours or x not in theirs]
    out = [x for x in ours if x not in gone]
    out += [x for x in theirs if x not in out and x not in gone]
    return out


def _merge_body(b: str, o: str, t: str, text3: Text3) -> str | None:
    blocks = [_cut(x) for x in (b, o, t)]
    if all(blk is not None for blk in blocks):
        (b2, bl), (o2, ol), (t2, tl) = blocks  # type: ignore[misc]
        rest = text3(b2, o2, t2)
        if rest is None or rest.count(_HOLE) != 1:
            return None
        lines = [*ol[:-1], *(ln for ln in tl[1:-1] if ln not in ol), ol[-1]]
        return rest.replace(_HOLE, "\n".join(lines))
    return text3(b, o, t)


def _cut(text: str) -> tuple[str, list[str]] | None:
    """(the text with pamd's block as one placeholder line, the block's lines begin to end)."""
    lines = text.split("\n")
    begins = [i for i, ln in enumerate(lines) if ln.strip().startswith(_BEGIN)]
    ends = [i for i, ln in enumerate(lines) if ln.strip().startswith(_END)]
    if len(begins) != 1 or len(ends) != 1 or ends[0] < begins[0]:
        return None
    i, j = begins[0], ends[0]
    inner = lines[i + 1:j]
    return "\n".join([*lines[:i], _HOLE, *lines[j + 1:]]), [lines[i], *inner, lines[j]]
