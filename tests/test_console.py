"""The library logs and prints nothing itself; the entry points show its records as the
`pamd: note: …` and `pamd: warning: …` lines a person has always read."""

from __future__ import annotations

import io
import logging
import sys
import threading

from pamd.core.console import WAITING, human_log, service_log
from pamd.core.visible import human_streams

log = logging.getLogger("pamd.test")


def test_a_library_user_sees_nothing_unless_they_ask(capsys):
    """pamd's NullHandler keeps Python's last-resort handler (WARNING and up, on stderr) quiet."""
    from pamd.recall import rerank

    rerank.warn("the reranker did not load (OSError: gone)")
    log.info("a note")
    assert capsys.readouterr() == ("", "")
    assert logging.getLogger("pamd").propagate  # a program's own root handlers still get them


def test_a_program_that_configures_logging_gets_the_records(caplog):
    from pamd.recall import rerank

    with caplog.at_level(logging.WARNING, logger="pamd"):
        rerank.warn("the reranker did not load (OSError: gone)")
    (rec,) = [r for r in caplog.records if r.name == "pamd.recall.rerank"]
    assert rec.levelno == logging.WARNING and rec.getMessage().startswith("the reranker did not load")


def test_an_entry_point_shows_notes_warnings_and_waits_as_before(capsys, monkeypatch):
    with human_log():
        log.info("kept the commit of a pamd run that was killed mid-commit")
        log.warning("this clone is shallow")
        log.debug("not for a person")
        log.info("gemini: 503 UNAVAILABLE, retrying in 2 s", extra=WAITING)  # stderr is no terminal here
        monkeypatch.setattr(sys.stderr, "isatty", lambda: True, raising=False)
        log.info("gemini: 503 UNAVAILABLE, retrying in 4 s", extra=WAITING)
    assert capsys.readouterr().err == (
        "pamd: note: kept the commit of a pamd run that was killed mid-commit\n"
        "pamd: warning: this clone is shallow\n"
        "pamd: gemini: 503 UNAVAILABLE, retrying in 4 s\n")
    log.warning("after the block")
    assert capsys.readouterr().err == ""


def test_lines_go_through_the_stream_that_escapes_stored_text():
    err = io.StringIO()
    old = sys.stderr
    sys.stderr = err
    try:
        with human_streams(stdout=False), human_log():
            log.warning("a name from the brain: notes\x1b]52;c;aGk=\x07.md")
    finally:
        sys.stderr = old
    assert err.getvalue() == "pamd: warning: a name from the brain: notes\\x1b]52;c;aGk=\\x07.md\n"


def test_blocks_nested_and_side_by_side_show_each_line_once(capsys):
    inside = threading.Event()
    leave = threading.Event()

    def other() -> None:
        with human_log():
            inside.set()
            leave.wait(10)

    t = threading.Thread(target=other)
    t.start()
    inside.wait(10)
    with human_log(), human_log():
        log.info("once")
    leave.set()
    t.join()
    assert capsys.readouterr().err == "pamd: note: once\n"
    assert logging.getLogger("pamd").handlers == [h for h in logging.getLogger("pamd").handlers
                                                  if isinstance(h, logging.NullHandler)]


def test_a_service_log_keeps_its_format_and_the_notes_theirs(capsys):
    """The daemon logs its runs with timestamps through the root logger's handler; pamd's
    notes in it are said once, as a command says them, not also in the daemon's format."""
    root = logging.getLogger()
    service = io.StringIO()
    catch_all = io.StringIO()
    everything = logging.StreamHandler(catch_all)
    root.addHandler(everything)
    own = logging.StreamHandler(service)
    own.setFormatter(logging.Formatter("daemon %(message)s"))
    try:
        with human_log(), service_log("pamd.daemon", own, logging.INFO):
            logging.getLogger("pamd.daemon").info("compact: nothing to do")
            log.info("removed a stale worktree")
    finally:
        root.removeHandler(everything)
    assert service.getvalue() == "daemon compact: nothing to do\n"
    assert capsys.readouterr().err == "pamd: note: removed a stale worktree\n"
    assert catch_all.getvalue() == ""
    assert logging.getLogger("pamd.daemon").propagate
