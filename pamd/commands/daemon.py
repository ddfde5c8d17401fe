from __future__ import annotations

HELP = "run compact every 30 minutes and defrag nightly (02:30 UTC) until stopped"
EXAMPLE = "pamd daemon\npamd daemon --compact-every 10 --defrag-at 03:00"


def add_arguments(p) -> None:
    p.add_argument("--compact-every", type=float, metavar="MINUTES",
                   help="override [schedule] compact_every_minutes (a number above 0)")
    p.add_argument("--defrag-at", metavar="HH:MM",
                   help='override [schedule] defrag_at (UTC; "off": no defrag, e.g. a CI workflow does it)')


def run(args) -> int:
    import logging
    import math

    from pamd.consolidate.schedule import daemon, log
    from pamd.core.console import service_log
    from pamd.edge.brain import Brain
    from pamd.errors import PamdError

    if args.now_given:
        # A daemon waits on the real clock; a pretend time would be stamped on every run
        # while the waits stayed real, so it is refused rather than silently ignored.
        raise PamdError("pamd daemon runs on the real clock; --now/PAMD_NOW is not for it",
                        "unset PAMD_NOW, or simulate a time with `pamd run-due --now ISO`")
    every = args.compact_every
    if every is not None and not (math.isfinite(every) and every > 0):
        raise PamdError(f"--compact-every must be a number of minutes above 0, got {every:g}",
                        "e.g. --compact-every 30")
    if args.defrag_at is not None and not args.defrag_at.strip():
        raise PamdError("--defrag-at is empty", 'use "HH:MM", 00:00 to 23:59 UTC, or "off"')
    # The daemon's own lines at INFO; other libraries' only from WARNING (google-genai and
    # httpx log two INFO lines per LLM request, which would bury the one line per run); pamd's
    # notes and warnings as every command shows them. With the time's UTC offset: defrag_at
    # and every Pamd-Now are UTC, the clock may be local.
    fmt, datefmt = "%(asctime)s pamd %(message)s", "%Y-%m-%d %H:%M:%S%z"
    logging.basicConfig(level=logging.WARNING, format=fmt, datefmt=datefmt)
    own = logging.StreamHandler()
    own.setFormatter(logging.Formatter(fmt, datefmt))
    brain = Brain.find(args.brain)
    with service_log(log.name, own, logging.INFO):
        return daemon(brain, every, args.defrag_at)
