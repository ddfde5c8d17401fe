"""Secrets in a brain's files: find them (the pamd-secrets hook) and clean them (`pamd redact`).

The patterns and placeholders live in pamd.core.redact (pure); this edge reads
files, turns spans into path:line, and writes the cleaned text. Cleaning a file
that is already committed fixes the tree from now on; the older commits still
hold the secret until history is rewritten (git filter-repo), so the hook's
job is to stop it before the first commit.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass

from pamd.core.words import plural
from pamd.edge.files import write_atomic
from pamd.errors import PamdError

# Files a person or pamd writes in a brain that the secret scan reads by default.
SCAN_SUFFIXES = (".md", ".txt", ".toml", ".json", ".jsonl", ".yaml", ".yml")


@dataclass(frozen=True)
class Finding:
    path: str
    line: int
    kind: str


def redactor(config):
    try:
        from pamd.core.redact import Redactor
    except ImportError:
        raise PamdError(
            "this pamd has no secret scanner (pamd.core.redact is missing)", "upgrade pamd"
        ) from None
    return Redactor.from_config(config)


def scan(brain, rels: list[str], read: Callable[[str], str | None]) -> list[Finding]:
    """Every secret in `rels` as read by `read(rel)` (work tree or index)."""
    r = redactor(brain.config)
    found = []
    for rel in rels:
        try:
            text = read(rel)
        except PamdError:
            # Not UTF-8 (one stray byte) or huge: scan what can be read, replacing the
            # undecodable bytes: a secret beside a Latin-1 "café" must not pass.
            text = _lenient(brain.root / rel)
        if not text:
            continue
        for kind, start, _end in r.find(text):
            found.append(Finding(rel, text.count("\n", 0, start) + 1, kind))
    return found


def all_files(brain) -> list[str]:
    """Every tracked or new file of the brain the secret scan reads."""
    out = brain.repo.run("ls-files", "-z", "--cached", "--others", "--exclude-standard")
    return sorted({p for p in out.split("\0") if p.lower().endswith(SCAN_SUFFIXES)})


def _lenient(path) -> str | None:
    try:
        with open(path, "rb") as f:
            return f.read(64 << 20).decode("utf-8", errors="replace")
    except OSError:
        return None


def clean(brain, rels: list[str]) -> tuple[dict[str, str], Counter]:
    """Cleaned text of each file in `rels` that held a secret, and counts by type."""
    r = redactor(brain.config)
    changes: dict[str, str] = {}
    counts: Counter = Counter()
    for rel in rels:
        text = brain.read(rel)
        if not text:
            continue
        new, by_type = r.redact(text)
        if new != text:
            changes[rel] = new
            counts.update(by_type)
    return changes, counts


def clean_in_place(brain, rels: list[str]) -> tuple[dict[str, str], Counter]:
    """`clean`, written to the files and committed nothing (`pamd redact --no-commit`: files
    not committed yet, which the person then `git add`s)."""
    changes, counts = clean(brain, rels)
    for rel, text in changes.items():
        write_atomic(brain.path(rel), text)
    return changes, counts


def redact(brain, rels: list[str]) -> tuple[dict[str, str], Counter, str | None]:
    """`clean`, committed in one commit under the brain's lock; the commit's sha, None when
    no file held a secret. A file with uncommitted edits is refused: the commit would take
    them along."""
    with brain.transaction() as tx:
        changes, counts = clean(brain, rels)
        if not changes:
            return changes, counts, None
        dirty = brain.repo.dirty(sorted(changes))
        if dirty:
            raise PamdError(
                f"secrets in files with uncommitted edits: {', '.join(dirty[:3])}",
                "use `pamd redact --no-commit FILE`, then `git add` it",
            )
        return changes, counts, tx.commit(changes, commit_message(changes, counts))


def commit_message(changes: dict[str, str], counts: Counter) -> str:
    kinds = ", ".join(f"{k} {n}" for k, n in sorted(counts.items()))
    lines = [
        f"pamd redact: {plural(sum(counts.values()), 'secret')} in {plural(len(changes), 'file')}",
        "",
        f"Replaced by typed placeholders: {kinds}.",
        "Older commits still hold them until history is rewritten (see docs/hooks.md).",
        "",
        "Pamd-Run: redact",
        f"Pamd-Files: {len(changes)}",
    ]
    lines += [f"Pamd-Redacted-{k}: {n}" for k, n in sorted(counts.items())]
    return "\n".join(lines) + "\n"
