"""`pamd fsck`: verify a brain's invariants, each problem as path:line.

Checks, in order (each a function returning problems):
  conflicts   unresolved merges and leftover conflict markers
  format      everything `pamd check` checks, ids unique across the tiers
  provenance  every `from=` id of a summary is in the tree or in history
  recalls     recall counts are non-negative whole numbers
  ledger      every L0 id is in memory/ledger/*.txt; ledger lines are ids; and every
              ledger id is accounted for: in the tree, behind a summary of the tree
              (through `from=`, also of summaries that left it), or on a commit's
              `Dropped` line; else it was lost without a word (ids a commit once registered
              count too: a merge that took one side's ledger whole dropped their lines)
  twice       no message stands twice: an id behind two summaries of the tree (directly
              or through summaries that left it), or in the tree and behind a summary;
              what merging a nightly defrag branch made stale by compactions on main leaves
  synapse     pulled files carry their attribution (source, commit)
  index       the index manifest in .pamd/index matches the tree (skipped without one)

Provenance and the ledger share one pass over HEAD's history (`git log -p` of
the tiers, pamd.edge.lineage: every entry header ever added, every summary's
`from=`); provenance then confirms with `provenance.locate` each id the pass
did not see, and the ledger reads the `Dropped` lines of commit messages with
one more `git log`. A healthy brain costs two git processes, whatever its size.
Only HEAD's history counts: a summary or a `Dropped` line on a branch not merged
(a nightly defrag's pull request still under review) accounts for nothing here,
so it cannot hide a deletion made by hand on the checked-out branch.
"""

from __future__ import annotations

import hashlib
import os
import re
import sqlite3
from collections.abc import Callable, Set

from pamd.core.entry import Entry
from pamd.core.fmt import CONFLICT_MESSAGE, HEADER_RE, Problem, conflict_marker, parse_doc, split_frontmatter
from pamd.core.paths import SYNAPSE_DIR, tier_of
from pamd.core.words import plural
from pamd.edge import lineage
from pamd.edge.brain import Brain
from pamd.errors import PamdError

LEDGER_DIR = "memory/ledger"
ID_RE = re.compile(r"^[es]-[0-9a-f]{12}$")
MARKER_RE = re.compile(r"^(<{7}|={7}|>{7})( |$)")
History = Callable[[], lineage.Lineage]


def conflicts(brain: Brain) -> list[Problem]:
    hint = brain.repo.finish_hint()
    problems = [
        Problem(p, 1, f"unresolved merge conflict (resolve it, {hint})")
        for p in brain.repo.conflicted()
    ]
    seen = {p.path for p in problems}
    for rel in _brain_texts(brain):
        if rel in seen:
            continue
        if found := conflict_marker(rel, brain.read(rel) or ""):
            problems.append(found)
    return problems


def format_(brain: Brain) -> list[Problem]:
    from pamd.ops.check import check_brain

    return check_brain(brain)


def _entries(brain: Brain):
    """Entries of every entry file that parses (format problems are reported by format_)."""
    for rel in brain.entry_files():
        try:
            yield from parse_doc(brain.read(rel) or "", rel, tier_of(rel) or "L0").entries
        except Exception:  # noqa: BLE001 - a broken file is format_'s finding
            continue


def _unparsed_ids(brain: Brain) -> set[str]:
    """Ids whose headers stand in entry files that do not parse (a merge left conflict
    markers): they are in the tree, only unreadable; conflicts and format report the files."""
    out: set[str] = set()
    for rel in brain.entry_files():
        text = brain.read(rel) or ""
        try:
            parse_doc(text, rel, tier_of(rel) or "L0")
        except Exception:  # noqa: BLE001 - a broken file is format_'s finding
            out.update(m.group(1) for line in text.split("\n") if (m := HEADER_RE.match(line)))
    return out


def _history(brain: Brain) -> History:
    """The lineage pass, run at most once however many checks ask for it."""
    memo: list[lineage.Lineage] = []

    def get() -> lineage.Lineage:
        if not memo:
            memo.append(lineage.scan(brain))
        return memo[0]

    return get


def provenance(brain: Brain, deep: bool = False, history: History | None = None) -> list[Problem]:
    from pamd.consolidate.provenance import locate

    summaries = [e for e in _entries(brain) if e.sources]
    wanted = {s for e in summaries for s in e.sources}
    if not wanted:
        return []
    here = {e.id for e in _entries(brain)} | _unparsed_ids(brain)
    known = here if deep else (here | (history or _history(brain))().added)
    missing = wanted - known
    if missing:
        found = locate(brain, missing, tree=False)
        missing -= set(found)
    if missing and brain.repo.is_shallow():
        # The ids are most likely right and the history missing: say that once.
        first = next(e for e in summaries if any(s in missing for s in e.sources))
        return [
            Problem(
                first.path,
                first.line_start + 1,
                f"from= names {plural(len(missing), 'id')} not in the tree nor in this clone's"
                f" history, which is shallow (cloned with --depth): run `git fetch --unshallow`"
                f" and check again",
            )
        ]
    return [
        Problem(
            e.path,
            e.line_start + 1,
            f"from= names {s}, which is neither in the tree nor in history",
        )
        for e in summaries
        for s in e.sources
        if s in missing
    ]


def recalls(brain: Brain) -> list[Problem]:
    # The parser already refuses negatives and non-numbers; this re-reads the
    # raw field so a count like "recalls=+3" or "recalls=03" is caught too.
    problems = []
    for rel in brain.entry_files():
        for i, line in enumerate((brain.read(rel) or "").split("\n"), 1):
            m = re.search(r"(?:^| )recalls=(\S*)", line)
            if m and line.startswith("type=") and not re.fullmatch(r"0|[1-9][0-9]*", m.group(1)):
                problems.append(
                    Problem(rel, i, f"recalls={m.group(1)} is not a non-negative whole number")
                )
    return problems


def ledger(brain: Brain, history: History | None = None) -> list[Problem]:
    problems = []
    ids: set[str] = set()
    where: dict[str, tuple[str, int]] = {}
    base = brain.path(LEDGER_DIR)
    if base.is_dir():
        for p in sorted(base.glob("*.txt")):
            rel = p.relative_to(brain.root).as_posix()
            text = brain.read(rel) or ""
            marked = conflict_marker(rel, text) is not None  # `conflicts` names the file
            for i, line in enumerate(text.split("\n"), 1):
                token = line.strip()
                if not token or (marked and MARKER_RE.match(line)):
                    continue
                if not ID_RE.match(token):
                    problems.append(Problem(rel, i, f"{token[:40]!r} is not an entry id"))
                ids.add(token)
                where.setdefault(token, (rel, i))
    here = {e.id: e for e in _entries(brain)}
    for e in here.values():
        if e.tier == "L0" and e.id.startswith("e-") and e.id not in ids:
            problems.append(
                Problem(
                    e.path,
                    e.line_start,
                    # fsck cannot tell a person's entry from an ingested one whose ledger
                    # line was lost; registered, it is guarded against silent loss as well
                    f"{e.id} is not in {LEDGER_DIR}/ (re-ingest would duplicate it; an entry "
                    f"added by hand: add its id as a line of {LEDGER_DIR}/{e.ts:%Y-%m}.txt)",
                )
            )
    # An id a commit of history registered counts although its line is gone: a merge
    # that took one side's ledger whole (`git merge -s ours`) drops the other side's lines.
    for eid, rel in (history or _history(brain))().ledger.items():
        where.setdefault(eid, (rel, 1))
    unparsed = _unparsed_ids(brain) if where.keys() - here.keys() else set()
    if where.keys() - here.keys() - unparsed:
        problems += _unaccounted(brain, where, here, (history or _history(brain))(), unparsed)
    return problems


def _unaccounted(
    brain: Brain, where: dict[str, tuple[str, int]], here: dict, lin: lineage.Lineage,
    unparsed: Set[str] = frozenset(),
) -> list[Problem]:
    """Ledger ids that left the tree with no summary standing for them and no commit saying so.

    Accounted for is what the tree holds, what a commit's `Dropped` line names, and,
    transitively, everything a `from=` of an accounted summary names (the summary's
    version in the tree, else the one history added). An id no commit ever added as
    an entry (a re-ingest took the message under the id it had in an older pamd, or
    a shallow clone's history starts later) is not the tree's to lose.
    """
    reached = set(here) | unparsed | lineage.dropped_ids(brain)
    stack = list(reached)
    while stack:
        eid = stack.pop()
        e = here.get(eid)
        for src in e.sources if e is not None else lin.sources.get(eid, ()):
            if src not in reached:
                reached.add(src)
                stack.append(src)
    lost = sorted(eid for eid in where if eid not in reached and eid in lin.added)
    if not lost:
        return []
    named_by: dict[str, list[str]] = {}
    for sid, srcs in lin.sources.items():
        for src in srcs:
            named_by.setdefault(src, []).append(sid)
    problems = []
    for eid in lost:
        via = sorted(named_by.get(eid, []))
        why = ""
        if via and via[0] in here:
            why = f" ({via[0]} named it in from= once, no longer)"
        elif via:
            why = f" (its summary {via[0]} left the tree the same way)"
        rel, line = where[eid]
        problems.append(
            Problem(
                rel,
                line,
                f"{eid} is lost: not in the tree, behind no summary's from= and on no commit's"
                f" Dropped line{why}; `pamd expand {eid}` shows it from history,"
                f" `pamd sync --repair` puts it back",
            )
        )
    return problems


def twice(brain: Brain, history: History | None = None) -> list[Problem]:
    """Ids that two entries of the tree stand for: behind two summaries, or in the tree and behind one.

    Each entry of the tree is walked down through `from=` (the tree's version of a summary,
    else the one history added), so a message behind a summary that a later defrag took
    into another counts as behind that one. On a sound brain these walks never meet, so
    this is one visit per id of the lineage. Only the highest id where two walks meet is
    reported, not every id below it.
    """
    here: dict[str, Entry] = {}
    for e in _entries(brain):
        here.setdefault(e.id, e)  # an id twice in the tree is format_'s finding
    if not any(e.sources for e in here.values()):
        return []
    lin: lineage.Lineage | None = None
    stands: dict[str, list[Entry]] = {}  # id -> the tree entries that stand for it (itself included)
    parents: dict[str, set[str]] = {}
    for top in here.values():
        stands.setdefault(top.id, []).append(top)
        if not top.sources:
            continue
        seen = {top.id}
        stack = [top.id]
        while stack:
            eid = stack.pop()
            e = here.get(eid)
            if e is not None:
                srcs = e.sources
            else:
                lin = lin or (history or _history(brain))()
                srcs = lin.sources.get(eid, ())
            for src in srcs:
                parents.setdefault(src, set()).add(eid)
                if src not in seen:
                    seen.add(src)
                    stands.setdefault(src, []).append(top)
                    stack.append(src)
    same: dict[frozenset[str], list[str]] = {}  # the places that stand twice -> the ids they share
    for eid, tops in stands.items():
        if len(tops) < 2:
            continue
        ids = {t.id for t in tops}
        if any(len(stands.get(p, ())) >= 2 and {t.id for t in stands[p]} >= ids for p in parents.get(eid, ())):
            continue  # the id above it stands twice the same way: that one is reported
        same.setdefault(frozenset(ids), []).append(eid)
    problems = []
    for shared in same.values():  # two summaries sharing many messages: one problem, not one per message
        first, *more = sorted(shared)
        p = _twice_problem(first, stands[first], stands)
        if more:
            p = Problem(p.path, p.line, p.message.replace(
                f"{first} ", f"{first} (and {plural(len(more), 'more id')}: {_and(more[:3])}"
                             f"{' …' if len(more) > 3 else ''}) ", 1))
        problems.append(p)
    return sorted(problems, key=lambda p: (p.path, p.line))


def _twice_problem(eid: str, tops: list[Entry], stands: dict[str, list[Entry]]) -> Problem:
    where = sorted(tops, key=lambda e: (e.path, e.line_start))
    at = {e.id: f"{e.path}:{e.line_start}" for e in where}
    behind = [e for e in where if e.id != eid]
    if len(behind) < len(where):
        said = f"is in the tree at {at[eid]} and behind the summary at {_and([at[e.id] for e in behind])}"
        why = "a merge that kept an entry the other side had compacted, or a merged stale defrag branch?"
    else:
        said = f"is behind {NUMBERS.get(len(where), len(where))} summaries: {_and(list(at.values()))}"
        why = "a merged stale defrag branch, or two clones that each compacted it?"

    def restates(e: Entry) -> bool:
        """Everything `e` stands for is behind another entry of `tops` too: deleting it loses nothing."""
        others = {t.id for t in tops if t.id != e.id}
        return e.id == eid or all(others & {t.id for t in stands.get(s, ())} for s in e.sources)

    spare = sorted((e for e in where if restates(e)), key=lambda e: (e.id != eid, tier_rank(e.tier)))
    if spare and spare[0].id == eid:
        hint = f"delete it at {at[eid]} and commit (the summary holds it)"
    elif spare:
        hint = (f"the summary at {at[spare[0].id]} stands for nothing the "
                f"{'other does' if len(where) == 2 else 'others do'} not: delete it and commit")
    else:
        hint = (f"remove {eid} from the from= of one of them (with the words it gave), "
                "or keep both: nothing is lost")
    return Problem(where[0].path, where[0].line_start,
                   f"{eid} {said}, so it counts twice ({why} docs/hooks.md); {hint}")


NUMBERS = {2: "two", 3: "three"}


def tier_rank(tier: str) -> int:
    return {"L0": 0, "L1": 1, "L2": 2, "L3": 3}.get(tier, 4)


def _and(items: list[str]) -> str:
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


def synapse(brain: Brain) -> list[Problem]:
    base = brain.path(SYNAPSE_DIR)
    problems: list[Problem] = []
    if not base.is_dir():
        return problems
    for p in sorted(base.rglob("*.md")):
        rel = p.relative_to(brain.root).as_posix()
        if rel.count("/") < 2:
            continue  # synapse/README.md and the like
        try:
            meta, _, _ = split_frontmatter(brain.read(rel) or "", rel)
        except Exception as exc:  # noqa: BLE001
            problems.append(Problem(rel, 1, f"unreadable frontmatter: {exc}"))
            continue
        for key in ("source", "commit"):
            if not meta.get(key):
                problems.append(
                    Problem(
                        rel, 1, f"pulled file lacks `{key}:` attribution (run `pamd synapse pull`)"
                    )
                )
    return problems


def index(brain: Brain) -> list[Problem]:
    """Compare the index manifest (files and their hashes) with the tree; skip without an index."""
    db_path = brain.state_dir / "index" / "index.sqlite"
    if os.path.lexists(db_path.parent) and not db_path.parent.is_dir():
        return [Problem(".pamd/index", 1, "not a folder: a damaged index; the next `pamd recall` "
                        "or `pamd index` removes it and builds the index again")]
    on_disk = _searchable(brain)
    if not db_path.is_file() or on_disk is None:
        return []
    where = ".pamd/index/index.sqlite"
    try:
        rows, meta = _manifest(db_path, "mode=ro")
    except sqlite3.Error as exc:
        if brain.writable():
            return [Problem(where, 1, f"index manifest unreadable ({exc}); run `pamd index --rebuild`")]
        # A brain this process may only read: sqlite cannot make the -shm file its WAL mode
        # needs beside the index. Read the file as it is (a WAL left with pages in it would
        # be ignored then: no verdict rather than a wrong one).
        wal = db_path.with_name(db_path.name + "-wal")
        if wal.is_file() and wal.stat().st_size:
            return []
        try:
            rows, meta = _manifest(db_path, "mode=ro&immutable=1")
        except sqlite3.Error as exc2:
            return [Problem(where, 1, f"index manifest unreadable ({exc2}); a writer of the brain can "
                                      "run `pamd index --rebuild`")]
    problems = []
    tree = hashlib.sha256(
        "\n".join(f"{p}\0{h}" for p, h in sorted(rows.items())).encode()
    ).hexdigest()
    if meta.get("tree") and meta["tree"] != tree:
        problems.append(
            Problem(
                where,
                1,
                "index manifest does not match its own file list; run `pamd index --rebuild`",
            )
        )
    stale = []
    for rel in sorted(set(rows) | set(on_disk)):
        data = on_disk.get(rel)
        if data is None:
            stale.append(f"{rel} (gone)")
        elif rows.get(rel) != hashlib.sha256(data).hexdigest():
            stale.append(rel if rel in rows else f"{rel} (not indexed)")
    if stale:
        more = f" and {len(stale) - 3} more" if len(stale) > 3 else ""
        problems.append(
            Problem(where, 1, f"index is stale for {', '.join(stale[:3])}{more}; run `pamd index`")
        )
    return problems


def _manifest(db_path, flags: str) -> tuple[dict[str, str], dict[str, str]]:
    db = sqlite3.connect(f"file:{db_path}?{flags}", uri=True)
    try:
        return dict(db.execute("SELECT path, sha FROM files")), dict(db.execute("SELECT k, v FROM meta"))
    finally:
        db.close()


def _searchable(brain: Brain) -> dict[str, bytes] | None:
    """Bytes of every file the index should hold (None: this pamd has no recall)."""
    try:
        from pamd.recall.sources import source_files
    except ImportError:
        return None
    out = {}
    for rel, _tier in source_files(brain.root):
        try:
            out[rel] = (brain.root / rel).read_bytes()
        except OSError:
            continue
    return out


def _brain_texts(brain: Brain) -> list[str]:
    out = brain.repo.run("ls-files", "-z", "--cached", "--others", "--exclude-standard")
    return sorted({p for p in out.split("\0") if p.endswith((".md", ".txt", ".toml"))})


# each takes the brain; ledger and twice also the shared history, provenance `deep` as well
CHECKS: dict[str, Callable[..., list[Problem]]] = {
    "conflicts": conflicts,
    "format": format_,
    "provenance": provenance,
    "recalls": recalls,
    "ledger": ledger,
    "twice": twice,
    "synapse": synapse,
    "index": index,
}


def fsck(brain: Brain, skip: tuple[str, ...] = (), deep: bool = False) -> dict[str, list[Problem]]:
    """Problems found by each check, by check name."""
    bad = [s for s in skip if s not in CHECKS]
    if bad:
        raise PamdError(f"unknown check {bad[0]!r}", f"use one of: {', '.join(CHECKS)}")
    out = {}
    history = _history(brain)
    for name, fn in CHECKS.items():
        if name in skip:
            continue
        if name == "provenance":
            out[name] = provenance(brain, deep, history)
        elif name in ("ledger", "twice"):
            out[name] = fn(brain, history)
        else:
            out[name] = fn(brain)
    if "conflicts" in out and "format" in out:  # `pamd check` flags markers too: report them once
        seen = {p.path for p in out["conflicts"]}
        out["format"] = [
            p for p in out["format"] if not (p.message == CONFLICT_MESSAGE and p.path in seen)
        ]
    return out
