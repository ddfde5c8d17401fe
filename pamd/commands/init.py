from __future__ import annotations

from pathlib import Path

HELP = "create a brain: a git repository with pamd's layout, config and protocols"
EXAMPLE = """
pamd init ~/brains/agent
pamd init --hooks   # also install pamd's plain git hooks into .git/hooks
pamd init --ci      # also a nightly-defrag GitHub workflow and a .pre-commit-config.yaml
"""


def add_arguments(p) -> None:
    p.add_argument("dir", nargs="?", default=".", help="folder for the brain (default: here)")
    p.add_argument("--name", help="the agent's name, written to pamd.toml")
    p.add_argument("--hooks", action="store_true", help="install pamd's git hooks into .git/hooks")
    p.add_argument("--ci", action="store_true",
                   help="add .github/workflows/pamd-nightly.yml and .pre-commit-config.yaml")


def run(args) -> int:
    from pamd.edge.layout import init_brain

    brain, sha = init_brain(Path(args.dir), args.name, ci=args.ci)
    print(f"initialised pamd brain in {brain.root} ({sha[:8]})")
    if args.hooks:
        from pamd.edge.githooks import install_hooks

        for name in install_hooks(brain):
            print(f"installed hook {name}")
    return 0
