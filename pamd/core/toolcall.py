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
from collections.abc import Callable

# Where to cut a text to at most n characters: ingest passes one that never splits a
# secret (redaction then finds each secret whole or not at all).
Cut = Callable[[str, int], int]


def plain_cut(text: str, n: int) -> int:
    return min(n, len(text))

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
    from pamd.core.redact import redact

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
    head = flat[: limit - 1]
    space = head.rfind(" ")
    return (head[:space] if space >= limit // 3 else head).rstrip(" ,;:") + "…"


# ---------------------------------------------------------------- what a call is, what to keep

# Kinds of call whose arguments or output cannot be found again, so ingest keeps more of them.
COMMIT, CLOSE, SPEC, TEST, WRITE, EDIT, AGENT = "commit", "close", "spec", "test", "write", "edit", "agent"
LISTING = "listing"
ANSWER = "answer"  # the person answering the agent's question: their decision
# How ingest heads a listing's output with its command: `[tool result] $ git status`.
LISTING_HEAD = "$ "
# What opens an agent host's recap of the session so far (Claude Code's compaction summary)
# as ingest writes it: summaries and lessons read the recap apart from live messages.
COMPACTION_HEAD = "[compaction summary]"
_SHELL_TOOLS = frozenset({"bash", "shell", "shell_command", "exec_command", "local_shell", "run_command",
                          "terminal", "execute_command", "run_terminal_cmd"})
_COMMIT = re.compile(r"\bgit\b(?:\s+-[Cc]\s+\S+|\s+--?[\w-]+(?:=\S+)?)*\s+commit\b")
# Closing or filing a task, an issue or a pull request: the reason and the body say what was done.
_CLOSE = re.compile(
    r"\b(?:bd|beads)\s+(?:close|done|create|update)\b|\bgh\s+(?:issue|pr)\s+(?:close|create|merge|comment|edit)\b"
    r"|\bglab\s+(?:issue|mr)\s+(?:close|create|merge|note)\b"
    r"|\bjira\s+(?:issue\s+)?(?:move|transition|close|done|create|comment)\b"
    r"|\blinear\s+issue\s+(?:update|close|create)\b")
# Showing a task, issue or pull request: the spec the work followed, often changed later.
_SPEC = re.compile(
    r"\b(?:bd|beads)\s+show\b|\bgh\s+(?:issue|pr)\s+view\b|\bglab\s+(?:issue|mr)\s+view\b"
    r"|\bjira\s+(?:issue\s+)?view\b|\blinear\s+issue\s+view\b|\bacli\s+jira\s+workitem\s+view\b")
# What was open or uncommitted then: `git status`, a tracker's list of open or ready work.
# A week later the tracker and the tree have moved on, so the output cannot be read again.
_LISTING = re.compile(
    r"\bgit\s+status\b|\b(?:bd|beads|br)\s+(?:ready|list|blocked)\b|\bgh\s+(?:issue|pr)\s+(?:list|status)\b"
    r"|\bglab\s+(?:issue|mr)\s+list\b|\bjira\s+(?:issue\s+)?list\b|\blinear\s+issue\s+list\b")
_TEST = re.compile(
    r"\b(?:pytest|py\.test|mix\s+test|(?:npm|yarn|pnpm|bun)\s+(?:run\s+)?test|go\s+test|cargo\s+test|jest|vitest"
    r"|rspec|phpunit|ctest|make\s+(?:test|check)|tox|nox|gradle\w*\s+test|mvn\s+test|dotnet\s+test|deno\s+test"
    r"|unittest)\b")


def command(name: str, args) -> str:
    """The shell command a call ran ("" if it ran none): Claude Code's Bash, Codex's shell
    (an argv list, `bash -lc CMD`), exec_command, and the like."""
    if not isinstance(args, dict) or name.lower() not in _SHELL_TOOLS:
        return ""
    cmd = args.get("command", args.get("cmd", ""))
    if isinstance(cmd, list):
        parts = [str(p) for p in cmd]
        if len(parts) >= 3 and parts[0].rsplit("/", 1)[-1] in ("bash", "sh", "zsh") and parts[1] in ("-lc", "-c"):
            return parts[2]
        return " ".join(parts)
    return cmd if isinstance(cmd, str) else ""


def kind(name: str, args) -> str | None:
    """What a call is, for what ingest keeps of it and of its result; None: an ordinary call."""
    low = name.lower()
    if low in ("write", "create_file", "write_file"):
        return WRITE
    if low in ("edit", "multiedit", "notebookedit", "apply_patch", "str_replace_editor", "edit_file"):
        return EDIT
    if low in ("task", "agent"):
        return AGENT
    if low == "askuserquestion":
        return ANSWER
    cmd = command(name, args)
    if not cmd:
        return None
    if _COMMIT.search(cmd):
        return COMMIT
    if _CLOSE.search(cmd):
        return CLOSE
    if _SPEC.search(cmd):
        return SPEC
    if _TEST.search(cmd):
        return TEST
    if _LISTING.search(cmd):
        return LISTING
    return None


SMALL_FILE = 3000  # a file written or an edit up to this size is kept whole
_HEAD_LINES, _TAIL_LINES, _CHANGED_CHARS = 12, 6, 2000


def _lines_block(lines: list[str], limit: int) -> str:
    out: list[str] = []
    size = 0
    for ln in lines:
        if size + len(ln) + 1 > limit:
            out.append(f"…[{len(lines) - len(out)} more changed lines]")
            break
        out.append(ln)
        size += len(ln) + 1
    return "\n".join(out)


def _tail_text(text: str, n: int) -> str:
    """At most the last n characters of a text, from the start of a line (a cut inside a
    line could leave the end of a secret, which redaction would not know)."""
    if len(text) <= n:
        return text
    nl = text.find("\n", len(text) - n)
    return text[nl + 1:] if nl >= 0 else ""


def condense(text: str, changed: list[str] | None = None, cut: Cut = plain_cut) -> str:
    """A large text as its head, the lines that changed (if given) and its tail; a small one whole."""
    if len(text) <= SMALL_FILE:
        return text
    lines = text.split("\n")
    head, tail = lines[:_HEAD_LINES], lines[-_TAIL_LINES:] if len(lines) > _HEAD_LINES else []
    if len(lines) <= _HEAD_LINES + _TAIL_LINES:  # few, very long lines: characters instead
        return text[:cut(text, 1500)] + f"\n…[{len(text)} characters in all]…\n" + _tail_text(text, 500)
    middle = [ln for ln in (changed or []) if ln not in head and ln not in tail]
    first = "\n".join(head)
    parts = [first[:cut(first, 1500)]]
    if middle:
        parts.append("…[changed lines]…\n" + _lines_block(middle, _CHANGED_CHARS))
    parts.append(f"…[{len(lines)} lines in all]…\n" + _tail_text("\n".join(tail), 800))
    return "\n".join(parts)


def _changed(old: str, new: str) -> tuple[list[str], list[str]]:
    """Lines only in `old` (removed) and only in `new` (added), in their order."""
    before, after = set(old.split("\n")), set(new.split("\n"))
    return ([ln for ln in old.split("\n") if ln not in after and ln.strip()],
            [ln for ln in new.split("\n") if ln not in before and ln.strip()])


def _edit(old: str, new: str, cut: Cut) -> tuple[str, str]:
    if len(old) + len(new) <= SMALL_FILE:
        return old, new
    removed, added = _changed(old, new)
    return _lines_block(removed, _CHANGED_CHARS // 2), condense(new, added, cut)


def _edit_dict(edit: dict, cut: Cut) -> dict:
    old, new = _edit(str(edit.get("old_string") or ""), str(edit.get("new_string") or ""), cut)
    return {**edit, "old_string": old, "new_string": new}


def keep_args(name: str, args, cut: Cut = plain_cut):
    """A call's arguments as ingest keeps them: a small file written or edited whole, a
    larger one as its head, the lines that changed and its tail; others as given."""
    if not isinstance(args, dict):
        if isinstance(args, str) and name.lower() == "apply_patch":
            return condense(args, [ln for ln in args.split("\n") if ln[:1] in "+-*"], cut)
        return args
    low = name.lower()
    out = dict(args)
    if low in ("write", "create_file", "write_file") and isinstance(args.get("content"), str):
        out["content"] = condense(args["content"], None, cut)
    elif low in ("edit", "str_replace_editor", "edit_file") and isinstance(args.get("new_string"), str):
        out["old_string"], out["new_string"] = _edit(str(args.get("old_string") or ""), args["new_string"], cut)
    elif low == "multiedit" and isinstance(args.get("edits"), list):
        out["edits"] = [_edit_dict(e, cut) if isinstance(e, dict) else e for e in args["edits"]]
    elif low == "apply_patch" and isinstance(args.get("input"), str):
        out["input"] = keep_args("apply_patch", args["input"], cut)
    return out


# A line of output that says what went wrong: kept from anywhere in a failing output.
ERROR_LINE = re.compile(
    r"(?i)\b(?:error|errors|exception|traceback|failed|failure|failures|fatal|panic|assert\w*|undefined|cannot"
    r"|can[’']t|could not|not found|no such|denied|refused|timed? ?out|expected|got|warning)\b|^E\s{2,}|^FAILED\b"
    r"|^\s*\d+\) |^\s*[✗✘×]")


# Where a test runner starts telling what failed: pytest, unittest, go, cargo, ExUnit, RSpec, Jest.
_FAIL_SECTION = re.compile(
    r"^(?:=+ (?:FAILURES|ERRORS) =+|--- FAIL\b|failures:|Failures:|FAIL:? \S|ERROR: \S|\s+1\) (?:test|\S+#)"
    r"|\s*● )", re.MULTILINE)
_SECTION_CHARS = 1500


def failure_view(text: str, head: int = 1000, lines: int = 2000, tail: int = 800, cut: Cut = plain_cut) -> str:
    """A failing output as its head, the start of its report of failures (a test
    runner's FAILURES section), every other line that names an error, and its tail."""
    if len(text) <= head + _SECTION_CHARS + lines + tail:
        return text
    # Cuts fall at line ends; a line too long for that is cut where `cut` says.
    first = text.rfind("\n", 0, head)
    first = first if first > head // 2 else cut(text, head)
    end = text.find("\n", len(text) - tail)
    if not 0 <= end < len(text) - tail // 2:
        end = len(text)  # one long last line: no tail rather than half a line
    parts = [text[:first]]
    section = _FAIL_SECTION.search(text, first, end)
    rest_from = first
    if section is not None:
        at = section.start()
        stop = text.rfind("\n", at, min(end, at + _SECTION_CHARS))
        stop = stop if stop > at else at + cut(text[at:end], _SECTION_CHARS)
        parts.append("…[the failures]…\n" + text[at:stop])
        rest_from = stop
    picked = [ln for ln in text[rest_from:end].split("\n") if ln.strip() and ERROR_LINE.search(ln)]
    if picked:
        parts.append("…[lines naming errors]…\n" + _lines_block([ln[:cut(ln, 300)] for ln in picked], lines))
    parts.append(f"…[{len(text)} characters in all; the end]…\n" + text[end:].lstrip("\n"))
    return "\n".join(parts)
