"""The compaction policy: a pure function from (entries, config, now) to a plan.

Time decides the level, importance moves the clock, retention decides the order
inside a level and what is dropped:

- A raw entry leaves L0 once its age passes the clock for its importance
  ([tiers] clock: trash at once, < 0.3 after 30 min, < 0.6 after 4 h, < 0.8
  after 24 h, else `critical_hours`). It then lands in the tier its age
  calls for (L1 < 12 h, L2 < 3 d, L3 < 7 d, else L4), never above L1.
- A summary moves on when its age passes its tier's upper bound.
- Leaving L0, an entry whose retention at the ordinary L0 age (`l0_hours`,
  or its clock if shorter) is under `drop_below` is dropped as trash (its raw text stays in history; the commit
  lists it by id). Tool output that nobody recalled goes this way. A myelinated
  entry (recalled `[myelin] thin` times or more) is never trash: it is compressed
  like any other, and its summary inherits the recalls (PRELOAD, DNA reflexes).
  An entry dated after `now` has not aged yet: it stays raw, never dropped.
- Over a tier's token budget, the lowest-retention entries move down first.
- `compact` moves entries as far as L2; `defrag` also to L3 and L4. A tier never
  goes backwards: an L3 entry past its 7 days waits in L3 for defrag.
- MEMORY.md (L4) has a budget too ([tiers.budgets] L4; 0 = none). Over it, defrag
  merges its lowest-retention, oldest pamd summaries (never a myelinated one, nor an
  entry that is no summary) into coarser L4 summaries, `[tiers] l4_merge_ratio`
  times smaller, four weeks to a summary: their `from=` keeps the way back to the
  raw messages (deep recall, `pamd expand`), and the commit names them. A merge keeps
  its most recalled source's `recalls=`, not their sum (which would myelinate it).

Entries that move together (same target tier, session and time bucket) become
one summary of `ratio` times fewer tokens.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from pamd.core.config import Settings, TiersSettings, settings
from pamd.core.entry import TIERS, TYPES, Entry, add_via, entry_id
from pamd.encode.hippocampus import COMPRESS, DROP, KEEP, decide, retention

# How wide a time bucket one summary of each tier covers, in hours.
BUCKET_HOURS = {"L1": 1, "L2": 6, "L3": 24, "L4": 24 * 7}
# MEMORY.md over its budget: how wide a bucket of its own summaries one merged summary covers.
MERGE_HOURS = 24 * 28
MERGE = "merge"  # the session part of a merge group's key
# A summary shorter than this says nothing useful (a one-liner needs a subject and a fact).
MIN_SUMMARY_TOKENS = {"L1": 16, "L2": 16, "L3": 24, "L4": 24}


@dataclass(frozen=True)
class Decision:
    entry: Entry
    retention: float
    action: str  # keep | compress | drop
    target: str  # the tier it ends up in (its own tier for keep)
    why: str


@dataclass
class Plan:
    now: datetime
    mode: str
    decisions: list[Decision] = field(default_factory=list)
    groups: dict[str, list[Entry]] = field(default_factory=dict)  # group key -> entries
    group_tier: dict[str, str] = field(default_factory=dict)

    @property
    def moving(self) -> list[Decision]:
        return [d for d in self.decisions if d.action == COMPRESS]

    @property
    def dropped(self) -> list[Decision]:
        return [d for d in self.decisions if d.action == DROP]

    @property
    def empty(self) -> bool:
        return not self.moving and not self.dropped


def tier_index(tier: str) -> int:
    return TIERS.index(tier)


def tier_for_age(hours: float, t: TiersSettings) -> str:
    if hours < float(t.l1_hours):
        return "L1"
    if hours < float(t.l2_hours):
        return "L2"
    if hours < float(t.l3_hours):
        return "L3"
    return "L4"


def l0_clock(importance: float, t: TiersSettings, trash_below: float) -> float:
    """Hours an entry of this importance stays raw in L0."""
    if importance < trash_below:
        return 0.0
    for row in t.clock:
        if importance < float(row.below):
            return float(row.hours)
    return float(t.critical_hours)


def upper_hours(tier: str, t: TiersSettings) -> float:
    return {"L1": float(t.l1_hours), "L2": float(t.l2_hours), "L3": float(t.l3_hours)}[tier]


def ratio(src: str, dst: str, config: Settings | Mapping[str, Any]) -> float:
    t = settings(config).tiers
    if src == dst == "L4":  # MEMORY.md's own summaries merged over its budget
        return max(1.0, float(t.l4_merge_ratio))
    r = t.ratios

    def of(tier: str) -> float:
        return 1.0 if tier == "L0" else float(r.get(tier, r["L3"]))

    return max(1.0, of(dst) / of(src))


def plan_compaction(entries: list[Entry], config: Settings | Mapping[str, Any], now: datetime,
                    mode: str = "compact") -> Plan:
    config = settings(config)
    t = config.tiers
    trash = float(config.neurotag.trash_below)
    ceiling = "L2" if mode == "compact" else "L4"
    # A memory recalled often enough to be myelinated is in use: never trash.
    thin = int(config.myelin.thin)
    plan = Plan(now=now, mode=mode)
    by_id: dict[str, Decision] = {}
    for e in entries:
        if e.tier == "L4":
            continue
        r = retention(e, config, now)
        age = e.age_hours(now)
        action, target, why = KEEP, e.tier, ""
        if e.tier == "L0":
            clock = l0_clock(e.importance, t, trash)
            if e.ts > now:
                # Dated after the run's clock (a skewed source, or a run with an earlier
                # --now): it has not aged at all yet, so nothing may judge it trash.
                why = f"dated {(e.ts - now).total_seconds() / 3600:.1f} h after now; waits"
            elif age >= clock:
                # Worth is judged at the ordinary L0 exit age (or earlier, for trash):
                # neither a late run (a laptop asleep for a week) nor the extra raw time
                # that importance buys may turn an entry into trash.
                judged = min(clock, float(t.l0_hours))
                r_exit = retention(e, config, e.ts + timedelta(hours=judged))
                if decide(r_exit, config) == DROP and e.recalls < thin:
                    action, target, why = DROP, "-", f"retention {r_exit:.2f} at {judged:g} h < drop_below"
                else:
                    target = max("L1", tier_for_age(age, t), key=tier_index)
                    action, why = COMPRESS, f"age {age:.1f} h >= {clock:g} h clock for importance {e.importance:.2f}"
                    if e.recalls >= thin and decide(r_exit, config) == DROP:
                        why += f"; recalled {e.recalls} times (myelinated), so not trash"
            else:
                why = f"age {age:.1f} h < {clock:g} h clock for importance {e.importance:.2f}"
        else:
            if age >= upper_hours(e.tier, t):
                target = tier_for_age(age, t)
                action, why = COMPRESS, f"age {age:.1f} h past {e.tier}'s {upper_hours(e.tier, t):g} h"
            else:
                why = f"age {age:.1f} h within {e.tier}"
        if action == COMPRESS and tier_index(target) > tier_index(ceiling):
            # A tier never goes backwards: an entry already at or past the ceiling
            # (an L3 one-liner in `compact`) stays where it is until defrag.
            if tier_index(e.tier) >= tier_index(ceiling):
                action, target = KEEP, e.tier
                why += f"; waits for defrag ({mode} stops at {ceiling})"
            else:
                target = ceiling
        by_id[e.id] = Decision(e, r, action, target, why)
    _enforce_budgets(by_id, config, ceiling)
    if mode == "defrag":
        _bound_memory(by_id, [e for e in entries if e.tier == "L4"], config, now)
    for e in entries:  # MEMORY.md's entries stay unless merged: `--plan` counts and lists them
        if e.tier == "L4" and e.id not in by_id:
            by_id[e.id] = Decision(e, retention(e, config, now), KEEP, "L4", "in MEMORY.md")
    plan.decisions = sorted(by_id.values(), key=lambda d: (tier_index(d.entry.tier), d.entry.ts))
    buckets: dict[str, list[Entry]] = {}
    for d in plan.moving:
        buckets.setdefault(group_key(d.entry, d.target), []).append(d.entry)
    caps = t.group_tokens
    for key, members in buckets.items():
        tier = key.split("|", 1)[0]
        # A merge of MEMORY.md's summaries is bounded by its bucket, not by raw tokens.
        cap = math.inf if key.split("|")[1] == MERGE else float(caps[tier])
        chunk: list[Entry] = []
        size = 0.0
        for e in sorted(members, key=lambda e: e.ts):
            raw = e.tokens * ratio("L0", e.tier, config)  # what it stood for in raw tokens
            if chunk and size + raw > cap:
                _add_group(plan, key, tier, chunk)
                chunk, size = [], 0.0
            chunk.append(e)
            size += raw
        _add_group(plan, key, tier, chunk)
    return plan


def _add_group(plan: Plan, key: str, tier: str, members: list[Entry]) -> None:
    k = f"{key}|{len(plan.groups):05d}"
    plan.groups[k] = members
    plan.group_tier[k] = tier


def _enforce_budgets(by_id: dict[str, Decision], config: Settings, ceiling: str) -> None:
    budgets = config.tiers.budgets
    for tier in ("L0", "L1", "L2", "L3"):
        if tier_index(tier) >= tier_index(ceiling):
            break
        budget = int(budgets.get(tier, 0))
        if budget <= 0:
            continue
        staying = [d for d in by_id.values() if d.action == KEEP and d.target == tier]
        incoming = sum(d.entry.tokens for d in by_id.values() if d.action == KEEP and d.target == tier)
        incoming += sum(math.ceil(d.entry.tokens / ratio(d.entry.tier, tier, config))
                        for d in by_id.values() if d.action == COMPRESS and d.target == tier)
        over = incoming - budget
        if over <= 0:
            continue
        nxt = TIERS[tier_index(tier) + 1]
        for d in sorted(staying, key=lambda d: (d.retention, d.entry.ts)):
            if over <= 0:
                break
            by_id[d.entry.id] = Decision(d.entry, d.retention, COMPRESS, nxt,
                                         f"{tier} over its {budget:,}-token budget; lowest retention moves first")
            over -= d.entry.tokens


def _bound_memory(by_id: dict[str, Decision], l4: list[Entry], config: Settings, now: datetime) -> None:
    """MEMORY.md over its budget: merge its lowest-retention, oldest summaries (see module doc)."""
    budget = int(config.tiers.budgets["L4"] or 0)
    if budget <= 0:
        return
    size = sum(e.tokens for e in l4)
    size += sum(math.ceil(d.entry.tokens / ratio(d.entry.tier, "L4", config))
                for d in by_id.values() if d.action == COMPRESS and d.target == "L4")
    over = size - budget
    if over <= 0:
        return
    thin = int(config.myelin.thin)
    k = ratio("L4", "L4", config)
    if k <= 1:  # a merge that shrinks nothing would be made again every night
        return
    # Only pamd's summaries: a myelinated one is in use, and an entry without `from=`
    # (a person's, by hand) has no way back to what it stood for.
    # One already at the shortest summary's size would only be made again, a commit every night.
    movable = [e for e in l4 if e.sources and e.recalls < thin and e.ts <= now
               and e.tokens > MIN_SUMMARY_TOKENS["L4"]]
    for e in sorted(movable, key=lambda e: (round(retention(e, config, now), 6), e.ts)):
        if over <= 0:
            break
        by_id[e.id] = Decision(e, retention(e, config, now), COMPRESS, "L4",
                               f"MEMORY.md over its {budget:,}-token budget; lowest retention, oldest "
                               f"merged first ({k:g}:1)")
        over -= e.tokens - math.ceil(e.tokens / k)


def group_key(e: Entry, target: str) -> str:
    if e.tier == target == "L4":
        return f"L4|{MERGE}|{math.floor(e.ts.timestamp() / 3600 / MERGE_HOURS)}"
    hours = BUCKET_HOURS[target]
    bucket = math.floor(e.ts.timestamp() / 3600 / hours)
    session = e.session if target in ("L1", "L2") else "*"
    return f"{target}|{session}|{bucket}"


_TYPE_RANK = {t: i for i, t in enumerate(TYPES)}  # decision first


def summary_entry(key: str, tier: str, sources: list[Entry], text: str) -> Entry:
    """The summary that replaces `sources`: newest time, strongest type, union of tags."""
    srcs = sorted(sources, key=lambda e: e.ts)
    sessions = {e.session for e in srcs}
    neuro = tuple(sorted({n for e in srcs for n in e.neuro}, key=lambda n: _neuro_rank(n)))
    recalls, via = sum(e.recalls for e in srcs), _via(srcs)
    if key.split("|")[1:2] == [MERGE]:
        # MEMORY.md's summaries merged for being little used (each below thin): their summed
        # recalls would make the merge thick (PRELOAD.md) or a reflex, growing the boot context
        recalls = max(e.recalls for e in srcs)
        via = _within(via, recalls)
    return Entry(
        id=entry_id("s", tier, *sorted(e.id for e in srcs)),
        ts=srcs[-1].ts,
        role="summary",
        text=text,
        session=sessions.pop() if len(sessions) == 1 else "mixed",
        type=min((e.type for e in srcs), key=lambda x: _TYPE_RANK.get(x, 9)),
        importance=max(e.importance for e in srcs),
        neuro=neuro,
        recalls=recalls,
        seen=max((e.seen for e in srcs), default=""),
        via=via,
        tier=tier,
        sources=tuple(e.id for e in srcs),
    )


def _within(via: tuple[tuple[str, int], ...], recalls: int) -> tuple[tuple[str, int], ...]:
    """`via` (most recalled first) cut to at most `recalls` recalls in all."""
    out = []
    for leaf, n in via:
        if min(n, recalls) > 0:
            out.append((leaf, min(n, recalls)))
            recalls -= min(n, recalls)
    return tuple(out)


def _via(srcs: list[Entry]) -> tuple[tuple[str, int], ...]:
    """What the recalls a summary inherits were of: its sources' `via=` leaves, and a raw
    source recalled itself (its own words). Recalls of an older summary's own words stay
    plain recalls: its text is gone from the tree, and history is not read here."""
    more: dict[str, int] = {}
    for e in srcs:
        for leaf, n in e.via:
            more[leaf] = more.get(leaf, 0) + n
        if not e.sources and e.recalls > 0 and e.id.startswith("e-"):
            more[e.id] = more.get(e.id, 0) + e.recalls
    return add_via((), more)


def _neuro_rank(tag: str) -> int:
    from pamd.core.entry import NEURO

    return NEURO.index(tag) if tag in NEURO else 99


def target_tokens(sources: list[Entry], tier: str, config: Settings | Mapping[str, Any]) -> int:
    config = settings(config)
    total = sum(math.ceil(e.tokens / ratio(e.tier, tier, config)) for e in sources)
    return max(MIN_SUMMARY_TOKENS.get(tier, 16), total)


def tier_counts(entries: list[Entry]) -> dict[str, tuple[int, int]]:
    out: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for e in entries:
        out[e.tier][0] += 1
        out[e.tier][1] += e.tokens
    return {t: (out[t][0], out[t][1]) for t in TIERS}
