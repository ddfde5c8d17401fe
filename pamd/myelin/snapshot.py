"""STATE.md: what the agent was doing and thinking, refreshed by each compaction.

Extractive, from the last day of work: the user's last standing instruction, work
done (commits, closed items, pushes), work open (`active_goals`: todo and tracker items
not finished, an instruction nothing was delivered after), the focus, hypotheses (the
sentences that hedge: "maybe", "I think", "возможно") and the failure the work ended
on, if any (`emotional_context`). The previous snapshot stays in
history: `pamd state --at` reads it back. A person's goals and hypotheses are
kept in `pinned_goals` / `pinned_hypotheses`, which pamd never rewrites.
"""

from __future__ import annotations

import functools
import re
from datetime import datetime, timedelta
from typing import Any

from pamd.core import toolcall
from pamd.core.entry import Entry, fmt_time
from pamd.core.fmt import FormatError, dump_yaml, item_text, split_frontmatter
from pamd.errors import PamdError
from pamd.myelin import settings_index

WINDOW_HOURS = 24
# The STATE.md keys pamd remakes from the entries at every compaction (a person's pinned_*
# keys are not among them): `pamd sync` takes these whole from the side that wrote last, but
# `settings`, which it merges subject by subject (pamd.ops.fmmerge).
SNAPSHOT_KEYS = ("updated", "last_instruction", "user_said", "active_goals", "done", "current_focus",
                 "hypotheses", "emotional_context", "settings")
_BARE_PUSH = "Pushed to the remote"
_HEDGE = re.compile(r"\b(maybe|might|perhaps|probably|i think|i suspect|hypothes\w*|my guess|likely|"
                    r"возможно|наверное|похоже|гипотез\w*|кажется)\b", re.I)


def _clip(text: str, n: int = 160) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= n else flat[: n - 1].rsplit(" ", 1)[0] + "…"


# Claude Code records a typed slash command as markup: `<command-message>x</command-message>
# <command-name>/x</command-name> <command-args>…</command-args>`. STATE shows what was typed.
_CC_MESSAGE = re.compile(r"<command-message>[\s\S]*?</command-message>\s*")
_CC_TAG = re.compile(r"</?command-(?:name|args)>")


def _typed(text: str) -> str:
    if "<command-name>" not in text:
        return text
    return _CC_TAG.sub(" ", _CC_MESSAGE.sub("", text)).strip()


def _words(e: Entry) -> str:
    """What STATE shows of an entry: a tool call as its gist, never its JSON arguments."""
    return e.text if e.role == "tool" else _typed(toolcall.readable(e.text, summary=e.is_summary))


# A fact of finished work, as the summarizers write it (pamd.consolidate.summarizers.facts).
_DONE = re.compile(r"^(?:Committed|Closed|Pushed|Merged|Opened|Released|Deployed) \S")
_QUESTION = re.compile(r"\?\s*$")
# A tracker item taken up or created (`bd update X --status in_progress`, `bd create`, `gh issue create`).
_TAKEN = re.compile(r"\b(?:bd|br|beads)\s+update\s+([\w.-]+)[^|;&]*--(?:status[ =](?:in_progress|blocked)|claim)")
_BLOCKED = re.compile(r"\b(?:bd|br|beads)\s+update\s+([\w.-]+)[^|;&]*--status[ =]blocked")
_MARKUP = re.compile(r"^\s*<(?:system-reminder|local-command|command-|task-notification)|^\[Request interrupted")
DONE_ITEMS, OPEN_ITEMS, USER_ITEMS = 8, 6, 8
# An open item of a tracker or a todo list, as the snapshot writes it: "billing-9 (in progress)".
_ITEM = re.compile(r"^(.+?) \((?:in progress|blocked|pending|open(?:: .*)?)\)$")
_CREATED = re.compile(r"\bCreated (?:issue|task|bug|bead|ticket):? ([A-Za-z][\w-]*-[\w.]+)")
_CREATE_TITLE = re.compile(r"\b(?:bd|br|beads|gh issue)\s+create\b[^|;&]*?--title[= ]\\?\""
                           r"((?:[^\"\\]|\\.){1,120}?)\\?\"")


def _said_lines(e: Entry) -> list[tuple[str, str]]:
    """(speaker, line) of an entry: a raw message whole, a summary line by line."""
    if not e.is_summary:
        return [(e.role, e.text)]
    from pamd.consolidate.summarizers import text as tx

    out = []
    for line in e.text.splitlines():
        line, _ = tx.parse_date_suffix(line)
        speaker, line = tx.line_speaker(line.strip())
        out.append((speaker, line))
    return out


@functools.lru_cache(maxsize=65536)  # an entry is immutable; each compaction asks again
def _done_facts(e: Entry) -> tuple[tuple[str, str], ...]:
    return tuple(_done_facts_of(e))


def _done_facts_of(e: Entry) -> list[tuple[str, str]]:
    """(what was done, the day it was: YYYY-MM-DD): a raw call's, or a summary line's (its
    date suffix, else the summary's own day)."""
    from pamd.consolidate.summarizers import facts
    from pamd.consolidate.summarizers import text as tx

    day = e.ts.strftime("%Y-%m-%d")
    if not e.is_summary:
        if e.role != "assistant" or "Bash" not in e.text:  # finished work is a Bash call's
            return []
        return [(f, day) for call in _calls(e.text) for f in facts.call_facts(call) if _DONE.match(f)]
    out = []
    for line in e.text.splitlines():
        line, days = tx.parse_date_suffix(line)
        _, line = tx.line_speaker(line.strip())
        on = days[0].isoformat() if days else day
        out += [(p.strip(), on) for p in line.split("; ") if _DONE.match(p.strip())]
    return out


def _name_commit(done: list[str], made: tuple[str, str]) -> None:
    from pamd.consolidate.summarizers import facts

    for i in range(len(done) - 1, max(-1, len(done) - 8), -1):
        named = facts.with_hash(done[i], made)
        if named != done[i]:
            done[i] = named
            return


@functools.lru_cache(maxsize=65536)
def _commit_made(e: Entry) -> tuple[str, str] | None:
    from pamd.consolidate.summarizers import facts

    return facts.commit_made(e.text) if e.role == "tool" and not e.is_summary and "] " in e.text else None


def _calls(text: str) -> list[str]:
    starts = [m.start() for m in toolcall.CALL.finditer(text)]
    return [text[a:b] for a, b in zip(starts, [*starts[1:], len(text)], strict=False)]


@functools.lru_cache(maxsize=65536)
def _todos(e: Entry) -> tuple[tuple[str, str], ...]:
    return tuple(_todos_of(e))


def _todos_of(e: Entry) -> list[tuple[str, str]]:
    """(content, status) of the items of a TodoWrite call."""
    from pamd.consolidate.summarizers.facts import _args

    if "TodoWrite" not in e.text:  # a call's name is written in it
        return []
    out = []
    for call in _calls(e.text):
        name, args = _args(call)
        if name == "TodoWrite" and isinstance(args.get("todos"), list):
            out += [(str(t.get("content", "")), str(t.get("status", ""))) for t in args["todos"]
                    if isinstance(t, dict) and t.get("content")]
    return out


@functools.lru_cache(maxsize=65536)
def _tracker(e: Entry) -> tuple[tuple[str, str, str], ...]:
    """What `e` does to a tracker: ("taken", id, status), ("title", "", a new item's title),
    ("created", id, "") from the tracker's own output."""
    out = []
    if not e.is_summary and e.role == "assistant" and "[tool " in e.text:
        for call in _calls(e.text):
            for m in _TAKEN.finditer(call):
                out.append(("taken", m.group(1), "blocked" if _BLOCKED.search(call) else "in progress"))
            title = _CREATE_TITLE.search(call)
            if title:
                out.append(("title", "", title.group(1).replace('\\"', '"')))
    if not e.is_summary and e.role == "tool" and "Created " in e.text:
        out += [("created", m.group(1), "") for m in _CREATED.finditer(e.text)]
    return tuple(out)


@functools.lru_cache(maxsize=65536)
def _titles(e: Entry) -> tuple[tuple[str, str], ...]:
    """(id, title) of the tracker items an entry shows: a raw tool output's `show` or listing
    lines, a summary's "Listed by" statements."""
    from pamd.consolidate.summarizers import facts

    if not e.is_summary:
        return tuple(facts.item_titles(e.text).items()) if e.role == "tool" else ()
    return tuple((i, t) for _, line in _said_lines(e) for part in line.split("; ")
                 for i, t in facts.listed_titles(part).items())


_BARE_CLOSE = re.compile(r"^Closed ((?:[A-Za-z][\w.-]*)(?:, [A-Za-z][\w.-]*)*)$")


def _titled(done: list[str], titles: dict[str, str]) -> list[str]:
    """A close without a reason says what was closed: "Closed abc-4: Add the export"."""
    out = []
    for d in done:
        m = _BARE_CLOSE.match(d)
        ids = m.group(1).split(", ") if m else []
        named = [(i, titles[i]) for i in ids if titles.get(i)]
        if named and len(ids) == 1:
            d = f"{d}: {named[0][1]}"
        elif named:
            d = f"{d}: " + "; ".join(f"{i} {t}" for i, t in named)
        out.append(d)
    return out


def _instruction(e: Entry) -> str:
    """What the user asked in `e`, when it is a standing instruction ("" for a question, a
    one-word answer, the harness's markup)."""
    from pamd.consolidate.summarizers import text as tx

    for speaker, line in reversed(_said_lines(e)):
        if (speaker or e.role) != "user":
            continue
        text = " ".join(_typed(line).split())
        asks = _QUESTION.search(text) and len(tx.split_sentences(_typed(line))) <= 1
        if _MARKUP.match(text) or asks or len(text.split()) < 3 or text.startswith(_ANSWERED):
            continue
        return _clip(text, 300)
    return ""


_DONE_ON = re.compile(r" \((\d{4}-\d\d-\d\d)\)$")  # the day a done item was done, as STATE.md writes it
_ANSWERED = 'Asked "'  # a summary's line of the person's answer to a question: not an instruction
_SAID_AT = re.compile(r" \(\d{4}-\d\d-\d\d \d\d:\d\d\)$")
_OPTIONS = re.compile(r'^(asked ".*?") \(.*?\)(: the user answered ")')
_SAID_CONTEXT = re.compile(r"^\((?:to|after refusing) [^\n]*?\) ")
_QUESTION_END = re.compile(r"([^.!?\n]{4,}\?)\s*$")


def _said_key(item: str) -> str:
    """The person's words of a `user_said` item, without the context and time pamd adds."""
    said = " ".join(_SAID_CONTEXT.sub("", _SAID_AT.sub("", item)).split()).lower().rstrip(" .!")
    return _OPTIONS.sub(r"\1\2", said)  # the same answer, whether the options were known or not


def said_besides(said: list[Any], instruction: Any) -> list[Any]:
    """`user_said` without the last instruction, which boot shows under a label of its own."""
    key = _said_key(_clip(str(instruction or ""), 240))
    return [i for i in said if not isinstance(i, str) or _said_key(i) != key]


def _said_at(item: str) -> str:
    m = _SAID_AT.search(item)
    return m.group(0) if m else ""


def _user_said(entries: list[Entry]) -> list[str]:
    """The person's own words, oldest first, each with its time: what they typed (a short
    reply with the agent's question it answers, words after refusing a tool call with that
    call), their answers to the choices the agent offered, and what summaries kept of them.
    A person writes little in an agent's session and every line of it steers the work."""
    from pamd.consolidate.summarizers import facts

    out: list[list[str]] = []  # [what was said, when]
    # per session (a subagent's transcript interleaves with its parent's): the question the
    # agent asked last, its last call, the call the person refused, the options it offered,
    # the person's question its next words answer
    asked: dict[str, str] = {}
    last_call: dict[str, str] = {}
    refused: dict[str, str] = {}
    offered: dict[str, dict[str, list[str]]] = {}
    waiting: dict[str, list[str]] = {}
    for e in entries:
        at, s = e.ts.strftime("%Y-%m-%d %H:%M"), e.session
        if e.is_summary:
            # (an answer to the agent's question is read from its raw message, which names
            # the options offered, and carried over from there)
            out += [[_clip(line, 240), at] for speaker, line in _said_lines(e)
                    if speaker == "user" and len(line.split()) >= 2 and not line.startswith(_ANSWERED)]
        elif e.role == "assistant":
            said = toolcall.prose(e.text).strip()
            names = [m.group(1) for m in toolcall.CALL.finditer(e.text)]
            last_call[s] = names[-1] if names else last_call.get(s, "")
            if "AskUserQuestion" in names:
                for call in _calls(e.text):
                    offered.setdefault(s, {}).update(facts.offered(call))
            q = _QUESTION_END.search(said) if said.endswith("?") else None
            asked[s] = _clip(q.group(1).strip(" *"), 140) if q else ("" if said else asked.get(s, ""))
            if said and waiting.get(s):  # the person asked; these are the agent's first words back
                told = [x for x in _sentences(said) if not facts.is_narration(x)]
                reply = " ".join(told[:2]) if told and told[0].endswith(":") else (told[0] if told else "")
                reply = reply.split("```")[0].rstrip(" :")  # prose, not the code block it introduces
                if reply:
                    waiting.pop(s)[0] += f' → the agent: "{_clip(reply, 140)}"'
        elif e.role == "tool":
            for question, answer in facts.answers(e.text) if "User has answered" in e.text else ():
                options = next((o for q, o in offered.get(s, {}).items() if q[:60] == question[:60]), [])
                choice = f'Asked "{_clip(question, 160)}"' + (
                    f" ({' / '.join(_clip(o, 60) for o in options[:4])})" if options else "")
                out.append([f'{choice}: the user answered "{_clip(answer, 200)}"', at])
            if facts.REJECTED in e.text:
                refused[s] = last_call.get(s, "") or "a tool call"
        elif e.role == "user":
            text = " ".join(_typed(e.text).split())
            if _MARKUP.match(text) or len(text.split()) < 2:
                continue
            lead = (f"(after refusing {refused[s]}) " if refused.get(s)
                    else f'(to "{asked[s]}") ' if asked.get(s) and len(text.split()) <= 15 else "")
            out.append([f"{lead}{_clip(text, 240)}", at])
            asked[s] = refused[s] = ""
            if _QUESTION.search(text):
                waiting[s] = out[-1]
    return [f"{said} ({at})" for said, at in out]


def _sentences(text: str) -> list[str]:
    from pamd.consolidate.summarizers import text as tx

    return tx.split_sentences(text)


def _recent(entries: list[Entry]) -> list[Entry]:
    """The last day of work: entries of the 24 hours up to the newest one (however long ago)."""
    if not entries:
        return []
    last = max(e.ts for e in entries)
    return sorted((e for e in entries if e.ts >= last - timedelta(hours=WINDOW_HOURS)), key=lambda e: e.ts)


# The last day's raw messages an LLM reads for STATE, newest kept: its open work and focus.
LLM_TOKENS = 2000
_TOLD = re.compile(r"^(open|focus):\s*(\S.*)$", re.IGNORECASE)


def for_llm(entries: list[Entry], now: datetime) -> list[Entry]:
    """The last day's raw messages, the newest within LLM_TOKENS, oldest first: what an LLM
    backend reads to say what is still open and what the agent was on last."""
    from pamd.core.entry import count_tokens

    out: list[Entry] = []
    room = LLM_TOKENS
    for e in reversed(_recent([e for e in entries if e.ts <= now and not e.is_summary])):
        room -= count_tokens(e.text)
        if room < 0:
            break
        out.append(e)
    return out[::-1]


def _told(text: str) -> tuple[list[str], str]:
    """(open items, focus) of an LLM's STATE facts ("open: …", "focus: …"; "done: …" is left
    to the calls and closes the entries record, which name commits and items exactly)."""
    items, focus = [], ""
    for line in text.splitlines():
        m = _TOLD.match(line.strip().lstrip("-* "))
        if m and m.group(1).lower() == "open":
            items.append(_clip(m.group(2), 200))
        elif m and not focus:
            focus = _clip(m.group(2), 300)
    return items, focus


def snapshot(entries: list[Entry], now: datetime, previous: dict[str, Any] | None = None,
             settings_budget: int = settings_index.DEFAULT_BUDGET, told: str = "") -> dict[str, Any]:
    """What the agent was doing: the user's last standing instruction, work finished
    (commits, closed items, pushes), work open (a todo or tracker item not finished, an
    instruction nothing was delivered after), what it was on last, and the settings and
    names the work set (`settings`, pamd.myelin.settings_index, within `settings_budget`).
    `told`: an LLM's facts of the last day (for_llm), whose open items join the open work
    and whose focus is the focus.

    Raw messages say most; once they are summarised, the facts their summaries kept do,
    and what neither holds any more is carried over from `previous` (STATE.md's values)."""
    recent = _recent([e for e in entries if e.ts <= now] or entries)
    recent_ids = {id(e) for e in recent}
    previous = previous or {}
    done: list[str] = []
    done_at: list[str] = []  # the day each was done (YYYY-MM-DD), by index
    done_raw: list[bool] = []  # whether that day is a raw call's (the work itself), not a summary's
    last_done_at = None
    instruction, instruction_at = "", None
    todos: dict[str, str] = {}
    taken: dict[str, str] = {}
    created_title = ""
    titles: dict[str, str] = {}
    tried = ""  # the commit the last call made, until its output says whether it landed
    # Work done and open from everything the tree holds (an import of last month's sessions
    # finds what live runs carried over); the instruction and the mood from the last day.
    for e in sorted((e for e in entries if e.ts <= now), key=lambda e: e.ts) or recent:
        if e.role == "tool" and not e.is_summary and tried:
            if e.text.startswith("[tool error]") and tried in done:
                i = done.index(tried)  # the commit its call named failed (a hook refused it)
                del done[i], done_at[i], done_raw[i]
            tried = ""
        for fact, day in _done_facts(e):
            raw = not e.is_summary
            last_done_at = e.ts
            if fact not in done:
                done.append(fact)
                done_at.append(day)
                done_raw.append(raw)
                tried = fact if fact.startswith('Committed "') and raw else tried
                continue
            # seen before: a raw call's day over a summary's, the latest call (done again),
            # the earliest summary (a later one tells it again)
            i = done.index(fact)
            if raw:
                done_at[i], done_raw[i] = max(day, done_at[i]) if done_raw[i] else day, True
            elif not done_raw[i]:
                done_at[i] = min(done_at[i], day)
        made = _commit_made(e)
        if made:  # the hash its output reported, on the commit its call made
            _name_commit(done, made)
        said = _instruction(e) if (e.role == "user" or e.is_summary) and id(e) in recent_ids else ""
        if said:
            instruction, instruction_at = said, e.ts
        for content, status in _todos(e):
            todos[content] = status
        for item, title in _titles(e):
            titles.setdefault(item, title)
        for kind, item, what in _tracker(e):
            if kind == "taken":
                taken[item] = what
            elif kind == "title":
                created_title = what
            else:  # a tracker item filed and not delivered yet
                taken.setdefault(item, f"open: {created_title}" if created_title else "open")
                if created_title:
                    titles.setdefault(item, created_title)
                created_title = ""
    # the ids a "Closed a, b: reason" names before its reason (not those the reason mentions)
    closed = " ".join(d.split(":", 1)[0] for d in [*done, *map(str, previous.get("done") or [])]
                      if d.startswith("Closed "))
    open_items = [f"{c} ({st.replace('_', ' ')})" for c, st in todos.items() if st != "completed"]
    open_items += [f"{i} ({st})" for i, st in taken.items()
                   if not re.search(rf"(?<![\w.-]){re.escape(i)}(?![\w-])", closed)]
    if instruction and instruction_at and (last_done_at is None or last_done_at < instruction_at):
        open_items.insert(0, f"{instruction} (the user's last instruction; nothing committed or closed since)")
    if not instruction:
        instruction = str(previous.get("last_instruction") or "")
    # What raw messages said and their summaries no longer hold: carried over from the last
    # snapshot, a done item while there is room, an open one until it is closed.
    done, done_at = _with_carried(done, done_at, done_raw, list(map(str, previous.get("done") or [])))
    for item in map(str, previous.get("active_goals") or []):
        m = re.match(r"^(\S+) \(open: (.+)\)$", item)
        if m:
            titles.setdefault(m.group(1), m.group(2))
    done = _titled(done, titles)  # one for one: done_at still holds their days
    for item in map(str, previous.get("active_goals") or []):
        m = _ITEM.match(item)
        if m and item not in open_items and not re.search(
                rf"(?<![\w.-]){re.escape(m.group(1))}(?![\w-])", closed):
            open_items.append(item)
    from pamd.consolidate.summarizers import facts

    llm_open, llm_focus = _told(told)
    done_text = " ".join(done).casefold()
    open_items += [i for i in llm_open if i.casefold() not in done_text
                   and not any(facts.same_fact(i, o) for o in open_items)]
    open_items = list(dict.fromkeys(open_items))[:OPEN_ITEMS]
    # what STATE.md kept (the messages may be gone, or be read now without what they had
    # then, such as the options of a question whose call was summarised since), then the tree's
    heard = [*map(str, previous.get("user_said") or []),
             *_user_said(sorted((e for e in entries if e.ts <= now), key=lambda e: e.ts))]
    last_said: dict[str, str] = {}
    for item in sorted(heard, key=_said_at):  # a line said again is shown once, where it was said last
        key = _said_key(item)
        was = last_said.pop(key, None)
        # the same moment told twice (with and without the options offered): the fuller telling
        last_said[key] = was if was and _said_at(was) == _said_at(item) and len(was) > len(item) else item
    done = [f"{d} ({at})" if at else d for d, at in _one_each(list(zip(done, done_at, strict=True)))[-DONE_ITEMS:]]
    focus = llm_focus or (open_items[0] if open_items else (f"last finished: {done[-1]}" if done else ""))
    hyps = _hypotheses(recent)
    return {
        "updated": fmt_time(now),
        "last_instruction": instruction,
        "user_said": list(last_said.values())[-USER_ITEMS:],
        "active_goals": open_items,
        "done": done,
        "current_focus": _clip(focus, 300),
        "hypotheses": hyps[:3],
        "emotional_context": _mood(recent, last_done_at),
        "settings": settings_index.index([e for e in entries if e.ts <= now], previous.get("settings"),
                                         settings_budget),
    }


def _with_carried(done: list[str], done_at: list[str], done_raw: list[bool],
                  carried: list[str]) -> tuple[list[str], list[str]]:
    """The tree's done items and those STATE.md carried (written "… (YYYY-MM-DD)"), by the
    day they were done, the tree's first within a day: carried items are mostly what raw
    messages said before they were summarised away, so they are often newer than what
    the summaries still hold (put first, they were the first cut, and the newest work
    fell out of STATE.md). An item both hold takes the day of a raw call in the tree,
    else the day STATE.md wrote (from the call, when it was raw), else the summary's.
    One STATE.md wrote without a day (an older pamd) goes first."""
    when = dict(zip(done, done_at, strict=True))
    raw = dict(zip(done, done_raw, strict=True))
    for item in carried:
        m = _DONE_ON.search(item)
        text, at = (item[:m.start()], m.group(1)) if m else (item, "")
        if text not in when:
            done.append(text)
            when[text] = at
        elif at and not raw[text]:
            when[text] = at
    order = sorted(range(len(done)), key=lambda i: when[done[i]])  # stable: ties keep their order
    return [done[i] for i in order], [when[done[i]] for i in order]


_HASHED = re.compile(r"^Committed ([0-9a-f]{7,40}) \"")
_COMMIT_HEAD = re.compile(r'^Committed (?:[0-9a-f]{7,40} )?("(?:[^"\\]|\\.)*")')


def _done_head(item: str) -> str:
    """What a done item is about: a commit's subject (with or without the hash git reported;
    its own colon, "feat: …", is no reason's), else the words before a reason ("Closed x."
    is "Closed x: title")."""
    m = _COMMIT_HEAD.match(item)
    return f"Committed {m.group(1)}" if m else item.split(":", 1)[0].rstrip(" .")


def _one_each(done: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """One item per thing done ("Closed x.3" from a raw call and from a summary, which may
    end it with a full stop): the longest wording, at the place and day of the last; a
    push that names nothing is left out when one names what was pushed. Items are
    (text, day)."""
    if any(d.startswith("Pushed ") and not d.startswith(_BARE_PUSH) for d, _ in done):
        done = [(d, at) for d, at in done if not d.startswith(_BARE_PUSH)]
    head = {d: _done_head(d) for d, _ in done}
    best: dict[str, str] = {}
    for d, _ in done:
        if len(d) > len(best.get(head[d], "")):
            best[head[d]] = d
    for d, _ in done:  # the longest telling of a commit, with the hash another one gave
        hashed = _HASHED.match(d)
        if hashed and not _HASHED.match(best[head[d]]):
            best[head[d]] = f"Committed {hashed.group(1)} " + best[head[d]].removeprefix("Committed ")
    out, seen = [], set()
    for d, at in reversed(done):
        if head[d] not in seen:
            seen.add(head[d])
            out.append((best[head[d]], at))
    return out[::-1]


def _hypotheses(recent: list[Entry]) -> list[str]:
    hyps: list[str] = []
    for e in reversed(recent):
        for guess in _guesses(e):
            if guess not in hyps:
                hyps.append(guess)
        if len(hyps) >= 5:
            break
    return hyps


@functools.lru_cache(maxsize=65536)
def _guesses(e: Entry) -> tuple[str, ...]:
    """The hedged sentences of `e` ("probably", "might be"), clipped, in order."""
    from pamd.consolidate.summarizers import facts

    # A guess is something said: not in a raw call's arguments, nor in its gist, nor in a
    # tool's output ("Checking 114 files (this might take a while)" is no hypothesis).
    if e.role == "tool" and not e.is_summary:
        return ()
    said = _words(e) if e.is_summary else _typed(toolcall.prose(e.text))
    # A blank line ends a sentence too (a paragraph without a full stop).
    sents = [x for para in re.split(r"\n\s*\n", said) for x in re.split(r"(?<=[.!?])\s+", " ".join(para.split()))]
    return tuple(_clip(sent) for sent in sents
                 if _HEDGE.search(sent) and len(sent) > 15 and not facts.is_fragment(sent)
                 and not facts.is_narration(sent))


def _mood(recent: list[Entry], last_done_at: datetime | None) -> str:
    """A line a reader can use: the failure the work ended on, when nothing was finished
    after it ("" otherwise: tag counts say nothing to act on)."""
    from pamd.consolidate.summarizers import facts

    for e in reversed(recent):
        if last_done_at is not None and e.ts <= last_done_at:
            break
        if e.role == "tool" and not e.is_summary and "cortisol" in e.neuro:
            err = facts.error_line(e.text)
            if err:
                return _clip(f"the work ended on a failure not yet resolved: {err}", 240)
    return ""


def is_stale(current: str | None, entries: list[Entry]) -> bool:
    """New entries arrived since the snapshot was taken (a broken STATE.md counts as stale)."""
    if not entries:
        return False
    try:
        meta, _, _ = split_frontmatter(current or "", "STATE.md")
        updated = meta.get("updated")
        if not updated:
            return True
        from pamd.core.entry import parse_time

        return max(e.ts for e in entries) > parse_time(str(updated))
    except (FormatError, ValueError):
        return True


# pamd's snapshot fields are remade from the entries at every run. A person's goals and
# hypotheses live in the pinned fields, which pamd never rewrites; an item a person adds to
# pamd's own list (found by comparing with the STATE.md pamd last committed) is moved there.
PINNED = {"active_goals": "pinned_goals", "hypotheses": "pinned_hypotheses"}
_NOUN = {"active_goals": "goal", "hypotheses": "hypothesis"}


def _items(value: Any) -> list[Any]:
    if value is None or value == "":
        return []
    return list(value) if isinstance(value, list) else [value]


def _quote(item: Any, n: int = 60) -> str:
    text = item_text(item)
    return f'"{_clip(str(item if text is None else text), n)}"'


def meta_of(text: str | None) -> dict[str, Any]:
    """STATE.md's frontmatter ({} when there is none or it does not parse)."""
    return _meta_of(text)


def _meta_of(text: str | None) -> dict[str, Any]:
    try:
        return split_frontmatter(text, "STATE.md")[0] if text else {}
    except FormatError:
        return {}


def pamds_values(text: str | None) -> set[str]:
    """What pamd writes in a STATE.md text: the items of its goal and hypothesis lists
    (not the pinned ones), its current_focus and its emotional_context."""
    meta = _meta_of(text)
    out = {_key(i) for key in PINNED for i in _items(meta.get(key))}
    out.update(str(meta[key]) for key in ("current_focus", "emotional_context", "last_instruction")
               if meta.get(key))
    out.update(_key(i) for i in _items(meta.get("done")))
    return out


def _key(item: Any) -> str:
    """An item as a set member: a person may write a mapping or a list as a goal."""
    return item if isinstance(item, str) else repr(item)


def render_state(current: str | None, snap: dict[str, Any], last: str | None = None,
                 ever: set[str] | frozenset[str] = frozenset()) -> tuple[str, list[str]]:
    """STATE.md with pamd's fields replaced and everything else a person wrote kept,
    and the lines for the commit message that say what was done with a person's edits.

    `last` is STATE.md as pamd last committed it: an item of active_goals or hypotheses
    that it did not hold is a person's and moves to pinned_goals / pinned_hypotheses
    (never rewritten by pamd), unless pamd wrote it in an earlier version (`ever`: a
    revert or a squash merge brings those back). Without `last` every item there counts
    as a person's."""
    meta: dict[str, Any] = {}
    body = "# STATE\n"
    if current:
        try:
            meta, lines, _ = split_frontmatter(current, "STATE.md")
        except FormatError as exc:
            raise PamdError(f"{exc.problem}; pamd will not overwrite it",
                            "fix the frontmatter (pamd check STATE.md) and commit") from None
        body = "\n".join(lines)
    base = _meta_of(last) if current else {}
    notes: list[str] = []
    snap = dict(snap)
    for key, pin in PINNED.items():
        pinned = meta.get(pin)
        if pinned is not None and not isinstance(pinned, list | str):
            raise PamdError(f"STATE.md: {pin} must be a list; pamd will not overwrite it",
                            "fix it and commit, then run again")
        pinned = _items(pinned)
        had = _items(base.get(key))
        theirs = [i for i in _items(meta.get(key)) if i not in had and _key(i) not in ever and i not in pinned]
        if theirs:
            pinned += theirs
            notes += [f"Kept a person's {_NOUN[key]} in {pin} (pamd remakes {key}): {_quote(i)}"
                      for i in theirs]
        if pinned or pin in meta:
            meta = _put_before(meta, pin, pinned, key)
        snap[key] = [i for i in snap.get(key, []) if i not in pinned]
        now_there = _items(meta.get(key))
        back = [i for i in had if i not in now_there and i in snap[key]]
        notes += [f"Put back a {_NOUN[key]} a person removed from {key} (still among the last "
                  f"{WINDOW_HOURS} h's): {_quote(i)}" for i in back]
    for key in ("current_focus", "emotional_context"):
        mine = meta.get(key)
        if key in base and mine not in (base.get(key), snap.get(key)) and mine and str(mine) not in ever:
            notes.append(f"Replaced a person's {key} (history keeps it): {_quote(mine)}")
    meta = {**meta, **snap}
    if "kind" not in meta:
        meta = {"kind": "state", **meta}
    return "---\n" + dump_yaml(meta) + "---\n" + body, notes


def _put_before(meta: dict[str, Any], key: str, value: Any, anchor: str) -> dict[str, Any]:
    """`meta` with `key` set, a new key placed just before `anchor` (or at the end)."""
    if key in meta or anchor not in meta:
        return {**meta, key: value}
    out: dict[str, Any] = {}
    for k, v in meta.items():
        if k == anchor:
            out[key] = value
        out[k] = v
    return out
