"""Summarizers: turn groups of entries into shorter texts, one per group.

`get_summarizer(config)` picks the backend named by `[summarizer] backend`:
"extractive" (default; local, free, deterministic), "anthropic" (the anthropic SDK),
"claude-cli" / "codex-cli" (the user's own logged-in CLI, headless), "gemini" (google-genai)
or "openai" (any OpenAI-compatible chat-completions endpoint, such as a local Ollama).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pamd.consolidate.summarizers.base import (
    MIN_TOKENS,
    SUMMARY_TIERS,
    Group,
    Summarizer,
    Usage,
)
from pamd.consolidate.summarizers.extractive import ExtractiveSummarizer
from pamd.consolidate.summarizers.lesson import LESSON_TOKENS, extract_lesson
from pamd.core.config import Settings, SummarizerSettings, settings
from pamd.core.entry import Entry
from pamd.errors import PamdError

__all__ = [
    "MIN_TOKENS", "SUMMARY_TIERS", "ExtractiveSummarizer", "Group", "Summarizer", "Usage",
    "backend_name", "extract_lesson", "get_summarizer", "lesson",
]

BACKENDS = ("extractive", "anthropic", "claude-cli", "codex-cli", "gemini", "openai")


def backend_name(config: Settings | Mapping[str, Any] | None) -> str:
    """The backend pamd.toml names (checked), without constructing it: an LLM backend
    needs its key only when there is something to summarise."""
    # an empty name is the default backend, as an unset one is
    backend = str(settings(config).summarizer.backend or SummarizerSettings.backend).strip().lower()
    if backend not in BACKENDS:
        raise PamdError(
            f"unknown summarizer backend {backend!r} in pamd.toml",
            f'set [summarizer] backend to one of: {", ".join(BACKENDS)}',
        )
    return backend


def get_summarizer(config: Settings | Mapping[str, Any] | None) -> Summarizer:
    """The summarizer named by `[summarizer] backend` (default "extractive")."""
    config = settings(config)
    backend = backend_name(config)
    if backend == "extractive":
        return ExtractiveSummarizer()
    if backend == "gemini":
        # Imported here: google-genai is heavy and optional (the `gemini` extra).
        from pamd.consolidate.summarizers.gemini import GeminiSummarizer

        return GeminiSummarizer.from_config(config)
    if backend == "anthropic":
        from pamd.consolidate.summarizers.anthropic import AnthropicSummarizer

        return AnthropicSummarizer.from_config(config)
    if backend in ("claude-cli", "codex-cli"):
        from pamd.consolidate.summarizers.cli import CLISummarizer

        return CLISummarizer.from_config(config, backend)
    if backend == "openai":
        from pamd.consolidate.summarizers.openai_compat import OpenAISummarizer

        return OpenAISummarizer.from_config(config)
    raise AssertionError(backend)  # backend_name checked it


def lesson(entries: Sequence[Entry], config: Settings | Mapping[str, Any] | None = None) -> str:
    """A one-line lesson; written by the configured backend (extractive by default)."""
    if not entries:
        return ""
    group = Group(key="lesson", tier="lesson", entries=tuple(entries), target_tokens=LESSON_TOKENS)
    texts, _ = get_summarizer(config).summarize([group])
    return texts[0]
