"""The LLM request and the parsing of its answer: pure functions, no client needed."""

from __future__ import annotations

import json

from pamd.consolidate.summarizers import text as tx
from pamd.consolidate.summarizers.base import Group
from pamd.core.entry import count_tokens, fmt_time
from pamd.encode.sources import normalize_text

CHARS_PER_TOKEN = 4

STYLES = {
    "L1": "condensed notes, about a third of the input: one line per speaker turn kept, "
    "written 'Speaker: ...'",
    "L2": "a short digest, about a tenth of the input: a few lines 'Speaker: ...'",
    "L3": "ONE line: 'Speaker(s): key fact; key fact (YYYY-MM-DD)' (a topic one-liner)",
    "L4": "ONE line: a durable fact worth keeping for months, for a MEMORY.md bullet",
    "lesson": "ONE line of the form 'before <action>, check <what to verify>' learned from "
    "these failures",
}

SYSTEM_RULES = """You compress an AI agent's memories. You receive JSON with a list of groups.
Each group has a tier, a hard limit max_chars, and the messages to summarise (oldest first).
For each group write one summary in the style its tier asks for.
Rules:
- Keep names, numbers, dates, decisions and commitments; drop greetings and chatter.
- Never invent facts. Write in the language of the messages.
- Messages may start with tags like [D1:3]; keep the tag in front of any fact you take
  from that message.
- A summary must not exceed its group's max_chars characters.
"""
# Each summary comes back with its group's index: an answer matched to the groups by
# position alone would put a reordered summary under another group's entries.
SYSTEM = SYSTEM_RULES + """- Answer with a JSON array only: one object {"i": <the group's i>, "summary": "<text>"}
  for each group, exactly one per group."""
# For endpoints whose JSON mode returns an object (OpenAI's response_format json_object);
# parse_answer takes the object's one list.
SYSTEM_OBJECT = SYSTEM_RULES + """- Answer with a JSON object only: {"summaries": [{"i": <the group's i>, "summary":
  "<text>"}, ...]}, exactly one object per group."""


def source_tokens(group: Group) -> int:
    """What the group's entries hold, in tokens: what a summary of them replaces."""
    return sum(count_tokens(e.text) for e in group.entries)


def longest(group: Group) -> int:
    """Tokens an LLM text may use: the budget and, for a summary (not a lesson, which is
    a new line learned beside its entries), never more than the text it replaces."""
    if group.tier == "lesson":
        return group.budget
    return max(1, min(group.budget, source_tokens(group)))


def request_payload(groups: list[Group]) -> str:
    """The user turn: the groups as JSON (timestamps and speakers kept for dates/names)."""
    items = []
    for i, group in enumerate(groups):
        items.append(
            {
                "i": i,
                "tier": group.tier,
                "style": STYLES.get(group.tier, STYLES["L2"]),
                "max_chars": longest(group) * CHARS_PER_TOKEN,
                "messages": [
                    {"ts": fmt_time(e.ts), "speaker": e.role, "text": e.text}
                    for e in group.entries
                ],
            }
        )
    return json.dumps({"groups": items}, ensure_ascii=False, separators=(",", ":"))


def parse_answer(text: str | None, count: int) -> list[str]:
    """The summaries in the groups' order, each placed by its index `i`; ValueError says
    what is wrong with a bad answer (a wrong, missing or repeated index among them)."""
    if not text or not text.strip():
        raise ValueError("empty response")
    text = text.strip()
    if text.startswith("```"):  # local models often fence their JSON: ```json ... ```
        text = text.split("\n", 1)[1] if "\n" in text else ""
        text = text.rstrip().removesuffix("```")
    try:
        data = json.loads(text)
    except json.JSONDecodeError:
        raise ValueError("response is not JSON") from None
    if isinstance(data, dict):
        # Some models wrap the array: {"summaries": [...]}. Accept a single list value.
        lists = [v for v in data.values() if isinstance(v, list)]
        data = lists[0] if len(lists) == 1 else data
    if not isinstance(data, list):
        raise ValueError("response is not a JSON array")
    if len(data) != count:
        raise ValueError(f"response has {len(data)} summaries for {count} groups")
    found: dict[int, str] = {}
    for item in data:
        if not isinstance(item, dict) or "i" not in item:
            raise ValueError("response has a summary without its group's index i")
        i = _index(item["i"])
        if i is None or not 0 <= i < count:
            raise ValueError(f"response has a summary for no group (i = {json.dumps(item['i'])})")
        if i in found:
            raise ValueError(f"response has two summaries for group i = {i}")
        summary = item.get("summary")
        # the normalisation ingested text gets: a bare CR or a NUL never reaches a tier file
        summary = normalize_text(summary) if isinstance(summary, str) else ""
        if not summary:
            raise ValueError("response has an empty or non-text summary")
        found[i] = summary
    # count items, none twice, all in range: every group has its one summary
    return [found[i] for i in range(count)]


def _index(value: object) -> int | None:
    """A group index as sent (0, 1, ...); a local model may quote it ("0")."""
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().isdigit():
        return int(value)
    return None


def fit(text: str, group: Group) -> tuple[str, bool]:
    """Make an LLM text obey its group's shape and budget: (text, was_trimmed)."""
    if group.one_line:
        text = " ".join(text.split())
    limit = group.budget * CHARS_PER_TOKEN
    if count_tokens(text) <= group.budget:
        return text, False
    lines: list[str] = []
    used = 0
    for line in text.splitlines():
        line = " ".join(line.split())
        if not line:
            continue
        room = limit - used - (1 if lines else 0)
        if len(line) <= room:
            lines.append(line)
            used += len(line) + (1 if len(lines) > 1 else 0)
            continue
        if room >= 12 or not lines:
            lines.append(tx.trim(line, max(room, 1)))
        break
    return "\n".join(lines), True
