"""pamd redact: replace secrets in the brain's files by typed placeholders."""

from __future__ import annotations

from pamd.core.words import plural

HELP = (
    "replace secrets in the brain's files by [REDACTED:type] placeholders, in one commit "
    "(older commits keep them: see docs/hooks.md)"
)
EXAMPLE = """
pamd redact --check                            # list secrets as path:line, change nothing
pamd redact                                    # clean committed files, one commit
pamd redact --no-commit memory/L0/2026-11-30.md && git add memory/L0/2026-11-30.md
"""


def add_arguments(p) -> None:
    p.add_argument(
        "files", nargs="*", help="only these files (default: every text file of the brain)"
    )
    p.add_argument("--check", action="store_true", help="only report secrets (exit 1 if any)")
    p.add_argument(
        "--no-commit",
        action="store_true",
        help="clean the files in place and commit nothing (for files not committed yet)",
    )
    p.epilog = (p.epilog or "") + (
        "\n\nA secret that was already committed stays in the older commits: cleaning the tree"
        "\nstops it spreading, not what was pushed. Rotate the secret, and rewrite history"
        "\nwith `git filter-repo --replace-text` if it must go from there too. The pamd-secrets"
        "\nhook (or `pamd init --hooks`) stops a secret before its first commit."
    )


def run(args) -> int:
    from pamd.edge.brain import Brain
    from pamd.edge.refs import brain_rel
    from pamd.ops.redaction import all_files, clean_in_place, redact, scan

    brain = Brain.find(args.brain)
    # Each FILE as `pamd check` takes it: a missing one (a typo) is an error, not "no secrets".
    root = brain.root.resolve()
    rels = list(dict.fromkeys(brain_rel(root, f) for f in args.files)) if args.files else all_files(brain)
    if args.check:
        found = scan(brain, rels, brain.read)
        for f in found:
            print(f"{f.path}:{f.line}: {f.kind}")
        print(f"{plural(len(found), 'secret')} found" if found else "no secrets found")
        return 1 if found else 0
    if args.no_commit:
        changes, counts = clean_in_place(brain, rels)
        _say(changes, counts, "cleaned in place; now `git add` them")
        return 0
    changes, counts, sha = redact(brain, rels)
    if not changes:
        print("no secrets found")
        return 0
    _say(changes, counts, f"committed {sha[:8] if sha else ''}")
    print(
        "note: commits before this one still hold the secrets; rotate them, and see docs/hooks.md "
        "(git filter-repo) to rewrite history"
    )
    return 0


def _say(changes, counts, how: str) -> None:
    kinds = ", ".join(f"{k} {n}" for k, n in sorted(counts.items()))
    if not changes:
        print("no secrets found")
        return
    print(f"redacted {plural(sum(counts.values()), 'secret')} ({kinds}) in {plural(len(changes), 'file')}, {how}:")
    for rel in sorted(changes):
        print(f"  {rel}")
