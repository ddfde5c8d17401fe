"""An agent's tool calls inside an entry: `[tool NAME] {json arguments}`.

Ingest writes a call the agent made as a line of its own (`pamd.encode.sources`):
Claude Code's as ``[tool Bash] {"command": …}``, an OpenAI message's tool calls as
``[tool call NAME] arguments`` lines after its text. The arguments are data the agent
passed to a tool, not words it said: a command with ``--warnings-as-errors`` in it is
not a failure, and a JSON fragment is not a sentence. `prose` gives the words around
the calls, `gist` a call in a few readable words (``[tool Bash] Show recent commits``).
"""

from __future__ import annotations

import json
import re

# A call's head; its group is the tool's name. `[tool result]` and `[tool error]` are
# tool output (role tool), not calls.
_HEAD = r"\[tool (?!(?:result|error)\])(?:call )?([^\[\]\n]{1,80})\]"
CALL = re.compile(rf"^{_HEAD} ?", re.MULTILINE)  # at the start of a line
# Where a line holds several calls (a summary's line): a break before each.
_BEFORE_CALL = re.compile(r"\s+(?=\[tool (?!(?:result|error)\])(?:call )?[^\[\]\n]{1,80}\])")
# Arguments worth showing, most telling first: what the agent said the call does,
# then what it touched. A search shows its pattern and a command itself (`_telling`).
_KEYS = ("description", "file_path", "notebook_path", "path", "query",
         "url", "skill", "subject", "question", "prompt", "plan", "content")
# A command's leading `cd somewhere &&`: where, not what.
_CD = re.compile(r"^cd \S+ *(?:&&|;) *")
# Plumbing that says nothing of what ran: `2>&1`, a heredoc's head, a trailing `| tail -20`.
_PLUMBING = re.compile(r""" 2>&1(?= |$)|"?\$\(cat <<'?EOF'? *|\s*\|\s*(?:tail|head)\s+(?:-n\s*)?-?\d+\s*$""")
_PATH_TAIL = 30
_PAIR = re.compile(r'"(\w+)":\s*"((?:[^"\\]|\\.)*)')
# Where a fragment of arguments ends in an older summary's line: `…commits"} The next`.
_JSON_END = re.compile(r'(?:(?<!\\)"|\d|true|false|null)[}\]]+(?=\s|$)')
# What may follow a fragment's end: words, not more JSON (`, "timeout": 5}`).
_WORDS_AFTER = re.compile(r'\s*(?:$|(?![,:}\]{\[])(?!"\w*":)\S)')
# Arguments of a call cut apart by an older summary among the words after it: a
# `"key": value` up to a value and a } (`"description": "Close gqc.7 bead"}`).
_LATER_ARGS = re.compile(r'"\w+":\s*[^\n]*?(?:(?<!\\)"|\d|true|false|null)[}\]]+(?=\s|$)')
# The tail of a call's value left alone among the words: `Good. 30000}`.
_LOOSE_END = re.compile(r"(?<!\S)(?:\d+|true|false|null)[}\]]+[,;]?(?!\S)")
# What is left of arguments cut apart by an older summary: `30000} All green`.
JSONISH = re.compile(r'\{"|"\}|":|\d\}|\\[n"]')
GIST_CHARS = 80


def is_call(text: str) -> bool:
    """True if the text starts with a tool call."""
    return CALL.match(text) is not None


def prose(text: str) -> str:
    """The text without its tool calls: what comes before the first call line.

    Ingest puts calls last (an OpenAI message's text, then its calls) or alone (a
    Claude Code tool_use block), so everything from the first call on is arguments."""
    if "[tool " not in text:
        return text
    m = CALL.search(text)
    return text[: m.start()].rstrip() if m else text


def gist(call: str, limit: int = GIST_CHARS) -> str:
    """`[tool NAME] what it does`, from a call's text (whole, cut short, or a fragment)."""
    m = CALL.match(call)
    if not m:
        return call
    what = _short(_safe(_argument(call[m.end():].strip(), limit)), limit)
    if what and what[-1] not in ".!?…":
        what += "."  # a sentence of its own where a summary's line goes on after it
    head = f"[tool {m.group(1)}]"
    return f"{head} {what}" if what else head


def split_calls(line: str) -> list[str]:
    """A line cut before each call in it: `a [tool X] b [tool Y] c` -> `a`, `[tool X] b`, …"""
    if "[tool " not in line:
        return [line]
    pieces = _BEFORE_CALL.split(line)
    return [p.rstrip(",;") for p in pieces[:-1]] + pieces[-1:]


def readable(text: str, limit: int = GIST_CHARS, summary: bool = False) -> str:
    """The text with each call whose arguments are JSON written as its gist.

    Prose, a call already written as a gist, and tool output stay as they are. In a
    `summary`'s line (one written before calls were gists) the words after a call's
    JSON are the next message's, and stay too: the JSON ends at its first end that words
    follow, and more of the call's arguments further on go to its gist."""
    if "[tool " not in text:
        return text
    out: list[str] = []
    last_call = False
    for line in text.splitlines():
        if last_call and line.startswith("…[") and line.endswith(" in the source transcript]"):
            continue  # the note ingest leaves where it cut a long call short
        pieces = split_calls(line)
        last_call = is_call(pieces[-1])
        out.append(" ".join(_readable_piece(p, limit, summary) for p in pieces))
    return "\n".join(out)


def _readable_piece(piece: str, limit: int, summary: bool) -> str:
    m = CALL.match(piece)
    if not m:
        return piece
    args = piece[m.end():].lstrip()
    if not (args[:1] in "{[" or JSONISH.search(args)):
        return piece  # a gist already, or arguments that are plain words
    rest = ""
    if summary:
        try:
            value, end = json.JSONDecoder().raw_decode(args)
        except ValueError:
            value = None
        if not isinstance(value, dict | list):
            # A fragment: it ends at the first value and } that words follow (or the end).
            end = next((e.end() for e in _JSON_END.finditer(args)
                        if _WORDS_AFTER.match(args, e.end())), len(args))
        # More of the call's arguments may sit among the next words ('… push.
        # "description": "Close gqc.7 bead"}'): they go to the gist; the words stay.
        words, bits, at = [], [args[:end]], end
        for bit in _LATER_ARGS.finditer(args, end):
            words.append(args[at:bit.start()])
            bits.append(bit.group())
            at = bit.end()
        words.append(args[at:])
        rest = " ".join(_LOOSE_END.sub("", " ".join(words)).split())
        args = " ".join(bits)
    call = gist(piece[: m.end()] + args if rest else piece, limit)
    return f"{call} {rest}" if rest else call


def _argument(args: str, limit: int = GIST_CHARS) -> str:
    """The most telling argument of a call's arguments, JSON or not."""
    try:
        value = json.loads(args)
    except ValueError:
        value = None
    if isinstance(value, dict):
        strings = {k: v for k, v in value.items() if isinstance(v, str)}
        return _telling(strings, limit) or _first_string(value)
    if isinstance(value, str | int | float) and not isinstance(value, bool):
        return str(value)
    # Cut short at ingest (or not JSON at all): read the "key": "value" pairs there are.
    pairs: dict[str, str] = {}
    for key, raw in _PAIR.findall(args):
        pairs.setdefault(key, raw)
    found = _telling({k: _unescape(v) for k, v in pairs.items()}, limit)
    if found:
        return found
    return "" if args[:1] in "{[" or JSONISH.search(args) else args


def _telling(values: dict[str, str], limit: int) -> str:
    """What a call did, in words: a search's pattern (and where, when that is short), a
    command (and what the agent said it does, when that fits), else the first of
    `_KEYS` there is, else any string."""
    flat = {k: " ".join(v.split()) for k, v in values.items()}  # redacted whole by gist()
    pattern, command, said = flat.get("pattern"), flat.get("command"), flat.get("description")
    if pattern:
        where = _tail(flat.get("path", ""))
        return f"{pattern} in {where}" if where and len(pattern) + len(where) + 4 <= limit else pattern
    if command:
        command = _PLUMBING.sub("", _CD.sub("", command)) or command
        if said and len(command) + len(said) + 3 <= limit:
            return f"{command} ({said})"
        # A command too long to show whole: what it does, then its head if that fits
        # (not "head… (Said)": a summary would read the … as a sentence's end there).
        room = limit - len(said or "") - 2
        return f"{said}: {_short(command, room)}" if said and len(command) > limit \
            and room >= limit // 2 else command
    for key in (*_KEYS, *flat):
        if flat.get(key):
            return values[key]
    return ""


def _safe(text: str) -> str:
    """The text with what redaction catches redacted. A gist shows a call's arguments
    un-escaped (`API_KEY="…"`, stored as `API_KEY=\\"…\\"`), and a summary or STATE.md
    must never show a secret that ingest's redaction missed in the stored form."""
    from pamd.encode.redact import redact

    return redact(text)[0] if text else text


def _tail(path: str) -> str:
    """The last folders of a path when they are short: `spotter-worktrees/spotter-gqc`."""
    parts = [p for p in path.split("/") if p]
    for n in (2, 1):
        tail = "/".join(parts[-n:])
        if len(tail) <= _PATH_TAIL:
            return tail
    return ""


def _first_string(value) -> str:
    if isinstance(value, str):
        return value
    items = value.values() if isinstance(value, dict) else value if isinstance(value, list) else ()
    for item in items:
        found = _first_string(item)
        if found.strip():
            return found
    return ""


def _unescape(raw: str) -> str:
    raw = raw[:-1] if raw.endswith("\\") and not raw.endswith("\\\\") else raw
    try:
        return json.loads(f'"{raw}"')
    except ValueError:
        return raw.replace("\\n", " ").replace('\\"', '"')


def _short(text: str, limit: int) -> str:
    """One line of at most `limit` characters; a long path keeps its end (the file name)."""
    flat = " ".join(text.split())
    if len(flat) <= limit:
        return flat
    if " " not in flat and "/" in flat:
        tail = flat[-(limit - 2):]
        cut = tail.find("/")
        return "…" + (tail[cut:] if cut >= 0 else tail)
    cut = flat[: limit - 1]
    space = cut.rfind(" ")
    return (cut[:space] if space >= limit // 3 else cut).rstrip(" ,;:") + "…"
