from __future__ import annotations

HELP = "run compact every 30 minutes and defrag nightly (02:30 UTC) until stopped"
EXAMPLE = "pamd daemon\npamd daemon --compact-every 10 --defrag-at 03:00"


def add_arguments(p) -> None:
    p.add_argument("--compact-every", type=float, metavar="MINUTES", help="override [schedule] compact_every_minutes")
    p.add_argument("--defrag-at", metavar="HH:MM", help="override [schedule] defrag_at (UTC)")


def run(args) -> int:
    import logging

    from pamd.consolidate.schedule import daemon
    from pamd.edge.brain import Brain

    logging.basicConfig(level=logging.INFO, format="%(asctime)s pamd %(message)s")
    brain = Brain.find(args.brain)
    return daemon(brain, args.compact_every, args.defrag_at)
