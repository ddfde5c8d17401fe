"""The command line: parse, dispatch to pamd.commands.<name>.run(args), map errors.

Each command module has `HELP` (one line), `EXAMPLE`, `add_arguments(parser)`
and `run(args) -> int`. Heavy imports happen inside `run`, so `pamd --help`
and the hooks start fast.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
import tempfile
import traceback
from datetime import UTC, datetime

from pamd import __version__
from pamd.errors import PamdError

# In the order `pamd --help` lists them: the pipeline first.
COMMANDS = [
    "init", "ingest", "remember", "compact", "defrag", "run-due", "daemon",
    "index", "recall", "expand", "touch", "boot", "state",
    "status", "check", "fsck", "redact", "synapse", "eval", "probe", "demo",
]


def _module(name: str):
    return importlib.import_module(f"pamd.commands.{name.replace('-', '_')}")


def now_arg(value: str | None) -> datetime:
    """--now, else PAMD_NOW, else the real clock (aware UTC)."""
    from pamd.core.entry import parse_time

    raw = value or os.environ.get("PAMD_NOW")
    if not raw:
        return datetime.now(UTC).replace(microsecond=0)
    try:
        return parse_time(raw)
    except ValueError:
        raise PamdError(f"bad time {raw!r} for --now/PAMD_NOW", "use ISO 8601, e.g. 2026-11-30T14:00:00Z") from None


BRAIN_HELP = "the brain to use (default: the one containing the cwd, or $PAMD_BRAIN)"


def _common(brain_help: str | None) -> argparse.ArgumentParser:
    """The options every command takes; brain_help None keeps --brain out of a command's help."""
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--brain", metavar="DIR", help=brain_help or argparse.SUPPRESS)
    common.add_argument("--now", metavar="ISO", help="pretend it is this time (default: $PAMD_NOW or the clock)")
    return common


def build_parser() -> argparse.ArgumentParser:
    common = _common(BRAIN_HELP)
    quiet = _common(None)  # for a command whose module says LIST_BRAIN = False (init)
    parser = argparse.ArgumentParser(
        prog="pamd",
        description="pamd: an AI agent's memory as a git repository of Markdown.",
        epilog="Example:\n  pamd init brain && cd brain && pamd ingest session.jsonl && pamd recall 'deploy'",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"pamd {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMANDS:
        try:
            mod = _module(name)
        except ModuleNotFoundError:
            continue  # a command not built yet
        p = sub.add_parser(
            name, parents=[common if getattr(mod, "LIST_BRAIN", True) else quiet],
            help=mod.HELP, description=mod.HELP,
            epilog="Example:\n" + "\n".join("  " + ln for ln in mod.EXAMPLE.strip().splitlines()),
            formatter_class=argparse.RawDescriptionHelpFormatter,
        )
        mod.add_arguments(p)
        p.set_defaults(_run=mod.run)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "_run", None):
        parser.print_help()
        return 2
    try:
        args.now_given = bool(args.now or os.environ.get("PAMD_NOW"))
        args.now = now_arg(args.now)
        return int(args._run(args) or 0)
    except PamdError as exc:
        print(f"pamd: error: {exc}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print("pamd: interrupted; nothing was committed by the interrupted step", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 0
    except Exception as exc:  # a bug: say where the details are, not a traceback
        fd, log = tempfile.mkstemp(prefix="pamd-crash-", suffix=".log")
        with os.fdopen(fd, "w") as f:
            traceback.print_exc(file=f)
        print(f"pamd: internal error: {type(exc).__name__}: {exc} (details in {log})", file=sys.stderr)
        return 3


if __name__ == "__main__":
    raise SystemExit(main())
