"""`touch`: count an explicit recall ("I used this memory"), for the CLI and the agent's tool."""

from __future__ import annotations

from datetime import datetime

from pamd.consolidate.provenance import held_by, pulled, pulled_from
from pamd.errors import PamdError
from pamd.myelin import recall_log


def touch(brain, ids: list[str], now: datetime, hint: str) -> dict[str, str]:
    """Log one recall of each entry id; an id a summary in the tree stands for counts for that
    summary. Returns each id (once, in order) with the entry it was counted for."""
    holder = held_by(brain, set(ids))
    missing = sorted(set(ids) - set(holder))
    if missing:
        if name := pulled_from(brain, missing[0]):
            raise pulled(name, f"entry {missing[0]}", "touch")
        raise PamdError(f"no entry {missing[0]} in the brain's tiers, nor behind a summary in them", hint)
    # A raw message a summary stands for was the words used: the fold credits it to the
    # summary's via= (what PRELOAD shows for it), as a recall that matched it would.
    leaves = [(holder[i], i) for i in dict.fromkeys(ids) if holder[i] != i and i.startswith("e-")]
    recall_log.append(brain.state_dir, [holder[i] for i in ids], "(touch)", now, source="touch", leaves=leaves)
    return {i: holder[i] for i in dict.fromkeys(ids)}
