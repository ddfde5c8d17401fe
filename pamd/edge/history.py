"""Read a brain as it is in the work tree or as it was at a commit (for --at)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from pamd.core import config as config_mod
from pamd.core.entry import parse_time
from pamd.edge.brain import CONFIG, Brain
from pamd.errors import PamdError


@dataclass
class TreeView:
    brain: Brain
    rev: str | None  # None: the work tree (files as on disk, time of HEAD)

    @classmethod
    def at(cls, brain: Brain, ref: str | None) -> TreeView:
        if not ref:
            return cls(brain, None)
        if re.fullmatch(r"\d{4}-\d{2}-\d{2}([T ][\d:]+Z?)?", ref):
            sha = brain.repo.run("rev-list", "-1", f"--before={ref}", "HEAD").strip()
            if not sha:
                raise PamdError(f"the brain has no commit before {ref}")
            return cls(brain, sha)
        sha = brain.repo.rev_parse(ref)
        if sha is None:
            raise PamdError(f"no commit {ref!r} in this brain", "use a sha, a ref like HEAD~3, or a date")
        return cls(brain, sha)

    def read(self, rel: str) -> str | None:
        return self.brain.read(rel) if self.rev is None else self.brain.repo.show(self.rev, rel)

    def files(self) -> list[str]:
        if self.rev is None:
            return self.brain.entry_files()
        out = self.brain.repo.run("ls-tree", "-r", "--name-only", self.rev)
        return [f for f in out.splitlines() if f]

    def config(self) -> dict[str, Any]:
        return config_mod.load(self.read(CONFIG))

    def time(self) -> datetime:
        """The brain's own time at this view: the commit's Pamd-Now, else its commit date."""
        rev = self.rev or "HEAD"
        if self.brain.repo.rev_parse(rev) is None:
            return parse_time("1970-01-01T00:00:00Z")
        out = self.brain.repo.log("-1", "--format=%(trailers:key=Pamd-Now,valueonly)%x1f%cI", rev)
        trailer, _, date = out.partition("\x1f")
        return parse_time(trailer.strip().splitlines()[0] if trailer.strip() else date.strip())
