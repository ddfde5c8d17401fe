"""What `pamd status` reports; data only, the command formats it."""

from __future__ import annotations

from collections import Counter
from datetime import datetime
from typing import Any

from pamd.core.config import settings
from pamd.core.entry import NEURO, TIERS, count_tokens
from pamd.edge.brain import Brain
from pamd.ops.spend import summarizer_spend

# The files every boot context holds whole (docs/format.md): DNA.md, PRELOAD.md and
# STATE.md are never cut; MEMORY.md's entries are, lowest retention first, its notes not.
BOOT_FILES = ("DNA.md", "PRELOAD.md", "STATE.md", "MEMORY.md")


def index_freshness(brain: Brain) -> str:
    try:
        from pamd.recall.freshness import freshness
    except ImportError:
        return "not available (install pamd[search])"
    return freshness(brain)


def status(brain: Brain, now: datetime) -> dict[str, Any]:
    entries = brain.load().entries
    s = settings(brain.config)
    budgets = s.tiers.budgets
    tiers = []
    for tier in TIERS:
        es = [e for e in entries if e.tier == tier]
        c = Counter(t for e in es for t in e.neuro)
        tiers.append({
            "tier": tier, "entries": len(es), "tokens": sum(e.tokens for e in es),
            "budget": int(budgets.get(tier, 0)),
            "neuro": " ".join(f"{t}:{c[t]}" for t in NEURO if c[t]),
            "trash": sum(1 for e in es if e.importance < float(s.neurotag.trash_below)),
        })
    log = brain.repo.log("-8", "--format=%h%x1f%cI%x1f%s", "--grep=^pamd ") if brain.repo.head() else ""
    commits = []
    for line in log.splitlines():
        sha, date, subject = line.split("\x1f", 2)
        commits.append({"sha": sha, "date": date, "subject": subject})
    return {"brain": str(brain.root), "name": s.brain.name,
            "now": now.isoformat(), "tiers": tiers, "commits": commits, "index": index_freshness(brain),
            "schedule": schedule(brain, now), "boot": boot_files(brain),
            "summarizer": summarizer_spend(brain, now)}


def boot_files(brain: Brain) -> dict[str, Any]:
    """Tokens of the files boot starts from, against `[boot] budget`. They grow with the
    brain's age (a lesson or a MEMORY.md fact a day; MEMORY.md's entries have their own budget,
    [tiers.budgets] L4, and pamd's DNA.md reflexes [myelin] dna_budget, but not a person's lines),
    so a person sees them here; past half the budget, a warning (boot cuts only entries)."""
    sizes = {}
    for rel in BOOT_FILES:
        path = brain.root / rel
        sizes[rel] = count_tokens(path.read_text(encoding="utf-8", errors="replace")) if path.is_file() else 0
    budget = int(settings(brain.config).boot.budget)
    uncut = sum(sizes[rel] for rel in BOOT_FILES[:3])
    warning = (f"DNA.md, PRELOAD.md and STATE.md, which boot never cuts, hold {uncut:,} tokens, "
               f"over half of [boot] budget = {budget:,}: prune your own lines in them, or lower "
               f"[myelin] dna_budget"
               if uncut > budget / 2 else None)
    return {"tokens": sizes, "budget": budget, "warning": warning}


def schedule(brain: Brain, now: datetime) -> dict[str, Any]:
    """The schedule of pamd.toml and what `pamd run-due` would run at `now`."""
    from pamd.consolidate.schedule import ahead, defrag_off, due

    sc = settings(brain.config).schedule
    at = str(sc.defrag_at)
    return {"compact_every_minutes": sc.compact_every_minutes,
            "defrag_at": "off" if defrag_off(at) else at, "due": due(brain, now),
            "ahead": ahead(brain, now)}
