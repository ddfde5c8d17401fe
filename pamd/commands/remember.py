from __future__ import annotations

HELP = "remember one thing now, as one L0 entry and one commit"
EXAMPLE = 'pamd remember "We decided to ship v2 on Friday"\npamd remember --role agent --type decision "Use hnswlib"'


def add_arguments(p) -> None:
    p.add_argument("text", nargs="+", help="what to remember (quoted, or its words, joined by a space)")
    p.add_argument("--role", default="user", help="who said it (default: user)")
    p.add_argument("--session", default="remember", help="session name (default: remember)")
    p.add_argument("--type", choices=["decision", "user_intent", "context", "tool_result", "ephemeral"],
                   help="override the detected type")
    p.add_argument("--importance", type=float, help="override the computed importance (0..1)")


def run(args) -> int:
    from pamd.edge.brain import Brain
    from pamd.encode.ingest import remember
    from pamd.encode.sources import normalize_text
    from pamd.errors import PamdError

    text = normalize_text(" ".join(args.text))  # `pamd remember ship on friday`, unquoted: one entry
    if not text:
        raise PamdError("nothing to remember: the text is empty")
    if args.importance is not None and not 0 <= args.importance <= 1:
        raise PamdError("--importance must be within 0..1")
    brain = Brain.find(args.brain)
    e, sha = remember(brain, text, args.now, args.role, args.session, args.type, args.importance)
    print(f"remembered {e.id} ({sha[:8]})" if sha else f"already remembered as {e.id}")
    return 0
