"""`pamd sync`: fetch, merge by entry id and push; `pamd sync --repair`: put back what a merge lost.

A sync takes the brain's lock, refuses a tree with a person's uncommitted edits,
fetches the remote's branch and then either has nothing to do, fast-forwards, or
makes one merge commit. The merge starts as git's own (`git merge --no-commit`,
so git merges every file pamd does not own as it always does); then pamd writes
its own files from the three versions git holds — every entry file and ledger
from the union by entry id (pamd.ops.union), DNA.md, STATE.md and PRELOAD.md
where git stopped (pamd.ops.fmmerge) — and commits with `git commit`, so the
brain's hooks run. Where a person's own text conflicts the merge is left open
with pamd's files resolved and the person's named, for the person to finish.
Then the branch is pushed; when the remote moved meanwhile, the sync starts over.
"""

from __future__ import annotations

import os
import tempfile
from dataclasses import dataclass, field

from pamd.core.entry import Entry
from pamd.core.fmt import FormatError, parse_doc, render_doc
from pamd.core.paths import DNA, MEMORY, PRELOAD, STATE, TIER_DIRS, tier_of
from pamd.core.words import plural
from pamd.edge import lineage
from pamd.edge.brain import Brain
from pamd.edge.files import write_atomic
from pamd.errors import PamdError
from pamd.ops import fmmerge, union

LEDGER_DIR = lineage.LEDGER_DIR
NOTES = (DNA, STATE, PRELOAD)
ENTRY_SPECS = (MEMORY, *TIER_DIRS.values())
ATTEMPTS = 3  # fetch-merge-push rounds before giving up on a remote that keeps moving


@dataclass
class Synced:
    remote: str
    branch: str
    action: str  # "up to date", "fast-forward", "merged", "conflict"
    commit: str | None = None
    pushed: bool = False
    merged: union.Merged | None = None
    conflicts: list[str] = field(default_factory=list)


@dataclass
class Repaired:
    restored: list[str] = field(default_factory=list)  # entries put back in the tree
    ledger: list[str] = field(default_factory=list)  # ids put back in the ledger
    folded: list[str] = field(default_factory=list)  # copies a summary of the tree already holds, taken out
    set_aside: list[str] = field(default_factory=list)  # summaries another summary of the tree overlaps
    commit: str | None = None


# ---------------------------------------------------------------- git
def _git(brain: Brain, *args: str, env: dict[str, str] | None = None) -> tuple[int, str, str]:
    """`git ARGS` through the brain's one git seam, without raising: (exit code, stdout, stderr)."""
    return brain.repo._exec(list(args), env=env or {}, with_extended_output=True,
                            with_exceptions=False)


def _first(err: str) -> str:
    lines = [ln.strip() for ln in err.splitlines() if ln.strip()]
    own = [ln for ln in lines if ln.startswith(("fatal:", "error:", "!"))]
    return (own or lines or ["git printed nothing"])[0]


def _config(brain: Brain, key: str) -> str | None:
    code, out, _ = _git(brain, "config", "--get", key)
    return out.strip() if code == 0 and out.strip() else None


def _ancestor(brain: Brain, a: str, b: str) -> bool:
    return _git(brain, "merge-base", "--is-ancestor", a, b)[0] == 0


def _commit_env(brain: Brain) -> dict[str, str]:
    name, email = brain.author()
    return {"GIT_AUTHOR_NAME": name, "GIT_AUTHOR_EMAIL": email,
            "GIT_COMMITTER_NAME": os.environ.get("GIT_COMMITTER_NAME", name),
            "GIT_COMMITTER_EMAIL": os.environ.get("GIT_COMMITTER_EMAIL", email),
            "PAMD_COMMIT": "1", "PAMD_RUN": "sync"}


def text3(brain: Brain):
    """A three-way text merge through `git merge-file`: the merge, or None on a conflict."""
    def merge(base: str, ours: str, theirs: str) -> str | None:
        if ours == theirs or theirs == base:
            return ours
        if ours == base:
            return theirs
        with tempfile.TemporaryDirectory() as d:
            names = []
            for name, text in (("ours", ours), ("base", base), ("theirs", theirs)):
                p = os.path.join(d, name)
                with open(p, "w", encoding="utf-8", newline="") as f:
                    f.write(text)
                names.append(p)
            code, out, _ = brain.repo._exec(
                ["merge-file", "-p", "-q", *names], with_extended_output=True, with_exceptions=False,
                strip_newline_in_stdout=False)
        return out if code == 0 else None
    return merge


def _files(brain: Brain, rev: str, *specs: str) -> dict[str, str]:
    out = brain.repo.run("ls-tree", "-r", "-z", "--name-only", rev, "--", *specs)
    texts = {}
    for rel in out.split("\0"):
        if rel and (got := brain.repo.blob(rev, rel)) is not None:
            texts[rel] = got[1]
    return texts


def _entry_files(brain: Brain, rev: str) -> dict[str, str]:
    return {rel: t for rel, t in _files(brain, rev, *ENTRY_SPECS).items() if tier_of(rel)}


def _from_history(brain: Brain, revs: list[str]):
    """Lookup for union.merge_files: entries no tree of the merge holds, where history last had them."""
    def lookup(ids: set[str]) -> dict[str, Entry]:
        found: dict[str, Entry] = {}
        for eid in sorted(ids):
            head = f"### {eid} · "
            code, out, _ = _git(brain, "log", "--format=%H %P", "--full-history", f"-S{head}", *revs,
                                "--", *ENTRY_SPECS)
            for line in out.splitlines() if code == 0 else ():
                for rev in line.split():  # the commit that added it, or the parent of the one that took it
                    code, hits, _ = _git(brain, "grep", "-l", "-F", head, rev, "--", *ENTRY_SPECS)
                    for hit in hits.splitlines() if code == 0 else ():
                        rel = hit.split(":", 1)[1]
                        got = brain.repo.blob(rev, rel)
                        try:
                            doc = parse_doc(got[1] if got else "", rel, tier_of(rel) or "L0")
                        except FormatError:
                            continue
                        found.update({e.id: e for e in doc.entries if e.id == eid})
                    if eid in found:
                        break
                if eid in found:
                    break
        return found
    return lookup


# ---------------------------------------------------------------- sync
def sync(brain: Brain, remote: str | None = None, branch: str | None = None, push: bool = True) -> Synced:
    with brain.transaction():
        local = brain.repo.branch()
        if not local:
            raise PamdError("HEAD is detached: pamd sync merges into a branch",
                            "`git switch` to the brain's branch, then sync")
        _refuse_dirty(brain)
        remote = remote or _config(brain, f"branch.{local}.remote") or "origin"
        if branch is None:
            merge_ref = _config(brain, f"branch.{local}.merge")
            branch = merge_ref.removeprefix("refs/heads/") if merge_ref else local
        start = brain.repo.head()
        for _ in range(ATTEMPTS):
            done = _round(brain, remote, branch)
            if done.action == "conflict" or not push:
                return done
            code, _, err = _git(brain, "push", "-q", remote, f"HEAD:refs/heads/{branch}")
            if code == 0:
                done.pushed = True
                return done
            if not any(w in err for w in ("fetch first", "non-fast-forward", "rejected")):
                raise PamdError(f"git push {remote} {branch} failed: {_first(err)}",
                                "the merge is committed here; fix the remote and run `pamd sync` again")
            if start and brain.repo.head() != start:
                # The remote moved while this round merged: drop the unpublished merge (the tree
                # is clean, checked above) and merge again, so one sync stays one merge commit.
                brain.repo.run("reset", "-q", "--keep", start)
        raise PamdError(f"{remote} {branch} moved {ATTEMPTS} times while syncing; nothing was pushed",
                        "run `pamd sync` again")


def _refuse_dirty(brain: Brain) -> None:
    out = brain.repo.run("status", "--porcelain=v1", "-z", "--untracked-files=no")
    dirty = [rec[3:] for rec in out.split("\0") if len(rec) > 3]
    dirty += brain.repo.dirty([*ENTRY_SPECS, LEDGER_DIR, *NOTES])
    if dirty:
        dirty = list(dict.fromkeys(dirty))
        raise PamdError(f"uncommitted edits in {', '.join(dirty[:3])}{' …' if len(dirty) > 3 else ''}",
                        "commit or stash them first; pamd sync never merges a person's uncommitted edits")


def _round(brain: Brain, remote: str, branch: str) -> Synced:
    code, _, err = _git(brain, "fetch", "-q", remote, branch)
    if code and "couldn't find remote ref" in err:
        return Synced(remote, branch, "up to date")  # a branch the remote does not have yet: push makes it
    if code:
        raise PamdError(f"git fetch {remote} {branch} failed: {_first(err)}",
                        "check the remote and branch (`git remote -v`) and that it is reachable")
    theirs = brain.repo.rev_parse("FETCH_HEAD")
    ours = brain.repo.head()
    if theirs is None or theirs == ours or (ours and _ancestor(brain, theirs, ours)):
        return Synced(remote, branch, "up to date")
    if ours is None or _ancestor(brain, ours, theirs):
        code, _, err = _git(brain, "merge", "--ff-only", "-q", theirs)
        if code:
            raise PamdError(f"git merge --ff-only failed: {_first(err)}", "nothing was merged")
        return Synced(remote, branch, "fast-forward", brain.repo.head())
    return _merge(brain, remote, branch, ours, theirs)


def _merge(brain: Brain, remote: str, branch: str, ours: str, theirs: str) -> Synced:
    code, base, err = _git(brain, "merge-base", ours, theirs)
    if code or not base.strip():
        raise PamdError(f"{remote} {branch} shares no history with this brain", "nothing was merged")
    base = base.strip()
    env = _commit_env(brain)
    # Resolve before touching the tree: a file that does not parse stops here, nothing merged.
    merged = _resolve(brain, base, ours, theirs)
    code, _, err = _git(brain, "merge", "--no-ff", "--no-commit", "-q", "-Xno-renames", theirs, env=env)
    if code and brain.repo.operation() is None:
        raise PamdError(f"git merge failed: {_first(err)}", "nothing was merged")
    committed = False
    try:
        paths = _write(brain, merged, base, ours, theirs)
        if paths:
            here = [p for p in paths if (brain.root / p).exists()]
            if here:
                brain.repo.run("add", "--", *here)
            gone = [p for p in paths if p not in here]
            if gone:
                brain.repo.run("rm", "-q", "--cached", "--ignore-unmatch", "--", *gone)
        # A file whose person text pamd cannot merge stays unresolved even where git's line
        # merge went through: its entries were not merged by id.
        left = list(dict.fromkeys([*brain.repo.conflicted(), *merged.entries_merge.conflicts]))
        if left:
            committed = True  # the person's to finish: leave the merge as it stands
            return Synced(remote, branch, "conflict", merged=merged.entries_merge, conflicts=left)
        with tempfile.NamedTemporaryFile("w", encoding="utf-8", suffix=".txt", delete=False) as f:
            f.write(_message(remote, branch, merged.entries_merge))
        try:
            code, _, err = _git(brain, "commit", "-q", "-F", f.name,
                                *([] if brain.repo.signs() else ["--no-gpg-sign"]), env=env)
        finally:
            os.unlink(f.name)
        if code:
            raise PamdError(f"git commit failed: {_first(err)}",
                            "a hook of this brain may have refused the merge; nothing was merged")
        committed = True
        return Synced(remote, branch, "merged", brain.repo.head(), merged=merged.entries_merge)
    finally:
        if not committed:
            _git(brain, "merge", "--abort")


@dataclass
class _Resolution:
    entries_merge: union.Merged
    ledger: dict[str, str | None]
    notes: dict[str, str | None]  # DNA/STATE/PRELOAD: text, None: left to the person


def _resolve(brain: Brain, base: str, ours: str, theirs: str) -> _Resolution:
    texts = (_entry_files(brain, base), _entry_files(brain, ours), _entry_files(brain, theirs))
    lin = lineage.scan(brain, [ours, theirs])
    dropped = (lineage.dropped_ids(brain, [f"{base}..{ours}"]), lineage.dropped_ids(brain, [f"{base}..{theirs}"]))
    try:
        m = union.merge_files(texts, lin.sources, dropped, text3(brain), _from_history(brain, [ours, theirs]))
    except FormatError as exc:
        raise PamdError(f"{exc.problem} (one side of the merge)",
                        "fix it on that side (`pamd check`) and commit, then sync; nothing was merged") from None
    ledgers = [_files(brain, rev, LEDGER_DIR) for rev in (ours, theirs)]
    ledger: dict[str, str | None] = {}
    for rel in sorted(ledgers[0].keys() | ledgers[1].keys()):
        if not rel.endswith(".txt"):
            continue
        ids = {ln.strip() for side in ledgers for ln in side.get(rel, "").split("\n") if ln.strip()}
        text = "".join(f"{i}\n" for i in sorted(ids))
        ledger[rel] = ledgers[0][rel] if set(ledgers[0].get(rel, "").split()) == ids else text
    notes: dict[str, str | None] = {}
    for rel in NOTES:
        b, o, t = (brain.repo.blob(rev, rel) for rev in (base, ours, theirs))
        if o is None or t is None or b is None:
            continue  # added or deleted on one side: git's merge decides
        bt, ot, tt = b[1], o[1], t[1]
        simple = text3(brain)(bt, ot, tt)
        notes[rel] = simple if simple is not None else fmmerge.merge_doc(rel, bt, ot, tt, text3(brain))
    return _Resolution(m, ledger, notes)


def _write(brain: Brain, r: _Resolution, base: str, ours: str, theirs: str) -> list[str]:
    """Write pamd's resolution into the merge's work tree; the paths written (to `git add`)."""
    wrote = []
    for rel, text in [*r.entries_merge.files.items(), *r.ledger.items()]:
        if rel in r.entries_merge.conflicts:
            continue
        _put(brain, rel, text)
        wrote.append(rel)
    for rel, text in r.notes.items():
        if text is not None:
            _put(brain, rel, text)
            wrote.append(rel)
    return wrote


def _put(brain: Brain, rel: str, text: str | None) -> None:
    p = brain.root / rel
    if text is None:
        p.unlink(missing_ok=True)
    else:
        p.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(p, text)


def _message(remote: str, branch: str, m: union.Merged) -> str:
    lines = [f"pamd sync: merge {remote} {branch}", "",
             f"Entries: {len(m.entries)} in the tree, each once."]
    if m.folded:
        lines.append(f"Compacted by one side: {plural(len(m.folded), 'entry')} the other still held.")
    if m.dropped:
        lines.append(f"Dropped by one side: {', '.join(sorted(m.dropped))}.")
    if m.set_aside:
        lines.append(f"Set aside (both sides compacted the same messages): {', '.join(sorted(m.set_aside))}; "
                     f"{plural(len(m.restored), 'source')} of theirs no kept summary holds restored "
                     "for the next compaction.")
    if m.recalls:
        lines.append(f"Recalls carried to summaries: {m.recalls}.")
    lines.append("Pamd-Run: sync")
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------- repair
def lost_ids(brain: Brain, lin: lineage.Lineage, here: dict[str, Entry]) -> tuple[set[str], set[str]]:
    """(ids lost from the tree, ids lost from the ledger): registered, added by a commit, and
    neither in the tree, nor behind a summary of it, nor on a commit's Dropped line."""
    ledger: set[str] = set()
    for p in sorted(brain.path(LEDGER_DIR).glob("*.txt")) if brain.path(LEDGER_DIR).is_dir() else ():
        ledger |= {ln.strip() for ln in (brain.read(p.relative_to(brain.root).as_posix()) or "").split("\n")
                   if ln.strip()}
    below = dict(lin.sources)
    below.update({e.id: e.sources for e in here.values() if e.sources})
    reached = set(here) | lineage.dropped_ids(brain)
    stack = list(reached)
    while stack:
        for s in below.get(stack.pop(), ()):
            if s not in reached:
                reached.add(s)
                stack.append(s)
    registered = ledger | set(lin.ledger)
    lost = {eid for eid in registered if eid not in reached and eid in lin.added}
    return lost, set(lin.ledger) - ledger


def repair(brain: Brain) -> Repaired:
    """Put back every entry a merge lost, as history last had it, and take out what a merge
    left standing twice (a raw entry beside its summary, two summaries of one message), in one commit."""
    from pamd.consolidate.provenance import locate

    out = Repaired()
    with brain.transaction() as txn:
        here = {e.id: e for e in brain.load(committed=True).entries}
        lin = lineage.scan(brain)
        lost, unlisted = lost_ids(brain, lin, here)
        # A summary history holds for lost messages only: put it back rather than its sources.
        below = dict(lin.sources)
        closure = union._closures(below)
        cands = sorted((sid for sid in lin.sources if sid not in here
                        and (c := closure(sid)) and all(not s.startswith("e-") or s in lost for s in c)
                        and c & lost), key=lambda s: (-len(closure(s)), s))
        claimed: set[str] = set()
        want: list[str] = []
        for sid in cands:
            if not (closure(sid) | {sid}) & claimed:
                want.append(sid)
                claimed |= closure(sid) | {sid}
        want += sorted(lost - claimed)
        found = locate(brain, set(want), tree=False) if want else {}
        missing = [eid for eid in want if eid not in found]
        if missing:
            raise PamdError(f"{plural(len(missing), 'lost entry')} not found in history: {', '.join(missing[:3])}",
                            "a shallow clone? `git fetch --unshallow`, then repair again")
        by_path: dict[str, list[Entry]] = {}
        for eid in want:
            e = found[eid][0]
            by_path.setdefault(e.path, []).append(e)
        was = {rel: brain.read(rel) or "" for rel in brain.entry_files()}
        texts = dict(was)
        for rel, adds in sorted(by_path.items()):
            if rel in texts:
                doc = brain.parse(rel, texts[rel])
                meta, pre = doc.meta, doc.preamble
            else:
                meta, pre = union._new_head(rel)
                doc = parse_doc(render_doc(meta, pre, []), rel, tier_of(rel) or "L0")
            texts[rel] = render_doc(meta, pre, sorted([*doc.entries, *adds], key=lambda e: e.ts))
        # The tree with what was lost put back, made whole as a sync makes it: a message a
        # merge left both raw and behind a summary, or behind two summaries, stands once.
        m = union.merge_files((texts, texts, texts), lin.sources, (set(), set()), text3(brain),
                              _from_history(brain, ["HEAD"]))
        changes: dict[str, str | None] = {rel: t for rel, t in m.files.items() if t != was.get(rel)}
        for eid in sorted(unlisted):
            rel = lin.ledger[eid]
            if rel not in changes:
                changes[rel] = brain.read(rel) or ""
            changes[rel] = "".join(f"{i}\n" for i in sorted({*(changes[rel] or "").split(), eid}))
        out.restored, out.ledger = want, sorted(unlisted)
        out.folded, out.set_aside = m.folded, m.set_aside
        if changes:
            title = [f"{plural(len(want), 'lost entry')} put back"] if want else []
            if m.folded or m.set_aside:
                title.append(f"{plural(len(m.folded) + len(m.set_aside), 'entry')} standing twice taken out")
            msg = (f"pamd sync --repair: {', '.join(title) or 'ledger ids listed again'}\n\n"
                   + "".join(f"Restored: {eid}\n" for eid in want)
                   + "".join(f"Held by a summary, taken out: {eid}\n" for eid in m.folded)
                   + "".join(f"Set aside (another summary holds its messages): {eid}\n" for eid in m.set_aside)
                   + (f"Restored with it: {', '.join(m.restored)}\n" if m.restored else "")
                   + (f"Ledger: {len(unlisted)} ids listed again\n" if unlisted else "")
                   + "Pamd-Run: repair\n")
            out.commit = txn.commit(changes, msg)
    return out
