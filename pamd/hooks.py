"""pamd's git hooks: one worker per hook plus `main(argv) -> int`, like pre-commit-hooks.

`.pre-commit-hooks.yaml` and the plain scripts in hooks/ both call the console
script `pamd-hook HOOK [FILES]`:

    check      format and frontmatter of the given brain files (path:line)
    budget     tier token budgets
    secrets    secrets in the given files (points at `pamd redact`)
    synapse    a person's edit under synapse/ (pulled knowledge is read-only)
    index      refresh the search index (post-merge/post-checkout/post-rewrite);
               never fails a checkout
    pre-commit all the commit-time checks on the staged files (for hooks/pre-commit)
    install    install the plain git hooks into this brain's .git/hooks
    claude     Claude Code's hooks (SessionStart, Stop, SubagentStop, SessionEnd,
               PreCompact): pamd.agent.claude_code, docs/agents.md; `codex` is the
               same for Codex's hooks, whose input has the same shape

Only `index` may import the search stack (numpy, hnswlib, torch); everything
else must start fast, so heavy imports stay inside the functions that need them.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import shutil
import subprocess
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

from pamd.core.console import human_log
from pamd.core.fmt import Problem
from pamd.core.visible import human_streams
from pamd.errors import PamdError


def _brain(path: str | None = None):
    from pamd.edge.brain import Brain

    # git runs a hook in the repository it is committing to: a PAMD_BRAIN a person exported for
    # their pamd commands (another brain) must not have it check, or index, that one instead.
    return Brain.find(path, env=False)


def brain_rels(brain, filenames: Sequence[str]) -> list[str]:
    """Brain-relative posix paths of `filenames` (pre-commit passes them relative to the top)."""
    out = []
    for f in filenames:
        p = Path(f)
        p = p if p.is_absolute() else Path.cwd() / p
        try:
            out.append(p.resolve().relative_to(brain.root).as_posix())
        except ValueError:
            continue  # not in this brain: not ours to judge
    return out


def pamd_is_committing(brain) -> bool:
    """True inside a commit that pamd itself is making (ingest, compact, synapse pull...).

    pamd commits through `git commit` so hooks run, with PAMD_COMMIT=1 in the environment
    (set since 0.2.0). pamd's author in GIT_AUTHOR_NAME/EMAIL is no sign of it:
    `git commit --amend` of a pamd commit gives the hook the amended commit's author, so a
    person's edit under synapse/ went through as pamd's.
    """
    return os.environ.get("PAMD_COMMIT") == "1"


# ---------------------------------------------------------------- workers
def check(brain, rels: list[str] | None) -> list[Problem]:
    """Format problems in `rels` (None: the whole brain), plus duplicate ids anywhere."""
    from pamd.ops.check import check_brain

    problems = check_brain(brain)
    if rels is None:
        return problems
    wanted = set(rels)
    # A duplicate id is reported at whichever copy came second; keep it even
    # when that copy is not among the changed files.
    return [p for p in problems if p.path in wanted or p.message.startswith("duplicate id")]


def budget(brain) -> list[Problem]:
    """Tiers over their token budget, reported at the budget's line of pamd.toml (a folder
    has no line an editor could open)."""
    from pamd.core.config import settings
    from pamd.core.paths import CONFIG, MEMORY, TIER_DIRS
    from pamd.ops.check import key_line

    budgets = settings(brain.config).tiers.budgets
    from pamd.core.paths import tier_of

    used: dict[str, int] = {}
    for rel in brain.entry_files():
        try:
            entries = brain.parse(rel).entries
        except PamdError:
            continue  # a broken file is the check hook's finding, not the budget's
        for e in entries:
            used[tier_of(rel) or e.tier] = used.get(tier_of(rel) or e.tier, 0) + e.tokens
    problems = []
    for tier, tokens in sorted(used.items()):
        limit = int(budgets.get(tier, 0) or 0)
        if limit and tokens > limit:
            where = TIER_DIRS.get(tier, MEMORY)
            problems.append(
                Problem(
                    CONFIG,
                    key_line(brain.read(CONFIG) or "", f"tiers.budgets.{tier}"),
                    f"{tier} ({where}) holds {tokens:,} tokens, over its budget of {limit:,}"
                    f" in [tiers.budgets] (run `pamd {'defrag' if tier == 'L4' else 'compact'}`, or raise it)",
                )
            )
    return problems


def secrets(brain, rels: list[str], read: Callable[[str], str | None]) -> list[Problem]:
    """Secrets found in `rels`, one problem per secret at its line."""
    from pamd.ops.redaction import scan

    return [
        Problem(
            f.path,
            f.line,
            f"possible {f.kind}: run `pamd redact --no-commit {f.path}`, "
            "then `git add` it; a secret must never be committed",
        )
        for f in scan(brain, rels, read)
    ]


def synapse_readonly(brain, rels: list[str]) -> list[Problem]:
    """A person's change under synapse/ (only `pamd synapse pull` writes there)."""
    from pamd.core.paths import SYNAPSE_DIR

    if pamd_is_committing(brain):
        return []
    mine = [r for r in rels if r.startswith(SYNAPSE_DIR + "/") and r != f"{SYNAPSE_DIR}/README.md"]
    # Concluding a merge stages what the other side committed (its own `pamd synapse pull`):
    # a file that is byte for byte the merged-in side's is no edit of this person's.
    theirs = merged_in(brain, mine)
    return [
        Problem(
            r,
            1,
            "synapse/ is read-only knowledge pulled from another brain; "
            "edit it at its source, then `pamd synapse pull`"
            + (" (in a merge: `git checkout MERGE_HEAD -- FILE`, or HEAD, takes one side's"
               " version as pulled)" if brain.repo.merge_heads() else ""),
        )
        for r in mine
        if r not in theirs
    ]


def merged_in(brain, rels: list[str]) -> set[str]:
    """Those of `rels` whose staged blob is the one a commit being merged in holds there."""
    heads = brain.repo.merge_heads() if rels else []
    if not heads:
        return set()
    staged = {}
    for rec in brain.repo.run("ls-files", "-s", "-z", "--", *rels).split("\0"):
        meta, tab, path = rec.partition("\t")
        parts = meta.split()
        if tab and len(parts) == 3 and parts[2] == "0":
            staged[path] = parts[1]
    found = set()
    for head in heads:
        for rec in brain.repo.run("ls-tree", "-r", "-z", head, "--", *rels).split("\0"):
            meta, tab, path = rec.partition("\t")
            parts = meta.split()
            if tab and len(parts) == 3 and staged.get(path) == parts[2]:
                found.add(path)
    return found


def index(brain) -> str:
    """Refresh the index; return what happened. Never raises: a checkout must not fail on it."""
    if os.environ.get("PAMD_HOOK_INDEX", "1") == "0":
        return "index refresh skipped (PAMD_HOOK_INDEX=0)"
    if importlib.util.find_spec("hnswlib") is not None:
        try:
            from pamd.recall import api
        except ImportError:
            pass  # this pamd has no recall yet
        else:
            try:
                return str(api.index(brain))
            except Exception as exc:  # noqa: BLE001 - the next recall refreshes anyway
                return (
                    f"index refresh failed ({type(exc).__name__}: {exc}); `pamd recall` will retry"
                )
    # pre-commit installs pamd into its own environment without the search
    # extra; the person's own pamd (the one that answers recall) can refresh.
    other = _other_pamd()
    if other:
        r = subprocess.run(
            [other, "index", "-q", "--brain", str(brain.root)], capture_output=True, text=True
        )
        if r.returncode == 0:
            return f"index refreshed by {other}"
        return f"index refresh by {other} failed: {(r.stderr or r.stdout).strip()[:200]}"
    return ("index not refreshed: no search stack here (install pamd[search]); "
            "`pamd recall` refreshes it")


# pamd's runs that only add raw entries: they cannot lose a fact (and may bring one back).
ADDS_ONLY = ("ingest", "remember")


def probe(brain) -> int:
    """`pamd probe --against HEAD`: fails only for a probed fact that resolves at HEAD and not
    in the tree being committed. A probe lost before (or a fact not learned yet) does not hold
    up the brain; pamd's ingest/remember commits are not probed at all. Runs here if the
    search stack is installed, else with the person's own pamd."""
    if not (brain.root / "probes.jsonl").is_file():
        return 0
    if pamd_is_committing(brain) and os.environ.get("PAMD_RUN") in ADDS_ONLY:
        return 0
    against = "HEAD" if brain.repo.head() is not None else None
    if importlib.util.find_spec("hnswlib") is not None:
        from pamd.edge.clock import now_arg
        from pamd.fidelity.probe import check, unrunnable

        with unrunnable():
            out = check(brain, now_arg(None), against=against)
        print("\n".join(out.lines()))
        return 1 if out.new else 0
    argv = ["probe", "--brain", str(brain.root), *(["--against", against] if against else [])]
    other = _other_pamd()
    if other:
        return subprocess.run([other, *argv]).returncode
    print("pamd: error: pamd-probe needs pamd's search stack (pip install 'pamd[search]'), "
          "or add it as additional_dependencies of the hook", file=sys.stderr)
    return 1


def _other_pamd() -> str | None:
    """A `pamd` on PATH outside this interpreter's environment, if any."""
    here = Path(sys.prefix).resolve()
    for d in os.environ.get("PATH", "").split(os.pathsep):
        if not d:
            continue
        exe = shutil.which("pamd", path=d)
        if exe and here not in Path(exe).resolve().parents:
            return exe
    return None


def staged(brain) -> list[str]:
    out = brain.repo.run("diff", "--cached", "--name-only", "--diff-filter=ACMR", "-z")
    return [p for p in out.split("\0") if p]


def read_staged(brain) -> Callable[[str], str | None]:
    # "" + ":" + path is the index version: what is about to be committed.
    return lambda rel: brain.repo.show("", rel)


def read_tree(brain) -> Callable[[str], str | None]:
    return brain.read


# ---------------------------------------------------------------- command line
def _report(problems: list[Problem]) -> int:
    for p in problems:
        print(p)
    return 1 if problems else 0


def main(argv: Sequence[str] | None = None) -> int:
    with human_log():  # the library's notes and warnings, as `pamd: note: …` lines on stderr
        return _main(list(sys.argv[1:] if argv is None else argv))


def _main(argv: list[str]) -> int:
    if argv[:1] in (["claude"], ["codex"]):  # an agent host's hook: its own input, its own fail-open rules
        from pamd.agent.claude_code import main as claude_main

        return claude_main(argv[1:])
    parser = argparse.ArgumentParser(
        prog="pamd-hook", description="pamd's git hooks (see docs/hooks.md)."
    )
    parser.add_argument(
        "--brain", metavar="DIR", help="the brain (default: the one containing the cwd)"
    )
    sub = parser.add_subparsers(dest="hook", required=True, metavar="HOOK")
    for name, helptext in (
        ("check", "format of changed brain files"),
        ("secrets", "secrets in files"),
        ("synapse", "edits under synapse/"),
    ):
        p = sub.add_parser(name, help=helptext)
        p.add_argument("filenames", nargs="*")
        p.add_argument("--all", action="store_true", help="every file of the brain")
    sub.add_parser("budget", help="tier token budgets").add_argument("filenames", nargs="*")
    # git passes post-checkout/post-rewrite their own arguments; they are not files.
    sub.add_parser("index", help="refresh the search index").add_argument("gitargs", nargs="*")
    sub.add_parser("pre-commit", help="all commit-time checks on the staged files")
    sub.add_parser("probe", help="run probes.jsonl with recall (needs the search stack)")
    sub.add_parser("claude", help="Claude Code's hooks: boot at SessionStart, ingest at Stop (docs/agents.md)")
    p = sub.add_parser("install", help="install the plain git hooks into .git/hooks")
    p.add_argument("--force", action="store_true", help="replace hooks that are not pamd's")
    args = parser.parse_args(argv)
    # file names and problems come from the brain's files: no control sequences to the terminal
    with human_streams():
        try:
            return _run(args)
        except PamdError as exc:
            print(f"pamd: error: {exc}", file=sys.stderr)
            return exc.exit_code
        except KeyboardInterrupt:
            return 130


def _run(args: argparse.Namespace) -> int:
    hook = args.hook
    try:
        brain = _brain(args.brain)
    except PamdError:
        here = Path.cwd()
        if hook == "index" and args.brain is None and (here / ".pamd").is_dir() and (here / ".git").exists():
            # git runs hooks at the top of the work tree: a brain's own repository checked out
            # at a branch that is no brain (pamd/publish holds only what it shares). Its
            # "run `pamd init`" would commit a new brain onto that branch.
            print("pamd: index not refreshed: this checkout has no pamd.toml (a branch such as "
                  "pamd/publish is no brain); switch back to the brain's branch", file=sys.stderr)
            return 0
        raise
    if hook == "index":
        print(f"pamd: {index(brain)}", file=sys.stderr)
        return 0
    if hook == "probe":
        return probe(brain)
    if hook == "install":
        from pamd.ops.githooks import install_hooks

        for name in install_hooks(brain, force=args.force):
            print(f"installed hook {name}")
        return 0
    if hook == "budget":
        return _report(budget(brain))
    if hook == "pre-commit":
        from pamd.ops.redaction import SCAN_SUFFIXES

        changed = staged(brain)
        problems = check_staged(brain, changed)
        try:
            problems += secrets(
                brain, [r for r in changed if r.lower().endswith(SCAN_SUFFIXES)], read_staged(brain)
            )
        except PamdError as exc:  # an older pamd without the scanner: say so, keep the other checks
            print(f"pamd: warning: secrets not checked: {exc}", file=sys.stderr)
        problems += synapse_readonly(brain, changed)
        # as the framework's pamd-budget hook: only a commit that changes a tier or the budgets
        # is measured, so a person committing DNA.md is not held up by pamd's own L0
        tiers = any(r in ("MEMORY.md", "pamd.toml") or r.startswith("memory/L") for r in changed)
        if tiers and not pamd_is_committing(brain):
            problems += budget(brain)
        return _report(problems)
    rels = None if args.all else brain_rels(brain, args.filenames)
    if hook == "check":
        return _report(check(brain, rels))
    if rels is None:
        from pamd.ops.redaction import all_files

        rels = all_files(brain)
    if hook == "secrets":
        return _report(secrets(brain, rels, read_tree(brain)))
    if hook == "synapse":
        return _report(synapse_readonly(brain, rels))
    raise PamdError(f"unknown hook {hook!r}")  # pragma: no cover - argparse refuses first


def check_staged(brain, rels: list[str]) -> list[Problem]:
    """`pamd check` of what is about to be committed: the staged version of each of `rels`,
    and an entry id held by two entry files of the index (`pamd check` and the pamd-check
    hook report those too; a file-by-file check cannot see them)."""
    from pamd.core.paths import MEMORY, TIER_DIRS
    from pamd.ops.check import check_texts, checked

    # as the framework's pamd-check hook, which runs only when one of its files is staged
    mine = [r for r in rels if checked(r)]
    if not mine:
        return []
    return check_texts(brain.repo.staged_texts(*mine, MEMORY, *TIER_DIRS.values()), only=set(mine))


if __name__ == "__main__":
    raise SystemExit(main())
