"""Commit messages: user text in one line each, and pamd's trailers read only from a
trailer block.

The scheduler (`Pamd-Run:`/`Pamd-Now:`) and fsck (`Dropped` lines) trust what pamd's
commit messages say. A transcript's file name, a daily note's name or a server's error
text that carried a line break into a message could forge such a line; every piece of
text pamd did not write itself goes through `one_line` first.
"""

from __future__ import annotations

import re

# Line breaks of every kind git, an editor or a terminal might honour, and the other
# control characters (a terminal escape in a file name would also act on `git log`).
_CONTROL = re.compile(r"[\x00-\x1f\x7f\x85\u2028\u2029]")
_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}
_TRAILER = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9-]*):\s?(.*)$")
# What pamd's own machinery reads from a message: a line of the title or body that looks
# like one of these is someone's text, never pamd's.
_OURS = re.compile(r"^\s*(Pamd-[A-Za-z0-9-]+\s*:|Dropped\s*:)")


def one_line(text: str) -> str:
    """`text` with line breaks and control characters shown as escapes (`\\n`, `\\x1b`)."""
    return _CONTROL.sub(_escape, text)


def _escape(m: re.Match[str]) -> str:
    c = m.group()
    if c in _NAMED:
        return _NAMED[c]
    return f"\\x{ord(c):02x}" if ord(c) < 0x100 else f"\\u{ord(c):04x}"


def paragraphs(message: str) -> list[list[str]]:
    out: list[list[str]] = [[]]
    for line in message.split("\n"):
        if line.strip():
            out[-1].append(line)
        elif out[-1]:
            out.append([])
    return [p for p in out if p]


def trailer_blocks(message: str) -> list[list[tuple[str, str]]]:
    """Each paragraph made only of `Key: value` lines (inside a code fence or not), as
    (key, value) pairs: a plain commit's trailer block is its last paragraph; a squash
    merge holds one per squashed commit (indented by git, or pasted into a pull request's
    description)."""
    blocks = []
    for para in paragraphs(message):
        # a pull request's description shows them fenced as code (pamd-nightly.yml)
        while para and para[0].strip().startswith("```"):
            para = para[1:]
        while para and para[-1].strip() == "```":
            para = para[:-1]
        if not para:
            continue
        pairs = [m.groups() for line in para if (m := _TRAILER.match(line))]
        if len(pairs) == len(para):
            blocks.append([(k, v.strip()) for k, v in pairs])
    return blocks


def seal(message: str) -> str:
    """A pamd commit message whose title and body cannot pass for trailers: any line
    outside the last paragraph that reads like pamd's (`Pamd-…:`, `Dropped:`) is quoted.
    pamd writes its own such lines only in the trailer block; one elsewhere came from text
    that was not pamd's."""
    lines = message.rstrip("\n").split("\n")
    last = len(lines)
    while last > 0 and lines[last - 1].strip():
        last -= 1
    body = ["> " + ln if _OURS.match(ln) else ln for ln in lines[:last]]
    return "\n".join(body + lines[last:]) + "\n"
