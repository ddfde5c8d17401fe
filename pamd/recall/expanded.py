"""The raw messages behind summary hits (`pamd recall --expand`), walked back through
provenance in git history: those the query matched first, then the rest in time order."""

from __future__ import annotations

from pamd.consolidate.provenance import History, expand_ids
from pamd.core.entry import Entry, fmt_time
from pamd.errors import PamdError


class Expanded:
    """One summary hit's raw messages: those the query matched (rank order), the rest (time
    order), and the summaries they are behind."""

    def __init__(self, matched: list[Entry], rest: list[Entry], summaries: list[str],
                 error: str | None = None) -> None:
        self.matched, self.rest, self.summaries, self.error = matched, rest, summaries, error

    def lines(self, entries: list[Entry]) -> list[str]:
        return [f"{e.id} {fmt_time(e.ts)} {e.role}: {' '.join(e.text.split())[:200]}" for e in entries]

    def shown(self, n: int) -> list[Entry]:
        """At most n of the rest, in time order: those said nearest in time to a matched
        message (its context), else the first."""
        when = [e.ts.timestamp() for e in self.matched]

        def gap(i: int) -> tuple[float, int]:
            return min((abs(self.rest[i].ts.timestamp() - t) for t in when), default=0.0), i

        keep = sorted(sorted(range(len(self.rest)), key=gap)[:max(0, n)])
        return [self.rest[i] for i in keep]


def expand_hits(brain, hits) -> dict[int, Expanded]:
    """The raw messages behind each summary hit, by the hit's label."""
    out: dict[int, Expanded] = {}
    history = History(brain)  # one pass over history for every hit
    for h in hits:
        summaries = [i for i in h.ids if i.startswith("s-")]
        if not summaries:
            continue
        raw: dict[str, Entry] = {}
        try:
            found = expand_ids(brain, summaries, hist=history)
        except PamdError as exc:  # history lacks them (a shallow clone): the hit still counts
            out[h.label] = Expanded([], [], summaries, str(exc))
            continue
        for f in found:
            if not f.entry.sources:
                raw.setdefault(f.entry.id, f.entry)
        matched = [raw[i] for i in h.ids if i in raw and i not in h.entries]  # deep recall, rank order
        seen = {e.id for e in matched}
        rest = sorted((e for e in raw.values() if e.id not in seen), key=lambda e: e.ts)
        out[h.label] = Expanded(matched, rest, summaries)
    return out
