"""Claude Code hooks: `pamd-hook claude` reads the hook's JSON on stdin and acts on its
`hook_event_name`.

- SessionStart (startup, resume, clear, compact): prints the boot brief as
  `hookSpecificOutput.additionalContext`, within BRIEF_CHARS (Claude Code keeps hook
  output over 10,000 characters in a file and shows the model a short preview), ending
  with when to call `recall`.
- Stop, SubagentStop, SessionEnd, PreCompact: hand the input to `pamd ingest -` in a
  process of its own and return at once; its output goes to the brain's .pamd/hooks.log.
  That process then renders the next brief into .pamd/brief.json.

Building a brief reads every tier, which on a large brain takes seconds; SessionStart must
answer in under one. So the brief is kept in .pamd/brief.json under a signature of what it
was built from (pamd's version, the size, the sizes and times of the brain's Markdown files,
the branch's head), which costs a few stats to check. A matching brief is printed as it is;
one that no longer matches is printed too, and a fresh one is built in the background for
the agent's next Claude Code session. A brain with no brief yet (a new clone) gets one built
while the hook waits when its tiers are small (INLINE_TIER_BYTES); a larger one gets a brief
of its own files (STATE.md, DNA.md, MEMORY.md: no tier's day files), which says so, and the
whole brief is built in the background.

Memory must never break a session: every error here is one `pamd: note:` line on stderr
and exit 0, and stdin is read for at most STDIN_WAIT seconds (on a resumed session it may
never close).
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import select
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)

BRIEF_CHARS = 9000
# Tiers' day files up to this many bytes are read while SessionStart waits (well under a
# second); a brain past it with no kept brief starts from its own files (session_brief).
INLINE_TIER_BYTES = 2_000_000
STDIN_WAIT = 0.5
INGEST_EVENTS = ("Stop", "SubagentStop", "SessionEnd", "PreCompact")
LOG = "hooks.log"
CACHE = "brief.json"


def usage_note(name: str) -> str:
    return (f"## Using this memory\n\nThis is the start of your memory (pamd brain {name}), not all of it. "
            "Before you answer about past work, decisions, errors, people or preferences, or redo "
            "something that may have been done, call the `recall` tool of the `pamd` MCP server with a "
            "few distinctive words (or run `pamd recall 'words'`); `expand` an id (s-…) for the raw "
            "messages behind a summary. Call `remember` for a decision, a lesson from a failure and its "
            "fix, or anything the person asks you to keep.\n")


def read_stdin(stream=None, wait: float = STDIN_WAIT) -> bytes:
    """The hook's input: until EOF, a whole JSON object, or `wait` seconds, whichever is first."""
    stream = stream or sys.stdin
    try:
        fd = stream.fileno()
    except (AttributeError, OSError, ValueError):
        return b""
    if os.isatty(fd):
        return b""
    buf = b""
    deadline = time.monotonic() + wait
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            return buf
        ready, _, _ = select.select([fd], [], [], left)
        if not ready:
            return buf
        chunk = os.read(fd, 1 << 16)
        if not chunk:
            return buf
        buf += chunk
        try:
            json.loads(buf)
            return buf
        except ValueError:
            continue


PARTIAL_NOTE = ("This first brief of a large brain holds its own files only: the recent days' "
                "detail (tiers L0-L3) is being put together for your next session. `recall` reaches "
                "all of it now.\n\n")


def brief(root: Path, max_chars: int = BRIEF_CHARS, recent: bool = True) -> str:
    """The SessionStart context: the boot brief cut to fit, then when to recall (`recent`:
    tools.boot's; without it the brief says what it lacks)."""
    from pamd.agent import tools
    from pamd.core.config import settings

    brain = tools.open_brain(root)
    note = ("" if recent else PARTIAL_NOTE) + usage_note(str(settings(brain.config).brain.name))
    text = tools.boot(root, max_chars=max_chars - len(note) - 1, recent=recent).text
    return text.rstrip("\n") + "\n\n" + note


def signature(root: Path, max_chars: int = BRIEF_CHARS) -> str:
    """What a brief depends on, from stats alone: pamd's version, the size asked, each Markdown
    file of the brain and pamd.toml (path, size, mtime), the head of the checked-out branch."""
    from pamd import __version__

    h = hashlib.blake2b(digest_size=16)
    h.update(f"{__version__}\0{max_chars}\0".encode())
    files = [root / "pamd.toml", *sorted(root.glob("*.md"))]
    for dirpath, dirnames, filenames in os.walk(root / "memory"):
        dirnames.sort()
        files += [Path(dirpath) / f for f in sorted(filenames) if f.endswith(".md")]
    git = root / ".git"
    files += [git / "HEAD", git / "packed-refs"]
    try:
        head = (git / "HEAD").read_text().strip()
        if head.startswith("ref: "):
            files.append(git / head[5:])
    except OSError:
        pass
    for f in files:
        try:
            st = f.stat()
        except OSError:
            continue
        h.update(f"{f.relative_to(root)}\0{st.st_size}\0{st.st_mtime_ns}\n".encode())
    return h.hexdigest()


def cached(root: Path) -> dict[str, str] | None:
    try:
        out = json.loads((root / ".pamd" / CACHE).read_text("utf-8"))
    except (OSError, ValueError):
        return None
    return out if isinstance(out, dict) and isinstance(out.get("text"), str) else None


def refresh(root: Path) -> str:
    """Build the brief and keep it, under the signature taken before it was built (a change
    made meanwhile leaves it stale, not wrong)."""
    sig = signature(root)
    text = brief(root)
    state = root / ".pamd"
    state.mkdir(exist_ok=True)
    tmp = state / f".{CACHE}.{os.getpid()}"
    tmp.write_text(json.dumps({"signature": sig, "text": text}, ensure_ascii=False), "utf-8")
    os.replace(tmp, state / CACHE)
    return text


def tier_bytes(root: Path) -> int:
    """The size of the brain's tier folders' Markdown files (memory/), from stats."""
    total = 0
    for dirpath, _, filenames in os.walk(root / "memory"):
        for f in filenames:
            if f.endswith(".md"):
                try:
                    total += os.stat(os.path.join(dirpath, f)).st_size
                except OSError:
                    continue
    return total


def session_brief(root: Path) -> str:
    kept = cached(root)
    if kept is None:
        if tier_bytes(root) <= INLINE_TIER_BYTES:
            return refresh(root)
        background(root, "refresh", b"")
        return brief(root, recent=False)
    if kept.get("signature") != signature(root):
        background(root, "refresh", b"")
    return kept["text"]


def session_start(root: Path) -> dict[str, Any]:
    return {"hookSpecificOutput": {"hookEventName": "SessionStart", "additionalContext": session_brief(root)}}


def background(root: Path, job: str, data: bytes) -> int:
    """`python -m pamd.agent.claude_code JOB ROOT` fed `data`, in a session of its own (the hook
    returns now); its output is appended to .pamd/hooks.log."""
    state = root / ".pamd"
    state.mkdir(exist_ok=True)
    with open(state / LOG, "ab") as log:
        log.write(f"--- {time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime())} {job}\n".encode())
        log.flush()
        p = subprocess.Popen([sys.executable, "-m", "pamd.agent.claude_code", job, str(root)],
                             stdin=subprocess.PIPE, stdout=log, stderr=log, start_new_session=True,
                             close_fds=True)
    assert p.stdin is not None
    p.stdin.write(data)  # the hook's input is a few hundred bytes: the pipe holds it all
    p.stdin.close()
    return p.pid


def _job(argv: list[str]) -> int:
    """The background half: `ingest ROOT` (`pamd ingest -` of stdin, then the next brief) or
    `refresh ROOT` (the next brief)."""
    job, root = argv[0], Path(argv[1])
    code = 0
    if job == "ingest":  # the command itself, on this job's stdin, stdout and stderr
        code = subprocess.run([sys.executable, "-m", "pamd", "--brain", str(root), "ingest", "-"]).returncode
    try:
        kept = cached(root)
        if kept is None or kept.get("signature") != signature(root):  # nothing new: it stands
            refresh(root)
    except Exception as exc:  # noqa: BLE001 - the next SessionStart builds it
        log.info("brief not refreshed (%s: %s)", type(exc).__name__, exc)
    return code


def handle(data: bytes, brain: str | None = None) -> tuple[str, str]:
    """(stdout, stderr) for the hook input `data`; never raises for a PamdError."""
    from pamd.agent import brainpick
    from pamd.errors import PamdError

    try:
        hook = json.loads(data) if data.strip() else {}
    except ValueError:
        return "", "pamd: note: the hook's input is not JSON; nothing done\n"
    if not isinstance(hook, dict):
        return "", "pamd: note: the hook's input is not a JSON object; nothing done\n"
    event = str(hook.get("hook_event_name") or "")
    if os.environ.get("PAMD_SUMMARIZING") == "1":
        # a headless `claude -p` that pamd's claude-cli summarizer runs: its own session is pamd's
        # prompt, not the person's work, and must neither be ingested nor handed a brief
        return "", ""
    cwd = hook.get("cwd") if isinstance(hook.get("cwd"), str) and hook.get("cwd") else None
    try:
        root = brainpick.pick(brain, cwd)
        if root is None:
            return "", ""
        if not (root / "pamd.toml").is_file():
            return "", f"pamd: note: memory not used: {root} is no pamd brain (no pamd.toml)\n"
        if event == "SessionStart":
            return json.dumps(session_start(root), ensure_ascii=False) + "\n", ""
        if event in INGEST_EVENTS:
            if not (isinstance(hook.get("transcript_path"), str) and hook["transcript_path"]):
                return "", f"pamd: note: {event} named no transcript; nothing to ingest\n"
            background(root, "ingest", data)
            return "", ""
    except PamdError as exc:
        return "", f"pamd: note: memory not used: {exc}\n"
    return "", f"pamd: note: hook event {event or '(none)'} is not one pamd acts on\n"


def main(argv: list[str] | None = None) -> int:
    import argparse

    parser = argparse.ArgumentParser(prog="pamd-hook claude",
                                     description="Claude Code hooks: boot at SessionStart, ingest at Stop, "
                                                 "SubagentStop, SessionEnd and PreCompact (docs/agents.md)")
    parser.add_argument("--brain", metavar="DIR", help="the brain (default: docs/agents.md, which brain)")
    try:
        args = parser.parse_args(argv)
        out, err = handle(read_stdin(), args.brain)
    except SystemExit:  # a usage error: said on stderr by argparse, and the session goes on
        return 0
    except Exception as exc:  # noqa: BLE001 - memory must never break the session
        out, err = "", f"pamd: note: memory hook failed ({type(exc).__name__}: {exc})\n"
    try:
        sys.stdout.write(out)
        sys.stdout.flush()
        sys.stderr.write(err)
    except OSError:
        pass
    return 0


if __name__ == "__main__":
    from pamd.core.console import human_log

    with human_log():  # into .pamd/hooks.log, as `pamd ingest -` before it writes there
        raise SystemExit(_job(sys.argv[1:]))
