"""Text shown to a person: control characters from stored text made visible.

A brain holds text from tools, people and other agents (a clone, a synapse). Raw
ESC sequences in it would reach a terminal as commands: colours, a cleared screen,
OSC 8 links that show one address and open another, OSC 52 writing the clipboard;
a carriage return or backspace overprints what came before, and bidi overrides
(U+202E) show text in another order than it has. Human output shows each such
character as an escape (`\\x1b`, `\\u202e`); files and `--json` stay exact.
"""

from __future__ import annotations

import re
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager

# C0 controls but tab and newline, DEL, C1 controls (U+009B is CSI too), and the bidi
# embeddings, overrides and isolates.
_HIDDEN = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def _escape(m: re.Match) -> str:
    c = ord(m.group())
    return f"\\x{c:02x}" if c < 0x100 else f"\\u{c:04x}"


def visible(text: str) -> str:
    """`text` with every control character that would act on a terminal shown as an escape."""
    return _HIDDEN.sub(_escape, text)


class VisibleStream:
    """A text stream that writes `visible(text)` to `stream` (sys.stdout/err of a human command)."""

    def __init__(self, stream) -> None:
        self._stream = stream

    def write(self, text: str) -> int:
        self._stream.write(visible(text))
        return len(text)

    def writelines(self, lines) -> None:
        for line in lines:
            self.write(line)

    def __getattr__(self, name: str):
        return getattr(self._stream, name)


def raw(stream):
    """The stream under a VisibleStream, for pamd's own control characters (a progress line's CR)."""
    return stream._stream if isinstance(stream, VisibleStream) else stream


@contextmanager
def human_streams(stdout: bool = True, stderr: bool = True) -> Iterator[None]:
    """sys.stdout and/or sys.stderr through VisibleStream for the block, on the main thread.

    The two are the whole process's: print() writes to sys.stdout through a borrowed
    reference (CPython 3.11), so a thread that swaps them while another thread prints
    frees a stream in use, and the process dies with SIGSEGV. A program's entry point
    runs on the main thread and swaps them there; a call from another thread (tests
    running commands side by side) leaves them as they are."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    out, err = sys.stdout, sys.stderr
    if stdout:
        sys.stdout = VisibleStream(out)
    if stderr:
        sys.stderr = VisibleStream(err)
    try:
        yield
    finally:
        if stdout:
            sys.stdout = out
        if stderr:
            sys.stderr = err
