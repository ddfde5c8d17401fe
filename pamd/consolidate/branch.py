"""Defrag onto a branch, for a pull request, without touching the person's checkout.

A temporary `git worktree` on the new branch runs the defrag and commits there;
the brain's own work tree, index and branch are left as they were.
"""

from __future__ import annotations

import re
import shutil
import tempfile
from datetime import datetime
from pathlib import Path

from pamd.consolidate.compaction import Outcome, run
from pamd.core.config import settings
from pamd.core.paths import CONFIG
from pamd.edge.brain import Brain
from pamd.edge.lock import Lock
from pamd.edge.worktrees import OWNER, PREFIX
from pamd.errors import PamdError

# For git commands that only make pamd's throw-away worktrees (pamd/hooks.py: index).
NO_INDEX_HOOK = {"PAMD_HOOK_INDEX": "0"}

_BRANCH = re.compile(r"^(?!/)(?!.*\.\.)(?!.*//)[A-Za-z0-9._/-]{1,100}(?<![/.])$")


def defrag_on_branch(brain: Brain, branch: str, now: datetime) -> Outcome:
    if not _BRANCH.match(branch) or branch.endswith(".lock"):
        raise PamdError(f"bad branch name {branch!r}", "use letters, digits, . _ / -")
    brain.check_writable()
    g = settings(brain.config).git
    with Lock(brain.state_dir / "lock", wait=g.on_lock == "wait", timeout=float(g.lock_timeout)):
        # A defrag --branch killed earlier left its worktree (and so its branch) behind;
        # holding the lock, no live one can be running: clean it up first.
        brain.prune_worktrees()
        if brain.repo.rev_parse(f"refs/heads/{branch}"):
            raise PamdError(f"branch {branch} already exists", "pick another name or delete it")
        # The branch starts from HEAD, so its brain is the committed one.
        if brain.repo.head() is None:
            raise PamdError(f"the brain {brain.root} has no commit yet; a defrag branch starts from HEAD",
                            "commit first (`pamd remember` or `pamd ingest` commit for you)")
        if brain.repo.show("HEAD", CONFIG) is None:
            raise PamdError(f"{CONFIG} of the brain {brain.root} is not committed; a defrag branch starts "
                            "from HEAD, which lacks it", f"commit it first: git add {CONFIG} && git commit")
        tmp = Path(tempfile.mkdtemp(prefix=PREFIX))
        wt = tmp / "brain"
        try:
            (tmp / OWNER).write_text(str(brain.root), "utf-8")
            # `worktree add` fires the brain's post-checkout hook in the new folder: pamd's own
            # index hook would embed the whole brain there (its .pamd/ is empty), under the
            # lock, for a folder deleted a moment later. Only that git command skips it; the
            # defrag's commit in the worktree still runs the brain's pre-commit hooks.
            brain.repo.run("worktree", "add", "-q", "-b", branch, str(wt), "HEAD", env=NO_INDEX_HOOK)
        except BaseException:  # git refused the branch or the folder: leave no temp dir behind
            shutil.rmtree(tmp, ignore_errors=True)
            if brain.repo.rev_parse(f"refs/heads/{branch}"):  # not there before (checked above)
                # a post-checkout hook that failed fails `worktree add` after it made the
                # branch and the worktree: take both back, so a retry can use the name
                for args in (("worktree", "prune"), ("branch", "-D", branch)):
                    try:
                        brain.repo.run(*args)
                    except PamdError:
                        pass
            raise
        try:
            scratch = Brain(wt)
            scratch.own_branch = branch  # its commit belongs on the new branch
            out = run(scratch, now, "defrag")
        except BaseException as exc:
            brain.repo.run("worktree", "remove", "--force", str(wt))
            brain.repo.run("branch", "-D", branch)
            if isinstance(exc, PamdError) and str(wt) in exc.message:
                # The temporary folder means nothing to the person: name their brain.
                raise PamdError(exc.message.replace(str(wt), f"{brain.root} (as committed at HEAD)"),
                                exc.hint, exc.exit_code) from None
            raise
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        brain.repo.run("worktree", "prune")
        if out.sha is None:
            brain.repo.run("branch", "-D", branch)
        return out
