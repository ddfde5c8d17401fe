"""The one module that talks to git. GitPython errors become PamdErrors with a next step.

Commits go through `git commit` itself so a brain's own hooks run, from an index
of their own holding HEAD and the paths pamd wrote, so a person's other staged or
unstaged edits are never swept into a pamd commit; meanwhile pamd holds git's lock
on the shared index, so no person's git works on the tree half-way through.
"""

from __future__ import annotations

import contextlib
import errno
import functools
import hashlib
import os
import re
import shutil
import sysconfig
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Literal, cast, overload

import git
from git import GitCommandError
from git.cmd import Git as GitCmd

from pamd.core.message import seal
from pamd.edge.fault import checkpoint
from pamd.edge.files import disk_full
from pamd.errors import PamdError

_RUN = re.compile(r"^Pamd-Run: (\S+)$", re.M)

# `git rev-parse --local-env-vars` (git 2.39), and receive-pack's quarantine: what git
# exports to a hook about *its* repository.
LOCAL_ENV = ("GIT_ALTERNATE_OBJECT_DIRECTORIES", "GIT_CONFIG", "GIT_CONFIG_PARAMETERS",
             "GIT_CONFIG_COUNT", "GIT_OBJECT_DIRECTORY", "GIT_DIR", "GIT_WORK_TREE",
             "GIT_IMPLICIT_WORK_TREE", "GIT_GRAFT_FILE", "GIT_INDEX_FILE", "GIT_NO_REPLACE_OBJECTS",
             "GIT_REPLACE_REF_BASE", "GIT_PREFIX", "GIT_INTERNAL_SUPER_PREFIX", "GIT_SHALLOW_FILE",
             "GIT_COMMON_DIR", "GIT_QUARANTINE_PATH")
# Those that name a place: whether they name the brain's repository tells whose they are.
# What `git commit` tells its hooks about the commit it makes (`--amend` and `--date` give an
# old date): not the date of a commit pamd makes in another repository.
_COMMIT_ENV = ("GIT_AUTHOR_NAME", "GIT_AUTHOR_EMAIL", "GIT_AUTHOR_DATE")
_PLACES = ("GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_OBJECT_DIRECTORY", "GIT_COMMON_DIR",
           "GIT_QUARANTINE_PATH", "GIT_ALTERNATE_OBJECT_DIRECTORIES")


def isolate(start: Path, gitdir: Path | None = None) -> None:
    """Forget git's per-repository variables when they belong to another repository.

    pamd run from a hook of a person's project (`pamd remember` in its post-commit, the
    pre-commit framework, an IDE) inherits that repository's GIT_INDEX_FILE, GIT_DIR,
    GIT_WORK_TREE, GIT_OBJECT_DIRECTORY...: pamd's git would read the project's index
    ("uncommitted edits" in a clean brain), take the project for the working tree, write
    the brain's objects elsewhere, `git init` the project again. They are kept when every
    place they name is the brain's (its .git, or its working tree): pamd's own hooks run
    by git in the brain, where GIT_INDEX_FILE is the commit's index. `gitdir`: the
    repository `start` will have (`pamd init`), else found above `start` as git would.
    GitPython reads os.environ itself (at Repo() and at every command), so that is where
    they are dropped."""
    named = [(k, v) for k in _PLACES for v in os.environ.get(k, "").split(os.pathsep) if v]
    if not named:
        return
    try:
        cwd = os.getcwd()  # where git resolves a relative one (a hook runs at its top level)
    except OSError:
        cwd = str(start)
    own = _own_dirs(Path(start), gitdir)
    for key, value in named:
        place = os.path.realpath(os.path.join(cwd, value))
        if key == "GIT_WORK_TREE":
            mine = place in own[:1]
        else:
            mine = any(place == d or place.startswith(d + os.sep) for d in own[1:])
        if not mine:
            for k in (*LOCAL_ENV, *_COMMIT_ENV):
                os.environ.pop(k, None)
            return


def _is_repository(root: Path) -> bool:
    """Whether `root/.git` is a repository as GitPython's Repo (made later, at the first git
    command) will take it: a git dir (or a gitfile leading to one) with HEAD, objects and refs."""
    if not os.path.lexists(root / ".git"):
        return False
    dirs = _own_dirs(root, root / ".git")
    if not dirs:
        return False
    _, git_dir, common = dirs
    return (os.path.isfile(os.path.join(git_dir, "HEAD")) and os.path.isdir(os.path.join(common, "objects"))
            and os.path.isdir(os.path.join(common, "refs")))


def _own_dirs(start: Path, gitdir: Path | None) -> list[str]:
    """[working tree, git dir, common dir] of the repository at `start`, ignoring the
    environment; [] outside any."""
    if gitdir is not None:
        top, dotgit = start, gitdir
    else:
        here = Path(os.path.realpath(start))
        for top in (here, *here.parents):
            dotgit = top / ".git"
            if dotgit.exists():
                break
        else:
            return []
    if dotgit.is_file():  # a linked worktree or a submodule: "gitdir: PATH"
        try:
            text = dotgit.read_text("utf-8").strip()
        except (OSError, UnicodeDecodeError):
            return []
        dotgit = top / text.removeprefix("gitdir:").strip()
    git_dir = os.path.realpath(dotgit)
    common = git_dir
    try:
        common = os.path.realpath(os.path.join(git_dir, Path(git_dir, "commondir").read_text("utf-8").strip()))
    except (OSError, UnicodeDecodeError):
        pass
    return [os.path.realpath(top), git_dir, common]


class Repo:
    def __init__(self, root: Path) -> None:
        self.root = Path(root)
        isolate(self.root)
        if not _is_repository(self.root):
            raise self._not_a_repository()
        # GitPython's Repo is made at the first git command: a recall, which runs none, does
        # not pay for it (the MCP server opens the brain at every call)
        self._git_repo: git.Repo | None = None
        # The fd of the brain's flock while a run holds it. Every git command of
        # the run inherits it, so a git child that outlives a killed pamd (kill -9,
        # the OOM killer) keeps the brain locked until it exits: the next run
        # cannot recover or write while an orphaned `git commit` is still working.
        self.hold_fd: int | None = None
        # How long a write waits for a person's git to release its lock files (a commit
        # sitting in its hooks) before giving up with a clear error.
        self.lock_wait = 60.0
        # git's index.lock while this process holds it (index_held)
        self._index_lock: Path | None = None

    def _not_a_repository(self) -> PamdError:
        return PamdError(f"{self.root} is not a git repository", "run `pamd init`")

    @property
    def _repo(self) -> git.Repo:
        if self._git_repo is None:
            try:
                self._git_repo = git.Repo(self.root)
            except (git.InvalidGitRepositoryError, git.NoSuchPathError):
                raise self._not_a_repository() from None
        return self._git_repo

    @property
    def git(self) -> GitCmd:
        return self._repo.git

    @staticmethod
    def init(root: Path) -> Repo:
        isolate(root, Path(root) / ".git")
        try:
            git.Repo.init(root, initial_branch="main")
        except TypeError:  # very old git without --initial-branch
            git.Repo.init(root)
        except git.GitCommandError as exc:
            raise PamdError(f"git init failed in {root}: {_first(exc)}") from None
        return Repo(root)

    @staticmethod
    def toplevel(start: Path) -> Path | None:
        """The working tree of the repository holding `start` (an existing folder); None
        outside any. A bare repository has no working tree for a brain: refused."""
        isolate(start)
        try:
            found = git.Repo(start, search_parent_directories=True)
        except (git.InvalidGitRepositoryError, git.NoSuchPathError):
            return None
        if found.working_tree_dir is None:
            gitdir = Path(found.git_dir)
            what = (f"{start} is a bare git repository" if gitdir.resolve() == Path(start).resolve()
                    else f"{start} is inside the bare git repository {gitdir}")
            raise PamdError(what, "a brain needs a working tree: `git clone` it and init the clone")
        return Path(found.working_tree_dir)

    # ------------------------------------------------------------ state
    def head(self) -> str | None:
        # Not GitPython's `head.commit`: its object database keeps a `git cat-file` running for
        # the Repo's life, stopped only by Repo.__del__, in whatever thread the garbage collector
        # runs it, blocked in waitpid at an arbitrary allocation.
        return self.rev_parse("HEAD")

    def branch(self) -> str | None:
        try:
            return self._repo.active_branch.name
        except TypeError:
            return None

    def home_branch(self, configured: str | None = None) -> str | None:
        """The branch pamd's commits belong on: `configured` ([git] branch), else the branch
        origin's HEAD names, else `main` or `master` where one exists, else the one branch
        the repository has (None: no way to tell)."""
        if configured:
            return configured
        if self._may_hold_origin_head():
            try:
                ref = self._exec(["symbolic-ref", "-q", "refs/remotes/origin/HEAD"])
                return ref.removeprefix("refs/remotes/origin/")
            except git.GitCommandError:
                pass
        heads = self._run("for-each-ref", "--format=%(refname:short)", "refs/heads/").split()
        for name in ("main", "master"):
            if name in heads:
                return name
        if len(heads) <= 1:
            return heads[0] if heads else self.branch()
        return None

    def _may_hold_origin_head(self) -> bool:
        """False only where `git symbolic-ref refs/remotes/origin/HEAD` surely finds nothing:
        git's files store keeps a symbolic ref in a file of its own (packed-refs never holds
        one), so without that file there is none. Asked before every run's commit, for
        brains that have no remote; with the reftable store, git is asked."""
        try:
            common = Path(self._repo.common_dir)
        except Exception:  # noqa: BLE001 - a question only: git answers it
            return True
        return (common / "reftable").exists() or os.path.lexists(common / "refs" / "remotes" / "origin" / "HEAD")

    def conflicted(self) -> list[str]:
        # The index's unmerged entries ("mode sha stage<TAB>path"), read with plumbing:
        # `git diff --diff-filter=U` refreshes a stale index under index.lock even with
        # GIT_OPTIONAL_LOCKS=0, and every run asks this before its journal exists.
        out = self._run("ls-files", "--unmerged", "-z", strip=False)
        return list(dict.fromkeys(rec.split("\t", 1)[1] for rec in out.split("\0") if "\t" in rec))

    def in_progress(self) -> str | None:
        op = self.operation()
        return op[0] if op else None

    def operation(self) -> tuple[str, str] | None:
        """The git operation the tree is in the middle of: (what, its git command), or None."""
        gitdir = Path(self._repo.git_dir)
        for name, what, cmd in (("MERGE_HEAD", "a merge", "merge"), ("rebase-merge", "a rebase", "rebase"),
                                ("rebase-apply/applying", "a `git am`", "am"),
                                ("rebase-apply", "a rebase", "rebase"),
                                ("CHERRY_PICK_HEAD", "a cherry-pick", "cherry-pick"),
                                ("REVERT_HEAD", "a revert", "revert")):
            if (gitdir / name).exists():
                return what, cmd
        return None

    def finish_hint(self) -> str:
        """What to do with a resolved conflict: the commands of the operation that made it."""
        op = self.operation()
        if op is None:  # a `git stash pop` or `checkout -m`: nothing to continue or abort
            return "`git add` it"
        if op[1] == "merge":
            return "`git add` it and commit, or `git merge --abort`"
        return f"`git add` it and `git {op[1]} --continue`, or `git {op[1]} --abort`"

    def merge_heads(self) -> list[str]:
        """The commits being merged in (.git/MERGE_HEAD: one line each), [] outside a merge."""
        try:
            text = (Path(self._repo.git_dir) / "MERGE_HEAD").read_text("ascii")
        except (OSError, UnicodeDecodeError):
            return []
        return [ln.strip() for ln in text.splitlines() if ln.strip()]

    def history(self) -> list[str]:
        """The revisions whose history is the brain's past for a reader: HEAD's (git's default,
        []), and during a merge the merged-in sides' too, which the tree already holds."""
        heads = self.merge_heads()
        return ["HEAD", *heads] if heads else []

    def dirty(self, paths: list[str] | None = None) -> list[str]:
        """Paths (relative) with staged, unstaged or untracked changes, limited to `paths`."""
        args = ["status", "--porcelain=v1", "-z", "--untracked-files=all"]
        if paths is not None:
            if not paths:
                return []
            args += ["--", *paths]
        out = self._run(*args, strip=False)
        found = []
        for rec in out.split("\0"):
            if len(rec) > 3:
                found.append(rec[3:])
        return found

    def ignored(self, paths: list[str]) -> list[str]:
        """Those of `paths` git ignores (untracked and matched by .gitignore or an exclude).

        `git status` does not list them, so `dirty()` cannot see them, and
        `git add` refuses them: pamd must neither write nor commit them.
        """
        if not paths:
            return []
        # check-ignore exits 1 when nothing is ignored; only 128 is an error. It takes
        # path names, not patterns, and refuses the literal pathspec magic.
        with _stdin(paths) as names:
            code, out, err = self._exec(["check-ignore", "-z", "--stdin"], istream=names,
                                        env={"GIT_LITERAL_PATHSPECS": "0"},
                                        with_extended_output=True, with_exceptions=False,
                                        strip_newline_in_stdout=False)
        if code not in (0, 1):
            raise PamdError(f"git check-ignore failed: {(err or 'unknown error').strip().splitlines()[0]}")
        return [p for p in out.split("\0") if p]

    def untracked_at(self, commit: str | None, paths: list[str]) -> list[str]:
        """Those of `paths` that `commit` does not hold (all of them when it is None: no commit yet)."""
        if not paths:
            return []
        if not commit:
            return list(paths)
        out = self._run("ls-tree", "-r", "-z", "--name-only", commit, "--", *paths, strip=False)
        held = set(out.split("\0"))
        return [p for p in paths if p not in held]

    def tracked(self, path: str) -> bool:
        return bool(self._run("ls-files", "--", path))

    def show(self, rev: str, path: str) -> str | None:
        """File text at a revision, or None if absent there."""
        try:
            return self.git.show(f"{rev}:{path}", strip_newline_in_stdout=False)
        except git.GitCommandError:
            return None

    def staged_texts(self, *pathspecs: str) -> dict[str, str]:
        """{path: text} of the regular files the index holds under `pathspecs` (what a commit
        would record), read with one `git cat-file --batch` rather than a `git show` each."""
        out = self._run("ls-files", "-s", "-z", "--", *pathspecs, strip=False)
        blobs: dict[str, str] = {}
        for rec in out.split("\0"):
            meta, tab, path = rec.partition("\t")
            parts = meta.split()
            # stage 0 only (an unmerged path is the conflict check's business); no symlinks
            if tab and len(parts) == 3 and parts[2] == "0" and parts[0].startswith("100"):
                blobs[path] = parts[1]
        if not blobs:
            return {}
        with tempfile.TemporaryFile() as shas:
            shas.write("".join(f"{sha}\n" for sha in blobs.values()).encode("ascii"))
            shas.seek(0)
            try:
                data = self._exec(["cat-file", "--batch"], istream=shas, stdout_as_string=False,
                                  strip_newline_in_stdout=False)
            except git.GitCommandError as exc:
                raise PamdError(f"git cat-file failed: {_first(exc)}") from None
        texts: dict[str, str] = {}
        pos = 0
        for path in blobs:  # cat-file answers in the order it was asked
            eol = data.index(b"\n", pos)
            size = int(data[pos:eol].split()[2])
            # as `show` reads it: bytes that are not UTF-8 survive as surrogate escapes
            texts[path] = data[eol + 1:eol + 1 + size].decode("utf-8", "surrogateescape")
            pos = eol + 1 + size + 1
        return texts

    def blob(self, rev: str, path: str) -> tuple[str, str] | None:
        """(object id, text) of a file at a revision, or None if absent there: read through
        the one `git cat-file --batch` process GitPython keeps, not a `git show` each."""
        try:
            # GitPython annotates the id and type as str; they are the bytes of cat-file's header
            sha, kind, _size, data = cast(tuple[bytes, bytes, int, bytes],
                                          self.git.get_object_data(f"{rev}:{path}"))
        except (ValueError, git.GitCommandError):
            return None
        if kind != b"blob":
            return None
        # as `show` reads it: bytes that are not UTF-8 survive as surrogate escapes
        return sha.decode("ascii"), data.decode("utf-8", "surrogateescape")

    def log(self, *args: str) -> str:
        return self._run("log", *args)

    def is_shallow(self) -> bool:
        """A clone made with --depth (or a CI checkout without full history): older commits are missing."""
        try:
            return self._run("rev-parse", "--is-shallow-repository") == "true"
        except PamdError:
            return False

    def rev_parse(self, rev: str) -> str | None:
        try:
            return self.git.rev_parse("--verify", "--quiet", f"{rev}^{{commit}}")
        except git.GitCommandError:
            return None

    # ------------------------------------------------------------ git's own locks
    @property
    def gitdir(self) -> Path:
        return Path(self._repo.git_dir)

    def git_locks(self) -> list[Path]:
        """git's lock files that exist now: the index's (and `commit --only`'s temporary
        index), HEAD's and the current branch's. Each is held by a running git, or left
        by one that was killed; which, only the process that made it knows."""
        gitdir = self.gitdir
        cands = [gitdir / "index.lock", gitdir / "HEAD.lock", *gitdir.glob("next-index-*.lock")]
        branch = self.branch()
        if branch:
            cands.append(gitdir / "refs" / "heads" / f"{branch}.lock")
        return [p for p in cands if p.exists()]

    def wait_for_git(self, timeout: float | None = None) -> None:
        """Wait until no git lock file is left (a person's commit in its hooks holds
        index.lock for as long as they run); raise a clear error after `timeout`."""
        deadline = time.monotonic() + (self.lock_wait if timeout is None else timeout)
        while locks := self.git_locks():
            if time.monotonic() >= deadline:
                raise busy_error(self.root, locks[0])
            time.sleep(0.05)

    def git_running(self) -> bool:
        """Whether a git process (other than this one's children, which hold the brain's
        flock) works in this repository now: its working folder is the brain or its .git.
        Linux's /proc tells; where it cannot be read, assume one is."""
        proc = Path("/proc")
        if not (proc / "self").exists():
            return True
        top = os.path.realpath(self.root)
        gitdir = os.path.realpath(self.gitdir)
        me = os.getpid()
        for entry in proc.iterdir():
            if not entry.name.isdigit() or int(entry.name) == me or _parent(entry) == me:
                continue  # this process's own readers (GitPython's `git cat-file --batch`)
            try:
                comm = (entry / "comm").read_text().strip()
            except OSError:
                continue
            if not comm.startswith("git"):
                continue
            try:
                cwd = os.readlink(entry / "cwd")
            except FileNotFoundError:
                continue  # it exited meanwhile
            except OSError:
                return True  # another user's git: it may be working here
            if any(cwd == d or cwd.startswith(d + os.sep) for d in (top, gitdir)):
                return True
        return False

    def busy_git(self) -> str | None:
        """The command of a person's git that is changing this repository's branch or tree
        now (`pull`, `merge`, `rebase`, `checkout` …: see _BUSY), or None. Such a git takes
        the index lock only at moments, and one that finds it taken part-way through may stop
        in a state that loses work when a person goes on (a `git pull` whose merge could not
        write the index leaves MERGE_HEAD over an index without the other side's changes).
        Linux's /proc tells; elsewhere None."""
        proc = Path("/proc")
        if not (proc / "self").exists():
            return None
        top, gitdir, me = os.path.realpath(self.root), os.path.realpath(self.gitdir), os.getpid()
        ours = _ancestors(me)  # the git whose hook started this pamd waits for it, not it for git
        for entry in proc.iterdir():
            if not entry.name.isdigit() or int(entry.name) in ours or _parent(entry) == me:
                continue
            try:
                if not (entry / "comm").read_text().startswith("git"):
                    continue
                argv = (entry / "cmdline").read_bytes().decode("utf-8", "replace").split("\0")
                cwd = os.readlink(entry / "cwd")
            except OSError:
                continue  # it exited meanwhile, or another user's
            if _subcommand(argv) in _BUSY and any(cwd == d or cwd.startswith(d + os.sep) for d in (top, gitdir)):
                return " ".join(a for a in argv[:3] if a)
        return None

    # ------------------------------------------------------------ writing
    def commit(self, paths: list[str], message: str, author: tuple[str, str]) -> str:
        """Commit exactly `paths` (added, changed or deleted) with git itself; return the sha."""
        name, email = author
        message = seal(message)
        env = {
            "GIT_AUTHOR_NAME": name, "GIT_AUTHOR_EMAIL": email,
            "GIT_COMMITTER_NAME": os.environ.get("GIT_COMMITTER_NAME", name),
            "GIT_COMMITTER_EMAIL": os.environ.get("GIT_COMMITTER_EMAIL", email),
            "PAMD_COMMIT": "1",  # lets a brain's hooks tell pamd's own commits from a person's
        }
        run = _RUN.search(message)
        if run:  # and which run it is (a hook sees no message): the pamd-probe hook passes ingests
            env["PAMD_RUN"] = run.group(1)
        sign = [] if self.signs() else ["--no-gpg-sign"]
        held = self._index_lock is not None
        with contextlib.ExitStack() as stack:
            if not held:
                stack.enter_context(self.index_held())
            try:
                self._commit(paths, message, env, sign)
            except git.GitCommandError as exc:
                raise self._commit_error(exc, sign) from None
        return self.head() or ""

    def _commit(self, paths: list[str], message: str, env: dict[str, str], sign: list[str]) -> None:
        # The commit is made from an index of its own (HEAD plus the run's paths as the tree
        # holds them), while pamd holds git's lock on the shared index: a person's commit,
        # rebase or stash meanwhile is refused by git itself ("index.lock exists") instead of
        # taking pamd's files along or meeting them half-written. Then the shared index is
        # brought to the commit for those paths only, keeping whatever a person staged.
        assert self._index_lock is not None
        index = self._index_lock.with_suffix("")
        own = str(index.parent / f"{INDEX_PREFIX}{os.getpid()}-{os.urandom(4).hex()}")  # git makes it
        own_env = {**env, "GIT_INDEX_FILE": own}
        try:
            checkpoint("git:add")
            base = self.head()
            self._exec(["read-tree", base] if base else ["read-tree", "--empty"], env=own_env)
            with _stdin(paths) as names:
                self._exec(["update-index", "--add", "--remove", "-z", "--stdin"], istream=names, env=own_env)
            checkpoint("git:commit")
            with tempfile.TemporaryFile() as msg:  # GitPython takes stdin as a file
                msg.write(message.encode("utf-8"))
                msg.seek(0)
                self._exec(["commit", "-q", *sign, "-F", "-"], env=own_env, istream=msg)
            checkpoint("git:committed")
            # `git commit` takes HEAD as it finds it: a person's commit that was past the index
            # (in its hooks) when this one began can land between reading `base` and that, and
            # this tree would undo it. No other git could have built on this commit yet (the
            # index is held), so take it back and let the caller try again on the new HEAD.
            ours, *parents = self._run("rev-list", "--parents", "-n", "1", "HEAD").split()
            if parents[:1] != ([base] if base else []):
                self._exec(["update-ref", "-m", "pamd: undo a commit made on a HEAD that moved",
                            *(["HEAD", parents[0], ours] if parents else ["-d", "HEAD", ours])])
                raise HeadMoved()
            # the shared index, as it is (a person's staged edits stay), with the run's paths at HEAD
            if index.exists():
                shutil.copyfile(index, own)
            else:
                Path(own).unlink()
            self._exec(["reset", "-q", "HEAD", "--", *paths], env={"GIT_INDEX_FILE": own})
            os.replace(own, index)
            checkpoint("git:index")
        finally:
            Path(own).unlink(missing_ok=True)

    def _commit_error(self, exc: GitCommandError, sign: list[str]) -> PamdError:
        lock = _lock_refusal(exc)
        if lock:
            return busy_error(self.root, lock)
        if _no_space(exc, self.root):
            return disk_full(self.gitdir)
        if _HEAD_MOVED.search(" ".join(_lines(exc))):
            return HeadMoved()
        said = _refusal(exc)
        if sign or not re.search(r"failed to sign|gpg failed|signing failed", said):
            return PamdError(f"git commit failed: {said}",
                             "a hook of this brain may have refused it; nothing was committed")
        return PamdError(f"git commit failed: {said}",
                         "this brain's git config signs commits (commit.gpgsign) and signing failed: make "
                         "the key usable without a prompt, or `git config --local commit.gpgsign false`; "
                         "nothing was committed")

    def index_path(self) -> Path:
        """The shared index file (a linked worktree has its own)."""
        return Path(self._run("rev-parse", "--path-format=absolute", "--git-path", "index"))

    def remove_own_indexes(self) -> None:
        """Remove the commit indexes a killed pamd run left (call under the brain's lock)."""
        for p in self.index_path().parent.glob(f"{INDEX_PREFIX}*"):
            p.unlink(missing_ok=True)

    @contextlib.contextmanager
    def index_held(self, timeout: float | None = None) -> Iterator[None]:
        """Hold git's own lock on the shared index (`index.lock`, taken as git takes it),
        waiting while another git holds it: every git that would write the index or the
        tree from it (commit, add, checkout, stash, merge, rebase) refuses meanwhile."""
        lock = Path(f"{self.index_path()}.lock")
        deadline = time.monotonic() + (self.lock_wait if timeout is None else timeout)
        while True:
            busy = self.busy_git()
            if busy:  # let a person's pull, rebase or checkout finish first (busy_git says why)
                if time.monotonic() >= deadline:
                    raise PamdError(f"a person's `{busy}` is at work in the brain; nothing was changed",
                                    "run again when it is done", exit_code=75)
                time.sleep(0.05)
                continue
            try:
                os.close(os.open(lock, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o666))
                break
            except FileExistsError:
                if time.monotonic() >= deadline:
                    raise busy_error(self.root, lock) from None
                time.sleep(0.05)
            except OSError as exc:
                if exc.errno in (errno.ENOSPC, errno.EDQUOT):
                    raise disk_full(self.gitdir) from None
                raise PamdError(f"cannot take git's index lock: {exc.strerror}") from None
        self._index_lock = lock
        try:
            yield
        finally:
            self._index_lock = None
            lock.unlink(missing_ok=True)

    def signs(self) -> bool:
        """Whether the brain's own git config asks to sign commits (`commit.gpgsign` set in its
        .git/config). A person's global or system setting is not followed: pamd commits unattended
        (cron, the daemon, CI), where a signing key that asks for a passphrase or a touch fails
        every run, and its commits are pamd's, not that person's."""
        code, out, _ = self._exec(["config", "--local", "--type=bool", "--get", "commit.gpgsign"],
                                  with_extended_output=True, with_exceptions=False)
        return code == 0 and out.strip() == "true"

    def not_committed(self, texts: dict[str, str | None]) -> list[str]:
        """Those of the paths in `texts` where HEAD does not hold exactly their text (None:
        no such file), read with one `git ls-tree`."""
        if not texts:
            return []
        out = self._run("ls-tree", "-z", "HEAD", "--", *texts, strip=False)
        blobs: dict[str, str] = {}
        for rec in out.split("\0"):
            meta, tab, path = rec.partition("\t")
            if tab:
                blobs.setdefault(path, meta.split()[2])
        return [path for path, text in texts.items() if not self._holds(path, blobs.get(path), text)]

    def _holds(self, path: str, blob: str | None, text: str | None) -> bool:
        """Whether the object `blob` (None: no file) at `path` is exactly `text`."""
        if text is None or blob is None:
            return text is None and blob is None
        data = text.encode("utf-8")
        if blob == hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest():
            return True
        # A brain may have clean filters or eol rules (.gitattributes): ask git.
        with tempfile.NamedTemporaryFile() as f:
            f.write(data)
            f.flush()
            return blob == self._run("hash-object", f"--path={path}", "--", f.name)

    def checkout_paths(self, rev: str, paths: list[str]) -> None:
        if paths:
            self._run("checkout", rev, "--", *paths)

    def reset_paths(self, paths: list[str]) -> None:
        """Unstage `paths` (back to HEAD in the index). Only those staged: a rollback
        of a run whose `git add` never ran (or was refused) needs no index lock."""
        paths = self.staged(paths)
        if not paths:
            return
        if self._index_lock is not None:  # this run holds git's index lock: reset a copy, put it in place
            index = self._index_lock.with_suffix("")
            own = index.parent / f"{INDEX_PREFIX}{os.getpid()}-{os.urandom(4).hex()}"
            try:
                shutil.copyfile(index, own)
                args = (["reset", "-q", "HEAD", "--"] if self.head()
                        else ["rm", "--cached", "-q", "--ignore-unmatch", "--"])
                self._exec([*args, *paths], env={"GIT_INDEX_FILE": str(own)})
                os.replace(own, index)
            except git.GitCommandError as exc:
                raise PamdError(f"git reset failed: {_first(exc)}") from None
            finally:
                own.unlink(missing_ok=True)
            return
        deadline = time.monotonic() + self.lock_wait
        while True:
            try:
                if self.head():
                    self._exec(["reset", "-q", "HEAD", "--", *paths])
                else:
                    self._exec(["rm", "--cached", "-q", "--ignore-unmatch", "--", *paths])
                return
            except git.GitCommandError as exc:
                lock = _lock_refusal(exc)
                if lock and time.monotonic() < deadline:
                    time.sleep(0.05)
                    continue
                if lock:
                    raise busy_error(self.root, lock) from None
                if _no_space(exc, self.root):
                    raise disk_full(self.gitdir) from None
                raise PamdError(f"git reset failed: {_first(exc)}") from None

    def unknown(self, paths: list[str]) -> list[str]:
        """Those of `paths` the index does not hold (git does not track them)."""
        if not paths:
            return []
        known = set(self._run("ls-files", "-z", "--", *paths, strip=False).split("\0"))
        return [p for p in paths if p not in known]

    def staged(self, paths: list[str]) -> list[str]:
        """Those of `paths` whose index entry differs from HEAD's (read without a lock),
        with those HEAD lacks that the index holds only as an intent to add (`git add -N`,
        which `diff --cached` does not list)."""
        if not paths:
            return []
        indexed = [p for p in self._run("ls-files", "-z", "--", *paths, strip=False).split("\0") if p]
        head = self.head()
        if not head:
            return indexed
        out = self._run("diff", "--cached", "--name-only", "--no-renames", "-z", "HEAD", "--", *paths,
                        strip=False)
        return list(dict.fromkeys([*(p for p in out.split("\0") if p), *self.untracked_at(head, indexed)]))

    def create_branch(self, name: str, start: str = "HEAD") -> None:
        self._run("branch", name, start)

    def switch(self, name: str) -> None:
        self._run("switch", "-q", name)

    def run(self, *args: str, env: dict[str, str] | None = None) -> str:
        """`git ARGS`; `env` adds variables for this one command (its hooks see them too)."""
        return self._run(*args, env=env)

    # As Git.execute: stdout as text, as bytes with stdout_as_string=False, or
    # (status, stdout, stderr) with with_extended_output=True.
    @overload
    def _exec(self, args: list[str], *, with_extended_output: Literal[True], **kwargs: Any) -> tuple[int, str, str]:
        ...

    @overload
    def _exec(self, args: list[str], *, stdout_as_string: Literal[False], **kwargs: Any) -> bytes:
        ...

    @overload
    def _exec(self, args: list[str], *, with_extended_output: Literal[False] = False,
              stdout_as_string: Literal[True] = True, **kwargs: Any) -> str:
        ...

    def _exec(self, args: list[str], **kwargs: Any) -> str | bytes | tuple[int, str, str]:
        # `git status` and `git diff` refresh the index under index.lock when they
        # can ("optional locks"). A kill during such a read would leave that lock
        # outside any journal, blocking every later commit; pamd's reads never
        # take it. Required locks (add, commit) are untouched.
        # Paths pamd names are file names, never patterns: without literal pathspecs
        # `notes [ab].md` would also match (and commit, reset, refuse) `notes a.md`.
        kwargs["env"] = {"GIT_OPTIONAL_LOCKS": "0", "GIT_LITERAL_PATHSPECS": "1", **_hook_path(),
                         **kwargs.get("env", {})}
        if self.hold_fd is not None:
            kwargs["pass_fds"] = (self.hold_fd,)
        return self.git.execute(["git", *args], **kwargs)

    def _run(self, *args: str, strip: bool = True, env: dict[str, str] | None = None) -> str:
        try:
            return self._exec(list(args), strip_newline_in_stdout=strip, env=env or {})
        except git.GitCommandError as exc:
            lock = _lock_refusal(exc)
            if lock:
                raise busy_error(self.root, lock) from None
            if _no_space(exc, self.root):
                raise disk_full(self.gitdir) from None
            raise PamdError(f"git {args[0]} failed: {_first(exc)}") from None

    def _locking(self, args: list[str], **kwargs) -> str:
        """`_exec` of a command that takes git's index or ref locks: when another git
        holds one, git refuses before changing anything ("Unable to create
        …index.lock: File exists"), so wait for that git to finish and try again."""
        deadline = time.monotonic() + self.lock_wait
        while True:
            try:
                return self._exec(args, **kwargs)
            except git.GitCommandError as exc:
                lock = _lock_refusal(exc)
                if not lock or time.monotonic() >= deadline:
                    raise
                for f in kwargs.values():
                    if hasattr(f, "seek"):
                        f.seek(0)  # a message given on stdin is read again
                time.sleep(0.05)


def _no_space(exc: git.GitCommandError, root: Path) -> bool:
    """Whether git failed because the disk is full: it says so, or it could not write a
    file (the index's "unable to write new index file" names no cause) on a disk that has
    next to no room left."""
    text = " ".join(_lines(exc))
    if "No space left on device" in text or "Disk quota exceeded" in text:
        return True
    if not re.search(r"unable to write|short write|failed to write|could not write|couldn't write|cannot write|"
                     r"unable to create", text):
        return False
    try:
        return shutil.disk_usage(root).free < (1 << 20)
    except OSError:
        return False


# git commands that change the branch or the tree in several steps, taking the index lock
# only for some of them
_BUSY = frozenset({"pull", "merge", "rebase", "am", "cherry-pick", "revert", "checkout", "switch", "stash",
                   "reset", "restore", "commit"})


def _subcommand(argv: list[str]) -> str:
    """The git command of a git process's arguments (`git -c a=b -C dir pull` -> pull)."""
    args = iter(argv[1:])
    for a in args:
        if a in ("-c", "-C", "--git-dir", "--work-tree", "--namespace", "--exec-path"):
            next(args, None)
        elif not a.startswith("-"):
            return a
    return ""


def _ancestors(pid: int) -> set[int]:
    """`pid` and the processes it descends from."""
    out = {pid}
    while pid > 1:
        parent = _parent(Path("/proc") / str(pid))
        if parent is None or parent in out:
            break
        out.add(parent)
        pid = parent
    return out


def _parent(entry: Path) -> int | None:
    try:
        stat = (entry / "stat").read_text()
    except OSError:
        return None
    return int(stat.rsplit(")", 1)[1].split()[1])  # the field after the state letter


# the commit's own index files, in the git dir; a killed run's are removed by its recovery
INDEX_PREFIX = "pamd-index-"


class HeadMoved(PamdError):
    """Another git's commit moved HEAD while pamd's `git commit` ran (git refuses to
    move it from a value it no longer has); pamd's commit was not recorded."""

    def __init__(self) -> None:
        super().__init__("another git command committed while pamd was committing; nothing was committed",
                         "run again", exit_code=75)


# git's compare-and-swap on HEAD at the end of a commit, when another commit got there first
_HEAD_MOVED = re.compile(r"cannot lock ref '(?:HEAD|refs/heads/[^']+)': is at [0-9a-f]+ but expected [0-9a-f]+")
_LOCKED = re.compile(r"Unable to create '([^']+\.lock)': File exists|cannot lock ref '[^']+': "
                     r"Unable to create '([^']+\.lock)': File exists")


def _lock_refusal(exc: git.GitCommandError) -> str | None:
    """The lock file another git holds, when that is why git refused (it then changed nothing)."""
    m = _LOCKED.search(" ".join(_lines(exc)))
    return (m.group(1) or m.group(2)) if m else None


def busy_error(root: Path, lock: Path | str) -> PamdError:
    """The one line for a git lock file that stays: a person's git at work, or one killed."""
    try:
        rel = os.path.relpath(lock, root)
    except ValueError:
        rel = str(lock)
    return PamdError(f"git is busy in the brain: {rel} exists (another git command is running, "
                     "or one was killed); nothing was changed",
                     f"let it finish and run again; if no git command is running, remove {rel}",
                     exit_code=75)


def _stdin(paths: list[str]):
    """NUL-separated paths as a file for GitPython's istream."""
    f = tempfile.TemporaryFile()
    f.write(b"".join(p.encode("utf-8") + b"\0" for p in paths))
    f.seek(0)
    return f


def _lines(exc: git.GitCommandError) -> list[str]:
    """The non-empty lines git (and its hooks) printed, without GitPython's `stderr: '…'`
    wrapping or colour codes."""
    text = (exc.stderr or exc.stdout or "").strip()
    for head in ("stderr: '", "stdout: '"):
        if text.startswith(head):
            text = text[len(head):].removesuffix("'")
    text = _ANSI.sub("", text)
    return [ln.strip() for ln in text.splitlines() if ln.strip()]


def _hook_path() -> dict[str, str]:
    """PATH with this pamd's scripts folder first, unless PATH already finds this pamd's
    `pamd-hook` first.

    The brain's hooks (the `.pre-commit-config.yaml` of `pamd init --ci` runs `pamd-hook` from
    PATH) run inside pamd's own git commands. pamd started by its full path from a virtualenv
    that is not active (cron, a daemon, an agent's tool config) left them without `pamd-hook`:
    "Executable `pamd-hook` not found", and every commit refused. `pip install --user` puts
    the scripts in the user scheme's folder (~/.local/bin), which cron's PATH lacks too.
    A PATH holding the folder after another `pamd-hook` (pyenv's shims name the scripts of
    whatever pamd the global interpreter once installed) ran that other, older pamd's hooks."""
    scripts = next((d for d in _scripts_dirs() if d and os.path.isfile(os.path.join(d, "pamd-hook"))), None)
    path = os.environ.get("PATH", "")
    if not scripts:
        return {}
    first = shutil.which("pamd-hook", path=path) if path else None
    if first and _same_file(first, os.path.join(scripts, "pamd-hook")):
        return {}
    return {"PATH": scripts + os.pathsep + path if path else scripts}


@functools.cache
def _scripts_dirs() -> tuple[str, str]:
    """This interpreter's scripts folders, its own and the user scheme's: fixed for the life
    of the process (sysconfig reads its variables once), asked for at every git command."""
    return sysconfig.get_path("scripts"), sysconfig.get_path("scripts", f"{os.name}_user")


def _same_file(a: str, b: str) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False


def _first(exc: git.GitCommandError) -> str:
    lines = _lines(exc)
    return lines[0] if lines else (str(exc).strip().splitlines() or ["unknown error"])[0]


_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
# pre-commit prints a status line per hook ("name.....Passed"), and under a failed one
# "- hook id: …", "- exit code: …" and then what the hook said.
_STATUS = re.compile(r"^(?P<name>.*?)\.{3,}(?:\(no files to check\))?(?P<status>Passed|Failed|Skipped)$")
_META = re.compile(r"^- (hook id|exit code|duration|files were modified by this hook)\b")


def _refusal(exc: git.GitCommandError, width: int = 400) -> str:
    """What a failed `git commit` said, in a line: a hook that refused it (under the
    pre-commit framework, each `…Failed` hook and the first lines it printed, not the
    first hook's `…Passed`), else git's own `fatal:`/`error:` line, else a plain hook's
    last line."""
    lines = _lines(exc)
    failed = []
    for i, ln in enumerate(lines):
        m = _STATUS.match(ln)
        if not (m and m["status"] == "Failed"):
            continue
        said = []
        for detail in lines[i + 1:]:
            if _STATUS.match(detail):
                break
            if not _META.match(detail):
                said.append(detail)
        failed.append(f"{m['name'].strip()} failed" + (f": {'; '.join(said[:3])}" if said else ""))
    if failed:
        out = " / ".join(failed)
    else:
        own = [ln for ln in lines if ln.startswith(("fatal:", "error:"))]
        out = own[0] if own else lines[-1] if lines else f"git exited with code {exc.status} and printed nothing"
    return out if len(out) <= width else out[: width - 1] + "…"
