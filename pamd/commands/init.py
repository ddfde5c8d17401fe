from __future__ import annotations

import os
from pathlib import Path

from pamd.errors import PamdError

# Every command takes --brain; for init it can only mean DIR, so its help does not list it (cli.py).
LIST_BRAIN = False
HELP = "create a brain: a git repository with pamd's layout, config and protocols"
EXAMPLE = """
pamd init ~/brains/agent
pamd init --hooks   # also install pamd's plain git hooks into .git/hooks
                    # (in an existing brain: only that, as `pamd-hook install` does)
pamd init --ci      # also a nightly-defrag GitHub workflow and a .pre-commit-config.yaml
                    # (in an existing brain: adds only those of the two it lacks, one commit)
"""


def add_arguments(p) -> None:
    p.add_argument("dir", nargs="?",
                   help="folder for the brain (default: $PAMD_BRAIN, else here; with --ci or --hooks, "
                        "the brain this folder is in)")
    p.add_argument("--name", help="the agent's name, written to pamd.toml")
    p.add_argument("--hooks", action="store_true", help="install pamd's git hooks into .git/hooks")
    p.add_argument("--ci", action="store_true",
                   help="add .github/workflows/pamd-nightly.yml and .pre-commit-config.yaml")


def run(args) -> int:
    from pamd.core.paths import CONFIG
    from pamd.ops.layout import init_brain

    where = target(args.dir, args.brain)
    if (args.ci or args.hooks) and args.dir is None and args.brain is None:
        here = brain_above(Path.cwd())
        if not os.environ.get("PAMD_BRAIN"):
            where = here or where  # run in a brain's subfolder: that brain, as git would
        elif here is not None and here != where.expanduser().resolve():
            # a teammate's fresh clone, PAMD_BRAIN exported for their agent's brain: the hooks
            # went into that brain (silently) and the clone stayed unchecked
            flags = " ".join(f for f, on in (("--ci", args.ci), ("--hooks", args.hooks)) if on)
            raise PamdError(f"two brains: $PAMD_BRAIN names {where}, and you are in {here}",
                            f"name the one you mean: `pamd init {flags} {here}`")
    if (args.ci or args.hooks) and (where.expanduser() / CONFIG).is_file():
        # an existing brain (about to be pushed to GitHub, or a fresh clone: git does not
        # clone .git/hooks): add the CI files it lacks, install the hooks
        from pamd.core.templates import ci_files
        from pamd.edge.brain import Brain
        from pamd.ops.layout import add_ci

        if args.name is not None:
            raise PamdError(f"{where} is already a pamd brain; --name only names a new one",
                            "edit [brain] name in pamd.toml, or leave --name out")
        brain = Brain(where.expanduser().resolve())
        have = [rel for rel in ci_files() if os.path.lexists(brain.root / rel)]
        if args.ci and args.hooks and len(have) == len(ci_files()):
            print(f"kept {' and '.join(sorted(have))} as they are (nothing to add)")
        elif args.ci:
            added, kept, sha = add_ci(brain)
            for rel in kept:
                print(f"kept {rel} as it is (an existing file is never overwritten)")
            print(f"added {', '.join(added)} to the brain in {brain.root} ({(sha or '')[:8]})")
    else:
        from pamd.ops.detect import detect, suggestion

        options = detect()
        brain, sha = init_brain(where, args.name, ci=args.ci, summarizer_note=suggestion(options))
        print(f"initialised pamd brain in {brain.root} ({sha[:8]})")
        if options:
            print(f"summarizer: extractive; found {options[0].what}: to use it, set "
                  f"{options[0].config.splitlines()[0]} in pamd.toml (commented suggestions are there)")
    from pamd.core.config import is_off, settings

    if args.ci and not is_off(settings(brain.config).schedule.defrag_at):
        # not set here: until the workflow runs on GitHub, nothing else would defrag the brain
        print('once the nightly workflow runs on GitHub, set [schedule] defrag_at = "off" in pamd.toml, '
              "so that run-due and the daemon leave the defrag to its pull requests (docs/hooks.md)")
    if args.hooks:
        from pamd.ops.githooks import install_hooks

        written = install_hooks(brain)
        for name in written:
            print(f"installed hook {name}")
        if not written:
            print("pamd's git hooks are installed and current")
    return 0


def target(folder: str | None, brain: str | None) -> Path:
    """DIR, or --brain DIR (the same thing said the way other commands say it), else $PAMD_BRAIN, else here.

    An empty name is refused: Path("") is the current folder, which nobody asked for."""
    for given, what in ((folder, "DIR"), (brain, "--brain")):
        if given is not None and not given.strip():
            raise PamdError(f"{what} is empty", "name the folder for the brain, or leave it out for this one")
    if folder is not None and brain is not None and \
            Path(folder).expanduser().resolve() != Path(brain).expanduser().resolve():
        raise PamdError(f"two folders for the brain: {folder} and --brain {brain}", "give one of them")
    # PAMD_BRAIN as for every command: exported for the agent's brain, it must not let a bare
    # `pamd init` make a brain (and a git repository) of whatever folder one stands in.
    return Path(folder or brain or os.environ.get("PAMD_BRAIN") or ".")


def brain_above(here: Path) -> Path | None:
    """The brain whose folder holds `here`, if any."""
    from pamd.core.paths import CONFIG

    here = here.resolve()
    return next((d for d in (here, *here.parents) if (d / CONFIG).is_file() and (d / ".git").exists()), None)
