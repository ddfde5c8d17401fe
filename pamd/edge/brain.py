"""The brain on disk: find it, read its files, and land a run as one commit or nothing.

`Brain.transaction()` is the edge every pipeline run goes through: take the
lock, recover from a run that was killed, check the repo is in a state pamd may
write to, then `commit(changes, message)` writes files atomically and commits
exactly those paths. A journal in .pamd/ lets the next run roll back a run that
died between writing files and committing them.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import time
import tomllib
import uuid
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from git import GitCommandError

from pamd.core import config as config_mod
from pamd.core.entry import Entry
from pamd.core.fmt import CONFLICT_MESSAGE, Doc, FormatError, Problem, parse_doc
from pamd.core.paths import CONFIG, MEMORY, STATE_DIR, SYNAPSE_DIR, TIER_DIRS, tier_of
from pamd.edge.fault import checkpoint
from pamd.edge.files import read_text, temp_files, write_atomic
from pamd.edge.git import HeadMoved, Repo
from pamd.edge.lock import Lock
from pamd.errors import PamdError

log = logging.getLogger(__name__)

JOURNAL = "txn.json"
MAX_FILE = 64 * 1024 * 1024


@dataclass
class Loaded:
    """Every entry file of a brain, parsed."""

    docs: dict[str, Doc] = field(default_factory=dict)

    @property
    def entries(self) -> list[Entry]:
        return [e for d in self.docs.values() for e in d.entries]


class Brain:
    def __init__(self, root: Path) -> None:
        self.root = Path(root).resolve()
        if not (self.root / CONFIG).is_file():
            raise PamdError(f"{self.root} is not a pamd brain (no {CONFIG})", "run `pamd init` there")
        self.repo = Repo(self.root)
        self._config: dict[str, Any] | None = None
        # A branch pamd may commit to besides the home branch: `defrag --branch` sets it on
        # the brain of its own throw-away worktree.
        self.own_branch: str | None = None

    # ------------------------------------------------------------ finding
    @classmethod
    def find(cls, brain: str | None = None, cwd: Path | None = None, env: bool = True) -> Brain:
        """The brain named by --brain/PAMD_BRAIN (env=False: --brain only), else the one containing
        the cwd (like git)."""
        named = brain or (os.environ.get("PAMD_BRAIN") if env else None)
        if named:
            path = Path(named).expanduser()
            if not path.is_dir():
                raise PamdError(f"brain {named} does not exist", "check --brain / PAMD_BRAIN")
            return cls(path)
        here = (cwd or Path.cwd()).resolve()
        for d in (here, *here.parents):
            if (d / CONFIG).is_file() and (d / ".git").exists():
                return cls(d)
        raise PamdError(f"no pamd brain here or above {here}",
                        "cd into a brain, pass --brain DIR, or run `pamd init`")

    # ------------------------------------------------------------ reading
    @property
    def config(self) -> dict[str, Any]:
        if self._config is None:
            self._config = config_mod.load(self.read(CONFIG), str(self.root / CONFIG))
        return self._config

    def path(self, rel: str) -> Path:
        return self.root / rel

    def real(self, rel: str) -> Path:
        """Where `rel` really is: itself, or the target of a symbolic link on its way that
        stays inside the brain (a MEMORY.md kept in a notes folder of the brain). A link out
        of the brain, or into .git, is refused: its text is not the brain's (git records
        only the link), and pamd reads and writes nothing outside."""
        p = self.root / rel
        real = Path(os.path.realpath(p))
        if real == p:
            return p
        try:
            inner = real.relative_to(self.root)
        except ValueError:
            inner = None
        if inner is None or not inner.parts or inner.parts[0] in (".git", STATE_DIR):
            raise PamdError(f"{rel} is a symbolic link to {real}, outside the brain: pamd does not "
                            "read or write through it",
                            "move the file into the brain (a link may point from outside into it)")
        return real

    def real_rel(self, rel: str) -> str:
        """`rel`, or the brain-relative path its link leads to (see `real`)."""
        return str(self.real(rel).relative_to(self.root))

    def read(self, rel: str) -> str | None:
        p = self.real(rel) if (self.root / rel).exists() or (self.root / rel).is_symlink() else self.root / rel
        if not p.is_file():
            return None
        if p.stat().st_size > MAX_FILE:
            raise PamdError(f"{rel} is larger than 64 MiB", "split it or move it out of the brain")
        try:
            return read_text(p)
        except UnicodeDecodeError as exc:
            raise PamdError(f"{rel}: not valid UTF-8 at byte {exc.start}", "fix or remove the file") from None

    def entry_files(self) -> list[str]:
        rels = [MEMORY] if (self.root / MEMORY).is_file() else []
        for d in TIER_DIRS.values():
            base = self.root / d
            if base.is_dir():
                rels += sorted(str(p.relative_to(self.root)) for p in base.rglob("*.md"))
        return rels

    def parse(self, rel: str, text: str | None = None) -> Doc:
        text = self.read(rel) if text is None else text
        try:
            return parse_doc(text or "", rel, tier_of(rel) or "L0")
        except FormatError as exc:
            raise self.format_error(exc.problem, "fix the file (see docs/format.md) or run `pamd check`") from None

    def format_error(self, problem: Problem, hint: str) -> PamdError:
        """The error for a file that does not parse; git's conflict markers get their own."""
        if problem.message != CONFLICT_MESSAGE:
            return PamdError(str(problem), hint)
        if problem.path in self.repo.conflicted():
            return PamdError(f"unresolved merge conflict in {problem.path}",
                             "resolve it (docs/hooks.md, one brain on two machines), "
                             + self.repo.finish_hint())
        return PamdError(f"{problem}", "a merge was committed unresolved: resolve the file "
                                       "(docs/hooks.md, one brain on two machines) and commit")

    def load(self, committed: bool = False) -> Loaded:
        """Every entry file as on disk; with `committed`, an entry file with uncommitted
        changes (edited, staged, untracked or deleted) as HEAD has it, or not at all.

        A run that commits reads the committed brain: what it derives from entries
        (DNA lessons, STATE, PRELOAD) must never carry a person's uncommitted text
        into pamd's commit. The dirty file itself is never written (Transaction).
        """
        rels = self.entry_files()
        if not committed:
            return _unique(Loaded({rel: self.parse(rel) for rel in rels}))
        dirty = set(self.repo.dirty([MEMORY, *TIER_DIRS.values()]))
        docs = {}
        for rel in sorted(set(rels) | {r for r in dirty if r.endswith(".md")}):
            if rel not in dirty:
                docs[rel] = self.parse(rel)
            elif (text := self.repo.show("HEAD", rel)) is not None:
                docs[rel] = self.parse(rel, text)
        return _unique(Loaded(docs))

    # ------------------------------------------------------------ writing
    @property
    def state_dir(self) -> Path:
        return self.root / STATE_DIR

    def writable(self) -> bool:
        """Whether this process may write the brain's .pamd/ (a read-only mount, another
        user's brain: no)."""
        here = self.state_dir if self.state_dir.is_dir() else self.root
        return os.access(here, os.W_OK)

    @property
    def index_state(self) -> Path:
        """Where the index, its vector cache and its lock live: .pamd/, or, when this process
        may only read the brain, a cache folder outside it (XDG_CACHE_HOME or ~/.cache, under
        pamd/), first seeded with a copy of the brain's own index so that only what changed
        since is embedded again."""
        if self.writable():
            return self.state_dir
        base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
        tag = hashlib.sha256(str(self.root).encode("utf-8")).hexdigest()[:16]
        cache = base / "pamd" / "read-only" / f"{self.root.name}-{tag}"
        if not cache.is_dir():
            _seed(self.state_dir, cache)
        return cache

    def author(self) -> tuple[str, str]:
        g = config_mod.settings(self.config).git
        return (os.environ.get("PAMD_AUTHOR_NAME", g.author_name),
                os.environ.get("PAMD_AUTHOR_EMAIL", g.author_email))

    @contextmanager
    def transaction(self, wait: bool | None = None) -> Iterator[Transaction]:
        g = config_mod.settings(self.config).git
        if wait is None:
            wait = g.on_lock == "wait"
        timeout = float(g.lock_timeout)
        with Lock(self.state_dir / "lock", wait=wait, timeout=timeout) as lock:
            self.repo.hold_fd = lock.fd
            self.repo.lock_wait = timeout
            try:
                self.recover()
                self.prune_worktrees()
                self.check_writable()
                yield Transaction(self)
            finally:
                self.repo.hold_fd = None

    def prune_worktrees(self) -> list[str]:
        """Remove worktrees a killed `defrag --branch` left (call under the lock); say so in a note."""
        from pamd.edge.worktrees import prune_stale

        notes = prune_stale(self.root, self.repo)
        for note in notes:
            log.info("%s", note)
        return notes

    def check_branch(self) -> None:
        """Refuse a run whose commit would land off the brain's home branch: on a detached
        HEAD or a branch a person checked out (a defrag pull request under review), where it
        would be lost from the brain's history without a word."""
        branch = self.repo.branch()
        if branch is not None and branch == self.own_branch:
            return
        configured = config_mod.settings(self.config).git.branch
        home = self.repo.home_branch(str(configured) if configured else None)
        if branch is not None and (home is None or branch == home):
            return
        where = f"on branch {branch}" if branch else f"at a detached HEAD ({(self.repo.head() or '')[:12]})"
        back = f"`git switch {home}`" if home else "`git switch` to the brain's branch"
        raise PamdError(f"the brain is {where}, not on its home branch {home or '(unknown)'}: "
                        "pamd commits only there; nothing was changed",
                        f"{back} and run again, or set [git] branch in {CONFIG}")

    def check_writable(self) -> None:
        op = self.repo.operation()
        if op:
            raise PamdError(f"the brain is in the middle of {op[0]}",
                            f"finish it (`git {op[1]} --continue`) or `git {op[1]} --abort`, then run again")
        conflicted = self.repo.conflicted()
        if conflicted:
            raise PamdError(f"the brain has unresolved conflicts in {', '.join(conflicted[:3])}",
                            "resolve them and commit, then run again")
        # after the operation check: a rebase detaches HEAD, and its own advice comes first
        self.check_branch()

    def recover_for_reading(self) -> str | None:
        """Before a read (boot, recall, status): finish the recovery of a run that died
        mid-commit, whose half-applied tree would else be read until the next run (half an
        hour for a daemon, or never if the daemon is what died). Only when no live run holds
        the lock (its journal is its own); said in a note."""
        if not (self.state_dir / JOURNAL).exists():
            return None
        try:
            with Lock(self.state_dir / "lock", wait=False) as lock:
                self.repo.hold_fd = lock.fd
                wait, self.repo.lock_wait = self.repo.lock_wait, 0  # a reader does not wait for git
                try:
                    done = self.recover()
                finally:
                    self.repo.hold_fd = None
                    self.repo.lock_wait = wait
        except PamdError:  # a run is at work: its journal is not a dead run's
            return None
        except (OSError, GitCommandError) as exc:  # a brain this user may only read
            log.info("a pamd run was killed mid-commit and could not be rolled back here (%s): what "
                     "follows reads the tree as it left it; any pamd run that may write the brain "
                     "finishes the recovery", getattr(exc, "strerror", None) or type(exc).__name__)
            return None
        if done:
            what = "kept the commit of" if done == "committed" else "rolled back"
            log.info("%s a pamd run that was killed mid-commit", what)
        return done

    def recover(self) -> str | None:
        """Roll back (or confirm) a run that died mid-commit; return what was done.

        Runs under the lock, which a killed run's orphaned git children still hold
        (Repo.hold_fd), so nothing of the dead run is still working here.
        """
        journal = self.state_dir / JOURNAL
        for tmp in temp_files(journal):  # the journal itself is written atomically
            tmp.unlink(missing_ok=True)
        if not journal.exists():
            return None
        self.repo.remove_own_indexes()
        try:
            j = json.loads(journal.read_text("utf-8"))
            run_id, head, paths = j["run"], j["head"], [str(p) for p in j["paths"]]
            written = dict(j.get("new") or {})
            before = {str(rel): t for rel, t in (j.get("before") or {}).items() if isinstance(t, str)}
            for rel in [*paths, *before]:
                _check_rel(rel)  # a tampered journal must not make us write outside
        except (ValueError, KeyError, OSError, TypeError, AttributeError, PamdError):
            journal.unlink(missing_ok=True)
            return None
        checkpoint("recover:start")
        for rel in paths:  # temp files of write_atomic calls the kill cut short
            for tmp in temp_files(self.root / rel):
                tmp.unlink(missing_ok=True)
        # Lock files of a git add/commit of the run that died: the kill can land after
        # `git commit` moved HEAD but before it renamed index.lock, so this comes before
        # the committed/rolled-back decision. Only those provably the dead run's.
        _clear_git_locks(self, j.get("git"))
        now_head = self.repo.head()
        if _landed(self.repo, run_id, head):
            # git moves HEAD before it writes the index: a kill between leaves the run's
            # paths in the index as they were before the commit (the tree holds the commit's)
            self.repo.reset_paths(paths)
            journal.unlink()
            return "committed"
        _restore(self, now_head, paths, written if "new" in j else None, before)
        checkpoint("recover:restored")
        journal.unlink()
        return "rolled back"


class Transaction:
    def __init__(self, brain: Brain) -> None:
        self.brain = brain
        # What the run read its files at; a commit that moved them since (a person
        # committing while the run worked) makes this run's plan stale.
        self.start_head = brain.repo.head()

    def commit(self, changes: Mapping[str, str | None], message: str) -> str | None:
        """Write `changes` (path -> text, None deletes) and commit them as one commit.

        Returns the new commit sha, or None when nothing changed. On any failure
        the files are restored and the error re-raised: one commit or nothing.
        """
        b = self.brain
        real: dict[str, str | None] = {}
        seen: dict[str, str | None] = {}  # digest of the text on disk (None: no such file)
        was: dict[str, str] = {}  # the text on disk, of those that exist
        # A file reached through a link inside the brain is written (and committed) at its
        # target, so the link stays a link; deleting one deletes the link itself.
        changes = {rel if text is None else b.real_rel(rel): text for rel, text in changes.items()}
        for rel, text in changes.items():
            _check_rel(rel)
            current = b.read(rel)
            if current != text:
                real[rel] = text
                seen[rel] = None if current is None else _digest(current.encode("utf-8"))
                if current is not None:
                    was[rel] = current
        if not real:
            return None
        paths = sorted(real)
        dirty = b.repo.dirty(paths)
        if dirty and all(rel.startswith(SYNAPSE_DIR + "/") for rel in dirty):
            # pulled knowledge is read-only (the hook refuses committing an edit of it)
            if not b.repo.tracked(dirty[0]):  # `git checkout --` fails for a file git never had
                raise PamdError(f"{dirty[0]} is not a pulled file (git does not track it)",
                                f"{SYNAPSE_DIR}/ holds only what pamd pulls: delete or move it")
            raise PamdError(f"uncommitted edits in {', '.join(dirty[:3])}",
                            f"synapse/ is read-only: `git checkout -- {dirty[0]}` drops the edit; "
                            "edit it at its source")
        if dirty:
            raise PamdError(f"uncommitted edits in {', '.join(dirty[:3])}",
                            "commit or stash them first; pamd never commits a person's edits")
        if (config_text := real.get(CONFIG)) is not None:
            try:
                tomllib.loads(config_text)
            except tomllib.TOMLDecodeError as exc:
                # Every later command reads pamd.toml first: one bad commit would stop them all.
                raise PamdError(f"refusing to commit a {CONFIG} that does not parse: {exc}") from None
        ignored = b.repo.ignored(paths)
        if ignored:
            # git status does not show them and git add refuses them: writing one
            # would change a file pamd can never commit.
            raise PamdError(f"ignored by git: {', '.join(ignored[:3])}; pamd changes only files it can commit",
                            "`git check-ignore -v PATH` names the rule")
        # A person's git at work (a commit sitting in its hooks holds index.lock): wait
        # for it before writing anything, so this run never has to take a lock that is
        # not its own, nor leave a journal behind because git refused it.
        b.repo.wait_for_git()
        # and a person may have started a rebase or checked out another branch since the
        # run began: its commit would land there
        b.check_writable()
        head, branch = b.repo.head(), b.repo.branch()
        if head != self.start_head and (self.start_head is None or b.repo.run(
                "diff", "--name-only", self.start_head, head or "HEAD", "--", *paths)):
            # Someone committed to these files while the run worked: writing the
            # plan now would undo their commit in the tree. The next run redoes it.
            raise PamdError("the brain's files changed while pamd was running; "
                            "nothing was committed", "run again")
        run_id = uuid.uuid4().hex[:16]
        journal = b.state_dir / JOURNAL
        b.state_dir.mkdir(exist_ok=True)
        # What each path will hold, so recovery restores only files this run wrote
        # and never a person's later edit of them.
        written = {rel: None if (new := real[rel]) is None else _digest(new.encode("utf-8"))
                   for rel in paths}
        # A file HEAD (as the journal records it) does not hold is put back as it was, not
        # deleted, by a rollback.
        before = {rel: was[rel] for rel in b.repo.untracked_at(head, [rel for rel in paths if rel in was])}
        # "git": from when git lock files may be this run's, so that a recovery can tell
        # them from a person's (which are older, or have a live git)
        record: dict[str, Any] = {"run": run_id, "head": head, "paths": paths, "new": written,
                                  "before": before, "git": time.time()}
        write_atomic(journal, json.dumps(record))
        checkpoint("txn:journal")
        restored = False
        try:
            # Writing and committing hold git's own index lock: a person's git that would
            # start a commit, rebase, stash or checkout now is refused by git ("index.lock
            # exists") rather than meeting pamd's files half-way to their commit.
            with b.repo.index_held():
                try:
                    checkpoint("txn:git")
                    if b.repo.operation() or b.repo.branch() != branch:
                        # a person's git got in before the lock: check again as the run began
                        b.check_writable()
                        raise PamdError("the brain's git moved while pamd was about to commit; "
                                        "nothing was committed", "run again", exit_code=75)
                    moved = b.repo.head()
                    if moved != head:
                        if head is None or b.repo.run("diff", "--name-only", head, moved or "HEAD", "--", *paths):
                            raise PamdError("the brain's files changed while pamd was running; "
                                            "nothing was committed", "run again")
                        # a person's commit of other files: this run's plan still holds on top of it
                        head = record["head"] = moved
                        write_atomic(journal, json.dumps(record))
                    for rel in paths:
                        # A person's editor does not take pamd's lock: re-check each file
                        # right before replacing it, so an edit saved since the check above
                        # is refused, not overwritten.
                        if _file_digest(b.root / rel) != seen[rel]:
                            raise PamdError(f"{rel} changed while pamd was running; nothing was committed",
                                            "run again")
                        new = real[rel]
                        if new is None:
                            (b.root / rel).unlink(missing_ok=True)
                            checkpoint("txn:unlink")
                        else:
                            # and once more after the temp file's fsync, right before the rename
                            write_atomic(b.root / rel, new, lambda rel=rel: _still(b, rel, seen[rel]))
                    for attempt in range(5):
                        try:
                            sha = b.repo.commit(paths, f"{message.rstrip()}\nPamd-Run-Id: {run_id}\n", b.author())
                            break
                        except HeadMoved:
                            # A person's commit got to HEAD first (it was in its hooks, past the
                            # index, when this one began). If it left this run's files as they
                            # were, commit on top of it.
                            moved = b.repo.head()
                            if attempt == 4 or b.repo.operation() or b.repo.branch() != branch or (
                                    head and b.repo.run("diff", "--name-only", head, moved or "HEAD", "--", *paths)):
                                raise
                            head = record["head"] = moved
                            write_atomic(journal, json.dumps(record))
                    landed_on = b.repo.branch()
                    if landed_on != branch:
                        # A branch switch that takes no index lock (`git checkout -b` from HEAD)
                        # came after the last check: take the commit back from that branch.
                        why = "pamd: undo a commit made on a branch switched to meanwhile"
                        if landed_on and head:
                            b.repo.run("update-ref", "-m", why, f"refs/heads/{landed_on}", head, sha)
                        raise PamdError(f"the brain switched to branch {landed_on} while pamd was committing; "
                                        "nothing was committed", "run again on the home branch", exit_code=75)
                    swept = b.repo.not_committed({rel: real[rel] for rel in paths})
                    if swept:
                        # An edit saved between pamd's write and git reading the file went
                        # into pamd's commit: take the commit back (we hold the lock, nobody
                        # has built on it) and leave the edit in the tree, uncommitted.
                        why = "pamd: undo a commit that took a person's edit"
                        if head:
                            b.repo.run("update-ref", "-m", why, "HEAD", head, sha)
                        else:
                            b.repo.run("update-ref", "-m", why, "-d", "HEAD", sha)
                        raise PamdError(f"{swept[0]} changed while pamd was committing; "
                                        "nothing was committed", "run again")
                except BaseException:
                    # Undo while git's index is still this run's: a person's rebase or checkout
                    # waiting for the lock must never find the tree half restored (a rebase would
                    # stop on pamd's files, "your local changes would be overwritten").
                    with contextlib.suppress(Exception):  # else the handler below tries again
                        if not _landed(b.repo, run_id, head):
                            _restore(b, head, paths, written, before)
                            restored = True
                    raise
        except BaseException as exc:
            if _landed(b.repo, run_id, head):
                # git was killed after it recorded the commit (before it renamed its
                # index.lock): the commit is whole, only git's lock files are left.
                _clear_git_locks(b, record.get("git"))
                b.repo.reset_paths(paths)
                journal.unlink(missing_ok=True)
                if not isinstance(exc, Exception):
                    raise
                return b.repo.head()
            # A git of this run killed mid-command (a hook, the OOM killer) left its lock
            # files; a person's git never loses its own (_clear_git_locks). If the rollback
            # itself fails, the journal stays and the next run's recovery finishes it.
            try:
                _clear_git_locks(b, record.get("git"))
                if not restored:
                    _restore(b, head, paths, written, before)
            except Exception:
                # The rollback failed too (the disk that refused the write refuses the
                # rollback's): the journal stays, the next run finishes it, and the person
                # hears of what went wrong first.
                raise exc from None
            journal.unlink(missing_ok=True)
            raise
        journal.unlink(missing_ok=True)
        checkpoint("txn:done")
        return sha


def _seed(state: Path, cache: Path) -> None:
    """Make `cache` with a copy of the index files of the brain's .pamd/ that can be read."""
    import shutil

    tmp = cache.with_name(f".{cache.name}.{os.getpid()}.tmp")
    try:
        tmp.mkdir(parents=True, exist_ok=True)
        for name in ("index", "vectors.sqlite", "deep.sqlite"):
            src = state / name
            try:
                if src.is_dir():
                    shutil.copytree(src, tmp / name)
                elif src.is_file():
                    shutil.copy2(src, tmp / name)
            except OSError:
                shutil.rmtree(tmp / name, ignore_errors=True)  # built afresh instead
        os.replace(tmp, cache)
    except OSError as exc:
        shutil.rmtree(tmp, ignore_errors=True)
        if not cache.is_dir():  # another process made it meanwhile: fine
            raise PamdError(f"the brain is read-only here and its index cannot live in {cache} either "
                            f"({exc.strerror})", "set XDG_CACHE_HOME to a folder this user may write") from None


def _unique(loaded: Loaded) -> Loaded:
    """`loaded`, or the error for an id held by two entries: a run keys entries by id,
    so it would fold two messages into one summary and lose one (`pamd check` names it too)."""
    seen: dict[str, Entry] = {}
    for e in loaded.entries:  # files in check order, so check and this name the same copy
        if (first := seen.setdefault(e.id, e)) is not e:
            raise PamdError(f"{e.path}:{e.line_start}: duplicate id {e.id} "
                            f"(also at {first.path}:{first.line_start})",
                            "give one copy a new id or delete it (docs/format.md), then commit")
    return loaded


def _still(b: Brain, rel: str, digest: str | None) -> None:
    """Raise unless `rel` still holds what the run saw (a person's editor takes no lock)."""
    if _file_digest(b.root / rel) != digest:
        raise PamdError(f"{rel} changed while pamd was running; nothing was committed", "run again")


def _landed(repo: Repo, run_id: str, head: str | None) -> bool:
    """Whether the commit of run `run_id` (started at `head`) is in the history."""
    now = repo.head()
    if not now or now == head:
        return False
    span = f"{head}..HEAD" if head else "HEAD"
    return bool(repo.log("--format=%H", "--fixed-strings", f"--grep=Pamd-Run-Id: {run_id}", span))


def _clear_git_locks(b: Brain, since: float | None) -> None:
    """Remove git's lock files a killed git of pamd's own left behind.

    Called under the brain's lock, which every git child of a pamd run holds too
    (Repo.hold_fd): no git of pamd's is alive now. A lock file is pamd's only when
    the journal says the run's git had started (`since`), the file is not older than
    that, and no git process works in the brain now; any other is a person's git's,
    live or killed, and stays: a later write waits for it or says so (Repo.wait_for_git).
    """
    if since is None:
        return
    locks = [p for p in b.repo.git_locks() if _mtime(p) >= since - 1]
    if not locks or b.repo.git_running():
        return
    for lock in locks:
        lock.unlink(missing_ok=True)


def _mtime(p: Path) -> float:
    try:
        return p.stat().st_mtime
    except FileNotFoundError:
        return float("-inf")


def _digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _file_digest(p: Path) -> str | None:
    try:
        return _digest(p.read_bytes())
    except FileNotFoundError:
        return None


def _restore(b: Brain, head: str | None, paths: list[str],
             written: dict[str, str | None] | None = None,
             before: dict[str, str] | None = None) -> None:
    """Put `paths` back as they are at `head`, in the index and the tree.

    With `written` (path -> digest of what the run wrote, None: it deleted the
    file) only files still holding what the run wrote are touched: a file the
    run never reached is already right, and one changed since is a person's.
    `before` holds what was on disk before the run for files `head` lacks: they
    get those bytes back, never deleted, since the run did not create them.
    """
    before = before or {}
    b.repo.reset_paths(paths)
    for rel in paths:
        p = b.root / rel
        if written is not None and rel in written:
            cur = p.read_bytes() if p.is_file() else None
            if written[rel] is None:
                ours = cur is None
            else:
                ours = cur is not None and _digest(cur) == written[rel]
            if not ours:
                continue
        old = b.repo.show(head, rel) if head else None
        if old is None:
            old = before.get(rel)
        if old is None:
            p.unlink(missing_ok=True)
        else:
            write_atomic(p, old)


def _check_rel(rel: str) -> None:
    p = Path(rel)
    if p.is_absolute() or ".." in p.parts or rel.startswith(".git") or "\0" in rel:
        raise PamdError(f"refusing to write outside the brain: {rel!r}")
