"""`pamd init`: lay the brain's files from the packaged templates and commit them."""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path

from pamd.core.config import settings
from pamd.core.paths import CONFIG
from pamd.core.templates import ci_files, template_files
from pamd.edge.brain import Brain
from pamd.edge.files import write_atomic
from pamd.edge.git import Repo
from pamd.errors import PamdError

# Files a repository adopted by `pamd init` may have already: pamd's lines are added to
# them unless the line that shows they are there (the value) is.
SHARED_FILES = {".gitignore": ".pamd/", ".gitattributes": "memory/ledger/*.txt merge=union"}


# Control characters (tab and line breaks too) and lone surrogates (argv bytes that are not UTF-8).
_BAD_NAME = re.compile(r"[\x00-\x1f\x7f\ud800-\udfff]")


def toml_name(name: str) -> str:
    """--name as a TOML basic string: one line of text, `"` and `\\` escaped."""
    if not name.strip():
        raise PamdError("--name is empty", "give the agent a name, e.g. --name claude, or leave --name out")
    if _BAD_NAME.search(name):
        raise PamdError(f"--name {name!r} has a control character, a line break or bytes that are not UTF-8",
                        "use one line of plain text")
    return '"' + name.replace("\\", "\\\\").replace('"', '\\"') + '"'


def init_brain(target: Path, name: str | None = None, ci: bool = False,
               summarizer_note: str = "") -> tuple[Brain, str]:
    """Lay a new brain in `target` and commit it. Everything is checked before the folder or
    its .git is made, and a failed init takes back all it made, so a retry starts clean."""
    target = target.expanduser()
    if target.exists() and not target.is_dir():
        raise PamdError(f"{target} exists and is not a folder")
    if (target / CONFIG).exists():
        raise PamdError(f"{target} is already a pamd brain",
                        "use it as it is (`pamd init --hooks` installs its git hooks, `pamd init --ci` "
                        "adds the CI files), or pick another folder")
    near = target
    while not near.exists():  # the repository of a folder not made yet is its parent's
        near = near.parent
    if not near.is_dir():
        raise PamdError(f"{near} is not a folder", "pick a folder for the brain")
    top = Repo.toplevel(near)
    if top is not None and (not target.exists() or top.resolve() != target.resolve()):
        raise PamdError(f"{target} is inside the git repository {top}",
                        "a brain is a repository of its own: pick a folder outside it")
    files = template_files()
    if ci:
        files.update(ci_files())
    if name is not None:
        files[CONFIG] = files[CONFIG].replace('name = "agent"', f"name = {toml_name(name)}", 1)
    if summarizer_note:  # commented lines only: turning an LLM on stays the person's choice
        files[CONFIG] = files[CONFIG].replace("\n[summarizer]\n", f"\n{summarizer_note}[summarizer]\n", 1)
    clash = [rel for rel in files if (target / rel).exists() and rel not in SHARED_FILES]
    if clash:
        raise PamdError(f"{target} already has {', '.join(sorted(clash)[:3])}",
                        "move those files away, or init an empty folder")
    new_dirs = [d for d in (target, *target.parents) if not d.exists()]  # deepest first
    new_git = top is None and not os.path.lexists(target / ".git")
    target.mkdir(parents=True, exist_ok=True)
    try:
        return _lay(target, files, top is not None)
    except BaseException:
        if new_git:
            shutil.rmtree(target / ".git", ignore_errors=True)
        for d in new_dirs:
            try:
                d.rmdir()
            except OSError:
                pass
        raise


def _lay(target: Path, files: dict[str, str], adopt: bool) -> tuple[Brain, str]:
    repo = Repo(target) if adopt else Repo.init(target)
    old: dict[str, str] = {}
    for rel, line in SHARED_FILES.items():
        if not (target / rel).exists():
            continue
        old[rel] = (target / rel).read_text("utf-8")
        files[rel] = old[rel] if line in old[rel] else old[rel].rstrip("\n") + "\n" + files[rel]
        if repo.dirty([rel]):
            raise PamdError(f"{rel} has uncommitted edits", "commit them first")
    made = sorted({d for rel in files for d in (target / rel).parents
                   if d.is_relative_to(target) and not d.exists()}, key=lambda d: -len(d.parts))
    try:
        for rel, text in files.items():
            write_atomic(target / rel, text)
        brain = Brain(target)
        sha = repo.commit(sorted(files), "pamd init: new brain\n\nPamd-Run: init\n", brain.author())
    except BaseException:
        _undo(repo, target, sorted(files), old, made)
        raise
    return brain, sha


def add_ci(brain: Brain) -> tuple[list[str], list[str], str | None]:
    """`pamd init --ci` on an existing brain: lay down the CI files it lacks, in one commit.

    Returns (added, kept, sha). A file already there is never overwritten (it is kept as it
    is); when every one is there, nothing is written and that is an error."""
    from pamd.edge.lock import Lock

    files = ci_files()
    kept = sorted(rel for rel in files if os.path.lexists(brain.root / rel))
    if len(kept) == len(files):
        raise PamdError(f"{brain.root} already has {' and '.join(kept)}",
                        "nothing to add; to take pamd's current ones instead, remove those first")
    add = {rel: text for rel, text in files.items() if rel not in kept}
    g = settings(brain.config).git
    with Lock(brain.state_dir / "lock", wait=g.on_lock == "wait", timeout=float(g.lock_timeout)):
        brain.check_writable()
        made = sorted({d for rel in add for d in (brain.root / rel).parents
                       if d.is_relative_to(brain.root) and not d.exists()}, key=lambda d: -len(d.parts))
        paths = sorted(add)
        try:
            for rel, text in add.items():
                write_atomic(brain.root / rel, text)
            sha = brain.repo.commit(paths, "pamd init --ci: nightly defrag workflow and pre-commit config\n\n"
                                    + "".join(f"Added: {rel}\n" for rel in paths)
                                    + "\nPamd-Run: init-ci\n", brain.author())
        except BaseException:
            _undo(brain.repo, brain.root, paths, {}, made)
            raise
    return paths, kept, sha


def _undo(repo: Repo, target: Path, paths: list[str], old: dict[str, str], made: list[Path]) -> None:
    """Take back a failed init (a hook refused its commit): unstage and remove what it
    wrote and give .gitignore and .gitattributes their old text (`old`), so the folder is
    as it was and a retry works."""
    try:
        repo.reset_paths(paths)
    except PamdError:
        pass  # nothing was staged yet
    for rel in paths:
        if rel in old:
            write_atomic(target / rel, old[rel])
        else:
            (target / rel).unlink(missing_ok=True)
    for d in made:  # deepest first
        try:
            d.rmdir()
        except OSError:
            pass
