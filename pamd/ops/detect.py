"""What this machine could summarise with: API keys in the environment, a `claude` or
`codex` on PATH (and whether it looks logged in, from its own files, without network), a
local OpenAI-compatible server. `pamd init` only suggests: turning an LLM on, and so
sending memories to a service, stays one explicit line in pamd.toml."""

from __future__ import annotations

import json
import os
import shutil
import urllib.request
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

OLLAMA_URL = "http://127.0.0.1:11434"


@dataclass(frozen=True)
class Option:
    backend: str
    what: str        # what was found, in words
    config: str      # the pamd.toml lines that would turn it on
    leaves: bool     # memories leave this machine


def detect(env: Mapping[str, str] | None = None, home: Path | None = None,
           ollama_url: str | None = None, timeout: float = 0.3) -> list[Option]:
    """Every option found, the one suggested first."""
    env = os.environ if env is None else env
    home = Path(env.get("HOME") or Path.home()) if home is None else home
    found: list[Option] = []
    path = env.get("PATH", "")
    if shutil.which("claude", path=path):
        login = claude_logged_in(home, env)
        found.append(Option("claude-cli", f"claude on PATH ({login})",
                            'backend = "claude-cli"', True))
    if shutil.which("codex", path=path):
        login = codex_logged_in(home, env)
        found.append(Option("codex-cli", f"codex on PATH ({login})", 'backend = "codex-cli"', True))
    models = ollama_models(env.get("PAMD_OLLAMA_URL") or ollama_url or OLLAMA_URL, timeout)
    if models is not None:
        model = models[0] if models else "llama3.2"
        url = (env.get("PAMD_OLLAMA_URL") or ollama_url or OLLAMA_URL).rstrip("/") + "/v1"
        found.append(Option("openai", f"a local Ollama at {url} ({len(models)} models)",
                            f'backend = "openai"\nbase_url = "{url}"\nmodel = "{model}"', False))
    for var, backend in (("ANTHROPIC_API_KEY", "anthropic"), ("OPENAI_API_KEY", "openai"),
                         ("GEMINI_API_KEY", "gemini")):
        if env.get(var):
            extra = '\nmodel = "gpt-4.1-mini"' if backend == "openai" else ""
            found.append(Option(backend, f"{var} in the environment", f'backend = "{backend}"{extra}', True))
    # a logged-in CLI first (the model the agent already runs on, no new key), then a
    # local server (nothing leaves the machine), then keys
    order = {"claude-cli": 0, "codex-cli": 1}
    return sorted(found, key=lambda o: (order.get(o.backend, 2 if not o.leaves else 3)))


def claude_logged_in(home: Path, env: Mapping[str, str]) -> str:
    config = Path(env.get("CLAUDE_CONFIG_DIR") or home / ".claude")
    if (config / ".credentials.json").is_file():
        return "logged in"
    try:
        state = json.loads((home / ".claude.json").read_text("utf-8"))
        if isinstance(state, dict) and state.get("oauthAccount"):
            return "logged in"
    except (OSError, ValueError):
        pass
    return "login not found: run `claude` once, or it may be in the system keychain"


def codex_logged_in(home: Path, env: Mapping[str, str]) -> str:
    codex_home = Path(env.get("CODEX_HOME") or home / ".codex")
    return "logged in" if (codex_home / "auth.json").is_file() else "login not found: run `codex login`"


def ollama_models(url: str, timeout: float) -> list[str] | None:
    """The models a local Ollama serves, or None when none answers (quickly)."""
    try:
        with urllib.request.urlopen(url.rstrip("/") + "/api/tags", timeout=timeout) as response:
            data = json.loads(response.read() or b"{}")
    except (OSError, ValueError):
        return None
    models = data.get("models") if isinstance(data, dict) else None
    return [str(m.get("name")) for m in models if isinstance(m, dict) and m.get("name")] \
        if isinstance(models, list) else []


def suggestion(options: list[Option]) -> str:
    """Commented pamd.toml lines naming what was found; none when nothing was."""
    if not options:
        return ""
    lines = ["# `pamd init` found on this machine (uncomment one to have an LLM write the summaries;",
             "# extractive stays local and free; see docs/summarizers.md):"]
    for o in options:
        where = "memories are sent to its provider" if o.leaves else "memories stay on this machine"
        lines.append(f"# - {o.what}: {where}")
        lines += [f"# {line}" for line in o.config.splitlines()]
    return "\n".join(lines) + "\n"
