"""A brain file or entry line named on a command line (FILE, PATH:LINE), as a path in the brain.

A relative name is taken from the cwd when the cwd is in the brain and holds it, else
from the brain's root: a hit's `MEMORY.md:12` from a project folder with PAMD_BRAIN set
means the brain's MEMORY.md, not the project's.
"""

from __future__ import annotations

from pathlib import Path

from pamd.errors import PamdError


def brain_rel(root: Path, name: str, dir_hint: str = "name its files, or run `pamd check` for the whole brain") -> str:
    """`name` as a posix path inside the brain at `root` (resolved); a PamdError when it is
    outside the brain, a directory, or no file."""
    path = Path(name).expanduser()
    if not path.is_absolute() and not (Path.cwd().resolve().is_relative_to(root) and path.exists()):
        path = root / path
    path = path.resolve()
    if not path.is_relative_to(root):
        raise PamdError(f"{name} is not inside the brain at {root}", "name a file of this brain")
    if path.is_dir():
        raise PamdError(f"{name} is a directory", dir_hint)
    if not path.is_file():
        raise PamdError(f"{name}: no such file in the brain", "`git ls-files` lists them")
    return path.relative_to(root).as_posix()


def cwd_ref(root: Path, ref: str) -> str:
    """PATH:LINE with PATH as brain_rel takes it; an id (or a malformed reference, which
    provenance.resolve_ref names) as it is."""
    path, sep, line = ref.strip().rpartition(":")
    if not sep or not path or ref.strip().startswith(("e-", "s-")) or not line.split("-")[0].isdigit():
        return ref
    return f"{brain_rel(root, path, dir_hint='name a file and a line in it')}:{line}"
