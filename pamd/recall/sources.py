"""Which brain files recall searches, and the tier each one answers to in `--tier`.

Everything a person or a stage may need to find again: MEMORY.md (L4), the
tier files, the daily archive, DNA.md and shared synapse knowledge. PRELOAD.md
is left out on purpose: it holds copies of myelinated entries that are
already indexed where they live.
"""

from __future__ import annotations

from pathlib import Path

from pamd.edge.brain import DAILY_DIR, DNA, MEMORY, SYNAPSE_DIR, TIER_DIRS

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


def source_files(root: Path) -> list[tuple[str, str]]:
    """(brain-relative path, tier) of every searchable file, sorted."""
    out = []
    for name in (MEMORY, DNA):
        if (root / name).is_file():
            out.append((name, tier_for(name)))
    for top in ("memory", SYNAPSE_DIR):
        base = root / top
        if base.is_dir():
            for p in base.rglob("*.md"):
                rel = p.relative_to(root).as_posix()
                tier = tier_for(rel)
                if tier and p.is_file() and not any(part.startswith(".") for part in p.parts):
                    out.append((rel, tier))
    return sorted(out)
