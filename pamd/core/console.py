"""What a person at a terminal sees on stderr besides a command's own output: pamd's log
lines and progress bars.

The library logs to module loggers under `pamd` (`logging.getLogger(__name__)`): INFO for a
note, WARNING for a warning, and `extra=WAITING` for why a run sits there. It prints
nothing itself: a program that imports pamd sees these records only through a handler of
its own (the `pamd` logger holds a NullHandler, so Python's last-resort handler stays
quiet). The entry points (the CLI, `pamd-hook`, the MCP server, the Claude Code hooks' job)
show them with `human_log()`:

    pamd: note: kept the commit of a pamd run that was killed mid-commit
    pamd: warning: the reranker did not load (...); recall ranks without it (...)
    pamd: gemini: 503 UNAVAILABLE, retrying in 2 s          (WAITING: on a terminal only)
"""

from __future__ import annotations

import logging
import os
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

ROOT = "pamd"
# For a record that only says why a run sits there (a retry's wait): a person at a terminal
# is told, cron is not (it mails any stderr), nor is the daemon's log. `log.info(..., extra=WAITING)`
WAITING = {"waiting": True}
LABELS = {logging.INFO: "note: ", logging.WARNING: "warning: ", logging.ERROR: "error: ",
          logging.CRITICAL: "error: "}


class HumanFormatter(logging.Formatter):
    """`pamd: note: …`, `pamd: warning: …`; a WAITING record as `pamd: …`."""

    def formatMessage(self, record: logging.LogRecord) -> str:  # noqa: N802 - logging's name
        label = "" if getattr(record, "waiting", False) else LABELS.get(record.levelno, "")
        return f"pamd: {label}{record.message}"


class HumanHandler(logging.Handler):
    """Writes each record as one line to sys.stderr as it is when the record comes: a command
    swaps it for the stream that shows stored text's control characters escaped
    (pamd.core.visible), and a test for its capture."""

    def __init__(self) -> None:
        super().__init__(logging.INFO)
        self.setFormatter(HumanFormatter())

    def filter(self, record: logging.LogRecord) -> bool:
        if getattr(record, "waiting", False) and not _isatty(sys.stderr):
            return False
        return bool(super().filter(record))

    def emit(self, record: logging.LogRecord) -> None:
        try:
            line = self.format(record)
            stream = sys.stderr
            stream.write(line + "\n")
            stream.flush()
        except RecursionError:
            raise
        except Exception:  # noqa: BLE001 - logging's own rule: a line that cannot be written is not the run's failure
            self.handleError(record)


def _isatty(stream) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError, OSError):
        return False


_HANDLER = HumanHandler()
_lock = threading.Lock()
_users = 0
_saved: tuple[int, bool] = (logging.NOTSET, True)


@contextmanager
def human_log() -> Iterator[None]:
    """pamd's log records shown on stderr as a person reads them, for the block.

    Nested and concurrent blocks (commands run side by side on threads, a hook that runs
    another entry point) share one handler: each record is shown once. While any block
    runs, pamd's records do not also go on to the root logger's handlers, where a
    service's own log format (the daemon's timestamps) would say them a second time."""
    global _users, _saved
    logger = logging.getLogger(ROOT)
    with _lock:
        if _users == 0:
            _saved = (logger.level, logger.propagate)
            logger.addHandler(_HANDLER)
            if logger.getEffectiveLevel() > logging.INFO:
                logger.setLevel(logging.INFO)
            logger.propagate = False
        _users += 1
    try:
        yield
    finally:
        with _lock:
            _users -= 1
            if _users == 0:
                logger.removeHandler(_HANDLER)
                logger.setLevel(_saved[0])
                logger.propagate = _saved[1]


@contextmanager
def service_log(name: str, handler: logging.Handler, level: int) -> Iterator[logging.Logger]:
    """The logger `name` (the daemon's, the MCP server's) written by `handler` alone, at
    `level`, for the block: a service's log has a format of its own, and its lines are
    not pamd's notes to a person."""
    logger = logging.getLogger(name)
    saved = (logger.level, logger.propagate)
    logger.addHandler(handler)
    logger.setLevel(level)
    logger.propagate = False
    try:
        yield logger
    finally:
        logger.removeHandler(handler)
        logger.setLevel(saved[0])
        logger.propagate = saved[1]


class Progress:
    """A progress bar on a terminal's stderr, for a step still running after PAMD_PROGRESS_AFTER
    seconds (default 2); nothing when stderr is not a terminal (a pipe, a hook, a log)."""

    WIDTH = 24
    phases = True  # also told of steps before embedding (recall.store.changes)

    def __init__(self, quiet: bool = False, what: str = "embedding") -> None:
        self.on = sys.stderr.isatty() and not quiet
        self.what = what
        self.shown = False
        try:
            self.after = float(os.environ.get("PAMD_PROGRESS_AFTER", "2"))
        except ValueError:
            self.after = 2.0
        self.t0 = time.monotonic()

    def __call__(self, done: int, total: int, what: str | None = None) -> None:
        if not self.on:
            return
        took = time.monotonic() - self.t0
        if took < self.after and not self.shown:
            return
        from pamd.core.visible import raw

        fill = round(self.WIDTH * done / total) if total else self.WIDTH
        bar = "#" * fill + "-" * (self.WIDTH - fill)
        # its own CR redraws the line: past the stream that shows stored text's escaped
        print(f"\r{what or self.what} [{bar}] {done}/{total} {took:.0f} s\033[K", end="", file=raw(sys.stderr),
              flush=True)
        self.shown = True

    def done(self) -> None:
        if self.shown:
            print(file=sys.stderr)
