"""The command line: parse, dispatch to pamd.commands.<name>.run(args), map errors.

Each command module has `HELP` (one line; `DESCRIPTION`, if any, is its --help's
longer text), `EXAMPLE`, `add_arguments(parser)` and `run(args) -> int`. Heavy
imports happen inside `run`, so `pamd --help` and the hooks start fast. A command
imports the library, never another command or this module (tests/test_layers.py).
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
import tempfile
import traceback

from pamd import __version__
from pamd.core.console import human_log
from pamd.core.visible import human_streams
from pamd.errors import PamdError

# In the order `pamd --help` lists them: the pipeline first.
COMMANDS = [
    "init", "ingest", "remember", "compact", "defrag", "run-due", "daemon",
    "index", "recall", "expand", "touch", "boot", "state", "mcp",
    "status", "check", "fsck", "redact", "synapse", "sync", "eval", "probe", "demo",
]


def _module(name: str):
    return importlib.import_module(f"pamd.commands.{name.replace('-', '_')}")


class CommandParser(argparse.ArgumentParser):
    """A command's parser that lets options come between its words: `pamd recall ship --no-log friday`."""

    _plain = False  # set while parse_known_intermixed_args runs its own two plain passes

    def parse_known_args(self, args=None, namespace=None):
        # A command with sub-verbs (synapse) parses plainly, and so does a line with `--`: the
        # intermixed parse spends it, and what follows (`pamd remember -- -x`) must stay words.
        if self._plain or "--" in (args or ()) or any(
                a.nargs in (argparse.PARSER, argparse.REMAINDER) for a in self._actions):
            return super().parse_known_args(args, namespace)
        self._plain = True
        try:
            return self.parse_known_intermixed_args(args, namespace)
        finally:
            self._plain = False


BRAIN_HELP = "the brain to use (default: $PAMD_BRAIN, else the one containing the cwd)"


def _global_options(p: argparse.ArgumentParser, default, brain_help: str | None = BRAIN_HELP) -> None:
    """--brain and --now; brain_help None keeps --brain out of a command's help (init: DIR says it)."""
    p.add_argument("--brain", metavar="DIR", default=default, help=brain_help or argparse.SUPPRESS)
    p.add_argument("--now", metavar="ISO", default=default,
                   help="pretend it is this time (default: $PAMD_NOW or the clock)")


def build_parser() -> argparse.ArgumentParser:
    # --brain and --now go before the command or after it (`pamd --brain b status`, `pamd status
    # --brain b`); after it they must not reset one given before, hence SUPPRESS as their default there.
    common = CommandParser(add_help=False)  # the class of the parsers it is a parent of
    _global_options(common, argparse.SUPPRESS)
    quiet = CommandParser(add_help=False)  # for a command whose module says LIST_BRAIN = False (init)
    _global_options(quiet, argparse.SUPPRESS, None)
    parser = argparse.ArgumentParser(
        prog="pamd",
        description="pamd: an AI agent's memory as a git repository of Markdown.",
        epilog="Example:\n  pamd init brain && cd brain && pamd ingest session.jsonl && pamd recall 'deploy'",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"pamd {__version__}")
    _global_options(parser, None)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=CommandParser)
    for name in COMMANDS:
        try:
            mod = _module(name)
        except ModuleNotFoundError:
            continue  # a command not built yet
        p = sub.add_parser(
            name, parents=[common if getattr(mod, "LIST_BRAIN", True) else quiet],
            help=mod.HELP, description=getattr(mod, "DESCRIPTION", mod.HELP),
            epilog="Example:\n" + "\n".join("  " + ln for ln in mod.EXAMPLE.strip().splitlines()),
            formatter_class=argparse.RawDescriptionHelpFormatter,
        )
        mod.add_arguments(p)
        # `cli`: this module's main, for a command that runs command lines itself (demo)
        p.set_defaults(_run=mod.run, _parser=p, cli=main)
    return parser


def main(argv: list[str] | None = None) -> int:
    # Stored text (and a user's words in an error) must not reach a terminal as control
    # sequences: human output shows them escaped; --json stays exact (JSON escapes them).
    # The library's notes and warnings are shown as `pamd: note: …` lines on that stderr.
    with human_streams(stdout=False), human_log():
        return _main(argv)


def _main(argv: list[str] | None) -> int:
    parser = build_parser()
    args, extra = parser.parse_known_args(argv)
    if extra:  # said by the command's own parser, with its usage, not pamd's
        cmd = getattr(args, "_parser", parser)
        cmd.error(f"unrecognized arguments: {' '.join(extra)} (`{cmd.prog} --help` lists its options)")
    if not getattr(args, "_run", None):
        parser.print_help()
        return 2
    with human_streams(stdout=not getattr(args, "json", False), stderr=False):
        return _run(args)


def _run(args: argparse.Namespace) -> int:
    try:
        args.now_given = bool(args.now or os.environ.get("PAMD_NOW"))
        from pamd.edge.clock import now_arg

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
    except OSError as exc:
        said = _os_error(exc)
        if said is None:
            return _internal(exc)
        print(f"pamd: error: {said}", file=sys.stderr)
        return 1
    except Exception as exc:  # a bug: say where the details are, not a traceback
        return _internal(exc)


def _os_error(exc: OSError) -> str | None:
    """One line for what the machine refused (a full disk, a read-only place); None: a bug."""
    import errno

    where = f" for {exc.filename}" if exc.filename else ""
    if exc.errno == errno.ENOSPC:
        return f"disk full: no space left on device{where}"
    if exc.errno == errno.EDQUOT:
        return f"disk full: disk quota exceeded{where}"
    if exc.errno in (errno.EROFS, errno.EACCES, errno.EPERM):
        return f"{(exc.strerror or 'not permitted').lower()}{where}"
    return None


def _internal(exc: Exception) -> int:
    fd, log = tempfile.mkstemp(prefix="pamd-crash-", suffix=".log")
    with os.fdopen(fd, "w") as f:
        traceback.print_exc(file=f)
    said = (str(exc).strip().splitlines() or [""])[0]  # a GitCommandError spans lines: the log has them
    print(f"pamd: internal error: {type(exc).__name__}: {said} (details in {log})", file=sys.stderr)
    return 3


if __name__ == "__main__":
    raise SystemExit(main())
