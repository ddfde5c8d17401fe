"""The brain's file names: where each part of a brain lives, relative to its root."""

from __future__ import annotations

CONFIG = "pamd.toml"
MEMORY, DNA, STATE, PRELOAD = "MEMORY.md", "DNA.md", "STATE.md", "PRELOAD.md"
TIER_DIRS = {"L0": "memory/L0", "L1": "memory/L1", "L2": "memory/L2", "L3": "memory/L3"}
DAILY_DIR = "memory/daily"
SYNAPSE_DIR = "synapse"
STATE_DIR = ".pamd"  # pamd's own state in a brain (journal, lock, index), ignored by git


def tier_of(path: str) -> str | None:
    """Which tier a brain-relative path holds entries of (None: not an entry file)."""
    if path == MEMORY:
        return "L4"
    for tier, d in TIER_DIRS.items():
        if path.startswith(d + "/") and path.endswith(".md"):
            return tier
    return None


def tier_path(tier: str, day: str) -> str:
    return f"{TIER_DIRS[tier]}/{day}.md"
