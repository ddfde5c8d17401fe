"""The templates pamd ships: the files `pamd init` lays in a brain, and the CI files of `--ci`."""

from __future__ import annotations

from importlib import resources

# Template names that git or packaging would not keep as they are.
RENAMES = {"gitignore": ".gitignore", "gitattributes": ".gitattributes"}


def template_files() -> dict[str, str]:
    """Brain-relative path -> text of everything under templates/brain/."""
    root = resources.files("pamd.templates").joinpath("brain")
    out: dict[str, str] = {}

    def walk(node, prefix: str) -> None:
        for child in node.iterdir():
            name = child.name
            if name.startswith("__") or name.endswith(".pyc"):
                continue
            rel = f"{prefix}{RENAMES.get(name, name)}"
            if child.is_dir():
                walk(child, rel + "/")
            else:
                out[rel] = child.read_text("utf-8")

    walk(root, "")
    return out


# templates/ci/ -> where `pamd init --ci` puts each file in the brain.
CI_FILES = {"pamd-nightly.yml": ".github/workflows/pamd-nightly.yml",
            "pre-commit-config.yaml": ".pre-commit-config.yaml"}


def ci_files() -> dict[str, str]:
    """Brain-relative path -> text of the CI workflow and the pre-commit config."""
    root = resources.files("pamd.templates").joinpath("ci")
    return {dest: root.joinpath(src).read_text("utf-8") for src, dest in CI_FILES.items()}
