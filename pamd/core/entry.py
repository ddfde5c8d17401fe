"""The entry: one remembered message or summary, and helpers every stage shares."""

from __future__ import annotations

import hashlib
import math
import re
import unicodedata
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta

from pamd.errors import PamdError

TIERS = ("L0", "L1", "L2", "L3", "L4")
TYPES = ("decision", "user_intent", "context", "tool_result", "ephemeral")
NEURO = ("dopamine", "norepinephrine", "cortisol", "acetylcholine", "oxytocin", "serotonin")

# Letters and digits of any script (\w is Unicode), so "проект-альфа" stays itself;
# never whitespace, "=" or ",", which the header and metadata line split on.
_SAFE = re.compile(r"[^\w.:@+-]+")


def clean_token(value: str, limit: int = 64) -> str:
    """Make a role/session name safe for a one-line header: no spaces, no separators."""
    # NFC first: a decomposed letter (macOS file names) would otherwise lose its accent to a "-".
    return _SAFE.sub("-", unicodedata.normalize("NFC", value.strip()))[:limit].strip("-") or "-"


def utc(dt: datetime) -> datetime:
    """Aware UTC datetime truncated to seconds (naive input is taken as UTC)."""
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=UTC)
    return dt.astimezone(UTC).replace(microsecond=0)


def parse_time(value: str) -> datetime:
    """Parse ISO-8601 (with Z, offset, or naive=UTC) or epoch seconds/milliseconds."""
    s = str(value).strip()
    if re.fullmatch(r"\d{9,13}(\.\d+)?", s):
        x = float(s)
        return utc(datetime.fromtimestamp(x / 1000 if x > 1e11 else x, tz=UTC))
    if s.endswith(("Z", "z")):
        s = s[:-1] + "+00:00"
    try:
        dt = utc(datetime.fromisoformat(s))
    except OverflowError:  # year 1 or 9999 with an offset: outside datetime's range in UTC
        raise ValueError(f"time {value!r} out of range") from None
    # Years outside 1900..9998 are typos; they would also render as a header
    # that cannot be parsed back (strftime writes year 999 as "999").
    if not 1900 <= dt.year <= 9998:
        raise ValueError(f"year {dt.year} out of range")
    return dt


def time_bound(value: str, what: str, end_of_day: bool = False) -> datetime:
    """A time given as a bound (recall's since and until); with `end_of_day`, a date alone
    is that day's last second (`--until 2026-11-30` keeps the 30th). `what` names it in
    the error."""
    try:
        t = parse_time(value)
    except ValueError:
        raise PamdError(f"bad time {value!r} for {what}", "use ISO 8601, e.g. 2026-11-30") from None
    if end_of_day and re.fullmatch(r"\d{4}-\d{2}-\d{2}", value.strip()):
        t += timedelta(days=1, seconds=-1)
    return t


def fmt_time(dt: datetime) -> str:
    return utc(dt).strftime("%Y-%m-%dT%H:%M:%SZ")


def count_tokens(text: str) -> int:
    """Approximate LLM tokens: ~4 characters per token (deterministic, no tokenizer)."""
    return math.ceil(len(text) / 4) if text else 0


def entry_id(kind: str, *parts: str) -> str:
    """Stable id from content: `e-` raw entries, `s-` summaries; 12 hex digits."""
    digest = hashlib.sha256("\x1f".join(parts).encode("utf-8", "surrogatepass")).hexdigest()
    return f"{kind}-{digest[:12]}"


VIA_MAX = 3  # raw leaves an entry's `via=` keeps, the most recalled


def add_via(via: tuple[tuple[str, int], ...], more: dict[str, int]) -> tuple[tuple[str, int], ...]:
    """`via` with `more` recalls added per raw leaf: the VIA_MAX most recalled, most first."""
    counts = dict(via)
    for leaf, n in more.items():
        if n > 0 and leaf.startswith("e-"):  # a recall.log line may name other leaves: skip them
            counts[leaf] = counts.get(leaf, 0) + n
    return tuple(sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[:VIA_MAX])


@dataclass(frozen=True)
class Entry:
    """One memory. Raw entries (`e-…`) hold a message; summaries (`s-…`) list `sources`."""

    id: str
    ts: datetime
    role: str
    text: str
    session: str = "-"
    type: str = "context"
    importance: float = 0.5
    neuro: tuple[str, ...] = ()
    recalls: int = 0
    tier: str = "L0"
    sources: tuple[str, ...] = ()
    seen: str = ""  # date of the last recall (YYYY-MM-DD), for myelin demotion
    # Raw leaves behind this entry that recall matched, with how many of `recalls` each
    # drew, most first (recall.deep): what PRELOAD and a recalled reflex show for it.
    via: tuple[tuple[str, int], ...] = ()
    # Where the entry was read from (1-based, inclusive); not part of its identity.
    path: str = field(default="", compare=False)
    line_start: int = field(default=0, compare=False)
    line_end: int = field(default=0, compare=False)

    @property
    def is_summary(self) -> bool:
        return bool(self.sources)

    @property
    def tokens(self) -> int:
        return count_tokens(self.text)

    def age_hours(self, now: datetime) -> float:
        return max(0.0, (utc(now) - self.ts).total_seconds() / 3600.0)

    def with_(self, **changes) -> Entry:
        return replace(self, **changes)
