"""Which brain an agent's project uses, for `pamd mcp` and the agent hooks.

In order: an explicit --brain; $PAMD_BRAIN; a `.pamd-brain` file in the project's folder
or any folder above it (its first line: the brain's path, relative to the file's folder or
absolute, `~` allowed; `off` turns memory off for that project); the brain the folder is
in; `$XDG_CONFIG_HOME/pamd/brain` (default `~/.config/pamd/brain`), a file holding one
path, for every project.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from pamd.errors import PamdError

PROJECT_FILE = ".pamd-brain"
OFF = "off"


def global_file(env: Mapping[str, str] | None = None) -> Path:
    env = os.environ if env is None else env
    base = env.get("XDG_CONFIG_HOME") or str(Path(env.get("HOME") or Path.home()) / ".config")
    return Path(base).expanduser() / "pamd" / "brain"


def _first_line(path: Path) -> str:
    try:
        for line in path.read_text(encoding="utf-8").splitlines():
            line = line.strip()
            if line and not line.startswith("#"):
                return line
    except (OSError, UnicodeDecodeError):
        pass
    return ""


def pick(brain: str | None = None, cwd: Path | str | None = None,
         env: Mapping[str, str] | None = None) -> Path | None:
    """The brain's folder, None when the project turned memory off; raises when none is set.

    Only a folder that exists is returned; it is not checked to be a brain here (Brain does)."""
    env = os.environ if env is None else env
    here = Path(cwd or Path.cwd()).expanduser()
    named, where = brain, "--brain"
    if not named and env.get("PAMD_BRAIN"):
        named, where = env["PAMD_BRAIN"], "PAMD_BRAIN"
    if not named:
        for d in (here, *here.parents):
            f = d / PROJECT_FILE
            if f.is_file():
                named, where = _first_line(f), str(f)
                if named == OFF:
                    return None
                if named:
                    named = str(d / Path(named).expanduser())
                    break
            if (d / "pamd.toml").is_file() and (d / ".git").exists():
                return d  # inside a brain: that one
    if not named:
        f = global_file(env)
        named, where = _first_line(f), str(f)
        if named == OFF:
            return None
    if not named:
        raise PamdError(f"no brain set for {here}",
                        f"write its path into {PROJECT_FILE} in the project, or into {global_file(env)}, "
                        "or set PAMD_BRAIN (docs/agents.md)")
    path = Path(named).expanduser()
    if not path.is_dir():
        raise PamdError(f"brain {named} (from {where}) does not exist", "check the path, or `pamd init` it")
    return path
