"""Lessons from failures: a failure and what resolved it -> one line for DNA.md.

A lesson needs both parts, each as it was written: the error (the line a tool printed,
an error the user pasted, or the sentence where the user or the agent said what failed)
and its resolution (a sentence saying how it was fixed or what caused it, or a `fix:`
commit). Without either there is no lesson. Tool output and the arguments of the
agent's tool calls are not sentences, and a plan ("Let me run the tests to see the
error") is no failure. `states_failure` says whether an entry holds a failure statement.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence

from pamd.consolidate.summarizers import text as tx
from pamd.core import toolcall
from pamd.core.entry import Entry

_FAILURE = re.compile(
    r"\b(?:fail\w*|error\w*|broke\w*|break\w*|crash\w*|exception|lost|outage|bug\w*|"
    r"timed? ?out|rollback|rolled back|down|wrong|ошибк\w*|упал\w*|упа[лд]\w*|слома\w*|"
    r"сбой\w*|потерял\w*|потеря\w*|откат\w*|баг\w*|не работает|не удалось)\b",
    re.IGNORECASE,
)
# A lesson's budget: the error and its fix, each as written.
LESSON_TOKENS = 70


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


@functools.lru_cache(maxsize=65536)  # an entry is immutable; each compaction asks again
def states_failure(entry: Entry) -> bool:
    """True if the user or the agent says in `entry` that something failed."""
    return any(map(_report, said([entry])))


# What says a failure was resolved, and how: "Fixed by …", "The cause was …", "works now".
RESOLVED = re.compile(
    r"\b(?:fixed|fixes|fix was|fix is|the fix|resolved|solved|the (?:issue|problem|cause|error|bug|culprit) "
    r"(?:was|is)|root cause|caused by|turned out|works now|now works|passes now|now pass(?:es)?|"
    r"workaround|replaced|switched to|the solution|исправ\w*|почин\w*|причина|решени\w*|"
    r"теперь работает|заработал\w*)(?!\w)",
    re.IGNORECASE,
)
_ERROR_CHARS = 150


def resolution(sentence: str) -> bool:
    """True if the sentence says how a failure was resolved (not a plan to, not a question)."""
    from pamd.consolidate.summarizers import facts

    return (bool(RESOLVED.search(sentence)) and not sentence.rstrip().endswith("?")
            and not facts.is_narration(sentence) and not facts.is_fragment(sentence)
            and len(sentence.split()) >= 4 and not _failure_only(sentence))


def _failure_only(sentence: str) -> bool:
    """A failure report whose resolution word is part of the failure ("the fix failed")."""
    m = RESOLVED.search(sentence)
    return bool(m and _failure_word(sentence[m.end():]) and not re.search(r"\b(?:now|теперь)\b", sentence, re.I))


@functools.lru_cache(maxsize=65536)  # an entry is immutable; each compaction asks again
def failure_text(entry: Entry) -> str:
    """The failure as it appeared in `entry`: the error line a tool printed (or that the
    user pasted), else the sentence where the user or the agent said what failed ("")."""
    from pamd.consolidate.summarizers import facts

    if entry.role == "tool" or entry.type == "tool_result":
        return facts.error_line(entry.text)
    if entry.text.startswith(toolcall.COMPACTION_HEAD):
        # the agent host's recap of the session retells, in its own words, failures that
        # happened (and were fixed) before it: its file list and its notes of work under way
        # ("… (NEW, currently has compile error)", "Currently fixing compile error in …") made
        # lessons whose failure was no error at all
        return ""
    pasted = facts.error_line(toolcall.prose(entry.text)) if entry.role == "user" else ""
    if pasted:
        return pasted
    for sentence in said([entry]):
        report = _report(sentence)  # from the clause that says it: "Let's be honest: the deploy failed"
        if _CHEERED.match(sentence):  # "Good — Tmux errors are safe": a relief, not a failure
            continue
        if (report and not _TABLE_ROW.search(sentence) and not resolution(sentence)
                and not facts.is_narration(report) and len(report.split()) >= 2):
            # as said, without the Markdown around it: "- **Compile error** at line 171: …"
            return " ".join(_BOLD.sub(r"\1", facts.clean(report)).split())
    return ""


_BOLD = re.compile(r"\*\*([^*\n]+)\*\*")
_CHEERED = re.compile(r"^(?:good|great|perfect|excellent|nice|ok(?:ay)?|отлично|хорошо)\b", re.IGNORECASE)
_STOP = frozenset("the and that this with from was were have has had not but for are into when then "
                  "than there their them they been being also only just now test tests error errors "
                  "failed fails failure fixed fix".split())


def fits(failing: Entry | None, failure: str, fix_entry: Entry | None, fix: str) -> bool:
    """Whether `fix` resolves `failure`: it speaks of what failed, or it is the next thing
    said after a failure the user or the agent stated (a tool's error needs the words)."""
    if related(failure, fix):
        return True
    stated = failing is not None and failing.role != "tool" and failing.type != "tool_result"
    return stated and fix_entry is not None and fix in fix_text([fix_entry])


def related(failure: str, fix: str) -> bool:
    """True if the fix speaks of what failed: they share a word or a name (its first four
    letters, so "сертификата" meets "сертификате" and "rate" meets "rates")."""
    def stems(text: str) -> set[str]:
        low = text.casefold()
        words = {w[:4] for w in re.findall(r"[^\W_\d]{4,}", low) if w not in _STOP}
        return words | set(re.findall(r"\w+(?:[./]\w+)+", low))  # names whole: foo/0, lib/a.ex
    return bool(stems(failure) & stems(fix))


def fix_text(entries: Sequence[Entry]) -> str:
    """How the failure was resolved, as the user or the agent said it, or the commit that
    fixed it ("")."""
    for entry in entries:
        found = _fix_in(entry)
        if found:
            return found
    return ""


@functools.lru_cache(maxsize=65536)
def _fix_in(entry: Entry) -> str:
    from pamd.consolidate.summarizers import facts

    for sentence in said([entry]):
        if resolution(sentence):
            return facts.clean(sentence)
    if entry.role == "assistant" and not entry.is_summary:
        for fact in _commit_facts(entry.text):
            if re.match(r'Committed "(?:fix|hotfix|bugfix)\b', fact, re.IGNORECASE):
                return fact
    return ""


def _commit_facts(text: str) -> list[str]:
    from pamd.consolidate.summarizers import facts

    starts = [m.start() for m in toolcall.CALL.finditer(text)]
    calls = [text[a:b] for a, b in zip(starts, [*starts[1:], len(text)], strict=False)]
    return [f for c in calls for f in facts.call_facts(c) if f.startswith("Committed ")]


def extract_lesson(entries: Sequence[Entry], max_chars: int = 280) -> str:
    """One line from a failure and what resolved it, both as they were written:
    `` `KeyError: 'rate'`: fixed by loading the ECB rates into the rates table ``.
    "" when either part is missing: a failure without its fix, or a fix without its
    failure, teaches nothing a reader could act on."""
    failure = next((t for e in entries if (t := failure_text(e))), "")
    if not failure:
        return ""
    first = _first_failing(entries)
    said_after = [e for e in entries if e is not first and e.role != "tool"]
    fix = fix_text(said_after)
    if fix and not fits(first, failure, said_after[0] if said_after else None, fix):
        fix = ""
    if not fix:
        # No sentence says how: the change an edit made, when a tool ran clean after it.
        fix = edit_fix(list(entries[entries.index(first) + 1:]), failure) if first is not None else ""
    if not fix or _same(fix, failure):
        return ""
    error = tx.trim(failure.replace("`", "'"), min(_ERROR_CHARS, max(max_chars // 2, 16)))
    made = _MADE.match(fix)
    if made and len(error) + len(fix) + 4 > max_chars:
        fix = made.group(1)  # the change as it was made says more than the reason given for it
    fix = fix[:1].lower() + fix[1:] if fix[:2] != fix[:2].upper() else fix
    fix = tx.trim(fix, max(max_chars - len(error) - 4, 8))
    if fix.count("`") % 2:
        fix = tx.trim(fix.replace("`", "'"), max(max_chars - len(error) - 4, 8))
    return tx.trim(f"`{error}`: {fix}", max_chars) if len(error) + len(fix) + 4 <= max_chars else ""


_EDITS = frozenset({"Edit", "MultiEdit", "Write", "NotebookEdit"})
# edit_fix's "reason (path: change)"
_MADE = re.compile(r"^.+ \(([^()\s]+: (?:added `.+`|`.+` -> `.+`))\)$")
# What the agent says before a change, without its lead: "I need to also import X" -> "import X".
_PLAN_LEAD = re.compile(
    r"^(?:(?:now|next|so|ok(?:ay)?|good|great|perfect|right|alright)[,.!:]?\s+)*"
    r"(?:i need to|i'll|i will|let me|i should|we need to|need to|i have to|i must)\s+(?:also\s+|just\s+)?",
    re.IGNORECASE)
_SHORT_CHANGE = 100


def is_edit(entry: Entry) -> bool:
    """True if the agent changes a file in `entry` (an Edit, MultiEdit or Write call)."""
    from pamd.consolidate.summarizers import facts

    return (entry.role == "assistant" and not entry.is_summary
            and any(facts._args(c)[0] in _EDITS for c in _calls(entry.text)))


def edit_fix(entries: Sequence[Entry], failure: str = "") -> str:
    """The first edit in `entries` that a tool ran clean after: the reason the agent gave
    for it and the change (`old` -> `new` when short) in its file ("" if none, or when it
    does not speak of `failure`: names no word or name of it)."""
    from pamd.consolidate.summarizers import facts

    for i, e in enumerate(entries):
        if e.role != "assistant" or e.is_summary:
            continue
        for call in _calls(e.text):
            name, args = facts._args(call)
            if name not in _EDITS or not args.get("file_path"):
                continue
            if not any(x.role == "tool" and not facts.error_line(x.text) for x in entries[i + 1:]):
                return ""
            path = "/".join(str(args["file_path"]).split("/")[-3:])
            old, new = (" ".join(str(args.get(k, "")).split()) for k in ("old_string", "new_string"))
            change = (f"`{old}` -> `{new}`" if old and new and max(len(old), len(new)) <= _SHORT_CHANGE
                      and "`" not in old + new else _added(str(args.get("old_string", "")),
                                                           str(args.get("new_string") or args.get("content") or "")))
            why = _reason(entries[: i + 1])
            if not why and not change:
                return ""
            if failure and not related(failure, " ".join((why, path.rsplit("/", 1)[-1], change))):
                return ""
            return f"{why} ({path}{': ' + change if change else ''})" if why else f"{path}: {change}"
    return ""


def _added(old: str, new: str) -> str:
    """The first line a change too long to quote whole added, as the lesson says it
    (`added `secret_key_base: "…"``): what was done, not only the file it was done in."""
    before = {" ".join(ln.split()) for ln in old.splitlines()}
    added: list[str] = []
    for line in new.splitlines():
        flat = " ".join(line.split())
        if not flat or flat in before or "`" in flat or flat.startswith(("#", "//", "--", "/*", "*", "@doc", '"""')):
            if added:
                break  # the first block of added lines only
            continue
        if added or (len(flat) >= 8 and _NAMES.search(flat)):
            if added and len(" ".join([*added, flat])) > _SHORT_CHANGE:
                break
            added.append(flat)
    return f"added `{tx.trim(' '.join(added), _SHORT_CHANGE)}`" if added else ""


def _reason(entries: Sequence[Entry]) -> str:
    """The last thing the agent said before an edit, as a plain statement of the change,
    when it names something (a name, a file, code, a number): "fix the test" says nothing."""
    from pamd.consolidate.summarizers import facts

    for e in reversed(entries):
        sentences = said([e]) if e.role == "assistant" else []
        if not sentences:
            continue
        for sentence in reversed(sentences):
            s = _PLAN_LEAD.sub("", facts.clean(sentence)).rstrip(" :.")
            if (len(s.split()) >= 3 and not facts.is_fragment(s) and not s.endswith("?")
                    and _NAMES.search(s)):
                return tx.trim(s[:1].upper() + s[1:] if s[:1].islower() else s, _REASON_CHARS)
        return ""
    return ""


_NAMES = re.compile(r"`[^`]+`|\w[\w-]*[._/:]\w|\d|\b[a-z]+[A-Z]\w*|\b[A-Z]\w*[A-Z]\w*|\b\w+_\w+")
_REASON_CHARS = 140


def _calls(text: str) -> list[str]:
    starts = [m.start() for m in toolcall.CALL.finditer(text)]
    return [text[a:b] for a, b in zip(starts, [*starts[1:], len(text)], strict=False)]


def _first_failing(entries: Sequence[Entry]) -> Entry | None:
    return next((e for e in entries if failure_text(e)), None)


def _same(a: str, b: str) -> bool:
    return " ".join(a.split()).casefold() == " ".join(b.split()).casefold()


def signature(text: str) -> str:
    """An error line without what changes between occurrences (numbers, paths, quoted
    values): two failures with one signature are the same failure met again."""
    text = re.sub(r"(?:[\w.-]*/)+[\w.-]+|\b0x[0-9a-f]+\b|\d+|'[^']*'|\"[^\"]*\"", "_", text.casefold())
    return " ".join(text.split())[:120]


# Cells of a Markdown table row: "| `af81c43` | spotter-fum.4 | Added … |".
_TABLE_ROW = re.compile(r"(?:^|\s)\|\s.*\s\|(?:\s|$)")
