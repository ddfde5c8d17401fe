"""STATE.md's `settings`: the settings and names the work set, one line per subject.

A subject is a file and what it sets (`lib/app/store.ex: `@ttl_seconds 90``, an env
variable and its default, a route, a config key), as the fact extractor states a Write or
Edit (`facts.settings_facts`). The newest value of a subject wins, and the list is carried
from one STATE.md to the next, so a setting stays known after its messages were compacted
into summaries too short to name it, the way DNA.md keeps a lesson: outside the tiers'
ratios, bounded by its own budget (`[myelin] settings_budget`, newest subjects first).

Each line ends with the time of the value `(YYYY-MM-DD HH:MM)`, UTC. A value stated by a
raw message newer than that replaces the line; a summary's only fills a subject the list
lacks (every raw message is seen raw by one run before a summary stands for it, and a
summary's time is its newest source's, not the time of each of its lines). So a person's
correction of a line holds until the work sets that subject again; a line a person deletes
comes back while a raw message in the tree still states it. Everything here comes from
stored entries, redacted at ingest like the rest of the brain.
"""

from __future__ import annotations

import functools
import re
from datetime import datetime
from typing import Any

from pamd.core.config import MyelinSettings
from pamd.core.entry import Entry, count_tokens
from pamd.core.fmt import item_text

DEFAULT_BUDGET = MyelinSettings.settings_budget  # tokens of the lines' text ([myelin] settings_budget)
_WHEN = re.compile(r"\s+\((\d{4}-\d\d-\d\d)(?:[ T](\d\d:\d\d))?Z?\)$")
_HEAD = re.compile(r"^([\w.~/-]+\.\w+|[\w.~/-]+/[\w.~/-]+): (.+)$")
_NAMES = (
    (re.compile(r"^`(@\w+) "), None),  # `@ttl_seconds 90`
    (re.compile(r"^`([A-Za-z_][\w.-]*)\s*(?:=|:)\s"), None),  # `MAX_RETRIES = 5`, `pool_size: 10`
    (re.compile(r"^(env `\w+`)"), None),  # env `PORT` (default 1100)
    (re.compile(r"^(route `[^`]+`)"), None),  # route `GET /x` → Ctrl
)


def _items(what: str) -> list[str]:
    """The items of a settings fact's list, split at commas outside `code` and (brackets)."""
    out, depth, tick, cur = [], 0, False, ""
    i = 0
    while i < len(what):
        ch = what[i]
        if ch == "`":
            tick = not tick
        elif not tick and ch == "(":
            depth += 1
        elif not tick and ch == ")":
            depth = max(0, depth - 1)
        if not tick and depth == 0 and what.startswith(", ", i):
            out.append(cur.strip())
            cur, i = "", i + 2
            continue
        cur += ch
        i += 1
    if cur.strip():
        out.append(cur.strip())
    return [o.rstrip("…").strip() for o in out if o and not o.endswith("…") and o.count("`") % 2 == 0]


def subject(line: str) -> str:
    """What a line is about, as a key: its file and the name it sets (the line itself when it
    names neither, a person's own wording)."""
    line = _WHEN.sub("", " ".join(line.split()))
    m = _HEAD.match(line)
    if not m:
        return line.lower()
    for pattern, _ in _NAMES:
        name = pattern.match(m.group(2))
        if name:
            return f"{m.group(1)} {name.group(1)}"
    return line.lower()


def split_fact(fact: str) -> list[str]:
    """One line per subject of a settings fact ("a/b.ex: `@x 1`, env `Y`" -> two lines)."""
    m = _HEAD.match(" ".join(fact.split()))
    if not m:
        return []
    return [f"{m.group(1)}: {item}" for item in _items(m.group(2))]


def _stamp(ts: datetime) -> str:
    return ts.strftime("%Y-%m-%d %H:%M")


def when(line: str) -> str:
    """The time a line's value was set ("YYYY-MM-DD HH:MM"; "" when the line has none)."""
    m = _WHEN.search(line)
    if not m:
        return ""
    return f"{m.group(1)} {m.group(2) or '00:00'}"


def without_time(line: str) -> str:
    return _WHEN.sub("", line)


@functools.lru_cache(maxsize=65536)  # an entry is immutable; each compaction asks again
def facts_of(e: Entry) -> tuple[str, ...]:
    """The settings lines an entry states: a raw Write/Edit call's, a summary's settings facts."""
    from pamd.consolidate.summarizers import facts
    from pamd.core import toolcall

    out: list[str] = []
    if not e.is_summary:
        if e.role != "assistant" or "[tool " not in e.text:
            return ()
        starts = [m.start() for m in toolcall.CALL.finditer(e.text)]
        for a, b in zip(starts, [*starts[1:], len(e.text)], strict=False):
            for fact in facts.settings_facts(e.text[a:b]):
                out += split_fact(fact)
        return tuple(out)
    from pamd.consolidate.summarizers import text as tx

    for line in e.text.splitlines():
        line, _ = tx.parse_date_suffix(line)
        _, line = tx.line_speaker(line.strip())
        for part in line.split("; "):
            if re.match(facts.SETTINGS_FACT, part.strip()):
                out += split_fact(part.strip())
    return tuple(out)


def _better(new: str, old: str) -> bool:
    """A line that only names what the older one also gave a value for says less: it does
    not replace it (`env `PORT`` after `env `PORT` (default 1100)`)."""
    return not without_time(old).startswith(without_time(new))


def index(entries: list[Entry], previous: Any, budget: int = DEFAULT_BUDGET) -> list[str]:
    """The settings lines: the previous list's, updated from the entries (oldest first), one
    per subject, newest first, within `budget` tokens of text (0: no bound)."""
    lines: dict[str, str] = {}
    for item in previous if isinstance(previous, list) else []:
        text = item_text(item)
        text = " ".join(str(item if text is None else text).split())
        if text:
            lines.setdefault(subject(text), text)
    for e in sorted(entries, key=lambda e: e.ts):
        for fact in facts_of(e):
            key, line = subject(fact), f"{fact} ({_stamp(e.ts)})"
            old = lines.get(key)
            if old is None:
                lines[key] = line
            elif not e.is_summary and when(old) and _stamp(e.ts) > when(old) and _better(fact, old):
                lines[key] = line
    # a person's line without a time first, then newest first; ties keep the order seen
    ordered = sorted(lines.values(), key=lambda ln: when(ln) or "9999", reverse=True)
    if budget <= 0:
        return ordered
    out, used = [], 0
    for line in ordered:
        used += count_tokens(line)
        if used > budget:
            break
        out.append(line)
    return out


def merge(base: Any, ours: Any, theirs: Any) -> list[str]:
    """Two clones' lists where both changed (`pamd sync`): every subject of either side, the
    newer value where both have one; a subject one side removed (a person's deletion, or
    pamd's budget) stays out unless the other side set it anew."""
    def keyed(v: Any) -> dict[str, str]:
        out: dict[str, str] = {}
        for item in v if isinstance(v, list) else []:
            text = item_text(item)
            text = " ".join(str(item if text is None else text).split())
            out.setdefault(subject(text), text)
        return out

    b, o, t = keyed(base), keyed(ours), keyed(theirs)
    out: dict[str, str] = {}
    for side, other in ((o, t), (t, o)):
        for key, line in side.items():
            if key in b and key not in other and b[key] == line:
                continue  # the other side removed it, this side left it as it was
            have = out.get(key)
            if have is None or (when(line) or "9999") > (when(have) or "9999"):
                out[key] = line
    return sorted(out.values(), key=lambda ln: when(ln) or "9999", reverse=True)
