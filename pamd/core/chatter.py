"""An agent's narration: "Let me check…", "Now I'll…", "Perfect!", "Давайте посмотрим…".

Narration says what the agent is about to do or how it feels about what it just saw;
the facts are in the tool calls and results around it, and in its reports. A message
made of narration alone is chatter (ephemeral at encoding). A message that starts
with narration and then states something ("Let me fix this: the TTL was 90 s because
the sweep runs every 15 s") is kept whole: it is not chatter, and `without_narration` gives the
words without their narrating lead for whoever writes a summary line from it.

Pure: text in, answer out. Built-in English and Russian phrasing.
"""

from __future__ import annotations

import re

# An interjection that opens a sentence or stands alone: "Perfect!", "Good.", "Great, now…".
_INTERJECTION = re.compile(
    r"(?:perfect|great|good|excellent|nice|awesome|wonderful|fantastic|amazing|cool|ok(?:ay)?|alright|all right"
    r"|right|sure|got it|understood|i see|hmm+|ah|oh|yes|yep|now|so|done|all done"
    r"|отлично|хорошо|супер|прекрасно|замечательно|готово|понятно|ясно|итак|так|ок(?:ей)?|ага|да|ну)"
    r"(?:\s*[!.,:;…—–-]+\s*|\s*$)",
    re.IGNORECASE,
)
# What narration opens with: the agent announcing its next step or what it is looking at.
_OPENER = re.compile(
    r"(?:let(?:[’']s| me| us)|now(?:,)? (?:i(?:[’']ll| will| need| am going| want|[’']m going| can| should)|let|we)"
    r"|i(?:[’']ll| will| want to|[’']m going to| am going to| can now)"
    r"|(?:now|next|then),? (?:update|add|commit|push|check|run|stage|sync|create|write|implement|fix|remove|verify"
    r"|test|close|move|look|read|install|apply|merge|build|compile|start|finish|do|make|wire|clean|mark|file|claim"
    r"|open|edit|refactor|rename|replace|extract|search|find|try|review|format|rebuild|rerun|re-run)\b"
    r"|first,? (?:i|let)|next,? (?:i|let)|then,? (?:i|let)|finally,? (?:i|let)"
    r"|(?:now )?(?:looking|checking|reading|searching|running|trying|starting|updating|adding|fixing|creating"
    r"|writing|examining|investigating|verifying|testing|exploring|reviewing) (?:at |for |the |a |an |it|this|that"
    r"|all|some|my|our|again|now|with|if|whether|how|what|\w+\.\w+)"
    r"|(?:now )?i (?:see|notice|can see|understand|get it)\b"
    r"|(?:now )?i (?:now )?(?:have|got|found|know) (?:a |an |the |all |enough |everything|what|it\b|a clear|a good)"
    r"|time to\b|moving on\b|on to\b"
    r"|давай(?:те)?\b|теперь\b|сейчас\b|посмотр(?:ю|им)\b|провер(?:ю|им)\b|начн(?:у|ём|ем)\b"
    r"|приступ(?:аю|им)\b|займусь\b|изучу\b|запущу\b|исправлю\b|добавлю\b|обновлю\b|создам\b|попробую\b"
    r"|нужно (?:проверить|посмотреть)\b|вижу\b|понял\b)",
    re.IGNORECASE,
)
# What turns a narrating sentence into a statement worth keeping: a reason, a cause,
# a finding.
_CONTENT = re.compile(
    r"\b(?:because|since|so that|due to|caused by|instead of|rather than|turns out|the (?:issue|problem|bug|cause"
    r"|error|reason|fix|root cause) (?:is|was)|which means|returns?|returned|was set|is set|defaults? to)\b"
    r"|потому что|так как|из-за|вместо|оказалось|причина|проблема в",
    re.IGNORECASE,
)
# A later clause of a narrating sentence that states something ("Попробую ещё раз, сборка
# упала", "Let me retry, the build failed"): it has a predicate. One that asks (", why it
# failed") or lists what will be looked at (", the router and the tests") does not.
_CLAUSE = re.compile(r",\s+")
_ASKS = re.compile(r"(?:why|what|how|whether|if|where|which|when|почему|зачем|как|что|где|когда|ли)\b",
                   re.IGNORECASE)
_PREDICATE = re.compile(
    r"\b(?:is|are|was|were|failed|fails|broke|crashed|returns|returned|works|worked|passed|passes|hangs)\b"
    r"|\b\w{2,}(?:ла|ло|ли|ет|ют|ят|ит)\b", re.IGNORECASE)
# A clause after a colon or a dash: the statement the narration led into.
_AFTER = re.compile(r"(?::|\s[—–-])\s+(\S.*)", re.DOTALL)
_SENTENCES = re.compile(r"(?<=[.!?…])\s+|\n+")
_MAX_SENTENCE = 200
_MAX_MESSAGE = 800


def _sentences(text: str) -> list[str]:
    return [s.strip() for s in _SENTENCES.split(text) if s and s.strip()]


def _lead(sentence: str) -> tuple[bool, str]:
    """(whether the sentence narrates, what it says after its narrating lead)."""
    s = sentence.lstrip("*_#>•-– ").strip()
    had = False
    while True:
        m = _INTERJECTION.match(s)
        if not m or m.end() == 0:
            break
        s, had = s[m.end():].lstrip(), True
    if not s:
        return had, ""
    if not _OPENER.match(s):
        return False, s
    after = _AFTER.search(s)
    return True, after.group(1).strip() if after else ""


def is_narration(sentence: str) -> bool:
    """True if one sentence is narration or an interjection with nothing stated."""
    s = sentence.strip()
    if not s:
        return True
    if len(s) > _MAX_SENTENCE or _CONTENT.search(s):
        return False
    narrates, rest = _lead(s)
    if not narrates or len(rest.split()) >= 3:
        return False
    for clause in _CLAUSE.split(s)[1:]:
        if not (_OPENER.match(clause) or _ASKS.match(clause)) and _PREDICATE.search(clause):
            return False
    return True


def narration_only(text: str) -> bool:
    """True if every sentence of the message is narration (a message of chatter)."""
    text = text.strip()
    if not text or len(text) > _MAX_MESSAGE or "```" in text:
        return False
    return all(is_narration(s) for s in _sentences(text))


def without_narration(text: str) -> str:
    """The message without its narrating sentences and leads: what it states.

    "Perfect! Let me fix this: the TTL was 90 s." -> "the TTL was 90 s." A message of
    narration only gives ""."""
    lines = []
    for line in text.split("\n"):
        out = []
        for s in _sentences(line):
            if is_narration(s):
                continue
            narrates, rest = _lead(s)
            out.append(rest if narrates and rest else s)
        if out:
            lines.append(" ".join(out))
    return "\n".join(lines)
