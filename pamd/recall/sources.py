"""Which brain files recall searches, and the tier each one answers to in `--tier`.

Everything a person or a stage may need to find again: MEMORY.md (L4), the
tier files, the daily archive, DNA.md and shared synapse knowledge. PRELOAD.md
is left out on purpose: it holds copies of myelinated entries that are
already indexed where they live.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

from pamd.core.paths import DAILY_DIR, DNA, MEMORY, SYNAPSE_DIR, TIER_DIRS
from pamd.edge.files import inside

# Tiers a user can name in --tier, besides L0-L4.
EXTRA_TIERS = ("daily", "dna", "synapse", "memory")
TIERS = ("L0", "L1", "L2", "L3", "L4", *EXTRA_TIERS)


def tier_for(rel: str) -> str | None:
    if rel == MEMORY:
        return "L4"
    if rel == DNA:
        return "dna"
    if not rel.endswith(".md"):
        return None
    for tier, d in TIER_DIRS.items():
        if rel.startswith(d + "/"):
            return tier
    if rel.startswith(DAILY_DIR + "/"):
        return "daily"
    if rel.startswith(SYNAPSE_DIR + "/"):
        return "synapse"
    if rel.startswith("memory/"):
        return "memory"
    return None


def source_files(root: Path, on_dir: Callable[[str], object] | None = None,
                 links: list[str] | None = None) -> list[tuple[str, str]]:
    """(brain-relative path, tier) of every searchable file, sorted.

    Runs before every recall (is the index fresh?), so it walks with os.scandir rather
    than Path.rglob: same files (symlinked directories are not entered, symlinked files
    count, nothing hidden), a fraction of the time. `on_dir(path)` is called with each
    folder that may hold one, the brain's own first, before it is read; `links` gains the
    searchable files that are symbolic links.
    """
    out: list[tuple[str, str]] = []
    if on_dir is not None:
        on_dir(str(root))
    for name in (MEMORY, DNA):
        if (root / name).is_file() and (not (root / name).is_symlink() or inside(root, root / name)):
            out.append((name, tier_for(name)))
            if links is not None and (root / name).is_symlink():
                links.append(name)
    for top in ("memory", SYNAPSE_DIR):
        base = root / top
        if base.is_dir():  # hidden names inside the brain are skipped; where the brain lives is not
            _walk(str(base), top, out, root, on_dir, links)
    return sorted(out)


def _walk(path: str, rel: str, out: list[tuple[str, str]], root: Path,
          on_dir: Callable[[str], object] | None, links: list[str] | None) -> None:
    if on_dir is not None:
        on_dir(path)
    try:
        with os.scandir(path) as it:
            entries = list(it)
    except OSError:
        return
    for e in entries:
        if e.name.startswith("."):
            continue
        sub = f"{rel}/{e.name}"
        try:
            if e.is_dir(follow_symlinks=False):
                _walk(e.path, sub, out, root, on_dir, links)
            elif e.name.endswith(".md") and e.is_file() and (not e.is_symlink() or inside(root, e.path)):
                tier = tier_for(sub)
                if tier:
                    out.append((sub, tier))
                    if links is not None and e.is_symlink():
                        links.append(sub)
        except OSError:
            continue
