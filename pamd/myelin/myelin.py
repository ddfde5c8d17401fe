"""Myelination: memories that are recalled decay slower, preload at boot, become reflexes.

Levels by recall count ([myelin] in pamd.toml): below `thin` normal; from
`thin` decay slowed (see hippocampus.decay_rate); from `thick` copied to
PRELOAD.md; from `reflex` a reflex in DNA.md. Demotion: a memory not recalled
for `demote_after_days` loses half its recalls at the nightly defrag (not
always one level down: 40 stays a reflex at 20), and its clock restarts: `seen=`
becomes the demotion day, so the next halving is a whole period away.
Pure functions over parsed docs; the compaction run writes what they return.
"""

from __future__ import annotations

import copy
import functools
import re
from collections import Counter
from collections.abc import Iterable, Mapping
from datetime import datetime, timedelta
from typing import Any

from pamd.consolidate.summarizers.lesson import (
    LESSON_TOKENS,
    extract_lesson,
    failure_text,
    fits,
    fix_text,
    is_edit,
    signature,
    states_failure,
)
from pamd.core.config import Settings, settings
from pamd.core.entry import Entry, add_via, count_tokens
from pamd.core.fmt import Doc, FormatError, dump_yaml, item_text, split_frontmatter
from pamd.errors import PamdError
from pamd.myelin.recall_log import Pending

NONE, THIN, THICK, REFLEX = "none", "thin", "thick", "reflex"


def level(recalls: int, cfg: Settings | Mapping[str, Any]) -> str:
    m = settings(cfg).myelin
    if recalls >= int(m.reflex):
        return REFLEX
    if recalls >= int(m.thick):
        return THICK
    if recalls >= int(m.thin):
        return THIN
    return NONE


def fold(docs: dict[str, Doc], p: Pending) -> tuple[dict[str, Doc], set[str], int]:
    """Add pending recall counts to the entries (or to the summary that replaced them)."""
    if not p.counts:
        return docs, set(), 0
    owner: dict[str, str] = {}
    for d in docs.values():
        for e in d.entries:
            owner[e.id] = e.id
            for s in e.sources:
                owner.setdefault(s, e.id)
    add: Counter = Counter()
    seen: dict[str, str] = {}
    for eid, n in p.counts.items():
        tgt = owner.get(eid)
        if tgt:
            add[tgt] += n
            seen[tgt] = max(seen.get(tgt, ""), p.last_seen.get(eid, ""))
    # A recall through a raw leaf behind a summary: the leaf is behind its owner too.
    via: dict[str, Counter] = {}
    for (sid, leaf), n in p.leaves.items():
        tgt = owner.get(sid)
        if tgt and tgt in add:
            via.setdefault(tgt, Counter())[leaf] += n
    out, touched = dict(docs), set()
    for rel, d in docs.items():
        if any(e.id in add for e in d.entries):
            out[rel] = Doc(d.meta, d.preamble, [
                e.with_(recalls=e.recalls + add[e.id], seen=max(e.seen, seen.get(e.id, "")),
                        via=add_via(e.via, via.get(e.id, {})))
                if e.id in add else e for e in d.entries], d.body_line)
            touched.add(rel)
    return out, touched, sum(add.values())


def unowned(docs: dict[str, Doc], p: Pending) -> Counter:
    """Pending recall counts of ids no entry of `docs` is or summarises: an entry the tree
    has only uncommitted, or one that is gone."""
    known = {e.id for d in docs.values() for e in d.entries}
    known |= {s for d in docs.values() for e in d.entries for s in e.sources}
    return Counter({eid: n for eid, n in p.counts.items() if eid not in known})


def demote(docs: dict[str, Doc], cfg: Settings | Mapping[str, Any],
           now: datetime) -> tuple[dict[str, Doc], set[str], int]:
    m = settings(cfg).myelin
    days = float(m.demote_after_days)
    cutoff = (now - timedelta(days=days)).strftime("%Y-%m-%d")
    today = now.strftime("%Y-%m-%d")
    out, touched, n = dict(docs), set(), 0
    for rel, d in docs.items():
        new = []
        for e in d.entries:
            if e.recalls >= int(m.thin) and e.seen and e.seen < cutoff:
                e = e.with_(recalls=e.recalls // 2, seen=today, via=_halved(e.via, e.recalls // 2))
                n += 1
            new.append(e)
        if n and new != d.entries:
            out[rel] = Doc(d.meta, d.preamble, new, d.body_line)
            touched.add(rel)
    return out, touched, n


def _halved(via: tuple[tuple[str, int], ...], recalls: int) -> tuple[tuple[str, int], ...]:
    """A demoted memory's `via=`: each leaf's recalls halved up, most recalled first, within the
    halved total. Halving down lost every leaf recalled once (7,1,1 of 12 became 3 of 6), so its
    own words seemed as recalled as its top leaf and PRELOAD and a reflex switched to them."""
    out = []
    for leaf, n in via:
        k = min(-(-n // 2), recalls)
        if k > 0:
            out.append((leaf, k))
            recalls -= k
    return tuple(out)


# ------------------------------------------------------------------ DNA.md
# Ids of the entries pamd has made a reflex from (a lesson's failures and fix, a recalled
# memory) and of every summary made from them since, while they are in the tree. pamd makes
# no second reflex from them, so one a person deletes from `reflexes` stays deleted.
LEARNED = "learned_from"


def parse_dna(text: str, path: str = "DNA.md") -> tuple[dict[str, Any], str]:
    """DNA.md's frontmatter (a copy the caller may change) and body.

    A run reads the same DNA.md several times (lessons, the merge, the commit message)
    and its frontmatter grows with every reflex and learned id; YAML is slow to read,
    so the last few texts are kept parsed."""
    meta, body = _parse_dna(text, path)
    return copy.deepcopy(meta), body


@functools.lru_cache(maxsize=4)
def _parse_dna(text: str, path: str) -> tuple[dict[str, Any], str]:
    try:
        meta, body, _ = split_frontmatter(text, path)
    except FormatError as exc:
        raise PamdError(f"{exc.problem}; pamd will not overwrite it",
                        "fix the frontmatter (pamd check DNA.md) and commit") from None
    for key in ("learned_behaviors", "communication_patterns", "reflexes", "preferences", LEARNED):
        if key in meta and not isinstance(meta[key], list):
            raise PamdError(f"{path}: {key} must be a list; pamd will not overwrite it",
                            "fix it and commit, then run again")
    return meta, "\n".join(body)


def _learned(meta: dict[str, Any]) -> set[str]:
    out = {str(x) for x in meta.get(LEARNED) or []}
    for i in meta.get("reflexes") or []:
        if isinstance(i, dict):
            out.update(_ids(i.get("from")))
    return out


def _follow(learned: set[str], tree: list[Entry]) -> None:
    """A summary of a memory pamd has a reflex of stands for that memory from now on."""
    grew = bool(learned)
    while grew:
        grew = False
        for e in tree:
            if e.id not in learned and learned.intersection(e.sources):
                learned.add(e.id)
                grew = True


def merge_dna(text: str, reflexes: list[dict[str, Any]], tree: list[Entry],
              tried: Iterable[list[str]] = ()) -> str:
    """Add pamd's reflexes to DNA.md without touching what a person wrote.

    A pamd item is a mapping with `from:` (its source ids). A lesson whose sources
    are already listed is not added again, even if a person has since reworded
    its text, nor one whose text is a reflex's already (spacing, case and the
    "(lesson of DATE)" aside: the same failure met again), whose sources are then
    learned from so no lesson is asked of them again; a recalled memory is not made
    a reflex again once it, or a memory it was summarised from, is in `learned_from` (a reflex follows its memory down
    the tiers through the summaries' `from=`). `learned_from` keeps the ids that
    are still in `tree` (the entries after this run), so it does not grow without end.
    `tried`: the sources of lessons the summarizer found none in; they are learned from
    (no lesson is asked of them again) without a reflex.
    """
    tried = list(tried)
    try:
        meta, body = parse_dna(text)
    except PamdError:
        if reflexes or tried:
            raise
        return text  # nothing to add: a broken DNA.md is for `pamd check` to name
    learned = _learned(meta)
    _follow(learned, tree)
    items = list(meta.get("reflexes") or [])
    have = {tuple(sorted(_ids(i.get("from")))) for i in items if isinstance(i, dict)}
    # a person's reflex read as written (a bare date, `Ann: text`); a list has no text (check names it)
    have_text = {_same_text(s) for s in map(item_text, items) if s}
    added = False
    for r in reflexes:
        key = tuple(sorted(r["from"]))
        if key in have:
            continue
        if _same_text(r["text"]) in have_text:  # the same lesson met again: learned, not added twice
            learned.update(r["from"])
            continue
        if r.get("kind") == "recalled" and learned.intersection(r["from"]):
            continue
        items.append(r)
        have.add(key)
        have_text.add(_same_text(r["text"]))
        learned.update(r["from"])
        added = True
    for ids in tried:
        learned.update(ids)
    _follow(learned, tree)
    present = {e.id for e in tree}
    keep = sorted(learned & present)
    relearned = keep != list(meta.get(LEARNED) or []) and (bool(keep) or LEARNED in meta)
    if not added and not relearned:
        return text
    if added:
        meta["reflexes"] = items
    if relearned:
        meta[LEARNED] = keep
    return "---\n" + dump_yaml(meta) + "---\n" + body


def _pamds(item: Any) -> bool:
    """A reflex pamd wrote (`kind: lesson` or `recalled`, its `from:` ids, a text): the only
    kind the DNA.md bound retires. Anything else in the lists is a person's."""
    return (isinstance(item, dict) and item.get("kind") in ("lesson", "recalled")
            and bool(_ids(item.get("from"))) and isinstance(item.get("text"), str))


def _recorded_recalls(item: dict[str, Any]) -> int:
    n = item.get("recalls")
    return n if isinstance(n, int) and not isinstance(n, bool) else 0


def dna_over(text: str, cfg: Settings | Mapping[str, Any]) -> bool:
    """Whether pamd's reflexes in DNA.md pass `[myelin] dna_budget` (0: no bound)."""
    budget = int(settings(cfg).myelin.dna_budget or 0)
    if budget <= 0 or not text:
        return False
    try:
        meta, _ = parse_dna(text)
    except PamdError:
        return False
    return sum(count_tokens(i["text"]) for i in meta.get("reflexes") or [] if _pamds(i)) > budget


def bound_dna(text: str, cfg: Settings | Mapping[str, Any], tree: list[Entry]) -> tuple[str, list[dict[str, Any]]]:
    """DNA.md with pamd's reflexes cut to `[myelin] dna_budget` tokens of text, and the ones retired.

    The least recalled go first (a lesson counts 0, a recalled reflex the recalls it was made
    at), the oldest (first in the list) among equals; a person's items are never retired nor
    counted. A retired reflex's sources stay in `learned_from` while they are in the tree, so it
    is not made again; its memories stay in the tiers, and its text in history."""
    if not dna_over(text, cfg):
        return text, []
    budget = int(settings(cfg).myelin.dna_budget)
    meta, body = parse_dna(text)
    items = list(meta.get("reflexes") or [])
    ours = [(i, item) for i, item in enumerate(items) if _pamds(item)]
    over = sum(count_tokens(item["text"]) for _, item in ours) - budget
    retire: set[int] = set()
    for i, item in sorted(ours, key=lambda p: (_recorded_recalls(p[1]), p[0])):
        if over <= 0:
            break
        retire.add(i)
        over -= count_tokens(item["text"])
    meta["reflexes"] = [item for i, item in enumerate(items) if i not in retire]
    gone = [items[i] for i in sorted(retire)]
    learned = {str(x) for x in meta.get(LEARNED) or []} | {s for item in gone for s in _ids(item.get("from"))}
    _follow(learned, tree)
    present = {e.id for e in tree}
    meta[LEARNED] = sorted(learned & present)
    return "---\n" + dump_yaml(meta) + "---\n" + body, gone


def retired_note(gone: list[dict[str, Any]], cfg: Settings | Mapping[str, Any]) -> str:
    """The commit message's line naming the reflexes `bound_dna` retired."""
    named = "".join(f"\n- {' '.join(g['text'].split())} (from {', '.join(_ids(g.get('from')))})" for g in gone)
    return (f"DNA.md's reflexes were over their {int(settings(cfg).myelin.dna_budget):,}-token budget "
            f"([myelin] dna_budget): retired {len(gone)} of pamd's (least recalled, oldest first; never "
            "a person's). Their memories stay in the tiers and in history (recall, `pamd expand ID`); "
            f"learned_from keeps them from being made reflexes again:{named}")


_LESSON_OF = re.compile(r"\s*\(lesson of \d{4}-\d{2}-\d{2}\)\s*$", re.IGNORECASE)


def _same_text(text: str) -> str:
    """A reflex's text as compared for a repeat: spacing and case aside, and without the
    "(lesson of DATE)" a lesson ends with (the same failure met on another day)."""
    return " ".join(_LESSON_OF.sub("", text).split()).casefold()


def new_recall_reflexes(old: str, new: str) -> list[str]:
    """Lines for the commit message naming the recall reflexes `new` DNA.md adds to `old`."""
    if old == new:
        return []
    try:
        before, after = parse_dna(old)[0] if old else {}, parse_dna(new)[0]
    except PamdError:
        return []
    had = {tuple(_ids(i.get("from"))) for i in before.get("reflexes") or [] if isinstance(i, dict)}
    out = []
    for i in after.get("reflexes") or []:
        if isinstance(i, dict) and i.get("kind") == "recalled" and tuple(_ids(i.get("from"))) not in had:
            recalls = f" ({i['recalls']} recalls)" if i.get("recalls") else ""
            out.append(f"New reflex in DNA.md from {', '.join(_ids(i.get('from')))}{recalls}.")
    return out


def shown_leaf(e: Entry) -> str | None:
    """The raw leaf whose words stand for `e` in PRELOAD and a recalled reflex: its most
    recalled `via=` leaf, when recall reached `e` through that leaf more often than through
    `e`'s own words (a summary's words may no longer hold what was asked)."""
    if not e.via:
        return None
    leaf, n = e.via[0]
    own = e.recalls - sum(c for _, c in e.via)
    return leaf if n > own else None


def shown(e: Entry, leaf_texts: dict[str, str]) -> str:
    """The words PRELOAD and a recalled reflex show for `e` (its own text if its leaf's are
    not known: history broken, `pamd fsck` says where)."""
    leaf = shown_leaf(e)
    return leaf_texts.get(leaf, e.text) if leaf else e.text


def recall_reflexes(entries: list[Entry], cfg: Settings | Mapping[str, Any],
                    leaf_texts: dict[str, str] | None = None) -> list[dict[str, Any]]:
    cfg = settings(cfg)
    out = []
    for e in sorted(entries, key=lambda e: (-e.recalls, e.id)):
        if level(e.recalls, cfg) == REFLEX:
            out.append({"text": _sentence(shown(e, leaf_texts or {}), 200), "kind": "recalled",
                        "from": [e.id], "recalls": e.recalls})
    return out


# How far after a failure its resolution may come (entries of the same session).
FIX_WINDOW = 40


def lessons(entries: list[Entry], cfg: Settings | Mapping[str, Any], already: set[str],
            known: Iterable[str] = ()) -> list[dict[str, Any]]:
    """Failures that were resolved become reflexes: the error as it appeared and the fix.

    A failure is an error line in tool output (or an error the user pasted), or a sentence
    where the user or the agent says something failed; its fix is the first later entry of
    the same session that says how it was resolved. A failure without a fix yet makes no
    lesson (a later run may find the fix); one whose error is a lesson's already (`known`
    texts, or another failure of this run: numbers, paths and quoted values aside) is the
    same failure met again: it comes back with `repeat: True`, to be learned from, not
    written."""
    m = settings(cfg).myelin
    min_imp = float(m.lesson_min_importance)
    limit = int(m.max_lessons_per_run)
    seen_errors = {signature(t.split("`: ")[0].strip("`")) for t in known if t}
    by_session: dict[str, list[Entry]] = {}
    for e in sorted(entries, key=lambda e: e.ts):
        if not e.sources:
            by_session.setdefault(e.session, []).append(e)
    found = []
    for raw in by_session.values():
        used: set[str] = set()
        for i, e in enumerate(raw):
            if e.id in already or e.id in used:
                continue
            tool = e.role == "tool" or e.type == "tool_result"
            if not tool and not ("cortisol" in e.neuro and e.importance >= min_imp and states_failure(e)):
                continue
            error = failure_text(e)
            if not error:
                continue
            sig = signature(error)
            fails, fix, first_said, edited = [e], None, None, False
            span: list[Entry] = []
            for later in raw[i + 1:i + 1 + FIX_WINDOW]:
                if later.id in already:
                    continue
                if failure_text(later) and signature(failure_text(later)) == sig:
                    fails.append(later)  # the same error again before its fix
                    span, edited = [], False
                    continue
                if later.role == "tool":
                    if edited and not failure_text(later):  # ran clean after an edit: the edit fixed it
                        fix, span = later, [*span[-2:], later]
                        break
                    continue
                first_said = first_said or later
                text = fix_text([later])
                if text and fits(e, error, first_said, text):
                    fix, span = later, [later]
                    break
                span.append(later)
                edited = edited or is_edit(later)
            if fix is None:
                continue
            if fix.id in used:  # one fix, one lesson: the failures before it are one episode
                used.add(e.id)
                continue
            used.update(f.id for f in fails)
            used.add(fix.id)
            group = [*fails[:3], *span]
            if not extract_lesson(group, LESSON_TOKENS * 4):
                continue  # no error and fix a reader could act on
            found.append({"text": "", "kind": "lesson", "from": [x.id for x in group], "repeat": sig in seen_errors,
                          "day": e.ts.strftime("%Y-%m-%d"), "entries": group, "_ts": e.ts})
            seen_errors.add(sig)
    found.sort(key=lambda x: x["_ts"])  # type: ignore[arg-type,return-value]  # a datetime, set just above
    for x in found:
        del x["_ts"]
    new = [x for x in found if not x["repeat"]][:limit]
    return new + [x for x in found if x["repeat"]]


def _sentence(text: str, limit: int) -> str:
    flat = " ".join(text.split())
    m = re.search(r"(?<=[.!?])\s", flat)
    s = flat[: m.start()] if m and m.start() > 20 else flat
    return s if len(s) <= limit else s[: limit - 1].rsplit(" ", 1)[0] + "…"


def lesson_texts(text: str) -> list[str]:
    """The texts of the lessons in DNA.md (pamd's and a person's alike)."""
    try:
        meta, _ = parse_dna(text)
    except PamdError:
        return []
    return [t for t in map(item_text, meta.get("reflexes") or []) if t]


def dna_sources(text: str) -> set[str]:
    """Ids pamd has made a reflex from: no lesson is learned from them again."""
    try:
        meta, _ = parse_dna(text)
    except PamdError:
        return set()
    return _learned(meta)


def _ids(value) -> list[str]:
    """A reflex's `from:` as a person may have left it (empty, one id, a number): its ids."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, list):
        return [str(v) for v in value if isinstance(v, str | int)]
    return []
