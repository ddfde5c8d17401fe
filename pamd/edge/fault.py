"""Test-only fault injection: a pamd process SIGKILLs itself at its N-th checkpoint.

tests/test_crash.py uses this to kill real runs at every point where a brain is
being changed (each temp-file write, fsync, os.replace, git add, git commit,
journal step, recovery step), deterministically, instead of hoping a random
timer lands there. Nothing here runs unless the variables are set; unset, a
checkpoint costs one falsy test.

    PAMD_FAULT_AT=N          SIGKILL this process at its N-th checkpoint
    PAMD_FAULT_AT=N:SECONDS  at the N-th checkpoint arm a timer that SIGKILLs the
                             process SECONDS later while the run goes on, so the
                             kill lands inside a git subprocess, an fsync, ...
    PAMD_FAULT_LOG=FILE      append each checkpoint's name to FILE (to count them)

Only the process itself is killed; its git children live on, as after a real
`kill -9` or the OOM killer.
"""

from __future__ import annotations

import os
import signal
import threading

_spec = os.environ.get("PAMD_FAULT_AT", "")
_log = os.environ.get("PAMD_FAULT_LOG", "")
ACTIVE = bool(_spec or _log)
_at, _, _delay = _spec.partition(":")
_count = 0


def _die() -> None:
    os.kill(os.getpid(), signal.SIGKILL)


def checkpoint(name: str) -> None:
    """A point where a kill must leave the brain recoverable (no-op unless testing)."""
    if not ACTIVE:
        return
    global _count
    _count += 1
    if _log:
        with open(_log, "a", encoding="utf-8") as f:
            f.write(f"{_count} {name}\n")
    if _at and _count == int(_at):
        if _delay:
            t = threading.Timer(float(_delay), _die)
            t.daemon = True
            t.start()
        else:
            _die()
