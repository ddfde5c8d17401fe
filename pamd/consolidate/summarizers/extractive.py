"""Extractive summarizer: local, free, deterministic; keeps names, numbers, dates, decisions.

Each group's entries are cut into units (sentences; clauses for one-liners), each unit
is scored for salience, and units are taken greedily by score while their rendered size
fits the group's budget, then written back in chronological order. Budgets are counted
with the same 4-characters-per-token rule as `pamd.core.entry.count_tokens`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import date

from pamd.consolidate.summarizers import facts
from pamd.consolidate.summarizers import text as tx
from pamd.consolidate.summarizers.base import Group, Usage
from pamd.core import toolcall
from pamd.core.entry import Entry, count_tokens
from pamd.core.words import plural

CHARS_PER_TOKEN = 4
_TYPE_BONUS = {"decision": 1.0, "user_intent": 0.6, "context": 0.0}
# Sentences longer than this are cut into clauses even for L1/L2, so one rambling
# message cannot eat a whole budget or be dropped whole.
_LONG_SENTENCE = 280
# One-liner units longer than this are cut into clauses ("key phrases").
_LONG_PHRASE = 90


@dataclass(slots=True)
class _Unit:
    pos: int  # chronological position in the group
    msg: int  # index of the message (line) it came from
    text: str
    tag: str  # its own leading [..] tag, if any
    score: float
    words: frozenset[str]

    @property
    def size(self) -> int:
        return len(self.text) + (len(self.tag) + 1 if self.tag else 0)


@dataclass(slots=True)
class _Msg:
    speaker: str
    tag: str


class ExtractiveSummarizer:
    name = "extractive"
    model = "extractive"

    def summarize(self, groups: list[Group]) -> tuple[list[str], Usage]:
        usage = Usage(backend=self.name, model=self.model)
        return [summarize_group(g) for g in groups], usage


def summarize_group(group: Group) -> str:
    """The extractive summary of one group (one line for L3/L4/lesson)."""
    if group.tier == "lesson":
        from pamd.consolidate.summarizers.lesson import extract_lesson

        return extract_lesson(group.entries, group.budget * CHARS_PER_TOKEN)
    if group.tier == "state":
        return ""  # STATE.md's extractive snapshot is pamd.myelin.snapshot's, from the entries
    msgs, units, days = _units(group.entries, one_line=group.one_line)
    budget = group.budget * CHARS_PER_TOKEN
    agent = is_agent_group(group.entries)
    if not units:
        if agent:
            return tx.trim(NOTHING.format(n=plural(len(group.entries), "message")), budget)
        speakers = _speakers(msgs, range(len(msgs))) or "memory"
        return tx.trim(f"{speakers}: (no text)", budget)
    if group.one_line:
        # MEMORY.md's own summaries merged smaller (its budget) keep to theirs: no stretch.
        stretch = not all(e.tier == "L4" for e in group.entries)
        line = _one_line(msgs, units, days, budget, stretch)
        if stretch and count_tokens(line) > group.budget:
            # A person's statement past the group's tokens: its first clauses that fit, else
            # the line as any other group's.
            line = _one_line(msgs, units, days, budget, stretch, stretch_to=0)
            if count_tokens(line) > group.budget:
                line = _one_line(msgs, units, days, budget, False)
        return line
    return _lines(msgs, units, budget, each=agent)


# ----------------------------------------------------------------- units and scores


# Roles of an agent's session. Their lines are held to facts: narration ("Let me…"),
# fragments, tool calls that record nothing and tool output other than an error or a
# test tally are left out, and a call that records something becomes a statement.
AGENT_ROLES = frozenset({"assistant", "tool", "system"})
SESSION_ROLES = AGENT_ROLES | {"user"}
# What a summary says when none of its messages stated anything worth a line.
NOTHING = "(nothing to note from {n})"
_CALL_FACT_BONUS = 2.5
_ERROR_BONUS = 0.5
# A sentence of an agent kept whole in a one-liner is cut to this (never into clauses,
# which read as fragments out of their sentence).
_LONG_FACT = 240
_USER_LINE = 120  # a person's statement a one-line summary keeps whole, at most


def _agentish(speaker: str) -> bool:
    return any(n in AGENT_ROLES for n in speaker.split(", "))


def is_agent_group(entries: tuple[Entry, ...]) -> bool:
    """Entries of an agent's session (not a conversation between named people)."""
    for e in entries:
        if e.role in AGENT_ROLES:
            return True
        if e.is_summary:
            for line in e.text.splitlines():
                speaker, _ = tx.line_speaker(tx.parse_date_suffix(line)[0].strip())
                if speaker and _agentish(speaker):
                    return True
    return False


def _facts_of(entry: Entry, text: str, test_cmd: str = "", command: str = "") -> list[tuple[str, str, float]]:
    """(speaker, fact, bonus) of a raw message of an agent's session; `test_cmd`: the test
    command the agent ran last, which names the tests a tally counts; `command`: the
    command whose output a tool message is, when known."""
    if entry.role == "tool":
        out = []
        head = _LISTED.match(text)
        command = head.group(1) if head else command
        if command and toolcall.kind("Bash", {"command": command}) == toolcall.LISTING:
            found = facts.listing(command, text)
            if found:
                out.append(("tool", found, _CALL_FACT_BONUS))
            return out
        err = facts.error_line(text)
        if err:
            out.append(("tool", err, _ERROR_BONUS))
        tally = facts.test_result(text)
        if tally and not err:
            out.append(("tool", f"Test run `{test_cmd}`: {tally}" if test_cmd else f"Test run: {tally}", 0.5))
        push = facts.pushed(text)
        if push:
            out.append(("tool", push, _CALL_FACT_BONUS))
        made = facts.commit_made(text)
        if made:  # said here too, for a group that holds the output and not the call
            out.append(("tool", f'Committed {made[0]} "{made[1]}"', _CALL_FACT_BONUS))
        # the person's choice among the options the agent offered: a decision of theirs
        out += [("user", choice, _CALL_FACT_BONUS) for choice in facts.answered(text)]
        return out
    out = []
    prose = toolcall.prose(text)
    calls = text[len(prose):]
    if prose.startswith(toolcall.COMPACTION_HEAD):
        prose = facts.recap_events(prose)
    for sentence in tx.split_sentences(prose):
        if entry.role != "user":
            sentence = facts.clauses_said(sentence)
        if not sentence or facts.is_fragment(sentence) or (entry.role != "user" and facts.is_narration(sentence)):
            continue
        if entry.role == "user" and (sentence.rstrip().endswith("?") or facts.is_user_order(sentence)):
            continue  # a question is no fact ("did you push?"), an order is STATE's
        bonus = _USER_BONUS if entry.role == "user" and facts.is_user_statement(sentence) else 0.0
        out.append((entry.role, facts.clean(sentence), bonus))
    for call in _calls(calls):
        settings = facts.settings_facts(call)
        for fact in settings:
            out.append((entry.role, fact, _CALL_FACT_BONUS))
        for fact in facts.call_facts(call):
            if fact.startswith(("Edited ", "Wrote ")):
                if settings:
                    continue  # the file's settings name it and say more
                out.append((entry.role, fact, -1.5))
            else:
                out.append((entry.role, fact, _CALL_FACT_BONUS))
    return out


_LISTED = re.compile(r"\A\[tool result\] " + re.escape(toolcall.LISTING_HEAD) + r"(.+)")


def _commands(text: str) -> list[str]:
    """The shell commands of a message's calls, in order ("" for a call that runs none)."""
    out = []
    for call in _calls(text[len(toolcall.prose(text)):]):
        name, args = facts._args(call)
        out.append(toolcall.command(name, args) if name else "")
    return out


def _calls(text: str) -> list[str]:
    """Each `[tool NAME] …` call of a message's calls part, whole (arguments may hold newlines)."""
    starts = [m.start() for m in toolcall.CALL.finditer(text)]
    return [text[a:b].strip() for a, b in zip(starts, [*starts[1:], len(text)], strict=False)]


def _units(
    entries: tuple[Entry, ...], one_line: bool
) -> tuple[list[_Msg], list[_Unit], list[date]]:
    msgs: list[_Msg] = []
    units: list[_Unit] = []
    days: list[date] = []
    agent = is_agent_group(entries)
    test_cmd = ""
    pending: list[str] = []  # commands of calls whose output has not come yet, oldest first
    for entry in entries:
        days.append(entry.ts.date())
        command = ""
        if agent and entry.role == "assistant" and not entry.is_summary and "[tool " in entry.text:
            calls = _calls(entry.text[len(toolcall.prose(entry.text)):])
            test_cmd = next((c for c in map(facts.test_command, calls) if c), test_cmd)
            pending.extend(_commands(entry.text))
        elif agent and entry.role == "tool" and pending:
            command = pending.pop(0)
        weight = (
            2.0 * entry.importance
            + 0.4 * len(entry.neuro)
            + _TYPE_BONUS.get(entry.type, -0.5)
            + 0.2 * min(entry.recalls, 5)
        )
        made = facts.commit_made(entry.text) if agent and entry.role == "tool" and "commit" in command else None
        hashed = ""
        if agent and entry.role == "tool" and entry.text.startswith("[tool error]") and "commit" in command:
            subject = facts.commit_subject(command)  # its call's fact said "Committed": it was not
            for i in range(len(units) - 1, max(-1, len(units) - 40), -1):
                said = facts.failed_commit(units[i].text, subject)
                if said != units[i].text:
                    units[i].text = said
                    break
        if made:  # the commit's hash, from its output, on the fact its call gave
            for i in range(len(units) - 1, max(-1, len(units) - 40), -1):
                named = facts.with_hash(units[i].text, made)
                if named != units[i].text:
                    units[i].text, hashed = named, f"Committed {made[0]} "
                    break
        if agent and not entry.is_summary:
            opened: dict[str, int] = {}
            for speaker, fact, bonus in _facts_of(entry, entry.text, test_cmd, command):
                if hashed and fact.startswith(hashed):
                    continue  # the call's fact says it, with the message's body
                body = fact.rstrip(" .") if one_line else _ended(fact)
                if one_line:
                    body = facts.cut_at_clause(body, _LONG_FACT)
                    if not facts.is_kept(body):
                        continue
                if speaker not in opened:
                    msgs.append(_Msg(speaker=speaker, tag=""))
                    opened[speaker] = len(msgs) - 1
                score, words = _score(body, weight + bonus, first=True)
                units.append(_Unit(len(units), opened[speaker], body, "", score, words))
            continue
        # A tool call's JSON arguments are not sentences: a call is its gist here
        # ("[tool Bash] Show recent commits"), in a raw entry and in a summary's line.
        text = entry.text if entry.role == "tool" else toolcall.readable(entry.text, summary=entry.is_summary)
        lines = text.splitlines() if entry.is_summary else [text]
        for line in lines:
            speaker = entry.role
            if entry.is_summary:
                line, span = tx.parse_date_suffix(line)
                days.extend(span)
                found, line = tx.line_speaker(line)
                # A summary's own role ("summary") names no one: keep the speaker unknown.
                speaker = found or ""
            line = line.strip()
            if line.startswith(NOTHING[:18]):
                continue
            # A call's head names that call only, not the rest of a summary's line.
            msg_tag, line = ("", line) if toolcall.is_call(line) else tx.lead_tag(line)
            pieces = _pieces(line, one_line, entry.is_summary, clauses=not agent)
            if agent:
                pieces = _agent_pieces(pieces, speaker, one_line)
            if not pieces:
                continue
            msgs.append(_Msg(speaker=speaker, tag=msg_tag))
            output = entry.role == "tool" or speaker == "tool"
            for i, (piece, in_call) in enumerate(pieces):
                tag, body = tx.lead_tag(piece)
                if one_line:
                    body = body.rstrip(" .")
                if not body:
                    continue
                bonus = _record_bonus(body, speaker) if agent else 0.0
                score, words = _score(body, weight + bonus, first=i == 0, data=output or in_call,
                                      call=toolcall.is_call(piece))
                units.append(_Unit(len(units), len(msgs) - 1, body, tag, score, words))
    if one_line and any(u.text.startswith("Pushed ") and not u.text.startswith(_BARE_PUSH) for u in units):
        # A push that names nothing says less than the one its output named.
        units = [u for u in units if not u.text.startswith(_BARE_PUSH)]
    return msgs, units, days


_BARE_PUSH = "Pushed to the remote"
# What a summary's line of an agent's session is worth beyond its words, carried up the
# tiers: a file's settings and what was open are what a week later no one can re-derive.
# What the person said of their project (a decision, a preference, a fact: "we use X") weighs
# more: nothing else holds it, while STATE.md's settings list keeps every file's settings.
_SETTINGS_BONUS, _LISTING_BONUS, _USER_BONUS = 3.0, 1.5, 5.0


def _record_bonus(line: str, speaker: str = "") -> float:
    if speaker == "user" and facts.is_user_statement(line):
        return _USER_BONUS
    if re.match(facts.SETTINGS_FACT, line):
        return _SETTINGS_BONUS
    if line.startswith(("Listed by ", "Uncommitted")):
        return _LISTING_BONUS
    return 0.0


def _ended(fact: str) -> str:
    """A fact with a full stop when it ends in none, so facts of one line read apart."""
    return fact if fact[-1:] in ".!?…:;)\"'`»" else fact + "."


def _agent_pieces(pieces: list[tuple[str, bool]], speaker: str, one_line: bool) -> list[tuple[str, bool]]:
    """A summary line's pieces of an agent's session, held to facts (see AGENT_ROLES)."""
    out = []
    strict = _agentish(speaker)
    for piece, in_call in pieces:
        if toolcall.is_call(piece) or piece.startswith(("[tool result]", "[tool error]")):
            continue
        if in_call and toolcall.JSONISH.search(piece):
            continue
        if speaker == "tool" and not (facts.error_line(piece) or facts.test_result(piece)
                                      or facts.is_record(piece)):
            continue
        if strict:
            piece = facts.clauses_said(piece)
        if not piece or facts.is_fragment(piece) or (speaker != "user" and facts.is_narration(piece, agent=strict)):
            continue
        piece = facts.clean(piece)
        if not one_line:
            piece = _ended(piece)
        if one_line:
            piece = facts.cut_at_clause(piece, _LONG_FACT)
            if not facts.is_kept(piece) or (speaker == "user" and facts.is_user_order(piece)):
                continue
        out.append((piece, False))
    return out


def _pieces(line: str, one_line: bool, is_summary: bool, clauses: bool = True) -> list[tuple[str, bool]]:
    """The line's units, each with whether it belongs to a tool call (each call its own)."""
    out: list[tuple[str, bool]] = []
    for call in toolcall.split_calls(line):
        in_call = toolcall.is_call(call)
        for sentence in tx.split_sentences(call):
            parts = _whole_spans(tx.split_semicolons(sentence)) if is_summary else [sentence]
            for part in parts:
                limit = _LONG_PHRASE if one_line else _LONG_SENTENCE
                cut = clauses and len(part) > limit
                out.extend((c, in_call) for c in (tx.split_clauses(part) if cut else [part]))
    return out


def _whole_spans(parts: list[str]) -> list[str]:
    """Parts split at "; " joined back where the split fell inside a `code span`."""
    out: list[str] = []
    for part in parts:
        if out and out[-1].count("`") % 2:
            out[-1] += "; " + part
        else:
            out.append(part)
    return out


def _score(body: str, weight: float, first: bool, data: bool = False,
           call: bool = False) -> tuple[float, frozenset[str]]:
    """Salience of one unit (facts: names, numbers, dates, decisions; its entry's weight).

    `data`: the unit is tool output or part of a tool call, where JSON is not words.
    `call`: the unit is a call's gist, whose numbers and names are a command's arguments
    (`mix test test/a_test.exs:42`), not facts: it scores as a sentence without facts."""
    f = tx.features(body)
    if tx.FILLER.match(body):
        return -3.0 + 0.1 * weight, f.words
    if data and toolcall.JSONISH.search(body):
        # A piece of JSON (tool output, or what is left of a call an older summary cut
        # apart) is no sentence: taken only when there is nothing else, like filler. A
        # person's or the agent's sentence that quotes JSON or a path is scored as words.
        return -2.0 + 0.1 * weight, f.words
    facts = 0.0 if call else (
        0.6 * min(f.caps, 4)
        + 0.4 * min(f.numbers, 4)
        + 1.2 * min(f.dates, 2)
        + 1.0 * min(f.decisions, 2)
    )
    score = (
        1.0
        + facts
        + weight
        + (0.3 if first else 0.0)
        - (0.8 if f.n_words < 4 else 0.0)
    )
    # Mild length normalisation: a long sentence holds more facts but costs more budget.
    return score / (max(len(body), 40) / 40) ** 0.35, f.words


def _ranked(units: list[_Unit]) -> list[_Unit]:
    """Units by salience; filler ("ok", "thanks") only when there is nothing else."""
    ranked = sorted(units, key=lambda u: (-u.score, u.pos))
    useful = [u for u in ranked if u.score > 0]
    return useful or ranked


def _near_duplicate(unit: _Unit, kept: list[_Unit]) -> bool:
    """True if most of unit's words already appear in one kept unit (or the reverse), or
    one says what the other does."""
    words = unit.words
    if any(facts.same_fact(unit.text, k.text) for k in kept):
        return True
    if not words:
        return False
    for other in kept:
        small = min(len(words), len(other.words))
        if small and len(words & other.words) >= 0.8 * small and small >= 2:
            return True
    return False


# ----------------------------------------------------------------- L1 / L2: lines


def _lines(msgs: list[_Msg], units: list[_Unit], budget: int, each: bool = False) -> str:
    """"speaker: [tag] sentence sentence" lines; consecutive lines of one speaker merge
    (`each`: every message's a line of its own, as an agent's facts are written)."""
    kept: list[_Unit] = []
    opened: set[int] = set()
    used = 0
    for unit in _ranked(units):
        # Conservative cost: a line of its own for each new message (prefix + newline);
        # rendering merges lines of one speaker, so the real text is never longer.
        cost = unit.size + 1
        if unit.msg not in opened:
            msg = msgs[unit.msg]
            cost += len(msg.speaker) + 2 + (len(msg.tag) + 1 if msg.tag else 0)
        if used + cost > budget + 1 or _near_duplicate(unit, kept):
            continue
        kept.append(unit)
        opened.add(unit.msg)
        used += cost
    if not kept:
        return _fallback(msgs, units, budget)
    return _render_lines(msgs, sorted(kept, key=lambda u: u.pos), each)


def _render_lines(msgs: list[_Msg], kept: list[_Unit], each: bool = False) -> str:
    lines: list[str] = []
    speaker = None
    last_msg = -1
    for unit in kept:
        msg = msgs[unit.msg]
        parts = []
        if unit.msg != last_msg and msg.tag:
            parts.append(msg.tag)
        if unit.tag:
            parts.append(unit.tag)
        parts.append(unit.text)
        piece = " ".join(parts)
        if msg.speaker == speaker and lines and (not each or unit.msg == last_msg):
            lines[-1] += " " + piece
        else:
            lines.append(f"{msg.speaker}: {piece}" if msg.speaker else piece)
            speaker = msg.speaker
        last_msg = unit.msg
    return "\n".join(lines)


# ----------------------------------------------------------------- L3 / L4: one line


def _one_line(msgs: list[_Msg], units: list[_Unit], days: list[date], budget: int, stretch: bool = True,
              stretch_to: int = _USER_LINE) -> str:
    """"speakers: phrase; phrase (dates)", dropping speakers/dates when the budget is tiny."""
    suffix = f" ({tx.date_range(min(days), max(days))})" if days else ""
    all_speakers = _speakers(msgs, range(len(msgs)))
    prefix_room = len(all_speakers) + 2 if all_speakers else 0
    if prefix_room > 0.3 * budget:
        prefix_room = 0
    if len(suffix) > 0.3 * (budget - prefix_room):
        suffix = ""
    room = budget - prefix_room - len(suffix)
    kept: list[_Unit] = []
    opened: set[int] = set()
    used = -2  # the first phrase has no "; " before it
    for unit in _ranked(units):
        cost = unit.size + 2
        if unit.msg not in opened and msgs[unit.msg].tag:
            cost += len(msgs[unit.msg].tag) + 1
        if (stretch and used + cost > room and not kept and msgs[unit.msg].speaker == "user"
                and facts.is_user_statement(unit.text)):
            # The person's own statement ranks first and does not fit: it is the line, whole
            # (up to a clause past the budget), rather than a lesser phrase that fits.
            limit = max(room - len("user: "), stretch_to, 1)
            text = facts.cut_at_clause(unit.text, limit) or unit.text[:limit]
            return f"user: {text}" + (suffix if len(text) + len(suffix) <= stretch_to + 20 else "")
        if used + cost > room or _near_duplicate(unit, kept):
            continue
        kept.append(unit)
        opened.add(unit.msg)
        used += cost
    best = _ranked(units)[0]
    if not kept or sum(u.score for u in kept) < 0.5 * best.score:
        # A tiny budget filled with minor phrases says less than the best one, cut.
        prefix = f"{_speakers(msgs, [best.msg])}: " if prefix_room else ""
        room = max(budget - len(prefix) - len(suffix), 1)
        text = _tagged(msgs, best, True, room)
        cut = facts.cut_at_clause(text, room)
        return prefix + (cut if cut and len(cut) <= room else tx.trim(text, room)) + suffix
    kept.sort(key=lambda u: u.pos)
    phrases = []
    last_msg = -1
    for unit in kept:
        phrases.append(_tagged(msgs, unit, unit.msg != last_msg))
        last_msg = unit.msg
    prefix = f"{_speakers(msgs, sorted({u.msg for u in kept}))}: " if prefix_room else ""
    return prefix + "; ".join(phrases) + suffix


def _tagged(msgs: list[_Msg], unit: _Unit, first_of_msg: bool, room: int = 1 << 30) -> str:
    """The unit's text with its tags; tags are left out when they'd leave < 16 chars of text."""
    tags = len(msgs[unit.msg].tag) + len(unit.tag) + 2
    if room - tags < 16:
        return " ".join(unit.text.split())
    parts = []
    if first_of_msg and msgs[unit.msg].tag:
        parts.append(msgs[unit.msg].tag)
    if unit.tag:
        parts.append(unit.tag)
    parts.append(" ".join(unit.text.split()))
    return " ".join(parts)


def _speakers(msgs: list[_Msg], indices) -> str:
    """Distinct speakers in order of appearance; more than three shown as "A, B, C +N"."""
    names: list[str] = []
    for i in indices:
        for name in msgs[i].speaker.split(", "):
            if name and name not in names:
                names.append(name)
    if len(names) > 3:
        return ", ".join(names[:3]) + f" +{len(names) - 3}"
    return ", ".join(names)


def _fallback(msgs: list[_Msg], units: list[_Unit], budget: int) -> str:
    """Nothing fits whole: the most salient unit, cut at a word boundary to the budget."""
    best = _ranked(units)[0]
    prefix = f"{msgs[best.msg].speaker}: "
    if len(prefix) > budget // 3:
        prefix = ""
    room = max(budget - len(prefix), 1)
    return prefix + tx.trim(_tagged(msgs, best, True, room), room)

