"""The LLM request and the parsing of its answer: pure functions, no client needed."""

from __future__ import annotations

import json
import re
from importlib import resources
from typing import Any

from pamd.consolidate.summarizers import text as tx
from pamd.consolidate.summarizers.base import Group
from pamd.core.entry import count_tokens, fmt_time
from pamd.encode.sources import normalize_text

CHARS_PER_TOKEN = 4

# What the prompt files are called in instructions/: the shared contract, then one per tier.
INSTRUCTION_TIERS = ("L1", "L2", "L3", "L4", "lesson", "state")

# Short reminders of each tier's style, sent with every group (the files hold the examples).
STYLES = {
    "L1": "condensed notes, about a third of the input: one fact per line",
    "L2": "a short digest, about a tenth of the input: a few facts",
    "L3": "ONE line: a topic one-liner, key facts and the date range (YYYY-MM-DD)",
    "L4": "ONE line: a durable fact worth keeping for months, for a MEMORY.md bullet",
    "lesson": "ONE line: the error as it appeared in backticks, a colon, the fix as it was made; "
    "no fact when either is missing",
    "state": "facts starting 'done: ', 'open: ' or 'focus: ' (one focus at most): what was finished, "
    "what is still open, what the agent was on last",
}


def instructions(name: str) -> str:
    """One prompt file shipped in the package (instructions/NAME.md)."""
    return resources.files("pamd.consolidate.summarizers").joinpath(
        "instructions", f"{name}.md").read_text(encoding="utf-8")


def _system(answer_shape: str) -> str:
    parts = [instructions("system")]
    parts += [instructions(t) for t in INSTRUCTION_TIERS]
    return "\n\n".join(p.strip() for p in parts) + "\n\n" + answer_shape + "\n"


# The fact contract every LLM backend asks for and every answer is checked against: per
# group its index i (an answer matched by position alone would put a reordered summary
# under another group's entries) and its facts, each citing the ids of its messages.
FACT = {
    "type": "object",
    "properties": {
        "text": {"type": "string"},
        "sources": {"type": "array", "items": {"type": "string"}},
    },
    "required": ["text", "sources"],
}
GROUP_FACTS = {
    "type": "object",
    "properties": {"i": {"type": "integer"}, "facts": {"type": "array", "items": FACT}},
    "required": ["i", "facts"],
}
SCHEMA = {
    "type": "object",
    "properties": {"summaries": {"type": "array", "items": GROUP_FACTS}},
    "required": ["summaries"],
}

ANSWER_OBJECT = (
    'Answer with the JSON object only: {"summaries": [{"i": <the group\'s i>, "facts": '
    '[{"text": "...", "sources": ["<message id>", ...]}, ...]}, ...]}, exactly one item per group.'
)
ANSWER_ARRAY = (
    'Answer with a JSON array only: one item {"i": <the group\'s i>, "facts": [{"text": "...", '
    '"sources": ["<message id>", ...]}, ...]} for each group, exactly one per group.'
)
# For schema-constrained endpoints that return the bare array (gemini's responseSchema).
SYSTEM = _system(ANSWER_ARRAY)
# For endpoints whose JSON mode or tool returns an object (OpenAI's json_object, anthropic).
SYSTEM_OBJECT = _system(ANSWER_OBJECT)

# Agent narration and chatter: never a fact, whatever a model writes.
NARRATION = re.compile(
    r"^\W*(let me|let's|let us|i'll|i will|i'm going to|i am going to|now i|now let|perfect|great|"
    r"excellent|awesome|ok|okay|sure|got it|thanks|thank you|hello|hi|hey|давай|давайте|сейчас|"
    r"отлично|хорошо|понял|спасибо|привет)\b",
    re.IGNORECASE,
)


def source_tokens(group: Group) -> int:
    """What the group's entries hold, in tokens: what a summary of them replaces."""
    return sum(count_tokens(e.text) for e in group.entries)


def longest(group: Group) -> int:
    """Tokens an LLM text may use: the budget and, for a summary (not a lesson, which is
    a new line learned beside its entries), never more than the text it replaces."""
    if group.tier in ("lesson", "state"):  # new text beside its entries, replacing none
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
                    {"id": e.id, "ts": fmt_time(e.ts), "speaker": e.role, "text": e.text}
                    for e in group.entries
                ],
            }
        )
    return json.dumps({"groups": items}, ensure_ascii=False, separators=(",", ":"))


class Refused(str):
    """A group's facts that broke the contract (the text says how): that group alone falls
    back, the rest of its batch stands."""


def parse_answer(answer: str | Any, groups: list[Group] | int) -> list[str]:
    """The summaries in the groups' order, each placed by its index `i` and made of its
    facts. ValueError says what is wrong with an answer as a whole (not JSON, a wrong,
    missing or repeated index); a group whose facts break the contract (no facts, a fact
    without text or sources, a source not among its group's messages, nothing but
    narration) gets a `Refused` saying why. `answer` is the model's text or parsed JSON."""
    if isinstance(groups, int):  # the count alone: sources are checked for their form only
        count, ids = groups, None
    else:
        count, ids = len(groups), [{e.id for e in g.entries} for g in groups]
    data = _load(answer) if isinstance(answer, str) or answer is None else answer
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
        one_line = not isinstance(groups, int) and groups[i].one_line
        try:
            found[i] = _facts_text(item.get("facts"), None if ids is None else ids[i], one_line)
        except ValueError as exc:
            found[i] = Refused(str(exc))
    # count items, none twice, all in range: every group has its one summary
    return [found[i] for i in range(count)]


def _load(text: str | None) -> Any:
    if not text or not text.strip():
        raise ValueError("empty response")
    text = text.strip()
    if text.startswith("```"):  # local models often fence their JSON: ```json ... ```
        text = text.split("\n", 1)[1] if "\n" in text else ""
        text = text.rstrip().removesuffix("```")
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        raise ValueError("response is not JSON") from None


def _facts_text(facts: Any, ids: set[str] | None, one_line: bool) -> str:
    """A group's facts checked and joined: one per line, or "; " for a one-liner."""
    if not isinstance(facts, list) or not facts:
        raise ValueError("no facts")
    kept: list[str] = []
    for fact in facts:
        if not isinstance(fact, dict) or not isinstance(fact.get("text"), str):
            raise ValueError("a fact without text")
        sources = fact.get("sources")
        if not isinstance(sources, list) or not sources or not all(isinstance(s, str) for s in sources):
            raise ValueError("a fact without sources")
        if ids is not None:
            unknown = [s for s in sources if s not in ids]
            if unknown:
                raise ValueError(f"a fact cites {unknown[0]!r}, not one of its group's messages")
        # the normalisation ingested text gets: a bare CR or a NUL never reaches a tier file
        text = " ".join(normalize_text(fact["text"]).split())
        if text and not NARRATION.match(text):
            kept.append(text)
    if not kept:
        raise ValueError("only narration or empty facts")
    return "; ".join(kept) if one_line else "\n".join(kept)


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
