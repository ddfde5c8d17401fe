"""Transcripts in: turn bytes of a known format into messages. Pure: bytes in, messages out.

Formats (auto-detected, or forced with --format):
- ``pamd``: JSONL, one ``{"ts", "role", "text", "session"?}`` per line.
- ``openai``: a JSON list of ``{"role", "content"}`` (or ``{"messages": [...]}``, or
  one message), or JSONL of such messages or of ``{"messages": [...]}`` lines (the
  fine-tuning format); content may be a string or a list of parts. pamd-style
  objects (``text`` instead of ``content``) are read too; so are Responses-API items
  (``function_call`` and other ``*_call`` items as ``[tool NAME] args``, their
  ``*_call_output`` as tool results, ``reasoning`` skipped) and ChatGPT's data export
  (``conversations.json``: each conversation's ``mapping`` from ``current_node`` up).
- ``claude-code``: a Claude Code session JSONL (user/assistant records with
  text, tool_use and tool_result blocks; progress, snapshots and thinking are
  skipped; Claude Code's own compaction (its injected summary, its "acompact"
  worker's answer) is one `[compaction summary]` entry; a subagent's (sidechain's) "user" text is the agent's
  prompt for it, stored as the assistant's; skill/command expansions become short system entries; a
  message the user typed while the agent worked (a queue-operation "enqueue") is one
  user message at the time it was queued, whether or not the user record that later
  hands it over is in the file yet, so a file read while it grows gives it one id).
- ``codex``: a Codex CLI rollout (``session_meta``, ``response_item`` messages, calls
  and outputs linked by ``call_id``, ``compacted``; reasoning, ``event_msg`` and
  ``turn_context`` skipped).
- ``markdown``: a daily note ``YYYY-MM-DD.md``; each list item or paragraph is one
  message, ``HH:MM`` at its start sets its time; a heading (or any line starting
  with ``#``) is a message of its own, a fenced code block one message as written.

What of a tool call and its output is kept (a commit message, a ticket, a small file
written, a failing output's head and error lines) and what is cut (re-readable bulk):
docs/format.md, `_call_message` and `_result_message`.

A message's id (see ingest.make_entries) comes from its session, its time (or
`key`, or its position when it has neither), role and text, and `dup`: how many
identical messages came before it in the same source, so two identical messages
in one second stay two.
"""

from __future__ import annotations

import codecs
import json
import re
from collections import Counter
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from pathlib import PurePath
from typing import Any

from pamd.core import toolcall
from pamd.core.entry import clean_token, fmt_time, parse_time
from pamd.core.redact import Redactor
from pamd.core.toolcall import COMPACTION_HEAD, is_call
from pamd.core.words import plural
from pamd.errors import PamdError

FORMATS = ("pamd", "openai", "claude-code", "codex", "markdown")
MAX_MESSAGE_BYTES = 1024 * 1024
TOOL_RESULT_CHARS = 2000
CALL_CHARS = 600  # an ordinary tool call's arguments
KEPT_CALL_CHARS = 6000  # a commit message, a close reason, a file written or edited
SPEC_CHARS = 8000  # a ticket or spec a tool showed, a subagent's report
FAILURE_CHARS = 6000  # a failing output: its head, the lines naming errors, its tail
LISTING_COMMAND_CHARS = 200  # the command that heads a `git status` or tracker listing kept
REPORT_CHARS = 120  # the last message of a turn this long is the agent's report
# What a message carries, beyond its words: the neurotag [facts] table gives each an
# importance floor. commit/close: a commit message, a task-close reason, a PR body, in a
# call that succeeded; spec: a ticket shown by a tool; failure: a failing output's
# error lines; report: the agent's last message of a turn, a subagent's result;
# compaction: the agent host's own summary of the session so far; listing: what `git
# status` or a tracker's list of open work printed (what was open then).
FACTS = ("commit", "close", "spec", "failure", "report", "compaction", "listing", "answer")
# How far past a cut to look for a secret the cut would split.
SECRET_REACH = 1 << 16
_CTRL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f\x85\u2028\u2029]")
# Lone surrogates (JSON "\ud800") cannot be written as UTF-8.
_SURROGATE = re.compile(r"[\ud800-\udfff]")
_DAILY = re.compile(r"(\d{4}-\d{2}-\d{2})")
# A fenced code block's opening line: its indentation and its fence (``` or ~~~, 3 or more).
_FENCE = re.compile(r"^( *)(`{3,}(?=[^`]*$)|~{3,})")
_TIME = re.compile(r"^(?:\*\*)?(\d{1,2}):(\d{2})(?::(\d{2}))?(?:\*\*)?\s*[-–—:]?\s*")


@dataclass(frozen=True)
class Message:
    role: str
    text: str
    ts: datetime | None  # None: the source has no time; ingest stamps `now`
    session: str
    seq: int  # position in its source, for stable ids when ts is missing
    key: str | None = None  # anchors the id instead of ts/seq: an untimed note item's day; stdin: now
    dup: int = 0  # earlier messages in the same source with the same anchor, role and text
    was: Message | None = None  # the message an older pamd read from the same record, when it differs
    named: bool = True  # False: no session in the source, so the input's name; see ingest.nameless_ids
    fact: str | None = None  # what kind of fact it carries (FACTS), for its importance; not part of its id

    def anchor(self) -> str:
        if self.key is not None:
            return self.key
        return fmt_time(self.ts) if self.ts else f"#{self.seq}"


def normalize_text(text: str) -> str:
    """One line ending, no control characters but tab/newline, no trailing blanks.

    U+2028/U+2029/U+0085 become newlines, other control characters spaces, and
    lone surrogates U+FFFD.
    """
    text = _SURROGATE.sub("\ufffd", text.replace("\r\n", "\n").replace("\r", "\n"))
    text = _CTRL.sub(lambda m: "\n" if m.group() in "\u2028\u2029\x85" else " ", text)
    return "\n".join(ln.rstrip() for ln in text.strip("\n").split("\n")).strip()


# Byte order marks of the wider Unicode encodings (PowerShell's `>` writes UTF-16 LE),
# UTF-32 first: its LE mark begins with UTF-16 LE's.
_BOMS = ((codecs.BOM_UTF32_LE, "utf-32"), (codecs.BOM_UTF32_BE, "utf-32"),
         (codecs.BOM_UTF16_LE, "utf-16"), (codecs.BOM_UTF16_BE, "utf-16"))


def _plausible(text: str) -> bool:
    return len(text) < 2 or any(c < "\x80" for c in text[1:201])


def decode(data: bytes, name: str) -> str:
    for bom, enc in _BOMS:
        if data.startswith(bom):
            # Text in any script has ASCII in it (newlines, spaces, JSON's braces); bytes that
            # only happen to start like a mark (not UTF-8 at all) decode to none.
            if not _plausible(data[:1024].decode(enc, "replace")):
                break
            try:
                return data.decode(enc)
            except UnicodeDecodeError as exc:
                raise PamdError(f"{name}: starts as {enc.upper()} but is not valid {enc.upper()} at byte {exc.start}",
                                f"convert it to UTF-8: iconv -f {enc.upper()} -t UTF-8") from None
    head = data[:8192]
    for enc, zeros, text in (("UTF-16LE", head[1::2], head[0::2]), ("UTF-16BE", head[0::2], head[1::2])):
        if len(head) >= 2 and not zeros.strip(b"\0") and b"\0" not in text:
            raise PamdError(f"{name}: looks like {enc} text without a byte order mark",
                            f"convert it to UTF-8: iconv -f {enc} -t UTF-8")
    if b"\0" in head:
        raise PamdError(f"{name}: looks like a binary file", "pass a transcript (JSON, JSONL or Markdown)")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise PamdError(f"{name}: not valid UTF-8 at byte {exc.start}", "convert it to UTF-8 first") from None


def detect(text: str, name: str) -> str:
    if name.endswith((".md", ".markdown")):
        return "markdown"
    stripped = text.lstrip()
    if not stripped:
        raise PamdError(f"{name}: is empty", "nothing to ingest")
    if stripped[0] == "[":
        return "openai"
    first = stripped.split("\n", 1)[0]
    try:
        obj = json.loads(first)
    except RecursionError:
        raise PamdError(f"{name}:1: JSON nested too deeply", "fix or remove that line") from None
    except ValueError:
        if stripped[0] == "{":
            try:
                obj = json.loads(stripped)
            except (ValueError, RecursionError):
                raise PamdError(f"{name}:1: malformed JSON", "fix the line or pass --format") from None
            if isinstance(obj, dict) and ("messages" in obj or "mapping" in obj):
                return "openai"
        if stripped.startswith("#") or _DAILY.search(PurePath(name).name):
            return "markdown"
        raise PamdError(f"{name}: unknown format", f"pass --format ({', '.join(FORMATS)})") from None
    if isinstance(obj, dict):
        if obj.get("type") in _CODEX_RECORDS and isinstance(obj.get("payload"), dict):
            return "codex"
        if "messages" in obj or "mapping" in obj or obj.get("type") in _ITEMS or _item_kind(obj.get("type")):
            return "openai"
        if "sessionId" in obj or obj.get("type") in ("user", "assistant", "progress", "summary",
                                                     "file-history-snapshot", "system"):
            return "claude-code"
        if "text" in obj and "role" in obj:
            return "pamd"
        if "role" in obj and "content" in obj:
            return "openai"
    raise PamdError(f"{name}: unknown format", f"pass --format ({', '.join(FORMATS)})")


def read(data: bytes, name: str, fmt: str | None = None, redactor: Redactor | None = None, *,
         untimed: str | None = None, notes: list[str] | None = None, fit: bool = False) -> list[Message]:
    """Parse one input; raise PamdError (naming name:line) on anything malformed.

    Long tool output is cut short, never inside a secret `redactor` (default:
    the built-in patterns) finds, so redacting the messages leaves no part of one.
    `untimed`, if given, anchors the ids of messages without a time (stdin: the
    time of the run, so the same words piped again later are new). A JSONL
    file's last line that is not JSON and has no newline after it is one its
    writer is still writing (a live session): it is left out, and `notes` gets
    a line saying so. Stdin (`untimed`) is read once: there it is an error.
    `fit`: a message over 1 MiB is cut as long tool output is, not refused (a file
    already committed to the brain, such as a daily note, whose whole text stays there).
    """
    redactor = redactor or Redactor()
    if untimed is None:  # a file: a line still being written is read by the next ingest
        text, fmt = _finished(data, name, fmt, notes if notes is not None else [])
    else:  # stdin is read once: a cut last line is an error, as any malformed line
        text = decode(data, name)
        fmt = fmt or detect(text, name)
    session = clean_token(PurePath(name).stem or "stdin")
    if fmt == "pamd":
        msgs = _pamd(text, name, session)
    elif fmt == "openai":
        msgs = _openai(text, name, session, redactor)
    elif fmt == "claude-code":
        msgs = _claude(text, name, session, redactor)
    elif fmt == "codex":
        msgs = _codex(text, name, session, redactor)
    elif fmt == "markdown":
        msgs = _markdown(text, name, session)
    else:
        raise PamdError(f"unknown format {fmt!r}", f"use one of {', '.join(FORMATS)}")
    out = []
    seen: Counter = Counter()
    for m in msgs:
        if fit:
            m = replace(m, text=_fit(m.text, redactor))
        if len(m.text.encode("utf-8", "surrogatepass")) > MAX_MESSAGE_BYTES:
            raise PamdError(f"{name}: message {m.seq + 1} is larger than 1 MiB",
                            "split it, or store the file elsewhere and remember a pointer to it")
        t = normalize_text(m.text)
        if t:
            m = replace(m, role=clean_token(m.role, 32), text=t, session=clean_token(m.session))
            if m.was is not None:
                m = replace(m, was=replace(m.was, role=clean_token(m.was.role, 32),
                                           text=normalize_text(m.was.text), session=clean_token(m.was.session)))
            if untimed is not None and m.ts is None:
                m = replace(m, key=untimed)
            ident = (m.session, m.anchor(), m.role, m.text)
            out.append(replace(m, dup=seen[ident]))
            seen[ident] += 1
    if msgs and not out and fmt in ("pamd", "openai"):
        # Every record of these formats is meant to be a message: none is a wrong shape.
        raise PamdError(f"{name}: {plural(len(msgs), 'record')} but no message text in any",
                        "give each message a 'content' (or 'text') string")
    return out


def _finished(data: bytes, name: str, fmt: str | None, notes: list[str]) -> tuple[str, str]:
    """The input's text and format, without a JSONL input's last line still being written.

    A file the agent is still writing (a hook or cron ingesting a live session)
    can end in half a record, even half a character: a last line with no newline
    after it that is not JSON yet. The next ingest reads it whole. A malformed
    line with a newline after it is finished, and stays an error.
    """
    head, sep, tail = data.rpartition(b"\n")
    if head.strip() and tail.strip() and not _whole_json(tail):
        try:
            text = decode(head + sep, name)
            found = fmt or detect(text, name)
        except PamdError:
            found = None  # not a JSONL input: reading it whole says what is wrong
        if found in ("pamd", "claude-code", "codex") or (found == "openai" and _looks_jsonl(text.lstrip())):
            line = text.count("\n") + 1
            notes.append(f"{name}:{line}: the last line is unfinished (no newline, not JSON yet):"
                         " left for the next ingest")
            return text, found
    text = decode(data, name)
    return text, fmt or detect(text, name)


def _whole_json(line: bytes) -> bool:
    try:
        json.loads(line)
    except RecursionError:  # whole, only too deep: _jsonl says so
        return True
    except ValueError:  # also UnicodeDecodeError: cut inside a character
        return False
    return True


def _jsonl(text: str, name: str):
    for i, line in enumerate(text.split("\n"), 1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as exc:
            raise PamdError(f"{name}:{i}: malformed JSON ({exc.msg})", "fix or remove that line") from None
        except ValueError as exc:  # what json reads and Python refuses (an integer of 5,000 digits)
            raise PamdError(f"{name}:{i}: unreadable JSON ({exc})", "fix or remove that line") from None
        except RecursionError:
            raise PamdError(f"{name}:{i}: JSON nested too deeply", "fix or remove that line") from None
        yield i, obj


def _time(value, name: str, line: int) -> datetime | None:
    if value in (None, ""):
        return None
    try:
        return parse_time(value)
    except (ValueError, OverflowError, OSError):
        raise PamdError(f"{name}:{line}: bad timestamp {str(value)[:40]!r}", "use ISO 8601") from None


def _str(value, name: str, line: int, field: str) -> str:
    if not isinstance(value, str):
        raise PamdError(f"{name}:{line}: field {field!r} must be a string")
    return value


def _object(value: object) -> dict[Any, Any]:
    """A JSON object as it is; anything else as an empty one."""
    return value if isinstance(value, dict) else {}


def _name(value: object, default: str) -> str:
    """A non-empty JSON string as it is; anything else as `default`."""
    return value if isinstance(value, str) and value else default


def _pamd(text: str, name: str, session: str) -> list[Message]:
    out: list[Message] = []
    for i, obj in _jsonl(text, name):
        if not isinstance(obj, dict) or "text" not in obj:
            raise PamdError(f"{name}:{i}: expected an object with ts, role, text")
        out.append(Message(
            role=_str(obj.get("role", "user"), name, i, "role"),
            text=_str(obj["text"], name, i, "text"),
            ts=_time(obj.get("ts"), name, i),
            session=str(obj.get("session") or session),
            seq=len(out),
            named=bool(obj.get("session")),
        ))
    return out


def _content_text(content, name: str, line: int) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for p in content:
            if isinstance(p, str):
                parts.append(p)
            elif isinstance(p, dict) and isinstance(p.get("text"), str):
                parts.append(p["text"])
        return "\n".join(parts)
    raise PamdError(f"{name}:{line}: message content must be a string or a list of parts")


def _openai(text: str, name: str, session: str, redactor: Redactor) -> list[Message]:
    stripped = text.lstrip()
    if stripped.startswith(("[", "{")) and not _looks_jsonl(stripped):
        try:
            doc = json.loads(stripped)
        except json.JSONDecodeError as exc:
            raise PamdError(f"{name}:{exc.lineno}: malformed JSON ({exc.msg})", "fix the file") from None
        except ValueError as exc:
            raise PamdError(f"{name}: unreadable JSON ({exc})", "fix the file") from None
        except RecursionError:
            raise PamdError(f"{name}: JSON nested too deeply") from None
        pairs = _expand(1, doc, name)
    else:
        pairs = [p for line, obj in _jsonl(text, name) for p in _expand(line, obj, name)]
    out: list[Message] = []
    for line, m in pairs:
        if isinstance(m, _Said):  # already read: a ChatGPT export's or a Responses item's
            body = m.text
            if m.role == "tool":
                body = _truncate(body, TOOL_RESULT_CHARS, redactor)
            elif m.role == "assistant" and is_call(body):
                body = _truncate(body, 600, redactor)
            out.append(Message(m.role, body, m.ts, m.session or session, len(out), key=m.key))
            continue
        if not isinstance(m, dict) or "role" not in m:
            raise PamdError(f"{name}:{line}: expected a message with role and content")
        sess, named = session, False
        if "content" not in m and "text" in m:  # a pamd-style record in a JSON list
            body = _str(m["text"], name, line, "text")
            if isinstance(m.get("session"), str) and m["session"]:
                sess, named = m["session"], True
        else:
            body = _content_text(m.get("content"), name, line)
        calls = m.get("tool_calls") or []
        if not isinstance(calls, list):
            raise PamdError(f"{name}:{line}: field 'tool_calls' must be a list")
        for call in calls:
            if not isinstance(call, dict):
                continue
            fn = _object(call.get("function"))
            args = str(fn.get("arguments", ""))
            body += f"\n[tool call {fn.get('name', '?')}] {args[:_cut(args, TOOL_RESULT_CHARS, redactor)]}"
        role = _str(m["role"], name, line, "role")
        if role == "tool":
            body = _truncate(body, TOOL_RESULT_CHARS, redactor)
        out.append(Message(role, body, _time(m.get("ts") or m.get("timestamp"), name, line),
                           sess, len(out), named=named))
    return out


@dataclass(frozen=True)
class _Said:
    """A message of the OpenAI shapes that are not chat messages, already read."""
    role: str
    text: str
    ts: datetime | None = None
    session: str | None = None
    key: str | None = None  # anchors the id instead of the time (see Message.key)


# Responses-API items that are no message: the model's private reasoning (not remembered,
# like Claude Code's thinking), a reference to an earlier item (said where it was) and
# the list of tools an MCP server offers (a catalogue, nothing said in the conversation).
_SKIPPED_ITEMS = ("reasoning", "item_reference", "mcp_list_tools")
_ITEMS = ("message", *_SKIPPED_ITEMS)


def _item_kind(kind) -> str | None:
    """'call' or 'output' for a Responses-API tool item (`function_call`, `web_search_call`,
    `function_call_output`, ...; an MCP approval request is the call the model asked to
    make, its approval response the answer), else None."""
    if not isinstance(kind, str):
        return None
    if kind in ("mcp_approval_request", "mcp_approval_response"):
        return "call" if kind.endswith("request") else "approval"
    return "output" if kind.endswith("_call_output") else "call" if kind.endswith("_call") else None


def _expand(line: int, obj, name: str) -> list[tuple[int, object]]:
    """One JSON value of an openai input as (line, message) pairs: a list, a message,
    an object holding ``messages`` (the fine-tuning format has one per line), a
    ChatGPT export's conversation (``mapping``) or Responses-API items."""
    if isinstance(obj, dict) and "messages" in obj and "role" not in obj:
        obj = obj["messages"]
        if not isinstance(obj, list):
            raise PamdError(f"{name}:{line}: field 'messages' must be a list")
    if isinstance(obj, list):
        return [p for m in obj for p in _expand_one(line, m, name)]
    return _expand_one(line, obj, name)


def _expand_one(line: int, obj, name: str) -> list[tuple[int, object]]:
    if isinstance(obj, dict) and "mapping" in obj and "role" not in obj:
        return [(line, m) for m in _chatgpt(obj, name, line)]
    if isinstance(obj, dict) and "role" not in obj and "type" in obj:
        return [(line, m) for m in _responses_item(obj, name, line)]
    if isinstance(obj, dict) and "role" in obj:
        return [(line, obj)]
    raise PamdError(f"{name}:{line}: expected a message with role and content, or a list of them",
                    "pamd reads chat-completions messages, Responses-API items and ChatGPT's "
                    "conversations.json")


def _responses_item(item: dict, name: str, line: int) -> list[_Said]:
    """A Responses-API item without a role: a tool call (`[tool NAME] args`, as Claude Code's
    are stored), its output (a tool result), an MCP approval request (a call) and response
    (`[tool result] approved` / `not approved: REASON`), or reasoning and an MCP server's
    tool list (skipped)."""
    kind = item.get("type")
    if kind in _SKIPPED_ITEMS:
        return []
    if kind == "message":
        raise PamdError(f"{name}:{line}: a Responses-API message item without a role")
    which = _item_kind(kind)
    if which is None:
        raise PamdError(f"{name}:{line}: Responses-API item type {str(kind)[:40]!r} is not one pamd reads",
                        "pamd reads message, *_call, *_call_output and MCP approval items; "
                        "reasoning and tool lists are skipped")
    if which == "approval":  # a person's yes or no to an MCP call the model asked to make
        reason = item.get("reason") if isinstance(item.get("reason"), str) else ""
        said = "approved" if item.get("approve") is True else "not approved"
        return [_Said("tool", f"[tool result] {said}" + (f": {reason}" if reason else ""))]
    out = []
    if which == "call":
        assert isinstance(kind, str)  # _item_kind names the kind of a str only
        tool = _name(item.get("name"), kind.removesuffix("_call"))
        args: object = next((item[k] for k in ("arguments", "input", "action", "code", "query", "queries")
                             if item.get(k) not in (None, "")), {})
        if isinstance(args, str):
            try:
                args = json.loads(args)
            except (ValueError, RecursionError):
                pass
        shown = args if isinstance(args, str) else json.dumps(args, ensure_ascii=False)
        out.append(_Said("assistant", f"[tool {tool}] {shown}"))
    output = item.get("output")
    if which == "output" or output not in (None, ""):  # an mcp_call carries its output too
        text = output if isinstance(output, str) else _content_text(output, name, line) \
            if isinstance(output, list) else json.dumps(output, ensure_ascii=False)
        error = item.get("error") if which == "call" else None
        out.append(_Said("tool", ("[tool error] " if error else "[tool result] ") + (text or str(error or ""))))
    return out


def _chatgpt(conv: dict, name: str, line: int) -> list[_Said]:
    """One conversation of a ChatGPT data export (conversations.json): the branch shown
    last, from `current_node` up its parents, as one session (its id, else its title)."""
    mapping = conv["mapping"]
    if not isinstance(mapping, dict):
        raise PamdError(f"{name}:{line}: a ChatGPT conversation's 'mapping' must be an object")
    sess = next((str(conv[k]) for k in ("conversation_id", "id", "title")
                 if isinstance(conv.get(k), str) and conv[k].strip()), None)
    node = conv.get("current_node")
    if node not in mapping:  # no branch chosen: follow the last child from the root
        node = next((k for k, v in mapping.items() if isinstance(v, dict) and not v.get("parent")), None)
        while node in mapping and isinstance(mapping[node], dict) and mapping[node].get("children"):
            node = mapping[node]["children"][-1]
    chain, seen = [], set()
    while node in mapping and node not in seen and isinstance(mapping[node], dict):
        seen.add(node)
        chain.append((node, mapping[node]))
        node = mapping[node].get("parent")
    out = []
    started = conv.get("create_time")
    last = _time(started, name, line) if isinstance(started, int | float) else None
    for node, n in reversed(chain):
        msg = n.get("message")
        if not isinstance(msg, dict):
            continue
        author = _object(msg.get("author"))
        meta = _object(msg.get("metadata"))
        if meta.get("is_visually_hidden_from_conversation"):
            continue
        content = _object(msg.get("content"))
        kind = content.get("content_type")
        if kind in ("thoughts", "reasoning_recap"):  # the model's reasoning: not remembered
            continue
        parts = [p if isinstance(p, str) else p["text"] for p in content.get("parts") or []
                 if isinstance(p, str) or (isinstance(p, dict) and isinstance(p.get("text"), str))]
        text = "\n".join(parts) if parts else next(
            (content[k] for k in ("text", "result") if isinstance(content.get(k), str)), "")
        role = _name(author.get("role"), "user")
        recipient = msg.get("recipient")
        if role == "assistant" and isinstance(recipient, str) and recipient not in ("", "all"):
            text = f"[tool {recipient}] {text}"
        elif role == "tool":
            text = "[tool result] " + text
        ts = msg.get("create_time")
        if isinstance(ts, int | float):
            last = _time(ts, name, line)
            out.append(_Said(role, text, last, sess))
        else:
            # A tool's or an old chat's system message has no time: the one before it in its
            # conversation (or the conversation's), else its node (never its place in the file,
            # which a later export with more conversations moves).
            out.append(_Said(role, text, last, sess, None if last else f"{sess or ''}/{node}"))
    return out


def _looks_jsonl(text: str) -> bool:
    first = text.split("\n", 1)[0].strip()
    try:
        json.loads(first)
    except (ValueError, RecursionError):
        return False
    return "\n" in text.strip() and first.startswith("{")


def _cut(text: str, limit: int, redactor: Redactor) -> int:
    """Where to cut `text` to at most `limit` characters without splitting a secret.

    A secret the cut would split, or leave without the context that marks it
    (a closing quote, the `@host` after a URL password), is cut off whole;
    redaction after the cut then finds every secret left in full.
    """
    if len(text) <= limit:
        return len(text)
    spans = [(s, e) for _, s, e in redactor.find(text[: limit + SECRET_REACH]) if s < limit]
    cut = limit
    while True:
        kept = {(s, e) for _, s, e in redactor.find(text[:cut])}
        lost = [s for s, e in spans if s < cut and (s, e) not in kept]
        if not lost:
            return cut
        cut = min(lost)


def _safe_cut(redactor: Redactor) -> toolcall.Cut:
    """`_cut` as a function of (text, limit): where a condensed text may cut a piece."""
    return lambda text, limit: _cut(text, limit, redactor)


def _truncate(text: str, limit: int, redactor: Redactor) -> str:
    cut = _cut(text, limit, redactor)
    if cut == len(text):
        return text
    return text[:cut] + f"\n…[{len(text) - cut} more characters in the source transcript]"


def _fit(text: str, redactor: Redactor) -> str:
    """A Claude Code message over 1 MiB (a log pasted into the prompt) cut to fit, as tool
    output is: nobody can split a session Claude Code writes, and refusing it would stop
    every later ingest of that session. Smaller messages are kept whole (their ids stay)."""
    data = text.encode("utf-8", "surrogatepass")
    if len(data) <= MAX_MESSAGE_BYTES:
        return text
    room = MAX_MESSAGE_BYTES - 100  # the note on what was cut
    return _truncate(text, len(data[:room].decode("utf-8", "ignore")), redactor)


def _claude(text: str, name: str, session: str, redactor: Redactor) -> list[Message]:
    out: list[Message] = []
    records = list(_jsonl(text, name))
    handed = _handovers(records)
    handed_over = {q for q, _ in handed.values()}
    queued = []  # (where, message): kept apart so the other messages keep their seq
    calls, failed = _claude_calls(records)
    turn_text: int | None = None  # where the turn's last assistant text is in `out`

    def enqueued(line: int, rec: dict) -> Message:
        return Message("user", _fit(rec["content"], redactor), _time(rec.get("timestamp"), name, line),
                       str(rec.get("sessionId") or session), len(out))

    def said(role: str, body: str, ts, sess: str, line: int, block: int, sidechain: bool = False) -> Message:
        # The record that hands a queued message over is that message, as its
        # enqueue alone gives it (a growing file may hold only the enqueue yet);
        # `was` keeps what older pamd read from this record.
        m = Message(role, _fit(body, redactor), ts, sess, len(out))
        if (line, block) in handed:
            return replace(enqueued(*handed[(line, block)]), was=m)
        if sidechain and role == "user":
            # A subagent's "user" is the agent that started it (its Task prompt), not the
            # person: stored as the assistant's words, so it is not taken for what the
            # person asked (STATE's goals and focus). Older pamd stored it as the user's.
            return replace(m, role="assistant", was=m)
        return m

    def end_turn() -> None:
        # The agent's last words before the person speaks again: its report of the turn.
        nonlocal turn_text
        if turn_text is not None and len(out[turn_text].text.strip()) >= REPORT_CHARS:
            out[turn_text] = replace(out[turn_text], fact="report")
        turn_text = None

    compactions: set[str] = set()
    for line, rec in records:
        if _enqueue(rec):
            if line not in handed_over:
                queued.append((len(out), enqueued(line, rec)))
            continue
        if not isinstance(rec, dict) or rec.get("type") not in ("user", "assistant"):
            continue
        msg = rec.get("message")
        if not isinstance(msg, dict):
            continue
        ts = _time(rec.get("timestamp"), name, line)
        # Claude Code's own compaction: the summary it injects (isCompactSummary) and the
        # transcript of its compaction worker (agent "acompact-…"), whose last answer is
        # that summary. Both give the same entry (its words, in the main session, known
        # by them rather than by their time); the worker's prompt and copies are skipped.
        if rec.get("isCompactSummary") or str(rec.get("agentId", "")).startswith("acompact"):
            summary = _compaction(rec)
            if summary and summary not in compactions:
                compactions.add(summary)
                out.append(Message("assistant", _fit(summary, redactor), ts,
                                   str(rec.get("sessionId") or session), len(out), key="compact",
                                   fact="compaction"))
            continue
        sess = str(rec.get("sessionId") or session)
        if rec.get("isSidechain") and rec.get("agentId"):
            sess = f"{sess}.{rec['agentId']}"
        content = msg.get("content")
        if rec.get("isMeta"):  # a skill or command expanded by the harness: its instructions, not a message
            text = _content_text(content, name, line)
            out.append(Message("system", _truncate(text, CALL_CHARS, redactor), ts, sess, len(out)))
            continue
        role = msg.get("role")
        role = role if isinstance(role, str) and role else rec["type"]
        side = bool(rec.get("isSidechain"))
        if isinstance(content, str):
            if role == "user" and not side and not content.lstrip().startswith("<system-reminder>"):
                end_turn()
            out.append(said(role, content, ts, sess, line, -1, side))
            if role == "assistant":
                turn_text = len(out) - 1
            continue
        if not isinstance(content, list):
            continue
        for i, block in enumerate(content):
            if not isinstance(block, dict):
                continue
            kind = block.get("type")
            if kind == "text" and isinstance(block.get("text"), str):
                if role == "user" and not side and not block["text"].lstrip().startswith("<system-reminder>"):
                    end_turn()
                out.append(said(role, block["text"], ts, sess, line, i, side))
                if role == "assistant":
                    turn_text = len(out) - 1
            elif kind == "tool_use":
                out.append(_call_message(str(block.get("name", "?")), block.get("input", {}),
                                         failed.get(str(block.get("id"))), ts, sess, len(out), redactor))
            elif kind == "tool_result":
                body = _content_text(block.get("content"), name, line)
                call = calls.get(str(block.get("tool_use_id")))
                out.append(_result_message(body, bool(block.get("is_error")), call, ts, sess, len(out), redactor))
            # "thinking" blocks are the model's private scratchpad: not remembered.
    end_turn()
    for where, m in reversed(queued):
        out.insert(where, m)
    return out


def _claude_calls(records) -> tuple[dict[str, tuple[str, object]], dict[str, bool]]:
    """Every tool call by its id, (name, input); and for each call whose result is in the
    file, whether that result is an error."""
    calls: dict[str, tuple[str, object]] = {}
    failed: dict[str, bool] = {}
    for _, rec in records:
        msg = rec.get("message") if isinstance(rec, dict) else None
        content = msg.get("content") if isinstance(msg, dict) else None
        if not isinstance(content, list):
            continue
        for block in content:
            if not isinstance(block, dict):
                continue
            if block.get("type") == "tool_use":
                calls[str(block.get("id"))] = (str(block.get("name", "?")), block.get("input", {}))
            elif block.get("type") == "tool_result":
                failed[str(block.get("tool_use_id"))] = bool(block.get("is_error"))
    return calls, failed


def _call_message(tool: str, args, failed: bool | None, ts, sess: str, seq: int, redactor: Redactor,
                  *, legacy: bool = True) -> Message:
    """A tool call as `[tool NAME] {json arguments}`: a commit message, a close reason and
    a small file written or edited whole (a larger one as its head, changed lines and
    tail); other calls cut at CALL_CHARS. A commit or close whose result was an error
    (a failed pre-commit hook) carries no fact: the attempt that succeeded does."""
    what = toolcall.kind(tool, args)
    plain = _truncate(f"[tool {tool}] {json.dumps(args, ensure_ascii=False)}", CALL_CHARS, redactor)
    if what not in (toolcall.COMMIT, toolcall.CLOSE, toolcall.WRITE, toolcall.EDIT):
        return Message("assistant", plain, ts, sess, seq)
    kept = toolcall.keep_args(tool, args, _safe_cut(redactor))
    body = _truncate(f"[tool {tool}] {json.dumps(kept, ensure_ascii=False)}", KEPT_CALL_CHARS, redactor)
    fact = what if what in (toolcall.COMMIT, toolcall.CLOSE) and failed is False else None
    was = Message("assistant", plain, ts, sess, seq) if legacy and body != plain else None
    return Message("assistant", body, ts, sess, seq, was=was, fact=fact)


_EXIT = re.compile(r"\A\s*(?:exit code|process exited with code)[: ]\s*([1-9]\d*)", re.IGNORECASE)
_TEST_FAILED = re.compile(r"(?i)\b[1-9]\d* (?:failed|failures?|errors?)\b|^FAILED\b|\bFAIL\b|\btests? failed\b",
                          re.MULTILINE)


def _result_message(body: str, error: bool, call: tuple[str, object] | None, ts, sess: str, seq: int,
                    redactor: Redactor, *, legacy: bool = True) -> Message:
    """A tool's output as `[tool result] …` / `[tool error] …`: a ticket or spec shown and a
    subagent's report up to SPEC_CHARS, a failing output as its head, every line naming
    an error and its tail; other output (re-readable: files, listings, passing runs) cut
    at TOOL_RESULT_CHARS."""
    prefix = "[tool error] " if error else "[tool result] "
    plain = _truncate(prefix + body, TOOL_RESULT_CHARS, redactor)
    what = toolcall.kind(*call) if call else None
    error = error or bool(_EXIT.match(body)) or (what == toolcall.TEST and bool(_TEST_FAILED.search(body)))
    if what in (toolcall.SPEC, toolcall.AGENT):
        kept, fact = _truncate(prefix + body, SPEC_CHARS, redactor), "spec" if what == toolcall.SPEC else "report"
    elif what in (toolcall.COMMIT, toolcall.CLOSE) and not error:
        # The proof the commit landed (`[main 4f2a9c1] subject`) or the task closed: what
        # STATE counts as finished work.
        return Message("tool", plain, ts, sess, seq, fact=what)
    elif what == toolcall.ANSWER and not error:
        # The person's choice among the options the agent offered: a decision only they made.
        return Message("tool", plain, ts, sess, seq, fact="answer")
    elif error:
        view = toolcall.failure_view(body, cut=_safe_cut(redactor))
        kept, fact = _truncate(prefix + view, FAILURE_CHARS, redactor), "failure"
    elif what == toolcall.LISTING and not error:
        assert call is not None  # `what` is None without a call
        # Not trash: a week later it is what was open then. Its command heads it (a
        # summary of it later meets the output without the call), cut as other output is.
        cmd = " ".join(toolcall.command(*call).split())
        cmd = cmd[:_cut(cmd, LISTING_COMMAND_CHARS, redactor)]
        kept, fact = _truncate(f"{prefix}{toolcall.LISTING_HEAD}{cmd}\n{body}", TOOL_RESULT_CHARS, redactor), "listing"
    else:
        return Message("tool", plain, ts, sess, seq)
    was = Message("tool", plain, ts, sess, seq) if legacy and kept != plain else None
    return Message("tool", kept, ts, sess, seq, was=was, fact=fact)


# Claude Code's wrapping of its injected summary, and its compaction worker's tags.
_CONTINUED = re.compile(r"\AThis session is being continued from a previous conversation[^\n]*(?:\n+|\Z)")
_CONTINUE_TAIL = re.compile(r"\n+(?:If you need specific details from before compaction|Please continue the "
                            r"conversation from where we left)[\s\S]*\Z")
_SUMMARY_TAG = re.compile(r"<summary>\s*([\s\S]*?)\s*(?:</summary>|\Z)")
_SUMMARY_HEAD = re.compile(r"^Summary:\s*\n", re.MULTILINE)


def _compaction(rec: dict) -> str:
    """The summary in a compaction record, as `[compaction summary]` and its summary part
    (the worker's <analysis> is its scratchpad, like thinking); "" for the worker's prompt
    and the other records of its transcript."""
    msg = rec.get("message")
    if not isinstance(msg, dict):
        return ""
    content = msg.get("content")
    if isinstance(content, list):
        content = "\n".join(b["text"] for b in content
                            if isinstance(b, dict) and b.get("type") == "text" and isinstance(b.get("text"), str))
    if not isinstance(content, str) or not content.strip():
        return ""
    if rec.get("isCompactSummary"):
        text = _CONTINUE_TAIL.sub("", _CONTINUED.sub("", content.strip()))
        head = _SUMMARY_HEAD.search(text)
        text = text[head.end():] if head else text
    elif msg.get("role") == "assistant" or rec.get("type") == "assistant":
        tag = _SUMMARY_TAG.search(content)
        if tag is None:
            return ""
        text = tag.group(1)
    else:
        return ""
    text = text.strip()
    return f"{COMPACTION_HEAD}\n{text}" if text else ""


# Codex puts its harness context in user and developer messages: the project's AGENTS.md,
# the environment, permissions. Instructions, not something the person said.
_CODEX_CONTEXT = re.compile(r"\A\s*(?:<(?:environment_context|user_instructions|permissions instructions|"
                            r"user_shell_command|turn_aborted)\b|# AGENTS\.md instructions)")
_CODEX_RECORDS = ("session_meta", "response_item", "event_msg", "turn_context", "compacted")


def _codex_output(raw) -> tuple[str, bool]:
    """A Codex tool output as (text, failed): `{"output": …, "metadata": {"exit_code": N}}`
    (older CLIs), or text that may start `Exit code: N` (newer ones)."""
    if isinstance(raw, list):
        raw = "\n".join(p.get("text", "") for p in raw if isinstance(p, dict) and isinstance(p.get("text"), str))
    if not isinstance(raw, str):
        raw = json.dumps(raw, ensure_ascii=False)
    try:
        value = json.loads(raw) if raw.lstrip().startswith("{") else None
    except (ValueError, RecursionError):
        value = None
    if isinstance(value, dict) and isinstance(value.get("output"), str):
        meta = _object(value.get("metadata"))
        code = meta.get("exit_code")
        return value["output"], isinstance(code, int) and code != 0
    m = re.match(r"\s*Exit code:\s*(-?\d+)", raw)
    return raw, bool(m and m.group(1) != "0")


def _codex(text: str, name: str, session: str, redactor: Redactor) -> list[Message]:
    """A Codex CLI rollout (~/.codex/sessions/YYYY/MM/DD/rollout-*.jsonl): `session_meta`
    names the session; `response_item`s are the messages (input_text/output_text parts),
    `function_call`/`custom_tool_call` (arguments a JSON string, `call_id`) and their
    `*_output`; `compacted` is Codex's own summary of the session so far. Reasoning,
    `event_msg` (the same messages again, token counts) and `turn_context` are skipped."""
    records = list(_jsonl(text, name))
    sess = session
    calls: dict[str, tuple[str, object]] = {}
    failed: dict[str, bool] = {}
    for _, rec in records:
        p = rec.get("payload") if isinstance(rec, dict) else None
        if not isinstance(p, dict):
            continue
        if rec.get("type") == "session_meta" and sess == session:
            sid = p.get("id") or p.get("session_id")
            if isinstance(sid, str) and sid.strip():
                sess = sid
        elif rec.get("type") == "response_item" and isinstance(p.get("call_id"), str):
            if p.get("type") in ("function_call", "custom_tool_call", "local_shell_call"):
                calls[p["call_id"]] = _codex_call(p)
            elif p.get("type") in ("function_call_output", "custom_tool_call_output"):
                failed[p["call_id"]] = _codex_output(p.get("output"))[1]
    out: list[Message] = []
    turn_text: int | None = None
    compactions: set[str] = set()

    def end_turn() -> None:
        nonlocal turn_text
        if turn_text is not None and len(out[turn_text].text.strip()) >= REPORT_CHARS:
            out[turn_text] = replace(out[turn_text], fact="report")
        turn_text = None

    for line, rec in records:
        if not isinstance(rec, dict) or rec.get("type") not in _CODEX_RECORDS:
            continue
        p = rec.get("payload")
        if not isinstance(p, dict):
            continue
        ts = _time(rec.get("timestamp"), name, line)
        kind = rec.get("type")
        if kind == "compacted":
            said = p.get("message")
            summary = f"{COMPACTION_HEAD}\n{said.strip()}" if isinstance(said, str) and said.strip() else ""
            if summary and summary not in compactions:
                compactions.add(summary)
                out.append(Message("assistant", _fit(summary, redactor), ts, sess, len(out), key="compact",
                                   fact="compaction"))
            continue
        if kind != "response_item":
            continue
        item = p.get("type")
        if item == "message":
            role = r if isinstance(r := p.get("role"), str) else "user"
            body = _content_text(p.get("content"), name, line)
            if not body.strip():
                continue
            if role == "developer" or (role == "user" and _CODEX_CONTEXT.match(body)):
                out.append(Message("system", _truncate(body, CALL_CHARS, redactor), ts, sess, len(out)))
                continue
            if role == "user":
                end_turn()
            out.append(Message(role, _fit(body, redactor), ts, sess, len(out)))
            if role == "assistant":
                turn_text = len(out) - 1
        elif item in ("function_call", "custom_tool_call", "local_shell_call"):
            tool, args = _codex_call(p)
            out.append(_call_message(tool, args, failed.get(str(p.get("call_id"))), ts, sess, len(out),
                                     redactor, legacy=False))
        elif item in ("function_call_output", "custom_tool_call_output"):
            body, bad = _codex_output(p.get("output"))
            out.append(_result_message(body, bad, calls.get(str(p.get("call_id"))), ts, sess, len(out),
                                       redactor, legacy=False))
        elif isinstance(item, str) and item.endswith("_call") and item != "local_shell_call":
            args = {k: v for k, v in p.items() if k not in ("type", "id", "status", "call_id")}
            out.append(Message("assistant", _truncate(f"[tool {item.removesuffix('_call')}] "
                                                      f"{json.dumps(args, ensure_ascii=False)}", CALL_CHARS,
                                                      redactor), ts, sess, len(out)))
        # reasoning: the model's private scratchpad, not remembered.
    end_turn()
    return out


def _codex_call(p: dict) -> tuple[str, object]:
    """A Codex call's tool name and arguments (a JSON string decoded; a custom tool's
    free-form input as {"input": …}; a local shell call's action)."""
    tool = _name(p.get("name"), str(p.get("type", "?")))
    if p.get("type") == "local_shell_call":
        action = _object(p.get("action"))
        return "local_shell", {"command": action.get("command", "")}
    raw = p.get("arguments", p.get("input", {}))
    if isinstance(raw, str):
        try:
            value = json.loads(raw)
        except (ValueError, RecursionError):
            value = raw
        raw = value if isinstance(value, dict) else {"input": raw}
    if isinstance(raw, dict) and isinstance(raw.get("command"), list):
        raw = {**raw, "command": toolcall.command(tool, raw)}  # `bash -lc CMD` as the command it runs
    return tool, raw


def _enqueue(rec) -> bool:
    """A queue-operation "enqueue": a message the user typed while the agent worked."""
    return (isinstance(rec, dict) and rec.get("type") == "queue-operation" and rec.get("operation") == "enqueue"
            and isinstance(rec.get("content"), str) and bool(rec["content"].strip()))


def _user_blocks(rec) -> list[tuple[int, str]]:
    """The texts a user record says, as (block, text); -1 for a string content."""
    if not (isinstance(rec, dict) and rec.get("type") == "user") or rec.get("isMeta") \
            or rec.get("isCompactSummary") or str(rec.get("agentId", "")).startswith("acompact"):
        return []
    msg = rec.get("message")
    content = msg.get("content") if isinstance(msg, dict) else None
    if isinstance(content, str):
        return [(-1, content.strip())]
    if isinstance(content, list):
        return [(i, b["text"].strip()) for i, b in enumerate(content)
                if isinstance(b, dict) and b.get("type") == "text" and isinstance(b.get("text"), str)]
    return []


def _handovers(records) -> dict[tuple[int, int], tuple[int, dict]]:
    """Which user text hands over which queued message: {(line, block): (line, enqueue)}.

    Claude Code logs a message typed while the agent worked as a queue-operation
    "enqueue". One it slips into the running turn is then taken off the queue
    ("remove", naming nothing: the message queued last) and exists only as its
    enqueue. One it hands over when the turn ends (a task notification, a slash
    command) is the next user record the person did not type meanwhile: the same
    words, or for a command a record naming it with the same arguments. A record
    that hands over none of the queued messages shows the queue was emptied, so
    a later message with the same words is a new one, never a queued one.
    """
    pending: list[tuple[int, dict]] = []
    out: dict[tuple[int, int], tuple[int, dict]] = {}
    for line, rec in records:
        if _enqueue(rec):
            pending.append((line, rec))
            continue
        if isinstance(rec, dict) and rec.get("type") == "queue-operation" and rec.get("operation") == "remove":
            if pending:
                pending.pop()
            continue
        if not pending or not isinstance(rec, dict) or rec.get("isSidechain"):
            continue
        said = [(block, text) for block, text in _user_blocks(rec) if text and not text.startswith(_INTERRUPTED)]
        handed = False
        for block, text in said:
            q = next((q for q in pending if _hands_over(text, q[1]["content"].strip())), None)
            if q is not None:
                out[(line, block)] = q
                pending.remove(q)
                handed = True
        if said and not handed:
            pending.clear()
    return out


# What Claude Code writes as a user record when the person stops the agent: not a message typed.
_INTERRUPTED = "[Request interrupted by user"
_COMMAND = re.compile(r"<command-name>\s*(/?[^<\s]*)\s*</command-name>")
_ARGS = re.compile(r"<command-args>([\s\S]*?)</command-args>")


def _hands_over(text: str, typed: str) -> bool:
    """Whether a user record's `text` is the queued message `typed`: the same words,
    or the harness's record of the slash command typed (its name and arguments)."""
    if text == typed:
        return True
    if not typed.startswith("/"):
        return False
    name = _COMMAND.search(text)
    if name is None:
        return False
    cmd, args = ([*typed.split(None, 1), ""])[:2]
    given = _ARGS.search(text)
    return ("/" + name.group(1).lstrip("/") == cmd
            and (given.group(1) if given else "").split() == args.split())


def _markdown(text: str, name: str, session: str) -> list[Message]:
    m = _DAILY.search(PurePath(name).name)
    day = m.group(1) if m else None
    try:
        base = datetime.fromisoformat(day).replace(tzinfo=UTC) if day else None
    except ValueError:
        base = None  # not a calendar date: an undated note
    if base is not None:
        assert day is not None  # base is set only from a day
        try:
            base = parse_time(day)
        except ValueError:
            raise PamdError(f"{name}: date {day} in the file name is outside the years 1900..9998",
                            "rename the note to its real date") from None
        session = f"daily-{day}"
    # An item without HH:MM is known by its day (or its undated note) and text,
    # never by its place in the note, so adding an item above it makes no copy.
    key = day if base is not None else "undated"
    out: list[Message] = []
    para: list[str] = []
    lines = text.split("\n")
    if lines and lines[0].strip() == "---":  # skip a note's own frontmatter
        for i in range(1, len(lines)):
            if lines[i].strip() == "---":
                lines = lines[i + 1 :]
                break

    def flush() -> None:
        if para:
            body = "\n".join(para).strip()
            para.clear()
            if body:
                ts, k = None, key
                tm = _TIME.match(body)
                if base is not None:
                    # noon, plus its place so the L0 keeps the note's order (not part of the id)
                    ts = base + timedelta(hours=12, seconds=len(out))
                    if tm and int(tm.group(1)) < 24 and int(tm.group(2)) < 60:
                        ts, k = base + timedelta(hours=int(tm.group(1)), minutes=int(tm.group(2)),
                                                 seconds=int(tm.group(3) or 0)), None
                        body = body[tm.end():]
                out.append(Message("note", body, ts, session, len(out), key=k))

    fence: re.Match | None = None  # the open code fence, if inside one
    for ln in lines:
        s = ln.strip()
        if fence is not None:
            # a fenced block is one message, kept as written (its indentation too)
            indent = len(fence.group(1))
            para.append(ln[min(indent, len(ln) - len(ln.lstrip(" "))):])
            if s.startswith(fence.group(2)) and not s.lstrip(fence.group(2)[0]):
                fence = None
                flush()
            continue
        f = _FENCE.match(ln)
        if f:
            flush()
            fence = f
            para.append(s)
            continue
        if not s:
            flush()
            continue
        if s.startswith("#"):
            # a heading (or a #tag line) is a note of its own, so the items around
            # it keep the ids an older pamd, which dropped these lines, gave them;
            # the title that only repeats the note's date is the entries' day already
            flush()
            if day is None or s.lstrip("#").strip() != day:
                para.append(s)
                flush()
            continue
        if re.match(r"^([-*+]|\d+[.)])\s+", s):
            flush()
            s = re.sub(r"^([-*+]|\d+[.)])\s+(\[[ xX]\]\s+)?", "", s)
        para.append(s)
    flush()
    return out
