"""Probes: facts a brain's owner never wants lost, checked with recall after every change.

`probes.jsonl` in the brain, one probe a line:
    {"question": "which database did we pick for billing?", "expect_ids": ["e-…"]}
    {"question": "deadline for the export", "expect_text": "Thursday"}
A probe resolves when one of the top k hits is an expected entry, or a
summary that came from one (provenance, through history), or cites the
expected text. `pamd probe` exits 1 if any probe does not resolve. Blank lines
and lines starting with # are skipped; a UTF-8 BOM and CRLF endings are fine. An
expected id that is no id or that the brain never had, and a probe repeated, are
refused by line (in a shallow clone an id the missing history may hold is not).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from pamd.edge.brain import Brain
from pamd.errors import PamdError

PROBES = "probes.jsonl"


@dataclass
class Probe:
    question: str
    expect_ids: list[str]
    expect_text: str
    line: int


@dataclass
class Result:
    probe: Probe
    rank: int | None  # 1-based rank of the first hit that resolves it
    how: str  # "direct", "provenance", "text", or "" when lost
    hit: str = ""


@dataclass
class Checked:
    """A probes file run on the brain (`pamd probe`, the pamd-probe hook): each probe's
    result; with a base commit (`--against REV`), where each lost one stands there."""

    file: str  # the probes file as named, for its path:line lines
    results: list[Result]
    base: str | None = None  # the base commit's sha
    there: dict[int, Result] = field(default_factory=dict)  # id(probe) -> its result at base, for the lost

    @property
    def lost(self) -> list[Result]:
        return [r for r in self.results if r.rank is None]

    @property
    def new(self) -> list[Result]:
        """Lost here and not at base (every lost one without a base): a fact newly lost."""
        return [r for r in self.lost if self.base is None or self.there[id(r.probe)].rank is not None]

    def rows(self) -> list[dict]:
        """`pamd probe --json`."""
        new = self.new
        rows = []
        for r in self.results:
            row = {"question": r.probe.question, "line": r.probe.line, "rank": r.rank, "how": r.how,
                   "hit": r.hit}
            if self.base:
                row["lost"] = r in new
                if r.rank is None:  # where it stood at REV: null there too means not lost by the change
                    row["rank_at_against"] = self.there[id(r.probe)].rank
            rows.append(row)
        return rows

    def lines(self) -> list[str]:
        """`pamd probe`'s text: a line a probe, then how many resolve."""
        base, lost, new = self.base, self.lost, self.new
        out = []
        for r in self.results:
            if r.rank:
                state = f"ok   rank {r.rank} ({r.how}) {r.hit}"
            elif r in new:
                state = "LOST" + (f" (resolves at {base[:8]}: {self.there[id(r.probe)].hit})" if base else "")
            else:
                state = f"not found (nor at {(base or '')[:8]}: not lost by this change)"
            # a lost probe says what it looked for: the owner reads this in a hook's output or
            # a pull request, far from the probes file
            want = "" if r.rank else f"  [expects {_expected(r.probe)}]"
            out.append(f"{self.file}:{r.probe.line}: {state}  {r.probe.question}{want}")
        tail = ""
        if base and lost:
            tail = f"; {len(new)} lost since {base[:8]}, {len(lost) - len(new)} not found there either"
        out.append(f"{len(self.results) - len(lost)} of {len(self.results)} probes resolve{tail}")
        return out


@contextmanager
def unrunnable() -> Iterator[None]:
    """Exit 1 says "a probe is lost": a probe run that could not run at all (no brain, a bad
    probes file, an unknown --against) says 2, so a script (the nightly workflow, a hook)
    tells a bad probes file from a lost fact."""
    try:
        yield
    except PamdError as exc:
        if exc.exit_code == 1:
            exc.exit_code = 2
        raise


def check(brain: Brain, now: datetime, file: str | None = None, k: int = 10,
          against: str | None = None) -> Checked:
    """Run the probes of `file` (default: the brain's own probes.jsonl) with recall's top
    `k`; with `against` (a commit), also run the lost ones on the brain as committed there.
    Exit code: 1 if any is newly lost (`Checked.new`), else 0."""
    from pamd.consolidate.provenance import History

    own = file is None  # the default is the brain's own file, wherever the cwd is
    file = file or PROBES
    base = None
    if against is not None:
        base = brain.repo.rev_parse(against) if against.strip() else None
        if base is None:
            raise PamdError(f"--against {against!r} is no commit of the brain {brain.root}",
                            "name a branch, a tag or a commit, e.g. --against HEAD")
    history = History(brain)  # one reading of the brain and its history for both
    probes = load(brain, probes_path(brain.root.resolve(), file, own), history)
    results = run_probes(brain, probes, now, k, history)
    out = Checked(file, results, base)
    lost = out.lost
    if base and lost:  # the lost ones at REV (the rest were lost there too)
        out.there = {id(r.probe): b for r, b in zip(lost, run_probes_at(brain, base, [r.probe for r in lost],
                                                                         now, k), strict=True)}
    return out


def _expected(probe: Probe) -> str:
    said = [json.dumps(probe.expect_text, ensure_ascii=False)] if probe.expect_text else []
    return " or ".join(said + probe.expect_ids)


def probes_path(root: Path, name: str, brains_own: bool = False) -> str:
    """A probes file as `load` reads it: brain-relative inside the brain, else absolute
    (outside is fine). A relative name is taken from the cwd when it is there, else from the
    brain's root; the default (`brains_own`) always from the root."""
    path = Path(name).expanduser()
    if not path.is_absolute() and (brains_own or not path.exists()):
        path = root / path
    path = path.resolve()
    if path.is_dir():
        raise PamdError(f"{name} is a directory", "name a .jsonl file of probes")
    return path.relative_to(root).as_posix() if path.is_relative_to(root) else str(path)


def load(brain: Brain, rel: str = PROBES, history=None) -> list[Probe]:
    """The probes of `rel`; `history` (provenance.History) is the brain's reading that
    run_probes uses too, so the ids are checked without reading the brain twice."""
    text = brain.read(rel)  # an absolute `rel` (a file outside the brain) is read as it is
    if text is None and rel != PROBES:
        raise PamdError(f"{rel}: no such file", "check the path; --file is taken from the cwd, else the brain's root")
    if text is None:
        raise PamdError(f"this brain has no {rel}", 'add lines like {"question": "...", "expect_text": "..."}')
    from pamd.fidelity.qa import ENTRY_ID
    from pamd.recall.lexical import searchable

    out = []
    seen: dict[tuple, int] = {}
    # a BOM (Windows editors write one) is no part of the first probe: json refuses it
    for i, line in enumerate(text.removeprefix("\ufeff").split("\n"), 1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        try:
            obj = json.loads(line)
            q = obj["question"]
            ids = obj.get("expect_ids", [])
            txt = obj.get("expect_text", "")
            # a bare string would be split into characters, a list printed as "['…']"
            if not isinstance(q, str) or not isinstance(txt, str) or not isinstance(ids, list) \
                    or not all(isinstance(x, str) for x in ids):
                raise TypeError
            q, txt = q.strip(), txt.strip()
        except (ValueError, KeyError, TypeError, AttributeError):
            raise PamdError(f"{rel}:{i}: expected {{\"question\": text, \"expect_ids\": [ids] or "
                            f"\"expect_text\": text}}") from None
        if not q or not (ids or txt):
            raise PamdError(f"{rel}:{i}: a probe needs a question and expect_ids or expect_text")
        if not searchable(q):  # recall refuses it: say which line
            raise PamdError(f"{rel}:{i}: no word to search for in the question {q!r}",
                            "stop words and punctuation match anything; name what to recall")
        for x in ids:  # a typo would never resolve, and under --against never fail either
            if not ENTRY_ID.fullmatch(x):
                raise PamdError(f"{rel}:{i}: expect_ids {x!r} is not an entry id",
                                "ids look like e-0123456789ab, or s-… for a summary; pamd recall --json shows them")
        key = (" ".join(q.casefold().split()), tuple(sorted(set(ids))), txt.casefold())
        if key in seen:
            raise PamdError(f"{rel}:{i}: the same probe as line {seen[key]}", "delete one of them")
        seen[key] = i
        out.append(Probe(q, ids, txt, i))
    _check_known(brain, rel, out, history)
    return out


def _check_known(brain: Brain, rel: str, probes: list[Probe], history=None) -> None:
    """Refuse an expected id the brain never had (in its tree, under synapse/, or in its
    history, trash dropped since included): such a probe could never resolve, and with
    --against (the hook, the nightly workflow) it would never fail either, so the fact
    it was meant to guard would go unguarded without a word."""
    named = {x for p in probes for x in p.expect_ids}
    if not named:
        return
    from pamd.consolidate.provenance import History

    entries = (history or History(brain)).tree().values()
    known = {e.id for e in entries} | {s for e in entries for s in e.sources}
    if named - known:
        from pamd.edge.lineage import ID_RE, scan

        synapse = brain.root / "synapse"
        for path in sorted(synapse.rglob("*.md")) if synapse.is_dir() else ():
            known |= set(ID_RE.findall(path.read_text(encoding="utf-8", errors="replace")))
    if named - known and history is not None:
        known |= history.ids()  # the pass run_probes reads provenance from, read once for both
    if named - known:
        lin = scan(brain)
        known |= lin.added | {s for srcs in lin.sources.values() for s in srcs}
    if named - known and brain.repo.is_shallow():
        # a shallow clone (CI, `git clone --depth`) lacks the history that holds a compacted
        # entry: its id cannot be told from a typo, and refusing it stopped every commit the
        # pamd-probe hook checks there (compact's too); the probe runs, as before
        return
    for p in probes:
        for x in p.expect_ids:
            if x not in known:
                raise PamdError(f"{rel}:{p.line}: expect_ids {x} is not an entry of this brain "
                                "(not in its tree or history)",
                                "check the id with pamd recall --json; a fact not in the brain yet "
                                "is probed by expect_text")


def run_probes(brain: Brain, probes: list[Probe], now: datetime, k: int = 10, history=None) -> list[Result]:
    from pamd.consolidate.provenance import History, expand_ids
    from pamd.recall import api

    results = []
    lineage: dict[str, set[str]] = {}
    # Each summary's sources as the tree names them (`from=`): provenance that needs no
    # history, so a shallow clone or a rewritten history still resolves what it names.
    history = history or History(brain)  # read once (on first need) for every probe
    named = {e.id: e.sources for e in history.tree().values() if e.sources}

    def behind(eid: str) -> set[str]:
        out: set[str] = set()
        todo = [eid]
        while todo:
            for src in named.get(todo.pop(), ()):
                if src not in out:
                    out.add(src)
                    todo.append(src)
        try:
            out |= {f.entry.id for f in expand_ids(brain, [eid], hist=history)}
        except PamdError:  # a source history lacks: this hit only has the lineage the tree names
            pass
        return out

    for p in probes:
        hits = api.recall(brain, p.question, k=k, now=now, log=False)
        res = Result(p, None, "")
        for rank, h in enumerate(hits, 1):
            ids = set(h.ids)
            if p.expect_ids and ids & set(p.expect_ids):
                res = Result(p, rank, "direct", f"{h.path}:{h.start}-{h.end}")
                break
            if p.expect_text and p.expect_text.lower() in h.text.lower():
                res = Result(p, rank, "text", f"{h.path}:{h.start}-{h.end}")
                break
            if p.expect_ids:
                for eid in ids:
                    if eid.startswith("s-") and eid not in lineage:
                        lineage[eid] = behind(eid)
                    if lineage.get(eid, set()) & set(p.expect_ids):
                        res = Result(p, rank, "provenance", f"{h.path}:{h.start}-{h.end}")
                        break
                if res.rank:
                    break
        results.append(res)
    return results


def run_probes_at(brain: Brain, rev: str, probes: list[Probe], now: datetime, k: int = 10) -> list[Result]:
    """`run_probes` on the brain as committed at `rev` (a throw-away worktree that starts
    from this brain's vector cache, so its index embeds only text the cache lacks)."""
    from pamd.edge.worktrees import checkout_of
    from pamd.recall import api

    if not probes:
        return []
    with checkout_of(brain.repo, rev, brain.state_dir) as wt:
        there = Brain(wt)
        try:
            return run_probes(there, probes, now, k)
        finally:
            api.close(there)
