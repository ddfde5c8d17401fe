"""The user's own logged-in agent CLI, run headless: `claude -p` (Claude Code) or
`codex exec` (Codex). Same prompt files, same fact schema, same checks and fallback as
the API backends; no key of pamd's own.

Configuration (`[summarizer]` in pamd.toml):
  backend = "claude-cli" | "codex-cli"
  cli_path   the executable (default "claude" / "codex", looked up on PATH)
  model      empty: the CLI's own default; else passed as --model / -m
  timeout    seconds a run may take before it is killed (a transient failure: retried)
  batch_size, max_retries, retry_base_delay, retry_max_delay, fallback as for the APIs

Each run happens in an empty temporary directory, never persists its session
(`--no-session-persistence`, `--ephemeral`) and, for claude, runs no hooks
(`disableAllHooks`): a summarizing session must not itself be ingested into the brain.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
from collections.abc import Mapping
from typing import Any

from pamd.consolidate.summarizers import prompts
from pamd.consolidate.summarizers.base import Group, Usage
from pamd.consolidate.summarizers.llm import Failed, LLMSummarizer, Transient, common_options
from pamd.core.config import Settings, settings
from pamd.errors import PamdError

EXECUTABLES = {"claude-cli": "claude", "codex-cli": "codex"}
# Words in a CLI's error that mean "try again later", and ones only the user can mend.
TRANSIENT_WORDS = ("rate limit", "rate_limit", "overloaded", "529", "503", "502", "500", "timed out",
                   "timeout", "econnreset", "network", "unavailable", "429")
LOGIN_WORDS = ("/login", "not logged in", "invalid api key", "authentication", "unauthorized", "401",
               "codex login")


class CLISummarizer(LLMSummarizer):
    name = "cli"

    def __init__(self, *, kind: str, executable: str, model: str = "", **kw: Any) -> None:
        if kind not in EXECUTABLES:
            raise AssertionError(kind)
        found = shutil.which(executable)
        if not found:
            raise PamdError(
                f'[summarizer] backend "{kind}" needs {executable!r}, which is not on PATH',
                "install it and log in (see docs/summarizers.md), set cli_path, or set "
                'backend = "extractive"',
            )
        super().__init__(model=model, **kw)
        self.name = kind
        self.executable = found
        self.reported_cost = 0.0
        self.cost_reported = False

    @classmethod
    def from_config(cls, config: Settings | Mapping[str, Any], kind: str, **kw: Any) -> CLISummarizer:
        s = settings(config).summarizer
        return cls(kind=kind, executable=str(s.cli_path or EXECUTABLES[kind]),
                   model=str(s.model), **common_options(s), **kw)

    # ------------------------------------------------------------------ one run

    def command(self, schema_file: str, answer_file: str) -> list[str]:
        """The argv of one run; the groups go on stdin."""
        if self.name == "claude-cli":
            argv = [self.executable, "-p", "--output-format", "json",
                    "--system-prompt", prompts.SYSTEM_OBJECT,
                    "--json-schema", json.dumps(prompts.SCHEMA, separators=(",", ":")),
                    "--tools", "", "--no-session-persistence",
                    "--settings", json.dumps({"disableAllHooks": True})]
            return argv + (["--model", self.model] if self.model else [])
        argv = [self.executable, "exec", "--json", "--color", "never", "--sandbox", "read-only",
                "--skip-git-repo-check", "--ephemeral", "--output-schema", schema_file,
                "--output-last-message", answer_file]
        return argv + (["--model", self.model] if self.model else []) + ["-"]

    def stdin(self, batch: list[Group]) -> str:
        payload = prompts.request_payload(batch)
        if self.name == "claude-cli":
            return payload
        # codex exec has no system prompt of its own: the instructions lead the prompt
        return prompts.SYSTEM_OBJECT + "\n\nThe groups:\n" + payload

    def _call(self, batch: list[Group], usage: Usage) -> Any:
        with tempfile.TemporaryDirectory(prefix="pamd-llm-") as tmp:
            schema_file = os.path.join(tmp, "schema.json")
            answer_file = os.path.join(tmp, "answer.json")
            with open(schema_file, "w", encoding="utf-8") as f:
                json.dump(prompts.SCHEMA, f)
            try:
                done = subprocess.run(self.command(schema_file, answer_file), input=self.stdin(batch),
                                      capture_output=True, text=True, timeout=self.timeout, cwd=tmp,
                                      env={**os.environ, "PAMD_SUMMARIZING": "1"})
            except subprocess.TimeoutExpired:
                raise Transient(f"timeout after {self.timeout:g} s") from None
            except OSError as exc:
                raise Failed(f"could not run {self.executable} ({exc.strerror or exc})") from None
            if self.name == "claude-cli":
                return self._claude_answer(done, usage)
            return self._codex_answer(done, answer_file, usage)

    def _claude_answer(self, done: subprocess.CompletedProcess[str], usage: Usage) -> Any:
        try:
            result = json.loads(done.stdout)
        except ValueError:
            result = None
        if not isinstance(result, dict):
            self._fail(done.stderr or done.stdout, done.returncode)
        meta = result.get("usage") if isinstance(result.get("usage"), dict) else {}
        usage.input_tokens += sum(_int(meta.get(k)) for k in (
            "input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens"))
        usage.output_tokens += _int(meta.get("output_tokens"))
        cost = result.get("total_cost_usd")
        if isinstance(cost, int | float) and not isinstance(cost, bool):
            self.reported_cost += float(cost)
            self.cost_reported = True
        if result.get("is_error") or result.get("subtype") != "success":
            self._fail(str(result.get("result") or result.get("subtype") or ""), done.returncode)
        structured = result.get("structured_output")
        return structured if structured is not None else result.get("result")

    def _codex_answer(self, done: subprocess.CompletedProcess[str], answer_file: str, usage: Usage) -> Any:
        errors: list[str] = []
        for line in done.stdout.splitlines():
            try:
                event = json.loads(line)
            except ValueError:
                continue
            if not isinstance(event, dict):
                continue
            if event.get("type") == "turn.completed" and isinstance(event.get("usage"), dict):
                meta = event["usage"]
                usage.input_tokens += _int(meta.get("input_tokens"))  # cached ones are among them
                usage.output_tokens += _int(meta.get("output_tokens"))
            elif event.get("type") in ("error", "turn.failed"):
                err = event.get("error")
                said = err if isinstance(err, dict) else event
                errors.append(str(said.get("message") or ""))
        if done.returncode or errors:
            self._fail(" ".join(errors) or done.stderr, done.returncode)
        try:
            with open(answer_file, encoding="utf-8") as f:
                return f.read()
        except OSError:
            raise Failed("malformed response (no last message)") from None

    def _fail(self, text: str, code: int) -> None:
        """Sort a failed run: the user's login (stop), a busy service (retry), else this batch."""
        line = " ".join(text.split())[:120] or f"exit status {code}"
        low = line.lower()
        if any(w in low for w in LOGIN_WORDS):
            raise PamdError(f"{self.name}: {line}",
                            f"log in with `{os.path.basename(self.executable)}` (or set backend = \"extractive\")")
        if any(w in low for w in TRANSIENT_WORDS):
            raise Transient(line)
        raise Failed(f"{line}")

    def summarize(self, groups: list[Group]) -> tuple[list[str], Usage]:
        self.reported_cost, self.cost_reported = 0.0, False
        return super().summarize(groups)

    def _cost(self, usage: Usage) -> float:
        """What the CLI itself reported (claude's total_cost_usd); codex reports none, so a
        price table entry for its model is used, else 0 with a note."""
        if self.cost_reported:
            return self.reported_cost
        if not self.model or not self.prices.get(self.model):
            note = f"{self.name}: the CLI reports no cost; counted as 0"
            if (usage.input_tokens or usage.output_tokens) and note not in usage.notes:
                usage.notes.append(note)
            return 0.0
        return super()._cost(usage)


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0
