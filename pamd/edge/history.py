"""Read a brain as it is in the work tree or as it was at a commit (for --at)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from pamd.core import config as config_mod
from pamd.core.entry import fmt_time, parse_time
from pamd.core.paths import CONFIG
from pamd.edge.brain import Brain
from pamd.errors import PamdError


@dataclass
class TreeView:
    brain: Brain
    rev: str | None  # None: the work tree (files as on disk, time of HEAD)

    @classmethod
    def at(cls, brain: Brain, ref: str | None) -> TreeView:
        if ref is None:
            return cls(brain, None)
        if not ref.strip():
            raise PamdError("empty --at", "use a commit, or ISO 8601 like 2026-11-30T14:00; leave --at out for now")
        if re.match(r"\d{4}-\d{2}-\d{2}", ref.strip()):
            return cls(brain, commit_at(brain, at_time(ref)))
        sha = brain.repo.rev_parse(ref)
        if sha is None:
            raise PamdError(f"no commit {ref!r} in this brain", "use a sha, a ref like HEAD~3, or a date")
        return cls(brain, sha)

    def read(self, rel: str) -> str | None:
        return self.brain.read(rel) if self.rev is None else self.brain.repo.show(self.rev, rel)

    def files(self) -> list[str]:
        if self.rev is None:
            return self.brain.entry_files()
        # -z: without it git C-quotes a path that is not ASCII ("memory/L0/\\320\\267...md").
        out = self.brain.repo.run("ls-tree", "-r", "-z", "--name-only", self.rev)
        return [f for f in out.split("\0") if f]

    def config(self) -> dict[str, Any]:
        return config_mod.load(self.read(CONFIG))

    def time(self) -> datetime:
        """The brain's own time at this view: its commit's (`rev_time`); the work tree's during
        an unresolved merge, which holds both sides' entries, the newest of HEAD's and theirs."""
        if self.rev is not None:
            return rev_time(self.brain, self.rev)
        if self.brain.repo.rev_parse("HEAD") is None:
            return parse_time("1970-01-01T00:00:00Z")
        return max(rev_time(self.brain, rev) for rev in ["HEAD", *self.brain.repo.merge_heads()])


def at_time(value: str) -> datetime:
    """A --at date: pamd's time syntax (no zone = UTC); a date alone is the end of that day."""
    try:
        t = parse_time(value)
    except ValueError:
        raise PamdError(f"bad time {value!r} for --at", "use a commit, or ISO 8601 like 2026-11-30T14:00") from None
    if re.fullmatch(r"\d{4}-\d{2}-\d{2}", value.strip()):
        t += timedelta(days=1, seconds=-1)
    return t


def commit_at(brain: Brain, when: datetime) -> str:
    """The newest commit whose own time (its Pamd-Now trailer, else its committer date) is <= `when`.

    Pamd-Now is the time the run believed it was (--now), which is the time boot and state
    report for that commit, so a brain aged with a simulated clock is found by that clock.
    "Newest" is first by history: a commit that fits beats every ancestor of it, whatever their
    times (a brain made now and then aged with an older --now). After a merge of two clones,
    two lines of history may each end in a commit that fits; the later of them by time wins.
    A merge without Pamd-Now (a person's `git pull`) is no older than the sides it joins.
    """
    if brain.repo.rev_parse("HEAD") is None:
        raise PamdError("the brain has no commits yet")
    commits, times = history_times(brain, "HEAD")
    best, below = None, set()  # below: commits with a fitting descendant
    for sha, parents in commits:
        fits = times[sha] <= when
        if fits and sha not in below and (best is None or times[sha] > times[best]):
            best = sha
        if fits or sha in below:
            below.update(parents)
    if best is None:
        raise PamdError(f"the brain has no commit at or before {fmt_time(when)}", "`git log` shows its commits")
    return best


_FORMAT = "%H%x1f%P%x1f%(trailers:key=Pamd-Now,valueonly)%x1f%cI%x1e"


def rev_time(brain: Brain, rev: str) -> datetime:
    """A commit's own time, the one `commit_at` finds it by (see `own_time`)."""
    sha, parents, trailer, date = _records(brain.repo.log("-1", f"--format={_FORMAT}", rev))[0]
    if len(parents) > 1 and not trailer.strip():  # only then do its ancestors' times matter
        return _merge_time(brain, (sha, parents, trailer, date))
    return commit_time(trailer, date)


def _merge_time(brain: Brain, top: tuple[str, list[str], str, str]) -> datetime:
    """The own time of a merge without Pamd-Now: its parents' own times are read (one `git
    log` per level), and only through parents that are such merges too, not all history."""
    found = {top[0]: top}
    level = list(top[1])
    while level:
        want = [p for p in dict.fromkeys(level) if p not in found]
        if not want:
            break
        level = []
        for rec in _records(brain.repo.log("--no-walk=unsorted", f"--format={_FORMAT}", *want)):
            found[rec[0]] = rec
            if len(rec[1]) > 1 and not rec[2].strip():
                level += rec[1]
    times: dict[str, datetime] = {}
    todo = [top[0]]
    while todo:  # children after their parents, without recursion
        sha = todo[-1]
        _, parents, trailer, date = found[sha]
        merge = len(parents) > 1 and not trailer.strip()
        left = [p for p in parents if merge and p in found and p not in times]
        if left:
            todo += left
            continue
        todo.pop()
        times[sha] = own_time(parents, trailer, date, [times[p] for p in parents if p in times])
    return times[top[0]]


def history_times(brain: Brain, rev: str) -> tuple[list[tuple[str, list[str]]], dict[str, datetime]]:
    """`rev` and its ancestors as (sha, parents), children before parents, and each one's own time."""
    records = _records(brain.repo.log("--topo-order", f"--format={_FORMAT}", rev))
    times: dict[str, datetime] = {}
    for sha, parents, trailer, date in reversed(records):
        times[sha] = own_time(parents, trailer, date, [times[p] for p in parents if p in times])
    return [(sha, parents) for sha, parents, _, _ in records], times


def own_time(parents: list[str], trailer: str, date: str, parent_times: list[datetime]) -> datetime:
    """A commit's own time (`commit_time`); a merge without Pamd-Now (a person's `git pull`,
    committed by a clock that may be behind the brain's) is no older than the sides it joins."""
    t = commit_time(trailer, date)
    if len(parents) > 1 and not trailer.strip():
        t = max([t, *parent_times])
    return t


def _records(out: str) -> list[tuple[str, list[str], str, str]]:
    found = []
    for record in out.split("\x1e"):
        sha, _, rest = record.strip().partition("\x1f")
        if sha:
            parents, trailer, date = rest.split("\x1f")
            found.append((sha, parents.split(), trailer, date))
    return found


def commit_time(trailer: str, date: str) -> datetime:
    """A commit's own time: its first Pamd-Now trailer if that parses, else its committer date."""
    first = trailer.strip().splitlines()[0] if trailer.strip() else ""
    try:
        return parse_time(first)
    except ValueError:
        return parse_time(date.strip())
