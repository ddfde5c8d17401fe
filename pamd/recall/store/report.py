"""What a refresh says: its counts, and the files it left out for their conflict markers."""

from __future__ import annotations

from dataclasses import dataclass

from pamd.core.words import plural


@dataclass
class Report:
    files_changed: int = 0
    added: int = 0
    removed: int = 0
    embedded: int = 0
    rebuilt: bool = False
    chunks: int = 0
    conflicted: tuple[str, ...] = ()  # left out: git's conflict markers in them

    def __str__(self) -> str:
        how = "rebuilt" if self.rebuilt else "refreshed"
        return (f"index {how}: {plural(self.chunks, 'chunk')}, +{self.added} -{self.removed}, "
                f"{self.embedded} embedded, {plural(self.files_changed, 'file')} changed")


def conflicted_note(paths) -> str | None:
    """What recall and index say about files the index left out for their conflict markers."""
    if not paths:
        return None
    return (f"left out of the index: {', '.join(paths[:3])}{' …' if len(paths) > 3 else ''}: "
            "conflict markers from a merge not resolved (resolve, `git add` and commit; "
            "docs/hooks.md, one brain on two machines)")
