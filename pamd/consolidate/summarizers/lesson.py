"""Lessons from failures: cortisol-tagged entries -> one line, "before X, check Y".

Myelination turns these lines into DNA reflexes. The extractive version finds the
failed action (X) in the most salient failure sentence and the cause or fix (Y) in
the sentences around it; the gemini backend writes the line itself (tier "lesson").
Both come from what the user and the agent wrote: tool output and the arguments of
the agent's tool calls are not sentences, and a plan ("Let me run the tests to see
the error") is no failure. `states_failure` says whether an entry holds a failure
statement; myelination learns lessons only from entries that do.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence
from typing import Any

from pamd.consolidate.summarizers import text as tx
from pamd.core import toolcall
from pamd.core.entry import Entry

_FAILURE = re.compile(
    r"\b(?:fail\w*|error\w*|broke\w*|break\w*|crash\w*|exception|lost|outage|bug\w*|"
    r"timed? ?out|rollback|rolled back|down|wrong|ошибк\w*|упал\w*|упа[лд]\w*|слома\w*|"
    r"сбой\w*|потерял\w*|потеря\w*|откат\w*|баг\w*|не работает|не удалось)\b",
    re.IGNORECASE,
)
_CAUSE = re.compile(
    r"\b(?:because(?: of)?|due to|since|caused by|root cause(?: was| is)?:?|the cause (?:was|is):?|"
    r"forgot(?: to)?|"
    r"missing|without|потому что|из-за|так как|забыл[иа]?|не хватало|без)\s+",
    re.IGNORECASE,
)
_FIX = re.compile(
    r"\b(?:fixed by|fix(?:ed)? (?:it )?by|solved by|resolved by|need(?:s|ed)? to|have to|"
    r"should(?: have)?|must|always|remember to|make sure(?: that)?|check(?: that)?|"
    r"исправил[иа]? (?:тем, что|через)|нужно|надо|следует|всегда|проверить|проверяй)\s+",
    re.IGNORECASE,
)
_NEGATION = re.compile(r"\b(was|were|is|are|had|has|have)(?: not|n't)\b", re.IGNORECASE)
_X_WORDS = 8
_Y_WORDS = 14


# What the agent says it is about to do, not what happened: "Let me run the suite to
# make sure nothing broke", "Now I'll check the error". It covers its own clause and the
# clauses that carry it on ("…, then look at the error"), not a report after a colon or a
# comma ("Let's be honest: the deploy failed", "Попробую ещё раз, сборка упала").
_PLAN = re.compile(
    r"^(?:(?:now|next|first|then|so|ok(?:ay)?|good|great|alright|а|теперь|сначала|потом)[,.!]?\s+)*"
    r"(?:let me|let's|let us|i'll|i will|i'm going to|i am going to|we'll|we will|"
    r"давай(?:те)?|попробую|проверю|посмотрю)\b",
    re.IGNORECASE,
)
_CLAUSES = re.compile(r"[,;:]\s+|\s+[—–-]\s+")
_GOES_ON = re.compile(
    r"^(?:and|then|to|or|so that|in order to|why|whether|if|и|потом|затем|чтобы|или|почему|ли)\b",
    re.IGNORECASE,
)
# Tool output inside a summary's line; a call's head splits a line into pieces.
_OUTPUT = re.compile(r"^\[tool (?:result|error)\]")
_BEFORE_TOOL = re.compile(r"\s+(?=\[tool )")


def said(entries: Sequence[Entry]) -> list[str]:
    """The sentences the user and the agent wrote in `entries`: no tool output (role
    tool, harness output typed tool_result), no tool call's arguments."""
    sentences: list[str] = []
    for entry in entries:
        if entry.role == "tool" or entry.type == "tool_result":
            continue
        text = entry.text if entry.is_summary else toolcall.prose(entry.text)
        for line in text.splitlines():
            if entry.is_summary:
                line, _ = tx.parse_date_suffix(line)
                speaker, line = tx.line_speaker(line.strip())
                if speaker == "tool":
                    continue
            for piece in _BEFORE_TOOL.split(line.strip()):
                if toolcall.is_call(piece) or _OUTPUT.match(piece):
                    continue
                _, piece = tx.lead_tag(piece)
                sentences.extend(tx.lead_tag(s)[1] for s in tx.split_sentences(piece))
    return [s for s in sentences if s]


@functools.cache
def _failure_words() -> re.Pattern[str]:
    """Our failure words and the tagger's own cortisol patterns (pamd/encode/rules/
    neurotag.toml) in one pattern: what tags an entry as a failure also says that a
    sentence states one, in every language. (Rules hold no backreferences, so the
    alternation keeps each pattern's meaning.)"""
    from pamd.encode.neurotag import builtin_rules

    patterns = [_FAILURE.pattern] + [p for r in builtin_rules().rules if r.kind == "cortisol"
                                     for p in r.patterns]
    return re.compile("|".join(f"(?:{p})" for p in patterns), re.IGNORECASE | re.MULTILINE)


# A failure word said not to have happened: "no errors", "0 failures", "without errors",
# "nothing failed", "doesn't fail", "no data loss", "ошибок нет", "без ошибок", "не
# падают", "регрессий нет". (The tagger's rules tag these too; they are no failure.)
_DENIED_BEFORE = re.compile(
    r"(?:\b(?:no|zero|0|without|nothing|never|not|нет|без|не|ни)|n[o'’]t)\s+"
    r"(?:(?:more|longer|further|any|single|new|больше|более|одной|одного)\s+)?$",
    re.IGNORECASE,
)
_DENIED_AFTER = re.compile(
    r"^\s*(?:[:=]\s*)?(?:нет|none|0|не (?:было|найдено|обнаружено|нашлось))(?!\w)", re.IGNORECASE)
# A failure word naming a kind of code or test, not a failure: "a regression test",
# "the error handling", "регрессионные тесты".
_KIND_OF = re.compile(r"^(?:regression|error|exception|регресс|исключени)", re.IGNORECASE)
_NAMES_KIND = re.compile(r"^\s+(?:tests?|suite|handling|handlers?|тест\w*)\b", re.IGNORECASE)
# A question is no report: "does it fail?", "Проверю, упадут ли тесты."
_ASKS = re.compile(r"\?\s*$|\bли\b", re.IGNORECASE)


def _denied(text: str, m: re.Match[str]) -> bool:
    """True if the failure word `m` is said not to have happened, or names a kind."""
    before, after = text[max(0, m.start() - 40):m.start()], text[m.end():]
    return bool(_DENIED_BEFORE.search(before) or _DENIED_AFTER.match(after)
                or (_KIND_OF.match(m.group()) and _NAMES_KIND.match(after)))


def _failure_word(text: str) -> re.Match[str] | None:
    """The first failure word in `text` that says something failed."""
    return next((m for m in _failure_words().finditer(text) if not _denied(text, m)), None)


def _report(sentence: str) -> str:
    """The sentence from its first clause that says something failed, outside what the
    agent says it is about to do ("" if none does): "Let's be honest: the deploy failed"
    -> "the deploy failed"."""
    if not _failure_word(sentence) or sentence.rstrip(" \"'»)").endswith("?"):
        return ""
    planning, start, said = False, 0, None
    for cut in (*_CLAUSES.finditer(sentence), None):
        end = cut.start() if cut else len(sentence)
        clause = sentence[start:end]
        planning = bool(_PLAN.match(clause)) or (planning and bool(_GOES_ON.match(clause)))
        if not planning:
            said = start if said is None else said  # "Staging deploy: failed …" stays whole
            if _failure_word(clause) and not _ASKS.search(clause):
                return sentence[said:]
        start = cut.end() if cut else end
    return ""


def _failures(sentences: list[str]) -> dict[str, str]:
    """The sentences that state a failure, each with the part of it that does."""
    return {s: r for s in sentences if (r := _report(s))}


def states_failure(entry: Entry) -> bool:
    """True if the user or the agent says in `entry` that something failed."""
    return any(map(_report, said([entry])))


def extract_lesson(entries: Sequence[Entry], max_chars: int = 160) -> str:
    """One line "before X, check Y" from failure entries (no model; deterministic)."""
    sentences = said(entries)
    failing = _failures(sentences)
    if not failing:  # myelination gives none such; a direct call gets a plain line
        text = "before repeating this, check what failed last time"
        return text if len(text) <= max_chars else text[: max_chars + 1].rsplit(" ", 1)[0]
    # The failure with the most facts first; a table row's cells, or a line cut through
    # inline code ("before ADD` without a default, …"), is a fragment no reader can use:
    # the next failure is tried, and with none left there is no lesson ("").
    for failure in sorted(failing, key=lambda s: (-_facts(s), sentences.index(s))):
        if _TABLE_ROW.search(failure):
            continue
        action = _action(failing[failure])
        check = _check(sentences, failure)
        for y in (check, "why it failed") if check else ("why it failed",):
            line = tx.trim(" ".join(f"before {action}, check {y}".split()), max_chars)
            if line.count("`") % 2 == 0:
                return line
    return ""


# Cells of a Markdown table row: "| `af81c43` | spotter-fum.4 | Added … |".
_TABLE_ROW = re.compile(r"(?:^|\s)\|\s.*\s\|(?:\s|$)")


def _facts(sentence: str) -> int:
    space = sentence.find(" ")
    caps = len(tx.CAPITAL.findall(sentence, space + 1)) if space > 0 else 0
    return caps + len(tx.NUMBER.findall(sentence)) + 2 * bool(_CAUSE.search(sentence))


# A label in front of a report ("Error:", "Incident:", "Root cause:", "Ошибка:"): not
# the action, and its failure word would hide the one in the sentence itself.
_LABEL = re.compile(r"^\s*[\w-]+(?: [\w-]+)?:\s+")
# Where one clause of a sentence ends: a dash, a semicolon, a colon (", " is kept: a
# check like "the rates table, not the cache" needs it).
_CLAUSE_END = re.compile(r"\s+[—–]\s+|\s+-\s+|;|:\s")
# "KeyError 'rate' when converting GBP invoices": the action is the when-clause.
_WHEN = re.compile(r"\b(?:when|while|during|при|во время|когда)\s+(\w.*)", re.IGNORECASE)
_BECAUSE = re.compile(r"\s(?:because|due to|since|caused by|потому что|из-за|так как)\s", re.IGNORECASE)
# "Now the tests fail", "Сейчас упал сервер": when it was said, not what was done.
_WHEN_SAID = re.compile(r"^(?:just now|right now|now|сейчас|теперь)[,]?\s+", re.IGNORECASE)
_CHECK_WORD = re.compile(r"^(?:check|verify|проверить|проверяй)(?: that)?\s+(?=\S+\s)", re.IGNORECASE)
_EDGE = " .,:;!?—–-\"'«»"


def _clause(text: str) -> str:
    """The text up to its first clause break."""
    return _CLAUSE_END.split(text, maxsplit=1)[0]


def _words(text: str, n: int) -> str:
    """The first n words of the text's first clause, without dangling punctuation."""
    words = _clause(text.strip(_EDGE)).split()[:n]
    return " ".join(words).strip(_EDGE)


def _action(failure: str) -> str:
    """The thing that was being done: the words before the failure word, or the
    "when ..." clause of a sentence that starts with the failure ("KeyError when X").

    A label in front ("Incident: the deploy failed") is tried without it first; when that
    leaves nothing before a failure word, the whole sentence is ("Deploy failed: timeout",
    "Staging deploy: failed because ..."), then the when-clause."""
    failure = _WHEN_SAID.sub("", failure)
    label = _LABEL.match(failure)
    rest = failure[label.end():] if label else failure
    words = _head(rest) or (_head(failure) if label else "")
    if not words:
        when = _WHEN.search(rest)
        # Up to the cause: "Exit code 1 from mix test because …" -> "exit code 1 from mix test".
        words = _words(_BECAUSE.split(when.group(1) if when else rest, maxsplit=1)[0], _X_WORDS)
    if not words:
        words = _words(failure, _X_WORDS)
    return words[:1].lower() + words[1:] if words[:2] != words[:2].upper() else words


def _head(text: str) -> str:
    """The words of `text` before its first failure word, up to a clause break."""
    m = _failure_word(text)
    head = _clause(text[: m.start()]) if m else ""
    # Drop auxiliaries left dangling before the failure verb ("the deploy has failed",
    # "mix test ended with exit code 1").
    head = re.sub(
        r"\b(?:has|have|had|was|were|is|got|keeps?|just|again|снова|опять|(?:ended |exited )?with)\s*$",
        "", head.strip(), flags=re.IGNORECASE,
    )
    return _words(head, _X_WORDS)


def _check(sentences: list[str], failure: str) -> str:
    """The cause or the fix: text after "because/due to/..." or "need to/should/..."."""
    ordered = [failure] + [s for s in sentences if s is not failure]
    for pattern in (_CAUSE, _FIX):
        for sentence in ordered:
            m = pattern.search(sentence)
            if m:
                found = _words(sentence[m.end() :], _Y_WORDS)
                if len(found.split()) >= 2:
                    # "check the migration was not applied" -> "... was applied": the
                    # lesson names what to verify, not what went wrong.
                    if pattern is _CAUSE:
                        return _NEGATION.sub(r"\1", found)
                    # "always check the WHERE clause" -> "the WHERE clause", not "check check ..."
                    return _CHECK_WORD.sub("", found, count=1)
    return ""


def lesson(entries: Sequence[Entry], config: dict[str, Any] | None = None) -> str:
    """A one-line lesson; written by the configured backend (extractive by default)."""
    from pamd.consolidate.summarizers import get_summarizer
    from pamd.consolidate.summarizers.base import Group

    if not entries:
        return ""
    group = Group(key="lesson", tier="lesson", entries=tuple(entries), target_tokens=40)
    texts, _ = get_summarizer(config or {}).summarize([group])
    return texts[0]
