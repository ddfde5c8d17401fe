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
    from pamd.encode.ingest import ingest_entries, make_entries, redactor
    from pamd.encode.neurotag import Tagger
    from pamd.encode.sources import Message, normalize_text
    from pamd.errors import PamdError

    text = normalize_text(" ".join(args.text))  # `pamd remember ship on friday`, unquoted: one entry
    if not text:
        raise PamdError("nothing to remember: the text is empty")
    if args.importance is not None and not 0 <= args.importance <= 1:
        raise PamdError("--importance must be within 0..1")
    brain = Brain.find(args.brain)
    msg = Message(args.role, text, args.now, args.session, 0)
    entries, redacted = make_entries([msg], Tagger.from_config(brain.config, brain.root),
                                     redactor(brain.config), args.now)
    e = entries[0]
    if args.type:
        e = e.with_(type=args.type)
    if args.importance is not None:
        e = e.with_(importance=round(args.importance, 2) + 0.0)  # -0 is 0: no "-0.00" in the file
    plan, sha = ingest_entries(brain, [e], ["remember"], args.now, "remember", redacted)
    print(f"remembered {e.id} ({sha[:8]})" if sha else f"already remembered as {e.id}")
    return 0
